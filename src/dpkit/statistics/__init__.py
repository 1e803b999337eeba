"""Private statistics on arrays and per-group summaries: quantiles (one or many at once) with
intervals, private clipping bounds, automatic contribution bounds, and means, sums, variances
and deviations with automatic bounds.

The Session (:mod:`dpkit.session`) calls these per group with compact summaries
(:func:`quantiles_from_counts`, :func:`bounds_from_counts`); the array functions serve scripts
and tests. See docs/architecture.md for where this layer sits.
"""

from dpkit.statistics.bounds import (
    BoundsRelease,
    bounds_from_counts,
    bucket_edges,
    log2_buckets,
    private_bounds,
    tail_bounds_from_counts,
    tail_steps,
)
from dpkit.statistics.contribution import (
    ContributionBound,
    contribution_bound,
    contribution_bound_from_counts,
)
from dpkit.statistics.moments import mean, std, sum, var
from dpkit.statistics.quantile_release import (
    QuantileRelease,
    QuantileStage,
    median,
    quantile,
    quantile_method,
    quantile_samples,
    quantile_stages,
    quantiles,
    quantiles_from_counts,
    quantiles_samples,
)

__all__ = [
    "BoundsRelease",
    "ContributionBound",
    "QuantileRelease",
    "QuantileStage",
    "bounds_from_counts",
    "bucket_edges",
    "contribution_bound",
    "contribution_bound_from_counts",
    "log2_buckets",
    "mean",
    "median",
    "private_bounds",
    "quantile",
    "quantile_method",
    "quantile_samples",
    "quantile_stages",
    "quantiles",
    "quantiles_from_counts",
    "quantiles_samples",
    "std",
    "sum",
    "tail_bounds_from_counts",
    "tail_steps",
    "var",
]
