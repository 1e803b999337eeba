"""Neighbouring tables get the same outcome: no exception, warning, output type or ledger
entry of a release may depend on one record (it carries no noise, so it would tell the two
tables apart with certainty). Each pair differs by one record (added, removed or replaced);
the query and everything public are the same; the outcome is compared on every engine.
"""

from __future__ import annotations

import datetime
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import narwhals as nw
import polars as pl
import pytest

import dpkit as dp

Outcome = tuple[Any, ...]


def _duckdb(df: pl.DataFrame, tmp: Path) -> Any:
    import duckdb

    return duckdb.connect().from_arrow(df.to_arrow())


def _csv(df: pl.DataFrame, tmp: Path) -> Any:
    path = tmp / f"t{len(list(tmp.iterdir()))}.csv"
    df.write_csv(path)
    return str(path)


MAKERS: dict[str, Callable[[pl.DataFrame, Path], Any]] = {
    "polars": lambda df, tmp: df,
    "pandas": lambda df, tmp: df.to_pandas(),
    "duckdb": _duckdb,
    "csv": _csv,
}


@pytest.fixture(params=[*MAKERS, pytest.param("spark", marks=pytest.mark.spark)])
def make(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[pl.DataFrame], Any]:
    if request.param == "spark":
        return request.getfixturevalue("to_spark")  # type: ignore[no-any-return]
    maker = MAKERS[request.param]
    return lambda df: maker(df, tmp_path)


def _dtypes(frame: Any) -> list[str]:
    if isinstance(frame, pl.DataFrame):
        return [str(t) for t in frame.dtypes]
    if hasattr(frame, "toArrow"):  # Spark
        return [f.dataType.simpleString() for f in frame.schema.fields]
    return [str(t) for t in frame.dtypes]


def outcome(data: Any, build: Callable[[dp.Session], Any], **session: Any) -> Outcome:
    """What a release tells without noise: released or raised (and the error's type and
    message), the output's columns and types, every warning, the ledger's labels and costs."""
    session.setdefault("budget", dp.ApproxDP(10.0, 1e-3))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s = dp.Session(data, **session)
        try:
            out = build(s)
            result: tuple[Any, ...] = ("released", list(out.columns), _dtypes(out))
        except Exception as err:  # the outcome under test
            result = ("raised", type(err).__name__, str(err))
    ledger = [(e.label, e.cost) for e in s.accountant.history]
    return (*result, sorted(str(w.message) for w in caught), ledger)


def same_outcome(
    make: Callable[[pl.DataFrame], Any],
    a: pl.DataFrame,
    b: pl.DataFrame,
    build: Callable[[dp.Session], Any],
    **session: Any,
) -> Outcome:
    got_a = outcome(make(a), build, **session)
    got_b = outcome(make(b), build, **session)
    assert got_a == got_b
    return got_a


def _count_where(condition: nw.Expr) -> Callable[[dp.Session], Any]:
    return lambda s: s.query().filter(condition).agg(dp.count()).release(epsilon=1.0, rng=1)


# -- row operations: one value cannot make a filter fail or warn -------------------------------

FILTERS = {
    "text cast to an integer": (
        {"s": ["1", "2", "3"]},
        {"s": ["1", "2", "x"]},
        nw.col("s").cast(nw.Int64) > 0,
    ),
    "integer product overflowing": ({"a": [1, 2, 3]}, {"a": [1, 2, 2**40]}, nw.col("a") ** 2 > 0),
    "integer cast to Int8": ({"a": [1, 2, 3]}, {"a": [1, 2, 300]}, nw.col("a").cast(nw.Int8) > 0),
    "integer floor division by 0": (
        {"a": [1, 2, 3]},
        {"a": [1, 2, 0]},
        nw.lit(10) // nw.col("a") > 0,
    ),
    "log of a negative number": (
        {"a": [1.0, 2.0, 3.0]},
        {"a": [1.0, 2.0, -1.0]},
        nw.col("a").log() > -100,
    ),
    "square root of a negative number": (
        {"a": [1.0, 2.0, 3.0]},
        {"a": [1.0, 2.0, -1.0]},
        nw.col("a").sqrt() > -100,
    ),
    "text parsed as a date": (
        {"s": ["2020-01-01"] * 3},
        {"s": ["2020-01-01", "2020-01-01", "bad"]},
        nw.col("s").str.to_datetime("%Y-%m-%d").dt.year() > 0,
    ),
    "float division by 0": ({"a": [1.0, 2.0, 3.0]}, {"a": [1.0, 2.0, 0.0]}, 1.0 / nw.col("a") > 0),
}


