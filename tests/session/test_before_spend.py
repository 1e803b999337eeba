"""A release either refuses before anything is spent or completes: never spend, then fail.

Each case found by fuzzing once charged the budget and then raised. A refused call must
leave the accountant untouched; a valid one must release.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Callable
from typing import Any

import narwhals as nw
import numpy as np
import polars as pl
import pytest

import dpkit as dp
from dpkit.errors import ParameterError


def _duckdb(df: pl.DataFrame) -> Any:
    import duckdb

    return duckdb.connect().from_arrow(df.to_arrow())


MAKERS: dict[str, Callable[[pl.DataFrame], Any]] = {
    "polars": lambda df: df,
    "pandas": lambda df: df.to_pandas(),
    "pyarrow": lambda df: df.to_arrow(),
    "duckdb": _duckdb,
}


@pytest.fixture(params=list(MAKERS))
def make(request: pytest.FixtureRequest) -> Callable[[pl.DataFrame], Any]:
    return MAKERS[request.param]


def _polars(frame: Any) -> pl.DataFrame:
    return frame if isinstance(frame, pl.DataFrame) else pl.from_pandas(frame)


def _df() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "age": [30, 40, 50, 30],
            "city": ["a", "b", "a", "b"],
            "code": ["1", "2", "x9", "3"],
            "x": [1.0, 2.0, 3.0, 4.0],
        }
    )


# -- F1: the rng is checked before the spend -------------------------------------------------


def test_bad_rng_spends_nothing(make: Callable[[pl.DataFrame], Any], bad_rng: Any) -> None:
    rng, error, match = bad_rng
    s = dp.Session(make(_df()), budget=dp.PureDP(10))
    with pytest.raises(error, match=match):
        s.query().agg(dp.count()).release(epsilon=1.0, rng=rng)
    with pytest.raises(error, match=match):
        s.count(epsilon=1.0, rng=rng)
    with pytest.raises(error, match=match):
        s.query().agg(dp.mean("x", bounds=(0, 10))).measure(epsilon=1.0, rng=rng)
    assert s.accountant.history == ()
    s.count(epsilon=1.0, rng=3)  # a good one still releases
    assert len(s.accountant.history) == 1


# -- F10: public keys must fit the key column --------------------------------------------------


def test_keys_of_the_wrong_type_spend_nothing(make: Callable[[pl.DataFrame], Any]) -> None:
    s = dp.Session(make(_df()), schema=_df().schema, budget=dp.PureDP(10))
    bad = s.query().group_by("age", keys=["young", "old"]).agg(dp.count())
    with pytest.raises(dp.ParameterError, match=r"keys.*'age'"):
        bad.explain(epsilon=1.0)
    with pytest.raises(dp.ParameterError, match=r"keys.*'age'"):
        bad.release(epsilon=1.0)
    with pytest.raises(dp.ParameterError, match="whole numbers"):
        s.query().group_by("age", keys=[30, 1.5]).agg(dp.count()).release(epsilon=1.0)
    with pytest.raises(dp.ParameterError, match=r"keys.*'age'"):
        s.count(by="age", keys=["young"], epsilon=1.0)
    assert s.accountant.history == ()
    out = _polars(s.query().group_by("age", keys=[30.0, 40.0]).agg(dp.count()).release(epsilon=1))
    assert out["age"].to_list() == [30, 40]


def test_keys_for_a_date_column_must_be_dates() -> None:
    df = pl.DataFrame({"day": [datetime.date(2020, 1, 1)] * 3})
    s = dp.Session(df, budget=dp.PureDP(10))
    with pytest.raises(dp.ParameterError, match=r"keys.*'day'"):
        s.query().group_by("day", keys=["2020-01-01"]).agg(dp.count()).release(epsilon=1.0)
    assert s.accountant.history == ()
    out = s.count(by="day", keys=[datetime.date(2020, 1, 1)], epsilon=1.0)
    assert out["day"].to_list() == [datetime.date(2020, 1, 1)]


# -- F11: histogram categories must fit the column ---------------------------------------------


def test_histogram_categories_of_the_wrong_type_spend_nothing(
    make: Callable[[pl.DataFrame], Any],
) -> None:
    s = dp.Session(make(_df()), budget=dp.PureDP(10))
    with pytest.raises(TypeError, match=r"'age'.*categories"):
        s.query().agg(dp.histogram("age", bins=["a", "b"])).release(epsilon=1.0)
    with pytest.raises(TypeError, match=r"'city'.*categories"):
        s.query().agg(dp.histogram("city", bins=[1, "a"])).release(epsilon=1.0)
    with pytest.raises(TypeError, match=r"'city'.*categories"):
        s.query().agg(dp.histogram("city", bins=[True, False])).explain(epsilon=1.0)
    assert s.accountant.history == ()
    out = _polars(s.query().agg(dp.histogram("city", bins=["a", "b"])).release(epsilon=1.0))
    assert out["city"].to_list() == ["a", "b"]


# -- F13: nested key columns are refused -------------------------------------------------------


def _pandas_reads_lists_as_null_text(s: dp.Session) -> bool:
    """pandas holds lists in an ``object`` column, which a Session reads as text: values
    that are not ``str`` are null (one non-``str`` value must not change the column's type)."""
    if s.engine != "pandas":
        return False
    assert s.schema["tags"] == nw.String()
    return True


def test_group_by_a_list_column_spends_nothing(make: Callable[[pl.DataFrame], Any]) -> None:
    df = pl.DataFrame({"tags": [[1, 2]] * 20 + [[3]] * 20, "x": [1.0] * 40})
    s = dp.Session(make(df), budget=dp.ApproxDP(10, 1e-3))
    if _pandas_reads_lists_as_null_text(s):
        return
    q = s.query().group_by("tags").agg(dp.median("x", bounds=(0, 10)))
    with pytest.raises(TypeError, match=r"'tags'.*cannot be a group key"):
        q.release(epsilon=1.0, delta=1e-6)
    with pytest.raises(TypeError, match=r"'tags'.*cannot be a group key"):
        s.query().group_by("tags").agg(dp.count()).explain(epsilon=1.0, delta=1e-6)
    assert s.accountant.history == ()


def test_a_list_privacy_unit_spends_nothing(make: Callable[[pl.DataFrame], Any]) -> None:
    df = pl.DataFrame({"tags": [[1, 2]] * 20 + [[3]] * 20, "x": [1.0] * 40})
    s = dp.Session(make(df), privacy_unit="tags", max_rows_per_unit=2, budget=dp.PureDP(10))
    if _pandas_reads_lists_as_null_text(s):
        return
    with pytest.raises(TypeError, match=r"'tags'.*cannot be the privacy unit"):
        s.count(epsilon=1.0)
    assert s.accountant.history == ()


# -- F14: quantiles of an integer column whose bounds hold no integer --------------------------


@pytest.mark.parametrize("bounds", [(0, 0.5), (0.25, 0.75)])
@pytest.mark.parametrize("method", ["auto", "joint"])
def test_integer_column_with_narrow_bounds_releases(
    make: Callable[[pl.DataFrame], Any], bounds: tuple[float, float], method: str
) -> None:
    s = dp.Session(make(pl.DataFrame({"i": np.arange(10)})), budget=dp.PureDP(10), rng=1)
    q = s.query().agg(dp.quantile("i", [0.25, 0.75], bounds=bounds, method=method))
    out = _polars(q.release(epsilon=1.0))
    for name in ("i_0.25", "i_0.75"):
        assert bounds[0] <= out[name][0] <= bounds[1]
    assert len(s.accountant.history) == 1
    # cdf needs integers inside the bounds: refused before the spend
    with pytest.raises(dp.ParameterError, match="cdf"):
        s.query().agg(dp.median("i", bounds=bounds, method="cdf")).release(epsilon=1.0)
    assert len(s.accountant.history) == 1


# -- F9: sums whose interval does not fit in int64 ---------------------------------------------


@pytest.mark.parametrize(
    ("values", "bounds", "epsilon"),
    [
        ([1e15 + 0.5] * 10, (1e15, 1e15 + 1), 0.001),
        ([1e15 + 0.5] * 10, (1e15, 1e15 + 1), 0.01),
        ([1.0, 2.0, 3.0], "auto", 1e-12),
    ],
)
def test_wide_sum_intervals_release(
    make: Callable[[pl.DataFrame], Any], values: list[float], bounds: Any, epsilon: float
) -> None:
    s = dp.Session(make(pl.DataFrame({"x": values})), budget=dp.PureDP(10), rng=2)
    out = _polars(s.query().agg(dp.sum("x", bounds=bounds)).release(epsilon=epsilon))
    v, lo, hi = out.row(0)
    assert not any(math.isnan(t) for t in (v, lo, hi))
    assert lo <= v <= hi
    assert len(s.accountant.history) == 1


def test_sum_beyond_the_float_range_is_infinite(make: Callable[[pl.DataFrame], Any]) -> None:
    # 100 values: their bucket passes the bounds' threshold (44 at epsilon 0.5), so the
    # chosen bounds reach 1.7e308 (30 fall back to the public (-1, 1))
    s = dp.Session(make(pl.DataFrame({"x": [1.7e308] * 100})), budget=dp.PureDP(10), rng=1)
    v, lo, hi = _polars(s.query().agg(dp.sum("x", bounds="auto")).release(epsilon=1.0)).row(0)
    assert v == math.inf and lo <= v <= hi


# -- F12: engine errors of a filter quote no data ----------------------------------------------


def test_a_filter_comparing_text_with_a_number_quotes_no_data(
    make: Callable[[pl.DataFrame], Any],
) -> None:
    s = dp.Session(make(_df()), budget=dp.PureDP(10))
    with pytest.raises(dp.ParameterError, match="filter") as info:
        s.query().filter(nw.col("city") > 1).agg(dp.count()).release(epsilon=1.0)
    message = str(info.value)
    assert "x9" not in message and "'b'" not in message
    assert info.value.__cause__ is None and info.value.__context__ is None


def test_a_cast_that_cannot_convert_a_value_gives_null(
    make: Callable[[pl.DataFrame], Any],
) -> None:
    """``"x9"`` cast to an integer is null, so its row fails the condition: three of the
    four rows pass (epsilon 1e4: noise 0 except with probability about 2 exp(-1e4))."""
    s = dp.Session(make(_df()), budget=dp.PureDP(1e5), rng=1)
    out = s.query().filter(nw.col("code").cast(nw.Int64) > 0).agg(dp.count())
    assert _polars(out.release(epsilon=1e4))["count"].to_list() == [3]


def test_schema_type_error_in_a_filter_spends_nothing(make: Callable[[pl.DataFrame], Any]) -> None:
    s = dp.Session(make(_df()), budget=dp.PureDP(10))
    with pytest.raises(dp.ParameterError, match="filter"):
        s.query().filter(nw.col("city") > 1).agg(dp.count()).release(epsilon=1.0)
    assert s.accountant.history == ()


# -- F8: automatic stages whose noise would exceed the sampler's range -------------------------


def _units() -> pl.DataFrame:
    return pl.DataFrame({"p": np.arange(300) // 3, "x": np.linspace(0, 100, 300)})


@pytest.mark.parametrize(
    ("session", "agg", "epsilon"),
    [
        ({}, dp.sum("x", bounds="auto", bounds_method="tail"), 1e-12),
        ({"privacy_unit": "p", "max_rows_per_unit": 1000}, dp.mean("x", bounds="auto"), 1e-12),
        (
            {"privacy_unit": "p", "max_rows_per_unit": 1000},
            dp.mean("x", bounds="auto", bounds_method="tail"),
            1e-9,
        ),
        (
            {"privacy_unit": "p", "max_rows_per_unit": 2**31},
            dp.sum("x", bounds="auto", bounds_method="tail"),
            0.001,
        ),
        ({"privacy_unit": "p", "max_rows_per_unit": "auto"}, dp.count(), 1e-13),
        ({"privacy_unit": "p", "max_rows_per_unit": "auto"}, dp.count(), 1e-14),
    ],
)
def test_automatic_stage_out_of_the_sampler_range_spends_nothing(
    make: Callable[[pl.DataFrame], Any], session: dict, agg: Any, epsilon: float
) -> None:
    s = dp.Session(make(_units()), budget=dp.PureDP(1), **session)
    with pytest.raises(dp.ParameterError, match="2\\*\\*50"):
        s.query().agg(agg).release(epsilon=epsilon)
    assert s.accountant.history == ()


def test_automatic_stages_just_inside_the_range_release(
    make: Callable[[pl.DataFrame], Any],
) -> None:
    s = dp.Session(
        make(_units()), privacy_unit="p", max_rows_per_unit="auto", budget=dp.PureDP(1), rng=4
    )
    s.query().agg(dp.count()).release(epsilon=1e-12)
    assert len(s.accountant.history) == 1


# -- errors after the spend quote no data --------------------------------------------------


def test_pyarrow_backed_integers_beyond_2_53_release_on_pandas() -> None:
    """PyArrow refuses to cast an integer beyond 2**53 to Float64 (ArrowInvalid, quoting the
    value, after the spend); the pandas adapter hands such columns to narwhals as pandas'
    nullable integers, which round like every other engine. Counts exact at epsilon 1e4."""
    pd = pytest.importorskip("pandas")
    pa = pytest.importorskip("pyarrow")
    x = pd.array([2**53 + 1, 1, None], dtype=pd.ArrowDtype(pa.int64()))
    u = pd.array([2**64 - 1, 1, 3], dtype=pd.ArrowDtype(pa.uint64()))
    df = pd.DataFrame({"x": x, "u": u})
    s = dp.Session(df, budget=dp.PureDP(1e6), rng=5)
    out = s.query().agg(dp.histogram("x", bins=[0, 10, 2**54])).release(epsilon=1e4)
    assert out["x_count"].tolist() == [1, 1]
    assert s.query().agg(dp.count("u")).release(epsilon=1e4)["u_count"].tolist() == [3]
    assert isinstance(df["x"].dtype, pd.ArrowDtype)  # the caller's frame is not changed


def test_an_error_after_the_spend_names_its_type_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever fails once the cost is charged (an eager engine such as pandas raises while
    the query is built, outside the guarded collect) surfaces as a ParameterError naming the
    error's type, never its message, which can quote data; the charge stands."""
    from dpkit.session import _engine

    def leak(*args: Any, **kwargs: Any) -> Any:
        raise ValueError("could not convert 'zqsecret'")

    monkeypatch.setattr(_engine, "bounded_rows", leak)
    s = dp.Session(_df(), budget=dp.PureDP(10))
    with pytest.raises(dp.ParameterError, match=r"failed after its spend \(ValueError\)") as info:
        s.query().agg(dp.count()).release(epsilon=1.0)
    assert "zqsecret" not in str(info.value)
    assert info.value.__cause__ is None and info.value.__context__ is None
    assert len(s.accountant.history) == 1


@pytest.mark.parametrize("aware", [True, False])
def test_datetime_categories_must_match_the_column_timezone(aware: bool) -> None:
    """Naive categories for a timezone-aware column (or the reverse) are refused before the
    spend; engines refuse to compare them, which used to fail after it."""
    moments = [datetime.datetime(2024, 1, d) for d in (1, 2, 2)]
    col = pl.Series("t", moments)
    df = pl.DataFrame({"t": col.dt.replace_time_zone("UTC") if aware else col})
    s = dp.Session(df, budget=dp.PureDP(1e5), rng=1)
    utc = datetime.UTC
    naive, tagged = moments[:2], [m.replace(tzinfo=utc) for m in moments[:2]]
    good, bad = (tagged, naive) if aware else (naive, tagged)
    with pytest.raises(TypeError, match="timezone-aware" if aware else "naive"):
        s.query().agg(dp.histogram("t", bins=bad)).release(epsilon=1.0)
    assert s.accountant.history == ()
    out = s.query().agg(dp.histogram("t", bins=good)).release(epsilon=1e4)
    assert out["t_count"].to_list() == [1, 2]


def test_duckdb_interval_keys_spend_nothing() -> None:
    """Polars cannot read DuckDB's INTERVAL back, so an interval group key failed after the
    spend; it is refused before it."""
    duckdb = pytest.importorskip("duckdb")
    rel = duckdb.connect().sql(
        "SELECT to_days((i % 3)::INTEGER) AS k, i::DOUBLE AS x FROM range(30) t(i)"
    )
    s = dp.Session(rel, budget=dp.PureDP(10.0), rng=1)
    query = s.query().group_by("k", keys=[datetime.timedelta(days=1)]).agg(dp.count())
    with pytest.raises(dp.ParameterError, match="INTERVAL column"):
        query.release(epsilon=1.0)
    assert s.accountant.history == ()


@pytest.mark.parametrize(
    ("build", "epsilon"),
    [
        (lambda q: q.query(max_rows_per_unit=10**19).agg(dp.count()), 1.0),
        (lambda q: q.query(max_rows_per_unit=np.timedelta64(1, "D")).agg(dp.count()), 1.0),
        (lambda q: q.query(max_rows_per_unit=2).agg(dp.median("Age", bounds=(0, 100))), 1e-14),
        (lambda q: q.query(max_rows_per_unit=2).agg(dp.count()), 1e-300),
    ],
)
def test_session_refuses_before_spending(build: Any, epsilon: float) -> None:
    # a contribution bound past int64, or a quantile whose interval counts need noise beyond
    # the sampler's range, is refused before the spend
    pl = pytest.importorskip("polars")
    frame = pl.DataFrame({"Age": [20.0, 30.0, 40.0], "pid": [1, 2, 3]})
    session = dp.Session(frame, budget=dp.PureDP(10.0), privacy_unit="pid")
    with pytest.raises((ParameterError, TypeError), match=r"`(max_rows_per_unit|epsilon)"):
        build(session).release(epsilon=epsilon, rng=1)
    assert session.accountant.history == ()
