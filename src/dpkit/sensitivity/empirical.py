"""Brute-force (empirical) sensitivity over a universe: the oracles.

A *universe* is a multiset of records; datasets are sub-multisets of it, and a record added
to a dataset must still be available in the universe (a universe ``[1, 2, 2]`` lets a dataset
hold ``2`` twice, never three times). Datasets are compared as multisets of values, so two
datasets holding the same values are the same dataset, and distances are exact:
``|x Δ y|`` (unbounded) or the number of records replaced (bounded).

Everything is enumerated: the functions work for any query, including user callables and
vector-valued ones, and are exact for the universe given. They are exponential in the
universe size; a limit (``max_datasets``) guards against runaway enumerations.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np

from dpkit._validate import check_finite_array, check_int, check_sensitivity, describe
from dpkit.errors import ParameterError
from dpkit.sensitivity._checks import check_distance, check_norm, check_relation, query_of
from dpkit.sensitivity.catalogue import Statistic

__all__ = ["DEFAULT_MAX_DATASETS", "empirical_at_distance", "empirical_global", "empirical_local"]

DEFAULT_MAX_DATASETS = 2_000_000
"""Default enumeration limit; pass ``max_datasets=`` to raise it."""

_PAIR_CHUNK = 4_000_000  # distance-matrix cells per chunk (memory ~ 8 bytes x V x this)
_PROGRESS_AFTER = 50  # chunks before a progress bar is worth showing


def universe_counts(owner: str, universe: Any) -> tuple[np.ndarray, np.ndarray]:
    """Distinct sorted values of the universe and their multiplicities."""
    arr = check_finite_array(owner, "universe", universe, ndim=1)
    vals, caps = np.unique(arr, return_counts=True)
    return vals, caps.astype(np.int64)


def counts_in_universe(owner: str, data: Any, vals: np.ndarray, caps: np.ndarray) -> np.ndarray:
    """``data`` as counts over the universe's distinct values ``vals`` (at most ``caps`` each),
    or a ParameterError naming the values of ``data`` the universe lacks."""
    arr = check_finite_array(owner, "data", data, ndim=1)
    dvals, dcounts = np.unique(arr, return_counts=True)
    pos = np.searchsorted(vals, dvals)
    pos_c = np.clip(pos, 0, vals.size - 1)
    missing = (pos >= vals.size) | (vals[pos_c] != dvals)
    if np.any(missing):
        raise ParameterError(
            f"{owner}: `data` must be drawn from `universe`; value(s) "
            f"{dvals[missing][:5].tolist()} are not in the universe"
        )
    counts = np.zeros(vals.size, dtype=np.int64)
    counts[pos_c] = dcounts
    over = counts > caps
    if np.any(over):
        i = int(np.flatnonzero(over)[0])
        raise ParameterError(
            f"{owner}: `data` must be drawn from `universe`; {vals[i]!r} appears {counts[i]} "
            f"time(s) in data but only {caps[i]} in the universe"
        )
    return counts


def _size_poly(caps: np.ndarray, top: int, cap: int) -> list[int]:
    """Coefficients of ``t**s`` (``s <= top``) in ``prod_v (1 + t + ... + t**caps_v)``: the
    number of sub-multisets of each size, saturated at ``cap`` (counts only ever get compared
    with a limit, so integers stay small however large the universe)."""
    poly = [1] + [0] * top
    for c in caps.tolist():
        # multiply by (1 + t + ... + t**c): a sliding window sum over the old coefficients
        new = [0] * (top + 1)
        window = 0
        for s in range(top + 1):
            window += poly[s]
            if s - c - 1 >= 0:
                window -= poly[s - c - 1]
            new[s] = min(window, cap)
        poly = new
    return poly


def _n_submultisets(caps: np.ndarray, size: int, cap: int = 1 << 62) -> int:
    """How many sub-multisets of the given size (saturated at ``cap``)."""
    if size < 0 or size > int(caps.sum()):
        return 0
    return _size_poly(caps, size, cap)[size]


def _submultisets(caps: np.ndarray, size: int) -> np.ndarray:
    """All count vectors ``0 <= c <= caps`` with ``c.sum() == size`` (rows), vectorised.

    Built value by value: every partial row (the counts of the first ``i`` values) that can
    still be completed (the remaining capacity covers what is left) is extended by each
    feasible count of value ``i``. No recursion (a universe of thousands of distinct values
    is fine), and no partial row is a dead end, so the work is proportional to the output.
    """
    nv = caps.size
    suffix = np.concatenate((np.cumsum(caps[::-1])[::-1], [0]))
    rows = np.zeros((1, nv), dtype=np.int64)
    used = np.zeros(1, dtype=np.int64)
    if suffix[0] < size:
        return np.zeros((0, nv), dtype=np.int64)
    for i in range(nv):
        left = size - used
        # counts j of value i with j <= caps[i], j <= left and left - j <= suffix[i + 1]
        lo = np.maximum(left - suffix[i + 1], 0)
        hi = np.minimum(left, caps[i])
        reps = np.maximum(hi - lo + 1, 0)
        idx = np.repeat(np.arange(rows.shape[0]), reps)
        offset = np.arange(idx.size) - np.repeat(np.cumsum(reps) - reps, reps)
        j = lo[idx] + offset
        rows = rows[idx]
        rows[:, i] = j
        used = used[idx] + j
    return rows[::-1].copy()  # largest counts of the first values first, as before


def _rows(vals: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Expand count vectors (all of one total) into sorted datasets, one per row."""
    n_rows = counts.shape[0]
    size = int(counts[0].sum()) if n_rows else 0
    if n_rows == 0 or size == 0:
        return np.zeros((n_rows, size))
    return np.repeat(np.tile(vals, n_rows), counts.ravel()).reshape(n_rows, size)


