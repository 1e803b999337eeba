"""What the engine computes per group for an aggregate: four kinds of per-group figures.

Each is an exact integer: a sum of integer-valued floats below ``2**53`` (exact in any order),
a count of rows or of non-null values, or a count of distinct privacy units.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import narwhals as nw

__all__ = ["CountOf", "DistinctUnits", "Rows", "Summed", "aggregation"]


@dataclass(frozen=True)
class Summed:
    """The per-group sum of a row-level expression (integer-valued; nulls skipped).

    With ``centre``, the engine sums ``expr`` and the figure is ``sum - centre * count``,
    ``count`` naming the :class:`CountOf` column of the same values (exact Int64
    arithmetic on the exact sum): the sum of ``expr - centre`` without its subtraction on
    every row.
    """

    expr: nw.Expr
    centre: int = 0
    count: str | None = None


@dataclass(frozen=True)
class CountOf:
    """The per-group number of non-null values of another :class:`Summed` column."""

    key: str


@dataclass(frozen=True)
class Rows:
    """The per-group number of rows."""


@dataclass(frozen=True)
class DistinctUnits:
    """The per-group number of distinct values of ``column`` (key selection)."""

    column: str


def aggregation(key: str, spec: Any) -> tuple[str, str, str | None]:
    """The simple aggregation for ``spec`` as ``(name, op, column)`` for
    :meth:`dpkit.session.engines.Engine.aggregate` (row columns are computed beforehand)."""
    if isinstance(spec, Rows):
        return key, "len", None
    if isinstance(spec, DistinctUnits):
        return key, "n_unique", spec.column
    if isinstance(spec, CountOf):
        return key, "count", spec.key
    return key, "sum", key
