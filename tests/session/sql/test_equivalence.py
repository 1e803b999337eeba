"""Every SQL query releases exactly what the same query written with the Session's builder
releases (same seed, same table): SQL compiles into the Session's own plan, so the engines,
bounding, noise and intervals are the Session's; what SQL adds after the release (the SELECT
list's names and order, HAVING, ORDER BY, LIMIT, arithmetic on released values) is written
out by hand here in Polars.

Polars, pandas and DuckDB run the whole table; Spark runs the cases marked ``spark`` (one
per kind of construct: grouping, derived keys, joins, CTEs, quantiles, post-processing),
which keeps the Spark part within a few seconds per case.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import narwhals as nw
import polars as pl
import pytest

import dpkit as dp

from .conftest import REGIONS, private_table

DATA = private_table()
SEX = ["F", "M"]
EDU = ["BA", "HS", "MA", "PhD"]
AGE = {"Age": (0, 100)}
SEED = 11


@dataclass
class Case:
    """One query: the SQL and its keyword arguments, and the same release by hand."""

    id: str
    sql: str
    hand: Callable[[dp.Session, Callable[..., pl.DataFrame]], pl.DataFrame]
    kw: dict[str, Any] = field(default_factory=dict)
    unit: bool = False
    spark: bool = False


def _q(s: dp.Session, **kw: Any) -> Any:
    return s.query(**kw)


def _mapped(frame: pl.DataFrame, pairs: list[tuple[str, str]]) -> pl.DataFrame:
    """``frame``'s value columns ``src`` as ``out`` (with their intervals), in order."""
    cols: list[pl.Expr] = []
    for src, out in pairs:
        cols.append(pl.col(src).alias(out))
        if f"{src}_low" in frame.columns:
            cols += [pl.col(f"{src}_{e}").alias(f"{out}_{e}") for e in ("low", "high")]
    return frame.select(cols)


def _ids(s: dp.Session) -> list[Any]:
    """The public region ids in the type the Session reads ``region`` in (pandas: Float64)."""
    ids = REGIONS["id"].to_list()
    return [float(i) for i in ids] if s.schema["region"].is_float() else ids


def LOOKUP(s: dp.Session, column: str = "name") -> nw.Expr:
    """``region`` looked up in the public table, as a join does."""
    values = REGIONS[column].to_list()
    return nw.col("region").replace_strict(_ids(s), values, default=None, return_dtype=nw.String)


def KNOWN(s: dp.Session) -> nw.Expr:
    return nw.col("region").is_in(_ids(s))


