"""dpkit: differential privacy built around sensitivity.

See DESIGN.md for the map. The public names are re-exported here; ``rng=None`` everywhere means
secure randomness.
"""

from dpkit import (
    compare,
    datasets,
    errors,
    frameworks,
    mechanisms,
    queries,
    samplers,
    sensitivity,
    statistics,
)
from dpkit.accounting import ZCDP, ApproxDP, PureDP
from dpkit.accounting.accountant import Accountant
from dpkit.accounting.composition import (
    advanced_composition,
    parallel_composition,
    sequential_composition,
)
from dpkit.accounting.conversions import bounded_range_to_zcdp, pure_to_zcdp, zcdp_to_approx
from dpkit.errors import (
    BudgetExceededError,
    DPError,
    InternalError,
    LedgerError,
    ParameterError,
    UnsafeReleaseError,
)
from dpkit.frameworks import (
    inverse_sensitivity,
    inverse_sensitivity_finite,
    propose_test_release,
    sample_and_aggregate,
    smooth_sensitivity_release,
)
from dpkit.mechanisms import (
    DiscreteGaussian,
    Exponential,
    Gaussian,
    Geometric,
    Laplace,
    PermuteAndFlip,
    Release,
    ReportNoisyMax,
)

__version__ = "0.1.0"

__all__ = [
    "ZCDP",
    "Accountant",
    "ApproxDP",
    "BudgetExceededError",
    "DPError",
    "DiscreteGaussian",
    "Exponential",
    "Gaussian",
    "Geometric",
    "InternalError",
    "Laplace",
    "LedgerError",
    "ParameterError",
    "PermuteAndFlip",
    "PureDP",
    "Release",
    "ReportNoisyMax",
    "UnsafeReleaseError",
    "advanced_composition",
    "bounded_range_to_zcdp",
    "compare",
    "datasets",
    "errors",
    "frameworks",
    "inverse_sensitivity",
    "inverse_sensitivity_finite",
    "mechanisms",
    "parallel_composition",
    "propose_test_release",
    "pure_to_zcdp",
    "queries",
    "sample_and_aggregate",
    "samplers",
    "sensitivity",
    "sequential_composition",
    "smooth_sensitivity_release",
    "statistics",
    "zcdp_to_approx",
]