@pytest.mark.parametrize("case", list(FILTERS))
def test_a_filter_releases_alike_on_neighbours(
    make: Callable[[pl.DataFrame], Any], case: str
) -> None:
    a_cols, b_cols, condition = FILTERS[case]
    a, b = pl.DataFrame(a_cols), pl.DataFrame(b_cols)
    got = same_outcome(make, a, b, _count_where(condition), schema=a.schema)
    assert got[0] == "released" and got[3] == [] and len(got[4]) == 1


@pytest.mark.parametrize("maker", ["polars", "pandas", "duckdb"])
def test_a_filter_is_not_run_before_the_spend(maker: str, tmp_path: Path) -> None:
    """explain() and an overspending release never evaluate a filter: the same plan, the
    same BudgetExceededError, no warning, nothing spent, on both tables (pandas used to run
    it when the query was built)."""
    for a, b, condition in FILTERS.values():
        data_a, data_b = (MAKERS[maker](pl.DataFrame(t), tmp_path) for t in (a, b))
        results = []
        for data in (data_a, data_b):
            s = dp.Session(data, schema=pl.DataFrame(a).schema, budget=dp.PureDP(1.0))
            q = s.query().filter(condition).agg(dp.count())
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                text = str(q.explain(epsilon=1.0))
                with pytest.raises(dp.BudgetExceededError):
                    q.release(epsilon=5.0)
            results.append(text)
            assert s.accountant.history == ()
        assert results[0] == results[1]


# -- the schema is public: one record does not change it ---------------------------------------


def test_undeclared_csv_text_releases_alike_whatever_one_value(tmp_path: Path) -> None:
    """One ``x`` among numbers (early, or after the 10,000 rows a reader would infer types
    from), or one ``7.5`` among integers: a CSV file without ``schema=`` is text, which a
    sum parses (the ``x`` counts as missing) and a quantile treats alike."""

    def make(df: pl.DataFrame) -> Any:
        return _csv(df, tmp_path)

    base = [str(i % 90) for i in range(10_050)]
    a = pl.DataFrame({"a": base})
    for b_values in ([*base[:-1], "x"], ["x", *base[1:]], [*base[:-1], "7.5"]):
        b = pl.DataFrame({"a": b_values})
        for build in (
            lambda s: s.query().agg(dp.sum("a", bounds=(0, 100))).release(epsilon=1.0),
            lambda s: (
                s.query().agg(dp.quantile("a", [0.25, 0.75], bounds=(0, 100))).release(epsilon=1.0)
            ),
            _count_where(nw.col("a") == "1"),
        ):
            got = same_outcome(make, a, b, build)
            assert got[0] == "released"


