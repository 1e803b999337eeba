"""Total row expressions: every rewrite gives the same null pattern on every engine, and
what cannot be made total is refused from the expression and the schema alone."""

from __future__ import annotations

import datetime
import math
import re
import warnings
from collections.abc import Callable
from typing import Any

import narwhals as nw
import polars as pl
import pytest

import dpkit as dp
from dpkit.session._total import columns_of, total_cast, total_expression, total_predicate

I64 = 2**63
#: one column per type the rewrites read; every value an engine could fail or warn on
TABLE = pl.DataFrame(
    {
        "s": [
            "1",
            "-0",
            "007",
            "x9",
            "",
            None,
            "12\n",
            " 5",
            "123456789012345678",
            "1234567890123456789",
            "1e5",
            "2.5",
        ],
        "i": [1, -1, 0, 2**40, -(2**40), None, I64 - 1, -I64, 300, -129, 7, 3],
        "f": [
            1.5,
            -2.0,
            0.0,
            math.inf,
            -math.inf,
            math.nan,
            None,
            1e300,
            -0.0,
            3.0,
            2.0**63,
            5e-324,
        ],
        "d": [
            "2020-01-01",
            "2020-02-30",
            "2021-02-29",
            "2024-02-29",
            "2020-13-01",
            "2020-01-01 10:11:12",
            "2020-01-01T23:59:59",
            "2020-01-01T24:00:00",
            "bad",
            None,
            "0001-01-01",
            "9999-12-31",
        ],
    },
    schema={"s": pl.String, "i": pl.Int64, "f": pl.Float64, "d": pl.String},
)


def _duckdb(df: pl.DataFrame) -> Any:
    import duckdb

    return duckdb.connect().from_arrow(df.to_arrow())


@pytest.fixture(params=["polars", "duckdb", pytest.param("spark", marks=pytest.mark.spark)])
def run(request: pytest.FixtureRequest) -> Callable[[nw.Expr], list[Any]]:
    """``run(expr)``: the values of a total expression over TABLE on one engine, with every
    warning an error (a warning that one value triggers is an outcome too)."""
    if request.param == "spark":
        frame = nw.from_native(request.getfixturevalue("to_spark")(TABLE))
    elif request.param == "duckdb":
        frame = nw.from_native(_duckdb(TABLE))
    else:
        frame = nw.from_native(TABLE.lazy())

    def values(expr: nw.Expr) -> list[Any]:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            out = frame.select(expr.alias("v")).collect("polars").to_native()
        return out["v"].to_list()

    values.engine = request.param  # type: ignore[attr-defined]
    return values


def _same(got: list[Any], want: list[Any]) -> bool:
    """The same nulls in the same places and equal values (NaN equal to NaN; floats to the
    last bits, where engines' logarithms differ)."""
    if len(got) != len(want):
        return False
    for g, w in zip(got, want, strict=True):
        if (g is None) != (w is None):
            return False
        if isinstance(w, float) and isinstance(g, float):
            if math.isnan(w) != math.isnan(g):
                return False
            if not math.isnan(w) and not math.isclose(g, w, rel_tol=1e-14, abs_tol=0.0):
                return False
            if w == 0 and math.copysign(1, w) != math.copysign(1, g):
                return False
        elif g != w:
            return False
    return True


SCHEMA = {"s": nw.String(), "i": nw.Int64(), "f": nw.Float64(), "d": nw.String()}


def _total(expr: nw.Expr) -> nw.Expr:
    return total_expression(expr, SCHEMA, "test")[0].expr


