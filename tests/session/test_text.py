"""A query's builder text: readable Python that builds the same query again."""

from __future__ import annotations

import datetime

import narwhals as nw
import polars as pl
import pytest

import dpkit as dp
from dpkit.session._text import aggregate_text, expr_text


@pytest.mark.parametrize(
    ("expr", "text"),
    [
        (nw.col("Age") >= 18, 'nw.col("Age") >= 18'),
        (~nw.col("x").is_null(), '~nw.col("x").is_null()'),
        ((nw.col("Age") / 10).floor() * 10, '(nw.col("Age") / 10).floor() * 10'),
        (
            (nw.col("a") > 1) & nw.col("s").is_in(["F", "M"]),
            '(nw.col("a") > 1) & nw.col("s").is_in(other=["F", "M"])',
        ),
        (nw.col("s").str.starts_with("A"), 'nw.col("s").str.starts_with("A")'),
        (nw.col("a").cast(nw.Int64), 'nw.col("a").cast(dtype=nw.Int64)'),
        (
            nw.when(nw.col("a") > 1).then(2).otherwise(3),
            'nw.when(nw.col("a") > 1).then(2).otherwise(3)',
        ),
        (nw.col("d") > datetime.date(2020, 1, 2), 'nw.col("d") > datetime.date(2020, 1, 2)'),
        (-nw.col("a") + 1, '(-nw.col("a")) + 1'),
    ],
)
def test_expressions_read_as_the_python_that_builds_them(expr: nw.Expr, text: str) -> None:
    assert expr_text(expr) == text


@pytest.mark.parametrize(
    ("agg", "text"),
    [
        (dp.count(), "dp.count()"),
        (dp.count("x", name="n"), 'dp.count("x", name="n")'),
        (dp.mean("Age", bounds=(0, 100)), 'dp.mean("Age", bounds=(0.0, 100.0))'),
        (
            dp.std("Age", bounds=(0, 100), weight=2),
            'dp.std("Age", bounds=(0.0, 100.0), weight=2.0)',
        ),
        (dp.sum("x", bounds="auto"), 'dp.sum("x", bounds="auto")'),
        (
            dp.var("x", bounds="auto", bounds_method="tail", lower=0),
            'dp.var("x", bounds="auto", bounds_method="tail", lower=0.0)',
        ),
        (dp.median("h", bounds=(0, 99)), 'dp.median("h", bounds=(0.0, 99.0))'),
        (
            dp.quantile("h", [0.1, 0.9], bounds=(0, 99)),
            'dp.quantile("h", [0.1, 0.9], bounds=(0.0, 99.0))',
        ),
        (dp.histogram("s", bins=["a", "b"]), 'dp.histogram("s", bins=["a", "b"])'),
        (dp.mean("x", bounds=(0, 1), fill=0.5), 'dp.mean("x", bounds=(0.0, 1.0), fill=0.5)'),
    ],
)
def test_aggregates_read_as_the_call_that_makes_them(agg: object, text: str) -> None:
    assert aggregate_text(agg) == text


def _adult_like() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "pid": [1, 1, 2, 3, 4, 4, 5] * 20,
            "Age": [20, 30, 40, 50, 60, 70, 80] * 20,
            "Sex": ["F", "M", "F", "M", "F", "M", "F"] * 20,
            "Education": ["a", "b", "c", "a", "b", "c", "a"] * 20,
        }
    )


def test_the_text_builds_the_same_query_again() -> None:
    # the query's text, evaluated with s, nw and dp, plans exactly as the query does
    s = dp.Session(_adult_like(), privacy_unit="pid", max_rows_per_unit=3, budget=dp.PureDP(1.0))
    queries = [
        s.query()
        .with_columns(decade=(nw.col("Age") / 10).floor() * 10)
        .filter(nw.col("decade") >= 30, nw.col("Sex").is_in(["F"]))
        .group_by("Education", keys=["a", "b", "c"])
        .agg(dp.count(), dp.mean("Age", bounds=(0, 100), weight=2)),
        s.query(max_rows_per_unit=2, max_groups_per_unit=1)
        .group_by("Sex", "Education", keys=[("F", "a"), ("M", "b")])
        .agg(dp.quantile("Age", [0.25, 0.75], bounds=(0, 100))),
        s.query().group_by("Sex", keys=None, pre_threshold=3).agg(dp.sum("Age", bounds="auto")),
        s.query(max_rows_per_unit="auto").agg(dp.histogram("Age", bins=[0, 50, 100])),
    ]
    for q in queries:
        # the chain, one call per line, is an expression once parenthesised
        again = eval(f"({q.text()})", {"s": s, "nw": nw, "dp": dp})
        assert again.text() == q.text()
        kw = {"epsilon": 0.5, "delta": 1e-6}
        assert str(again.explain(**kw)) == str(q.explain(**kw))


def test_long_public_key_lists_are_shortened() -> None:
    s = dp.Session(pl.DataFrame({"k": list(range(40))}), budget=dp.PureDP(1.0))
    text = s.query().group_by("k", keys=list(range(40))).agg(dp.count()).text()
    assert "... 32 more" in text and "39" not in text
