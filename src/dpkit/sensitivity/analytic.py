"""Global sensitivity in closed form for the query catalogue."""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import Any

import numpy as np

from dpkit._validate import check_bounds, check_sensitivity
from dpkit.errors import ParameterError
from dpkit.sensitivity._checks import check_distance, check_norm, check_relation, query_of
from dpkit.sensitivity.catalogue import Statistic

__all__ = ["global_sensitivity"]

#: A position in the sorted data: a float, or an exact fraction past :data:`_EXACT_FLOAT_INT`.
Real = float | Fraction
#: Largest dataset size whose positions ``q (n - 1)`` are computed in float64 (its integers
#: are exact up to ``2**53``); larger sizes use exact fractions.
_EXACT_FLOAT_INT = 2**53


def global_sensitivity(
    query: Any,
    *,
    bounds: tuple[float, float] | None = None,
    relation: str,
    n: int | None = None,
    distance: int = 1,
    norm: str | None = None,
) -> float:
    """Global sensitivity of a catalogue query, analytically.

    Parameters
    ----------
    query : Statistic or str
        ``count``, ``sum``, ``mean``, ``median``, ``var``, ``std``, a percentile or a
        histogram.
    bounds : (float, float)
        ``(lower, upper)``: every record lies in this range. Required except for ``count`` and
        histograms.
    relation : {"bounded", "unbounded"}
        Neighbour relation.
    n : int, optional
        Dataset size. Required for the bounded mean, median, percentiles, var and std (their
        sensitivity depends on it); for the unbounded relation it restricts the datasets to
        size ``n`` (their neighbours have other sizes); ``None`` means every size ``>= 1``.
    distance : int, default 1
        Hamming radius ``k``: the result is ``max_x LS_k(f, x)``.
    norm : {"l1", "l2"}, optional
        Required for histograms.

    Returns
    -------
    float
        ``max LS_k(f, x)`` over every dataset ``x`` in scope (values within ``bounds``; size
        ``n`` when given).

    Raises
    ------
    ParameterError
        Infinite sensitivity (``sum``, ``mean``, ``var`` or ``std`` without bounds), no closed
        form (user functions: the message names :func:`empirical_global`), a missing ``n``,
        inverted bounds, ``distance < 1``, an unknown query or relation.
    TypeError
        Non-integer ``n`` or ``distance``.

    Notes
    -----
    With ``k`` the distance, ``w = upper - lower`` and ``j = min(k, n)``:

    ==========  ===============================  ======================================
    query       unbounded                        bounded
    ==========  ===============================  ======================================
    count       ``k``                            0
    sum         ``k max(|lower|, |upper|)``      ``j w``
    mean        see below                        ``j w / n``
    percentile  see below                        ``w max_c |[c, c+1] ∩ [h, h + j]|``
    histogram   L1 ``k``, L2 ``k``               L1 ``2j``, L2 ``sqrt(2) j``
    var         see below                        ``w**2 i (n - i) / n**2``
    std         see below                        ``w sqrt(i (n - i)) / n``
    ==========  ===============================  ======================================

    (``i = min(k, floor(n / 2))``.)

    *Mean, unbounded.* ``mean(x') - mean(x)`` is linear in every record, so its extremes sit at
    datasets whose records are all at the bounds; the function maximises over ``c`` records at
    ``upper`` (only the two ends of its range can win, by linearity in ``c``) and over the
    counts of removed and added records at each bound (``O(k)`` of those can win: see
    :func:`_mean_unbounded`). With ``n=None`` the sizes
    ``1 .. 2k + 1`` suffice: ``LS_k <= k w / (n - k)`` for ``n > k``, which is at most the
    ``k w / (k + 1)`` reached at ``n = 1`` once ``n >= 2k + 1``.

    *Percentiles* (``h = q (n - 1)``). ``LS_k`` is the largest change of the interpolant of
    the data padded with the bounds over an interval in positions (see :func:`local`); the
    gaps between consecutive padded order statistics add up to ``w``, so the worst data put all
    of ``w`` into one unit cell, and the answer is ``w`` times the largest overlap of a cell
    with one of the intervals. Unbounded, ``r`` removals and ``a`` additions give intervals of
    length ``r (1 - q) + a q`` (up) and ``r q + a (1 - q)`` (down); with ``n=None`` the
    supremum over sizes is ``w max min(length, 1)`` (reached for sizes where ``h`` is an
    integer). The median with ``k = 1`` gives ``w`` bounded for odd ``n`` and ``w / 2``
    unbounded.

    *Variance and deviation* (population, ``ddof=0``). Bounded: after ``j`` replacements
    ``var(x') - var(x)`` is at most the variance of ``n - j`` copies of a point and ``j`` free
    records, largest with ``i`` records at one bound and the rest at the other; ``x`` all at
    one bound reaches it from 0. Unbounded with ``n``: an exact maximisation over the
    extreme datasets (:func:`_var_change` proves which they are: every record at a bound but
    the removed ones, which sit at the mean of those kept), ``O(k^2)`` candidates.
    Unbounded with ``n=None``: ``w**2 / 4`` and ``w / 2`` (a single record, then one at the
    other bound; no variance on ``[lower, upper]`` exceeds ``w**2 / 4``). The deviation is
    the square root of the variance's figure: ``|sd' - sd| <= sqrt(|var' - var|)``, with
    equality where the smaller variance is 0, which the worst pairs have (checked each call
    for the unbounded case). Both are rounded up to the next float, never down.

    Time ``O(k^2)`` for percentiles (``O(1)`` memory for any ``n``; exact fractions past
    ``n = 2**53``), ``O(k)`` for the unbounded mean (``O(k^2)`` with ``n=None``), ``O(k^2)``
    for the unbounded var and std with ``n``, ``O(1)`` otherwise.

    Examples
    --------
    >>> from dpkit import sensitivity as sens
    >>> sens.global_sensitivity("median", bounds=(0, 100), relation="bounded", n=1001)
    100.0
    >>> sens.global_sensitivity("median", bounds=(0, 100), relation="unbounded")
    50.0
    >>> sens.global_sensitivity("mean", bounds=(0, 100), relation="bounded", n=1000)
    0.1
    >>> sens.global_sensitivity("count", relation="unbounded", distance=3)
    3.0
    >>> sens.global_sensitivity("std", bounds=(0, 10), relation="bounded", n=100)
    0.99498743710662
    """
    owner = "global_sensitivity"
    return check_sensitivity(owner, _global(owner, query, bounds, relation, n, distance, norm))


