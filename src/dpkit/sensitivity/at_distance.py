"""Local sensitivity at distance k, ``A(f, x, k)``, and the sequence behind smooth sensitivity.

``A(f, x, k) = max LS_1(f, y)`` over every ``y`` with ``dist(x, y) <= k`` (``y = x`` included),
where ``LS_1`` is the local sensitivity at distance 1 (Nissim, Raskhodnikova and Smith 2007,
definition 3.1). Propose-test-release and smooth sensitivity (:mod:`dpkit.frameworks`) are
built on it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from dpkit.errors import InternalError, ParameterError
from dpkit.queries import Query
from dpkit.sensitivity import _order, _std_distance, _var_distance
from dpkit.sensitivity._common import (
    check_distance,
    check_relation,
    check_sensitivity,
    needs_bounds,
    query_of,
    sorted_data,
)

__all__ = ["local_at_distance"]

SUPPORTED = ("count", "sum", "mean", "percentile", "var", "std")


def local_at_distance(
    query: Any,
    data: Any,
    k: int,
    *,
    relation: str,
    bounds: tuple[float, float] | None = None,
) -> float:
    """``A(f, x, k)``: the largest local sensitivity of any dataset within distance ``k`` of ``x``.

    Parameters
    ----------
    query : Query or str
        ``count``, ``sum``, ``mean``, ``median``, ``var``, ``std`` or a
        :func:`~dpkit.queries.percentile`.
    data : array_like
        The dataset ``x``: non-empty, finite, within ``bounds``.
    k : int
        Distance ``k >= 0`` (``A(f, x, 0) = LS_1(f, x)``).
    relation : {"bounded", "unbounded"}
        Neighbour relation (see :mod:`dpkit.sensitivity`).
    bounds : (float, float)
        ``(lower, upper)``; required except for ``count``.

    Returns
    -------
    float
        ``A(f, x, k) = max { LS_1(f, y) : dist(x, y) <= k }``; non-decreasing in ``k``.

    Raises
    ------
    ParameterError
        Empty data, NaN, data outside bounds, inverted bounds, ``k < 0``, an unknown query,
        or a query without an exact algorithm here (user callables: use
        :func:`empirical_at_distance`).
    TypeError
        Non-numeric data, a non-integer ``k``.

    Notes
    -----
    Closed forms, all exact (checked against :func:`empirical_at_distance`):

    - ``count``: 1 unbounded, 0 bounded.
    - ``sum``: ``max(|lower|, |upper|)`` unbounded (one record added at the bound of largest
      magnitude); bounded ``max(upper - x_min, x_max - lower)`` at ``k = 0`` and
      ``upper - lower`` for ``k >= 1``.
    - ``mean``, bounded: ``max(upper - x_min, x_max - lower) / n`` at ``k = 0``, then
      ``(upper - lower) / n``. Unbounded: ``LS_1(y)`` is the largest of adding ``upper``
      (``(upper - mean(y)) / (m + 1)``), adding ``lower``, or removing the record farthest from
      the mean (``|y_i - mean(y)| / (m - 1)``, ``m = |y| >= 2``). Each term is convex in every
      record, so its maximum over the ball keeps a prefix and a suffix of the sorted data and
      adds records at the bounds; only three such shapes can win per term, giving ``O(1)``
      work per ``(r, a)`` (``r`` removals, ``a`` additions).
    - median and percentiles: with ``h = q (m - 1)``, every term of ``LS_1(y)`` is the integral
      of the piecewise-linear interpolant of the sorted ``y`` (padded with the bounds) over an
      interval of length at most 1 next to ``h``, that is ``w0 (y[t+1] - y[t]) + w1 (y[t+2] -
      y[t+1])`` with ``w0, w1 >= 0``. It is largest when the ``r`` removed records form one
      block between ``y[t]`` and ``y[t+2]`` and the added records sit at the bounds, ``p`` of
      them at ``lower`` shifting ``y[t]`` to data index ``t - p``. For the odd-size median this
      is NRS07's ``max_{0 <= t <= k+1} (x[m+t] - x[m+t-k-1])``.
    - ``var``: every pair ``(y, y')`` is a smaller dataset ``s`` and one record ``z``; the
      change of the variance is a function of the sum and sum of squares of ``s``, and three
      exchange arguments (proved in :mod:`dpkit.sensitivity._var_distance`) show that the
      maximisers keep a window of the sorted data (the increases: adding a bound, or removing
      the largest or smallest record) or remove a block from it (the decreases), with added
      records at the bounds or all equal to one value found in closed form; the best block
      is found by bisection, its objective being unimodal in the block's position.
    - ``std``: the same pairs, valued ``|sqrt(V(y')) - sqrt(V(y))|``
      (:mod:`dpkit.sensitivity._std_distance`): the increases keep windows (their sublevel
      sets are convex) with added records all equal to a bound or a real root of a quartic;
      the decreases keep the largest variance or remove a block (one record removed next to a
      datum: every block position is scanned, one datum per distinct value, after an ``O(1)``
      test that usually skips it).

    Time ``O(n log n + k^3)`` for percentiles, ``O(n log n + k^2)`` for the mean; for ``var``
    ``O(n log n + k^3 log n)`` unbounded (plus ``O(n k log n)`` for the decrease by removing a
    data record, which is skipped in ``O(1)`` unless it can beat the other terms) and
    ``O(n log n + n k)`` bounded; ``std`` likewise, with the datum-removal term ``O(n)`` per
    distinct value and block when it cannot be skipped.

    References
    ----------
    K. Nissim, S. Raskhodnikova, A. Smith, "Smooth sensitivity and sampling in private data
    analysis", STOC 2007, section 3.1.

    Examples
    --------
    >>> from dpkit import sensitivity as sens
    >>> x = [1, 2, 3, 10, 11]
    >>> [sens.local_at_distance("median", x, k, relation="bounded", bounds=(0, 20))
    ...  for k in range(4)]
    [7.0, 8.0, 17.0, 18.0]
    """
    owner = "local_at_distance"
    q = query_of(owner, query)
    kk = check_distance(owner, k, name="k", minimum=0)
    rel = check_relation(owner, relation)
    x, lower, upper = prepare(owner, q, data, bounds)
    kk = min(kk, stable_distance(q, x.size, rel))  # A is constant from there on
    out = 0.0
    for kv, a in enumerate(sequence(q, x, rel, lower, upper)):
        out = a
        if kv >= kk:
            break
    return check_sensitivity(owner, out)


def stable_distance(q: Query, n: int, relation: str) -> int:
    """A distance ``K`` with ``A(f, x, k) = A(f, x, K)`` for every ``k >= K`` (``|x| = n``).

    ``A(f, x, k)`` is non-decreasing in ``k`` and at most ``G``, the largest ``LS_1`` of any
    dataset in scope, so it is constant as soon as it reaches ``G``:

    - count and sum, and the bounded mean: ``A`` is the same for every ``k >= 1``.
    - bounded (replace) relation: every dataset of size ``n`` is within distance ``n``, so
      ``A(f, x, k)`` is the same maximum over all of them for ``k >= n``.
    - unbounded mean, percentiles, var and std: ``G`` is attained by a dataset of one record
      (``{lower}`` or ``{upper}``), which is within distance ``n + 1`` of ``x`` (remove the
      ``n`` records, add one). Mean: adding a record moves the mean by ``|z - mean| /
      (m + 1) <= w / 2`` and removing one by ``|y_i - mean| / (m - 1) <= w / m <= w / 2``
      (``w = upper - lower``), and ``{lower}`` plus ``upper`` moves it by ``w / 2``.
      Percentiles: every term of ``LS_1`` is at most ``w`` times the length of its interval
      of positions, ``q`` or ``1 - q`` (:func:`local_at_distance`), and adding ``upper`` to
      ``{lower}`` (or ``lower`` to ``{upper}``) moves the percentile by ``q w`` (or
      ``(1 - q) w``). Variance and deviation lie in ``[0, w**2 / 4]`` and ``[0, w / 2]``,
      and adding ``upper`` to ``{lower}`` moves them by exactly that.

    So the scans over ``k`` behind :func:`local_at_distance`, the smooth sensitivity and
    propose-test-release's distance never need to go past ``K``: their cost is bounded by
    the data size, not by ``k`` or by ``1 / beta``.
    """
    if q.kind in ("count", "sum") or (q.kind == "mean" and relation == "bounded"):
        return 1
    return n if relation == "bounded" else n + 1


def prepare(owner: str, q: Query, data: Any, bounds: Any) -> tuple[np.ndarray, float, float]:
    """Validate for the A / smooth functions; returns sorted data and bounds."""
    if q.kind not in SUPPORTED:
        hint = (
            "use empirical_at_distance (brute force over a universe)"
            if q.kind in ("custom", "histogram")
            else ""
        )
        raise ParameterError(
            f"{owner}: no exact algorithm for {q.name!r}; supported queries are count, sum, "
            f"mean, median, percentiles, var and std; {hint}"
        )
    lim = needs_bounds(owner, q, bounds)
    x = sorted_data(owner, data, lim, q)
    lower, upper = lim if lim is not None else (0.0, 0.0)
    return x, lower, upper


def sequence(
    q: Query,
    x: np.ndarray,
    relation: str,
    lower: float,
    upper: float,
    floor: Callable[[int], float] | None = None,
) -> Iterator[float]:
    """Yield ``A(f, x, 0), A(f, x, 1), ...`` forever (non-decreasing).

    With ``floor``, the ``k``-th value is only guaranteed exact when it exceeds ``floor(k)``;
    otherwise it is some value ``<= max(floor(k), A(f, x, k))`` no smaller than the previous
    one. Callers that only compare ``A`` with a threshold (the smooth-sensitivity scan,
    propose-test-release's distance) pass the threshold and skip every dataset shape that
    provably cannot exceed it, which keeps data with long runs of ties fast.
    """
    n = x.size
    kind = q.kind
    if kind == "count":
        while True:
            yield 0.0 if relation == "bounded" else 1.0
    if kind == "sum":
        if relation == "unbounded":
            while True:
                yield max(abs(lower), abs(upper))
        yield max(upper - x[0], x[-1] - lower)
        while True:
            yield upper - lower
    if kind == "mean" and relation == "bounded":
        yield max(upper - x[0], x[-1] - lower) / n
        while True:
            yield (upper - lower) / n
    if kind in ("var", "std"):
        data = _var_distance.VarData(x, lower, upper)
        moment = _var_distance.var_diagonal if kind == "var" else _std_distance.std_diagonal
        best, k = 0.0, 0
        while True:
            cut = best if floor is None else max(floor(k), best)
            best = max(best, moment(data, relation, k, cut))
            yield best
            k += 1
    diag = _mean_diagonal if kind == "mean" else _percentile_diagonal
    if kind not in ("mean", "percentile"):
        raise InternalError(f"no A(f, x, k) algorithm for kind {kind!r}")
    best = 0.0
    k = 0
    while True:
        # shapes that cannot beat A(k - 1) (or the caller's floor) cannot change the result
        cut = best if floor is None else max(floor(k), best)
        best = max(best, diag(q, x, relation, lower, upper, k, cut))
        yield best
        k += 1


def _diagonal_pairs(n: int, k: int, relation: str) -> tuple[np.ndarray, np.ndarray]:
    """``(r, a)`` with ``r + a = k`` (bounded: ``r = a = k``) and a non-empty result."""
    if relation == "bounded":
        if k > n:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        return np.asarray([k]), np.asarray([k])
    r = np.arange(0, k + 1, dtype=np.int64)
    a = k - r
    keep = (r <= n) & (n - r + a >= 1)
    return r[keep], a[keep]


def _mean_diagonal(
    q: Query, x: np.ndarray, relation: str, lower: float, upper: float, k: int, cut: float
) -> float:
    """Largest ``LS_1`` (unbounded mean) over datasets with exactly ``r`` removals, ``a`` adds."""
    n = x.size
    r, a = _diagonal_pairs(n, k, relation)
    if r.size == 0:
        return 0.0
    pre = np.concatenate(([0.0], np.cumsum(x)))
    total = pre[n]
    low = pre[r]
    high = total - pre[n - r]
    m = (n - r + a).astype(np.float64)
    cands = []
    # adding `upper` to the dataset of smallest mean, adding `lower` to the largest
    cands.append((upper - (total - high + a * lower) / m) / (m + 1))
    cands.append(((total - low + a * upper) / m - lower) / (m + 1))
    two = m >= 2
    mm1 = np.where(two, m - 1, 1.0)
    has_add = a >= 1
    # removing the largest record: max y - mean(y) over the ball
    s_i = upper + (a - 1) * lower + total - high
    cands.append(np.where(two & has_add, (upper - s_i / m) / mm1, 0.0))
    kept_top = _order.padded(x, lower, lower, n - 1 - r)  # all removed: only `lower`s remain
    s_ii = total - high + a * lower
    cands.append(np.where(two, (kept_top - s_ii / m) / mm1, 0.0))
    ok3 = two & (r <= n - 1)
    r3 = np.minimum(r + 1, n)
    s_iii = total - (total - pre[n - r3] - x[-1]) + a * lower
    cands.append(np.where(ok3, (x[-1] - s_iii / m) / mm1, 0.0))
    # removing the smallest record: mean(y) - min y
    s_i = lower + (a - 1) * upper + total - low
    cands.append(np.where(two & has_add, (s_i / m - lower) / mm1, 0.0))
    kept_bot = _order.padded(x, upper, upper, r)
    s_ii = total - low + a * upper
    cands.append(np.where(two, (s_ii / m - kept_bot) / mm1, 0.0))
    s_iii = total - (pre[r3] - x[0]) + a * upper
    cands.append(np.where(ok3, (s_iii / m - x[0]) / mm1, 0.0))
    return float(max(0.0, *(float(np.max(c)) for c in cands)))


def _move_intervals(
    q: float, m: np.ndarray, relation: str
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """For each one-step move from a dataset of size ``m``: ``(start, end, allowed)``.

    The change of the percentile is the integral of the interpolant's slope over
    ``[start, end]`` in the dataset's own positions (0..m-1, padded with the bounds at -1
    and m).
    """
    mf = m.astype(np.float64)
    h = q * (mf - 1)
    every = np.ones(m.shape, dtype=bool)
    if relation == "bounded":
        return [(h, h + 1, every), (h - 1, h, every)]
    big = m >= 2
    hm2 = q * np.maximum(mf - 2, 0)
    return [
        (h, q * mf, every),  # add upper
        (q * mf - 1, h, every),  # add lower
        (h, 1 + hm2, big),  # remove the smallest
        (hm2, h, big),  # remove the largest
    ]


def _percentile_diagonal(
    q: Query, x: np.ndarray, relation: str, lower: float, upper: float, k: int, cut: float
) -> float:
    n = x.size
    assert q.q is not None
    if cut >= 0:
        env = _percentile_envelope(x, lower, upper, q.q, relation, np.asarray([k]))
        if env[0] <= cut:  # O(1) test: nothing at this distance can beat the threshold
            return 0.0
    r0, a0 = _diagonal_pairs(n, k, relation)
    if r0.size == 0:
        return 0.0
    m0 = n - r0 + a0
    best = 0.0
    for start0, end0, allowed0 in _move_intervals(q.q, m0, relation):
        t0 = np.floor(start0).astype(np.int64)
        # Pruning: every value below is w0 g0 + w1 g1 <= (end - start) (y[t+2] - y[t]) and
        # y[t] >= xt[t - a], y[t+2] <= xt[t + r + 2]; shapes that cannot beat `cut` are skipped.
        ub = (end0 - start0) * (
            _order.padded(x, lower, upper, t0 + r0 + 2) - _order.padded(x, lower, upper, t0 - a0)
        )
        keep = allowed0 & (ub > max(cut, best))
        if not np.any(keep):
            continue
        r, a, start, end, allowed = r0[keep], a0[keep], start0[keep], end0[keep], allowed0[keep]
        t = t0[keep]
        w0 = np.minimum(end, t + 1) - start
        w1 = np.maximum(end - (t + 1), 0.0)
        # expand over p = 0..a (records added at `lower`), i = t - p
        counts = a + 1
        rep = np.repeat(np.arange(r.size), counts)
        p = np.arange(rep.size) - np.repeat(np.cumsum(counts) - counts, counts)
        ok = allowed[rep]
        i = t[rep] - p
        d = r[rep]
        ww0, ww1 = w0[rep], w1[rep]
        for d1 in (np.zeros_like(d), np.minimum(d, 1), np.maximum(d - 1, 0), d):
            feas = ok.copy()
            b1 = d1 >= 1
            feas &= ~b1 | ((i + 1 >= 0) & (i + d1 <= n - 1))
            b2 = d1 < d
            feas &= ~b2 | ((i + d1 + 2 >= 0) & (i + d + 1 <= n - 1))
            if not np.any(feas):
                continue
            y0 = _order.padded(x, lower, upper, i)
            y1 = _order.padded(x, lower, upper, i + d1 + 1)
            y2 = _order.padded(x, lower, upper, i + d + 2)
            val = ww0 * (y1 - y0) + ww1 * (y2 - y1)
            best = max(best, float(np.max(np.where(feas, val, 0.0))))
    return best


def _percentile_envelope(
    x: np.ndarray, lower: float, upper: float, q: float, relation: str, ks: np.ndarray
) -> np.ndarray:
    h = q * (x.size - 1)
    c = 1.0 if relation == "bounded" else max(q, 1.0 - q)
    spread = np.ceil(c * ks).astype(np.int64)
    hi = _order.padded(x, lower, upper, math.ceil(h) + spread + 3)
    lo = _order.padded(x, lower, upper, math.floor(h) - spread - 3)
    return np.asarray(hi - lo, dtype=np.float64)


def upper_envelope(
    q: Query, x: np.ndarray, relation: str, lower: float, upper: float, kmax: int
) -> np.ndarray:
    """An upper bound ``B[k] >= A(f, x, k)`` for ``k = 0..kmax``, non-decreasing in ``k``.

    Used by the smooth-sensitivity stopping rule and to skip hopeless distances. Variance:
    :func:`dpkit.sensitivity._var_distance.var_envelope`.
    Percentiles, with ``h = q (n - 1)``: a dataset with ``r`` removals and ``a`` additions has
    its percentile position at ``h + q (a - r)``, and every term of ``LS_1`` is at most the
    spread of its order statistics ``t .. t + 2`` around that position; those lie between
    data positions ``h - c k - 2`` and ``h + c k + 2`` with ``c = max(q, 1 - q)`` unbounded
    and ``c = 1`` bounded, so ``A(f, x, k) <= xt[ceil(h) + ceil(c k) + 3] - xt[floor(h) -
    ceil(c k) - 3]``. Mean (unbounded): ``LS_1(y) <= (upper - lower) / max(|y|, 2)`` and
    ``|y| >= n - k``; bounded ``(upper - lower) / n``. Sum and count: their constant ``A``.
    """
    ks = np.arange(kmax + 1, dtype=np.int64)
    n = x.size
    if q.kind == "percentile":
        assert q.q is not None
        return _percentile_envelope(x, lower, upper, q.q, relation, ks)
    if q.kind == "mean":
        if relation == "bounded":
            return np.full(ks.size, (upper - lower) / n)
        return (upper - lower) / np.maximum(n - ks, 2).astype(np.float64)
    if q.kind == "var":
        return _var_distance.var_envelope(_var_distance.VarData(x, lower, upper), relation, ks)
    if q.kind == "std":
        return _std_distance.std_envelope(_var_distance.VarData(x, lower, upper), relation, ks)
    if q.kind == "sum":
        top = max(abs(lower), abs(upper)) if relation == "unbounded" else upper - lower
        return np.full(ks.size, float(top))
    if q.kind == "count":
        return np.full(ks.size, 0.0 if relation == "bounded" else 1.0)
    raise InternalError(f"no envelope for {q.kind!r}")
