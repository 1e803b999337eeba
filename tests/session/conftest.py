"""The Session's engine fixture: the same test on every engine the Session accepts.

``ENGINES`` maps a name to a function turning a Polars DataFrame into that engine's data.
Adding an engine (Spark, issue 12) means adding one entry here.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import pytest


def _duckdb(df: pl.DataFrame, tmp: Path) -> Any:
    import duckdb

    con = duckdb.connect()
    return con.from_arrow(df.to_arrow())


def _csv(df: pl.DataFrame, tmp: Path) -> Any:
    path = tmp / "data.csv"
    df.write_csv(path)
    return str(path)


def _parquet(df: pl.DataFrame, tmp: Path) -> Any:
    path = tmp / "data.parquet"
    df.write_parquet(path)
    return path


ENGINES: dict[str, Callable[[pl.DataFrame, Path], Any]] = {
    "polars": lambda df, tmp: df,
    "polars-lazy": lambda df, tmp: df.lazy(),
    "pandas": lambda df, tmp: df.to_pandas(),
    "pyarrow": lambda df, tmp: df.to_arrow(),
    "duckdb": _duckdb,
    "csv": _csv,
    "parquet": _parquet,
}


@pytest.fixture(params=list(ENGINES))
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[pl.DataFrame], Any]:
    """``engine(df)`` gives ``df`` as the parametrised engine's data."""
    make = ENGINES[request.param]
    return lambda df: make(df, tmp_path)
