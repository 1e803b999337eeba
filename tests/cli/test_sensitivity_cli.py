"""``dpkit sensitivity``: the table, JSON, the plot, the CSV mode and its errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from dpkit import sensitivity as sens
from dpkit.cli.main import main
from dpkit.cli.sensitivity import parse_distances

SEED = ["--universe", "1,2,3,10,11", "--size", "3"]


def test_table_as_in_the_issue(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(
        ["sensitivity", "--query", "median", *SEED, "--distance", "1..3", "--relation", "both"]
    )
    assert rc == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].split() == ["query", "relation", "k=1", "k=2", "k=3"]
    assert out[2].split() == ["median", "bounded", "8", "8", "8"]
    assert out[3].split() == ["median", "unbounded", "4.5", "9", "9"]


def test_json_rows_equal_the_library(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sensitivity", "--query", "mean,p25", *SEED, "--distance", "1,2", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 2 * 2 * 2
    for row in rows:
        want = sens.empirical_global(
            row["query"], [1, 2, 3, 10, 11], 3, distance=row["distance"], relation=row["relation"]
        )
        assert row["sensitivity"] == pytest.approx(want)


def test_local_at_a_dataset(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(
            [
                "sensitivity",
                "--query",
                "median",
                "--universe",
                "1,2,3,10,11",
                "--at",
                "1,2,10",
                "--relation",
                "bounded",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "local sensitivity at {1, 2, 10}" in out
    assert out.splitlines()[2].split() == ["median", "bounded", "8"]


def test_plot_file(tmp_path: Path) -> None:
    path = tmp_path / "sens.png"
    assert (
        main(
            [
                "sensitivity",
                "--query",
                "mean,median",
                *SEED,
                "--distance",
                "1..2",
                "--plot",
                str(path),
            ]
        )
        == 0
    )
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_csv_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(4)
    ages = rng.integers(17, 91, size=501)
    path = tmp_path / "people.csv"
    path.write_text("Age,Other\n" + "".join(f"{a},x\n" for a in ages))
    assert (
        main(
            [
                "sensitivity",
                "--data",
                str(path),
                "--column",
                "Age",
                "--bounds",
                "0,100",
                "--query",
                "median,mean",
                "--relation",
                "unbounded",
                "--json",
            ]
        )
        == 0
    )
    rows = {r["query"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["median"]["local"] == pytest.approx(
        sens.local("median", ages, relation="unbounded", bounds=(0, 100))
    )
    assert rows["mean"]["global"] == pytest.approx(
        sens.global_sensitivity("mean", bounds=(0, 100), relation="unbounded", n=501)
    )
    assert rows["mean"]["n"] == 501


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--universe", "1,2", "--size", "3"], "too few for datasets of `size`=3"),
        (["--universe", "1,2", "--size", "1", "--distance", "0"], "integers >= 1"),
        (["--universe", "1,2,x", "--size", "1"], "comma-separated numbers"),
        (["--universe", "1,2", "--size", "1", "--query", "mode"], "unknown query 'mode'"),
        (["--universe", "1,2"], "needs --size"),
        ([], "pass either --universe"),
    ],
)
def test_errors(argv: list[str], words: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sensitivity", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("dpkit sensitivity: error: ")
    assert words in err


def test_csv_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "d.csv"
    path.write_text("Age\n10\n120\n130\n")
    assert main(["sensitivity", "--data", str(path), "--column", "Age", "--bounds", "0,100"]) == 2
    assert "2 of 3 value(s) of 'Age' lie outside the bounds [0, 100]" in capsys.readouterr().err
    assert (
        main(
            [
                "sensitivity",
                "--data",
                str(path),
                "--column",
                "Age",
                "--bounds",
                "0,100",
                "--clip",
                "--query",
                "median",
                "--relation",
                "bounded",
            ]
        )
        == 0
    )
    assert main(["sensitivity", "--data", str(path), "--column", "Ag", "--bounds", "0,100"]) == 2
    assert "'Ag' is not a column of" in capsys.readouterr().err
    assert main(["sensitivity", "--data", str(path), "--column", "Age", "--bounds", "9,1"]) == 2
    assert "lower < upper" in capsys.readouterr().err


def test_parse_distances() -> None:
    assert parse_distances("1..3") == [1, 2, 3]
    assert parse_distances("2,5") == [2, 5]
    assert parse_distances("4") == [4]


def test_unreadable_data_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gone = tmp_path / "missing.csv"
    assert main(["sensitivity", "--data", str(gone), "--column", "Age", "--bounds", "0,1"]) == 2
    err = capsys.readouterr().err
    assert "--data: cannot read" in err and "missing.csv" in err and "Traceback" not in err
    plot = tmp_path / "no-such-dir" / "s.png"
    argv = ["sensitivity", "--query", "median", "--universe", "1,2,3", "--size", "2"]
    assert main([*argv, "--plot", str(plot)]) == 2
    assert "dpkit sensitivity: error:" in capsys.readouterr().err


def test_csv_distance_range_equals_each_distance(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a range of distances is one sweep per query and relation (the shapes of the largest
    # ball shared); every row must still be the library's value at that distance alone
    rng = np.random.default_rng(8)
    values = np.concatenate([rng.uniform(0, 100, 40).round(2), [0.0, 100.0, 50.0, 50.0]])
    path = tmp_path / "v.csv"
    path.write_text("v\n" + "".join(f"{v}\n" for v in values))
    argv = ["sensitivity", "--data", str(path), "--column", "v", "--bounds", "0,100"]
    assert main([*argv, "--query", "mean,var,std", "--distance", "1..12", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 3 * 2 * 12
    for row in rows:
        q, rel, k = row["query"], row["relation"], row["distance"]
        assert row["local"] == sens.local(q, values, distance=k, relation=rel, bounds=(0, 100))
        want = sens.global_sensitivity(q, bounds=(0, 100), relation=rel, n=values.size, distance=k)
        assert row["global"] == want


def test_many_distances_print_long_and_the_figure_line_follows_the_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--distance 1..200 would print 200 columns: the table turns to one row per (query,
    relation, k) when it is wider than the terminal, and "figure written to" is its own
    line after the table on stdout (stderr with --json), never inside it."""
    monkeypatch.setenv("COLUMNS", "120")
    path = tmp_path / "sens.png"
    argv = ["sensitivity", "--query", "mean", *SEED, "--distance", "1..200", "--plot", str(path)]
    assert main(argv) == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert lines[1].split() == ["query", "relation", "k", "sensitivity"]
    assert len([x for x in lines if x.startswith("mean ")]) == 2 * 200
    assert max(len(x) for x in lines) <= 120
    assert lines[-1] == f"figure written to {path}" and captured.err == ""
    few = ["sensitivity", "--query", "mean", *SEED, "--distance", "1..3"]
    assert main(few) == 0  # few distances: one column each
    assert "k=3" in capsys.readouterr().out
    assert main([*argv, "--json"]) == 0
    captured = capsys.readouterr()
    json.loads(captured.out)
    assert captured.err == f"figure written to {path}\n"
