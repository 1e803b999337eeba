"""Sensitivity tables: several queries x distances x relations, as rows (CLI, demo, plots)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from dpkit.errors import ParameterError
from dpkit.sensitivity._checks import check_distance, check_relation, query_of
from dpkit.sensitivity.empirical import DEFAULT_MAX_DATASETS, empirical_global, empirical_local

__all__ = ["SweepRow", "sweep"]


@dataclass(frozen=True, slots=True)
class SweepRow:
    """One cell of a sensitivity table.

    Attributes
    ----------
    query
        Query name.
    relation
        ``"bounded"`` or ``"unbounded"``.
    distance
        Hamming radius ``k``.
    scope
        ``"global"`` (over every dataset of the size) or ``"local"`` (at the given data).
    sensitivity
        The brute-force value over the universe.
    """

    query: str
    relation: str
    distance: int
    scope: str
    sensitivity: float

    def as_dict(self) -> dict[str, Any]:
        """The row as a plain dict (for JSON).

        Returns
        -------
        dict
            Keys ``query``, ``relation``, ``distance``, ``scope`` and ``sensitivity``.
        """
        return {
            "query": self.query,
            "relation": self.relation,
            "distance": self.distance,
            "scope": self.scope,
            "sensitivity": self.sensitivity,
        }


def sweep(
    queries: Iterable[Any],
    universe: Any,
    *,
    size: int | None = None,
    data: Any = None,
    distances: Iterable[int] = (1,),
    relations: Sequence[str] = ("bounded", "unbounded"),
    max_datasets: int = DEFAULT_MAX_DATASETS,
) -> list[SweepRow]:
    """Empirical sensitivity for every query, distance and relation, over one universe.

    Parameters
    ----------
    queries : iterable of Statistic, str or callable
        The queries (rows of the table).
    universe : array_like
        The multiset records are drawn from.
    size : int, optional
        Dataset size for global sensitivity (exactly one of ``size`` and ``data``).
    data : array_like, optional
        A dataset drawn from the universe, for local sensitivity.
    distances : iterable of int, default (1,)
        Hamming radii, each ``>= 1``.
    relations : sequence of str, default both
        Neighbour relations.
    max_datasets : int
        Passed on to the oracles.

    Returns
    -------
    list of SweepRow
        One row per (query, relation, distance), in that nesting order.

    Raises
    ------
    ParameterError
        Neither or both of ``size`` and ``data``; anything the oracles reject.

    Notes
    -----
    Calls :func:`empirical_global` or :func:`empirical_local` once per cell; see them for the
    complexity.

    Examples
    --------
    >>> from dpkit.sensitivity import sweep
    >>> rows = sweep(["median"], [1, 2, 3, 10, 11], size=3, distances=[1, 2])
    >>> [(r.relation, r.distance, r.sensitivity) for r in rows]
    [('bounded', 1, 8.0), ('bounded', 2, 8.0), ('unbounded', 1, 4.5), ('unbounded', 2, 9.0)]
    """
    owner = "sweep"
    if (size is None) == (data is None):
        raise ParameterError(
            f"{owner}: pass exactly one of `size` (global sensitivity) and `data` (local)"
        )
    ks = [check_distance(owner, k) for k in distances]
    rels = [check_relation(owner, r) for r in relations]
    rows = []
    for query in queries:
        q = query_of(owner, query)
        for rel in rels:
            for k in ks:
                if size is not None:
                    val = empirical_global(
                        q, universe, size, distance=k, relation=rel, max_datasets=max_datasets
                    )
                    scope = "global"
                else:
                    val = empirical_local(
                        q, data, universe, distance=k, relation=rel, max_datasets=max_datasets
                    )
                    scope = "local"
                rows.append(SweepRow(q.name, rel, k, scope, val))
    return rows
