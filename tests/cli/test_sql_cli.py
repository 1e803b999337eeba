"""``dpkit sql``: a SELECT released from the command line, as ``Session.sql`` releases it;
``--schema`` on ``dpkit sql`` and ``dpkit query``; a CSV read by Spark as text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import dpkit as dp
from dpkit.cli.main import main
from dpkit.datasets import load_adult

#: the analyst's task: count per Education, mean Age per Sex, median hours, deciles of Age
TASK = [
    ("SELECT Education, COUNT(*) AS n FROM data GROUP BY Education", ["--keys", "EDU"], 0.25),
    ("SELECT Sex, AVG(Age) AS mean_age FROM data GROUP BY Sex", ["--keys", "SEX"], 0.25),
    (
        'SELECT MEDIAN("Hours per week") AS median_hours, '
        "QUANTILE_CONT(Age, [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]) AS age FROM data",
        [],
        0.5,
    ),
]
BOUNDS = ["--bounds", "Age:0:100", "--bounds", "Hours per week:0:100"]


def _keys(tmp_path: Path) -> dict[str, str]:
    adult = load_adult()
    out = {}
    for flag, col in (("EDU", "Education"), ("SEX", "Sex")):
        path = tmp_path / f"{col}.csv"
        adult.select(pl.col(col).unique().sort()).write_csv(path)
        out[flag] = str(path)
    return out


def _json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main(argv) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def _bounds_for(sql: str) -> list[str]:
    out = []
    for flag, spec in zip(BOUNDS[::2], BOUNDS[1::2], strict=True):
        if spec.split(":")[0] in sql:
            out += [flag, spec]
    return out


@pytest.mark.parametrize("engine", ["polars", pytest.param("spark", marks=pytest.mark.spark)])
def test_the_analysts_task_runs_under_epsilon_one(
    engine: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], request: Any
) -> None:
    """Three SELECTs on the bundled Adult table spend a ledger of epsilon 1 exactly, and each
    releases what Session.sql releases from Python with the same seed."""
    if engine == "spark":
        request.getfixturevalue("spark")
    keys = _keys(tmp_path)
    ledger = tmp_path / "budget.sqlite"
    assert main(["budget", "init", str(ledger), "--epsilon", "1"]) == 0
    capsys.readouterr()
    adult = load_adult()
    for sql, extra, eps in TASK:
        extra = [keys.get(x, x) for x in extra]
        argv = ["sql", "adult", sql, "--epsilon", str(eps), "--ledger", str(ledger)]
        argv += [*extra, *_bounds_for(sql), "--seed", "5", "--json", "--engine", engine]
        got = _json(argv, capsys)
        assert got["privacy"] == repr(dp.PureDP(eps))
        if engine == "polars":  # the same release as Python's, seed for seed
            s = dp.Session(adult, budget=dp.PureDP(1.0), rng=5)
            key_kw: dict[str, Any] = {}
            if extra:
                key_kw["keys"] = pl.read_csv(extra[1])
            bounds = {"Age": (0, 100), "Hours per week": (0, 100)}
            used = {k: v for k, v in bounds.items() if k in sql}
            want = s.sql(sql, epsilon=eps, bounds=used, **key_kw)
            assert got["columns"] == want.columns
            assert got["rows"] == [list(r) for r in want.rows()]
    acct = dp.Accountant.open(ledger)
    assert acct.spent == dp.PureDP(1.0) and len(acct.history) == 3
    columns = got["columns"]
    assert columns[:3] == ["median_hours", "median_hours_low", "median_hours_high"]
    assert "age_0.9_high" in columns


def test_explain_spends_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ledger = tmp_path / "budget.sqlite"
    assert main(["budget", "init", str(ledger), "--epsilon", "1"]) == 0
    sql = "SELECT Sex, COUNT(*) FROM data GROUP BY Sex HAVING COUNT(*) > 10"
    common = ["--epsilon", "1", "--delta", "1e-6", "--ledger", str(ledger)]
    assert main(["sql", "adult", "EXPLAIN " + sql, *common]) == 0
    assert main(["sql", "adult", sql, *common, "--explain"]) == 0
    # EXPLAIN after a comment, in lower case: the parser's reading, not the text's first word
    assert main(["sql", "adult", "/* c */ explain " + sql, *common]) == 0
    out = capsys.readouterr().out
    assert out.count("SQL: HAVING COUNT(*) > 10") == 3 and "keys: private" in out
    assert dp.Accountant.open(ledger).history == ()


@pytest.mark.parametrize(
    ("sql", "extra", "says"),
    [
        ("SELECT MIN(Age) FROM data", [], "QUANTILE_CONT(Age, 0.01)"),
        ("SELECT SUM(Age) FROM data", [], "--bounds Age:LOWER:UPPER or --bounds Age:auto"),
        ("SELECT Sex, COUNT(*) FROM data GROUP BY Sex", [], "--delta > 0"),
        ("SELECT * FROM data", [], "name the aggregates"),
        ("SELECT COUNT(*) FROM secrets", [], "--public NAME=FILE"),
        ("SELECT AVG(Age) FROM data", ["--bounds", "Age:0"], "COLUMN:LOWER:UPPER"),
    ],
)
def test_a_refusal_is_one_line_in_the_commands_words(
    sql: str, extra: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["sql", "adult", sql, "--epsilon", "1", *extra]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("dpkit sql: error: ")
    assert says in err
    for python in ("bounds={", "keys={", "dp.Session", "Session.sql"):
        assert python not in err


def test_public_tables_join_and_give_the_keys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "people.parquet"
    pl.DataFrame({"region": [1, 2, 2, 3] * 50, "Age": [30, 40, 50, 60] * 50}).write_parquet(data)
    regions = tmp_path / "regions.csv"
    regions.write_text("id,name\n1,north\n2,south\n3,east\n4,west\n")
    got = _json(
        [
            "sql",
            str(data),
            "SELECT r.name, COUNT(*) AS n FROM data d JOIN regions r ON d.region = r.id "
            "GROUP BY r.name ORDER BY r.name",
            "--public",
            f"regions={regions}",
            "--epsilon",
            "1",
            "--seed",
            "2",
            "--json",
        ],
        capsys,
    )
    assert [r[0] for r in got["rows"]] == ["east", "north", "south", "west"]  # public keys


def _csv(tmp_path: Path, odd: bool) -> Path:
    """A CSV whose column ``x`` holds numbers, and with ``odd`` one record of text."""
    path = tmp_path / f"x{int(odd)}.csv"
    values = [str(v % 10) for v in range(200)]
    if odd:
        values[7] = "abc"
    pl.DataFrame({"x": values, "g": ["a", "b"] * 100}).write_csv(path)
    return path


@pytest.mark.parametrize("command", ["query", "sql"])
def test_schema_declares_a_csv_columns_type(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _csv(tmp_path, odd=False)
    if command == "query":
        argv = ["query", str(path), "--mean", "x:0:10", "--epsilon", "1", "--seed", "1"]
    else:
        argv = ["sql", str(path), "SELECT AVG(x) FROM data WHERE x >= 0", "--epsilon", "1"]
        argv += ["--bounds", "x:0:10", "--seed", "1"]
    if command == "sql":  # text compared with a number: refused until the type is declared
        assert main(argv) == 2
        assert "cast" in capsys.readouterr().err
    got = _json([*argv, "--schema", "x:int", "--json"], capsys)
    assert 3.0 < got["rows"][0][0] < 6.0
    assert main([*argv, "--schema", "x:money"]) == 2
    assert "TYPE one of int, float, str, bool, date, datetime" in capsys.readouterr().err


@pytest.mark.spark
def test_spark_reads_a_csv_as_text_so_one_record_cannot_change_a_type(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Spark's type inference would type ``x`` as an integer without the odd record and as
    text with it, so one record would decide whether the release runs: read as text, both
    tables are refused alike without --schema and released alike with it."""
    outcomes = []
    for odd in (False, True):
        path = _csv(tmp_path, odd)
        argv = ["query", str(path), "--engine", "spark", "--mean", "x:0:10", "--epsilon", "1"]
        refused = main(argv)
        err = capsys.readouterr().err
        released = _json([*argv, "--schema", "x:float", "--json", "--seed", "3"], capsys)
        outcomes.append((refused, "--schema" in err, released["columns"]))
    assert outcomes[0] == outcomes[1] == (2, True, ["x_mean", "x_mean_low", "x_mean_high"])


def test_the_privacy_unit_and_its_bounds_are_the_sessions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "visits.parquet"
    df = pl.DataFrame(
        {"pid": [i // 4 for i in range(400)], "Age": [20 + i % 50 for i in range(400)]}
    )
    df.write_parquet(data)
    sql = "SELECT COUNT(*) AS n, AVG(Age) AS a FROM data"
    argv = ["sql", str(data), sql, "--epsilon", "1", "--bounds", "Age:0:100", "--seed", "8"]
    got = _json([*argv, "--unit", "pid", "--max-rows", "2", "--json"], capsys)
    s = dp.Session(df, privacy_unit="pid", max_rows_per_unit=2, budget=dp.PureDP(1.0), rng=8)
    want = s.sql(sql, epsilon=1.0, bounds={"Age": (0, 100)})
    assert got["rows"] == [list(r) for r in want.rows()]
    assert got["privacy_unit"] == "pid"
