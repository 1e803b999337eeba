"""Local-sensitivity frameworks: propose-test-release, smooth sensitivity,
sample-and-aggregate and the inverse-sensitivity mechanism.

Each makes local sensitivity usable safely: the release as a whole is differentially private,
and every function returns a :class:`~dpkit.mechanisms.release.Release` carrying the value,
its privacy cost and the framework's inner figures.
"""

from dpkit.frameworks.inverse import (
    inverse_sensitivity,
    inverse_sensitivity_finite,
    loss_at,
    utility_bound,
)
from dpkit.frameworks.ptr import distance_to_high_sensitivity, propose_test_release, ptr_threshold
from dpkit.frameworks.sample_aggregate import chunk_outputs, sample_and_aggregate
from dpkit.frameworks.smooth import (
    smooth_noise_parameters,
    smooth_sensitivity_release,
    smooth_upper_bound,
)

__all__ = [
    "chunk_outputs",
    "distance_to_high_sensitivity",
    "inverse_sensitivity",
    "inverse_sensitivity_finite",
    "loss_at",
    "propose_test_release",
    "ptr_threshold",
    "sample_and_aggregate",
    "smooth_noise_parameters",
    "smooth_sensitivity_release",
    "smooth_upper_bound",
    "utility_bound",
]
