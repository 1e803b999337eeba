"""The cluster script of the Spark guide runs as its local ``spark-submit`` line would run it,
on the test run's shared local Spark (the guide's notebook cells run in test_pages.py)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import dpkit as dp

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guides" / "spark.md"


@pytest.mark.spark
def test_spark_guide_cluster_script_runs(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocks = re.findall(r"```python spark\n(.*?)```", GUIDE.read_text(), flags=re.S)
    assert len(blocks) == 1
    table = tmp_path / "adult.parquet"
    dp.datasets.load_adult().write_parquet(table)
    out_path = tmp_path / "counts.parquet"
    # the script's arguments, as the guide's local spark-submit line gives them
    monkeypatch.setattr("sys.argv", ["dp_query.py", str(table), str(out_path)])
    namespace: dict[str, Any] = {}
    exec(compile(blocks[0], str(GUIDE), "exec"), namespace)
    assert namespace["spark"] is spark  # getOrCreate(): the one session of the test run
    released = spark.read.parquet(str(out_path))
    assert "Education" in released.columns and released.count() >= 10