N = None
CASES: dict[str, tuple[nw.Expr, list[Any]]] = {
    # text to integers: at most 18 ASCII digits and a sign, nothing around them
    "str->int64": (
        nw.col("s").cast(nw.Int64),
        [1, 0, 7, N, N, N, N, N, 123456789012345678, N, N, N],
    ),
    # then the target's range
    "str->int8": (nw.col("s").cast(nw.Int8), [1, 0, 7, N, N, N, N, N, N, N, N, N]),
    "str->float": (
        nw.col("s").cast(nw.Float64),
        [1.0, -0.0, 7.0, N, N, N, N, N, 1.2345678901234568e17, 1.2345678901234568e18, 1e5, 2.5],
    ),
    "int->int8": (nw.col("i").cast(nw.Int8), [1, -1, 0, N, N, N, N, N, N, N, 7, 3]),
    "int->uint32": (nw.col("i").cast(nw.UInt32), [1, N, 0, N, N, N, N, N, 300, N, 7, 3]),
    # whole floats in range only (DuckDB would round 1.5, the others truncate)
    "float->int64": (
        nw.col("f").cast(nw.Int64),
        [N, -2, 0, N, N, N, N, N, 0, 3, N, N],
    ),
    "float->float32": (
        nw.col("f").cast(nw.Float32),
        [1.5, -2.0, 0.0, math.inf, -math.inf, math.nan, N, N, -0.0, 3.0, 2.0**63, 0.0],
    ),
    "str->bool": (nw.col("s").cast(nw.Boolean), [N] * 12),
    "str->date": (
        nw.col("d").cast(nw.Date),
        [
            datetime.date(2020, 1, 1),
            N,
            N,
            datetime.date(2024, 2, 29),
            N,
            N,
            N,
            N,
            N,
            N,
            datetime.date(1, 1, 1),
            datetime.date(9999, 12, 31),
        ],
    ),
    "str->datetime": (
        nw.col("d").cast(nw.Datetime("us")),
        [
            datetime.datetime(2020, 1, 1),
            N,
            N,
            datetime.datetime(2024, 2, 29),
            N,
            datetime.datetime(2020, 1, 1, 10, 11, 12),
            datetime.datetime(2020, 1, 1, 23, 59, 59),
            N,
            N,
            N,
            datetime.datetime(1, 1, 1),
            datetime.datetime(9999, 12, 31),
        ],
    ),
    "to_date": (
        nw.col("d").str.to_date("%Y-%m-%d").dt.year(),
        [2020, N, N, 2024, N, N, N, N, N, N, 1, 9999],
    ),
    # integer arithmetic whose result would leave Int64: null (DuckDB, Spark ANSI raise)
    "int*int": (
        nw.col("i") * nw.col("i"),
        [1, 1, 0, 2**80 and N, N, N, N, N, 90000, 16641, 49, 9],
    ),
    "int+int": (nw.col("i") + nw.col("i"), [2, -2, 0, 2**41, -(2**41), N, N, N, 600, -258, 14, 6]),
    "lit-int": (5 - nw.col("i"), [4, 6, 5, 5 - 2**40, 5 + 2**40, N, N, N, -295, 134, -2, 2]),
    "abs": (nw.col("i").abs(), [1, 1, 0, 2**40, 2**40, N, I64 - 1, N, 300, 129, 7, 3]),
    "neg": (-nw.col("i"), [-1, 1, 0, -(2**40), 2**40, N, -(I64 - 1), N, -300, 129, -7, -3]),
    # division, floor division and modulo by zero: null (pandas warns, DuckDB raises)
    "int//": (nw.lit(10) // nw.col("i"), [10, -10, N, 0, -1, N, 0, -1, 0, -1, 1, 3]),
    # and a divisor beyond 2**62 (DuckDB and Spark restore the sign as ((a % b) + b) % b)
    "int%": (nw.lit(10) % nw.col("i"), [0, 0, N, 10, 10 - 2**40, N, N, N, 10, -119, 3, 1]),
    "1/f": (
        1.0 / nw.col("f"),
        [1 / 1.5, -0.5, N, 0.0, -0.0, math.nan, N, 1e-300, N, 1 / 3, 2.0**-63, math.inf],
    ),
    "power": (nw.col("i") ** 2, [1, 1, 0, N, N, N, N, N, 90000, 16641, 49, 9]),
    # floor and ceil of floats: Spark's 64-bit result overflows (ANSI mode) on NaN, the
    # infinities and values past 2**63, which are whole already and pass as they are
    "floor": (
        nw.col("f").floor(),
        [1.0, -2.0, 0.0, math.inf, -math.inf, math.nan, N, 1e300, 0.0, 3.0, 2.0**63, 0.0],
    ),
    "ceil": (
        nw.col("f").ceil(),
        [2.0, -2.0, 0.0, math.inf, -math.inf, math.nan, N, 1e300, 0.0, 3.0, 2.0**63, 1.0],
    ),
    # a lookup with a default: every value has an image (the default is the rebuilt node's
    # argument, as narwhals holds it)
    "lookup": (
        nw.col("i").replace_strict([1, 300], ["one", "300"], default=None, return_dtype=nw.String),
        ["one", N, N, N, N, N, N, N, "300", N, N, N],
    ),
    # logarithm and square root on their domains only
    "log": (
        nw.col("f").log(),
        [
            math.log(1.5),
            N,
            N,
            math.inf,
            N,
            N,
            N,
            math.log(1e300),
            N,
            math.log(3.0),
            math.log(2.0**63),
            math.log(5e-324),
        ],
    ),
    "sqrt": (
        nw.col("f").sqrt(),
        [
            math.sqrt(1.5),
            N,
            0.0,
            math.inf,
            N,
            N,
            N,
            1e150,
            -0.0,
            math.sqrt(3.0),
            2.0**31.5,
            math.sqrt(5e-324),
        ],
    ),
}
CASES["int*int"] = (CASES["int*int"][0], [1, 1, 0, N, N, N, N, N, 90000, 16641, 49, 9])


@pytest.mark.parametrize("name", list(CASES))
def test_every_rewrite_gives_the_same_nulls_on_every_engine(
    name: str, run: Callable[[nw.Expr], list[Any]]
) -> None:
    expr, want = CASES[name]
    if name == "int->uint32" and getattr(run, "engine", "") == "spark":
        pytest.skip("Spark has no unsigned types (narwhals refuses the cast when it is built)")
    got = run(_total(expr))
    assert _same(got, want), f"{name}: got {got}, want {want}"


def test_casts_are_refused_from_their_types_alone() -> None:
    for source, target in [
        (nw.Int64(), nw.Date()),
        (nw.String(), nw.Decimal()),
        (nw.Date(), nw.Int64()),
        (nw.String(), nw.Datetime("us", "UTC")),
        (nw.Float64(), nw.Duration()),
    ]:
        with pytest.raises(dp.ParameterError, match=re.escape(f"cast from {source} to {target}")):
            total_cast(nw.col("x"), source, target, "test")


@pytest.mark.parametrize(
    ("expr", "match"),
    [
        (nw.col("i").map_batches(lambda s: s) > 0, r"map_batches.*narwhals expressions"),
        (nw.col("i") > nw.col("i").mean(), "row-by-row"),
        (nw.col("i").rank().over("s") < 3, "row-by-row"),
        (nw.col("s").str.to_datetime("%d/%m/%Y").dt.year() > 0, r"format='%d/%m/%Y'"),
        (nw.col("s").str.contains("(a"), "regular expression"),
        (nw.col("s").str.contains("(?=a)"), "regular expression"),
        (nw.col("s") > 1, r"comparison of String and Int32.*DuckDB casts text"),
        (nw.col("i").is_in(["a"]), "is_in with values"),
        (nw.col("i") ** nw.col("i") > 0, "column as exponent"),
        (nw.col("i") ** 20 > 0, "power 20"),
        (nw.col("f").log(1.0) > 0, "base 1.0"),
        (nw.col("i"), "boolean condition"),
        (nw.col("nope") > 0, "unknown column 'nope'"),
        (nw.col("i").fill_null(strategy="forward") > 0, "row-by-row"),
        (nw.sum_horizontal("i", "i") > 0, "sum_horizontal.*nw.Float64"),
    ],
)
def test_what_cannot_be_made_total_is_refused_with_a_hint(expr: nw.Expr, match: str) -> None:
    with pytest.raises(dp.ParameterError, match=match):
        total_predicate(expr, SCHEMA)


def test_a_predicate_is_null_safe_and_reads_its_columns() -> None:
    """A null condition drops the row (fill_null(False)); the columns read are reported."""
    pred, cols = total_predicate((nw.col("s").cast(nw.Int64) > 0) | nw.col("f").is_nan(), SCHEMA)
    assert cols == {"s", "f"} and columns_of(pred) == {"s", "f"}
    got = nw.from_native(TABLE).select(pred.alias("v")).to_native()["v"]
    assert got.null_count() == 0
    assert got.to_list() == [
        True,
        False,
        True,
        False,
        False,
        True,
        False,
        False,
        True,
        False,
        False,
        False,
    ]


def test_when_then_masks_every_branch_on_every_engine(
    run: Callable[[nw.Expr], list[Any]],
) -> None:
    """Engines that evaluate both branches of when/then for every row still never see a
    value an operation fails on: the operations' inputs are masked, not their outputs."""
    expr = nw.when(nw.col("i") != 0).then(nw.lit(100) // nw.col("i")).otherwise(nw.col("i") * 3)
    assert run(_total(expr)) == [100, -100, 0, 0, -1, N, 0, -1, 0, -1, 14, 33]


def test_a_cast_never_sees_a_value_it_cannot_convert_even_where_every_branch_runs() -> None:
    """An engine that evaluates both branches of when/then for every row (narwhals on
    pandas does) still never casts a value that does not convert: the cast's input is
    masked to a safe constant first, and its output masked back to null."""
    pd = pytest.importorskip("pandas")
    frame = nw.from_native(pd.DataFrame({"s": ["1", "x9", None, "7", "99999999999999999999"]}))
    got = frame.select(total_cast(nw.col("s"), nw.String(), nw.Int64()).alias("v"))["v"]
    assert got.is_null().to_list() == [False, True, True, False, True]
    assert [int(v) for v in got.drop_nulls().to_list()] == [1, 7]