def _work_guard(owner: str, steps: float, k: int, n: int | None) -> None:
    """Refuse, before starting, an exact maximisation that would take too long."""
    if steps > _MAX_STEPS:
        size = "" if n is None else f" and `n`={n}"
        raise ParameterError(
            f"{owner}: the exact computation for `distance`={k}{size} would take about "
            f"{steps:.2g} steps (more than {_MAX_STEPS:.0e}); use a smaller distance, or "
            "empirical_global on a small universe"
        )


#: Largest number of elementary steps an exact maximisation may take (a few seconds).
_MAX_STEPS = 2e7


def _global(
    owner: str, query: Any, bounds: Any, relation: Any, n: Any, distance: Any, norm: Any
) -> float:
    q = query_of(owner, query)
    rel = check_relation(owner, relation)
    k = check_distance(owner, distance)
    size = None if n is None else check_distance(owner, n, name="n")
    kind = q.kind
    if kind == "custom":
        raise ParameterError(
            f"{owner}: no closed form for the global sensitivity of a user function; compute "
            "it by brute force with empirical_global(query, universe, size, relation=...)"
        )
    if kind == "count":
        return 0.0 if rel == "bounded" else float(k)
    if kind == "histogram":
        return _histogram(owner, q, rel, k, size, norm)
    if bounds is None and kind in ("sum", "mean", "var", "std"):
        raise ParameterError(
            f"{owner}: the sensitivity of {q.name!r} is infinite without bounds (one record "
            "can be arbitrarily large); pass `bounds`=(lower, upper) chosen without looking "
            "at the data"
        )
    lower, upper = check_bounds(owner, bounds)
    w = upper - lower
    if kind == "sum":
        if rel == "unbounded":
            return k * max(abs(lower), abs(upper))
        return min(k, size if size is not None else k) * w
    if rel == "bounded" and size is None:
        raise ParameterError(
            f"{owner}: the bounded sensitivity of {q.name!r} depends on the dataset size; pass `n`"
        )
    if kind in ("var", "std"):
        if rel == "unbounded" and size is not None:
            # from distance n + 2 on, {lower, upper} (largest variance) is reachable from n
            # records at one bound (variance 0): the maximum 1/4 of the scaled variance
            k = min(k, size + 2)
            _work_guard(owner, (_table_size(k) + 1) ** 2 * 14.0, k, size)  # 28 per (r, a)
        return _moment(owner, kind, Fraction(upper) - Fraction(lower), rel, k, size)
    if kind == "mean":
        if rel == "bounded":
            assert size is not None
            return min(k, size) * w / size
        # a mean moves by at most w, and by exactly w from n records at one bound to a single
        # record at the other: distance n + 1 (or 2 from one record, when n is free)
        if k >= (size + 1 if size is not None else 2):
            return w
        sizes = [size] if size is not None else list(range(1, 2 * k + 2))
        _work_guard(owner, len(sizes) * (k + 1.0), k, size)
        return w * max(_mean_unbounded(s, k) for s in sizes)
    assert q.q is not None
    if rel == "unbounded":
        _work_guard(owner, float(min(k, size if size is not None else 2) + 1) * (k + 1), k, size)
    return w * _percentile_overlap(q.q, rel, k, size)