def test_pandas_types_do_not_follow_one_value() -> None:
    """pandas turns integers into floats at one null, and text (or numbers) into ``object``
    at one value of another kind; the Session's public types do not follow: the same
    refusals (``method="cdf"`` needs a declared integer type), releases and key types."""
    pd = pytest.importorskip("pandas")
    ints = pd.DataFrame({"a": [10, 20, 30, 40]}), pd.DataFrame({"a": [10, 20, 30, None]})
    text = pd.DataFrame({"k": ["a", "b", "a"]}), pd.DataFrame({"k": ["a", "b", 3]})
    nums = pd.DataFrame({"a": [1.0, 2.0, 3.0]}), pd.DataFrame({"a": [1.0, 2.0, "3"]})
    keys = pd.DataFrame({"k": [1, 2, 3]}), pd.DataFrame({"k": [1, 2, None]})

    def cdf(s: dp.Session) -> Any:
        q = dp.quantile("a", [0.25, 0.5], bounds=(0, 100), method="cdf")
        return s.query().agg(q).release(epsilon=1.0)

    def median(s: dp.Session) -> Any:
        return s.query().agg(dp.median("a", bounds=(0, 100))).release(epsilon=1.0)

    def total(s: dp.Session) -> Any:
        return s.query().agg(dp.sum("a", bounds=(0, 10))).release(epsilon=1.0)

    def by(keys: Any) -> Callable[[dp.Session], Any]:
        delta = 1e-6 if keys is None else 0.0
        return lambda s: (
            s.query().group_by("k", keys=keys).agg(dp.count()).release(epsilon=1.0, delta=delta)
        )

    cases = [
        (ints, cdf, "raised"),
        (ints, median, "released"),
        (nums, total, "released"),
        (text, by(["a", "b"]), "released"),
        (text, by(None), "released"),
        (keys, by([1, 2]), "released"),
        (keys, by(None), "released"),
    ]
    for (a, b), build, kind in cases:
        got = outcome(a, build)
        assert got == outcome(b, build)
        assert got[0] == kind


# -- no table is too small or too large ---------------------------------------------------------


def test_an_empty_table_releases_like_a_one_row_table(make: Callable[[pl.DataFrame], Any]) -> None:
    one = pl.DataFrame({"g": ["a"], "x": [1.0]})
    none = one.clear()

    def build(s: dp.Session) -> Any:
        return (
            s.query()
            .group_by("g", keys=["a", "b"])
            .agg(dp.count(), dp.mean("x", bounds=(0, 10)), dp.median("x", bounds=(0, 10)))
            .release(epsilon=1.0)
        )

    got = same_outcome(make, one, none, build, schema=one.schema)
    assert got[0] == "released" and len(got[4]) == 1


def test_a_row_without_a_privacy_unit_changes_nothing(make: Callable[[pl.DataFrame], Any]) -> None:
    """A row whose unit is null belongs to no one the Session can bound: it is left out, so
    adding it changes neither the outcome nor, with the same seed, a released value."""
    a = pl.DataFrame({"pid": [1, 2, 3], "x": [1.0, 2.0, 3.0]})
    b = pl.concat([a, pl.DataFrame({"pid": [None, None], "x": [9.0, 4.0]}, schema=a.schema)])

    def build(s: dp.Session) -> Any:
        q = s.query().agg(dp.count(), dp.sum("x", bounds=(0, 10)))
        return q.release(epsilon=1.0, rng=5)

    kw = {"schema": a.schema, "privacy_unit": "pid", "max_rows_per_unit": 1}
    assert same_outcome(make, a, b, build, **kw)[0] == "released"
    frames = [dp.Session(make(t), budget=dp.PureDP(9.0), **kw) for t in (a, b)]
    out = [build(s) for s in frames]
    if hasattr(out[0], "toArrow"):
        out = [pl.from_arrow(o.toArrow()) for o in out]
    elif not isinstance(out[0], pl.DataFrame):
        out = [pl.from_pandas(o) for o in out]
    assert out[0].equals(out[1])


# -- files and frames that change between releases ----------------------------------------------


