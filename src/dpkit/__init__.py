"""dpkit: differential privacy built around sensitivity.

See DESIGN.md for the map. The public names are re-exported here; ``rng=None`` everywhere means
secure randomness.
"""

from dpkit import datasets, errors, mechanisms, queries, samplers, sensitivity
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
    "datasets",
    "errors",
    "mechanisms",
    "parallel_composition",
    "pure_to_zcdp",
    "queries",
    "samplers",
    "sensitivity",
    "sequential_composition",
    "zcdp_to_approx",
]
