"""The Session's engine fixture: the same test on every engine the Session accepts.

``ENGINES`` maps a name to a function turning a Polars DataFrame into that engine's data.
Adding an engine means adding one entry here (Spark's needs the shared `spark` fixture).
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


def _spark(df: pl.DataFrame, tmp: Path) -> Any:  # replaced by the fixture (needs `spark`)
    raise AssertionError("the spark engine is built by the `engine` fixture")


ENGINES: dict[str, Callable[[pl.DataFrame, Path], Any]] = {
    "polars": lambda df, tmp: df,
    "polars-lazy": lambda df, tmp: df.lazy(),
    "pandas": lambda df, tmp: df.to_pandas(),
    "pyarrow": lambda df, tmp: df.to_arrow(),
    "duckdb": _duckdb,
    "csv": _csv,
    "parquet": _parquet,
    "spark": _spark,
}


@pytest.fixture(
    params=[pytest.param(e, marks=pytest.mark.spark) if e == "spark" else e for e in ENGINES]
)
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[pl.DataFrame], Any]:
    """``engine(df)`` gives ``df`` as the parametrised engine's data (Spark: a DataFrame in
    the test run's shared local Spark, skipped with the reason if pyspark or Java is missing)."""
    if request.param == "spark":
        convert = request.getfixturevalue("to_spark")
        return lambda df: convert(df)
    make = ENGINES[request.param]
    return lambda df: make(df, tmp_path)


def _to_polars(frame: Any) -> pl.DataFrame:
    if isinstance(frame, pl.DataFrame):
        return frame
    if hasattr(frame, "toArrow"):  # a Spark DataFrame (the released rows, collected here)
        out = pl.from_arrow(frame.toArrow())
        assert isinstance(out, pl.DataFrame)
        return out
    return pl.from_pandas(frame)


@pytest.fixture
def to_polars() -> Callable[[Any], pl.DataFrame]:
    """``to_polars(released)``: a released frame (Polars, pandas or Spark) as Polars."""
    return _to_polars