def evaluate_counts(
    q: Statistic, vals: np.ndarray, counts: np.ndarray, owner: str = "empirical"
) -> np.ndarray:
    """Query values for every count vector, or a ParameterError naming ``query``.

    A user function that raises, returns no number, or returns NaN or infinity on some
    dataset of the enumeration is reported with that dataset (these are analysis tools on
    public universes, not private releases: the message may show data).
    """
    try:
        with np.errstate(all="ignore"):
            out = _evaluate_rows(q, vals, counts)
    except Exception as exc:
        raise ParameterError(
            f"{owner}: `query` {q.name!r} failed on a dataset of the enumeration: "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    if not np.isfinite(out).all():
        bad = np.flatnonzero(~np.isfinite(out).reshape(out.shape[0], -1).all(axis=1))[0]
        sample = np.repeat(vals, counts[bad]).tolist()
        raise ParameterError(
            f"{owner}: `query` {q.name!r} returned a non-finite value on the dataset "
            f"{describe(sample)}; a sensitivity needs finite values"
        )
    return out


def _evaluate_rows(q: Statistic, vals: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Query values for every count vector (grouped by size, vectorised within a size)."""
    sizes = counts.sum(axis=1)
    out: np.ndarray | None = None
    for s in np.unique(sizes).tolist():
        idx = np.flatnonzero(sizes == s)
        vals_s = (
            q.evaluate_rows(_rows(vals, counts[idx]))
            if s > 0
            else np.stack([np.asarray(q.func(np.zeros(0)), dtype=np.float64)] * idx.size)
        )
        vals_s = np.asarray(vals_s, dtype=np.float64)
        if out is None:
            out = np.zeros((counts.shape[0], *vals_s.shape[1:]))
        out[idx] = vals_s
    assert out is not None
    return out


def _diff(fx: np.ndarray, fy: np.ndarray, norm: str | None) -> np.ndarray:
    """|f(x) - f(y)| for scalars; the chosen norm of the difference for vectors."""
    with np.errstate(over="ignore"):  # an overflowing difference is refused by the caller
        return _diff_norm(fx - fy, norm)


def _diff_norm(d: np.ndarray, norm: str | None) -> np.ndarray:
    if d.ndim == 1 or norm is None:
        return np.abs(d)
    if norm == "l1":
        return np.abs(d).sum(axis=-1)
    return np.sqrt((d * d).sum(axis=-1))


#: Dataset counts are exact up to this and saturate there (integers stay small).
_COUNT_CAP = 10**30


def _too_many(owner: str, what: str, total: int, limit: int) -> ParameterError:
    shown = f"{total:,}" if total < _COUNT_CAP else "more than 10**30"
    return ParameterError(
        f"{owner}: the enumeration would visit {shown} {what}, more than "
        f"`max_datasets`={limit:,}; use a smaller universe, size or distance, or raise "
        "`max_datasets` if you can wait"
    )


#: The limit ``max_datasets`` bounds three things, all checked before any work starts: the
#: datasets evaluated, the memory their count vectors take (datasets times distinct values,
#: at most ``_MEMORY_PER_DATASET * max_datasets`` int64 cells: 1 GiB at the default), and
#: the pairwise comparisons (pairs times distinct values, at most
#: ``_WORK_PER_DATASET * max_datasets`` cell operations: about a minute at the default).
_MEMORY_PER_DATASET = 64
_WORK_PER_DATASET = 1000


def _check_limits(
    owner: str, what: str, datasets: int, pairs: int, values: int, limit: int
) -> None:
    if datasets > limit:
        raise _too_many(owner, what, datasets, limit)
    if datasets * values > _MEMORY_PER_DATASET * limit:
        raise ParameterError(
            f"{owner}: the {datasets:,} {what} over {values:,} distinct values would take "
            f"{8 * datasets * values / 2**30:.1f} GiB, more than `max_datasets`={limit:,} "
            f"allows ({_MEMORY_PER_DATASET} values per dataset); use a smaller universe or "
            "raise `max_datasets`"
        )
    if pairs * values > _WORK_PER_DATASET * limit:
        raise ParameterError(
            f"{owner}: the enumeration would compare {pairs:,} pairs of datasets over "
            f"{values:,} distinct values, more than `max_datasets`={limit:,} allows "
            f"({_WORK_PER_DATASET} value comparisons per dataset); use a smaller universe, size "
            "or distance, or raise `max_datasets` if you can wait"
        )


def _limit(owner: str, max_datasets: Any) -> int:
    """``max_datasets`` must be an int >= 1: None, NaN or a float never disable the limit."""
    return check_int(owner, "max_datasets", max_datasets, minimum=1)


def _progress(total: int, show: bool | None, desc: str) -> Any:
    if show is None:
        show = total >= _PROGRESS_AFTER and sys.stderr.isatty()
    if not show:
        return None
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="chunk", file=sys.stderr, leave=False)


def _vector_norm(owner: str, q: Statistic, norm: str | None) -> str | None:
    if q.vector:
        if norm is None:
            raise ParameterError(
                f"{owner}: `norm` ('l1' or 'l2') is required for the vector query {q.name!r}"
            )
        return check_norm(owner, norm)
    return None


def empirical_global(
    query: Any,
    universe: Any,
    size: int,
    *,
    distance: int = 1,
    relation: str,
    norm: str | None = None,
    max_datasets: int = DEFAULT_MAX_DATASETS,
    progress: bool | None = None,
) -> float:
    """Global sensitivity by brute force over every dataset of ``size`` records from a universe.

    Parameters
    ----------
    query : Statistic, str or callable
        Any query, including user callables ``f(array) -> float`` and vector-valued ones.
    universe : array_like
        The multiset of records datasets and added records are drawn from.
    size : int
        Size ``n >= 1`` of the datasets whose local sensitivity is maximised.
    distance : int, default 1
        Hamming radius ``k >= 1``.
    relation : {"bounded", "unbounded"}
        Neighbour relation (see :mod:`dpkit.sensitivity`).
    norm : {"l1", "l2"}, optional
        Required for vector-valued queries.
    max_datasets : int, default 2,000,000
        Refuse (with the count in the message) enumerations visiting more datasets.
    progress : bool, optional
        Show a progress bar; by default only for long runs on a terminal.

    Returns
    -------
    float
        ``max over x of LS_k(f, x)``, ``x`` ranging over the sub-multisets of ``universe`` of
        ``size`` records and ``LS_k`` over neighbours that are also drawn from the universe.

    Raises
    ------
    ParameterError
        A universe smaller than ``size``, ``distance < 1``, an unknown query or relation, a
        NaN in the universe, or an enumeration beyond ``max_datasets``.
    TypeError
        A non-integer size or distance, a non-numeric universe.

    Notes
    -----
    Every sub-multiset with a size in ``[size - k, size + k]`` (unbounded; only ``size`` when
    bounded) is evaluated once, grouped by size so that catalogue queries run vectorised over
    all datasets of a size. Distances between count vectors then give every pair in range.
    Datasets smaller than the query's ``min_size`` are out of scope (see :mod:`dpkit.queries`).

    Time ``O(D * N * V)`` for ``N`` datasets of the given size, ``D`` evaluated datasets and
    ``V`` distinct universe values, plus ``D`` query evaluations.

    Examples
    --------
    >>> from dpkit import sensitivity as sens
    >>> u = [1, 2, 3, 10, 11]
    >>> sens.empirical_global("median", u, 3, relation="bounded")
    8.0
    >>> sens.empirical_global("median", u, 3, relation="unbounded")
    4.5
    """
    owner = "empirical_global"
    q = query_of(owner, query)
    k = check_distance(owner, distance)
    n = check_distance(owner, size, name="size")
    rel = check_relation(owner, relation)
    nrm = _vector_norm(owner, q, norm)
    vals, caps = universe_counts(owner, universe)
    total_u = int(caps.sum())
    if n > total_u:
        raise ParameterError(
            f"{owner}: the universe has {total_u} record(s), too few for datasets of `size`={n}"
        )
    if n < q.min_size:
        raise ParameterError(f"{owner}: `size` must be >= {q.min_size} for {q.name!r}; got {n}")
    sizes = (
        [n] if rel == "bounded" else list(range(max(n - k, q.min_size), min(n + k, total_u) + 1))
    )
    limit = _limit(owner, max_datasets)
    poly = _size_poly(caps, max(sizes), _COUNT_CAP)
    total = sum(poly[s] for s in sizes)
    _check_limits(owner, "datasets", total, poly[n] * total, vals.size, limit)
    ys = np.concatenate([_submultisets(caps, s) for s in sizes])
    fy = evaluate_counts(q, vals, ys, owner)
    ysize = ys.sum(axis=1)
    xi = np.flatnonzero(ysize == n)
    best = 0.0
    chunk = max(1, _PAIR_CHUNK // max(1, ys.shape[0] * max(1, vals.size)))
    bar = _progress(math.ceil(xi.size / chunk), progress, owner)
    try:
        for start in range(0, xi.size, chunk):
            idx = xi[start : start + chunk]
            d = np.abs(ys[idx][:, None, :] - ys[None, :, :]).sum(axis=2)
            if rel == "bounded":
                d = d // 2
            mask = (d >= 1) & (d <= k)
            if np.any(mask):
                diffs = _diff(fy[idx][:, None, ...], fy[None, :, ...], nrm)
                best = max(best, float(np.max(np.where(mask, diffs, 0.0))))
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    return check_sensitivity(owner, best)


def neighbour_counts(
    counts: np.ndarray, caps: np.ndarray, k: int, relation: str, min_size: int
) -> Iterator[np.ndarray]:
    """Count vectors of every neighbour at multiset distance 1..k (removals then additions)."""
    n = int(counts.sum())
    room = caps - counts
    k = _reach(counts, caps, k, relation)
    for r in range(0, min(k, n) + 1):
        removals = _submultisets(counts, r)
        adds_range = [r] if relation == "bounded" else range(0, k - r + 1)
        for a in adds_range:
            if r + a == 0 or n - r + a < min_size:
                continue
            additions = _submultisets(room, a)
            if removals.shape[0] == 0 or additions.shape[0] == 0:
                continue
            # disjoint supports: removing and re-adding a value is a shorter move
            ok = ~np.any((removals[:, None, :] > 0) & (additions[None, :, :] > 0), axis=2)
            ri, ai = np.nonzero(ok)
            if ri.size:
                yield counts[None, :] - removals[ri] + additions[ai]


def _reach(counts: np.ndarray, caps: np.ndarray, k: int, relation: str) -> int:
    """The largest distance that still reaches new datasets: ``k`` clamped to the records
    that can be removed (``n``) plus those the universe can still add (bounded: both)."""
    n, room = int(counts.sum()), int((caps - counts).sum())
    return min(k, n, room) if relation == "bounded" else min(k, n + room)


def _ball_size(
    counts: np.ndarray, caps: np.ndarray, k: int, relation: str, cap: int = 1 << 62
) -> int:
    """An upper bound on the datasets within distance ``k`` (saturated at ``cap``)."""
    n = int(counts.sum())
    room = caps - counts
    k = _reach(counts, caps, k, relation)
    rem = _size_poly(counts, min(k, n), cap)
    add = _size_poly(room, min(k, int(room.sum())), cap)
    total = 0
    for r in range(0, min(k, n) + 1):
        if relation == "bounded":
            total += rem[r] * add[r] if r < len(add) else 0
        else:
            total += rem[r] * sum(add[: k - r + 1])
        if total > cap:
            return cap
    return total


def empirical_local(
    query: Any,
    data: Any,
    universe: Any,
    *,
    distance: int = 1,
    relation: str,
    norm: str | None = None,
    max_datasets: int = DEFAULT_MAX_DATASETS,
) -> float:
    """Local sensitivity ``LS_k(f, x)`` by brute force over the neighbours drawn from a universe.

    Parameters
    ----------
    query : Statistic, str or callable
        Any query, including user callables and vector-valued ones.
    data : array_like
        The dataset ``x``; a sub-multiset of ``universe``.
    universe : array_like
        The multiset of records; removed records return to it and added records come from it.
    distance : int, default 1
        Hamming radius ``k >= 1``.
    relation : {"bounded", "unbounded"}
        Neighbour relation.
    norm : {"l1", "l2"}, optional
        Required for vector-valued queries.
    max_datasets : int, default 2,000,000
        Refuse (with the count in the message) balls holding more datasets.

    Returns
    -------
    float
        ``max |f(x) - f(y)|`` over the ``y`` drawn from the universe with ``1 <= dist(x, y) <= k``
        (0 when the ball is empty).

    Raises
    ------
    ParameterError
        Data not drawn from the universe, empty data, NaN, ``distance < 1``, an unknown query
        or relation, or a ball beyond ``max_datasets``.
    TypeError
        Non-numeric data or universe, a non-integer distance.

    Notes
    -----
    A neighbour is ``x`` minus a sub-multiset ``R`` of ``x`` plus a sub-multiset ``A`` of what
    the universe has left, with ``R`` and ``A`` sharing no value (otherwise the move is
    shorter) and ``|R| + |A| <= k`` (bounded: ``|R| = |A| <= k``). The ball has
    ``sum_{r, a} C(x, r) C(U - x, a)`` members (multiset coefficients); each is evaluated once,
    vectorised per size.

    Examples
    --------
    >>> from dpkit import sensitivity as sens
    >>> sens.empirical_local("median", [1, 2, 3], [1, 2, 3, 10, 11], relation="bounded")
    1.0
    """
    owner = "empirical_local"
    q = query_of(owner, query)
    k = check_distance(owner, distance)
    rel = check_relation(owner, relation)
    nrm = _vector_norm(owner, q, norm)
    vals, caps = universe_counts(owner, universe)
    counts = counts_in_universe(owner, data, vals, caps)
    n = int(counts.sum())
    if n < max(q.min_size, 1):
        raise ParameterError(f"{owner}: `data` must hold at least 1 value for {q.name!r}")
    limit = _limit(owner, max_datasets)
    total = _ball_size(counts, caps, k, rel, _COUNT_CAP)
    _check_limits(owner, "neighbouring datasets", total, total, vals.size, limit)
    fx = evaluate_counts(q, vals, counts[None, :], owner)[0]
    best = 0.0
    for ys in neighbour_counts(counts, caps, k, rel, q.min_size):
        fy = evaluate_counts(q, vals, ys, owner)
        best = max(best, float(np.max(_diff(fx[None, ...], fy, nrm))))
    return check_sensitivity(owner, best)


def empirical_at_distance(
    query: Any,
    data: Any,
    universe: Any,
    k: int,
    *,
    relation: str,
    norm: str | None = None,
    max_datasets: int = DEFAULT_MAX_DATASETS,
) -> float:
    """``A(f, x, k)`` by brute force: the largest ``LS_1(f, y)`` over ``dist(x, y) <= k``.

    Both ``y`` and the neighbours of ``y`` are drawn from ``universe``.

    Parameters
    ----------
    query : Statistic, str or callable
        Any query.
    data : array_like
        The dataset ``x``, a sub-multiset of ``universe``.
    universe : array_like
        The multiset of records.
    k : int
        Distance ``k >= 0``.
    relation : {"bounded", "unbounded"}
        Neighbour relation.
    norm : {"l1", "l2"}, optional
        Required for vector-valued queries.
    max_datasets : int, default 2,000,000
        Refuse balls (of radius ``k + 1``) holding more datasets.

    Returns
    -------
    float

    Raises
    ------
    ParameterError
        As :func:`empirical_local`, and for ``k < 0``.
    TypeError
        Non-numeric input, a non-integer ``k``.

    Notes
    -----
    Enumerates the ball of radius ``k + 1`` around ``x`` once (every neighbour of a dataset
    within ``k`` lies in it), evaluates the query on each member, then takes, for every member
    within ``k``, the largest difference to its distance-1 neighbours. Time
    ``O(B_k * B_{k+1} * V)`` for balls of ``B`` datasets over ``V`` distinct values.

    Examples
    --------
    >>> from dpkit import sensitivity as sens
    >>> sens.empirical_at_distance("median", [1, 2, 3], [1, 2, 3, 10, 11], 1, relation="bounded")
    8.0
    """
    owner = "empirical_at_distance"
    q = query_of(owner, query)
    kk = check_distance(owner, k, name="k", minimum=0)
    rel = check_relation(owner, relation)
    nrm = _vector_norm(owner, q, norm)
    vals, caps = universe_counts(owner, universe)
    counts = counts_in_universe(owner, data, vals, caps)
    limit = _limit(owner, max_datasets)
    kk = min(kk, _reach(counts, caps, kk, rel))  # farther distances reach nothing new
    total = _ball_size(counts, caps, kk + 1, rel, _COUNT_CAP)
    inner = _ball_size(counts, caps, kk, rel, _COUNT_CAP)
    _check_limits(owner, "neighbouring datasets", total, inner * total, vals.size, limit)
    ys = np.concatenate([counts[None, :], *neighbour_counts(counts, caps, kk + 1, rel, q.min_size)])
    fy = evaluate_counts(q, vals, ys, owner)
    from_x = np.abs(ys - counts[None, :]).sum(axis=1)
    if rel == "bounded":
        from_x = from_x // 2
    zi = np.flatnonzero(from_x <= kk)
    best = 0.0
    chunk = max(1, _PAIR_CHUNK // max(1, ys.shape[0] * max(1, vals.size)))
    for start in range(0, zi.size, chunk):
        idx = zi[start : start + chunk]
        d = np.abs(ys[idx][:, None, :] - ys[None, :, :]).sum(axis=2)
        if rel == "bounded":
            d = d // 2
        mask = d == 1
        if np.any(mask):
            diffs = _diff(fy[idx][:, None, ...], fy[None, :, ...], nrm)
            best = max(best, float(np.max(np.where(mask, diffs, 0.0))))
    return check_sensitivity(owner, best)
