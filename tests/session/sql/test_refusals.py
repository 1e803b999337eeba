"""What SQL cannot release privately is refused before anything is spent, with a message
naming the construct and what would work; EXPLAIN spends nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import polars as pl
import pytest

import dpkit as dp

from .conftest import REGIONS, private_table

DATA = private_table(60)
AGE = {"Age": (0, 100)}
DUPLICATED = pl.DataFrame({"id": [1, 1, 2], "name": ["a", "b", "c"]})

#: (query, keyword arguments, the exception, what its message says)
REFUSED: dict[str, tuple[str, dict[str, Any], type, str]] = {
    "min": (
        "SELECT MIN(Age) FROM data",
        {},
        dp.ParameterError,
        r"MIN\(Age\).*unbounded sensitivity.*QUANTILE_CONT\(Age, 0.01\)",
    ),
    "max": (
        "SELECT MAX(Age) FROM data",
        {},
        dp.ParameterError,
        r"MAX\(Age\).*PERCENTILE_CONT\(0.99\) WITHIN GROUP",
    ),
    "select-star": (
        "SELECT * FROM data",
        {},
        dp.ParameterError,
        r"SELECT \*.*release rows.*name the aggregates",
    ),
    "bare-column": (
        "SELECT Age, COUNT(*) FROM data",
        {},
        dp.ParameterError,
        r"column Age in SELECT.*outside an aggregate.*GROUP BY",
    ),
    "column-not-grouped": (
        "SELECT Sex, COUNT(*) FROM data GROUP BY Education",
        {"delta": 1e-6},
        dp.ParameterError,
        r"column Sex.*add it to GROUP BY",
    ),
    "no-bounds": (
        "SELECT SUM(Age) FROM data",
        {},
        dp.ParameterError,
        r"SUM\(Age\) without bounds.*bounds=\{'Age': \(lower, upper\)\}"
        r".*CLAMP\(Age, lower, upper\)",
    ),
    "quantile-auto-bounds": (
        "SELECT MEDIAN(Age) FROM data",
        {"bounds": {"Age": "auto"}},
        dp.ParameterError,
        r"bounds 'auto'.*numeric bounds",
    ),
    "count-distinct": (
        "SELECT COUNT(DISTINCT Sex) FROM data",
        {},
        dp.ParameterError,
        r"COUNT\(DISTINCT Sex\).*GROUP BY the column",
    ),
    "window": (
        "SELECT SUM(Age) OVER (PARTITION BY Sex) FROM data",
        {},
        dp.ParameterError,
        r"window.*other rows.*GROUP BY",
    ),
    "self-join": (
        "SELECT COUNT(*) FROM data a JOIN data b ON a.pid = b.pid",
        {},
        dp.ParameterError,
        r"JOIN of data.*itself.*public tables only",
    ),
    "subquery-other-table": (
        "SELECT COUNT(*) FROM data WHERE pid IN (SELECT pid FROM secrets)",
        {},
        dp.ParameterError,
        r"subquery in IN.*JOIN a public table",
    ),
    "scalar-subquery": (
        "SELECT COUNT(*) FROM data WHERE Age > (SELECT AVG(Age) FROM data)",
        {},
        dp.ParameterError,
        r"subquery inside an expression.*WITH clause",
    ),
    "unknown-table": (
        "SELECT COUNT(*) FROM secrets",
        {},
        dp.ParameterError,
        r"table 'secrets'.*neither the Session's table.*public=",
    ),
    "aggregating-cte": (
        "WITH t AS (SELECT Sex, COUNT(*) AS n FROM data GROUP BY Sex) SELECT SUM(n) FROM t",
        {},
        dp.ParameterError,
        r"aggregate.*before the release.*outer SELECT",
    ),
    "aggregate-in-cte-select": (
        "WITH t AS (SELECT Age + MEDIAN(Age) AS u FROM data) SELECT COUNT(*) FROM t",
        {},
        dp.ParameterError,
        r"the aggregate Age \+ MEDIAN\(Age\) AS u in the WITH clause 't': a subquery that "
        r"aggregates before the release would compute exact statistics of the private table; "
        r"aggregate in the outer SELECT; a WITH clause holds row-level steps only",
    ),
    "filter-on-row-level-function-in-cte": (
        "WITH t AS (SELECT UPPER(Sex) FILTER (WHERE Age > 1) AS u FROM data) "
        "SELECT COUNT(*) FROM t",
        {},
        dp.ParameterError,
        r"UPPER\(Sex\) FILTER\(WHERE Age > 1\) in the WITH clause 't': FILTER is not a "
        r"function dpkit compiles",
    ),
    "unknown-column": (
        "SELECT COUNT(*) FROM data WHERE Agee > 3",
        {},
        dp.ParameterError,
        r"column 'Agee'.*no table.*'Age'",
    ),
    "unknown-function": (
        "SELECT COUNT(*) FROM data WHERE FOO(Age) > 1",
        {},
        dp.ParameterError,
        r"FOO is not a function dpkit compiles.*ABS",
    ),
    "two-statements": (
        "SELECT COUNT(*) FROM data; SELECT COUNT(*) FROM data",
        {},
        dp.ParameterError,
        r"2 statements.*once per statement",
    ),
    "not-a-select": ("DELETE FROM data", {}, dp.ParameterError, r"DELETE statement.*only SELECT"),
    "union": (
        "SELECT COUNT(*) FROM data UNION SELECT COUNT(*) FROM data",
        {},
        dp.ParameterError,
        r"UNION.*each SELECT in its own call",
    ),
    "sample-variance": (
        "SELECT VAR_SAMP(Age) FROM data",
        {"bounds": AGE},
        dp.ParameterError,
        r"VAR_SAMP.*VAR_POP",
    ),
    "cross-join": (
        "SELECT COUNT(*) FROM data CROSS JOIN regions",
        {},
        dp.ParameterError,
        r"CROSS JOIN.*INNER, LEFT, SEMI and ANTI",
    ),
    "join-on-a-repeated-key": (
        "SELECT COUNT(*) FROM data JOIN dup ON region = id",
        {},
        dp.ParameterError,
        r"'id' repeats.*count several times.*distinct",
    ),
    "join-not-an-equality": (
        "SELECT COUNT(*) FROM data d JOIN regions r ON d.region > r.id",
        {},
        dp.ParameterError,
        r"join condition.*one equality",
    ),
    "table-function": (
        "SELECT COUNT(*) FROM read_csv('/etc/passwd')",
        {},
        dp.ParameterError,
        r"only the Session's table.*no table function",
    ),
    "now": (
        "SELECT COUNT(*) FROM data WHERE d < NOW()",
        {},
        dp.ParameterError,
        r"depends on when or where.*literal",
    ),
    "filter-clause": (
        "SELECT COUNT(*) FILTER (WHERE Age > 3) FROM data",
        {},
        dp.ParameterError,
        r"FILTER.*CASE WHEN",
    ),
    "distinct": (
        "SELECT DISTINCT Sex FROM data",
        {},
        dp.ParameterError,
        r"DISTINCT.*GROUP BY the columns",
    ),
    "rollup": (
        "SELECT Sex, COUNT(*) FROM data GROUP BY ROLLUP (Sex)",
        {},
        dp.ParameterError,
        r"ROLLUP.*one query per grouping",
    ),
    "other-aggregate": (
        "SELECT STRING_AGG(Sex, ',') FROM data",
        {},
        dp.ParameterError,
        r"no private release.*COUNT\(\*\)",
    ),
    "extreme-level": (
        "SELECT QUANTILE_CONT(Age, 1.0) FROM data",
        {"bounds": AGE},
        dp.ParameterError,
        r"level 1.0.*unbounded sensitivity.*0.99",
    ),
    "text-compared-with-number": (
        "SELECT COUNT(*) FROM data WHERE Sex > 3",
        {},
        dp.ParameterError,
        r"comparison of String and .*cast",
    ),
    "private-keys-without-delta": (
        "SELECT Sex, COUNT(*) FROM data GROUP BY Sex",
        {},
        dp.ParameterError,
        r"chooses the groups privately.*delta > 0.*keys=",
    ),
    "public-table-alone": (
        "SELECT COUNT(*) FROM regions",
        {},
        dp.ParameterError,
        r"public table alone needs no privacy.*JOIN",
    ),
    "parameter": (
        "SELECT COUNT(*) FROM data WHERE Age > ?",
        {},
        dp.ParameterError,
        r"parameters are not bound.*write the value",
    ),
    "unknown-bounds-name": (
        "SELECT AVG(Age) FROM data",
        {"bounds": {"Agee": (0, 1)}},
        dp.ParameterError,
        r"'Agee'.*neither a column nor an alias",
    ),
    "constant-aggregate": (
        "SELECT SUM(1) FROM data",
        {},
        dp.ParameterError,
        r"reads no column.*COUNT\(\*\)",
    ),
    "limit-in-subquery": (
        "SELECT COUNT(*) FROM (SELECT Sex FROM data LIMIT 10) AS t",
        {},
        dp.ParameterError,
        r"LIMIT.*depends on other rows",
    ),
    "decimal": (
        "SELECT AVG(CAST(Age AS DECIMAL(10, 2))) FROM data",
        {"bounds": AGE},
        dp.ParameterError,
        r"DECIMAL.*cast to DOUBLE",
    ),
    "bad-date": (
        "SELECT COUNT(*) FROM data WHERE d > DATE '2020-13-01'",
        {},
        dp.ParameterError,
        r"not an ISO date",
    ),
    "duplicate-output": (
        "SELECT COUNT(*) AS n, AVG(Age) AS n FROM data",
        {"bounds": AGE},
        dp.ParameterError,
        r"output column 'n'.*distinct aliases",
    ),
    "keys-for-no-group": (
        "SELECT Sex, COUNT(*) FROM data GROUP BY Sex",
        {"keys": {"Edu": ["BA"]}},
        dp.ParameterError,
        r"`keys` names 'Edu'.*no GROUP BY column.*'Sex'",
    ),
    "does-not-parse": ("SELECT COUNT(* FROM data", {}, dp.ParameterError, r"does not parse"),
    "not-text": (42, {}, TypeError, r"`query` must be a str"),  # type: ignore[dict-item]
}


def _session(data: pl.DataFrame = DATA) -> dp.Session:
    return dp.Session(
        data,
        budget=dp.ApproxDP(10.0, 1e-3),
        rng=1,
        public={"regions": REGIONS, "dup": DUPLICATED},
    )


@pytest.mark.parametrize("name", list(REFUSED))
def test_refused_before_anything_is_spent_with_a_hint(name: str) -> None:
    sql, kw, exc, match = REFUSED[name]
    s = _session()
    with pytest.raises(exc, match=match) as refused:
        s.sql(sql, epsilon=1.0, **kw)
    with pytest.raises(exc) as explained:  # the plan is refused alike, and spends nothing
        s.sql(sql, epsilon=1.0, explain=True, **kw)
    assert str(explained.value) == str(refused.value)
    assert s.accountant.history == ()
    # the refusal reads the query and the public schema only: the same on a neighbour
    neighbour = _session(DATA.slice(1))
    with pytest.raises(exc) as again:
        neighbour.sql(sql, epsilon=1.0, **kw)
    assert str(again.value) == str(refused.value)


def test_the_refusal_table_is_large_enough() -> None:
    assert len(REFUSED) >= 20


def _plan_text(plan: Any) -> str:
    return str(plan)


def test_explain_spends_nothing_and_shows_the_compiled_query(
    engine: Callable[[pl.DataFrame], Any],
) -> None:
    s = dp.Session(
        engine(DATA), budget=dp.PureDP(1.0), schema={"Age": "int64", "income": "float64"}
    )
    sql = (
        "SELECT Sex, COUNT(*) AS n, SUM(CLAMP(income, 0, 1e5)) / COUNT(*) AS mean_income "
        "FROM data WHERE Age >= 18 GROUP BY Sex HAVING COUNT(*) > 10 ORDER BY n DESC LIMIT 1"
    )
    keys = {"Sex": ["F", "M"]}
    by_keyword = s.sql(sql, epsilon=1.0, keys=keys, explain=True)
    by_statement = s.sql("EXPLAIN " + sql, epsilon=1.0, keys=keys)
    assert str(by_keyword) == str(by_statement)
    assert s.accountant.history == ()
    text = str(by_keyword)
    assert "privacy cost     PureDP(epsilon=1.0)" in text
    for said in ("HAVING COUNT(*) > 10", "ORDER BY n DESC", "LIMIT 1", "mean_income: computed"):
        assert said in text
    # without epsilon, the plan shows the bounding only; still nothing spent
    assert "give epsilon" in str(s.sql(sql, keys=keys, explain=True))
    assert s.accountant.history == ()
    # and the release charges the plan's cost once
    rel = s.sql(sql, epsilon=1.0, keys=keys, measure=True)
    assert [e.cost for e in s.accountant.history] == [dp.PureDP(1.0)]
    assert "SQL: HAVING" in str(rel.plan)


def test_an_overspend_is_refused_before_anything_is_drawn() -> None:
    s = dp.Session(DATA, budget=dp.PureDP(1.0), rng=1)
    s.sql("SELECT COUNT(*) FROM data", epsilon=0.75)
    with pytest.raises(dp.BudgetExceededError):
        s.sql("SELECT COUNT(*) FROM data", epsilon=0.5)
    assert len(s.accountant.history) == 1


def test_the_tables_names_are_the_sessions() -> None:
    s = dp.Session(DATA, budget=dp.PureDP(1.0), name="people", public={"regions": REGIONS})
    assert s.sql("SELECT COUNT(*) AS n FROM people", epsilon=0.5).columns == [
        "n",
        "n_low",
        "n_high",
    ]
    with pytest.raises(dp.ParameterError, match=r"table 'data'.*'people', 'regions'"):
        s.sql("SELECT COUNT(*) FROM data", epsilon=0.5)
    with pytest.raises(dp.ParameterError, match="`name` must be an SQL name"):
        dp.Session(DATA, budget=dp.PureDP(1.0), name="my table")
    with pytest.raises(dp.ParameterError, match="'Data' is taken"):
        dp.Session(DATA, budget=dp.PureDP(1.0), public={"Data": REGIONS})
    with pytest.raises(TypeError, match=r"public table 'r' must be a frame"):
        dp.Session(DATA, budget=dp.PureDP(1.0), public={"r": [1, 2]})
    assert len(s.accountant.history) == 1
