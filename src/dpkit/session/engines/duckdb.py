"""The DuckDB adapter: the data stays in DuckDB; ranking is a SQL window over a salted hash."""

from __future__ import annotations

import sys
from typing import Any

import narwhals as nw

from dpkit.errors import ParameterError
from dpkit.session.engines._base import Engine, RankMethod

__all__ = ["DuckDBEngine", "quote"]


def quote(name: str) -> str:
    """A DuckDB identifier: double quotes, inner quotes doubled."""
    return '"' + name.replace('"', '""') + '"'


class DuckDBEngine(Engine):
    """DuckDB relation (``duckdb.DuckDBPyRelation``)."""

    name = "duckdb"
    accepts = "duckdb.DuckDBPyRelation"

    def matches(self, data: Any) -> bool:
        duckdb = sys.modules.get("duckdb")
        return duckdb is not None and isinstance(data, duckdb.DuckDBPyRelation)

    def to_lazy(self, data: Any) -> nw.LazyFrame[Any]:
        return nw.from_native(data)

    def check_column(self, owner: str, name: str, role: str, dtype: Any = None) -> None:
        """Also refuse a dotted name as a key or a unit (narwhals' DuckDB ``group_by`` reads
        ``"g.h"`` as column ``h`` of a table ``g``) and an INTERVAL key (Polars cannot read
        DuckDB's intervals back, so the grouped counts would fail after the spend)."""
        super().check_column(owner, name, role, dtype)
        if role == "key" and isinstance(dtype, nw.Duration):
            raise ParameterError(
                f"{owner}: on DuckDB an INTERVAL column ({name!r}) cannot be a group key; "
                "group by a number derived from it (for example its days)"
            )
        if role in ("key", "unit") and "." in name:
            raise ParameterError(
                f"{owner}: on DuckDB a column whose name contains '.' ({name!r}) cannot be "
                f"{'a group key' if role == 'key' else 'the privacy unit'}; rename it "
                "(for example rel.project(...) with an alias)"
            )

    def with_rank(
        self,
        frame: nw.LazyFrame[Any],
        *,
        partition: str,
        hash_columns: list[str],
        tie_columns: list[str],
        salt: tuple[int, ...],
        method: RankMethod,
        name: str,
    ) -> nw.LazyFrame[Any]:
        rel = frame.to_native()
        cols = ", ".join(quote(c) for c in hash_columns)
        # DuckDB's hash() has no key: mix the salt in and hash twice (its 64-bit finaliser
        # is a bijection, so distinct salts give unrelated orders)
        s0, s1 = salt[0] % 2**64, salt[1] % 2**64
        h = f"hash(xor(hash(xor(hash({cols}), {s0}::UBIGINT)), {s1}::UBIGINT))"
        order = ", ".join([h, *(quote(c) for c in tie_columns)])
        fn = "row_number" if method == "ordinal" else "dense_rank"
        sql = f"*, CAST({fn}() OVER (PARTITION BY {quote(partition)} ORDER BY {order}) AS BIGINT)"
        return nw.from_native(rel.project(f"{sql} AS {quote(name)}"))

    def with_bins(
        self, frame: nw.LazyFrame[Any], column: str, edges: tuple[float, ...], name: str
    ) -> nw.LazyFrame[Any]:
        """An ``ASOF LEFT JOIN`` of the rows with the inner edges numbered from 1: each row
        meets the largest edge at or below its value, whose number is the bin (no edge: 0).
        DuckDB sorts both sides once instead of comparing each row with every edge. Edges
        are written as strings cast to DOUBLE (correctly rounded, so each is the float
        given); ``+ 0.0`` makes -0.0 0.0."""
        inner = edges[1:-1]
        if not inner:
            return super().with_bins(frame, column, edges, name)
        values = ", ".join(f"'{float(e) + 0.0!r}'::DOUBLE" for e in inner)
        view = "__dpkit_binned_rows"
        sql = (
            f"SELECT r.*, coalesce(k.i, 0)::BIGINT AS {quote(name)} FROM {view} AS r "
            f"ASOF LEFT JOIN (SELECT unnest([{values}]) AS e, "
            f"unnest(range(1, {len(inner) + 1})) AS i) AS k "
            f"ON (CAST(r.{quote(column)} AS DOUBLE) + 0.0) >= k.e"
        )
        return nw.from_native(frame.to_native().query(view, sql))
