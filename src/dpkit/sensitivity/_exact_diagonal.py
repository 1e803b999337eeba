"""``A(f, x, k)`` exactly, as a rational, for the mean and the percentiles (lattice units).

The algorithms of :mod:`dpkit.sensitivity.at_distance` choose, for each distance ``k``, a
finite family of candidate datasets whose largest ``LS_1`` is ``A``. Here every candidate's
value is a rational number of the integer lattice data (:mod:`.lattice_data`), and the
maximum is found exactly in two passes:

1. all candidates (for the mean, each shape's best dataset at the distance, found by an
   exact bisection: :func:`mean_diagonals`) are evaluated in float64 from *exact* integer
   inputs, each with a proven
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
to a float (:func:`.lattice_data.ceil_float`), a monotone map, so comparisons with a proposed
bound (propose-test-release) and the inequality ``A(x, k) <= A(x', k + 1)`` that smooth
sensitivity needs hold exactly for the values used.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from dpkit.sensitivity._moves import exact_moves
from dpkit.sensitivity.lattice_data import LatticeData

__all__ = ["gaps", "mean_diagonal", "mean_diagonals", "percentile_diagonal"]

_U = 2.0**-53


def _padded(ld: LatticeData, lo_fill: int, hi_fill: int, idx: np.ndarray) -> np.ndarray:
    n = ld.n
    clipped = np.clip(idx, 0, n - 1)
    return np.where(idx < 0, lo_fill, np.where(idx >= n, hi_fill, ld.w[clipped])).astype(np.int64)


def gaps(ld: LatticeData, first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """``xt[second] - xt[first]`` of the padded lattice data (int64, exact, non-negative)."""
    return _padded(ld, ld.lo, ld.hi, second) - _padded(ld, ld.lo, ld.hi, first)


def mean_diagonal(ld: LatticeData, k: int) -> Fraction:
    """Largest unbounded ``LS_1(mean, y)`` over ``y`` with ``r`` removals and ``k - r``
    additions, in lattice units, exactly: :func:`mean_diagonals` for the one distance ``k``."""
    return mean_diagonals(ld, k, k)[0]


def mean_diagonals(ld: LatticeData, k0: int, k1: int) -> list[Fraction]:
    """:func:`mean_diagonal` for every distance ``k0..k1``, in ``O((k1 - k0 + 1) log k1)``.

    At distance ``k`` a dataset ``y`` removes ``r`` records of ``x`` and adds ``a = k - r``
    at the bounds (``m = n + k - 2 r`` records). Six shapes, each a value ``num / den`` with
    int64 ``num`` (a lattice value times ``m`` minus an exact sum) and ``den = m (m + 1)`` or
    ``m (m - 1)``, give the largest ``LS_1`` (below ``2**31`` records and distance these never
    overflow): add ``upper`` to ``x`` minus its ``r`` largest plus ``a`` records at ``lower``;
    remove the added ``upper`` from ``x`` minus its ``r`` largest plus one record at
    ``upper`` and ``a - 1`` at ``lower``; remove ``max(x)`` from ``x`` minus the ``r`` records
    just below it plus ``a`` at ``lower``; and the three mirror images. Removing instead the
    largest *kept* record ``t`` (of ``x`` minus its ``r`` largest plus ``a`` at ``lower``)
    leaves the same dataset as the third shape and moves the mean by ``(t - mu) / m <=
    (max(x) - mu) / m``, so it never wins (it is 0 when ``r = n``).

    Each shape is unimodal in ``r`` (for fixed ``k``), so its maximum is found by bisection
    on "the value rises from ``r`` to ``r + 1``": ``num`` is concave in ``r`` (its steps,
    ``-2 upper + x[n - r - 1] + lower`` and the like, only fall as ``r`` grows because ``x``
    is sorted), ``den`` is convex and positive, and ``num >= 0``; so every superlevel set
    ``{num - t den >= 0}`` is an interval, and two consecutive equal values can only be the
    maximum (``num - t den`` concave and 0 at both). Each comparison is decided in float
    when the values differ by more than their error (a relative ``4u`` each) and in exact
    integers otherwise; the six maxima are then compared in two passes as the module
    docstring says.
    """
    n = ld.n
    if n + k1 >= 2**31:  # pragma: no cover - far beyond any in-memory dataset
        raise OverflowError("mean_diagonal: n + k must stay below 2**31")
    ks = np.arange(k0, k1 + 1, dtype=np.int64)
    shapes = [_mean_shape(ld, ks, s) for s in range(6)]
    nums = np.stack([s[0] for s in shapes])
    dens = np.stack([s[1] for s in shapes])
    valid = np.stack([s[2] for s in shapes])
    return [_exact_max(nums[:, j], dens[:, j], valid[:, j]) for j in range(ks.size)]


def _exact_max(nums: np.ndarray, dens: np.ndarray, valid: np.ndarray) -> Fraction:
    """The largest valid ``nums[i] / dens[i]`` (0 if none is positive), exactly."""
    approx = np.where(valid, nums.astype(np.float64) / np.where(valid, dens, 1), 0.0)
    top = float(approx.max())
    if top <= 0:
        return Fraction(0)
    # float values are within a relative 4u of the exact ones: only these can be the maximum
    band = np.flatnonzero(valid & (approx >= top * (1 - 16 * _U)))
    return max(Fraction(int(nums[i]), int(dens[i])) for i in band)


def _mean_value(
    ld: LatticeData, shape: int, ks: np.ndarray, r: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(num, den)`` of one shape of :func:`mean_diagonals` at ``(k, r)`` (int64, exact)."""
    n, p, lo, hi = ld.n, ld.p1, ld.lo, ld.hi
    total = int(p[n])
    m = n + ks - 2 * r
    a = ks - r
    if shape == 0:  # add `upper` to the lowest mean: the r largest removed, a at `lower`
        return hi * m - (p[n - r] + a * lo), m * (m + 1)
    if shape == 1:  # add `lower` to the highest mean
        return (total - p[r] + a * hi) - lo * m, m * (m + 1)
    if shape == 2:  # remove an added `upper` (the others at `lower`)
        return hi * m - (hi + (a - 1) * lo + p[n - r]), m * (m - 1)
    if shape == 3:  # remove an added `lower`
        return (lo + (a - 1) * hi + total - p[r]) - lo * m, m * (m - 1)
    wmax, wmin = int(ld.w[-1]), int(ld.w[0])
    rr = np.minimum(r + 1, n)  # r <= n - 1 where these are valid
    if shape == 4:  # remove max(x), the r records below it removed, a at `lower`
        return wmax * m - (p[n - rr] + wmax + a * lo), m * (m - 1)
    return (total - p[rr] + wmin + a * hi) - wmin * m, m * (m - 1)  # remove min(x)


