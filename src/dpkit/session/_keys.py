"""The public keys of a ``group_by``: read from a list or a frame, checked against the schema.

Everything here is checked before anything is spent, from the schema and the analyst's keys
only (both public): the key columns (and the privacy unit) must be groupable, and public keys
must fit their column's type; the keys cast to those types are what every later step uses.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import narwhals as nw
import polars as pl

from dpkit.errors import ParameterError

__all__ = ["check_key_types", "public_frame", "public_keys"]


def public_frame(frame: Any, refusal: str) -> pl.DataFrame:
    """A public frame (keys, a public table) as a Polars DataFrame: Polars as it is (a
    LazyFrame collected), Spark through Arrow, anything else narwhals reads; ``TypeError``
    with ``refusal`` for an object that is not a frame. Public, so collected whole."""
    if isinstance(frame, pl.LazyFrame):
        frame = frame.collect()
    if isinstance(frame, pl.DataFrame):
        return frame
    if hasattr(frame, "toArrow"):  # a Spark DataFrame
        table = pl.from_arrow(frame.toArrow())
        assert isinstance(table, pl.DataFrame)
        return table
    try:
        nwf = nw.from_native(frame)
    except TypeError:
        raise TypeError(refusal) from None
    if isinstance(nwf, nw.LazyFrame):
        nwf = nwf.collect()
    out = nwf.to_polars()
    assert isinstance(out, pl.DataFrame)
    return out


def public_keys(by: tuple[str, ...], keys: Any) -> pl.DataFrame:
    if (
        isinstance(keys, pl.DataFrame | pl.LazyFrame)
        or hasattr(keys, "__dataframe__")
        or (type(keys).__module__.split(".")[0] in ("pandas", "pyarrow", "duckdb", "pyspark"))
    ):
        out = public_frame(keys, f"group_by: `keys` is not a frame; got {type(keys).__name__}")
        missing = [c for c in by if c not in out.columns]
        if missing:
            raise ParameterError(f"group_by: the `keys` frame lacks column(s) {missing}")
        out = out.select(list(by))
    elif isinstance(keys, Sequence) and not isinstance(keys, str):
        rows = list(keys)
        if len(by) == 1:
            rows = [r[0] if isinstance(r, tuple) and len(r) == 1 else r for r in rows]
            out = pl.DataFrame({by[0]: rows}, strict=False)
        else:
            if not all(isinstance(r, tuple | list) and len(r) == len(by) for r in rows):
                raise ParameterError(
                    f"group_by: with {len(by)} key columns, `keys` must be a list of "
                    f"{len(by)}-tuples or a frame; got {keys!r}"
                )
            out = pl.DataFrame(rows, schema=list(by), orient="row", strict=False)
    else:
        raise TypeError(
            "group_by: `keys` must be None (chosen privately), a list of keys or a frame of "
            f"key columns; got {type(keys).__name__}"
        )
    if out.is_duplicated().any():
        raise ParameterError("group_by: public `keys` must be distinct")
    return out


def check_key_types(
    schema: Any, by: tuple[str, ...], keys: pl.DataFrame | None, unit: str | None
) -> pl.DataFrame | None:
    """Refuse, before anything is spent, key columns (and a privacy unit) that cannot be
    grouped (nested or untyped values: TypeError) and public keys that do not fit their
    column's type (ParameterError): keys that do not cast to it, or that the cast changes
    (non-integral numbers for an integer column, ``"01"`` for one, a datetime with a time
    for a date column: the cast back differs). Returns the keys cast to the columns' types,
    which every later step uses. The schema is public; the data is not read."""
    roles = [(c, "a group key", "group_by") for c in by]
    if unit is not None:
        roles.append((unit, "the privacy unit", "Session"))
    for c, role, owner in roles:
        dtype = schema[c]
        if dtype.is_nested() or isinstance(dtype, nw.Object | nw.Unknown):
            raise TypeError(
                f"{owner}: column {c!r} of type {dtype} cannot be {role} (lists, structs, "
                "arrays and untyped objects are not supported); use a string or number "
                "derived from it, computed before the Session"
            )
    if keys is None:
        return None
    cast: dict[str, pl.Series] = {}
    for c in by:
        dtype = schema[c]
        target = nw.String() if isinstance(dtype, nw.Categorical | nw.Enum) else dtype
        given = keys[c]
        if dtype.is_integer() and given.dtype.is_float():
            finite = given.drop_nulls()
            if not finite.is_finite().all() or not (finite == finite.floor()).all():
                raise ParameterError(
                    f"group_by: the public `keys` of the integer column {c!r} must be whole "
                    f"numbers; got {finite.filter(finite != finite.floor()).head(3).to_list()}"
                )
        try:
            typed = nw.from_native(keys.select(c)).select(nw.col(c).cast(target)).to_native()[c]
            same = bool(typed.cast(given.dtype).eq_missing(given).all())
        except Exception:  # the cast's own error type (the keys are public)
            same = False
        if not same:
            raise ParameterError(
                f"group_by: the public `keys` of column {c!r} ({given.dtype}) do not fit its "
                f"type {dtype}; give keys of that type (for example datetime.date values for "
                "a date column)"
            )
        cast[c] = typed
    return keys.with_columns(cast[c].alias(c) for c in by)
