"""``A(std, x, k)`` certified: the largest ``LS_1`` of the population standard deviation.

The pairs ``(y, y')`` are those of :mod:`dpkit.sensitivity._var_distance` (a smaller dataset
``s`` and a record ``z``; bounded: a common part ``c`` of ``n - 1`` records, the replaced
record ``y_i`` and its replacement ``z``), and the value of a pair is now
``|sqrt(V(y')) - sqrt(V(y))|``. With ``m = |s|``, ``v = V(s)``, ``d = z - mean(s)``::

    V(s + z) = m / (m + 1) * (v + d**2 / (m + 1))

so adding a record far from the mean raises the deviation more the smaller ``v`` is, and
adding one at the mean lowers it by ``(1 - sqrt(m / (m + 1))) sqrt(v)``.

Which datasets can attain the maximum (``S``, ``Q``: the sum and sum of squares of the kept
records; all terms are functions of them for fixed sizes and fixed ``z``):

1. **Increases** (``F = sqrt(V(s + z)) - lam sqrt(V(s))`` with ``z`` a bound or an extreme
   record; bounded: ``sqrt(V(c + z)) - sqrt(V(c + y_i))`` or ``- lam sqrt(V(c))``). ``F`` is
   non-increasing in ``Q`` where it is positive, and its sublevel sets ``{F <= g}``,
   ``g >= 0``, are convex: ``F <= g`` reads ``V(s + z) - lam**2 V(s) - 2 g lam sqrt(V(s)) <=
   g**2``, where ``V(s + z) - lam**2 V(s)`` is a convex quadratic in ``S`` minus a
   non-negative multiple of ``Q`` and ``sqrt(V)`` is concave (the bounded ``c + y_i`` form is
   linear in ``S`` after the ``Q`` terms cancel). A function with convex non-negative
   sublevel sets attains a positive maximum over a finite set at an extreme point of its
   convex hull, and, being non-increasing in ``Q``, at a vertex of the lower hull. Those
   maximise ``sum(alpha w + beta w**2)`` with ``beta <= 0`` over the kept records (a concave
   function: its largest values form a window of the sorted data) and over the added records
   (all equal to one ``t``). So: windows of the sorted data, ``t`` free in the bounds; the
   maximum over ``t`` of ``sqrt(A) - lam sqrt(B)`` (``A``, ``B`` the two variances as
   quadratics in ``t``) is certified by :func:`dpkit.sensitivity._dc_max.dc_maximum`, seeded
   with the real parts of the roots of the quartic ``A'^2 B - lam^2 B'^2 A`` (zero at every
   smooth interior critical point; kinks, where ``B`` has a double root, and multiple roots
   need the search). All windows' rows, for both values of ``z``, go to one search with one
   incumbent, which prunes against the best value so far. The record ``z`` (or ``y_i``)
   removed far from the mean is the largest or smallest one (exchanging it with the largest
   moves it away from the mean of the rest and lowers their variance).
2. **Decreases with ``z`` at the mean** (``(1 - sqrt(m/(m+1))) sqrt(V(s))``): the largest
   variance, as for the variance.
3. **Decreases with ``z`` a data record** (``G = sqrt(V(s)) - sqrt(V(s + z))``, ``m = |s| >=
   2``). Replace one record of ``s`` by ``t``; with ``s'`` the other ``m - 1`` records (mean
   ``mu'``, variance ``v'``), ``u = t - mu'``, ``w = z - mu'``::

       G(u) = sqrt(a) |(u, sqrt(P))| - sqrt(b) |(u - w/m, sqrt(R))|
       a = (m-1)/m**2,  b = m/(m+1)**2,  P = m v',  R = (1 - 1/m**2) (w**2 + P)

   ``a > b``. If ``P = 0`` the first term is ``sqrt(a) |u|`` and ``G`` falls for ``u < 0`` and
   rises for ``u > 0``. Otherwise at a critical point ``sqrt(a) s1 = sqrt(b) s2`` with
   ``s1 = u / |.|``, ``s2 = (u - w/m) / |.|``, so ``s2**2 >= s1**2``, and ``G'' = sqrt(a) P /
   d1**3 - sqrt(b) R / d2**3`` is positive: it has the sign of ``sqrt(a R) (1 - s1**2)**1.5 -
   sqrt(b P) (1 - s2**2)**1.5``, and ``a R > b P`` for ``m >= 3`` (``(m-1)**2 (m+1)**3 >
   m**5``; ``m = 2`` has ``P = 0``). Every critical point is a strict minimum, so ``G`` has no
   interior maximum in ``t``: a kept record between two removed ones can be swapped with
   one of them without loss (the removed records form a block) and an added record is best
   at a bound. Every block position is scanned, one ``z`` per distinct value; the term is
   skipped in ``O(1)`` when ``(1 - sqrt(m/(m+1)))`` times the square root of the largest
   variance one step further cannot beat the best value so far (``z`` at the mean), which is
   the common case.
"""

