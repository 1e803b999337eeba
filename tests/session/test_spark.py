"""The Session on PySpark: only aggregates reach the driver, quantiles from engine-side grid
counts, results as Spark DataFrames, public keys as a Spark frame.

The engine-comparison, bounding, exactness, privacy and validation tests run on Spark through
the ``engine`` fixture (tests/session/conftest.py); these are the Spark-only ones.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable, Iterator
from typing import Any

import narwhals as nw
import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import dpkit as dp
from dpkit._lattice import units
from dpkit.errors import InternalError
from dpkit.session.engines.spark import SparkEngine, aggregated_plan

pytestmark = pytest.mark.spark

#: the methods by which a classic PySpark DataFrame hands rows to the Python driver
_COLLECTORS = ("collect", "toArrow", "_collect_as_arrow", "toPandas", "toLocalIterator", "tail")


@pytest.fixture
def collected(spark: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[Any, int]]]:
    """Every DataFrame the test brings to the driver, with the number of rows it brought."""
    from pyspark.sql.classic.dataframe import DataFrame

    seen: list[tuple[Any, int]] = []
    for name in _COLLECTORS:
        original = getattr(DataFrame, name)

        def wrapper(self: Any, *a: Any, _original: Any = original, **kw: Any) -> Any:
            out = _original(self, *a, **kw)
            seen.append((self, len(out) if hasattr(out, "__len__") else out.num_rows))
            return out

        monkeypatch.setattr(DataFrame, name, wrapper)
    yield seen


def _big(spark: Any, n: int, groups: int) -> Any:
    """n rows generated inside Spark: group g, value x in [0, 100), person pid (10 rows each)."""
    from pyspark.sql import functions as F

    return spark.range(n).select(
        (F.col("id") % groups).alias("g"),
        ((F.col("id") * 7919) % 10_000 / 100.0).alias("x"),
        (F.col("id") % (n // 10)).alias("pid"),
    )


def test_only_aggregates_reach_the_driver_and_memory_stays_bounded(
    spark: Any, collected: list[tuple[Any, int]]
) -> None:
    """A count, a mean, a median and a histogram by 10 public keys on 4 * 10**6 generated rows
    (raw, 96 MB of numbers; the test session caps one action's result at 8 MB): every frame
    brought to the driver is an aggregation in Spark's optimised plan, brings at most one row
    per group, or per (group, grid point) / (group, bin), and the Python heap of the whole
    release peaks far below the raw table's size."""
    n, groups = 4_000_000, 10
    s = dp.Session(_big(spark, n, groups), budget=dp.PureDP(10.0), rng=1)
    median = dp.median("x", bounds=(0, 100))
    q = (
        s.query()
        .filter(nw.col("x") >= 1)
        .group_by("g", keys=list(range(groups)))
        .agg(dp.count(), dp.mean("x", bounds=(0, 100)), median)
    )
    # warm up on a small table first: the first release imports modules and fills caches
    # (about 2 MB of Python heap), which says nothing about the table's size
    small = dp.Session(_big(spark, 1000, groups), budget=dp.PureDP(10.0), rng=2)
    small.query().group_by("g", keys=list(range(groups))).agg(dp.count(), median).release(
        epsilon=1.0
    )
    small.histogram("x", bins=[0, 25, 50, 75, 100], by="g", keys=[0, 1], epsilon=1.0)
    collected.clear()
    tracemalloc.start()
    try:
        frame = q.release(epsilon=1.0)
        hist = s.histogram("x", bins=[0, 25, 50, 75, 100], by="g", keys=[0, 1], epsilon=1.0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 * 2**20  # 16 MB: the raw rows would need more than 90 MB
    grid = median.grid(groups)  # 10 public keys: 2**20 steps
    most = groups * (grid.high - grid.low + 1)  # grid counts: never more, whatever n is
    assert len(collected) >= 4  # the checks, the sums, the grid counts, the histogram
    for df, rows in collected:
        assert aggregated_plan(df) is True
        plan = df._jdf.queryExecution().optimizedPlan().toString()
        assert "Aggregate" in plan
        assert rows <= most
    assert sum(rows for _, rows in collected) < n / 100
    assert frame.count() == groups and hist.count() == 2 * 4  # Spark DataFrames


def test_the_engine_refuses_to_collect_raw_rows(spark: Any) -> None:
    engine = SparkEngine()
    rows = nw.from_native(spark.range(10))
    with pytest.raises(InternalError, match="not an aggregation"):
        engine.collect(rows)
    with pytest.raises(InternalError, match="not an aggregation"):
        engine.collect(rows.filter(nw.col("id") > 3).sort("id"))
    got = engine.collect(rows.group_by((nw.col("id") % 2).alias("p")).agg(nw.len()))
    assert sorted(got.rows()) == [(0, 5), (1, 5)]
    empty = nw.from_native(spark.range(10).limit(0)).group_by("id").agg(nw.len())
    assert engine.collect(empty).height == 0  # Spark folds it to an empty local relation


def test_quantiles_are_the_embedded_mechanism_on_the_grid(
    to_spark: Callable[[pl.DataFrame], Any], to_polars: Callable[[Any], pl.DataFrame]
) -> None:
    """Stated accuracy: Spark counts each group's values on the grid of width
    ``u = 2**floor(log2((upper - lower) / 2**24))`` for one group (here 2**-18 for bounds
    (0, 100)); the release is then *exactly* the embedded mechanism (dpkit.statistics.quantiles
    on the array) run on the values moved to that grid, at the same seed. The rounding moves
    every value by at most u / 2 and keeps their order, so each empirical quantile moves by
    at most u / 2: that is the whole accuracy cost of the engine-side summary, whatever the
    number of rows.
    """
    from dpkit import statistics

    rng = np.random.default_rng(3)
    x = np.concatenate([rng.normal(40, 12, 3000), rng.uniform(0, 100, 1000)]).clip(-5, 105)
    g = np.repeat(["a", "b"], 2000)
    df = pl.DataFrame({"g": g, "x": x})
    agg = dp.quantile("x", [0.1, 0.5, 0.9], bounds=(0, 100))
    grid = agg.grid()
    assert grid.unit == 2.0**-18
    got = to_polars(
        dp.Session(to_spark(df), budget=dp.PureDP(10.0), rng=4)
        .query()
        .agg(agg)
        .release(epsilon=1.0)
    )
    moved = units(x, grid.unit, 0.0, 100.0) * grid.unit
    assert np.abs(np.sort(moved) - np.sort(x.clip(0, 100))).max() <= grid.unit / 2
    want = statistics.quantiles(moved, [0.1, 0.5, 0.9], epsilon=1.0, bounds=(0, 100), rng=4)
    assert [got[f"x_{q:g}"][0] for q in (0.1, 0.5, 0.9)] == list(want.values)
    assert [got[f"x_{q:g}_low"][0] for q in (0.1, 0.5, 0.9)] == list(want.value_intervals[:, 0])
    # per group on Spark: the same release as the embedded default (Polars), at the same seed
    spark_q = dp.Session(to_spark(df), budget=dp.PureDP(10.0), rng=5).quantile(
        "x", [0.25, 0.75], bounds=(0, 100), by="g", keys=["a", "b"], epsilon=1.0
    )
    polars_q = dp.Session(df, budget=dp.PureDP(10.0), rng=5).quantile(
        "x", [0.25, 0.75], bounds=(0, 100), by="g", keys=["a", "b"], epsilon=1.0
    )
    assert_frame_equal(to_polars(spark_q), polars_q)


def test_release_is_a_spark_frame_in_the_data_session(
    spark: Any, to_spark: Callable[[pl.DataFrame], Any]
) -> None:
    df = pl.DataFrame({"Sex": ["F", "M", "F"] * 100, "Age": [30.0, 40.0, 50.0] * 100})
    s = dp.Session(to_spark(df), budget=dp.ApproxDP(5.0, 1e-6), rng=2)
    assert s.engine == "spark"
    rel = s.query().group_by("Sex", keys=["F", "M", "X"]).agg(dp.count()).measure(epsilon=1.0)
    assert rel.frame.sparkSession is spark
    assert rel.frame.columns == ["Sex", "count", "count_low", "count_high"]
    assert [r["Sex"] for r in rel.frame.collect()] == ["F", "M", "X"]  # sorted by key
    # public keys may themselves be a Spark frame (they are public: collected as they are)
    keys = spark.createDataFrame([("M",), ("F",)], ["Sex"])
    by_frame = s.query().group_by("Sex", keys=keys).agg(dp.count()).release(epsilon=1.0)
    assert [r["Sex"] for r in by_frame.collect()] == ["F", "M"]
    # private keys come back sorted too; nothing released is empty-typed
    none = s.query().group_by("Sex").agg(dp.count()).release(epsilon=0.01, delta=1e-12)
    assert none.count() == 0 and dict(none.dtypes)["Sex"] == "string"


def test_columns_differing_only_by_case_are_refused_before_the_spend(spark: Any) -> None:
    """Spark resolves names case-insensitively by default: with columns ``x`` and ``X`` every
    reference to either is ambiguous and the query would fail after its spend. Both are
    refused first (group key, value, privacy unit; duplicates too); other columns release,
    and with ``spark.sql.caseSensitive`` on the names are distinct and release."""
    sdf = spark.createDataFrame([(1, 2.0, 3.0), (2, 5.0, 4.0)], "x long, X double, y double")
    s = dp.Session(sdf, budget=dp.PureDP(1.0), rng=1)
    for q in (
        s.query().agg(dp.mean("x", bounds=(0, 10))),
        s.query().agg(dp.sum("X", bounds=(0, 10))),
        s.query().group_by("x").agg(dp.count()),
    ):
        with pytest.raises(dp.ParameterError, match=r"'[xX]' is ambiguous"):
            q.release(epsilon=0.25)
    with pytest.raises(dp.ParameterError, match="'x' is ambiguous"):
        dp.Session(sdf, privacy_unit="x", max_rows_per_unit=1, budget=dp.PureDP(1.0))
    dup = spark.createDataFrame([(1, 2, 3.0)], "g long, h long, y double").toDF("g", "g", "y")
    with pytest.raises(dp.ParameterError, match="'g' is ambiguous"):
        dp.Session(dup, budget=dp.PureDP(1.0)).query().group_by("g").agg(dp.count()).release(
            epsilon=0.25
        )
    assert s.accountant.spent == dp.PureDP(0.0)
    s.query().agg(dp.mean("y", bounds=(0, 10))).release(epsilon=0.25)
    sensitive = spark.conf.get("spark.sql.caseSensitive")
    spark.conf.set("spark.sql.caseSensitive", "true")
    try:
        s = dp.Session(sdf, budget=dp.PureDP(1.0), rng=1)
        out = s.query().group_by("x", keys=[1, 2]).agg(dp.sum("X", bounds=(0, 10)))
        assert out.release(epsilon=0.25).count() == 2
    finally:
        spark.conf.set("spark.sql.caseSensitive", sensitive)


def test_a_timestamp_ntz_key_keeps_its_type_and_wall_clock(spark: Any) -> None:
    """A TIMESTAMP_NTZ key came back as TIMESTAMP, shifted by the session's time zone (12:30
    read back as 17:30 under New York time). Public and private keys keep type and value."""
    import datetime as dt

    when = dt.datetime(2020, 1, 1, 12, 30)
    zone = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        sdf = spark.createDataFrame([(when, 1.0)] * 40, "k timestamp_ntz, x double")
        s = dp.Session(sdf, budget=dp.ApproxDP(10.0, 1e-3), rng=1)
        for keys in ([when], None):
            out = s.query().group_by("k", keys=keys).agg(dp.count())
            got = out.release(epsilon=2.0, delta=1e-4 if keys is None else 0.0)
            assert got.schema["k"].dataType.typeName() == "timestamp_ntz"
            assert [r["k"] for r in got.collect()] == [when]
            assert got.join(sdf, "k").count() == 40
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone)


def test_a_failing_cast_after_the_spend_prints_no_value(spark: Any, capfd: Any) -> None:
    """A step of the caller's own plan that fails on one value (a strict cast under ANSI
    mode) fails after the spend, and its message (which quotes the value) is not shown;
    PySpark's query-context logger used to print it on stderr. The same cast written as a
    Session filter is total: the value is null and the release goes through."""
    from pyspark.sql import functions as F

    rows = [("SECRET9" if i == 3 else str(i), float(i)) for i in range(40)]
    sdf = spark.createDataFrame(rows, "s string, x double")
    s = dp.Session(sdf, budget=dp.PureDP(1.0), rng=1)
    q = s.query().filter(nw.col("s").cast(nw.Int64) > 3).agg(dp.count())
    assert q.release(epsilon=0.5).count() == 1
    planned = sdf.withColumn("s", F.col("s").cast("bigint"))
    s = dp.Session(planned, budget=dp.PureDP(1.0), rng=1)
    with pytest.raises(dp.ParameterError, match="NumberFormatException") as err:
        s.query().filter(nw.col("s") > 3).agg(dp.count()).release(epsilon=0.5)
    out, errs = capfd.readouterr()
    assert "SECRET9" not in str(err.value) + out + errs


def test_the_native_aggregation_is_narwhals_aggregation(spark: Any) -> None:
    """SparkEngine.aggregate builds with PySpark's own groupBy what Engine.aggregate builds
    through narwhals, with the same figures: null keys grouped together, counts of rows and
    of non-null values, sums, distinct values with null counting as one; without keys one
    row, also on no rows (counts 0, the sum of nothing null or 0)."""
    from dpkit.session.engines import Engine

    rows = [("a", 1, 1.0), ("a", 1, None), ("a", None, 2.5), (None, 2, 4.0), (None, 3, None)]
    sdf = spark.createDataFrame(rows, "k string, u long, x double")
    aggs = [
        ("n", "len", None),
        ("c", "count", "x"),
        ("s", "sum", "x"),
        ("d", "n_unique", "u"),
    ]
    for frame in (sdf, sdf.limit(0)):
        for by in (["k"], []):
            lf = nw.from_native(frame)
            native = SparkEngine().aggregate(lf, by, aggs)
            plain = Engine.aggregate(SparkEngine(), lf, by, aggs)
            got, want = (
                SparkEngine()
                .collect(f)
                .sort(by or "n", nulls_last=True)
                .with_columns(pl.col("s").fill_null(0.0))
                for f in (native, plain)
            )
            assert_frame_equal(got, want, check_dtypes=False)
    grouped = SparkEngine().collect(SparkEngine().aggregate(nw.from_native(sdf), ["k"], aggs))
    assert grouped.sort("k", nulls_last=True).rows() == [
        ("a", 3, 2, 3.5, 2),
        (None, 2, 1, 4.0, 2),
    ]
