"""The SQL names of a Session's tables: its own (``FROM data``) and its public ones.

Kept apart from the compiler so that making a Session never needs the SQL parser.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import polars as pl

from dpkit.errors import ParameterError
from dpkit.session._keys import public_frame

__all__ = ["check_name", "check_public"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def check_name(name: Any) -> str:
    """The table name a query reads the Session's data by (``FROM name``)."""
    if not isinstance(name, str):
        raise TypeError(f"Session: `name` must be a str (the SQL table name); got {name!r}")
    if not _NAME.fullmatch(name):
        raise ParameterError(
            f"Session: `name` must be an SQL name (letters, digits, _; not starting with a "
            f"digit); got {name!r}"
        )
    return name


def check_public(public: Any, name: str) -> dict[str, pl.DataFrame]:
    """Public tables (``name -> frame``) as Polars DataFrames: read now, since they are
    public (their rows may be read before any spend)."""
    if public is None:
        return {}
    if not isinstance(public, Mapping):
        raise TypeError(
            "Session: `public` must be a dict of table name -> frame (Polars, pandas, "
            f"PyArrow, ...); got {type(public).__name__}"
        )
    out: dict[str, pl.DataFrame] = {}
    seen = {name.lower()}
    for key, frame in public.items():
        check_name(key)
        if key.lower() in seen:
            raise ParameterError(
                f"Session: the public table name {key!r} is taken (by the private table "
                f"{name!r} or another public table, ignoring case); rename it"
            )
        seen.add(key.lower())
        out[key] = _to_polars(frame, key)
    return out


def _to_polars(frame: Any, key: str) -> pl.DataFrame:
    return public_frame(
        frame,
        f"Session: public table {key!r} must be a frame (Polars, pandas, PyArrow, DuckDB, "
        f"Spark); got {type(frame).__name__}",
    )