def _moment(owner: str, kind: str, w: Fraction, rel: str, k: int, n: int | None) -> float:
    """Global sensitivity of ``var`` or ``std``, exact (see :func:`_var_change`), rounded up."""
    if n is None:  # every size: V lies in [0, 1/4] and n = 1 reaches 1/4 (x = {0}, add 1)
        big, zero = Fraction(1, 4), Fraction(1, 4)
    elif rel == "bounded":
        q = min(k, n // 2)
        big = zero = Fraction(q * (n - q), n * n)
    else:
        big, zero = _var_change(n, k)
    if kind == "var":
        return _float_up(big * w * w)
    if big != zero:  # pragma: no cover - never seen (checked for n < 60, k <= 8)
        raise ParameterError(
            f"{owner}: the deviation's global sensitivity for n={n}, distance={k} is only "
            f"known to lie in [{math.sqrt(zero) * float(w):.6g}, "
            f"{math.sqrt(big) * float(w):.6g}]; use empirical_global for the exact value"
        )
    return _sqrt_up(big * w * w)


def _var_change(n: int, k: int) -> tuple[Fraction, Fraction]:
    """Largest ``|var(x') - var(x)|`` on [0, 1], ``|x| = n``, unbounded distance ``<= k``.

    Returns ``(M, Z)``: ``M`` the exact maximum, ``Z`` the maximum over the pairs whose
    smaller variance is 0 (``Z <= M``; ``Z = M`` makes ``sqrt(M)`` the deviation's exact
    global sensitivity, as ``|sd' - sd| <= sqrt(|var' - var|)`` with equality when one is 0).

    Proof of ``M`` (``x = C + R``, ``x' = C + A``, ``c = n - r``, ``m = c + a``). Say
    ``var(x') >= var(x)``. (a) ``var(C + R) >= (c / n) var(C)``, with equality when every
    removed record sits at ``mean(C)`` (the within/between split of the sum of squares).
    (b) ``var`` is a convex quadratic in each record, so the added records sit at 0 or 1.
    (c) For ``F = var(C + A) - (c / n) var(C)``, the coefficient of a shared record's square
    is ``(1 - 1/m)/m - (1 - 1/c)/n >= (1 - 1/m)(1/m - 1/n)``: convex when ``m < n``, so the
    shared records sit at 0 or 1; when ``m >= n``, ``F`` depends on ``C`` through its mean
    and variance, linearly in ``var(C)`` with slope ``c/m - c/n <= 0``, so ``var(C) = 0``, and
    then ``F`` is convex in ``mean(C)``: again 0 or 1. With ``u`` of the ``c`` shared and
    ``p`` of the ``a`` added records at 1, ``F = V(u + p, m) - u (c - u) / (n c)`` with
    ``V(q, t) = q (t - q) / t**2``; the case ``var(x) > var(x')`` swaps the roles
    (``m <-> n``, ``a <-> r``).

    Search. With ``T, S, E`` = ``m, n, a`` (or ``n, m, r``) and ``s = u + p``, ``F =
    s (T - s) / T**2 - u (c - u) / (S c)`` over the integers ``0 <= u <= c``, ``0 <= p <=
    E``. For fixed ``u``, ``F`` is a concave parabola in ``p`` with its top at ``p = T/2 - u``:
    the best ``p`` is the floor or the ceiling of that, clamped to ``[0, E]``. Call the result
    ``G(u)``. Where the top lies inside ``(0, E)`` (``T/2 - E < u < T/2``), ``s`` is
    ``floor(T/2)`` or ``ceil(T/2)``, so ``G(u) = floor(T/2) ceil(T/2) / T**2 - u (c - u) /
    (S c)``, convex: the ends of that range win. Below it ``p = E``, above it ``p = 0``, and
    ``G`` is a quadratic in ``u``: the ends of its range or the integers next to its
    stationary point ``u* = c (T**2 - (T - 2p) S) / (2 (T**2 - S c))`` win. So fourteen
    ``u`` per ``(r, a)``, each with two ``p``, hold the maximum (and, with ``u`` 0 or ``c``,
    ``Z``): ``O(k**2)`` candidates (:func:`_var_change_table`), whose maxima for each
    ``r + a`` are kept, so that every distance up to a power of two shares one table.
    """
    table = _var_change_table(n, _table_size(k))
    best = max((b for b, _ in table[: k + 1]), default=Fraction(0))
    zero = max((z for _, z in table[: k + 1]), default=Fraction(0))
    return best, zero


def _table_size(k: int) -> int:
    """The distance up to which :func:`_var_change_table` is built for ``k``: a power of two."""
    return 1 << max(k - 1, 0).bit_length()


@functools.lru_cache(maxsize=8)
def _var_change_table(n: int, k: int) -> tuple[tuple[Fraction, Fraction], ...]:
    """``(M_t, Z_t)`` of :func:`_var_change`'s search for ``t = 0..k``: the exact maxima over
    the ``(r, a)`` with ``r + a = t`` (a pure function of ``n`` and ``k``: cached, so that a
    table of distances computes it once)."""
    r = np.arange(min(k, n) + 1, dtype=np.int64)
    rs = np.repeat(r, k - r + 1)
    as_ = np.concatenate([np.arange(k - ri + 1, dtype=np.int64) for ri in r.tolist()])
    m = n - rs + as_
    keep = (m >= 1) & (rs + as_ >= 1)
    rs, as_, m = rs[keep], as_[keep], m[keep]
    # the two cases: var(x') >= var(x) (T = m, S = n, E = a), var(x) > var(x') (T = n, ...)
    big_t = np.concatenate((m, np.full(m.size, n, dtype=np.int64)))
    small_s = np.concatenate((np.full(m.size, n, dtype=np.int64), m))
    extra = np.concatenate((as_, rs))
    c = n - np.concatenate((rs, rs))
    total = np.concatenate((rs + as_, rs + as_))
    best = [Fraction(0)] * (k + 1)
    zero = [Fraction(0)] * (k + 1)
    step = 2**14  # rows per chunk: bounded memory
    for start in range(0, big_t.size, step):
        sl = slice(start, start + step)
        _var_candidates(big_t[sl], small_s[sl], extra[sl], c[sl], total[sl], best, zero)
    return tuple(zip(best, zero, strict=True))


def _var_candidates(
    t: np.ndarray,
    s: np.ndarray,
    e: np.ndarray,
    c: np.ndarray,
    total: np.ndarray,
    best: list[Fraction],
    zero: list[Fraction],
) -> None:
    """Raise ``best[r + a]`` and ``zero[r + a]`` to the exact maxima of
    :func:`_var_change`'s search over the rows ``(T, S, E, c)`` (int64 arrays)."""
    low = (t - 2 * e) // 2  # the largest u with T/2 - u >= E (there p = E)
    high = (t + 1) // 2  # the smallest u with T/2 - u <= 0 (there p = 0)
    us = [np.zeros_like(c), c, low, low + 1, high - 1, high]
    tt = t.astype(np.float64) ** 2
    den = 2 * (tt - s.astype(np.float64) * c)
    for p in (e, np.zeros_like(e)):  # the stationary point of G where p is clamped
        with np.errstate(divide="ignore", invalid="ignore"):
            star = c * (tt - (t - 2 * p) * s.astype(np.float64)) / den
        star = np.where(np.isfinite(star), np.clip(star, -1.0, c + 1.0), 0.0)
        base = np.floor(star).astype(np.int64)
        us += [base - 1, base, base + 1, base + 2]
    u = np.clip(np.stack(us, axis=1), 0, c[:, None])
    # the best p for each u: the floor and the ceiling of T/2 - u, clamped to [0, E]
    pf = np.clip((t[:, None] - 2 * u) // 2, 0, e[:, None])
    pc = np.clip((t[:, None] - 2 * u + 1) // 2, 0, e[:, None])
    u = np.concatenate((u, u), axis=1).ravel()
    p = np.concatenate((pf, pc), axis=1).ravel()
    width = 2 * len(us)
    tr, sr, cr, tot = (np.repeat(v, width) for v in (t, s, c, total))
    q = u + p
    num1, den1 = q * (tr - q), tr * tr
    num2, den2 = u * (cr - u), np.where(cr > 0, sr * cr, 1)
    val = num1 / den1.astype(np.float64) - num2 / den2.astype(np.float64)
    ends = (u == 0) | (u == cr)
    for out, score in ((best, val), (zero, np.where(ends, val, -1.0))):
        # each score is within 2**-51 of its value (all terms at most 1/4): only those within
        # 2**-45 of the best score of their r + a can be its maximum
        top = np.full(len(out), -np.inf)
        np.maximum.at(top, tot, score)
        near = np.flatnonzero(score >= top[tot] - 2.0**-45)
        rows = np.unique(np.stack([v[near] for v in (tot, num1, den1, num2, den2)]), axis=1)
        for i, a1, b1, a2, b2 in rows.T.tolist():
            out[i] = max(out[i], Fraction(a1, b1) - Fraction(a2, b2))


def _float_up(x: Fraction) -> float:
    """The smallest float ``>= x`` (a sensitivity must never be rounded down); infinity
    beyond the floats (refused by the caller's :func:`check_sensitivity`, naming bounds)."""
    try:
        f = float(x)
    except OverflowError:
        return math.inf
    return math.nextafter(f, math.inf) if Fraction(f) < x else f


def _sqrt_up(x: Fraction) -> float:
    """The smallest float ``>= sqrt(x)`` (infinity beyond the floats, like :func:`_float_up`)."""
    try:
        f = math.sqrt(float(x))
    except OverflowError:  # x above the floats, its root maybe not: isqrt(ceil x) + 1 is an
        # upper bound of the root, and of the smallest float above it by at most one float
        return _float_up(Fraction(math.isqrt(math.ceil(x)) + 1))
    while Fraction(f) ** 2 < x:
        f = math.nextafter(f, math.inf)
    while f > 0 and Fraction(math.nextafter(f, 0.0)) ** 2 >= x:
        f = math.nextafter(f, 0.0)
    return f


def _mean_unbounded(n: int, k: int) -> float:
    """Largest ``|mean(x') - mean(x)|`` for ``lower = 0, upper = 1``, ``|x| = n``, distance k.

    ``x`` has ``c`` records at 1; ``x'`` removes ``ru`` of them and ``rl`` at 0 and adds
    ``au`` at 1 and ``al`` at 0 (``r = ru + rl``, ``a = au + al``, ``r + a <= k``, ``r <= n``,
    ``m = n - r + a >= 1``). The change ``(c - ru + au) / m - c / n`` is linear in ``c`` in
    ``[ru, n - rl]``, so an end wins: ``au / m - ru / n`` or ``(n - r + au) / m - (n - rl) /
    n``. In each, every term is largest (or smallest) at ``au = a`` or ``0`` and ``ru = 0`` or
    ``r``, so for each ``(r, a)`` the largest ``|change|`` is one of ``a / m``, ``r / n``,
    ``1 - (n - r) / n`` and ``1 - (n - r) / m``, and rounding (division and subtraction are
    monotone in each argument) keeps that order between the floats computed. Those four only
    grow with ``a`` (or do not depend on it), and ``(r, k - r)`` is in scope when any
    ``(r, a)`` is, so ``a = k - r`` suffices: ``O(k)``, the same float as every split tried.
    """
    r = np.arange(min(k, n) + 1, dtype=np.int64)
    a = k - r
    m = n - r + a
    keep = (m >= 1) & (r + a >= 1)
    r, a, m = r[keep], a[keep], m[keep]
    if r.size == 0:
        return 0.0
    rest = (n - r).astype(np.float64)
    change = np.concatenate((a / m, r / n, 1.0 - rest / n, 1.0 - rest / m))
    return float(max(0.0, float(change.max())))


def _overlap(start: Real, end: Real, cells: range | None) -> float:
    """Largest overlap of ``[start, end]`` with a unit cell ``[c, c + 1]``, ``c`` in ``cells``.

    In O(1): the overlap ``min(end, c + 1) - max(start, c)`` is concave in ``c`` (a minimum
    of increasing functions less a maximum of increasing functions) and flat between
    ``start`` and ``end - 1`` (or between ``end - 1`` and ``start``), so over the integers of
    ``cells`` it peaks at a floor or ceiling of those two ends, clamped to ``cells``.
    ``start`` and ``end`` may be exact fractions (their arithmetic then stays exact).
    """
    if end <= start:
        return 0.0
    if cells is None:
        return float(min(end - start, 1))
    if cells.stop <= cells.start:  # (len() of a range past 2**63 overflows)
        return 0.0
    first, last = cells.start, cells.stop - 1
    ends = (start, end - 1)
    candidates = {min(max(f(e), first), last) for e in ends for f in (math.floor, math.ceil)}
    best = max(min(end, c + 1) - max(start, c) for c in candidates)
    return float(max(best, 0))


def _percentile_overlap(q: float, relation: str, k: int, n: int | None) -> float:
    if n is None:
        # supremum over sizes: an interval of length l overlaps one cell by min(l, 1), reached
        # when q (n - 1) is an integer (n = 1 + multiples of q's denominator)
        assert relation == "unbounded"
        # the lengths grow with r + a and max(q, 1 - q) >= 1/2, so k >= 2 already gives 1
        best = 0.0
        for r in range(min(k, 2) + 1):
            for a in range(min(k, 2) + 1 - r):
                if r + a == 0:
                    continue
                best = max(best, min(r * (1 - q) + a * q, 1.0), min(r * q + a * (1 - q), 1.0))
        return best
    cells = range(-1, n)
    # positions past 2**53 are not exact in float64: there, exact fractions (O(1) either way)
    qq: Real = q if n <= _EXACT_FLOAT_INT else Fraction(q)
    h = qq * (n - 1)
    if relation == "bounded":
        j = min(k, n)
        return max(_overlap(h, h + j, cells), _overlap(h - j, h, cells))
    best = 0.0
    for r in range(min(k, n) + 1):
        for a in range(k + 1 - r):
            m = n - r + a
            if m < 1 or r + a == 0:
                continue
            hm = qq * (m - 1)
            best = max(best, _overlap(h, r + hm, cells), _overlap(hm - a, h, cells))
            if best >= 1.0:  # a whole cell: no interval can overlap one by more
                return best
    return best


def _histogram(owner: str, q: Statistic, relation: str, k: int, n: int | None, norm: Any) -> float:
    if norm is None:
        raise ParameterError(
            f"{owner}: `norm` ('l1' or 'l2') is required for the vector query {q.name!r}"
        )
    nrm = check_norm(owner, norm)
    if relation == "unbounded":
        return float(k)
    assert q.bins is not None
    if len(q.bins) < 3:
        return 0.0
    j = min(k, n) if n is not None else k
    return 2.0 * j if nrm == "l1" else math.sqrt(2.0) * j
