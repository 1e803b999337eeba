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

from dpkit._validate import check_finite_array
from dpkit.errors import ParameterError
from dpkit.queries import Query
from dpkit.sensitivity._common import (
    check_distance,
    check_norm,
    check_relation,
    query_of,
)

__all__ = ["DEFAULT_MAX_DATASETS", "empirical_at_distance", "empirical_global", "empirical_local"]

DEFAULT_MAX_DATASETS = 2_000_000
"""Default enumeration limit; pass ``max_datasets=`` to raise it."""

_PAIR_CHUNK = 4_000_000  # distance-matrix cells per chunk (memory ~ 8 bytes x V x this)
_PROGRESS_AFTER = 50  # chunks before a progress bar is worth showing


def _universe(owner: str, universe: Any) -> tuple[np.ndarray, np.ndarray]:
    """Distinct sorted values of the universe and their multiplicities."""
    arr = check_finite_array(owner, "universe", universe).ravel()
    vals, caps = np.unique(arr, return_counts=True)
    return vals, caps.astype(np.int64)


def _counts_in(owner: str, data: Any, vals: np.ndarray, caps: np.ndarray) -> np.ndarray:
    arr = check_finite_array(owner, "data", data).ravel()
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


def _n_submultisets(caps: np.ndarray, size: int) -> int:
    """How many sub-multisets of the given size (coefficient of t^size in prod (1+...+t^c))."""
    poly = [1] + [0] * size
    for c in caps.tolist():
        new = [0] * (size + 1)
        for s, v in enumerate(poly):
            if v:
                for j in range(0, min(c, size - s) + 1):
                    new[s + j] += v
        poly = new
    return poly[size]


def _submultisets(caps: np.ndarray, size: int) -> np.ndarray:
    """All count vectors ``0 <= c <= caps`` with ``c.sum() == size`` (rows)."""
    nv = caps.size
    # suffix capacities prune impossible branches
    suffix = np.concatenate((np.cumsum(caps[::-1])[::-1], [0])).tolist()
    capl = caps.tolist()
    out: list[list[int]] = []
    cur = [0] * nv

    def rec(i: int, left: int) -> None:
        if left == 0:
            out.append(cur.copy())
            return
        if i == nv or suffix[i] < left:
            return
        for j in range(min(capl[i], left), -1, -1):
            cur[i] = j
            rec(i + 1, left - j)
        cur[i] = 0

    rec(0, size)
    if not out:
        return np.zeros((0, nv), dtype=np.int64)
    return np.asarray(out, dtype=np.int64)


def _rows(vals: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Expand count vectors (all of one total) into sorted datasets, one per row."""
    n_rows = counts.shape[0]
    size = int(counts[0].sum()) if n_rows else 0
    if n_rows == 0 or size == 0:
        return np.zeros((n_rows, size))
    return np.repeat(np.tile(vals, n_rows), counts.ravel()).reshape(n_rows, size)


def _evaluate(q: Query, vals: np.ndarray, counts: np.ndarray) -> np.ndarray:
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
    d = fx - fy
    if d.ndim == 1 or norm is None:
        return np.abs(d)
    if norm == "l1":
        return np.abs(d).sum(axis=-1)
    return np.sqrt((d * d).sum(axis=-1))


def _too_many(owner: str, what: str, total: int, limit: int) -> ParameterError:
    return ParameterError(
        f"{owner}: the enumeration would visit {total:,} {what}, more than "
        f"`max_datasets`={limit:,}; use a smaller universe, size or distance, or raise "
        "`max_datasets` if you can wait"
    )


def _progress(total: int, show: bool | None, desc: str) -> Any:
    if show is None:
        show = total >= _PROGRESS_AFTER and sys.stderr.isatty()
    if not show:
        return None
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="chunk", file=sys.stderr, leave=False)


def _vector_norm(owner: str, q: Query, norm: str | None) -> str | None:
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
    query : Query, str or callable
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
    vals, caps = _universe(owner, universe)
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
    counts_per = {s: _n_submultisets(caps, s) for s in sizes}
    total = sum(counts_per.values())
    if total > max_datasets:
        raise _too_many(owner, "datasets", total, max_datasets)
    ys = np.concatenate([_submultisets(caps, s) for s in sizes])
    fy = _evaluate(q, vals, ys)
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
    return best


def _ball(
    counts: np.ndarray, caps: np.ndarray, k: int, relation: str, min_size: int
) -> Iterator[np.ndarray]:
    """Count vectors of every neighbour at multiset distance 1..k (removals then additions)."""
    n = int(counts.sum())
    room = caps - counts
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


def _ball_size(counts: np.ndarray, caps: np.ndarray, k: int, relation: str) -> int:
    n = int(counts.sum())
    room = caps - counts
    total = 0
    for r in range(0, min(k, n) + 1):
        adds_range = [r] if relation == "bounded" else range(0, k - r + 1)
        for a in adds_range:
            total += _n_submultisets(counts, r) * _n_submultisets(room, a)
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
    query : Query, str or callable
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
    vals, caps = _universe(owner, universe)
    counts = _counts_in(owner, data, vals, caps)
    n = int(counts.sum())
    if n < max(q.min_size, 1):
        raise ParameterError(f"{owner}: `data` must hold at least 1 value for {q.name!r}")
    total = _ball_size(counts, caps, k, rel)
    if total > max_datasets:
        raise _too_many(owner, "neighbouring datasets", total, max_datasets)
    fx = _evaluate(q, vals, counts[None, :])[0]
    best = 0.0
    for ys in _ball(counts, caps, k, rel, q.min_size):
        fy = _evaluate(q, vals, ys)
        best = max(best, float(np.max(_diff(fx[None, ...], fy, nrm))))
    return best


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
    query : Query, str or callable
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
    vals, caps = _universe(owner, universe)
    counts = _counts_in(owner, data, vals, caps)
    total = _ball_size(counts, caps, kk + 1, rel)
    if total > max_datasets:
        raise _too_many(owner, "neighbouring datasets", total, max_datasets)
    ys = np.concatenate([counts[None, :], *_ball(counts, caps, kk + 1, rel, q.min_size)])
    fy = _evaluate(q, vals, ys)
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
    return best
