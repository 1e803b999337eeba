"""SQL on neighbouring tables: the analyst writes the query, and SQL is the classic way to
smuggle a private bit out through an error, a type or another table. Every query here either
releases on both tables of a neighbouring pair with the same outcome (no exception, the same
columns and types, the same ledger entry) or is refused before the spend on both, with the
same message; and the release's distribution is that of its plan.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl
import pytest

import dpkit as dp
from dpkit.session._sql import compile_query
from dpkit.session.batch import QuerySampler

from .conftest import REGIONS, private_table

BASE = private_table(120)
#: one more person (pid 17 is taken: this is pid 1000), whose record an adversarial query
#: singles out: a value that no cast converts, a float past 2**63, a new group
ADDED = pl.concat(
    [
        BASE,
        pl.DataFrame(
            {
                "pid": [1000],
                "Age": [90],
                "Sex": ["M"],
                "Education": ["Rare"],
                "Hours per week": [98],
                "income": [1e300],
                "code": ["x9"],
                "region": [17],
                "d": [BASE["d"][0]],
            },
            schema=BASE.schema,
        ),
    ]
)
#: the same table with person 17's records replaced by extreme ones
REPLACED = BASE.with_columns(
    code=pl.when(pl.col("pid") == 17).then(pl.lit("99999999999999999999")).otherwise("code"),
    income=pl.when(pl.col("pid") == 17).then(pl.lit(-math.inf)).otherwise("income"),
)

GROUPED = (
    "SELECT Education, COUNT(*) AS n, PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY Age) AS med "
    "FROM data GROUP BY Education"
)
QUERIES: dict[str, tuple[str, dict[str, Any]]] = {
    # private keys and a percentile: the group 'Rare' exists in one table only
    "grouped-private-keys-percentile": (GROUPED, {"delta": 1e-6, "bounds": {"Age": (0, 100)}}),
    # an error on one person's row would tell the tables apart: 1 / 0 is NULL
    "division-by-zero-on-one-person": (
        "SELECT Sex, COUNT(*) FROM data WHERE CASE WHEN pid = 1000 OR pid = 17 THEN 1 / 0 "
        "ELSE 1 END = 1 GROUP BY Sex",
        {"keys": {"Sex": ["F", "M"]}},
    ),
    # a cast that fails on one record ('x9', 20 digits) is NULL, as TRY_CAST
    "cast-failing-on-one-record": (
        "SELECT COUNT(*), AVG(CLAMP(CAST(code AS INTEGER), 0, 20)) AS c FROM data "
        "WHERE CAST(code AS BIGINT) >= 0",
        {},
    ),
    # floor of 1e300 or -inf: whole already (Spark's 64-bit floor would overflow)
    "floor-of-a-huge-value": (
        "SELECT COUNT(*) FROM data WHERE FLOOR(income / 1000) > 1 AND CEIL(income) > 0",
        {},
    ),
    # a public lookup that misses one person's region, and a LIKE on any text
    "join-and-like": (
        "SELECT r.zone, COUNT(*) FROM data d LEFT JOIN regions r ON d.region = r.id "
        "WHERE d.code LIKE '%9' OR d.code ILIKE 'X_' GROUP BY r.zone",
        {},
    ),
    # a subquery reading another table: refused before the spend, on both tables alike
    "subquery-reading-another-table": (
        "SELECT COUNT(*) FROM data WHERE pid IN (SELECT pid FROM secrets)",
        {},
    ),
    "aggregate-before-the-release": (
        "SELECT COUNT(*) FROM data WHERE Age > (SELECT AVG(Age) FROM data)",
        {},
    ),
}


def _outcome(data: Any, sql: str, kw: dict[str, Any]) -> tuple[Any, ...]:
    """What an observer of the call sees, apart from the noisy values: the exception (type
    and message) or the columns and types, and the ledger entries."""
    acct = dp.Accountant(dp.ApproxDP(10.0, 1e-3))
    s = dp.Session(
        data,
        accountant=acct,
        rng=5,
        public={"regions": REGIONS},
        schema={"pid": "int64", "Age": "int64", "income": "float64", "region": "int64"},
    )
    kw = dict(kw)
    try:
        out = s.sql(sql, epsilon=1.0, **kw)
    except Exception as err:
        return ("error", type(err).__name__, str(err), len(acct.history))
    if hasattr(out, "toArrow"):  # Spark
        types = [f.dataType.simpleString() for f in out.schema.fields]
    else:
        types = [str(t) for t in out.dtypes]
    return ("released", list(out.columns), types, [(e.cost, e.relation) for e in acct.history])


@pytest.mark.parametrize("name", list(QUERIES))
def test_sql_has_the_same_outcome_on_neighbouring_tables(
    name: str, engine: Callable[[pl.DataFrame], Any]
) -> None:
    sql, kw = QUERIES[name]
    base = _outcome(engine(BASE), sql, kw)
    for other in (ADDED, REPLACED):
        assert _outcome(engine(other), sql, kw) == base
    if name.startswith(("subquery", "aggregate-before")):
        assert base[0] == "error" and base[3] == 0  # refused, nothing spent
    else:
        assert base[0] == "released", base


def _discrete_gaussian(sigma: float, width: int) -> tuple[np.ndarray, np.ndarray]:
    support = np.arange(-width, width + 1)
    weights = np.exp(-(support.astype(float) ** 2) / (2 * sigma**2))
    return support, weights / weights.sum()


def test_grouped_sql_release_follows_its_plan_on_neighbouring_tables(
    chi2_pvalue: Callable[[np.ndarray, np.ndarray, np.ndarray], float],
) -> None:
    """The grouped SQL query with private keys and a percentile, sampled 20,000 times on a
    table and on its neighbour with one more person (in the group 'BA', aged 90):

    * the released count of a group the person is not in (every group of the 400-row table
      passes the key threshold) is its true count plus discrete
      Gaussian noise of the sigma the mathematics gives (epsilon 1 and delta 1e-6, half of
      delta for the key threshold, zCDP rho = approx_to_zcdp(1, 5e-7), half of it for the
      count, so sigma = 1 / sqrt(rho)): a chi-square test at level 1e-3 accepts it and
      rejects a sigma 10% larger;
    * for every event "count of 'BA' >= c" and "median of 'BA' <= t", the frequencies on the
      two tables satisfy P0 <= e**epsilon P1 + delta (and back) up to a sampling tolerance
      of 5 binomial standard deviations (each frequency's, added) plus 1/N.
    """
    bounds = {"Age": (0, 100)}
    base = private_table()  # 400 rows: each group's ~100 rows pass the threshold (35)
    person = ADDED.tail(1).with_columns(
        pl.lit("BA").alias("Education"), pl.lit(400, pl.Int64).alias("pid")
    )
    added = pl.concat([base, person], how="vertical")
    n = 20_000
    samples = []
    for data in (base, added):
        s = dp.Session(data, budget=dp.ApproxDP(10.0, 1e-3), rng=9)
        q, _, _ = compile_query(s, GROUPED, bounds=bounds)
        samples.append(QuerySampler(q, 1.0, 1e-6).sample(n, rng=21))
        assert s.accountant.history == ()  # sampling spends nothing
    truth = base.filter(pl.col("Education") == "HS").height
    hs = samples[0].filter(pl.col("Education") == "HS")
    assert hs.height == n  # a group of ~30 people passes the threshold every time
    rho = dp.approx_to_zcdp(1.0, 5e-7).rho / 2
    sigma = 1 / math.sqrt(2 * rho)
    noise = hs["n"].to_numpy() - truth
    support, pmf = _discrete_gaussian(sigma, 60)
    assert chi2_pvalue(noise, support, pmf) > 1e-3
    wrong_support, wrong_pmf = _discrete_gaussian(1.1 * sigma, 60)
    assert chi2_pvalue(noise, wrong_support, wrong_pmf) < 1e-3

    def frame(i: int) -> pl.DataFrame:
        ba = samples[i].filter(pl.col("Education") == "BA").select("draw", "n", "Age_0.5")
        return pl.DataFrame({"draw": np.arange(n)}).join(ba, on="draw", how="left")

    f0, f1 = frame(0), frame(1)
    events = [(f"n >= {c}", pl.col("n") >= c) for c in range(80, 125, 3)]
    events += [(f"median <= {t}", pl.col("Age_0.5") <= t) for t in range(30, 80, 5)]
    eps, delta = 1.0, 1e-6
    for label, cond in events:
        p0 = f0.select(cond.fill_null(False).mean()).item()
        p1 = f1.select(cond.fill_null(False).mean()).item()
        tol = 5 * (math.sqrt(p0 * (1 - p0) / n) + math.sqrt(p1 * (1 - p1) / n)) + 1 / n
        assert p0 <= math.exp(eps) * p1 + delta + tol, label
        assert p1 <= math.exp(eps) * p0 + delta + tol, label
