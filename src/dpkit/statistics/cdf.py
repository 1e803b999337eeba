"""Quantiles of a column on a small public grid: one noisy histogram, every quantile and its
interval read from it.

When the support is a public resolution ``r`` (an integer column: ``r = 1``) and the bounds
hold few grid points (``K <= 4096``), every record is rounded to the grid ``r Z`` (a per-record
map; a no-op on integer data) and the ``K`` counts get exact discrete Laplace noise of scale
``1 / epsilon``: one record moves one count by one, so the histogram is pure ``epsilon``-DP
under add/remove (Ghosh, Roughgarden and Sundararajan 2009). Everything else is
post-processing:

* the ``q``-quantile is the smallest grid point whose noisy cumulative count reaches
  ``q`` times the noisy total, the points then sorted (the noisy cumulative counts need not
  increase, so the crossings alone can come out of order on small or empty groups);
* with ``C_t`` the records at or below grid point ``t``, ``T = (1 - q) C~_t - q (n~ - C~_t)``
  estimates ``C_t - q n`` with noise a weighted sum of the ``K`` Laplace variables
  (Chernoff half-width ``h``); ``T + h < 0`` certifies ``C_t < q n`` (every rank quantile,
  as defined in :mod:`dpkit.statistics._intervals`, lies above ``t``) and ``T - h > 0``
  certifies ``C_t > q n`` (every rank quantile lies at or below ``t``). The interval runs
  from the point after the largest certified-below ``t`` to the smallest certified-above
  ``t``. One union bound covers these statements (one per level and grid point) and the
  rank intervals' prefix sums and total, so value and rank intervals hold jointly with
  probability at least ``1 - alpha``.

Ties cost nothing here (a tied value is one grid point), so this beats the exponential
mechanism's recursions on integer data, whose splits drift by up to a tie block; on large
grids the histogram's noise grows with ``K`` and ApproximateQuantiles is used instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dpkit.mechanisms.quantile_em import Counts, Measure
from dpkit.noise import laplace_law
from dpkit.statistics._input import as_rational_level
from dpkit.statistics._intervals import laplace_sum_halfwidth, split_halfwidths, statement_betas

__all__ = ["MAX_GRID", "CdfRelease", "cdf_grid", "cdf_points", "cdf_quantiles", "cdf_samples"]

MAX_GRID = 4096


def cdf_grid(measure: Measure) -> tuple[int, int, int] | None:
    """``(first, step, size)`` of the public grid in lattice units, or ``None`` when the
    support is not a resolution or the grid is too large."""
    if isinstance(measure.support, str) or not measure.levels:
        return None
    k = measure.levels[0][0]
    lat = measure.lattice
    step = 1 << k
    first = -((-lat.lo) // step) * step  # ceil to a multiple of the step
    last = (lat.hi // step) * step
    size = (last - first) // step + 1
    if size < 1 or size > MAX_GRID:
        return None
    return first, step, size


@dataclass(frozen=True, slots=True)
class CdfRelease:
    points: list[int]  # lattice units of the released quantiles
    low: np.ndarray
    high: np.ndarray
    rank_low: np.ndarray
    rank_high: np.ndarray
    noisy: np.ndarray  # the released histogram
    grid: tuple[int, int, int]


def _histogram(counts: Counts, measure: Measure) -> tuple[np.ndarray, tuple[int, int, int]]:
    """The exact histogram on the public grid (each record to its nearest grid point, halves
    up, inside the grid) and the grid."""
    grid = cdf_grid(measure)
    if grid is None:  # pragma: no cover - the caller checks
        raise ValueError("cdf_quantiles: no small public grid for this support")
    first, step, size = grid
    idx = np.floor_divide(counts.values - first + step // 2, step)
    idx = np.clip(idx, 0, size - 1)
    return np.bincount(idx, weights=counts.counts, minlength=size).astype(np.int64), grid


def cdf_points(
    noisy: np.ndarray, user_levels: tuple[float, ...], grid: tuple[int, int, int]
) -> np.ndarray:
    """The released quantiles (lattice units, sorted) of each row of ``noisy`` (noisy
    histograms on ``grid``, shape ``(draws, size)``): per level ``q``, the first grid point
    whose noisy cumulative count reaches ``q`` times the noisy total (the last point if
    none does), compared exactly in integers; then sorted. Shape ``(draws, m)``."""
    first, step, size = grid
    cum = np.cumsum(noisy, axis=1)
    n_hat = cum[:, -1:]
    out = np.empty((noisy.shape[0], len(user_levels)), dtype=np.int64)
    for j, level in enumerate(user_levels):
        qr = as_rational_level(level)  # denominator <= 2**20: the products stay in int64
        ok = cum * qr.denominator >= qr.numerator * n_hat
        s = np.where(ok.any(axis=1), np.argmax(ok, axis=1), size - 1)
        out[:, j] = first + step * s
    # a noisy cumulative count need not be monotone (negative noisy counts; a noisy total
    # <= 0 reverses the targets q n~), so the first crossings may come out of order: sort
    # them (post-processing; each level's interval certifies its own level, whatever point
    # is released)
    return np.sort(out, axis=1)


def cdf_samples(
    counts: Counts,
    measure: Measure,
    user_levels: tuple[float, ...],
    epsilon: Fraction,
    size: int,
    source: Any,
) -> np.ndarray:
    """``size`` independent draws of the quantiles :func:`cdf_quantiles` releases (lattice
    units, shape ``(size, m)``), every histogram's noise drawn in one call (for ``size=1``
    the same call as a release's, so a seed gives its values)."""
    hist, grid = _histogram(counts, measure)
    noise = laplace_law(1, epsilon).draw(size * grid[2], source).reshape(size, grid[2])
    return cdf_points(hist + noise, user_levels, grid)


