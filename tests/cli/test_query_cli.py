"""``dpkit query``: the released table from the command line, and --explain."""

from __future__ import annotations

import json
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
        (["--count", "--group-by", "Sex"], "delta = 0"),
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
    assert main(["query", "adult", "--epsilon", "1", "--sum", "Age:-1e308:-1e307", "--json"]) == 0
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
    Accountant.create(ledger, ApproxDP(10.0, 0.9999999)).close()
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
