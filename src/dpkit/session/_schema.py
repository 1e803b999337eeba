"""The public schema of a Session: declared types (``schema=``) and how they are applied.

A query is checked against a schema before anything is spent, so the schema must be public:
it may not depend on one record. The engines' own schemas are declared (Polars, Arrow,
DuckDB, Spark, Parquet); the types an engine infers from the values follow a rule no record
can flip (:meth:`dpkit.session.engines.Engine.public_schema`: pandas, CSV). ``schema=``
declares a column's type outright; the data's values are then converted with the total cast
(:func:`dpkit.session._total.total_cast`: a value that does not convert is null), lazily,
in every release.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import narwhals as nw
import polars as pl

from dpkit.errors import ParameterError
from dpkit.session._casts import total_cast

__all__ = ["TYPE_NAMES", "declared_casts", "declared_types"]

#: the type names ``schema=`` accepts besides narwhals and Polars types (any case)
TYPE_NAMES: dict[str, Any] = {
    "int8": nw.Int8(),
    "int16": nw.Int16(),
    "int32": nw.Int32(),
    "int64": nw.Int64(),
    "uint8": nw.UInt8(),
    "uint16": nw.UInt16(),
    "uint32": nw.UInt32(),
    "uint64": nw.UInt64(),
    "float32": nw.Float32(),
    "float64": nw.Float64(),
    "float": nw.Float64(),
    "int": nw.Int64(),
    "string": nw.String(),
    "str": nw.String(),
    "utf8": nw.String(),
    "bool": nw.Boolean(),
    "boolean": nw.Boolean(),
    "date": nw.Date(),
    "datetime": nw.Datetime("us"),
}


def _dtype(owner: str, column: str, spec: Any) -> Any:
    """A narwhals type from a narwhals or Polars type (class or instance) or a name."""
    if isinstance(spec, str):
        found = TYPE_NAMES.get(spec.lower())
        if found is None:
            raise ParameterError(
                f"{owner}: unknown type name {spec!r} for column {column!r} in `schema`; use "
                f"one of {', '.join(sorted(TYPE_NAMES))}, or a narwhals or Polars type"
            )
        return found
    if isinstance(spec, type) and issubclass(spec, nw.dtypes.DType):
        return spec()
    if isinstance(spec, nw.dtypes.DType):
        return spec
    if isinstance(spec, pl.DataType) or (isinstance(spec, type) and issubclass(spec, pl.DataType)):
        frame = nw.from_native(pl.DataFrame(schema={"c": spec}))
        return frame.schema["c"]
    raise TypeError(
        f"{owner}: `schema` maps column names to types (a narwhals or Polars type, or a name "
        f"such as 'int64'); got {type(spec).__name__} for column {column!r}"
    )


def declared_types(owner: str, schema: Any, natural: Mapping[str, Any]) -> dict[str, Any]:
    """The declared types of ``schema`` (a mapping, or None for none), each checked: a
    known column, a type the total cast reaches from the column's ``natural`` type."""
    if schema is None:
        return {}
    if not isinstance(schema, Mapping) and not isinstance(schema, pl.Schema):
        raise TypeError(
            f"{owner}: `schema` must be a mapping of column names to types, for example "
            f"{{'age': 'int64'}}; got {type(schema).__name__}"
        )
    out: dict[str, Any] = {}
    for column, spec in dict(schema).items():
        if column not in natural:
            raise ParameterError(
                f"{owner}: `schema` names {column!r}, which the data does not have; it has "
                f"{', '.join(map(repr, natural))}"
            )
        target = _dtype(owner, column, spec)
        total_cast(nw.col(column), natural[column], target, f"{owner} (schema[{column!r}])")
        out[column] = target
    return out


def declared_casts(natural: Mapping[str, Any], declared: Mapping[str, Any]) -> dict[str, Any]:
    """The total casts (column -> expression on the ``natural`` types) that give every
    declared column its declared type."""
    return {c: total_cast(nw.col(c), natural[c], t) for c, t in declared.items() if natural[c] != t}
