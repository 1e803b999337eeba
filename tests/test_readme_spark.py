"""The README's Spark examples run as written, on the test run's shared local Spark."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.mark.spark
def test_readme_spark_blocks_run(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    blocks = re.findall(r"```python spark\n(.*?)```", README.read_text(), flags=re.S)
    assert len(blocks) == 2
    monkeypatch.chdir(tmp_path)  # adult.parquet is written here
    out_path = tmp_path / "released-counts.parquet"
    # the cluster script's arguments, as the README's local spark-submit line gives them
    monkeypatch.setattr("sys.argv", ["dp_query.py", str(tmp_path / "adult.parquet"), str(out_path)])
    namespace: dict[str, Any] = {}
    for block in blocks:
        exec(compile(block, str(README), "exec"), namespace)
    assert namespace["spark"] is spark  # getOrCreate(): the one session of the test run
    out = capsys.readouterr().out
    assert "Female" in out and "Hours per week_median" in out and "count_low" in out
    released = spark.read.parquet(str(out_path))
    assert "Education" in released.columns and released.count() >= 10
