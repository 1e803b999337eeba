"""Exact local sensitivity at Hamming distance k for the query catalogue.

``LS_k(f, x) = max |f(x) - f(x')|`` over every ``x'`` with ``1 <= dist(x, x') <= k``, where
added or replacing records may take any value in ``bounds = (lower, upper)``.

The algorithms sort the data once and then only look at shifted windows and prefix sums, so
they run in ``O(n log n)`` (sorting) plus ``O(k^2)`` for count, sum, mean, median and
percentiles, and ``O(k^3 log n)`` for var and std. :func:`dpkit.sensitivity.empirical_local` is the
brute-force oracle they are tested against.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from dpkit._validate import check_sensitivity
from dpkit.errors import InternalError, ParameterError
from dpkit.sensitivity import _order, _var_distance
from dpkit.sensitivity._checks import (
    check_distance,
    check_norm,
    check_relation,
    needs_bounds,
    query_of,
    sorted_data,
)
from dpkit.sensitivity.catalogue import Statistic

__all__ = ["local", "local_by_distance"]


def local(
    query: Any,
    data: Any,
    *,
    distance: int = 1,
    relation: str,
    bounds: tuple[float, float] | None = None,
    norm: str | None = None,
) -> float:
    """Exact local sensitivity ``LS_k(f, x)`` of a catalogue query.

    Parameters
    ----------
    query : Statistic, str or callable
        ``count``, ``sum``, ``mean``, ``median``, ``var``, ``std``, a :func:`percentile` or a
        :func:`histogram` (user callables have no exact algorithm: use
        :func:`empirical_local`).
    data : array_like
        The dataset: a non-empty 1-D array of finite numbers, all within ``bounds``.
    distance : int, default 1
        The radius ``k >= 1`` of the ball of neighbours.
    relation : {"bounded", "unbounded"}
        ``"unbounded"``: neighbours add or remove records (distance = size of the symmetric
        difference). ``"bounded"``: neighbours have the same size and replace records.
    bounds : (float, float)
        ``(lower, upper)``: every record, present or added, lies in this range. Required for
        every query except ``count`` and ``histogram``.
    norm : {"l1", "l2"}, optional
        Required for vector-valued queries (histograms), ignored otherwise.

    Returns
    -------
    float
        ``LS_k(f, x) = max |f(x) - f(x')|`` over ``1 <= dist(x, x') <= k`` (for vectors, the
        largest ``norm`` of the difference).

    Raises
    ------
    ParameterError
        Empty data, NaN or infinite values, data outside ``bounds``, inverted bounds,
        ``distance < 1``, an unknown query name or an unknown relation.
    TypeError
        Non-numeric data or a non-integer distance.

    Notes
    -----
    Datasets smaller than the query's ``min_size`` (the empty dataset for everything but
    ``count``, ``sum`` and histograms) are not neighbours: see :mod:`dpkit.queries`.

    With ``x`` sorted, a neighbour in the ball is ``x`` minus ``r`` records plus ``a`` records
    (``r + a <= k``; bounded: ``r = a <= k``). For the monotone queries the extremes over that
    set are reached by removing the ``r`` smallest and adding ``a`` copies of ``upper`` (for the
    largest value) or the mirror image: every order statistic of that neighbour dominates the
    one of any other choice. The mean and sum then follow from prefix sums and the median and
    percentiles from a shifted window of the data padded with the bounds, ``O(1)`` per
    ``(r, a)``. Variance is convex in each record, so the largest variance removes a contiguous
    block of the sorted data and adds records at the bounds (the block found by bisection,
    the variance being unimodal in its position); the smallest keeps a contiguous window and
    adds copies of its mean; prefix sums of ``x`` and ``x^2`` give each candidate in ``O(1)``.

    Complexity: ``O(n log n + k^2)`` time for count, sum, mean, median, percentiles;
    ``O(n log n + k^3 log n)`` for var and std; ``O(n)`` memory.

    References
    ----------
    K. Nissim, S. Raskhodnikova, A. Smith, "Smooth sensitivity and sampling in private data
    analysis", STOC 2007 (NRS07), definition of local sensitivity.

    Examples
    --------
    >>> from dpkit import sensitivity as sens
    >>> sens.local("median", [1, 2, 3, 10, 11], relation="bounded", bounds=(0, 20))
    7.0
    >>> sens.local("mean", [1, 2, 3], relation="unbounded", bounds=(0, 10), distance=2)
    3.2
    """
    owner = "local"
    return _local(owner, query, data, [distance], relation, bounds, norm)[0]


def local_by_distance(
    query: Any,
    data: Any,
    distances: Sequence[int],
    *,
    relation: str,
    bounds: tuple[float, float] | None = None,
    norm: str | None = None,
) -> list[float]:
    """:func:`local` at several distances, sharing the work between them.

    Parameters
    ----------
    query : Statistic, str or callable
        As for :func:`local`.
    data : array_like
        As for :func:`local`.
    distances : sequence of int
        The radii ``k >= 1``, in any order.
    relation : {"bounded", "unbounded"}
        As for :func:`local`.
    bounds : (float, float)
        As for :func:`local`.
    norm : {"l1", "l2"}, optional
        As for :func:`local`.

    Returns
    -------
    list of float
        ``LS_k(f, x)`` for each ``k`` of ``distances``, in their order: the values
        :func:`local` returns, float for float.

    Raises
    ------
    ParameterError
        As :func:`local`, for the data or any distance.
    TypeError
        As :func:`local`.

    Notes
    -----
    The ball of radius ``k`` is the union of the shapes ``(r, a)`` with ``r + a <= k``
    (bounded: ``r = a <= k``), so ``LS_k`` is a running maximum over the shapes in order of
    ``r + a``. The variance and the deviation, whose shapes cost a bisection each, compute
    every shape once for the largest distance: ``O(n log n + K^3 log n)`` in all for ``K =
    max(distances)`` instead of that for each distance. The other queries cost ``O(k)`` or
    ``O(k^2)`` per distance and are computed one distance at a time.

    Examples
    --------
    >>> from dpkit import sensitivity as sens
    >>> sens.local_by_distance("mean", [1, 2, 3], [1, 2], relation="unbounded", bounds=(0, 10))
    [2.0, 3.2]
    """
    owner = "local_by_distance"
    return _local(owner, query, data, distances, relation, bounds, norm)


def _local(
    owner: str,
    query: Any,
    data: Any,
    distances: Sequence[int],
    relation: str,
    bounds: Any,
    norm: str | None,
) -> list[float]:
    q = query_of(owner, query)
    ks = [check_distance(owner, k) for k in distances]
    rel = check_relation(owner, relation)
    if q.vector:
        return [_local_vector(owner, q, data, k, rel, bounds, norm) for k in ks]
    lim = needs_bounds(owner, q, bounds)
    x = sorted_data(owner, data, lim, q)
    lower, upper = lim if lim is not None else (0.0, 0.0)
    return [check_sensitivity(owner, v) for v in local_sorted_many(q, x, ks, rel, lower, upper)]


def _pairs(
    n: int, k: int, relation: str, min_size: int, *, monotone: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """The ``(r, a)`` with ``r + a <= k`` (bounded: ``r = a``) whose size is in scope.

    ``monotone``: only the smallest and the largest ``a`` in scope for each ``r``. For sum,
    mean and percentiles the value of "remove the ``r`` smallest, add ``a`` at ``upper``" is
    non-decreasing in ``a`` (adding a record at the top bound never lowers any of them), and
    its mirror image non-increasing, so the extremes over ``a`` sit at those two ends:
    ``O(min(k, n))`` pairs instead of ``O(k**2)`` (a distance of 10**6 costs nothing).
    """
    r = np.arange(0, min(k, n) + 1, dtype=np.int64)
    if relation == "bounded":
        return r, r.copy()
    if monotone:
        a_lo = np.maximum(min_size - (n - r), 0)
        a_hi = k - r
        ok = a_lo <= a_hi
        return np.concatenate((r[ok], r[ok])), np.concatenate((a_lo[ok], a_hi[ok]))
    rr, aa = np.meshgrid(r, np.arange(k + 1), indexing="ij")
    r, a = rr.ravel().astype(np.int64), aa.ravel().astype(np.int64)
    keep = (r + a <= k) & (n - r + a >= min_size)
    return r[keep], a[keep]


def local_sorted(
    q: Statistic, x: np.ndarray, k: int, relation: str, lower: float, upper: float
) -> float:
    """``LS_k`` on already validated, sorted data (no checks)."""
    return local_sorted_many(q, x, [k], relation, lower, upper)[0]


def local_sorted_many(
    q: Statistic, x: np.ndarray, ks: Sequence[int], relation: str, lower: float, upper: float
) -> list[float]:
    """``LS_k`` for every ``k`` of ``ks`` on already validated, sorted data (no checks)."""
    if q.kind in ("var", "std"):
        return _moment_by_distance(q, x, ks, relation, lower, upper)
    return [_local_one(q, x, k, relation, lower, upper) for k in ks]


def _local_one(
    q: Statistic, x: np.ndarray, k: int, relation: str, lower: float, upper: float
) -> float:
    n = x.size
    kind = q.kind
    if kind == "count":
        return 0.0 if relation == "bounded" else float(k)
    if kind in ("mean", "percentile"):
        k = _reach(k, n, relation)
    r, a = _pairs(n, k, relation, q.min_size, monotone=kind in ("sum", "mean", "percentile"))
    if kind in ("sum", "mean"):
        pre = np.concatenate(([0.0], np.cumsum(x)))
        low = pre[r]  # sum of the r smallest
        high = pre[n] - pre[n - r]  # sum of the r largest
        up = a * upper - low
        down = high - a * lower
        if kind == "mean":
            m = (n - r + a).astype(np.float64)
            total = pre[n]
            base = total / n
            up = (total - low + a * upper) / m - base
            down = base - (total - high + a * lower) / m
        return float(max(np.max(up), np.max(down), 0.0))
    if kind == "percentile":
        assert q.q is not None
        m = n - r + a
        h_m = q.q * (m - 1).astype(np.float64)
        fx = _order.interp(x, lower, upper, np.zeros(1, np.int64), np.asarray([q.q * (n - 1)]))[0]
        hi = _order.interp(x, lower, upper, r, h_m)
        lo = _order.interp(x, lower, upper, -a, h_m)
        return float(max(np.max(hi - fx), np.max(fx - lo), 0.0))
    raise InternalError(f"local: no exact algorithm for query kind {kind!r}")


def _reach(k: int, n: int, relation: str) -> int:
    """The distance that gives ``LS_k`` of the unbounded mean, percentiles, var and std.

    Every dataset of one or two records is within ``n + 2``: the extremes of these queries
    over all datasets (``{lower}``, ``{upper}``; variance 0 and ``(upper - lower)**2 / 4`` at
    ``{lower, upper}``) are reachable, so ``LS_k`` is the same for every ``k >= n + 2``.
    """
    return min(k, n + 2) if relation == "unbounded" else k


def _moment_by_distance(
    q: Statistic, x: np.ndarray, ks: Sequence[int], relation: str, lower: float, upper: float
) -> list[float]:
    """``LS_k`` of the variance or the deviation for every ``k`` of ``ks``.

    The ball of radius ``k`` holds the shapes ``(r, a)`` (``r`` removed, ``a`` added) with
    ``r + a <= k`` (bounded: ``r = a <= k``). Every shape of the largest ball is scored once
    (:func:`_var_extremes`); the largest and smallest variance within distance ``k`` are then
    running extremes over the shapes taken in order of ``r + a`` (``r`` bounded): the same
    floats as scoring each ball on its own.
    """
    if not ks:
        return []
    big = max(abs(lower), abs(upper))
    if big > _RESCALE_ABOVE:
        # squares of such values overflow float64: compute on the data and bounds times
        # 2**-e (exact, as every power of two is; values below 2**-1074 of the bounds vanish)
        # and scale the answer back, to infinity where it is not a float (refused upstream)
        e = math.frexp(big)[1]
        scaled = _moment_by_distance(
            q, np.ldexp(x, -e), ks, relation, math.ldexp(lower, -e), math.ldexp(upper, -e)
        )
        power = 2 * e if q.kind == "var" else e
        return [_ldexp_or_inf(v, power) for v in scaled]
    n = x.size
    reach = [_reach(k, n, relation) for k in ks]
    r, a = _pairs(n, max(reach), relation, q.min_size)
    vmax, vmin = _var_extremes(x, r, a, lower, upper)
    total = r + a if relation == "unbounded" else r
    size = int(total.max()) + 1
    top = np.full(size, -np.inf)
    np.maximum.at(top, total, vmax)
    bottom = np.full(size, np.inf)
    np.minimum.at(bottom, total, vmin)
    top, bottom = np.maximum.accumulate(top), np.minimum.accumulate(bottom)
    v0 = float(np.var(x - (lower + upper) / 2))
    s0 = math.sqrt(v0)
    out = []
    for k in reach:
        i = min(k, size - 1)  # bounded: r <= n, so the ball stops growing at k = n
        big, small = max(float(top[i]), 0.0), max(float(bottom[i]), 0.0)
        if q.kind == "var":
            out.append(float(max(big - v0, v0 - small, 0.0)))
        else:
            out.append(float(max(math.sqrt(big) - s0, s0 - math.sqrt(small), 0.0)))
    return out


#: Largest bound magnitude at which var and std are computed as they are: the squares of
#: larger values, and their sums over many records, overflow float64 (near 1e154).
_RESCALE_ABOVE = 2.0**400


def _ldexp_or_inf(value: float, exp: int) -> float:
    """``value * 2**exp``, or infinity where that is beyond the float range."""
    try:
        return math.ldexp(value, exp)
    except OverflowError:
        return math.inf


def _var_extremes(
    x: np.ndarray, r: np.ndarray, a: np.ndarray, lower: float, upper: float
) -> tuple[np.ndarray, np.ndarray]:
    """Largest and smallest population variance of each shape ``(r[j], a[j])``.

    Largest: keep a prefix and a suffix of the sorted data (remove a contiguous block of
    ``r``) and add ``u`` records at ``upper`` and ``a - u`` at ``lower``; the variance is
    unimodal in the block's position, found by bisection
    (:func:`dpkit.sensitivity._var_distance._max_var`, fact 2 there, for every shape at once).
    Smallest: keep a contiguous window of ``n - r`` records and add ``a`` copies of the
    window's mean; the best window depends on ``r`` only.
    """
    d = _var_distance.VarData(x, lower, upper)
    n = x.size
    p1, p2 = d.p1, d.p2
    vmax = _var_distance._max_var_many(d, r, a)
    window = {}  # r -> the smallest variance of a window of n - r records
    for ri in np.unique(r).tolist():
        s = n - ri
        if s == 0:
            continue
        b = np.arange(0, ri + 1)
        w1 = p1[b + s] - p1[b]
        w2 = p2[b + s] - p2[b]
        window[ri] = float(np.min(np.maximum(w2 / s - (w1 / s) ** 2, 0.0)))
    vmin = np.array(
        [
            0.0 if ri == n else window[ri] * (n - ri) / (n - ri + ai)
            for ri, ai in zip(r.tolist(), a.tolist(), strict=True)
        ]
    )
    return vmax, vmin


def _local_vector(
    owner: str,
    q: Statistic,
    data: Any,
    k: int,
    relation: str,
    bounds: Any,
    norm: str | None,
) -> float:
    if q.kind != "histogram":
        raise ParameterError(
            f"{owner}: {q.name!r} is a user function, for which no exact algorithm exists; "
            "use empirical_local (brute force over a universe)"
        )
    if norm is None:
        raise ParameterError(
            f"{owner}: `norm` ('l1' or 'l2') is required for the vector query {q.name!r}"
        )
    nrm = check_norm(owner, norm)
    assert q.bins is not None
    edges = np.asarray(q.bins)
    x = sorted_data(owner, data, (float(edges[0]), float(edges[-1])), q)
    counts = np.asarray(q.func(x), dtype=np.int64)
    return histogram_local(counts, x.size, k, relation, nrm)


def histogram_local(counts: np.ndarray, n: int, k: int, relation: str, norm: str) -> float:
    """``LS_k`` of a histogram with the given counts (records lie inside the bins)."""
    if relation == "unbounded":
        # k records added to (or removed from) one bin: change k in one coordinate.
        # Removals are limited by the records present; additions are not.
        return float(k)
    nbins = counts.size
    if nbins < 2:
        return 0.0
    j = min(k, n)
    best = 0.0
    for target in range(nbins):
        # every effective move takes a record out of another bin and puts it in `target`
        others = np.sort(np.delete(counts, target))[::-1]
        moves = min(j, int(others.sum()))
        if moves == 0:
            continue
        if norm == "l1":
            best = max(best, 2.0 * moves)
            continue
        taken = np.minimum(
            others, np.maximum(moves - np.concatenate(([0], np.cumsum(others)[:-1])), 0)
        )
        best = max(best, math.sqrt(moves * moves + float(np.sum(taken.astype(np.float64) ** 2))))
    return best