CASES = [
    Case("count", "SELECT COUNT(*) FROM data", lambda s, r: r(_q(s).agg(dp.count())), spark=True),
    Case(
        "count-alias",
        "SELECT COUNT(*) AS n FROM data",
        lambda s, r: r(_q(s).agg(dp.count(name="n"))),
    ),
    Case(
        "count-column",
        "SELECT COUNT(income) FROM data",
        lambda s, r: r(_q(s).agg(dp.count("income"))),
    ),
    Case(
        "sum-bounds",
        "SELECT SUM(Age) FROM data",
        lambda s, r: r(_q(s).agg(dp.sum("Age", bounds=(0, 100)))),
        {"bounds": AGE},
    ),
    Case(
        "avg-clamp",
        "SELECT AVG(CLAMP(Age, 0, 100)) AS a FROM data",
        lambda s, r: r(_q(s).agg(dp.mean("Age", bounds=(0, 100), name="a"))),
    ),
    Case(
        "avg-least-greatest",
        "SELECT AVG(LEAST(GREATEST(Age, 18), 90)) AS a FROM data",
        lambda s, r: r(_q(s).agg(dp.mean("Age", bounds=(18, 90), name="a"))),
    ),
    Case(
        "var-pop",
        "SELECT VAR_POP(Age) FROM data",
        lambda s, r: r(_q(s).agg(dp.var("Age", bounds=(0, 100)))),
        {"bounds": AGE},
    ),
    Case(
        "variance-alias",
        "SELECT VARIANCE(Age) AS v FROM data",
        lambda s, r: r(_q(s).agg(dp.var("Age", bounds=(0, 100), name="v"))),
        {"bounds": AGE},
    ),
    Case(
        "stddev",
        'SELECT STDDEV("Hours per week") FROM data',
        lambda s, r: r(_q(s).agg(dp.std("Hours per week", bounds=(0, 100)))),
        {"bounds": {"Hours per week": (0, 100)}},
    ),
    Case(
        "stddev-pop-bounds-by-alias",
        'SELECT STDDEV_POP("Hours per week") AS sd FROM data',
        lambda s, r: r(_q(s).agg(dp.std("Hours per week", bounds=(0, 99), name="sd"))),
        {"bounds": {"sd": (0, 99)}},
    ),
    Case(
        "median",
        "SELECT MEDIAN(Age) FROM data",
        lambda s, r: r(_q(s).agg(dp.median("Age", bounds=(0, 100)))),
        {"bounds": AGE},
        spark=True,
    ),
    Case(
        "percentile-within-group",
        "SELECT PERCENTILE_CONT(0.9) WITHIN GROUP (ORDER BY Age) AS p90 FROM data",
        lambda s, r: _mapped(
            r(_q(s).agg(dp.quantile("Age", [0.9], bounds=(0, 100)))), [("Age_0.9", "p90")]
        ),
        {"bounds": AGE},
    ),
    Case(
        "percentile-descending",
        "SELECT PERCENTILE_DISC(0.9) WITHIN GROUP (ORDER BY Age DESC) AS p FROM data",
        lambda s, r: _mapped(
            r(_q(s).agg(dp.quantile("Age", [0.1], bounds=(0, 100)))), [("Age_0.1", "p")]
        ),
        {"bounds": AGE},
    ),
    Case(
        "quantile-list",
        "SELECT QUANTILE_CONT(Age, [0.25, 0.5, 0.75]) FROM data",
        lambda s, r: r(_q(s).agg(dp.quantile("Age", [0.25, 0.5, 0.75], bounds=(0, 100)))),
        {"bounds": AGE},
    ),
    Case(
        "quantiles-merged",
        "SELECT MEDIAN(Age), QUANTILE_CONT(Age, 0.1) AS p10, "
        "PERCENTILE_CONT(0.9) WITHIN GROUP (ORDER BY Age) AS p90 FROM data",
        lambda s, r: _mapped(
            r(_q(s).agg(dp.quantile("Age", [0.1, 0.5, 0.9], bounds=(0, 100)))),
            [("Age_0.5", "Age_median"), ("Age_0.1", "p10"), ("Age_0.9", "p90")],
        ),
        {"bounds": AGE},
        spark=True,
    ),
    Case(
        "group-public-keys",
        "SELECT Sex, COUNT(*) FROM data GROUP BY Sex",
        lambda s, r: r(_q(s).group_by("Sex", keys=SEX).agg(dp.count())),
        {"keys": {"Sex": SEX}},
        spark=True,
    ),
    Case(
        "group-two-columns",
        "SELECT Sex, Education, COUNT(*), AVG(Age) FROM data GROUP BY Sex, Education",
        lambda s, r: r(
            _q(s)
            .group_by("Sex", "Education", keys=list(itertools.product(SEX, EDU)))
            .agg(dp.count(), dp.mean("Age", bounds=(0, 100)))
        ),
        {"keys": {"Sex": SEX, "Education": EDU}, "bounds": AGE},
    ),
    Case(
        "group-keys-frame",
        "SELECT Education AS e, COUNT(*) FROM data GROUP BY Education",
        lambda s, r: _mapped(
            r(_q(s).group_by("Education", keys=EDU[:2]).agg(dp.count())),
            [("Education", "e"), ("count", "count")],
        ),
        {"keys": pl.DataFrame({"e": EDU[:2]})},
    ),
    Case(
        "group-private-keys",
        "SELECT Education, COUNT(*) FROM data GROUP BY Education",
        lambda s, r: r(_q(s).group_by("Education").agg(dp.count()), delta=1e-6),
        {"delta": 1e-6},
        spark=True,
    ),
    Case(
        "group-ordinal-order-by",
        "SELECT Education, COUNT(*) AS n FROM data GROUP BY 1 ORDER BY n DESC",
        lambda s, r: r(_q(s).group_by("Education").agg(dp.count(name="n")), delta=1e-6).sort(
            "n", descending=True, maintain_order=True
        ),
        {"delta": 1e-6},
    ),
    Case(
        "where-and",
        "SELECT COUNT(*) FROM data WHERE Age >= 30 AND Sex = 'F'",
        lambda s, r: r(
            _q(s).filter((nw.col("Age") >= 30) & (nw.col("Sex") == "F")).agg(dp.count())
        ),
    ),
    Case(
        "where-in-between-like",
        "SELECT COUNT(*) FROM data WHERE Education IN ('BA', 'MA') AND Age BETWEEN 20 AND 40 "
        "AND code LIKE '1%'",
        lambda s, r: r(
            _q(s)
            .filter(
                nw.col("Education").is_in(["BA", "MA"])
                & ((nw.col("Age") >= 20) & (nw.col("Age") <= 40))
                & nw.col("code").str.contains("(?s)^1.*$")
            )
            .agg(dp.count())
        ),
    ),
    Case(
        "where-null-not",
        "SELECT COUNT(*) FROM data WHERE income IS NOT NULL AND NOT (Sex = 'M')",
        lambda s, r: r(
            _q(s).filter(~nw.col("income").is_null() & ~(nw.col("Sex") == "M")).agg(dp.count())
        ),
    ),
    Case(
        "where-division-by-zero-on-one-person",
        "SELECT COUNT(*) FROM data WHERE CASE WHEN pid = 17 THEN 1 / 0 ELSE 1 END = 1",
        lambda s, r: r(
            _q(s)
            .filter(nw.when(nw.col("pid") == 17).then(nw.lit(1) / 0).otherwise(nw.lit(1)) == 1)
            .agg(dp.count())
        ),
        spark=True,
    ),
    Case(
        "where-cast",
        "SELECT COUNT(*) FROM data WHERE CAST(code AS INTEGER) > 5",
        lambda s, r: r(_q(s).filter(nw.col("code").cast(nw.Int32) > 5).agg(dp.count())),
    ),
    Case(
        "derived-key",
        "SELECT FLOOR(Age / 10) * 10 AS decade, COUNT(*) FROM data GROUP BY decade",
        lambda s, r: r(
            _q(s)
            .with_columns(decade=(nw.col("Age") / 10).floor() * 10)
            .group_by("decade", keys=list(range(10, 100, 10)))
            .agg(dp.count())
        ),
        {"keys": {"decade": list(range(10, 100, 10))}},
        spark=True,
    ),
    Case(
        "derived-argument",
        "SELECT SUM(CLAMP(Age * 2, 0, 200)) AS s FROM data",
        lambda s, r: r(
            _q(s).with_columns(a2=nw.col("Age") * 2).agg(dp.sum("a2", bounds=(0, 200), name="s"))
        ),
    ),
    Case(
        "case-in-aggregate",
        "SELECT AVG(CASE WHEN Sex = 'F' THEN 1 ELSE 0 END) AS share FROM data",
        lambda s, r: r(
            _q(s)
            .with_columns(f=nw.when(nw.col("Sex") == "F").then(nw.lit(1)).otherwise(nw.lit(0)))
            .agg(dp.mean("f", bounds=(0, 1), name="share"))
        ),
        {"bounds": {"share": (0, 1)}},
    ),
    Case(
        "sum-of-a-condition",
        "SELECT SUM(Age > 40) AS old FROM data",
        lambda s, r: r(
            _q(s)
            .with_columns(old=(nw.col("Age") > 40).cast(nw.Int64))
            .agg(dp.sum("old", bounds=(0, 1), name="old"))
        ),
        {"bounds": {"old": (0, 1)}},
    ),
    Case(
        "coalesce",
        "SELECT AVG(COALESCE(income, 0)) AS m FROM data",
        lambda s, r: r(
            _q(s)
            .with_columns(m0=nw.coalesce(nw.col("income"), nw.lit(0)))
            .agg(dp.mean("m0", bounds=(0, 1e5), name="m"))
        ),
        {"bounds": {"m": (0, 1e5)}},
    ),
    Case(
        "cte-filter",
        "WITH t AS (SELECT Age, Sex FROM data WHERE Age > 25) "
        "SELECT Sex, COUNT(*) FROM t GROUP BY Sex",
        lambda s, r: r(_q(s).filter(nw.col("Age") > 25).group_by("Sex", keys=SEX).agg(dp.count())),
        {"keys": {"Sex": SEX}},
        spark=True,
    ),
    Case(
        "cte-derived-and-outer-where",
        "WITH t AS (SELECT Age * 2 AS a2, Sex FROM data) SELECT AVG(a2) FROM t WHERE a2 > 50",
        lambda s, r: r(
            _q(s)
            .with_columns(a2=nw.col("Age") * 2)
            .filter(nw.col("Age") * 2 > 50)
            .agg(dp.mean("a2", bounds=(0, 200)))
        ),
        {"bounds": {"a2": (0, 200)}},
    ),
    Case(
        "subquery-in-from",
        "SELECT COUNT(*) FROM (SELECT * FROM data WHERE Sex = 'M') AS t",
        lambda s, r: r(_q(s).filter(nw.col("Sex") == "M").agg(dp.count())),
    ),
    Case(
        "join-public-group-by-its-column",
        "SELECT r.name, COUNT(*) FROM data d JOIN regions r ON d.region = r.id GROUP BY r.name",
        lambda s, r: r(
            _q(s)
            .with_columns(name=LOOKUP(s))
            .filter(KNOWN(s))
            .group_by("name", keys=REGIONS["name"].to_list())
            .agg(dp.count())
        ),
        spark=True,
    ),
    Case(
        "left-join",
        "SELECT zone, COUNT(*) FROM data LEFT JOIN regions ON region = id GROUP BY zone",
        lambda s, r: r(
            _q(s)
            .with_columns(zone=LOOKUP(s, "zone"))
            .group_by("zone", keys=["a", "b", "c", None])
            .agg(dp.count())
        ),
    ),
    Case(
        "semi-join",
        "SELECT COUNT(*) FROM data SEMI JOIN regions ON region = id",
        lambda s, r: r(_q(s).filter(KNOWN(s)).agg(dp.count())),
    ),
    Case(
        "group-by-the-private-join-key",
        "SELECT d.region, COUNT(*) FROM data d JOIN regions r ON d.region = r.id GROUP BY d.region",
        lambda s, r: r(_q(s).filter(KNOWN(s)).group_by("region", keys=_ids(s)).agg(dp.count())),
    ),
    Case(
        "having",
        "SELECT Sex, COUNT(*) AS n FROM data GROUP BY Sex HAVING COUNT(*) > 200",
        lambda s, r: r(_q(s).group_by("Sex", keys=SEX).agg(dp.count(name="n"))).filter(
            pl.col("n") > 200
        ),
        {"keys": {"Sex": SEX}},
    ),
    Case(
        "ratio-of-released-values",
        "SELECT Sex, SUM(income) / COUNT(*) AS avg_income FROM data GROUP BY Sex",
        lambda s, r: r(
            _q(s).group_by("Sex", keys=SEX).agg(dp.sum("income", bounds=(0, 1e5)), dp.count())
        ).select("Sex", (pl.col("income_sum") / pl.col("count")).alias("avg_income")),
        {"keys": {"Sex": SEX}, "bounds": {"income": (0, 1e5)}},
        spark=True,
    ),
    Case(
        "order-by-limit",
        "SELECT Education, AVG(Age) AS a FROM data GROUP BY Education ORDER BY a DESC LIMIT 2",
        lambda s, r: (
            r(_q(s).group_by("Education", keys=EDU).agg(dp.mean("Age", bounds=(0, 100), name="a")))
            .sort("a", descending=True, maintain_order=True)
            .head(2)
        ),
        {"keys": {"Education": EDU}, "bounds": AGE},
    ),
    Case(
        "bounds-auto",
        "SELECT AVG(income) FROM data",
        lambda s, r: r(_q(s).agg(dp.mean("income", bounds="auto"))),
        {"bounds": {"income": "auto"}},
    ),
    Case(
        "privacy-unit",
        "SELECT Sex, COUNT(*), AVG(Age) FROM data GROUP BY Sex",
        lambda s, r: r(
            _q(s).group_by("Sex", keys=SEX).agg(dp.count(), dp.mean("Age", bounds=(0, 100)))
        ),
        {"keys": {"Sex": SEX}, "bounds": AGE},
        unit=True,
        spark=True,
    ),
    Case(
        "privacy-unit-bound-override",
        "SELECT Education, COUNT(*) FROM data GROUP BY Education",
        lambda s, r: r(_q(s, max_rows_per_unit=1).group_by("Education", keys=EDU).agg(dp.count())),
        {"keys": {"Education": EDU}, "max_rows_per_unit": 1},
        unit=True,
    ),
    Case(
        "text-function-key",
        "SELECT LOWER(Sex) AS s, COUNT(*) FROM data GROUP BY LOWER(Sex)",
        lambda s, r: r(
            _q(s)
            .with_columns(s=nw.col("Sex").str.to_lowercase())
            .group_by("s", keys=["f", "m"])
            .agg(dp.count())
        ),
        {"keys": {"s": ["f", "m"]}},
    ),
    Case(
        "date-key",
        "SELECT YEAR(d) AS y, COUNT(*) FROM data GROUP BY y",
        lambda s, r: r(
            _q(s)
            .with_columns(y=nw.col("d").dt.year())
            .group_by("y", keys=[2020, 2021, 2022])
            .agg(dp.count())
        ),
        {"keys": {"y": [2020, 2021, 2022]}},
    ),
    Case(
        "rho",
        "SELECT COUNT(*), AVG(Age) FROM data",
        lambda s, r: r(_q(s).agg(dp.count(), dp.mean("Age", bounds=(0, 100))), rho=0.5),
        {"rho": 0.5, "bounds": AGE},
    ),
    Case(
        "key-not-selected",
        "SELECT COUNT(*) AS n FROM data GROUP BY Sex",
        lambda s, r: r(_q(s).group_by("Sex", keys=SEX).agg(dp.count(name="n"))).select(
            "n", "n_low", "n_high"
        ),
        {"keys": {"Sex": SEX}},
    ),
    Case(
        "group-by-all",
        "SELECT Sex, COUNT(*) FROM data GROUP BY ALL",
        lambda s, r: r(_q(s).group_by("Sex", keys=SEX).agg(dp.count())),
        {"keys": {"Sex": SEX}},
    ),
    Case(
        "constant-column",
        "SELECT 'all' AS label, COUNT(*) FROM data",
        lambda s, r: r(_q(s).agg(dp.count())).select(pl.lit("all").alias("label"), pl.all()),
    ),
    Case(
        "key-expression-after-release",
        "SELECT Sex || '!' AS tag, COUNT(*) FROM data GROUP BY Sex",
        lambda s, r: r(_q(s).group_by("Sex", keys=SEX).agg(dp.count())).select(
            (pl.col("Sex") + "!").alias("tag"), "count", "count_low", "count_high"
        ),
        {"keys": {"Sex": SEX}},
    ),
]


