"""``dpkit compare`` end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dpkit.cli.main import main


def test_table_on_adult(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", "--statistic", "median", "--trials", "40", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "Median of Age: true value 37" in out
    for label in (
        "global sensitivity",
        "propose-test-release",
        "smooth sensitivity",
        "sample-and-aggregate",
        "inverse sensitivity",
    ):
        assert label in out
    assert "NOT private" in out


def test_json_and_plot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fig = tmp_path / "errors.png"
    code = main(
        [
            "compare",
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
    out = capsys.readouterr().out
    payload = json.loads(out[: out.rindex("}") + 1])
    assert [r["method"] for r in payload["rows"]] == ["global", "smooth"]
    assert payload["truth"] == pytest.approx(38.58164675532078)
    assert fig.exists() and fig.stat().st_size > 1000


def test_csv_column_and_clear_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    csv = tmp_path / "d.csv"
    csv.write_text("x\n" + "\n".join(str(v) for v in range(1, 200)) + "\n")
    assert (
        main(
            [
                "compare",
                "--data",
                str(csv),
                "--column",
                "x",
                "--bounds",
                "0,300",
                "--statistic",
                "median",
                "--trials",
                "10",
                "--seed",
                "0",
            ]
        )
        == 0
    )
    assert main(["compare", "--data", str(csv), "--column", "nope", "--trials", "5"]) == 2
    assert "--column" in capsys.readouterr().err
    assert main(["compare", "--bounds", "100", "--trials", "5"]) == 2
    assert main(["compare", "--methods", "inverse,magic", "--trials", "5"]) == 2