def cdf_quantiles(
    counts: Counts,
    measure: Measure,
    user_levels: tuple[float, ...],
    epsilon: Fraction,
    alpha: float,
    source: Any,
) -> CdfRelease:
    """The noisy-histogram quantiles and their intervals (module docstring)."""
    hist, grid = _histogram(counts, measure)
    first, step, size = grid
    lat = counts.lattice
    noise = laplace_law(1, epsilon)  # one record moves one count by one
    scale = noise.scale
    noisy = hist + noise.draw(size, source)
    cum = np.cumsum(noisy)
    n_hat = int(cum[-1])
    pts_units = first + step * np.arange(size)
    values = lat.values(pts_units)
    points = cdf_points(noisy[None, :], user_levels, grid)[0].tolist()
    m = len(user_levels)
    # one union bound over every statement: a two-sided one per (level, grid point), then
    # the rank intervals' m prefix sums and the total (value and rank intervals jointly)
    beta, beta_r = statement_betas(alpha, m, size)
    sf = float(scale)
    low = np.empty(m)
    high = np.empty(m)
    half = (step + 1) * lat.spacing / 2  # grid rounding moves a record by <= step / 2
    ts = np.arange(size)
    c_t = cum.astype(object)  # exact comparisons below
    for j, level in enumerate(user_levels):
        q = Fraction(level)
        qf = float(q)
        h = split_halfwidths(ts + 1, 1 - qf, size - ts - 1, qf, sf, beta)
        lo_i, hi_i = 0, size - 1
        for t in range(size):
            stat = (1 - q) * c_t[t] - q * (n_hat - c_t[t])
            ht = Fraction(float(h[t]))
            if stat + ht < 0:
                lo_i = max(lo_i, min(t + 1, size - 1))
            if stat - ht > 0:
                hi_i = min(hi_i, t)
        low[j] = max(float(values[lo_i]) - half, lat.lower)
        high[j] = min(float(values[hi_i]) + half, lat.upper)
    # rank intervals: records strictly below each released point, over the total
    h_n = laplace_sum_halfwidth(size, sf, beta_r)
    pos = [(p - first) // step for p in points]
    below = np.array([int(cum[i - 1]) if i > 0 else 0 for i in pos])
    h_b = np.array([laplace_sum_halfwidth(i, sf, beta_r) if i > 0 else 0 for i in pos])
    n_lo, n_hi = n_hat - h_n, n_hat + h_n
    rank_low = np.clip((below - h_b) / n_hi, 0.0, 1.0) if n_hi > 0 else np.zeros(m)
    rank_high = np.clip((below + h_b) / n_lo, 0.0, 1.0) if n_lo > 0 else np.ones(m)
    return CdfRelease(points, low, high, rank_low, rank_high, noisy, grid)
