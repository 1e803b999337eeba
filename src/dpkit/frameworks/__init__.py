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
from dpkit.frameworks.sample_aggregate import chunk_outputs, sample_and_aggregate

__all__ = [
    "chunk_outputs",
    "inverse_sensitivity",
    "inverse_sensitivity_finite",
    "loss_at",
    "sample_and_aggregate",
    "utility_bound",
]
