"""Private statistics on arrays and per-group summaries: quantiles (one or many at once) with
intervals.

The Session (:mod:`dpkit.session`) calls these per group with compact summaries
(:func:`quantiles_from_counts`); the array functions (:func:`quantiles`, :func:`quantile`,
:func:`median`) serve scripts and tests. See docs/architecture.md for where this layer sits.
"""

from dpkit.statistics._quantiles import (
    QuantileRelease,
    median,
    quantile,
    quantile_samples,
    quantiles,
    quantiles_from_counts,
)

__all__ = [
    "QuantileRelease",
    "median",
    "quantile",
    "quantile_samples",
    "quantiles",
    "quantiles_from_counts",
]
