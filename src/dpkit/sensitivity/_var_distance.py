"""``A(var, x, k)`` exactly: the largest ``LS_1`` of the population variance within distance ``k``.

Every pair ``(y, y')`` that ``A(var, x, k)`` looks at (``y`` within distance ``k`` of ``x``,
``y'`` a neighbour of ``y``) is written through the smaller dataset ``s`` of the pair and one
record ``z``; with ``m = |s|``, ``mu`` and ``V`` its mean and variance,

- unbounded (``{y, y'} = {s, s + z}``)::

      V(s + z) - V(s) = (m (z - mu)**2 / (m + 1) - V) / (m + 1)

- bounded (``y = c + y_i``, ``y' = c + z``, ``|c| = n - 1``, ``mu``, ``V`` of ``c``)::

      V(c + z) - V(c + y_i) = (n - 1) / n**2 * ((z - mu)**2 - (y_i - mu)**2)

Each term to maximise is, for fixed sizes, a function ``F(S, Q)`` of the sum ``S`` and the sum
of squares ``Q`` of ``s`` (or ``c``). Three facts pick the maximisers out of the exponentially
many datasets in the ball (``w`` a record of the data sorted ascending):

1. **Windows.** If ``F`` is jointly convex and non-increasing in ``Q`` (the increase terms:
   ``F = m/(m+1) (z - S/m)**2 - Q/m + S**2/m**2``), the kept records form a contiguous window of
   the sorted data. Kept ``w_a < w_c`` around a removed ``w_b``: trading ``w_a`` for ``w_b``
   moves ``(S, Q)`` by ``d1 (1, w_a + w_b)``, trading ``w_c`` for ``w_b`` by ``-d2 (1, w_b + w_c)``;
   their ``(d2, d1)``-weighted mean keeps ``S`` and lowers ``Q``, so by convexity one of the
   two trades does not lower ``F``. Added records (free in ``[lower, upper]``) all take one
   value ``t``: spreading them at a fixed sum raises ``Q`` only. ``F`` is quadratic in ``t``,
   so ``t`` is a bound or the clamped vertex.
2. **Removed blocks.** If ``F = p Q + g(S)`` with ``g`` a concave quadratic of curvature
   ``gamma <= p`` (the variance itself, ``p = 1/m, gamma = 1/m**2``; the decrease term with a
   data record ``z``, ``m >= 2``), the removed records form a contiguous block: with a kept
   ``w_b`` between removed ``w_a <= w_c``, the two trades change ``F`` by ``-d1 (w_a (p - gamma)
   + P)`` and ``d2 (w_c (p - gamma) + P)`` for a common ``P``, and both cannot be negative.
   Moving the block one place up changes ``F`` by ``d h(b)`` with ``d <= 0`` and
   ``h(b) = w_b (p - gamma) + w_{b+r} (p + gamma) + beta - 2 gamma S_b`` non-decreasing in
   ``b`` (``S_b`` falls as the block rises): ``F`` is unimodal in the block's position and a
   bisection finds the best block in ``O(log n)``. ``F`` is convex in each added record
   (``2p - 2 gamma >= 0``), so added records sit at the bounds: ``u`` at ``upper``, the rest at
   ``lower``.
3. **Extreme records.** Where the removed record ``z`` must be far from the mean (the increase
   when a data record leaves ``y``, the bounded decrease), it is the largest record (or the
   smallest, mirrored): exchanging it with the largest only moves ``z`` out and the mean of
   ``s`` in, and lowers ``V(s)``.

The terms, for ``r`` removals and ``a`` additions (``r + a = k`` unbounded, ``r = a = k``
bounded; smaller ``k`` are covered by the running maximum in :func:`var_diagonal`'s caller):

- unbounded, ``z`` free: the increase ``F`` above with ``z`` a bound (fact 1, ``r + 1``
  windows); the decrease ``V(s) / (m + 1)`` (``z`` at the mean; the largest variance, fact 2);
- unbounded, ``z`` a data record: the increase with ``z`` the largest or smallest record (facts
  3 and 1 on the other records); the decrease ``(V - m (z - mu)**2 / (m + 1)) / (m + 1)`` for
  every ``z`` (fact 2 per ``z``, skipped in ``O(1)`` when the largest variance one step further
  cannot beat the best value so far);
- bounded, ``y_i`` added: ``(n-1)/n**2 D(mu)**2`` with ``D(mu) = max(upper - mu, mu - lower)``,
  largest at the extreme means of ``c``; ``y_i = w_j`` kept: ``(w_j - mu)**2`` (fact 3) and
  ``(z - mu)**2 - (w_j - mu)**2 = (z - w_j) (z + w_j - 2 mu)`` for ``z = upper`` (and mirrored),
  monotone in ``mu``, for every ``j``.

Work is in coordinates centred on the middle of the bounds (variance is shift-invariant).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

import numpy as np

from dpkit.sensitivity.lattice_data import LatticeData

#: ``f(rows, idx)``: a value or prefix sum of row ``rows[i]`` at position ``idx[i]``
Indexer = Callable[[np.ndarray, np.ndarray], np.ndarray]
#: ``f(S, Q)``: the objective from the sum and the sum of squares
Objective = Callable[[np.ndarray, np.ndarray], np.ndarray]

__all__ = ["VarData", "certified_error", "certified_errors", "var_diagonal", "var_envelope"]


class VarData:
    """Centred sorted data with prefix sums."""

    factor: float = 1.0

    def __init__(self, x: np.ndarray, lower: float, upper: float) -> None:
        c = (lower + upper) / 2
        self.w = x - c
        self.lo = lower - c
        self.hi = upper - c
        self.n = x.size
        self.p1 = np.concatenate(([0.0], np.cumsum(self.w)))
        self.p2 = np.concatenate(([0.0], np.cumsum(self.w * self.w)))

    @classmethod
    def from_lattice(cls, ld: LatticeData) -> VarData:
        """The centred lattice units of ``ld`` with prefix sums computed exactly, then rounded
        once to float64 (relative error ``u`` for ``p1``, ``2 u`` for ``p2``): the error model
        behind :func:`certified_error`."""
        d = cls.__new__(cls)
        # scaled by a power of two (exact) so that the bounds are at most 1 in magnitude: the
        # algorithms' relative tolerances (root finding, degree detection) assume values of
        # order one; ``unit / factor`` is the unit of the results
        top = max(abs(ld.lo), abs(ld.hi), 1)
        d.factor = math.ldexp(1.0, -math.ceil(math.log2(top)))
        w, lo, hi = ld.floats()
        d.w, d.lo, d.hi = w * d.factor, lo * d.factor, hi * d.factor
        d.n = ld.n
        d.p1 = ld.p1.astype(np.float64) * d.factor
        sq = ld.w * ld.w  # below 2**62: exact in int64
        high = np.concatenate(([0], np.cumsum(sq >> 30)))  # each cumsum below 2**63
        low = np.concatenate(([0], np.cumsum(sq & ((1 << 30) - 1))))
        d.p2 = (high.astype(np.float64) * 2.0**30 + low.astype(np.float64)) * d.factor**2
        return d


def certified_error(kind: str, k: int, d: VarData) -> Fraction:
    """A proven bound, in the units of ``d`` (squared for the variance), on how far the float
    value :func:`var_diagonal` / ``std_diagonal`` reports at distance ``k`` can fall below the
    exact ``A`` of the lattice data (or below any dataset shape they prune against a cut).

    With ``W' = max(|lo|, |hi|)`` and ``u = 2**-53``: window sums taken from prefix sums
    rounded once are off by at most ``3 u (n + k) W'`` (sums) and ``5 u (n + k) W'**2`` (sums
    of squares); every variance divides them by a dataset size ``m >= max(n - k - 1, 1)``,
    so ``(n + k) / m <= 3 (k + 1)``; each value is at most twenty further float operations on
    magnitudes at most ``4 W'**2``; the block bisection can stop at most ``r <= k`` steps from
    the best block, each costing at most ``W'`` times the error of its test, ``6 u (n + k) W'
    / m**2``; the vertex of a quadratic in the added value is off by a relative few ``u``
    (second order in the value). Together less than ``2**8 u W'**2 (k + 1)**2`` for the
    variance; ``2**10`` is used. The deviation's terms are differences of square roots of such
    variances, and ``|sqrt(a) - sqrt(b)| <= sqrt(|a - b|)``: twice the square root of the
    variance bound, plus ``2**8 u W' (k + 1)`` for the remaining float operations.

    Where records are added at a free value ``t``, the deviation's maximum over ``t`` comes
    from a certified branch-and-bound (:func:`dpkit.sensitivity._dc_max.dc_maximum`): in the
    real arithmetic of the float coefficients (which are within the bounds above of the exact
    ones, at every ``t``) the maximum is at most the reported value, or the cut it prunes
    against, plus ``tol + BOUND_ERROR W' = (2**-24 + 2**-23 + 2**-48) W'``; ``2**-22 W'`` is
    added. No root location is trusted, so multiple roots of the quartic of critical points
    (kinks of the deviation, where ``B`` has a double root) cost nothing extra.
    """
    u = Fraction(1, 2**53)
    wp = Fraction(max(abs(d.lo), abs(d.hi)))
    e_var = 2**10 * u * wp * wp * (k + 1) ** 2
    if kind == "var":
        return e_var
    root = Fraction(math.sqrt(float(e_var)) * (1 + 2.0**-40))  # >= sqrt(e_var)
    search = Fraction(1, 2**22) * wp  # >= (_dc_max.TOL + _dc_max.BOUND_ERROR) W'
    return 2 * root + 2**8 * u * wp * (k + 1) + search


def certified_errors(kind: str, ks: np.ndarray, d: VarData) -> np.ndarray:
    """Floats at least :func:`certified_error` ``(kind, k, d)`` for every ``k`` in ``ks``.

    Every term of the bound grows like ``(k + 1)**p`` (``p = 2`` for the variance, 1 for the
    deviation) or is constant, so ``e(k) <= e(0) (k + 1)**p`` up to the rounding of the square
    root (a few relative ``2**-53``); the float product is raised by ``2**-40`` to cover both.
    """
    p = 2 if kind == "var" else 1
    e0 = float(certified_error(kind, 0, d)) * (1 + 2.0**-40)
    return e0 * (ks.astype(np.float64) + 1) ** p * (1 + 2.0**-40)


def _var(m: np.ndarray | float, s: np.ndarray, q: np.ndarray) -> np.ndarray:
    mu = s / m
    return np.maximum(q / m - mu * mu, 0.0)


def _increase(
    m: int, sw: np.ndarray, qw: np.ndarray, a: int, z: np.ndarray | float, lo: float, hi: float
) -> float:
    """max over t of ``(m (z - mu)**2 / (m + 1) - V) / (m + 1)`` for kept sums ``(sw, qw)``.

    ``s`` = kept records plus ``a`` copies of ``t`` in ``[lo, hi]`` (fact 1).
    """
    zz = np.broadcast_to(np.asarray(z, dtype=np.float64), sw.shape)
    ts = [np.full(sw.shape, lo), np.full(sw.shape, hi)]
    if a > 0:
        kappa = (2 * m + 1) / (m * m * (m + 1))
        den = a * kappa - 1 / m
        if den != 0:
            ts.append(np.clip((zz / (m + 1) - sw * kappa) / den, lo, hi))
    best = -np.inf
    for t in ts if a > 0 else ts[:1]:
        s = sw + a * t
        q = qw + a * t * t
        f = m / (m + 1) * (zz - s / m) ** 2 - _var(m, s, q)
        best = max(best, float(np.max(f)) / (m + 1))
    return best


def _windows(
    p1: np.ndarray, p2: np.ndarray, size: int, count: int
) -> tuple[np.ndarray, np.ndarray]:
    """Sums and sums of squares of the ``count`` windows of ``size`` sorted records."""
    b = np.arange(count)
    return p1[b + size] - p1[b], p2[b + size] - p2[b]


def _block_best(
    pre1: Indexer,
    pre2: Indexer,
    val: Indexer,
    length: int,
    r: int,
    add_s: np.ndarray,
    add_q: np.ndarray,
    m: int,
    p: float,
    gamma: float,
    beta: np.ndarray,
    objective: Objective,
) -> np.ndarray:
    """Best removed block of ``r`` in each of several sorted arrays (fact 2), vectorised.

    Row ``i`` is a sorted array of ``length`` values given by callables on index arrays:
    ``val(rows, idx)``, ``pre1(rows, idx)``, ``pre2(rows, idx)`` (prefix sums). ``add_s``,
    ``add_q`` are the sums of the added records per row; ``objective(s, q)`` the value.
    """
    rows = np.arange(add_s.size)
    tot1 = pre1(rows, np.full(rows.size, length)) + add_s
    tot2 = pre2(rows, np.full(rows.size, length)) + add_q
    if r == 0:
        return objective(tot1, tot2)

    def sums(b: np.ndarray, rr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        s = tot1[rr] - (pre1(rr, b + r) - pre1(rr, b))
        q = tot2[rr] - (pre2(rr, b + r) - pre2(rr, b))
        return s, q

    lo_b = np.zeros(rows.size, dtype=np.int64)
    hi_b = np.full(rows.size, length - r, dtype=np.int64)
    while True:
        act = np.flatnonzero(lo_b < hi_b)
        if act.size == 0:
            break
        mid = (lo_b[act] + hi_b[act]) // 2
        s, _ = sums(mid, act)
        h = (
            val(act, mid) * (p - gamma)
            + val(act, mid + r) * (p + gamma)
            + beta[act]
            - 2 * gamma * s
        )
        up = h > 0
        hi_b[act[up]] = mid[up]
        lo_b[act[~up]] = mid[~up] + 1
    s, q = sums(lo_b, rows)
    return objective(s, q)


def _max_var(d: VarData, r: int, a: int) -> float:
    """Largest variance of ``x`` minus ``r`` records plus ``a`` records in the bounds."""
    m = d.n - r + a
    if m <= 0:
        return 0.0
    u = np.arange(a + 1)
    add_s = u * d.hi + (a - u) * d.lo
    add_q = u * d.hi**2 + (a - u) * d.lo**2
    out = _block_best(
        lambda rows, i: d.p1[i],
        lambda rows, i: d.p2[i],
        lambda rows, i: d.w[i],
        d.n,
        r,
        add_s,
        add_q,
        m,
        1 / m,
        1 / (m * m),
        np.zeros(u.size),
        lambda s, q: _var(m, s, q),
    )
    return float(np.max(out))


def _max_var_many(d: VarData, r: np.ndarray, a: np.ndarray) -> np.ndarray:
    """:func:`_max_var` for every pair ``(r[j], a[j])`` at once, float for float the same.

    One row per pair and number ``u`` of added records at ``upper``, each bisected for its
    best removed block as :func:`_block_best` does, with the row's own ``r``, ``m``, ``p =
    1 / m`` and ``gamma = 1 / m**2`` (the same float operations, element by element); rows of
    at most ``2**18`` at a time.
    """
    out = np.zeros(r.size)
    sizes = a + 1
    first = 0
    while first < r.size:  # pairs whose rows fit in one chunk (at least one pair)
        stop = first + max(1, int(np.searchsorted(np.cumsum(sizes[first:]), 2**18, "right")))
        out[first:stop] = _max_var_chunk(d, r[first:stop], a[first:stop])
        first = stop
    return out


def _max_var_chunk(d: VarData, r: np.ndarray, a: np.ndarray) -> np.ndarray:
    n = d.n
    m_pair = n - r + a
    counts = a + 1
    starts = np.cumsum(counts) - counts
    pair = np.repeat(np.arange(r.size), counts)
    u = np.arange(pair.size) - starts[pair]
    rr, aa, m = r[pair], a[pair], m_pair[pair]
    mm = np.maximum(m, 1)  # pairs with m <= 0 are 0 (as in _max_var); no division by 0
    p = 1 / mm
    gamma = 1 / (mm * mm)
    tot1 = d.p1[n] + (u * d.hi + (aa - u) * d.lo)
    tot2 = d.p2[n] + (u * d.hi**2 + (aa - u) * d.lo**2)
    lo_b = np.zeros(pair.size, dtype=np.int64)
    hi_b = np.where(rr > 0, n - rr, 0)  # r = 0: nothing removed, the totals as they are
    while True:
        act = np.flatnonzero(lo_b < hi_b)
        if act.size == 0:
            break
        mid = (lo_b[act] + hi_b[act]) // 2
        ra = rr[act]
        s = tot1[act] - (d.p1[mid + ra] - d.p1[mid])
        g = gamma[act]
        h = d.w[mid] * (p[act] - g) + d.w[mid + ra] * (p[act] + g) - 2 * g * s
        up = h > 0
        hi_b[act[up]] = mid[up]
        lo_b[act[~up]] = mid[~up] + 1
    s = tot1 - (d.p1[lo_b + rr] - d.p1[lo_b])
    q = tot2 - (d.p2[lo_b + rr] - d.p2[lo_b])
    var = np.where(m > 0, _var(mm, s, q), 0.0)
    return np.maximum.reduceat(var, starts)


def _unbounded_pair(d: VarData, r: int, a: int, cut: float) -> float:
    n, lo, hi = d.n, d.lo, d.hi
    big = n - r + a  # |y|
    best = 0.0
    kept = n - r
    # z free, s = y: increase (windows, z at a bound) and decrease (z at the mean)
    sw, qw = _windows(d.p1, d.p2, kept, r + 1)
    for z in (lo, hi):
        best = max(best, _increase(big, sw, qw, a, z, lo, hi))
    best = max(best, _max_var(d, r, a) / (big + 1))
    if r > n - 1 or big - 1 < 1:
        return best
    m = big - 1  # s = y - z for a data record z kept in y
    # increase: z the largest (smallest) record, windows of the others
    for zi, first in ((n - 1, 0), (0, 1)):
        # windows of kept - 1 records among the others (data without record zi)
        b = first + np.arange(r + 1)
        sw = d.p1[b + kept - 1] - d.p1[b]
        qw = d.p2[b + kept - 1] - d.p2[b]
        best = max(best, _increase(m, sw, qw, a, d.w[zi], lo, hi))
    # decrease: V(s) / (m + 1) - m (z - mu)**2 / (m + 1)**2, every z, best block per z
    if m >= 2 and _max_var(d, r + 1, a) / (m + 1) > max(best, cut):
        best = max(best, _decrease_data(d, r, a, m))
    return best


def _decrease_data(d: VarData, r: int, a: int, m: int) -> float:
    """``max V(s) - V(s + z)``: ``z`` a datum, ``s`` the rest minus ``r`` plus ``a`` records."""
    n = d.n
    p = 1 / (m * (m + 1))
    gamma = (2 * m + 1) / (m * m * (m + 1) ** 2)
    # equal records leave equal multisets behind: one z per distinct value
    js = np.flatnonzero(np.diff(d.w, prepend=np.nan) != 0)
    z = d.w[js]
    beta = 2 * z / (m + 1) ** 2

    def val(rows: np.ndarray, i: np.ndarray) -> np.ndarray:
        return d.w[i + (i >= js[rows])]

    def pre(arr: np.ndarray) -> Indexer:
        def f(rows: np.ndarray, i: np.ndarray) -> np.ndarray:
            j = js[rows]
            return np.where(i > j, arr[np.minimum(i + 1, n)] - (arr[j + 1] - arr[j]), arr[i])

        return f

    def objective(s: np.ndarray, q: np.ndarray) -> np.ndarray:
        mu = s / m
        return (q / m - mu * mu) / (m + 1) - m * (z - mu) ** 2 / (m + 1) ** 2

    best = -np.inf
    for u in range(a + 1):
        add_s = np.full(js.size, u * d.hi + (a - u) * d.lo)
        add_q = np.full(js.size, u * d.hi**2 + (a - u) * d.lo**2)
        out = _block_best(
            pre(d.p1), pre(d.p2), val, n - 1, r, add_s, add_q, m, p, gamma, beta, objective
        )
        best = max(best, float(np.max(out)))
    return best


def _bounded_pair(d: VarData, k: int) -> float:
    n, lo, hi, p1, w = d.n, d.lo, d.hi, d.p1, d.w
    if n < 2:
        return 0.0
    f = (n - 1) / n**2
    best = 0.0
    if k >= 1:
        # y_i added: c = x minus k records plus k - 1 records; z and y_i free
        mu_min = (p1[n - k] + (k - 1) * lo) / (n - 1)
        mu_max = (p1[n] - p1[k] + (k - 1) * hi) / (n - 1)
        best = max(best, f * max((hi - mu_min) ** 2, (mu_max - lo) ** 2))
    if k > n - 1:
        return best
    # y_i = w_j kept; c = x - w_j - k records + k records
    mu_lo_max = (p1[n - 1 - k] + k * lo) / (n - 1)  # j = n - 1, c's mean pushed down
    mu_hi_min = (p1[n] - p1[k + 1] + k * hi) / (n - 1)  # j = 0, pushed up
    best = max(best, f * (w[n - 1] - mu_lo_max) ** 2, f * (mu_hi_min - w[0]) ** 2)
    i = np.arange(n)
    # z = upper, mean of c as low as possible given j
    mu = np.where(
        i < n - k,
        (p1[n - k] - w + k * lo) / (n - 1),
        (p1[max(n - k - 1, 0)] + k * lo) / (n - 1),
    )
    best = max(best, f * float(np.max((hi - w) * (hi + w - 2 * mu))))
    # z = lower, mean of c as high as possible
    mu = np.where(
        i >= k,
        (p1[n] - p1[k] - w + k * hi) / (n - 1),
        (p1[n] - p1[min(k + 1, n)] + k * hi) / (n - 1),
    )
    best = max(best, f * float(np.max((w - lo) * (2 * mu - w - lo))))
    return best


def var_diagonal(d: VarData, relation: str, k: int, cut: float) -> float:
    """Largest ``LS_1(var, y)`` over ``y`` with ``r`` removals and ``a`` additions, ``r + a = k``.

    (Bounded: ``r = a = k``.) Values not above ``cut`` may be reported as any smaller number.
    """
    if relation == "bounded":
        if k > d.n:
            return 0.0
        return _bounded_pair(d, k)
    best = 0.0
    for r in range(0, min(k, d.n) + 1):
        a = k - r
        if d.n - r + a < 1:
            continue
        best = max(best, _unbounded_pair(d, r, a, max(cut, best)))
    return best


def var_envelope(d: VarData, relation: str, ks: np.ndarray) -> np.ndarray:
    """An upper bound ``B[k] >= A(var, x, k)``, non-decreasing in ``k``.

    Unbounded, every pair is ``(s, s + z)`` with ``s`` within ``k + 1`` of ``x``, ``m = |s| >=
    max(n - k - 1, 1)``, and ``|V(s + z) - V(s)| = |m (z - mu)**2 / (m + 1) - V| / (m + 1) <=
    D(mu)**2 / (m + 1)``, ``D(mu) = max(upper - mu, mu - lower)`` (``V <= D(mu)**2``); the
    mean ``mu`` of ``s`` lies between the extremes reached by removing the largest (smallest)
    records and adding ``lower`` (``upper``). Bounded: ``(n - 1) / n**2 D(mu_c)**2`` with
    ``c`` the ``n - 1`` records the pair shares. Computed for ``k < 4096``; beyond, and as a
    cap, ``D <= upper - lower``.
    """
    n = d.n
    width2 = (d.hi - d.lo) ** 2
    if relation == "bounded":
        crude = np.full(ks.size, (n - 1) / n**2 * width2 if n >= 2 else 0.0)
    else:
        crude = width2 / (np.maximum(n - ks - 1, 1).astype(np.float64) + 1)
    top = int(min(ks.size, 4096))
    tight = crude.copy()
    p1, lo, hi = d.p1, d.lo, d.hi
    for k in range(top):
        if relation == "bounded":
            if n < 2:
                continue
            # c: n - 1 records, r removed from x and r - 1 added, r = k + 1 (or k)
            r = np.arange(max(k, 1), min(k + 1, n) + 1)
            if r.size == 0:  # k > n: every dataset of size n is in the ball already
                tight[k] = tight[k - 1]
                continue
            size = np.full(r.size, n - 1)
        else:
            radius = k + 1
            r = np.arange(0, min(radius, n) + 1)
            size = n - r + (radius - r)
            r = r[size >= 1]
            size = size[size >= 1]
        a = size - (n - r)
        mu_lo = (p1[n - r] + a * lo) / size
        mu_hi = (p1[n] - p1[r] + a * hi) / size
        dev = max(float(np.max(hi - mu_lo)), float(np.max(mu_hi - lo)))
        dev2 = dev * dev * (1 + 1e-9)
        if relation == "bounded":
            tight[k] = (n - 1) / n**2 * dev2
        else:
            tight[k] = dev2 / (max(n - k - 1, 1) + 1)
    return np.maximum.accumulate(np.minimum(tight, crude))
