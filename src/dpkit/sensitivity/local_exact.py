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
from typing import Any

import numpy as np

from dpkit.errors import InternalError, ParameterError
from dpkit.queries import Query
from dpkit.sensitivity import _order, _var_distance
from dpkit.sensitivity._common import (
    check_distance,
    check_norm,
    check_relation,
    check_sensitivity,
    needs_bounds,
    query_of,
    sorted_data,
)

__all__ = ["local"]


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
    query : Query, str or callable
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
    q = query_of(owner, query)
    k = check_distance(owner, distance)
    rel = check_relation(owner, relation)
    if q.vector:
        return _local_vector(owner, q, data, k, rel, bounds, norm)
    lim = needs_bounds(owner, q, bounds)
    x = sorted_data(owner, data, lim, q)
    lower, upper = lim if lim is not None else (0.0, 0.0)
    return check_sensitivity(owner, local_sorted(q, x, k, rel, lower, upper))


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
    q: Query, x: np.ndarray, k: int, relation: str, lower: float, upper: float
) -> float:
    """``LS_k`` on already validated, sorted data (no checks)."""
    n = x.size
    kind = q.kind
    if kind == "count":
        return 0.0 if relation == "bounded" else float(k)
    if relation == "unbounded" and kind in ("mean", "percentile", "var", "std"):
        # every dataset of one or two records is within n + 2: the extremes of these
        # queries over all datasets ({lower}, {upper}; variance 0 and (upper - lower)**2 / 4
        # at {lower, upper}) are reachable, so LS_k is the same for every k >= n + 2
        k = min(k, n + 2)
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
    if kind in ("var", "std"):
        vmax, vmin = _var_extremes(x, r, a, lower, upper)
        v0 = float(np.var(x - (lower + upper) / 2))
        if kind == "var":
            return float(max(vmax - v0, v0 - vmin, 0.0))
        s0 = math.sqrt(v0)
        return float(max(math.sqrt(vmax) - s0, s0 - math.sqrt(vmin), 0.0))
    raise InternalError(f"local: no exact algorithm for query kind {kind!r}")


def _var_extremes(
    x: np.ndarray, r: np.ndarray, a: np.ndarray, lower: float, upper: float
) -> tuple[float, float]:
    """Largest and smallest population variance over the ball given by the ``(r, a)`` pairs.

    Largest: keep a prefix and a suffix of the sorted data (remove a contiguous block of
    ``r``) and add ``u`` records at ``upper`` and ``a - u`` at ``lower``; the variance is
    unimodal in the block's position, found by bisection
    (:func:`dpkit.sensitivity._var_distance._max_var`, fact 2 there). Smallest: keep a
    contiguous window of ``n - r`` records and add ``a`` copies of the window's mean.
    """
    d = _var_distance.VarData(x, lower, upper)
    n = x.size
    p1, p2 = d.p1, d.p2
    best_max = 0.0
    best_min = math.inf
    for ri, ai in zip(r.tolist(), a.tolist(), strict=True):
        m = n - ri + ai
        best_max = max(best_max, _var_distance._max_var(d, ri, ai))
        # smallest: keep window [b, b + s), add ai copies of its mean
        s = n - ri
        if s == 0:
            best_min = 0.0
            continue
        b = np.arange(0, ri + 1)
        w1 = p1[b + s] - p1[b]
        w2 = p2[b + s] - p2[b]
        vw = np.maximum(w2 / s - (w1 / s) ** 2, 0.0)
        best_min = min(best_min, float(np.min(vw)) * s / m)
    return max(best_max, 0.0), max(best_min, 0.0)


def _local_vector(
    owner: str,
    q: Query,
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