from __future__ import annotations

import math

import numpy as np

from dpkit.sensitivity import _dc_max
from dpkit.sensitivity._var_distance import VarData, _max_var, _var

__all__ = ["std_diagonal", "std_envelope"]


def _quad(
    count: np.ndarray | float, s0: np.ndarray, q0: np.ndarray, a: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Coefficients of ``V(t)``: ``count`` fixed records (sums ``s0``, ``q0``) and ``a`` x ``t``."""
    nn = count + a
    c2 = np.broadcast_to(a / nn - a * a / nn**2, s0.shape)
    c1 = -2 * a * s0 / nn**2
    c0 = q0 / nn - s0**2 / nn**2
    return np.asarray(c2, dtype=np.float64), c1, c0


def _root_seeds(coefs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Real parts of every root of each row's polynomial (highest degree first).

    Only starting points for :func:`dpkit.sensitivity._dc_max.dc_maximum` (which certifies
    the maximum whatever they are): every eigenvalue's real part is kept, so a root that
    rounding pushed off the real axis (a double or triple root) still seeds the search.
    Returns ``(rows, points)``.
    """
    rows_out: list[np.ndarray] = []
    pts_out: list[np.ndarray] = []
    scale = np.max(np.abs(coefs), axis=1)
    scale[scale == 0] = 1.0
    c = coefs / scale[:, None]
    # effective degree: drop negligible leading coefficients
    lead = np.argmax(np.abs(c) > 1e-13, axis=1)
    lead[np.all(np.abs(c) <= 1e-13, axis=1)] = c.shape[1] - 1
    for start in np.unique(lead):
        idx = np.flatnonzero(lead == start)
        deg = c.shape[1] - 1 - start
        if deg <= 0:
            continue
        p = c[idx, start:]
        comp = np.zeros((idx.size, deg, deg))
        comp[:, 0, :] = -p[:, 1:] / p[:, :1]
        if deg > 1:
            comp[:, np.arange(1, deg), np.arange(deg - 1)] = 1.0
        eig = np.linalg.eigvals(comp)
        rows_out.append(np.repeat(idx, deg))
        pts_out.append(eig.real.ravel())
    if not rows_out:
        return np.zeros(0, np.int64), np.zeros(0)
    pts = np.concatenate(pts_out)
    rows = np.concatenate(rows_out)
    finite = np.isfinite(pts)
    return rows[finite], pts[finite]


def _best_t(
    a_poly: tuple[np.ndarray, np.ndarray, np.ndarray],
    b_poly: tuple[np.ndarray, np.ndarray, np.ndarray],
    lam: float,
    lo: float,
    hi: float,
    free: bool,
    floor: float = -np.inf,
) -> float:
    """``max_t sqrt(A(t)) - lam sqrt(B(t))`` over every row, ``t`` in ``[lo, hi]``.

    Certified (:mod:`dpkit.sensitivity._dc_max`): the true maximum, in real arithmetic with
    these coefficients, is at most ``max(result, floor) + (TOL + BOUND_ERROR) W'``. The
    quartic ``A'^2 B - lam^2 B'^2 A``, zero at every interior critical point, only seeds the
    search.
    """
    a2, a1, a0 = a_poly
    b2, b1, b0 = b_poly
    if not free:  # A and B do not depend on t
        rows = np.arange(a0.size)
        return float(np.max(_dc_max._value(a_poly, b_poly, lam, rows, np.full(a0.shape, lo))))
    da = np.stack([2 * a2, a1], axis=1)
    db = np.stack([2 * b2, b1], axis=1)
    pa = np.stack([a2, a1, a0], axis=1)
    pb = np.stack([b2, b1, b0], axis=1)
    quartic = _mul(_mul(da, da), pb) - lam * lam * _mul(_mul(db, db), pa)
    seed_rows, seeds = _root_seeds(quartic)
    best, _ = _dc_max.dc_maximum(
        a_poly, b_poly, lam, lo, hi, seed_rows=seed_rows, seeds=seeds, floor=floor
    )
    return best


def _mul(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Row-wise polynomial product (coefficients highest degree first)."""
    out = np.zeros((p.shape[0], p.shape[1] + q.shape[1] - 1))
    for i in range(p.shape[1]):
        for j in range(q.shape[1]):
            out[:, i + j] += p[:, i] * q[:, j]
    return out


Polys = tuple[np.ndarray, np.ndarray, np.ndarray]


def _increase(count: int, sw: np.ndarray, qw: np.ndarray, a: int, z: float) -> tuple[Polys, Polys]:
    """``V(W + t*a + z)`` and ``V(W + t*a)`` as quadratics in ``t``, one row per window ``W``."""
    return _quad(count + 1, sw + z, qw + z * z, a), _quad(count, sw, qw, a)


def _best_increase(
    parts: list[tuple[Polys, Polys]], lam: float, free: bool, d: VarData, floor: float
) -> float:
    """``max sqrt(A) - lam sqrt(B)`` over the rows of every part and ``t`` (one search)."""
    pa = tuple(
        np.concatenate([np.asarray(p[0][i], dtype=np.float64) for p in parts]) for i in range(3)
    )
    pb = tuple(
        np.concatenate([np.asarray(p[1][i], dtype=np.float64) for p in parts]) for i in range(3)
    )
    return _best_t(pa, pb, lam, d.lo, d.hi, free, floor)  # type: ignore[arg-type]


def _windows_without(d: VarData, skip: int, size: int, count: int) -> tuple[np.ndarray, ...]:
    """Window sums of ``size`` records of the data without the first (0) or last (n-1) record."""
    first = 1 if skip == 0 else 0
    b = first + np.arange(count)
    return d.p1[b + size] - d.p1[b], d.p2[b + size] - d.p2[b]


def _unbounded(d: VarData, r: int, a: int, cut: float) -> float:
    n = d.n
    big = n - r + a
    kept = n - r
    best = max(0.0, (1 - math.sqrt(big / (big + 1))) * math.sqrt(_max_var(d, r, a)))
    b = np.arange(r + 1)
    sw, qw = d.p1[b + kept] - d.p1[b], d.p2[b + kept] - d.p2[b]
    parts = [_increase(kept, sw, qw, a, z) for z in (d.lo, d.hi)]
    datum = not (r > n - 1 or big - 1 < 1)
    if datum:
        for zi in (n - 1, 0):
            sw, qw = _windows_without(d, zi, kept - 1, r + 1)
            parts.append(_increase(kept - 1, sw, qw, a, float(d.w[zi])))
    best = max(best, _best_increase(parts, 1.0, a > 0, d, max(best, cut)))
    if not datum:
        return best
    m = big - 1
    shrink = 1 - math.sqrt(m / (m + 1))
    if m >= 2 and shrink * math.sqrt(_max_var(d, r + 1, a)) > max(best, cut):
        best = max(best, _decrease_data(d, r, a, m))
    return best


def _decrease_data(d: VarData, r: int, a: int, m: int) -> float:
    """``max sqrt(V(s)) - sqrt(V(s + z))``: ``z`` a datum, ``s`` the rest minus a block, plus."""
    n = d.n
    js = np.flatnonzero(np.diff(d.w, prepend=np.nan) != 0)
    vmax = _max_var(d, r + 1, a)
    shrink = 1 - math.sqrt(m / (m + 1))
    best = -np.inf
    for j in js.tolist():
        z = float(d.w[j])
        # the removed block of r among the n - 1 others, by position
        pos = np.arange(n - r)
        # prefix sums of the data without record j
        p1 = np.concatenate((d.p1[: j + 1], d.p1[j + 2 :] - z))
        p2 = np.concatenate((d.p2[: j + 1], d.p2[j + 2 :] - z * z))
        s_k = p1[n - 1] - (p1[pos + r] - p1[pos])
        q_k = p2[n - 1] - (p2[pos + r] - p2[pos])
        for u in range(a + 1):
            s = s_k + u * d.hi + (a - u) * d.lo
            q = q_k + u * d.hi**2 + (a - u) * d.lo**2
            mu = s / m
            v = _var(m, s, q)
            g = np.sqrt(v) - np.sqrt(m / (m + 1) * (v + (z - mu) ** 2 / (m + 1)))
            best = max(best, float(np.max(g)))
        if best >= shrink * math.sqrt(vmax):  # no z can do better than z at the mean
            break
    return best


def _bounded(d: VarData, k: int, cut: float) -> float:
    n = d.n
    if n < 2:
        return 0.0
    lam = math.sqrt((n - 1) / n)
    best = 0.0
    parts = []
    if k >= 1:
        kept = n - k
        b = np.arange(k + 1)
        sw, qw = d.p1[b + kept] - d.p1[b], d.p2[b + kept] - d.p2[b]
        parts += [_increase(kept, sw, qw, k - 1, z) for z in (d.lo, d.hi)]
    if k <= n - 1:
        kept = n - 1 - k
        for zi in (n - 1, 0):
            sw, qw = _windows_without(d, zi, kept, k + 1)
            parts.append(_increase(kept, sw, qw, k, float(d.w[zi])))
    if parts:
        best = max(best, _best_increase(parts, lam, k > 0, d, cut))
    if k > n - 1:
        return best
    best = max(best, _replace_datum(d, k, max(best, cut)))
    return best


def _replace_datum(d: VarData, k: int, floor: float) -> float:
    """``max sqrt(V(c + z)) - sqrt(V(c + w_j))``: a datum ``w_j`` replaced by a bound ``z``."""
    n = d.n
    kept = n - 1 - k
    js = np.flatnonzero(np.diff(d.w, prepend=np.nan) != 0)
    # Upper bound per j: the value decreases in V(c) and in the mean of c (for z = upper);
    # V(c) >= (n-1-k)/(n-1) * (smallest variance of n-1-k data records), the mean of c is at
    # least that of the k + 1 largest records removed (or w_j among them) plus k lowers.
    if kept > 0:
        b = np.arange(k + 2)
        v_win = _var(kept, d.p1[b + kept] - d.p1[b], d.p2[b + kept] - d.p2[b])
        v_lb = float(np.min(v_win)) * kept / (n - 1)
    else:
        v_lb = 0.0
    best = -np.inf
    w = d.w[js]
    for z, sign in ((d.hi, 1.0), (d.lo, -1.0)):
        # extreme mean of c towards the far side from z
        if sign > 0:
            mu = np.where(
                js < n - k,
                (d.p1[n - k] - w + k * d.lo) / (n - 1),
                (d.p1[max(n - k - 1, 0)] + k * d.lo) / (n - 1),
            )
        else:
            mu = np.where(
                js >= k,
                (d.p1[n] - d.p1[k] - w + k * d.hi) / (n - 1),
                (d.p1[n] - d.p1[min(k + 1, n)] + k * d.hi) / (n - 1),
            )
        ub = math.sqrt((n - 1) / n) * (
            np.sqrt(v_lb + (z - mu) ** 2 / n) - np.sqrt(v_lb + (w - mu) ** 2 / n)
        )
        for j in js[ub > max(floor, best)].tolist():
            wj = float(d.w[j])
            sw, qw = _windows_of_rest(d, j, kept, k + 1)
            pa = _quad(kept + 1, sw + z, qw + z * z, k)
            pb = _quad(kept + 1, sw + wj, qw + wj * wj, k)
            best = max(best, _best_t(pa, pb, 1.0, d.lo, d.hi, k > 0, max(floor, best)))
    return best


def _windows_of_rest(d: VarData, j: int, size: int, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Window sums of ``size`` records of the data without record ``j``."""
    b = np.arange(count)
    end = b + size
    z = d.w[j]
    p1e = np.where(end > j, d.p1[np.minimum(end + 1, d.n)] - z, d.p1[end])
    p2e = np.where(end > j, d.p2[np.minimum(end + 1, d.n)] - z * z, d.p2[end])
    p1b = np.where(b > j, d.p1[np.minimum(b + 1, d.n)] - z, d.p1[b])
    p2b = np.where(b > j, d.p2[np.minimum(b + 1, d.n)] - z * z, d.p2[b])
    return p1e - p1b, p2e - p2b


def std_diagonal(d: VarData, relation: str, k: int, cut: float) -> float:
    """Largest ``LS_1(std, y)`` over ``y`` with ``r`` removals and ``a = k - r`` additions.

    (Bounded: ``r = a = k``.) Values not above ``cut`` may be reported as any smaller number;
    the searches over ``t`` leave at most ``2**-22 W'`` above the value or the cut
    (:func:`dpkit.sensitivity._var_distance.certified_error` counts it).
    """
    if relation == "bounded":
        if k > d.n:
            return 0.0
        return _bounded(d, k, cut)
    best = 0.0
    for r in range(0, min(k, d.n) + 1):
        a = k - r
        if d.n - r + a < 1:
            continue
        best = max(best, _unbounded(d, r, a, max(cut, best)))
    return best


def std_envelope(d: VarData, relation: str, ks: np.ndarray) -> np.ndarray:
    """An upper bound ``B[k] >= A(std, x, k)``, non-decreasing in ``k``.

    Every pair has ``y`` within ``k`` and ``y'`` within ``k + 1`` of ``x``, so both
    variances are at least ``vmin(k + 1)``, the smallest variance in that ball, and
    ``|sqrt(V') - sqrt(V)| = |V' - V| / (sqrt(V') + sqrt(V)) <= min(sqrt(E), E / (2
    sqrt(vmin)))`` with ``E`` the variance's envelope. The smallest variance keeps a window
    of ``n - r`` sorted records and adds records at its mean, ``V = (n - r) / |y| * V(window)``;
    it is computed for ``k`` up to 4096 (beyond, ``vmin`` is taken as 0).
    """
    from dpkit.sensitivity._var_distance import var_envelope

    n = d.n
    width = d.hi - d.lo
    env = var_envelope(d, relation, ks)
    out = np.sqrt(env)
    top = int(min(ks.size, 4096))
    # W[r]: the smallest variance of n - r consecutive sorted records, r = 0..top
    rmax = min(top + 1, n - 1)
    win = np.full(top + 2, 0.0)
    for r in range(rmax + 1):
        size = n - r
        b = np.arange(r + 1)
        win[r] = float(np.min(_var(size, d.p1[b + size] - d.p1[b], d.p2[b + size] - d.p2[b])))
    # guard the float rounding of the prefix sums: never overstate the smallest variance
    win = np.maximum(win * (1 - 1e-9) - 1e-12 * width * width, 0.0)
    vmin = np.zeros(top)
    for k in range(top):
        radius = k + 1
        rs = np.arange(0, min(radius, n - 1) + 1)
        sizes = np.full(rs.size, n) if relation == "bounded" else n - rs + (radius - rs)
        vmin[k] = float(np.min((n - rs) / sizes * win[rs]))
        if relation == "unbounded" and radius >= n + 1:
            vmin[k] = 0.0
    safe = np.where(vmin > 0, vmin, 1.0)
    tight = np.where(vmin > 0, env[:top] / (2 * np.sqrt(safe)), np.inf)
    out[:top] = np.minimum(out[:top], tight)
    return np.maximum.accumulate(out)
