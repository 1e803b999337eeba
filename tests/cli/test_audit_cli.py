"""``dpkit audit``: named targets, the table and JSON, query files, exit codes, and one-line
errors for bad parameters, failing query files, a bad confidence and too many samples."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from dpkit.audit import core
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


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        # PTR's threshold pair divided by the test's epsilon before anything checked it
        (["ptr", "--epsilon", "0"], "`epsilon` must be a finite number > 0; got 0.0"),
        # ... and an epsilon this small made the threshold infinite
        (["ptr", "--epsilon", "1e-310"], "epsilon is too small"),
        (["ptr", "--delta", "0"], "`delta` must be a number with 0 < delta < 1; got 0.0"),
        # datasets and candidate lists beyond 10,000 (10**9 filled the memory)
        (["exponential", "--candidates", "10001"], "`candidates` must be an int in [2, 10000]"),
        (["sample_and_aggregate", "--n", "10001"], "`n` must be an int in [2, 10000]"),
    ],
)
def test_bad_target_parameters_are_one_line_errors(argv: list[str], expected: str, capsys):
    rc = main(["audit", *argv, "--samples", "100", "--seed", "1"])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("dpkit audit: error: ") and err.count("\n") == 1
    assert expected in err


HEADER = """import numpy as np

EPSILON = 1.0


def neighbours():
    return [(np.zeros(5), np.zeros(4))]

"""


@pytest.mark.parametrize(
    ("body", "what", "error"),
    [
        (
            "def query(data, rng):\n    raise RuntimeError('no column named age')  # here\n",
            "query()",
            "RuntimeError: no column named age",
        ),
        (
            "def query(data, size, rng):\n    return {'a': 1}['b']  # here\n",
            "query()",
            "KeyError: 'b'",
        ),
        (  # a ValueError was reported without saying where it came from
            "def query(data, rng):\n    raise ValueError('my own check failed')  # here\n",
            "query()",
            "ValueError: my own check failed",
        ),
        (
            "def neighbours():\n    return [1 / 0]  # here\n\n\n"
            "def query(data, rng):\n    return 0\n",
            "neighbours()",
            "ZeroDivisionError: division by zero",
        ),
        (
            "SCALE = np.zeros(3)[7]  # here\n\n\ndef query(data, rng):\n    return 0\n",
            "running the file",
            "IndexError: index 7 is out of bounds for axis 0 with size 3",
        ),
        (
            "def query(data, rng)  # here\n    return 0\n",
            "running the file",
            "SyntaxError: expected ':'",
        ),
    ],
)
def test_an_exception_in_a_query_file_is_a_one_line_error(
    tmp_path: Path, capsys, body: str, what: str, error: str
):
    """The file's own code failing: its name, the line, the exception's type and message."""
    text = HEADER + body
    f = tmp_path / "my_query.py"
    f.write_text(text)
    line = 1 + next(i for i, t in enumerate(text.splitlines()) if t.endswith("# here"))
    rc = main(["audit", "query", str(f), "--samples", "100", "--seed", "1"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"dpkit audit: error: audit query: my_query.py line {line}: {what}")
    assert f"{what} raised {error}" in err


def test_unreadable_query_data_is_a_one_line_error(tmp_path: Path, capsys):
    """A parse error's message quotes the line it failed on: only its type is shown."""
    (tmp_path / "people.csv").write_text('id,city\n1,a,3,4\n"2,Brest\n')
    f = tmp_path / "city_counts.py"
    f.write_text(FRAME_QUERY)
    rc = main(["audit", "query", str(f), "--samples", "100", "--seed", "1"])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err and "Brest" not in err
    assert err.endswith("city_counts.py: reading DATA 'people.csv' raised ComputeError\n")


@pytest.mark.parametrize("confidence", ["1e-300", "0.3", "1"])
def test_confidence_outside_one_half_to_one_is_a_clear_error(confidence: str, capsys):
    rc = main(["audit", "laplace", "--confidence", confidence, "--samples", "1000"])
    err = capsys.readouterr().err
    assert rc == 2 and "`confidence` must be a number in [0.5, 1)" in err


def test_confidence_range_is_in_the_help(capsys):
    with pytest.raises(SystemExit):
        main(["audit", "laplace", "--help"])
    assert "[0.5, 1)" in " ".join(capsys.readouterr().out.split())


def test_samples_beyond_max_memory_are_refused(capsys):
    """10**6 draws need at least 192 MB (192 bytes each); 100M allows 546,133."""
    rc = main(["audit", "laplace", "--samples", "1000000", "--max-memory", "100M"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1
    assert "allows at most 546,133 draws" in err and "--max-memory" in err


def test_a_time_limited_audit_says_so(monkeypatch, capsys):
    """A fake clock moving 0.2 s at each reading: the first batch takes 0.2 s of a 1 s budget
    and the second ends past the half of it given to drawing."""
    ticks = itertools.count()
    monkeypatch.setattr(core, "_clock", lambda: 0.2 * next(ticks))
    rc = main(["audit", "laplace", "--samples", "1000000", "--time-budget", "1", "--seed", "1"])
    out = capsys.readouterr().out
    assert rc == 0 and "1,484" in out
    assert "[time limited]: 1 audit(s) stopped at --time-budget before --samples draws" in out
