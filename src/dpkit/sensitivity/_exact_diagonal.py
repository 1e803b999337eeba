"""``A(f, x, k)`` exactly, as a rational, for the mean and the percentiles (lattice units).

The algorithms of :mod:`dpkit.sensitivity.at_distance` choose, for each distance ``k``, a
finite family of candidate datasets whose largest ``LS_1`` is ``A``. Here every candidate's
value is a rational number of the integer lattice data (:mod:`._lattice_data`), and the
maximum is found exactly in two passes:

1. all candidates are evaluated in float64 from *exact* integer inputs, each with a proven
   error bound (mean: a relative ``4u``, ``u = 2**-53``, since numerator and denominator are
   exact int64 and only the conversion and the division round; percentiles: the position
   ``h = q (m - 1)`` has an absolute error of at most ``2 u m``, and each candidate is a
   continuous function of it with slope at most the lattice width, so its error is at most
   ``4 u (m + 2) W``);
2. the candidates (for percentiles: the groups of candidates sharing one dataset shape and
   one move) whose float value is within twice that bound of the float maximum are evaluated
   again in exact rational arithmetic, and the exact maximum is taken over them. Every other
   candidate is provably smaller.

``A`` is returned as a :class:`fractions.Fraction` in lattice units; the caller rounds it up
to a float (:func:`._lattice_data.ceil_float`), a monotone map, so comparisons with a proposed
bound (propose-test-release) and the inequality ``A(x, k) <= A(x', k + 1)`` that smooth
sensitivity needs hold exactly for the values used.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from dpkit.sensitivity._lattice_data import LatticeData

__all__ = ["gaps", "mean_diagonal", "percentile_diagonal"]

_U = 2.0**-53


def _pairs(n: int, k: int, relation: str) -> tuple[np.ndarray, np.ndarray]:
    if relation == "bounded":
        if k > n:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        return np.asarray([k], np.int64), np.asarray([k], np.int64)
    r = np.arange(0, k + 1, dtype=np.int64)
    a = k - r
    keep = (r <= n) & (n - r + a >= 1)
    return r[keep], a[keep]


def _padded(ld: LatticeData, lo_fill: int, hi_fill: int, idx: np.ndarray) -> np.ndarray:
    n = ld.n
    clipped = np.clip(idx, 0, n - 1)
    return np.where(idx < 0, lo_fill, np.where(idx >= n, hi_fill, ld.w[clipped])).astype(np.int64)


def gaps(ld: LatticeData, first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """``xt[second] - xt[first]`` of the padded lattice data (int64, exact, non-negative)."""
    return _padded(ld, ld.lo, ld.hi, second) - _padded(ld, ld.lo, ld.hi, first)


def mean_diagonal(ld: LatticeData, k: int) -> Fraction:
    """Largest unbounded ``LS_1(mean, y)`` over ``y`` with ``r`` removals and ``k - r``
    additions (the eight shapes of :func:`dpkit.sensitivity.at_distance._mean_diagonal`), in
    lattice units, exactly.

    Every shape's value is ``num / den`` with int64 ``num`` (a lattice value times ``m``
    minus an exact sum) and ``den = m (m + 1)`` or ``m (m - 1)``; below ``2**31`` records and
    distance these never overflow.
    """
    n = ld.n
    r, a = _pairs(n, k, "unbounded")
    if r.size == 0:
        return Fraction(0)
    if n + k >= 2**31:  # pragma: no cover - far beyond any in-memory dataset
        raise OverflowError("mean_diagonal: n + k must stay below 2**31")
    p, w, lo, hi = ld.p1, ld.w, ld.lo, ld.hi
    total = int(p[n])
    m = n - r + a
    low = p[r]
    high = total - p[n - r]
    r3 = np.minimum(r + 1, n)
    two = m >= 2
    has_add = a >= 1
    ok3 = two & (r <= n - 1)
    s_keep_lo = total - high + a * lo  # the largest removed, `a` records at `lower`
    s_keep_hi = total - low + a * hi
    kept_top = _padded(ld, lo, lo, n - 1 - r)
    kept_bot = _padded(ld, hi, hi, r)
    wmax, wmin = int(w[-1]), int(w[0])
    mp1 = m * (m + 1)
    mm1 = m * (m - 1)
    shapes = [  # (numerator, denominator, valid): the value is num / den
        (hi * m - s_keep_lo, mp1, np.ones(m.shape, bool)),  # add `upper` to the lowest mean
        (s_keep_hi - lo * m, mp1, np.ones(m.shape, bool)),  # add `lower` to the highest
        (hi * m - (hi + (a - 1) * lo + total - high), mm1, two & has_add),
        (kept_top * m - s_keep_lo, mm1, two),
        (wmax * m - (p[n - r3] + wmax + a * lo), mm1, ok3),
        ((lo + (a - 1) * hi + total - low) - lo * m, mm1, two & has_add),
        (s_keep_hi - kept_bot * m, mm1, two),
        ((total - p[r3] + wmin + a * hi) - wmin * m, mm1, ok3),
    ]
    nums = np.concatenate([s[0] for s in shapes]).astype(np.int64)
    dens = np.concatenate([np.where(s[2], s[1], 1) for s in shapes]).astype(np.int64)
    valid = np.concatenate([s[2] for s in shapes])
    approx = np.where(valid, nums.astype(np.float64) / dens.astype(np.float64), 0.0)
    top = float(approx.max())
    if top <= 0:
        return Fraction(0)
    # float values are within a relative 4u of the exact ones: only these can be the maximum
    band = np.flatnonzero(valid & (approx >= top * (1 - 16 * _U)))
    return max(Fraction(int(nums[i]), int(dens[i])) for i in band)


def _group_exact(ld: LatticeData, t: int, w0: Fraction, w1: Fraction, r: int, a: int) -> Fraction:
    """Largest value of one (move, r, a) group: every placement ``p`` of the additions at
    ``lower`` and every split ``d1`` of the removed block, exactly.

    A value is ``w0 g0 + w1 g1`` with exact rational weights and integer gaps ``g``: every
    pair is scored in float (relative error below ``4u``, non-negative terms) and the distinct
    pairs within ``2**-40`` of the best are compared in exact arithmetic.
    """
    n = ld.n
    d = r
    i = t - np.arange(a + 1, dtype=np.int64)
    g0s, g1s = [], []
    for d1 in sorted({0, min(d, 1), max(d - 1, 0), d}):
        feas = np.ones(i.size, bool)
        if d1 >= 1:
            feas &= (i + 1 >= 0) & (i + d1 <= n - 1)
        if d1 < d:
            feas &= (i + d1 + 2 >= 0) & (i + d + 1 <= n - 1)
        ii = i[feas]
        y0 = _padded(ld, ld.lo, ld.hi, ii)
        y1 = _padded(ld, ld.lo, ld.hi, ii + d1 + 1)
        y2 = _padded(ld, ld.lo, ld.hi, ii + d + 2)
        g0s.append(y1 - y0)
        g1s.append(y2 - y1)
    g0, g1 = np.concatenate(g0s), np.concatenate(g1s)
    if g0.size == 0:
        return Fraction(0)
    score = float(w0) * g0.astype(np.float64) + float(w1) * g1.astype(np.float64)
    top = float(score.max())
    near = score >= top - 2.0**-40 * abs(top)
    pairs = {(int(u), int(v)) for u, v in zip(g0[near], g1[near], strict=True)}
    return max(Fraction(0), max(w0 * u + w1 * v for u, v in pairs))


def percentile_diagonal(
    ld: LatticeData,
    q: float,
    relation: str,
    k: int,
    float_groups: list[tuple[float, int, int, int]],
) -> Fraction:
    """Exact ``A`` at distance ``k`` from the float pass's group maxima.

    ``float_groups`` holds ``(float value, move, r, a)`` for every group the float pass
    :func:`dpkit.sensitivity.at_distance._percentile_groups` evaluated (groups it pruned are
    provably at most its threshold). Each float value is within a relative ``4u`` of the
    group's exact maximum (exact positions and weights, one rounding per weight, non-negative
    terms); the groups within ``16u`` of the float maximum are recomputed exactly and the
    exact maximum over them is ``A``'s diagonal value.
    """
    from dpkit.sensitivity.at_distance import _exact_moves

    if not float_groups:
        return Fraction(0)
    top = max(g[0] for g in float_groups)
    if top <= 0:
        return Fraction(0)
    best = Fraction(0)
    qf = Fraction(q)
    for val, move, r, a in float_groups:
        if val < top * (1 - 16 * _U):
            continue
        m = np.asarray([ld.n - r + a])
        t, big_w0, big_w1, _allowed = _exact_moves(q, m, relation)[move]
        w0 = Fraction(int(big_w0[0]), qf.denominator)
        w1 = Fraction(int(big_w1[0]), qf.denominator)
        best = max(best, _group_exact(ld, int(t[0]), w0, w1, r, a))
    return best
