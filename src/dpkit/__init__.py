"""dpkit: differential privacy built around sensitivity.

The public names are re-exported here: mechanisms (``Laplace``, ``Gaussian``, ``Geometric``,
``DiscreteGaussian``, ``Exponential``, ``ReportNoisyMax``, ``PermuteAndFlip``), privacy-loss
values and the ``Accountant``, the local-sensitivity frameworks (``propose_test_release``,
``smooth_sensitivity_release``, ``sample_and_aggregate``, ``inverse_sensitivity``), and the
subpackages ``sensitivity``, ``samplers``, ``datasets`` and ``compare``. ``rng=None``
everywhere means secure randomness; an ``int`` seed gives reproducible, NOT private noise.

The map of the package (its layers, what each module is for, how a release flows, the
neighbour relations, the randomness rule, the proofs) is ``docs/architecture.md`` in dpkit's
source repository; every mechanism's docstring states its guarantee (``help(dpkit.Laplace)``).
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
from dpkit.accounting.conversions import (
    approx_to_zcdp,
    bounded_range_to_zcdp,
    pure_to_zcdp,
    zcdp_to_approx,
)
from dpkit.errors import (
    BudgetExceededError,
    DPError,
    InternalError,
    LedgerError,
    MissingDependencyError,
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
from dpkit.session import (
    Session,
    count,
    histogram,
    mean,
    median,
    quantile,
    std,
    sum,
    var,
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
    "MissingDependencyError",
    "ParameterError",
    "PermuteAndFlip",
    "PureDP",
    "Release",
    "ReportNoisyMax",
    "Session",
    "UnsafeReleaseError",
    "advanced_composition",
    "approx_to_zcdp",
    "bounded_range_to_zcdp",
    "compare",
    "count",
    "datasets",
    "errors",
    "frameworks",
    "histogram",
    "inverse_sensitivity",
    "inverse_sensitivity_finite",
    "mean",
    "mechanisms",
    "median",
    "parallel_composition",
    "propose_test_release",
    "pure_to_zcdp",
    "quantile",
    "queries",
    "sample_and_aggregate",
    "samplers",
    "sensitivity",
    "sequential_composition",
    "smooth_sensitivity_release",
    "statistics",
    "std",
    "sum",
    "var",
    "zcdp_to_approx",
]
