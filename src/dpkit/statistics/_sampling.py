"""Many draws of the quantile values of :func:`quantiles_from_counts` at once (for audits).

:func:`quantiles_from_counts_samples` validates exactly as
:func:`dpkit.statistics.quantiles_from_counts` and runs its first stage (the values, at
``(1 - interval_share) epsilon``) ``size`` times: one level is one exponential-mechanism draw,
so all ``size`` draws come from one batched :func:`~dpkit.statistics._approximate.draw_target`
call; several levels run ApproximateQuantiles (or independent draws) once per draw. The
interval stage is not run: it draws separate noise, and the values are a marginal of the
release's output, distributed exactly as in a release. With ``size=1`` the bits are consumed
as by the release, so a seed gives the release's values (tested).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from dpkit.errors import ParameterError
from dpkit.frameworks._quantile_em import Lattice
from dpkit.mechanisms._common import check_size
from dpkit.samplers import as_source
from dpkit.statistics._approximate import (
    approximate_quantiles,
    draw_target,
    independent_quantiles,
)
from dpkit.statistics._cdf import cdf_grid, cdf_quantiles
from dpkit.statistics._input import as_rational_level, counts_from_summary
from dpkit.statistics._joint import joint_exp_samples
from dpkit.statistics._quantiles import _check_common, _measure, on_support

__all__ = ["quantiles_from_counts_samples"]


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
    lattice = Lattice.for_bounds(owner, lower, upper)
    summary = counts_from_summary(owner, points, counts, lattice)
    measure = _measure(owner, lattice, support, integer_dtype=False)
    source = as_source(rng)
    rational = [as_rational_level(q) for q in lv]
    eps_points = Fraction(eps) * (1 - Fraction(share))
    m = len(rational)
    if meth == "auto":  # the release's choice (dpkit.statistics._quantiles._release)
        meth = ("cdf" if cdf_grid(measure) is not None else "aq") if m > 1 else "exponential"
    if m == 1 and meth not in ("joint", "cdf"):
        meth = "exponential"
    if meth == "cdf":  # the whole epsilon on one noisy histogram, as in a release
        if cdf_grid(measure) is None:
            raise ParameterError(
                f"{owner}: method='cdf' needs a power-of-two resolution `support` (such as "
                "1.0) with a small grid inside the bounds"
            )
        rows = [
            cdf_quantiles(summary, measure, lv, Fraction(eps), 0.05, source).points
            for _ in range(n)
        ]
        return lattice.values(np.array(rows, dtype=np.int64)).reshape(n, m)
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
