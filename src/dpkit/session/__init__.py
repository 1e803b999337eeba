"""Differentially private queries on DataFrames: :class:`Session`, aggregates, queries.

``dp.Session(data, privacy_unit=..., budget=...)`` runs queries on the user's own engine
(Polars, pandas, PyArrow, DuckDB, CSV/Parquet files) through narwhals; only aggregates reach
Python, where dpkit's exact samplers add the noise. See docs/architecture.md (the session
layer) and the :class:`~dpkit.session.Query` docstring for the guarantee.
"""

from dpkit.session.aggregates import (
    Aggregate,
    count,
    histogram,
    mean,
    median,
    quantile,
    std,
    sum,
    var,
)
from dpkit.session.query import Query
from dpkit.session.result import QueryRelease
from dpkit.session.session import Session

__all__ = [
    "Aggregate",
    "Query",
    "QueryRelease",
    "Session",
    "count",
    "histogram",
    "mean",
    "median",
    "quantile",
    "std",
    "sum",
    "var",
]
