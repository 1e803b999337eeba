"""Confidence intervals for released quantiles: helper order statistics and noisy cell counts.

Why a share of the budget is needed
-----------------------------------
A released quantile alone cannot carry a useful *value* interval: with half the records at
0 and half (plus one) at 100, the median is 100, yet the exponential mechanism returns a point
spread over the whole gap (0, 100); so any interval computed from the released value and the
public parameters alone that covers the median for every data set is essentially the bounds.
The rank error of the exponential mechanism is bounded by public quantities only through the
worst case (all records packed on one lattice point), which is far from typical. So dpkit
spends a stated share of the quantile budget (``interval_share``) on two more steps of the
same mechanism:

1. **Helpers** (``epsilon_h``): in each open cell between consecutive released quantiles
   ``t_j < t_{j+1}`` (and below the first, above the last) the order statistics ``K`` records
   above ``t_j`` and ``K`` records below ``t_{j+1}`` are released with the exponential mechanism
   (targets ``K`` and ``n_cell - K``, sensitivity 1). Cells hold disjoint records (records equal
   to a released value join none), so they compose in parallel; the two helpers of one cell
   share ``epsilon_h`` (sequential), a single helper gets all of it.
2. **Noisy cell counts** (``epsilon_c``): with every released value ``p_0 < ... < p_{r-1}``
   (quantiles and helpers) the counts of the half-open cells ``(-inf, p_0), [p_0, p_1), ...,
   [p_{r-1}, inf)`` get exact discrete Laplace noise of scale ``1 / epsilon_c``: one record
   sits in one cell, so the histogram is ``epsilon_c``-DP (L1 sensitivity 1).

The whole release (quantiles, helpers, counts) is one ``epsilon``-DP mechanism (sequential
composition of the three stages). The intervals are then **post-processing**.

What they contain
-----------------
Write ``x_(1) <= ... <= x_(n)`` for the records clipped to the bounds, ``L(t) = #{x < t}``
and ``R(t) = #{x <= t}``. The **rank quantiles** of level ``q`` are the points ``t`` with
``L(t) <= q n <= R(t)``: the single order statistic ``x_(ceil(q n))`` when ``q n`` is not an
integer, the whole segment ``[x_(k), x_(k + 1)]`` when ``q n = k`` is one. They are the
tie-aware quantiles the mechanism targets. NumPy's ``method="inverted_cdf"``
(``x_(ceil(q n))``) and ``"averaged_inverted_cdf"`` are always among them; its default
``"linear"`` interpolation is not (``x = [0, 1, ..., 8, 100]``, ``q = 0.95``: the only rank
quantile is 100, and NumPy's 58.6 lies in the empty gap below it, which no interval needs
to reach).

For a level ``q`` and a released point ``p_i``, ``T_i = (1 - q) A_i - q B_i`` (``A_i`` the
noisy count of the cells below ``p_i``, ``B_i`` the rest) estimates ``L(p_i) - q n``; its
noise is a weighted sum of the cells' discrete Laplace variables, with a public half-width
``h_i`` (Chernoff bound). The rank intervals use the prefix sums before each quantile and the
noisy total with their own half-widths. One union bound covers every statement made (per
level, one two-sided statement for each of the at most ``2 * _WINDOW - 1`` points examined
around its quantile; then the ``m`` prefix sums and the total): the value statements share
three quarters of ``alpha`` and the rank statements a quarter (:func:`statement_betas`). So
with probability at least ``1 - alpha``, *jointly* for every level ``q``:

* ``low`` (the largest examined ``p_i`` with ``T_i + h_i < 0``, else the lower bound) has
  ``L(low) < q n``, hence ``R(t) <= L(low) < q n`` for every ``t < low``: ``low`` is at or
  below every rank quantile;
* ``high`` (the smallest examined ``p_i`` with ``T_i - h_i > 0``, else the upper bound) has
  ``L(high) > q n``, hence ``L(t) > q n`` for every ``t >= high``: ``high`` is above every
  rank quantile;
* the rank interval ``[rank_low, rank_high]`` contains ``L(p) / n`` for the released value
  ``p`` of that level.

The statements are about the records rounded to the lattice (the mechanism's input); rounding
is monotone and moves a record by at most half a step, so widening ``low`` and ``high`` by
half a step makes them hold for the clipped records themselves.

These intervals are *conservative* (they hold for every data set, whatever the quantile
method and however many ties). Their width depends on ``K`` (public, from the budget and
``alpha``) and on the counts' noise; it never uses the data beyond the DP releases.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

import numpy as np

from dpkit.mechanisms.quantile_em import Counts, Measure
from dpkit.mechanisms.quantile_view import View, draw_view
from dpkit.noise import laplace_law

__all__ = [
    "IntervalStage",
    "helper_offset",
    "interval_stage",
    "laplace_sum_halfwidth",
    "statement_betas",
]


def _log_mgf(s: np.ndarray, a: float, c: float) -> np.ndarray:
    """log E[e^{sZ}] of the discrete Laplace ``P[z] ∝ a**|z|``, ``a = exp(-c)`` (``|s| < c``).

    The direct form for ordinary scales (up to 1e4); beyond, ``a exp(s)`` rounds to 1 (a
    tiny epsilon), and where ``exp(s)`` would overflow (a tiny scale, epsilon huge), the same
    quantity as ``2 log(-expm1(-c)) - log(-expm1(s - c)) - log(-expm1(-s - c))``, which is
    finite for every ``0 <= s < c`` (a release never fails after its budget was spent).
    """
    if c >= 1e-4 and float(np.max(np.abs(s))) < 700.0:
        return 2 * math.log1p(-a) - np.log1p(-a * np.exp(s)) - np.log1p(-a * np.exp(-s))
    return 2 * math.log(-math.expm1(-c)) - np.log(-np.expm1(s - c)) - np.log(-np.expm1(-s - c))


def weighted_halfwidth(groups: list[tuple[int, float]], scale: float, beta: float) -> float:
    """A half-width ``h`` with ``P[|sum_g w_g (Z_1 + ... + Z_{k_g})| > h] <= beta``.

    ``groups`` lists ``(k, w)``: ``k`` independent discrete Laplace variables of scale
    ``scale`` (``P[z] ∝ exp(-|z| / scale)``) weighted by ``w > 0``. Chernoff:
    ``P[sum > h] <= min_s prod E[e^{s w Z}] e^{-s h}``, doubled for the two symmetric tails;
    the minimum runs over a grid of ``s`` (every ``s`` gives a valid bound). A function of
    public figures only, cached: the groups of a release ask for the same ones.
    """
    return _halfwidth(tuple((int(k), float(w)) for k, w in groups), float(scale), float(beta))


def _computable(scale: float, wmax: float) -> float:
    """``scale``, or where the grid of ``s`` (``1 / (scale wmax)``) overflows (a scale near
    the smallest double, epsilon near the largest), the larger scale ``2**-1022 / wmax``:
    a Chernoff bound for the larger noise holds for the smaller (the discrete Laplace's
    moment generating function grows with its scale at every ``s``), so the half-width stays
    valid, and finite (only cases that gave NaN before take this branch)."""
    if scale * wmax > 0 and math.isfinite(1.0 / (scale * wmax)):
        return scale
    return 2.0**-1022 / wmax


@lru_cache(maxsize=4096)
def _halfwidth(groups: tuple[tuple[int, float], ...], scale: float, beta: float) -> float:
    live = [(k, w) for k, w in groups if k > 0 and w > 0]
    if not live:
        return 0.0
    wmax = max(w for _k, w in live)
    scale = _computable(scale, wmax)
    c = 1.0 / scale
    a = math.exp(-c)
    s = np.linspace(1e-4, 1 - 1e-6, 4000) / (scale * wmax)
    total = np.zeros_like(s)
    for k, w in live:
        total += k * _log_mgf(w * s, a, c)
    return float(np.min((total - math.log(beta / 2)) / s))


def split_halfwidths(
    k_low: np.ndarray, w_low: float, k_high: np.ndarray, w_high: float, scale: float, beta: float
) -> np.ndarray:
    """:func:`weighted_halfwidth` of ``[(k_low_i, w_low), (k_high_i, w_high)]`` for every
    ``i`` at once (the same Chernoff bound, minimised over a common grid of ``s``).

    A side with no variables (every ``k`` zero, as on a one-point grid) contributes nothing:
    its weight may exceed ``wmax``, where its moment generating function is infinite."""
    low_live, high_live = bool(np.any(k_low > 0)), bool(np.any(k_high > 0))
    wmax = max(w_low if low_live else 0.0, w_high if high_live else 0.0)
    if wmax <= 0:
        return np.zeros(np.shape(k_low))
    scale = _computable(scale, wmax)
    c = 1.0 / scale
    a = math.exp(-c)
    s = np.linspace(1e-4, 1 - 1e-6, 600) / (scale * wmax)
    lm_low = _log_mgf(w_low * s, a, c) if w_low > 0 and low_live else np.zeros_like(s)
    lm_high = _log_mgf(w_high * s, a, c) if w_high > 0 and high_live else np.zeros_like(s)
    total = np.outer(k_low, lm_low) + np.outer(k_high, lm_high)
    return np.min((total - math.log(beta / 2)) / s, axis=1)


def laplace_sum_halfwidth(k: int, scale: float, beta: float) -> int:
    """Smallest integer ``h`` with ``P[|Z_1 + ... + Z_k| > h] <= beta`` by the bound above."""
    return max(0, math.ceil(weighted_halfwidth([(k, 1.0)], scale, beta)))


#: Share of ``alpha`` spent on the rank intervals' statements; the value intervals' get the rest.
RANK_ALPHA_SHARE = Fraction(1, 4)


def statement_betas(alpha: float, levels: int, per_level: int) -> tuple[float, float]:
    """Error probabilities ``(beta_value, beta_rank)`` of each statement of one union bound:
    ``(1 - RANK_ALPHA_SHARE) alpha`` over the ``per_level * levels`` two-sided value
    statements (the points examined around each level's quantile), ``RANK_ALPHA_SHARE
    alpha`` over the rank intervals' ``levels + 1`` (the prefix sums before the quantiles
    and the noisy total). They sum to ``alpha``, so value and rank intervals hold *jointly*
    with probability at least ``1 - alpha``. A fixed split rather than one per statement:
    a noisy histogram makes hundreds of value statements, which would squeeze the few rank
    ones."""
    a = Fraction(alpha)
    beta_value = (1 - RANK_ALPHA_SHARE) * a / (per_level * levels)
    beta_rank = RANK_ALPHA_SHARE * a / (levels + 1)
    return float(beta_value), float(beta_rank)


def helper_offset(
    epsilon_points: float,
    epsilon_helpers: float,
    epsilon_counts: float,
    levels: int,
    depth: int,
    alpha: float,
) -> int:
    """The public helper offset ``K`` (records between a quantile and its helpers).

    A helper certifies when its rank clears the band of the weighted count noise (half-width
    ``h``, computed for the largest histogram this release can have, ``3 m + 1`` cells) plus
    the quantile's own rank error (about ``2 depth / epsilon_points``). Any ``K`` keeps the
    intervals valid; this one keeps them narrow.
    """
    cells = 3 * levels + 1
    h = weighted_halfwidth([(cells, 0.5)], 1.0 / epsilon_counts, alpha / (2 * _WINDOW * levels))
    per_helper = epsilon_helpers / (2 if levels > 1 else 1)
    k = K_BAND * h + 2 * depth / epsilon_points + K_HELPER / per_helper
    # any K keeps the intervals valid: past 2**62 (epsilon near the smallest float) it is capped
    return max(1, math.ceil(k)) if k < 2.0**62 else 2**62


K_BAND = 1.5
K_HELPER = 2.0


#: Released points examined on each side of a quantile when certifying its interval.
_WINDOW = 3


@dataclass(frozen=True, slots=True)
class IntervalStage:
    """What the interval stage released and concluded (all DP or post-processing)."""

    released: np.ndarray  # int64 lattice points of quantiles and helpers, sorted
    noisy_cells: np.ndarray  # int64 noisy counts of the r + 1 half-open cells
    noisy_n: int
    low: np.ndarray  # float64 per level
    high: np.ndarray
    rank_low: np.ndarray  # fraction of records strictly below each released quantile
    rank_high: np.ndarray


def _helpers(
    counts: Counts,
    measure: Measure,
    points: list[int],
    offset: int,
    epsilon: Fraction,
    source: Any,
) -> list[int]:
    """Helper order statistics ``offset`` records inside each cell around the quantiles."""
    lat = counts.lattice
    edges = sorted(set(points))
    bounds = [lat.lo, *edges, lat.hi]
    out: list[int] = []
    k = Fraction(offset)
    last_cell = len(bounds) - 2
    for i in range(last_cell + 1):
        lo, hi = bounds[i], bounds[i + 1]
        want_above = i > 0  # a helper `offset` records above the quantile at the cell's bottom
        want_below = i < last_cell  # and one `offset` records below the quantile at its top
        # the records strictly inside the cell; the outer cells keep the records at the bounds
        a = int(np.searchsorted(counts.values, lo, side="right" if want_above else "left"))
        b = int(np.searchsorted(counts.values, hi, side="left" if want_below else "right"))
        view = View(counts, None, a, max(a, b), lo, hi)
        share = epsilon / (2 if want_above and want_below else 1)
        if want_above:
            out.append(draw_view(view, measure, Fraction(0), k, share, source))
        if want_below:
            out.append(draw_view(view, measure, Fraction(1), -k, share, source))
    return out


def interval_stage(
    counts: Counts,
    measure: Measure,
    points: list[int],
    user_levels: tuple[float, ...],
    *,
    offset: int,
    epsilon_helpers: Fraction,
    epsilon_counts: Fraction,
    alpha: float,
    source: Any,
) -> IntervalStage:
    """Helpers, noisy cell counts and the intervals they certify (module docstring)."""
    lat = counts.lattice
    helpers = _helpers(counts, measure, points, offset, epsilon_helpers, source)
    released = np.array(sorted(set(points + helpers)), dtype=np.int64)  # np.unique's result
    r = released.size
    below = counts.cum[np.searchsorted(counts.values, released, side="left")]
    true_cells = np.diff(np.concatenate(([0], below, [counts.n])))
    count_noise = laplace_law(1, epsilon_counts)  # one record moves one cell by one
    count_scale = count_noise.scale
    noisy = true_cells + count_noise.draw(r + 1, source)
    prefix = np.cumsum(noisy)  # prefix[i] estimates L(released[i]); prefix[-1] estimates n
    n_hat = int(prefix[-1])
    scale = float(count_scale)
    vals = lat.values(released)
    pos = np.searchsorted(released, np.array(points, dtype=np.int64))
    m = len(user_levels)
    # value intervals: for level q and released p_i, T = (1 - q) A_i - q B_i estimates
    # L(p_i) - q n (A_i = prefix before p_i, B_i = the rest); examine _WINDOW points on
    # each side of the level's quantile (2 _WINDOW - 1 distinct ones). One union bound over
    # those statements and the rank intervals' m + 1 (module docstring): both kinds of
    # interval hold jointly with probability >= 1 - alpha
    beta, beta_r = statement_betas(alpha, m, 2 * _WINDOW - 1)
    low = np.empty(m)
    high = np.empty(m)
    half = lat.spacing / 2  # the statements are about records rounded to the lattice
    prefix_list = prefix.tolist()
    for j, level in enumerate(user_levels):
        # the caller's level exactly (q = qn / qd): the statement is about q n; in integers,
        # stat = (1 - q) a - q b = s / qd with s = (qd - qn) a - qn b, and for h = hn / hd,
        # stat + h < 0 iff s hd + hn qd < 0 (qd, hd > 0), stat - h > 0 iff s hd - hn qd > 0
        qn, qd = float(level).as_integer_ratio()
        qf = qn / qd
        lo_pick, hi_pick = lat.lower, lat.upper
        p_j = int(pos[j])
        lo_range = range(max(0, p_j - _WINDOW + 1), p_j + 1)
        hi_range = range(p_j, min(r, p_j + _WINDOW))
        for i in list(lo_range) + list(hi_range):
            a_i = prefix_list[i]
            b_i = n_hat - a_i
            k_a, k_b = i + 1, r - i
            h = weighted_halfwidth([(k_a, 1 - qf), (k_b, qf)], scale, beta)
            hn, hd = h.as_integer_ratio()
            s_hd = ((qd - qn) * a_i - qn * b_i) * hd
            if i in lo_range and s_hd + hn * qd < 0:
                lo_pick = max(lo_pick, max(float(vals[i]) - half, lat.lower))
            if i in hi_range and s_hd - hn * qd > 0:
                hi_pick = min(hi_pick, min(float(vals[i]) + half, lat.upper))
        low[j], high[j] = lo_pick, hi_pick
    # rank intervals: prefix sums before each quantile and the total, in the same union bound
    h_n = laplace_sum_halfwidth(r + 1, scale, beta_r)
    a_j = prefix[pos].astype(np.int64)
    h_a = np.array([laplace_sum_halfwidth(int(i) + 1, scale, beta_r) for i in pos])
    n_lo, n_hi = n_hat - h_n, n_hat + h_n
    rank_low = np.clip((a_j - h_a) / n_hi, 0.0, 1.0) if n_hi > 0 else np.zeros(m)
    rank_high = np.clip((a_j + h_a) / n_lo, 0.0, 1.0) if n_lo > 0 else np.ones(m)
    return IntervalStage(
        released=released,
        noisy_cells=noisy.astype(np.int64),
        noisy_n=n_hat,
        low=low,
        high=high,
        rank_low=np.asarray(rank_low, dtype=np.float64),
        rank_high=np.asarray(rank_high, dtype=np.float64),
    )