def _session(data: Any, unit: bool) -> dp.Session:
    acct = dp.Accountant(dp.ApproxDP(100.0, 1e-3), zcdp_delta=1e-6)
    kw: dict[str, Any] = {"accountant": acct, "rng": SEED}
    if unit:
        kw |= {"privacy_unit": "pid", "max_rows_per_unit": 2}
    return dp.Session(data, public={"regions": REGIONS}, **kw)


def _check(case: Case, make: Callable[[pl.DataFrame], Any], to_polars: Any) -> None:
    sql_session = _session(make(DATA), case.unit)
    kw = dict(case.kw)
    budget = {k: kw.pop(k) for k in ("delta", "rho") if k in kw}
    eps = {} if "rho" in budget else {"epsilon": 1.0}
    got = to_polars(sql_session.sql(case.sql, **eps, **budget, **kw))
    hand_session = _session(make(DATA), case.unit)

    def release(q: Any, **release_kw: Any) -> pl.DataFrame:
        eps_kw = {} if "rho" in release_kw else {"epsilon": 1.0}
        return to_polars(q.release(**eps_kw, **release_kw))

    want = case.hand(hand_session, release)
    assert got.columns == want.columns, (got.columns, want.columns)
    assert got.equals(want), f"{case.id}:\n{got}\n{want}"
    spent = sql_session.accountant.history
    assert len(spent) == 1  # one release, one entry, the same cost as the hand-written one
    assert [e.cost for e in spent] == [e.cost for e in hand_session.accountant.history]


ENGINES = {
    "polars": lambda df: df,
    "pandas": lambda df: df.to_pandas(),
    "duckdb": lambda df: __import__("duckdb").connect().from_arrow(df.to_arrow()),
}


@pytest.mark.parametrize("engine_name", list(ENGINES))
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_sql_releases_what_the_session_query_releases(
    case: Case, engine_name: str, to_polars: Callable[[Any], pl.DataFrame]
) -> None:
    _check(case, ENGINES[engine_name], to_polars)


SPARK_CASES = [c for c in CASES if c.spark]


@pytest.mark.spark
@pytest.mark.parametrize("case", SPARK_CASES, ids=[c.id for c in SPARK_CASES])
def test_sql_releases_what_the_session_query_releases_on_spark(
    case: Case, to_spark: Any, to_polars: Callable[[Any], pl.DataFrame]
) -> None:
    _check(case, to_spark, to_polars)


def test_the_table_is_large_enough() -> None:
    assert len(CASES) >= 40
    assert len({c.id for c in CASES}) == len(CASES)
