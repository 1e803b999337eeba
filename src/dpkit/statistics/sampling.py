"""Many draws of the quantile values of :func:`quantiles_from_counts` at once (for audits).

:func:`quantiles_from_counts_samples` validates exactly as
:func:`dpkit.statistics.quantiles_from_counts` and runs its first stage (the values, at
``(1 - interval_share) epsilon``; ``method="cdf"``: the histogram, at the whole epsilon)
``size`` times: one level is one exponential-mechanism draw, so all ``size`` draws come from
one batched :func:`~dpkit.statistics._approximate.draw_target` call; the noisy-histogram
method draws every histogram's noise in one call; several levels run ApproximateQuantiles
(or independent draws) once per draw. :func:`spend_samples` does the same for a release
planned stage by stage (:class:`~dpkit.statistics.quantile_release.QuantileSpend`, the
Session's). The interval stage is not run: it draws separate noise, and the values are a
marginal of the release's output, distributed exactly as in a release. With ``size=1`` the
bits are consumed as by the release, so a seed gives the release's values (tested).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from dpkit._validate import check_size
from dpkit.mechanisms.quantile_em import Counts, Measure, QuantileLattice
from dpkit.samplers import as_source
from dpkit.statistics._approximate import (
    approximate_quantiles,
    draw_target,
    independent_quantiles,
)
from dpkit.statistics._input import as_rational_level, counts_from_summary
from dpkit.statistics._joint import joint_exp_samples
from dpkit.statistics.cdf import cdf_samples
from dpkit.statistics.quantile_release import (
    QuantileSpend,
    _check_common,
    _measure,
    on_support,
    pure_spend,
    resolve_method,
    spend_inputs,
)

__all__ = ["quantiles_from_counts_samples", "spend_samples"]


def quantiles_from_counts_samples(
    points: Any,
    counts: Any,
    levels: Any,
    *,
    epsilon: float,
    bounds: tuple[float, float],
    size: int,
    method: str = "auto",
    support: str | float = "auto",
    interval_share: float = 0.25,
    rng: Any = None,
) -> np.ndarray:
    """``size`` independent draws of the values :func:`quantiles_from_counts` releases.

    Parameters
    ----------
    points, counts, levels, epsilon, bounds, method, support, interval_share, rng
        As for :func:`dpkit.statistics.quantiles_from_counts` (``interval_share`` is the
        share of ``epsilon`` the release keeps for its intervals: the values get the rest).
    size : int
        Number of draws, >= 1.

    Returns
    -------
    numpy.ndarray
        Shape ``(size, m)`` float64, one row of sorted values per draw.

    Raises
    ------
    TypeError, ParameterError
        As :func:`dpkit.statistics.quantiles_from_counts`; ``size`` not an int >= 1.

    Privacy
    -------
    Each row is the value part of one pure ``epsilon``-DP release (add/remove one record);
    nothing is charged, so ``size`` rows cost ``size * epsilon``. For audits and studies.

    Examples
    --------
    >>> quantiles_from_counts_samples([18.0, 30.0, 45.0], [10, 45, 30], 0.5, epsilon=1.0,
    ...                               bounds=(0, 100), support=1.0, size=3, rng=7).tolist()
    [[30.0], [30.0], [30.0]]
    """
    owner = "quantiles_from_counts_samples"
    lv, eps, (lower, upper), meth, _a, share = _check_common(
        owner, levels, epsilon, bounds, method, support, 0.05, True, interval_share
    )
    n = check_size(owner, size)
    lattice = QuantileLattice.for_bounds(owner, lower, upper)
    summary = counts_from_summary(owner, points, counts, lattice)
    measure = _measure(owner, lattice, support, integer_dtype=False, method=meth)
    spend = pure_spend(resolve_method(meth, len(lv), measure), eps, share)
    return _samples(summary, measure, lv, spend, n, as_source(rng))


def spend_samples(
    points: Any,
    counts: Any,
    levels: Any,
    spend: QuantileSpend,
    *,
    bounds: tuple[float, float],
    size: int,
    support: str | float = "auto",
    rng: Any = None,
) -> np.ndarray:
    """``size`` independent draws of the values a release by ``spend`` gives
    (:func:`~dpkit.statistics.quantile_release.spend_releaser`, the Session's path): the method
    and the values stage's epsilon come from ``spend``. Shape ``(size, m)``; nothing is
    charged. Raises as the release would, before anything is drawn."""
    owner = "quantiles_from_counts_samples"
    lv, lattice, measure = spend_inputs(owner, levels, spend, bounds, support)
    n = check_size(owner, size)
    summary = counts_from_summary(owner, points, counts, lattice)
    return _samples(summary, measure, lv, spend, n, as_source(rng))


def _samples(
    summary: Counts,
    measure: Measure,
    levels: tuple[float, ...],
    spend: QuantileSpend,
    n: int,
    source: Any,
) -> np.ndarray:
    """The values stage of ``spend``, ``n`` times (module docstring)."""
    lattice = summary.lattice
    rational = [as_rational_level(q) for q in levels]
    m = len(rational)
    meth = spend.method
    if meth == "cdf":  # the histogram's epsilon on one noisy histogram, as in a release
        hist = cdf_samples(summary, measure, levels, spend.epsilon("histogram"), n, source)
        return lattice.values(hist).reshape(n, m)
    eps_points: Fraction = spend.epsilon("quantiles")
    if meth == "exponential":  # one level: one exponential-mechanism draw per release
        lo, hi, level = lattice.lo, lattice.hi, rational[0]
        pts = draw_target(summary, measure, lo, hi, level, Fraction(0), eps_points, source, n)
        return lattice.values(on_support(measure, pts)).reshape(n, 1)
    if meth == "joint":
        rows = joint_exp_samples(summary, measure, rational, eps_points, source, n)
        return lattice.values(on_support(measure, rows)).reshape(n, m)
    several = independent_quantiles if meth == "independent" else approximate_quantiles
    rows = [several(summary, measure, rational, eps_points, source) for _ in range(n)]
    return lattice.values(on_support(measure, rows))
