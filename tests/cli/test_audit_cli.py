"""``dpkit audit``: named targets, the table and JSON, query files, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

from dpkit.cli.main import main


def test_audit_laplace_prints_a_passing_table(capsys):
    rc = main(["audit", "laplace", "--epsilon", "1", "--samples", "20000", "--seed", "1"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "claimed eps" in out and "lower bound" in out and "pass" in out


def test_audit_json_rows(capsys):
    rc = main(["audit", "geometric", "--samples", "5000", "--seed", "2", "--json"])
    rows = json.loads(capsys.readouterr().out)
    assert rc == 0 and rows[0]["verdict"] == "pass" and rows[0]["samples"] == 5000


def test_unknown_parameter_value_is_a_clear_error(capsys):
    rc = main(
        ["audit", "gaussian", "--epsilon", "2", "--calibration", "classic", "--samples", "100"]
    )
    assert rc == 2
    assert "classic" in capsys.readouterr().err


QUERY = """
import numpy as np
import dpkit as dp

EPSILON = 1.0
geo = dp.Geometric(epsilon=2.0)  # deliberately 2-DP: the audit must flag the claim of 1

def neighbours():
    return [(np.zeros(5), np.zeros(4))]

def query(data, rng):
    return geo.release(len(data), rng=rng)
"""


def test_query_file_violation_exits_1(tmp_path: Path, capsys):
    f = tmp_path / "count_query.py"
    f.write_text(QUERY)
    rc = main(["audit", "query", str(f), "--samples", "3000", "--seed", "3"])
    out = capsys.readouterr().out
    assert rc == 1 and "violation" in out and "count_query" in out


FRAME_QUERY = """
import numpy as np
import dpkit as dp
import polars as pl

DATA = "people.csv"
PRIVACY_UNIT = "id"
GROUP_BY = "city"
CLAIM = dp.ApproxDP(1.0, 1e-5)
geo = dp.Geometric(epsilon=1.0)

def query(frame, size, rng):
    counts = frame.unique(["id", "city"]).group_by("city").len().sort("city")
    noisy = geo.sample(counts["len"].to_numpy(), size, rng=rng)
    t = 2 + np.log(1 / 2e-5)
    return pl.DataFrame({
        "draw": np.repeat(np.arange(size), counts.height),
        "city": np.tile(counts["city"].to_numpy(), size),
        "count": noisy.ravel(),
    }).filter(pl.col("count") >= t)
"""


def test_query_file_with_data_and_privacy_unit(tmp_path: Path, capsys):
    (tmp_path / "people.csv").write_text("id,city\n1,a\n1,b\n2,a\n3,c\n4,a\n")
    f = tmp_path / "city_counts.py"
    f.write_text(FRAME_QUERY)
    rc = main(["audit", "query", str(f), "--samples", "2000", "--seed", "4", "--json"])
    rows = json.loads(capsys.readouterr().out)
    assert rc == 0 and len(rows) == 2 and all(r["verdict"] == "pass" for r in rows)


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "audit_session_query.py"


def test_the_session_query_example_passes(capsys):
    """examples/audit_session_query.py (README): private-key counts and means per city; the
    audit removes the person with the most rows, then the person alone in Brest."""
    rc = main(["audit", "query", str(EXAMPLE), "--samples", "20000", "--seed", "5", "--json"])
    rows = json.loads(capsys.readouterr().out)
    assert rc == 0 and [r["verdict"] for r in rows] == ["pass", "pass"]
    assert "remove person id=1 (8 rows" in rows[0]["name"]
    assert "alone in group city=Brest" in rows[1]["name"]
    assert all(r["samples"] == 20000 and r["claimed_epsilon"] == 1.0 for r in rows)


PER_RELEASE = """
import polars as pl
import dpkit as dp

CLAIM = dp.PureDP(0.25)  # the count below is 1-DP: the audit must flag a claim of 0.25
TABLE = pl.DataFrame({"id": [1, 1, 1, 2, 3, 4], "x": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]})


def neighbours():
    return [(TABLE, TABLE.filter(pl.col("id") != 1))]


def query(frame, rng):
    s = dp.Session(frame, privacy_unit="id", max_rows_per_unit=2, budget=dp.PureDP(1.0))
    return s.query().agg(dp.count()).release(epsilon=1.0, rng=rng)
"""


def test_a_per_release_session_query_file_is_audited_one_release_at_a_time(tmp_path, capsys):
    """A plain query(frame, rng) releasing a real Session count (one release per draw).
    Removing person 1 moves the bounded count by 2 under noise of scale 2: loss 1, and 400
    draws put the 95% lower bound above the claimed 0.25 (measured 0.53)."""
    f = tmp_path / "count_per_release.py"
    f.write_text(PER_RELEASE)
    rc = main(["audit", "query", str(f), "--samples", "400", "--seed", "2"])
    out = capsys.readouterr().out
    assert rc == 1 and "violation" in out and "count[(total)]" in out
