"""``dpkit query``: the released table from the command line, and --explain."""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest

from dpkit import Accountant, ApproxDP, PureDP
from dpkit.cli.main import main


@pytest.fixture
def data(tmp_path: Path) -> Path:
    df = pl.DataFrame(
        {
            "pid": [i // 3 for i in range(300)],
            "Sex": ["Female", "Male"] * 150,
            "Age": [20 + (i * 7) % 60 for i in range(300)],
        }
    )
    path = tmp_path / "people.parquet"
    df.write_parquet(path)
    return path


def test_query_prints_the_table_with_intervals(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    keys = tmp_path / "keys.csv"
    keys.write_text("Sex\nFemale\nMale\nOther\n")
    argv = [
        "query",
        str(data),
        "--epsilon",
        "1",
        "--group-by",
        "Sex",
        "--keys",
        str(keys),
        "--count",
        "--mean",
        "Age:0:100",
        "--seed",
        "3",
    ]
    assert main(argv) == 0
    out = capsys.readouterr().out
    for needle in ("Female", "Other", "count_low", "Age_mean_high", "PureDP(epsilon=1.0)"):
        assert needle in out


def test_query_json_and_ledger(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ledger = tmp_path / "b.sqlite"
    Accountant.create(ledger, PureDP(1.0)).close()
    argv = [
        "query",
        str(data),
        "--epsilon",
        "0.5",
        "--unit",
        "pid",
        "--max-rows",
        "2",
        "--count",
        "--sum",
        "Age:0:100",
        "--ledger",
        str(ledger),
        "--json",
        "--seed",
        "1",
    ]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["columns"] == [
        "count",
        "count_low",
        "count_high",
        "Age_sum",
        "Age_sum_low",
        "Age_sum_high",
    ]
    assert out["privacy_unit"] == "pid" and out["privacy"] == "PureDP(epsilon=0.5)"
    with Accountant.open(ledger) as acct:
        assert [s.label for s in acct.history] == ["Session query: count, Age_sum"]
    assert main([*argv[:-2]]) == 0  # the second half of the budget
    capsys.readouterr()
    assert main(argv) == 2  # a third release would overspend
    assert "would exceed the budget" in capsys.readouterr().err


def test_explain_spends_nothing(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ledger = tmp_path / "b.sqlite"
    Accountant.create(ledger, PureDP(1.0)).close()
    argv = [
        "query",
        str(data),
        "--epsilon",
        "1",
        "--delta",
        "1e-6",
        "--group-by",
        "Sex",
        "--count",
        "--std",
        "Age:0:100",
        "--explain",
        "--ledger",
        str(ledger),
    ]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "key selection" in out and "sensitivity" in out and "ApproxDP" in out
    with Accountant.open(ledger) as acct:
        assert acct.history == ()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ([], "at least one aggregate"),
        (["--mean", "Age:0"], "COLUMN:LOWER:UPPER"),
        (["--mean", "Age:zero:100"], "must be a number"),
        (["--count", "--keys", "k.csv"], "--keys needs --group-by"),
        (["--count", "--group-by", "Sex"], "without --delta (pure DP)"),
        (["--mean", "Nope:0:1"], "unknown column 'Nope'"),
    ],
)
def test_bad_arguments(
    data: Path, extra: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["query", str(data), "--epsilon", "1", *extra]) == 2
    assert message in capsys.readouterr().err


def test_missing_file_and_ledger(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["query", str(tmp_path / "none.csv"), "--epsilon", "1", "--count"]) == 2
    assert "no such file" in capsys.readouterr().err
    assert (
        main(
            ["query", "adult", "--epsilon", "1", "--count", "--ledger", str(tmp_path / "x.sqlite")]
        )
        == 2
    )
    assert "dpkit budget init" in capsys.readouterr().err


def test_bundled_adult(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["query", "adult", "--epsilon", "1", "--count", "--seed", "2"]) == 0
    assert "count_high" in capsys.readouterr().out


def test_query_auto_bounds_and_auto_rows(data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--mean COL:auto and --max-rows auto: the chosen bounds, the DP clipped fraction and
    the chosen bound are printed (and in --json); --explain names the shares."""
    argv = ["query", str(data), "--epsilon", "2", "--unit", "pid", "--max-rows", "auto"]
    argv += ["--mean", "Age:auto", "--quantile", "Age:0.25,0.75:0:100", "--seed", "2"]
    assert main([*argv, "--explain"]) == 0
    plan = capsys.readouterr().out
    assert "max_rows_per_unit='auto'" in plan and "bounds (auto)" in plan
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "Age_mean: bounds chosen privately" in out and "Age_0.25_low" in out
    assert "max_rows_per_unit chosen privately" in out
    assert main([*argv, "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert set(got["bounds"]) == {"Age_mean"} and got["max_rows_per_unit"] >= 1
    bad = ["query", str(data), "--epsilon", "1", "--unit", "pid", "--max-rows", "x", "--count"]
    assert main(bad) != 0
    assert "--max-rows takes an int or 'auto'" in capsys.readouterr().err


def test_unreadable_keys_and_non_finite_json(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An empty or unreadable --keys file is one line of error (it was a Polars traceback),
    and --json is strict JSON: a sum past the float range is null, not -Infinity."""
    empty = tmp_path / "keys.csv"
    empty.write_text("")
    args = ["query", str(data), "--epsilon", "1", "--group-by", "Sex", "--count"]
    assert main([*args, "--keys", str(empty)]) == 2
    err = capsys.readouterr().err
    assert "cannot read the --keys file" in err and "Traceback" not in err
    assert main([*args, "--keys", str(data)]) == 2  # a Parquet file is not a CSV
    assert "cannot read the --keys file" in capsys.readouterr().err
    assert main(["query", "adult", "--epsilon", "1", "--sum", "Age:-1e307:-1e306", "--json"]) == 0
    out = json.loads(capsys.readouterr().out, parse_constant=lambda c: pytest.fail(c))
    assert out["rows"] == [[None, None, None]]


@pytest.mark.parametrize(
    ("option", "first", "second"),
    [
        ("--histogram", "Age:0,50,100", "Age:0,10,100"),
        ("--epsilon", "1", "5"),
        ("--delta", "1e-6", "1e-3"),
        ("--rho", "0.1", "1"),
        ("--alpha", "0.05", "0.5"),
        ("--unit", "pid", "Sex"),
        ("--max-rows", "1", "5"),
        ("--max-groups", "1", "2"),
        ("--group-by", "Sex", "Age"),
        ("--keys", "a.csv", "b.csv"),
        ("--ledger", "a.sqlite", "b.sqlite"),
        ("--seed", "1", "2"),
        ("--engine", "polars", "polars"),
    ],
)
def test_an_option_given_twice_is_a_usage_error(
    data: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    option: str,
    first: str,
    second: str,
) -> None:
    """argparse's store kept the last value without a word: `--histogram A --histogram B`
    released only B, `--epsilon 1 --epsilon 5` spent 5, `--unit pid --unit Sex` protected
    the wrong unit. A second value is now a usage error, before anything is read or spent."""
    ledger = tmp_path / "b.sqlite"
    Accountant.create(ledger, PureDP(10.0)).close()
    argv = ["query", str(data), "--count", "--ledger", str(ledger), option, first, option, second]
    if option == "--ledger":
        argv = ["query", str(data), "--count", option, str(ledger), option, second]
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {option}: given twice" in err and "give it once" in err
    if option == "--histogram":
        assert "run one query per histogram" in err
    with Accountant.open(ledger) as acct:
        assert acct.history == ()


@pytest.mark.parametrize("delta", ["0.9", "0.999999", "0.5000001"])
def test_a_delta_above_one_half_is_refused_before_the_spend(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], delta: str
) -> None:
    """A delta near 1 was released (counts to within a unit); above 1/2 it is above 1/n for
    every table of two or more people, which protects no one."""
    ledger = tmp_path / "b.sqlite"
    Accountant.create(ledger, ApproxDP(10.0, 0.9999999), composition="basic").close()
    argv = ["query", str(data), "--epsilon", "1", "--delta", delta, "--count"]
    argv += ["--group-by", "Sex", "--ledger", str(ledger), "--seed", "1"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"--delta {float(delta)!r} is above 1/2" in err and "protects no one" in err
    assert main([*argv, "--explain"]) == 2
    with Accountant.open(ledger) as acct:
        assert acct.history == ()
    argv[argv.index(delta)] = "0.5"  # the largest accepted
    assert main(argv) == 0
    with Accountant.open(ledger) as acct:
        assert acct.spent == ApproxDP(1.0, 0.5)


def test_explain_charges_integer_quantiles_as_a_pure_dp_histogram(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Integer ages on (0, 100) with several levels run the noisy histogram (method "cdf"),
    pure DP: under epsilon 1, delta 1e-6 (rho = 0.02436, half for the quantiles) its epsilon
    is sqrt(2 rho / 2) = 0.1561 per group, not the exponential mechanism's 0.3121."""
    argv = ["query", "adult", "--epsilon", "1", "--delta", "1e-6", "--count", "--explain"]
    assert main([*argv, "--quantile", "Age:0.25,0.5,0.75:0:100"]) == 0
    out = capsys.readouterr().out
    assert "quantiles cdf" in out and "epsilon per group 0.1561" in out
    assert "noisy histogram 0.1561 (discrete Laplace)" in out


def test_a_key_column_named_twice_is_a_one_line_error(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    keys = tmp_path / "keys.csv"
    keys.write_text("Sex\nFemale\nMale\n")
    argv = ["query", str(data), "--epsilon", "1", "--group-by", "Sex,Sex", "--count"]
    for extra in ([], ["--keys", str(keys)]):
        assert main([*argv, *extra]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err
        assert "--group-by names 'Sex' more than once" in err


@pytest.mark.parametrize(
    ("spec", "edges"),
    [
        ("Age:0,50,100", [0.0, 50.0, 100.0]),
        ("Age:0:100:4", [0.0, 25.0, 50.0, 75.0, 100.0]),
        ("Age:20:80:3", [20.0, 40.0, 60.0, 80.0]),
    ],
)
def test_histogram_takes_edges_or_equal_width_bins(
    data: Path, spec: str, edges: list[float], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["query", str(data), "--epsilon", "1", "--histogram", spec, "--json", "--seed", "1"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["columns"][:2] == ["Age_from", "Age_to"]
    assert [r[0] for r in out["rows"]] + [out["rows"][-1][1]] == edges


@pytest.mark.parametrize(
    ("spec", "hint"),
    [
        ("Age:0:100", "for bins from 0 to 100: Age:0,100 or Age:0:100:10"),
        ("Age:5", ""),
        ("Age:0:100:0", "BINS between 1 and 10,000"),
        ("Age:100:0:5", "LOWER < UPPER"),
    ],
)
def test_a_histogram_spec_that_is_neither_form_says_both(
    data: Path, spec: str, hint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``Age:0:100`` was read as the column 'Age:0' with one edge; now a usage error naming
    both forms (and what was probably meant), before anything is read or spent."""
    assert main(["query", str(data), "--epsilon", "1", "--histogram", spec]) == 2
    err = capsys.readouterr().err
    assert "COL:E0,E1,..." in err and "COL:LOWER:UPPER:BINS" in err and hint in err
    assert "'Age:0'" not in err


def test_the_histogram_syntax_is_in_the_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["query", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "COL:E0,E1,...|COL:LOWER:UPPER:BINS" in out and "Age:0:100:10" in out
    assert "--layout" in out


def _deciles(data: Path, *extra: str) -> list[str]:
    levels = ",".join(f"0.{i}" for i in range(1, 10))
    return [
        "query", str(data), "--epsilon", "1", "--delta", "1e-6", "--group-by", "Sex",
        "--count", "--quantile", f"Age:{levels}:0:100", "--seed", "2", *extra,
    ]  # fmt: skip


def test_a_table_wider_than_the_terminal_is_printed_long(
    data: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Nine deciles per group are 31 columns: on an 100-column terminal the table is one
    row per (group, statistic) with its value and interval, every line within the width;
    --layout wide keeps the wide table, and a table that fits stays wide."""
    monkeypatch.setenv("COLUMNS", "100")
    assert main(_deciles(data)) == 0
    lines = capsys.readouterr().out.splitlines()
    head = lines[0].split()
    assert head == ["Sex", "statistic", "value", "low", "high"]
    rows = [line.split() for line in lines[2:] if line.startswith(("Female", "Male"))]
    assert len(rows) == 2 * 10  # count and nine deciles, per group
    assert {r[1] for r in rows} == {"count", *(f"Age_0.{i}" for i in range(1, 10))}
    assert all(float(r[3]) <= float(r[2]) <= float(r[4]) for r in rows)
    assert max(len(line) for line in lines) <= 100
    assert main(_deciles(data, "--layout", "wide")) == 0
    wide = capsys.readouterr().out
    assert "Age_0.9_high" in wide and "statistic" not in wide
    monkeypatch.setenv("COLUMNS", "400")
    assert main(_deciles(data)) == 0
    assert "statistic" not in capsys.readouterr().out
    assert main(_deciles(data, "--layout", "long")) == 0
    assert "statistic" in capsys.readouterr().out


@pytest.mark.parametrize(
    "extra",
    [
        ["--epsilon", "1", "--group-by", "Sex", "--count"],
        ["--epsilon", "1", "--unit", "pid", "--count"],
        ["--epsilon", "1", "--max-rows", "2", "--count"],
        ["--epsilon", "1", "--max-groups", "2", "--count"],
        ["--epsilon", "1", "--unit", "nope", "--max-rows", "1", "--count"],
        ["--epsilon", "1", "--unit", "pid", "--max-rows", "0", "--count"],
        ["--count"],
        ["--epsilon", "-1", "--count"],
        ["--epsilon", "1", "--rho", "1", "--count"],
        ["--rho", "1", "--delta", "1e-6", "--count"],
        ["--rho", "0.1", "--group-by", "Sex", "--count"],
        ["--epsilon", "1", "--alpha", "2", "--count"],
        ["--epsilon", "1", "--sum", "Nope:0:10"],
        ["--epsilon", "1", "--sum", "Sex:0:10"],
        ["--epsilon", "1", "--sum", "Age:10:0"],
        ["--epsilon", "1", "--sum", "Age:0:1e308"],
        ["--epsilon", "1", "--var", "Age:-1e200:1e200"],
        ["--epsilon", "1", "--quantile", "Age:0.5,0.5:0:100"],
        ["--epsilon", "1", "--quantile", "Age:1.5:0:100"],
        ["--epsilon", "1", "--histogram", "Age:0,50,20"],
        ["--epsilon", "1e-300", "--sum", "Age:0:100"],
    ],
)
def test_errors_speak_the_options_not_python(
    data: Path, extra: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """The Session's messages name Python parameters (group_by(..., keys=[...]), delta=1e-6,
    privacy_unit=None, dp.sum('x')); the command line says --keys FILE, --delta 1e-6, no
    --unit, --sum x: one line, no Python call syntax, no parameter names in backquotes."""
    assert main(["query", str(data), *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith("dpkit query: error: ") and err.count("\n") == 1
    text = err.removeprefix("dpkit query: error: ")
    for python in ("dp.", "group_by(", "s.query", "Session(", "`", "privacy_unit", "_per_unit"):
        assert python not in text, (python, text)
    assert not re.search(r"\b(epsilon|delta|rho|keys|alpha)=", text), text
    assert not re.match(r"(release|query|Session|agg): ", text), text


def test_the_translated_messages_name_the_options(
    data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["query", str(data), "--epsilon", "1", "--group-by", "Sex", "--count"]) == 2
    err = capsys.readouterr().err
    assert "--keys FILE" in err and "--delta 1e-6" in err and "without --delta" in err
    assert main(["query", str(data), "--epsilon", "1", "--unit", "pid", "--count"]) == 2
    err = capsys.readouterr().err
    assert "--unit 'pid' needs --max-rows" in err and "--max-rows auto" in err
    assert main(["query", str(data), "--epsilon", "1", "--sum", "Age:10:0"]) == 2
    assert "--sum Age: bounds must satisfy lower < upper" in capsys.readouterr().err
