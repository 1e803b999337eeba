"""What the engine computes per group for an aggregate: four kinds of per-group figures.

Each is an exact integer: a sum of integer-valued floats below ``2**53`` (exact in any order),
a count of rows or of non-null values, or a count of distinct privacy units.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import narwhals as nw

__all__ = [
    "CleanColumns",
    "CountOf",
    "DistinctUnits",
    "Rows",
    "Summed",
    "aggregation",
    "digits",
    "split_for",
]


@dataclass(frozen=True)
class Summed:
    """The per-group sum of a row-level expression (integer-valued; nulls skipped).

    With ``centre``, the engine sums ``expr`` and the figure is ``sum - centre * count``,
    ``count`` naming the :class:`CountOf` column of the same values (exact Int64
    arithmetic on the exact sum): the sum of ``expr - centre`` without its subtraction on
    every row.

    ``bound`` is the largest ``|expr|`` of one row (public: from the lattice). A float64 sum
    of such values is exact while a group's rows times ``bound`` stay below ``2**53``; past
    that, :func:`dpkit.session._engine.aggregate_table` sums the values' digits instead
    (:func:`digits`), so the figure is exact whatever the size of the table.
    """

    expr: nw.Expr
    centre: int = 0
    count: str | None = None
    bound: int = 2**52


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


def split_for(rows: int, bound: int) -> tuple[int, int] | None:
    """How to sum exactly at most ``rows`` values of magnitude at most ``bound``: None when
    float64 sums are exact (``rows * bound <= 2**53``), else ``(bits, count)``, their
    base-``2**bits`` digits, each summed as an Int64 (the digit sums stay below ``2**62``:
    ``rows * 2**bits <= 2**62``, and the signed top digit is at most ``2**bits`` in
    magnitude)."""
    if rows * bound <= 2**53:
        return None
    bits = max(1, 62 - max(rows, 1).bit_length())
    count = 1
    while bound // 2 ** (bits * (count - 1)) + 1 > 2**bits:
        count += 1
    return bits, count


def digits(expr: nw.Expr, bits: int, count: int) -> list[nw.Expr]:
    """The base-``2**bits`` digits of an integer-valued Float64 ``expr`` (``|expr| < 2**53``;
    best a column, which each digit reads twice), lowest first, as Int64 (0 for a null,
    which adds nothing): ``count - 1`` digits ``floor(v / B**j) - B floor(v / B**(j + 1))``
    in ``[0, B)`` and a signed top digit ``floor(v / B**(count - 1))``, so that
    ``v = sum(d_j B**j)``. Every step is exact in float64 (a division by a power of two, a
    floor, a difference of integers below ``2**53``)."""
    base = float(2**bits)
    out = []
    for j in range(count):
        low = (expr / base**j).floor()
        if j < count - 1:
            low = low - (expr / base ** (j + 1)).floor() * base
        out.append(low.fill_null(0.0).cast(nw.Int64()))
    return out


class CleanColumns(frozenset[str]):
    """Column names with no null and no NaN in the table, with each one's ``spans``:
    ``(min, max)`` over the whole table, and the table's number of ``rows`` (None if not
    known): no group of any query has more. Empty: nothing known."""

    spans: dict[str, tuple[Any, Any]]
    rows: int | None

    def __new__(
        cls, names: Any, spans: dict[str, tuple[Any, Any]], rows: int | None
    ) -> CleanColumns:
        out = super().__new__(cls, names)
        out.spans = spans
        out.rows = rows
        return out