def _mean_shape(
    ld: LatticeData, ks: np.ndarray, shape: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The largest ``(num, den)`` of one shape over ``r`` for every ``k`` in ``ks``, and
    whether the shape exists at ``k`` (bisection over the unimodal values, exact)."""
    n = ld.n
    # r <= min(k, n), m = n + k - 2 r >= 1 (>= 2 when removing a record, which then exists)
    m_min = 1 if shape < 2 else 2
    r_max = np.minimum(np.minimum(ks, n), (n + ks - m_min) // 2)
    if shape in (2, 3):
        r_max = np.minimum(r_max, ks - 1)  # a >= 1: a record was added at the bound
    elif shape >= 4:
        r_max = np.minimum(r_max, n - 1)  # the removed extreme record is kept until then
    valid = r_max >= 0
    lo_r = np.zeros(ks.size, dtype=np.int64)
    hi_r = np.maximum(r_max, 0)
    while True:
        act = np.flatnonzero(lo_r < hi_r)
        if act.size == 0:
            break
        mid = (lo_r[act] + hi_r[act]) // 2
        rises = _rises(
            _mean_value(ld, shape, ks[act], mid + 1), _mean_value(ld, shape, ks[act], mid)
        )
        lo_r[act[rises]] = mid[rises] + 1
        hi_r[act[~rises]] = mid[~rises]
    num, den = _mean_value(ld, shape, ks, lo_r)
    return num, np.where(valid, den, 1), valid


def _rises(
    after: tuple[np.ndarray, np.ndarray], before: tuple[np.ndarray, np.ndarray]
) -> np.ndarray:
    """``after > before`` for non-negative fractions ``(num, den)``, exactly."""
    f1 = after[0].astype(np.float64) / after[1].astype(np.float64)
    f0 = before[0].astype(np.float64) / before[1].astype(np.float64)
    up = f1 > f0 * (1 + 16 * _U)  # each float within a relative 4u of its value
    unsure = np.flatnonzero(~up & (f1 >= f0 * (1 - 16 * _U)))
    for i in unsure:
        up[i] = int(after[0][i]) * int(before[1][i]) > int(before[0][i]) * int(after[1][i])
    return up


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
        t, big_w0, big_w1, _allowed = exact_moves(q, m, relation)[move]
        w0 = Fraction(int(big_w0[0]), qf.denominator)
        w1 = Fraction(int(big_w1[0]), qf.denominator)
        best = max(best, _group_exact(ld, int(t[0]), w0, w1, r, a))
    return best
