"""Bad input gets a clear error naming the thing, before anything is spent."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import narwhals as nw
import polars as pl
import pytest

import dpkit as dp


def _df() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "pid": [1, 1, 2, 3],
            "Sex": ["F", "M", "F", "M"],
            "Age": [30.0, 40.0, None, 60.0],
            "flag": [True, False, True, True],
        }
    )


def _session(data: Any = None, **kw: Any) -> dp.Session:
    return dp.Session(_df() if data is None else data, budget=dp.ApproxDP(1.0, 1e-6), **kw)


def test_errors_on_every_engine(engine: Callable[[pl.DataFrame], Any]) -> None:
    s = _session(engine(_df()), schema=_df().schema)
    with pytest.raises(dp.ParameterError, match="unknown column 'Agee'"):
        s.query().agg(dp.mean("Agee", bounds=(0, 100))).release(epsilon=1.0)
    with pytest.raises(TypeError, match="column 'Sex' must be numeric"):
        s.query().agg(dp.sum("Sex", bounds=(0, 1))).release(epsilon=1.0)
    with pytest.raises(dp.ParameterError, match="unknown column 'Edu'"):
        s.query().group_by("Edu", keys=["x"]).agg(dp.count()).release(epsilon=1.0)
    with pytest.raises(dp.ParameterError, match=r"delta = 0.*public keys.*delta > 0"):
        s.query().group_by("Sex").agg(dp.count()).release(epsilon=1.0)
    assert s.accountant.history == ()


def test_a_failing_step_of_the_callers_own_plan_quotes_no_value(tmp_path: Any) -> None:
    """A Polars LazyFrame is a plan the Session runs as given: a strict cast in it fails on
    a value, in the release (nothing of the data is read before the spend). The error names
    the engine's error type only (its message quotes the value) and the charge stands. The
    same text in a CSV file given by path is read as text, which never fails."""
    lazy = pl.DataFrame({"pid": ["1", "2", "zqsecret"]}).lazy()
    lazy = lazy.with_columns(pl.col("pid").cast(pl.Int64))
    s = dp.Session(lazy, privacy_unit="pid", max_rows_per_unit=1, budget=dp.PureDP(1.0))
    with pytest.raises(dp.ParameterError, match="the engine failed") as err:
        s.count(epsilon=0.1)
    assert "zqsecret" not in str(err.value)
    assert err.value.__cause__ is None and err.value.__context__ is None
    assert len(s.accountant.history) == 1
    path = tmp_path / "units.csv"
    pl.DataFrame({"pid": [str(i) for i in range(20_000)] + ["zqsecret"]}).write_csv(path)
    s = dp.Session(str(path), privacy_unit="pid", max_rows_per_unit=1, budget=dp.PureDP(1.0))
    assert s.schema == {"pid": nw.String()}
    assert s.count(epsilon=0.1).height == 1


@pytest.mark.parametrize(
    ("bounds", "error", "match"),
    [
        (None, dp.ParameterError, "`bounds` is required"),
        ((100, 0), dp.ParameterError, "lower < upper"),
        ((0, math.nan), dp.ParameterError, "finite"),
        ((0, math.inf), dp.ParameterError, "finite"),
        ((0, 10**400), dp.ParameterError, r"`bounds\[1\]`.*too large for a float"),
        ((True, 5), TypeError, "real number"),
        ("0,100", TypeError, "pair"),
        ((-1e308, 1e308), dp.ParameterError, "too far apart"),
    ],
)
def test_bad_bounds(bounds: Any, error: Any, match: str) -> None:
    with pytest.raises(error, match=match or None):
        dp.mean("Age", bounds=bounds)


@pytest.mark.parametrize(
    "make",
    [
        lambda b: dp.median("Age", bounds=b),
        lambda b: dp.quantile("Age", [0.1, 0.9], bounds=b),
    ],
    ids=["median", "quantile"],
)
def test_quantile_bounds_without_a_lattice_are_refused_when_built(make: Any) -> None:
    """Bounds narrower than the mechanism's lattice allows (width below about 2.4e-299) are
    refused by the constructor, like dp.sum's; they used to pass explain() and the spend,
    and fail in the release."""
    with pytest.raises(dp.ParameterError, match="too close together"):
        make((0.0, 1e-300))
    assert make((0.0, 1e-290)).bounds == (0.0, 1e-290)


def test_unsupported_data_names_what_is_accepted() -> None:
    with pytest.raises(TypeError, match=r"polars\.DataFrame.*pandas\.DataFrame.*duckdb"):
        dp.Session([[1, 2]], budget=dp.PureDP(1.0))
    with pytest.raises(TypeError, match=r"\.csv or \.parquet"):
        dp.Session("data.xlsx", budget=dp.PureDP(1.0))


def test_session_arguments() -> None:
    with pytest.raises(dp.ParameterError, match="exactly one of `budget`"):
        dp.Session(_df())
    with pytest.raises(TypeError, match="`budget` must be a PureDP"):
        dp.Session(_df(), budget=1.0)
    with pytest.raises(TypeError, match="`accountant` must be"):
        dp.Session(_df(), accountant="acct")
    with pytest.raises(dp.ParameterError, match="unknown `privacy_unit`"):
        dp.Session(_df(), privacy_unit="person", budget=dp.PureDP(1.0))
    with pytest.raises(dp.ParameterError, match="need a privacy_unit"):
        dp.Session(_df(), max_rows_per_unit=2, budget=dp.PureDP(1.0))
    s = dp.Session(_df(), privacy_unit="pid", budget=dp.PureDP(1.0))
    with pytest.raises(dp.ParameterError, match="needs `max_rows_per_unit`"):
        s.query()
    with pytest.raises(TypeError, match=r"int in \[1, 2147483648\]"):
        s.query(max_rows_per_unit=True)
    with pytest.raises(dp.ParameterError, match=r"int in \[1, 2147483648\]"):
        s.query(max_rows_per_unit=0)


def test_filters() -> None:
    s = _session()
    with pytest.raises(TypeError, match="Polars expressions are not accepted"):
        s.query().filter(pl.col("Age") > 3)
    with pytest.raises(dp.ParameterError, match="row-by-row"):
        s.query().filter(nw.col("Age") > nw.col("Age").mean())
    with pytest.raises(dp.ParameterError, match="row-by-row"):
        s.query().filter(nw.col("Age").rank().over("Sex") < 3)
    with pytest.raises(dp.ParameterError, match="unknown column 'Nope'"):
        s.query().filter(nw.col("Nope") > 3)
    assert s.accountant.history == ()


def test_release_parameters() -> None:
    s = _session()
    q = s.query().agg(dp.count())
    with pytest.raises(dp.ParameterError, match="`epsilon` is required"):
        q.release()
    with pytest.raises(dp.ParameterError, match="epsilon"):
        q.release(epsilon=-1.0)
    with pytest.raises(TypeError, match="epsilon"):
        q.release(epsilon=True)
    with pytest.raises(dp.ParameterError, match="delta"):
        q.release(epsilon=1.0, delta=1.5)
    with pytest.raises(dp.ParameterError, match="alpha"):
        q.release(epsilon=1.0, alpha=1.0)
    with pytest.raises(dp.ParameterError, match="not both"):
        q.release(epsilon=1.0, rho=0.1)
    with pytest.raises(dp.ParameterError, match="noise"):
        q.release(epsilon=1.0, noise="cauchy")
    with pytest.raises(dp.ParameterError, match="nothing to release"):
        s.query().release(epsilon=1.0)
    assert s.accountant.history == ()


def test_parameters_of_the_wrong_type_are_type_errors_naming_them() -> None:
    """Arrays, nested lists and the like never reach NumPy's ambiguous truth value or an
    unhashable-type error: each is a TypeError naming its parameter, with nothing spent."""
    import numpy as np

    s = _session()
    q = s.query().agg(dp.count())
    with pytest.raises(TypeError, match="`noise` must be"):
        q.release(epsilon=1.0, noise=np.array(["laplace", "gaussian"]))
    with pytest.raises(TypeError, match="`noise` must be"):
        q.release(epsilon=1.0, noise=np.array(["laplace"]))
    with pytest.raises(TypeError, match="`label` must be"):
        q.release(epsilon=1.0, label=np.array(["a", "b"]))
    with pytest.raises(dp.ParameterError, match="apply only with a privacy_unit"):
        s.query(max_rows_per_unit=np.array([1, 2]))
    assert s.query(max_rows_per_unit=1.0, max_groups_per_unit=None) is not None
    with pytest.raises(TypeError, match=r"`bins` must be numeric edges or category values"):
        dp.histogram("Age", bins=[[1.0, 2.0], [3.0]])
    with pytest.raises(TypeError, match="position 1"):
        dp.histogram("Sex", bins=["F", np.array(["M"])])
    assert s.accountant.history == ()


@pytest.mark.parametrize("release", [{"epsilon": 1.0}, {"epsilon": 1.0, "delta": 1e-6}])
def test_a_sum_whose_interval_is_infinite_for_every_table_is_refused_before_the_spend(
    release: dict[str, float],
) -> None:
    """As statistics.sum: bounds whose noise interval alone is beyond the float range would
    release +-inf whatever the data (refused, nothing spent); narrower ones release."""
    s = _session()
    for bounds in [(-1e308, -1e307), (0, 1e308)]:
        q = s.query().agg(dp.sum("Age", bounds=bounds))
        with pytest.raises(dp.ParameterError, match="beyond the float range"):
            q.release(**release)
        with pytest.raises(dp.ParameterError, match="beyond the float range"):
            q.measure(**release)
    assert s.accountant.history == ()
    s.query().agg(dp.sum("Age", bounds=(0, 1e300))).release(epsilon=1.0)
    assert len(s.accountant.history) == 1


def test_aggregate_arguments() -> None:
    with pytest.raises(dp.ParameterError, match="weight"):
        dp.count(weight=0)
    with pytest.raises(TypeError, match="column"):
        dp.sum(3, bounds=(0, 1))
    with pytest.raises(dp.ParameterError, match=r"in \(0, 1\)"):
        dp.quantile("Age", [0.5, 1.0], bounds=(0, 100))
    with pytest.raises(dp.ParameterError, match="sorted and distinct"):
        dp.quantile("Age", [0.5, 0.5], bounds=(0, 100))
    with pytest.raises(dp.ParameterError, match="`bins` is required"):
        dp.histogram("Age")
    with pytest.raises(dp.ParameterError, match="strictly"):
        dp.histogram("Age", bins=[0, 10, 5])
    with pytest.raises(dp.ParameterError, match="distinct"):
        dp.histogram("Sex", bins=["F", "F"])
    q = _session().query()
    with pytest.raises(TypeError, match="dpkit aggregates"):
        q.agg("count")
    with pytest.raises(dp.ParameterError, match="own"):
        q.agg(dp.count(), dp.histogram("Age", bins=[0, 50, 100]))
    with pytest.raises(dp.ParameterError, match="appears twice"):
        q.agg(dp.count(), dp.count()).release(epsilon=1.0)
    with pytest.raises(TypeError, match="must be numeric"):
        q.agg(dp.mean("flag", bounds=(0, 1))).release(epsilon=1.0)


def test_keys() -> None:
    s = _session()
    with pytest.raises(dp.ParameterError, match="distinct"):
        s.query().group_by("Sex", keys=["F", "F"])
    with pytest.raises(dp.ParameterError, match="2-tuples"):
        s.query().group_by("Sex", "pid", keys=["F"])
    with pytest.raises(TypeError, match="`keys` must be None"):
        s.query().group_by("Sex", keys=3)
    with pytest.raises(dp.ParameterError, match="lacks column"):
        s.query().group_by("Sex", keys=pl.DataFrame({"sex": ["F"]}))
    both = s.query().group_by("Sex", "pid", keys=[("F", 1), ("M", 9)]).agg(dp.count())
    out = both.release(epsilon=1.0)
    assert out.select("Sex", "pid").rows() == [("F", 1), ("M", 9)]


def test_alphas_and_lowers_the_statistics_refuse_are_refused_before_the_spend() -> None:
    """The array statistics refuse an ``alpha`` below 1e-250 (its union bounds underflow) and
    an automatic-bounds ``lower`` whose chosen bounds could not start at it; the Session
    refuses both before anything is spent, not after."""
    s = dp.Session(pl.DataFrame({"x": [1.0, 2.0, 3.0]}), budget=dp.PureDP(1.0))
    with pytest.raises(dp.ParameterError, match=r"^release: `alpha` must be at least 1e-250"):
        s.query().agg(dp.median("x", bounds=(0, 10))).release(epsilon=0.5, alpha=1e-300)
    for make in (dp.sum, dp.mean):
        with pytest.raises(dp.ParameterError, match="`lower` 1e\\+308 is out of range"):
            make("x", bounds="auto", lower=1e308)
    with pytest.raises(dp.ParameterError, match="out of range for a variance"):
        dp.std("x", bounds="auto", lower=1e308)
    assert s.accountant.spent == dp.PureDP(0.0)
    s.query().agg(dp.mean("x", bounds="auto", lower=1e300)).release(epsilon=0.5, alpha=1e-250)


def test_a_delta_too_small_to_split_is_refused_before_keys_are_released() -> None:
    """Half of delta 5e-324 rounds to 0: private keys used to be released without any
    threshold (a group of one record was published). Refused before the spend, as is a
    delta whose share per key a unit may hold rounds to 0."""
    df = pl.DataFrame({"city": ["Atlantis"] + ["Paris"] * 300, "pid": range(301)})
    s = dp.Session(df, budget=dp.ApproxDP(10.0, 1e-3))
    with pytest.raises(dp.ParameterError, match="too small to share with the key threshold"):
        s.query().group_by("city").agg(dp.count()).release(epsilon=1.0, delta=5e-324)
    s = dp.Session(
        df,
        privacy_unit="pid",
        max_rows_per_unit=3,
        max_groups_per_unit=3,
        budget=dp.ApproxDP(10.0, 1e-3),
    )
    with pytest.raises(dp.ParameterError, match="split over the 3 keys a unit may hold"):
        s.query().group_by("city").agg(dp.count()).release(epsilon=1.0, delta=1e-323)
    assert s.accountant.spent == dp.ApproxDP(0.0, 0.0)
    out = s.query().group_by("city").agg(dp.count()).release(epsilon=1.0, delta=1e-6)
    assert "Atlantis" not in out["city"].to_list()


def test_a_key_twice_or_a_bin_column_named_like_a_key_is_refused_before_the_spend() -> None:
    """``group_by("city", "city")`` failed after the spend (a DuplicateError), and a
    histogram's bin column (``age_from``, or the column itself for categories) silently
    replaced a group key of that name."""
    df = pl.DataFrame(
        {"city": ["a", "b"] * 50, "age": [30.0, 60.0] * 50, "age_from": ["m", "n"] * 50}
    )
    s = dp.Session(df, budget=dp.ApproxDP(10.0, 1e-3))
    with pytest.raises(dp.ParameterError, match="a column appears twice"):
        s.query().group_by("city", "city")
    q = s.query().group_by("age_from", keys=["m", "n"])
    with pytest.raises(dp.ParameterError, match="bin column 'age_from' would replace a group key"):
        q.agg(dp.histogram("age", bins=[0, 50, 100])).release(epsilon=1.0)
    q = s.query().group_by("city", keys=["a", "b"])
    with pytest.raises(dp.ParameterError, match="bin column 'city' would replace a group key"):
        q.agg(dp.histogram("city", bins=["a", "b"])).release(epsilon=1.0)
    assert s.accountant.spent == dp.ApproxDP(0.0, 0.0)


def test_a_filter_on_no_column_keeps_every_row_or_none(
    engine: Callable[[pl.DataFrame], Any], to_polars: Callable[[Any], pl.DataFrame]
) -> None:
    """A condition on no column is decided from its form (a literal, or 1 / 0 = 1, which is
    null, so false); engines refuse a filter by one value, so it is kept as a row-by-row
    condition that holds on every row or on none, and releases as such."""

    def release(*conds: nw.Expr) -> pl.DataFrame:
        s = dp.Session(engine(_df()), schema=_df().schema, budget=dp.PureDP(10.0), rng=3)
        return to_polars(s.query().filter(*conds).agg(dp.count()).release(epsilon=1.0))

    assert release(nw.lit(1) == 1).equals(release())
    assert release(nw.lit(1) == 0).equals(release(nw.col("Age") > 1e9))
    assert release(nw.lit(1) / 0 == 1).equals(release(nw.col("Age") > 1e9))


def test_with_columns_refuses_before_the_spend() -> None:
    s = _session()
    q = s.query()
    with pytest.raises(dp.ParameterError, match="already has a column 'Age'"):
        q.with_columns(Age=nw.col("Age") * 2)
    with pytest.raises(dp.ParameterError, match="reserved"):
        q.with_columns(__dpkit_x=nw.col("Age") * 2)
    with pytest.raises(TypeError, match="must be a narwhals expression"):
        q.with_columns(a2=pl.col("Age") * 2)
    with pytest.raises(dp.ParameterError, match="reads no column"):
        q.with_columns(one=nw.lit(1))
    with pytest.raises(dp.ParameterError, match="row-by-row"):
        q.with_columns(m=nw.col("Age") - nw.col("Age").mean())
    with pytest.raises(dp.ParameterError, match="unknown column 'Nope'"):
        q.with_columns(m=nw.col("Nope") * 2)
    with pytest.raises(dp.ParameterError, match="already has a column 'a2'"):
        q.with_columns(a2=nw.col("Age") * 2).with_columns(a2=nw.col("Age") * 3)
    assert s.accountant.history == ()


def test_with_columns_releases_as_the_column_in_the_data(
    engine: Callable[[pl.DataFrame], Any], to_polars: Callable[[Any], pl.DataFrame]
) -> None:
    """A column added by the query releases exactly as the same column held by the data
    (same seed): it is computed per row, before the filters and the bounding, and a
    division by zero gives null rather than an error."""
    df = pl.DataFrame(
        {
            "pid": [1, 1, 2, 3, 3, 3, 4, 5] * 5,
            "Age": [30, 41, 0, 60, 18, 77, 25, 52] * 5,
            "Sex": ["F", "M", "F", "M", "F", "F", "M", "M"] * 5,
        }
    )
    decade = (nw.col("Age") / 10).floor() * 10
    ratio = 100 / nw.col("Age")
    unit = {"privacy_unit": "pid", "max_rows_per_unit": 2, "budget": dp.PureDP(10.0), "rng": 4}
    added = dp.Session(engine(df), schema=df.schema, **unit)
    q = (
        added.query()
        .with_columns(decade=decade, ratio=ratio)
        .filter(nw.col("decade") >= 20)
        .group_by("decade", keys=[20.0, 30.0, 40.0, 50.0, 60.0, 70.0])
        .agg(dp.count(), dp.mean("ratio", bounds=(0, 10)))
    )
    got = to_polars(q.release(epsilon=1.0))
    native = df.with_columns(
        decade=(pl.col("Age") / 10).floor() * 10,
        ratio=pl.when(pl.col("Age") != 0).then(100 / pl.col("Age")),
    )
    held = dp.Session(engine(native), schema=native.schema, **unit)
    want = to_polars(
        held.query()
        .filter(nw.col("decade") >= 20)
        .group_by("decade", keys=[20.0, 30.0, 40.0, 50.0, 60.0, 70.0])
        .agg(dp.count(), dp.mean("ratio", bounds=(0, 10)))
        .release(epsilon=1.0)
    )
    assert got.equals(want)
