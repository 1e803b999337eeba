"""Local sensitivity at distance k, ``A(f, x, k)``, and the sequence behind smooth sensitivity.

``A(f, x, k) = max LS_1(f, y)`` over every ``y`` with ``dist(x, y) <= k`` (``y = x`` included),
where ``LS_1`` is the local sensitivity at distance 1 (Nissim, Raskhodnikova and Smith 2007,
definition 3.1). Propose-test-release and smooth sensitivity (:mod:`dpkit.frameworks`) are
built on it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from fractions import Fraction
from typing import Any

import numpy as np

from dpkit._validate import check_sensitivity
from dpkit.errors import InternalError, ParameterError
from dpkit.sensitivity import _exact_diagonal, _order, _std_distance, _var_distance
from dpkit.sensitivity._checks import (
    check_distance,
    check_relation,
    needs_bounds,
    query_of,
    sorted_data,
)
from dpkit.sensitivity._moves import exact_moves
from dpkit.sensitivity.catalogue import Statistic
from dpkit.sensitivity.lattice_data import LatticeData, ceil_float

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
    query : Statistic or str
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
        ``A(f, x, k) = max { LS_1(f, y) : dist(x, y) <= k }``; non-decreasing in ``k``. For
        count, sum, mean, median and percentiles the exact value rounded up to a float when
        the data and the bounds lie on the lattice of the bounds (``dpkit._lattice``; integer
        data with integer bounds always do), else a certified upper bound at most four lattice
        units (``2**-29 (upper - lower)``) above it. For the variance and the deviation a
        certified upper bound (:func:`dpkit.sensitivity._var_distance.certified_error`).
        Values that scale noise must never be below ``A``: these never are.

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
    Closed forms and algorithms (checked against :func:`empirical_at_distance`; the numbers
    are computed on the integer lattice, see :mod:`dpkit.sensitivity.lattice_data`):

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
      sets are convex) with added records all equal to one value ``t``, whose best value is
      certified by a branch-and-bound over ``t`` (no root location is trusted);
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


def stable_distance(q: Statistic, n: int, relation: str) -> int:
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


def prepare(owner: str, q: Statistic, data: Any, bounds: Any) -> tuple[np.ndarray, float, float]:
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
    q: Statistic,
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
    lo_f, hi_f = Fraction(lower), Fraction(upper)
    if kind == "sum":  # closed forms, evaluated exactly and rounded up
        if relation == "unbounded":
            while True:
                yield max(abs(lower), abs(upper))
        yield ceil_float(max(hi_f - Fraction(x[0]), Fraction(x[-1]) - lo_f))
        while True:
            yield ceil_float(hi_f - lo_f)
    if kind == "mean" and relation == "bounded":
        yield ceil_float(max(hi_f - Fraction(x[0]), Fraction(x[-1]) - lo_f) / n)
        while True:
            yield ceil_float((hi_f - lo_f) / n)
    if kind in ("var", "std"):
        # certified: the float algorithm on the lattice data, plus a proven bound on its error
        # (_var_distance.certified_error) and the lattice slack, rounded up
        ld = LatticeData(x, lower, upper)
        data = _var_distance.VarData.from_lattice(ld)
        moment = _var_distance.var_diagonal if kind == "var" else _std_distance.std_diagonal
        scale = (Fraction(ld.unit) / Fraction(data.factor)) ** (2 if kind == "var" else 1)
        lip = (
            2 * (Fraction(upper) - Fraction(lower)) + Fraction(ld.unit)
            if kind == "var"
            else Fraction(1)
        )
        slack = ld.slack(lip)
        best, k = 0.0, 0
        while True:
            err = _var_distance.certified_error(kind, k, data)
            lowest = (
                best if floor is None else max(float((Fraction(floor(k)) - slack) / scale), best)
            )
            cut = max(lowest - float(err), 0.0) * (1 - 2.0**-40)  # never prune a term that matters
            best = max(best, moment(data, relation, k, cut))
            yield ceil_float((Fraction(best) + err) * scale + slack)
            k += 1
    if kind not in ("mean", "percentile"):
        raise InternalError(f"no A(f, x, k) algorithm for kind {kind!r}")
    # exact: the lattice data, a rational A per distance, rounded up (see _exact_diagonal)
    ld = LatticeData(x, lower, upper)
    unit = Fraction(ld.unit)
    slack = ld.slack(1)
    exact = Fraction(0)
    k = 0
    ahead: list[Fraction] = []  # the mean's diagonals, computed a block at a time (reversed)
    while True:
        if kind == "mean":
            if not ahead:  # blocks of 64, 128, 256, ...: O(log k) work per distance
                ahead = _exact_diagonal.mean_diagonals(ld, k, 2 * k + 63)[::-1]
            exact = max(exact, ahead.pop())
        else:
            assert q.q is not None
            # shapes that cannot beat A(k - 1) (or the caller's floor) cannot change the result;
            # the threshold in lattice units, lowered by 2**-40 so float error never prunes more
            cut_real = (
                (exact * unit + slack)
                if floor is None
                else max(Fraction(floor(k)), exact * unit + slack)
            )
            cut = float((cut_real - slack) / unit) * (1 - 2.0**-40)
            groups, direct = _percentile_groups(ld, q.q, relation, k, cut)
            if direct is None:
                direct = _exact_diagonal.percentile_diagonal(ld, q.q, relation, k, groups)
            exact = max(exact, direct)
        yield ceil_float(exact * unit + slack)
        k += 1


def certified_gap(kind: str, lower: float, upper: float, beta: float) -> float:
    """A public bound ``G`` on ``max_k exp(-beta k) (R(k) - A(f, x, k))`` over every dataset,
    where ``R(k)`` is the value :func:`sequence` reports for the variance or the deviation.

    ``R(k) - A(k)`` is at most twice the certified error of the float algorithm at ``k``
    (:func:`dpkit.sensitivity._var_distance.certified_error`: ``a (k + 1)**2`` for the
    variance, ``b (k + 1)`` for the deviation, in real units) plus twice the lattice slack, and
    ``max_{y >= 1} y**p exp(-beta (y - 1)) <= exp(beta) max(1, (p / beta)**p exp(-p))``. Smooth
    sensitivity adds ``G / (exp(beta) - 1)`` to restore exact beta-smoothness: reported values
    satisfy ``R(x, k) <= R(x', k + 1) + (R - A)(x, k)``, so their smooth maximum ``S`` satisfies
    ``S(x) <= e^beta S(x') + G``, and ``S + G / (e^beta - 1)`` is beta-smooth.
    """
    ld = LatticeData(np.asarray([float(lower)]), lower, upper)
    data = _var_distance.VarData.from_lattice(ld)
    unit = Fraction(ld.unit) / Fraction(data.factor)
    p = 2 if kind == "var" else 1
    per = _var_distance.certified_error(kind, 0, data) * unit**p  # the k = 0 error, real units
    lip = 2 * (upper - lower) + ld.unit if kind == "var" else 1.0
    growth = math.exp(beta) * max(1.0, (p / beta) ** p * math.exp(-p))
    slack = 4 * lip * ld.unit  # twice the slack 2 L u
    return (2 * float(per) * growth + slack * math.exp(beta)) * (1 + 2.0**-30)


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


def _percentile_groups(
    ld: LatticeData, q: float, relation: str, k: int, cut: float
) -> tuple[list[tuple[float, int, int, int]], Fraction | None]:
    """The float pass over the percentile's candidate shapes at distance ``k`` (lattice units).

    Returns ``(largest float value, move, r, a)`` for every group (one move from one dataset
    shape) that can exceed ``cut``; :func:`._exact_diagonal.percentile_diagonal` recomputes
    the ones near the maximum exactly. The positions ``t`` and the weights come from
    :func:`exact_moves`, so a float value ``w0 g0 + w1 g1`` (integer gaps, weights rounded
    once) is within a relative ``4 u`` of the exact one, and a group is skipped only when
    its upper bound ``(w0 + w1) (y[t + r + 2] - y[t - a])``, raised by ``2**-40``, is at most
    ``cut`` or below the best value found (less its error).

    When ``q``'s denominator ``D`` is at most ``2**60`` (every float percentile level above
    ``2**-8``, and 0), every value ``(W0 g0 + W1 g1) / D`` is also computed exactly in int64
    limbs (``W = Wh 2**30 + Wl``, products below ``2**62``) and the exact maximum is returned
    as the second element (``None`` otherwise: the caller then recomputes the groups near the
    float maximum exactly).
    """
    x, lower, upper = ld.floats()
    n = x.size
    if cut >= 0:
        env = _percentile_envelope(x, lower, upper, q, relation, np.asarray([k]))
        if env[0] <= cut:  # O(1) test: nothing at this distance can beat the threshold
            return [], Fraction(0)
    r0, a0 = _diagonal_pairs(n, k, relation)
    if r0.size == 0:
        return [], Fraction(0)
    m0 = n - r0 + a0
    big_den = Fraction(q).denominator
    den = float(big_den)  # a power of two: the divisions below are exact
    limbs = big_den <= 2**60
    mask = (1 << 30) - 1
    top = (0, 0)  # the exact maximum found, as limbs (value * D = hi 2**30 + lo)
    out: list[tuple[float, int, int, int]] = []
    best = 0.0
    for move, (t0, big_w0, big_w1, allowed0) in enumerate(exact_moves(q, m0, relation)):
        w0_all = big_w0.astype(np.float64) / den
        w1_all = big_w1.astype(np.float64) / den
        # Pruning: every value below is w0 g0 + w1 g1 <= (w0 + w1) (y[t+2] - y[t]) with
        # y[t] >= xt[t - a] and y[t+2] <= xt[t + r + 2].
        ub = (w0_all + w1_all) * (
            _order.padded(x, lower, upper, t0 + r0 + 2) - _order.padded(x, lower, upper, t0 - a0)
        )
        keep = allowed0 & (ub * (1 + 2.0**-40) > max(cut, best * (1 - 2.0**-40)))
        if not np.any(keep):
            continue
        r, a, allowed, t = r0[keep], a0[keep], allowed0[keep], t0[keep]
        w0, w1 = w0_all[keep], w1_all[keep]
        if limbs:
            kw0, kw1 = big_w0[keep], big_w1[keep]
            w0h, w0l = (kw0 >> 30).astype(np.int64), (kw0 & mask).astype(np.int64)
            w1h, w1l = (kw1 >> 30).astype(np.int64), (kw1 & mask).astype(np.int64)
        # expand over p = 0..a (records added at `lower`), i = t - p
        counts = a + 1
        firsts = np.cumsum(counts) - counts
        rep = np.repeat(np.arange(r.size), counts)
        p = np.arange(rep.size) - np.repeat(firsts, counts)
        ok = allowed[rep]
        i = t[rep] - p
        d = r[rep]
        ww0, ww1 = w0[rep], w1[rep]
        group = np.zeros(r.size)
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
            if limbs:
                g0 = _exact_diagonal.gaps(ld, i, i + d1 + 1)
                g1 = _exact_diagonal.gaps(ld, i + d1 + 1, i + d + 2)
                hi_p = w0h[rep] * g0 + w1h[rep] * g1
                lo_p = w0l[rep] * g0 + w1l[rep] * g1
                hi_p = np.where(feas, hi_p + (lo_p >> 30), 0)
                lo_p = np.where(feas, lo_p & mask, 0)
                cand = int(hi_p.max())
                if cand >= top[0]:
                    low = int(lo_p[hi_p == cand].max())
                    top = max(top, (cand, low))
            # `rep` is sorted: one segment per group, starting at `firsts`
            seg = np.maximum.reduceat(np.where(feas, val, 0.0), firsts)
            np.maximum(group, seg, out=group)
        best = max(best, float(group.max()))
        if not limbs:
            out += [
                (float(v), move, int(rr), int(aa)) for v, rr, aa in zip(group, r, a, strict=True)
            ]
    if limbs:
        return [], Fraction(top[0] * 2**30 + top[1], big_den)
    return out, None


def _percentile_envelope(
    x: np.ndarray, lower: float, upper: float, q: float, relation: str, ks: np.ndarray
) -> np.ndarray:
    h = q * (x.size - 1)
    c = 1.0 if relation == "bounded" else max(q, 1.0 - q)
    spread = np.ceil(c * ks).astype(np.int64)
    # margin 4 rather than the proof's 3: the float h may be one position off
    hi = _order.padded(x, lower, upper, math.ceil(h) + spread + 4)
    lo = _order.padded(x, lower, upper, math.floor(h) - spread - 4)
    return np.asarray(hi - lo, dtype=np.float64) * (1 + 2.0**-50)


def upper_envelope(
    q: Statistic, x: np.ndarray, relation: str, lower: float, upper: float, kmax: int
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
    if q.kind in ("percentile", "mean"):
        # bound the values :func:`sequence` reports: for data off the lattice those exceed
        # A(f, x, k) by up to 4 units (twice the slack it adds), so the envelope does too
        slack = 2 * float(LatticeData(x, lower, upper).slack(1))
        if q.kind == "percentile":
            assert q.q is not None
            return _percentile_envelope(x, lower, upper, q.q, relation, ks) + slack
        if relation == "bounded":
            return np.full(ks.size, (upper - lower) / n * (1 + 2.0**-50))
        wide = (upper - lower) / np.maximum(n - ks, 2).astype(np.float64)
        return wide * (1 + 2.0**-50) + slack
    if q.kind in ("var", "std"):
        # an envelope of the values sequence() reports: the envelope of the lattice data plus
        # the certified error and twice the lattice slack (those values exceed A by that much)
        ld = LatticeData(x, lower, upper)
        data = _var_distance.VarData.from_lattice(ld)
        unit = ld.unit / data.factor
        if q.kind == "var":
            env = _var_distance.var_envelope(data, relation, ks)
            # past the float range (bounds near 1e308) the envelope is infinite where it is
            # not 0; the sensitivity it bounds is then refused by check_sensitivity
            scale = unit * unit  # (float * float is inf past the range; ** would raise)
            slack = ceil_float(
                ld.slack(2 * (Fraction(upper) - Fraction(lower)) + Fraction(ld.unit))
            )
        else:
            env = _std_distance.std_envelope(data, relation, ks)
            scale, slack = unit, float(ld.slack(1))
        err = _var_distance.certified_errors(q.kind, ks, data)
        raw = env * (1 + 2.0**-30) + 2 * err
        with np.errstate(over="ignore", invalid="ignore"):
            out = (raw * scale + 2 * slack) * (1 + 2.0**-50)
        return np.where(raw > 0, out, 2 * slack * (1 + 2.0**-50))
    if q.kind == "sum":
        top = max(abs(lower), abs(upper)) if relation == "unbounded" else upper - lower
        return np.full(ks.size, float(top))
    if q.kind == "count":
        return np.full(ks.size, 0.0 if relation == "bounded" else 1.0)
    raise InternalError(f"no envelope for {q.kind!r}")
