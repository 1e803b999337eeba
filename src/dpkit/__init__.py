"""dpkit: differential privacy built around sensitivity.

See DESIGN.md for the map. The public names are re-exported here; ``rng=None`` everywhere means
secure randomness.
"""

from dpkit import datasets, errors, samplers
from dpkit.accounting import ZCDP, ApproxDP, PureDP
from dpkit.errors import (
    BudgetExceededError,
    DPError,
    InternalError,
    LedgerError,
    ParameterError,
    UnsafeReleaseError,
)

__version__ = "0.1.0"

__all__ = [
    "ZCDP",
    "ApproxDP",
    "BudgetExceededError",
    "DPError",
    "InternalError",
    "LedgerError",
    "ParameterError",
    "PureDP",
    "UnsafeReleaseError",
    "datasets",
    "errors",
    "samplers",
]
