"""``dpkit compare`` end to end, and the column rule it shares with ``dpkit sensitivity``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from dpkit.cli.main import main

ADULT = ["compare", "--bounds", "0,100"]


def _err(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    return err


def test_table_on_adult(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*ADULT, "--statistic", "median", "--trials", "40", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "Median of Age: true (non-private) value 37, n = 32,561" in out
    for label in (
        "global sensitivity",
        "propose-test-release",
        "smooth sensitivity",
        "sample-and-aggregate",
        "inverse sensitivity",
    ):
        assert label in out
    # one figure for the median's global sensitivity, with its relation (the sensitivity
    # tables print 50 for add/remove and 100 for replace-one)
    assert "sensitivity 50 (the median's)" in out
    assert "unbounded = add/remove one record" in out
    assert "NOT private" in out


def test_json_and_plot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fig = tmp_path / "errors.png"
    code = main(
        [
            *ADULT,
            "--trials",
            "20",
            "--seed",
            "2",
            "--json",
            "--plot",
            str(fig),
            "--methods",
            "global,smooth",
        ]
    )
    assert code == 0
    captured = capsys.readouterr()
    payload = json.loads(captured.out)  # stdout is pure JSON; the figure note is on stderr
    assert [r["method"] for r in payload["rows"]] == ["global", "smooth"]
    assert payload["truth"] == pytest.approx(38.58164675532078)
    assert payload["delta"] == pytest.approx(1 / 32561**2)
    assert "figure written" in captured.err
    assert fig.exists() and fig.stat().st_size > 1000


@pytest.fixture
def csv(tmp_path: Path) -> Path:
    path = tmp_path / "d.csv"
    path.write_text("x\n" + "\n".join(str(v) for v in range(1, 200)) + "\n")
    return path


def test_csv_column_and_clear_errors(csv: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["compare", "--data", str(csv), "--column", "x", "--trials", "10", "--seed", "0"]
    assert main([*base, "--bounds", "0,300", "--statistic", "median"]) == 0
    out = capsys.readouterr().out
    # 199 records: sample-and-aggregate's default 600 parts cannot be; the table says so
    assert "199 parts (one per record" in out
    no_column = ["compare", "--data", str(csv), "--trials", "10", "--seed", "0"]
    assert main([*no_column, "--column", "nope", "--bounds", "0,300"]) == 2
    assert "--column" in _err(capsys)
    assert main([*ADULT[:1], "--bounds", "100", "--trials", "5"]) == 2
    assert main([*ADULT, "--methods", "inverse,magic", "--trials", "5"]) == 2


def test_bounds_are_required(capsys: pytest.CaptureFixture[str]) -> None:
    # the old default 0,100 silently clipped any column (Capital Gain's mean 1077.65 came
    # out as "true value 8.33")
    assert main(["compare", "--trials", "5"]) == 2
    err = _err(capsys)
    assert "--bounds lower,upper is required" in err and "without looking at the data" in err


def test_out_of_range_refused_or_clipped_with_a_note(capsys: pytest.CaptureFixture[str]) -> None:
    gain = ["compare", "--column", "Capital Gain", "--bounds", "0,100", "--trials", "5"]
    assert main([*gain, "--methods", "global"]) == 2
    err = _err(capsys)
    assert "2,712 of 32,561 value(s) of 'Capital Gain' lie outside the bounds [0, 100]" in err
    assert "--clip" in err
    assert main([*gain, "--methods", "global", "--clip", "--seed", "1"]) == 0
    captured = capsys.readouterr()
    assert "note: clipped 2,712 value(s) of 'Capital Gain' to [0, 100]" in captured.err
    assert "2,712 record(s) outside the bounds were clipped to them" in captured.out


@pytest.mark.parametrize("command", ["compare", "sensitivity"])
def test_one_rule_for_both_commands(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "m.csv"
    data.write_text("x,name\n1,a\n,b\n250,c\n3,d\n,e\n")
    extra = ["--trials", "3", "--methods", "global"] if command == "compare" else []
    args = [command, "--data", str(data), "--column", "x", "--bounds", "0,100", *extra]
    assert main(args) == 2
    err = _err(capsys)
    assert "note: dropped 2 missing value(s) of 'x'; 3 remain" in err
    assert "1 of 3 value(s) of 'x' lie outside the bounds [0, 100]" in err
    assert "pass --clip" in err
    assert main([*args, "--clip"]) == 0
    err = _err(capsys)
    assert "note: clipped 1 value(s) of 'x' to [0, 100]" in err


@pytest.mark.parametrize("command", ["compare", "sensitivity"])
@pytest.mark.parametrize(
    ("content", "column", "message"),
    [
        (
            "x,name\n1,a\n2,b\n",
            "name",
            "'name' of {path} holds String values, not numbers",  # no value quoted
        ),
        ("x,flag\n1,true\n2,false\n", "flag", "holds Boolean values, not numbers"),
        ("x,y\n1,\n2,\n", "y", "'y' of {path} has no values (2 missing, 2 rows)"),
        ("x\n", "x", "has no values (0 missing, 0 rows)"),
        ("x\n1\nnan\n", "x", "holds 1 NaN or infinite value(s)"),
        ("", "x", "cannot read {path} as CSV"),
    ],
)
def test_bad_columns_are_one_line_errors(
    command: str,
    content: str,
    column: str,
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    data = tmp_path / "bad.csv"
    data.write_text(content)
    args = [command, "--data", str(data), "--column", column, "--bounds", "0,100"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err  # one line: no Polars traceback
    assert message.format(path=data) in err


def test_delta_default_and_limit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    two = tmp_path / "two.csv"
    two.write_text("x\n10\n20\n")
    base = ["compare", "--data", str(two), "--column", "x", "--bounds", "0,100", "--json"]
    base += ["--trials", "3", "--methods", "ptr", "--seed", "0"]
    assert main(base) == 0
    # 1/n^2 would be 0.25 for two records: the default is min(1/n^2, 1e-6)
    assert json.loads(capsys.readouterr().out)["delta"] == 1e-6
    assert main([*base, "--delta", "0.5"]) == 0  # 1/n itself is allowed
    capsys.readouterr()
    assert main([*base, "--delta", "0.51"]) == 2
    err = _err(capsys)
    assert "above 1/n = 0.5 for n = 2 records" in err and "--force-delta" in err
    assert "protects no" in err
    assert main([*base, "--delta", "0.51", "--force-delta"]) == 0
    assert json.loads(capsys.readouterr().out)["delta"] == 0.51


def test_chunks_above_n_refused(csv: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["compare", "--data", str(csv), "--column", "x", "--bounds", "0,300", "--trials", "3"]
    assert main([*args, "--chunks", "200"]) == 2
    assert "between 1 and the number of records, 199" in _err(capsys)
    assert main([*args, "--chunks", "199", "--methods", "sample_and_aggregate"]) == 0
    assert "199 parts (as asked)" in capsys.readouterr().out


def test_huge_trials_refused_at_once_with_the_estimate(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # 10^9 trials allocated 24 GB and were killed; now refused before any work
    assert main([*ADULT, "--trials", "1000000000"]) == 2
    err = _err(capsys)
    assert "would need about 59.7 GiB" in err and "at most 32,451,300 trials" in err
    assert "permutations of the 32,561 records in blocks of 51 trials" in err


def test_a_million_trials_on_two_thousand_records_refused_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Sample-and-aggregate holds a permutation of the 2,000 records for each trial of a
    # block, 40 bytes per record; its blocks hold at most 64 MiB of them (838 trials here),
    # so 10**6 trials need 125 MiB: refused under a 64 MiB limit, with the blocks named.
    rng = np.random.default_rng(7)
    path = tmp_path / "two_thousand.csv"
    path.write_text("x\n" + "".join(f"{v:.2f}\n" for v in rng.uniform(0, 100, 2000)))
    args = ["compare", "--data", str(path), "--column", "x", "--bounds", "0,100"]
    assert main([*args, "--trials", "1000000", "--max-memory", "64M"]) == 2
    err = _err(capsys)
    assert err.count("\n") == 1 and "would need about 125.3 MiB" in err
    assert "sample-and-aggregate's permutations of the 2,000 records in blocks of 838" in err
    assert "at most 833 trials" in err
    # without sample-and-aggregate a trial of a block costs 160 bytes, whatever n is
    assert main([*args, "--trials", "1000000", "--max-memory", "64M", "--methods", "global"]) == 2
    err = _err(capsys)
    assert "would need about 70.8 MiB" in err and "permutations" not in err


def test_running_out_of_memory_is_a_one_line_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # a machine with less free memory than --max-memory allows: numpy's MemoryError becomes
    # the usual one-line error (exit code 2), not a traceback
    import dpkit.compare as cmp

    def exhausted(task: object) -> object:
        raise MemoryError("Unable to allocate 3.91 GiB")

    monkeypatch.setitem(cmp._RUNNERS, "global", exhausted)
    assert main([*ADULT, "--methods", "global", "--trials", "5"]) == 2
    err = _err(capsys)
    assert err.count("\n") == 1
    assert "--trials 5: the run ran out of memory" in err and "lower --trials" in err


@pytest.mark.parametrize(
    "argv",
    [
        [*ADULT, "--trials", "5"],
        ["sensitivity", "--universe", "1,2,3", "--size", "2"],
    ],
)
def test_plot_without_matplotlib_fails_before_the_work(
    argv: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as on a plain `pip install dpkit`
    assert main([*argv, "--plot", str(tmp_path / "f.png")]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # no table computed and printed first
    assert "--plot needs matplotlib" in captured.err and "dpkit[plot]" in captured.err


def test_max_memory_flag(capsys: pytest.CaptureFixture[str]) -> None:
    args = [*ADULT, "--methods", "global", "--seed", "0"]
    assert main([*args, "--trials", "100000", "--max-memory", "1M"]) == 2
    assert "the limit `max_memory` is 1.0 MiB" in _err(capsys)
    assert main([*args, "--trials", "20", "--max-memory", "8M"]) == 0  # 4.0 MiB: the data
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main([*args, "--max-memory", "lots"])
    assert "expected a size such as 512M or 4G" in capsys.readouterr().err


def test_help_lists_every_method(capsys: pytest.CaptureFixture[str]) -> None:
    from dpkit.compare import METHODS

    with pytest.raises(SystemExit):
        main(["compare", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for method in METHODS:
        assert method in text
    assert "(required; for Adult's Age: 0,100)" in text


@pytest.mark.parametrize("command", ["compare", "sensitivity"])
def test_a_csv_parse_error_quotes_no_data(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Polars' parse error quotes the line it failed on; the message names its type only."""
    path = tmp_path / "bad.csv"
    path.write_text('a,b\n1,2\n"SECRETQ,3\n')
    assert main([command, "--data", str(path), "--column", "a", "--bounds", "0,10"]) == 2
    err = capsys.readouterr().err
    assert "cannot read" in err and "SECRETQ" not in err