def test_a_rewritten_file_is_refused_before_the_spend(tmp_path: Path) -> None:
    """A path-based Session reads the file's schema again before each spend: a file
    rewritten with other columns or types is refused before anything is spent; a file whose
    values change under the same schema releases (text that does not parse is missing)."""
    for suffix in (".csv", ".parquet"):
        path = tmp_path / f"t{suffix}"
        write = pl.DataFrame.write_csv if suffix == ".csv" else pl.DataFrame.write_parquet
        write(pl.DataFrame({"x": [1.0] * 5}), path)
        s = dp.Session(path, schema={"x": "float64"}, budget=dp.PureDP(10.0))
        s.count(epsilon=1.0)
        write(pl.DataFrame({"y": ["a"] * 5}), path)
        with pytest.raises(dp.ParameterError, match="schema changed"):
            s.mean("x", bounds=(0, 10), epsilon=1.0)
        path.unlink()
        with pytest.raises(dp.ParameterError, match="schema changed"):
            s.count(epsilon=1.0)
        assert len(s.accountant.history) == 1
    path = tmp_path / "same.csv"
    pl.DataFrame({"x": [1.0] * 5}).write_csv(path)
    s = dp.Session(path, budget=dp.PureDP(10.0))
    path.write_text("x\nfoo\n2\n")
    assert s.mean("x", bounds=(0, 10), epsilon=1.0).height == 1


def test_a_pandas_column_reassigned_is_refused_before_the_spend() -> None:
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"x": [1.0, 2.0], "d": [datetime.datetime(2020, 1, 1)] * 2})
    s = dp.Session(df, budget=dp.PureDP(10.0))
    s.count(epsilon=1.0)
    df["x"] = [1, 2]  # int64: the same public type (Float64) as float64
    s.count(epsilon=1.0)
    df["d"] = ["a", "b"]  # text: another public type
    with pytest.raises(dp.ParameterError, match="schema changed"):
        s.count(epsilon=1.0)
    assert len(s.accountant.history) == 2


# -- inputs that cannot be read ------------------------------------------------------------------


def test_unreadable_inputs_get_a_clear_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(dp.ParameterError, match=r"empty.csv.*as CSV: the file is empty"):
        dp.Session(empty, budget=dp.PureDP(1.0))
    corrupt = tmp_path / "bad.parquet"
    corrupt.write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(dp.ParameterError, match=r"bad.parquet.*as Parquet"):
        dp.Session(corrupt, budget=dp.PureDP(1.0))
    with pytest.raises(FileNotFoundError, match="no such file"):
        dp.Session(tmp_path / "missing.csv", budget=dp.PureDP(1.0))
    header = tmp_path / "header.csv"
    header.write_text("x,y\n")
    s = dp.Session(header, budget=dp.PureDP(1.0))  # no rows: a table, empty
    assert s.schema == {"x": nw.String(), "y": nw.String()}
    pd = pytest.importorskip("pandas")
    twice = pd.DataFrame([[1.0, 2.0]], columns=["x", "x"])
    with pytest.raises(dp.ParameterError, match=r"duplicate column names \['x'\]"):
        dp.Session(twice, budget=dp.PureDP(1.0))


def test_pandas_released_key_types_follow_the_schema_not_the_keys() -> None:
    """A released key column's pandas type comes from the key's type: ``Int64`` (nullable)
    for integer keys whether or not a released key is null, ``str`` for text keys even when
    no group is released."""
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"k": pd.array([1, 2, None], dtype="Int64"), "t": ["a", "b", "a"]})
    s = dp.Session(df, budget=dp.ApproxDP(100.0, 1e-3), rng=1)
    for keys in ([1, 2], [1, None]):
        out = s.query().group_by("k", keys=keys).agg(dp.count()).release(epsilon=1.0)
        assert str(out["k"].dtype) == "Int64" and str(out["count"].dtype) == "int64"
    none = s.query().filter(nw.col("t") == "zz").group_by("t").agg(dp.count())
    out = none.release(epsilon=1.0, delta=1e-6)  # no group passes the threshold
    assert len(out) == 0 and out["t"].dtype == pd.Series(["a"], dtype="str").dtype
