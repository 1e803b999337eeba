"""``dpkit report LEDGER -o FILE``, and ``--report FILE`` on ``dpkit query`` and ``dpkit sql``."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest

import dpkit as dp
from dpkit.cli.main import main

GENERATED = re.compile(r'<time class="generated" datetime="[^"]*">[^<]*</time>')


@pytest.fixture
def ledger(tmp_path: Path) -> Path:
    path = tmp_path / "budget.sqlite"
    assert main(["budget", "init", str(path), "--epsilon", "1", "--delta", "1e-6"]) == 0
    return path


def _spends(path: Path) -> int:
    con = sqlite3.connect(path)
    try:
        return int(con.execute("SELECT COUNT(*) FROM spends").fetchone()[0])
    finally:
        con.close()


def test_query_and_sql_write_their_reports_and_the_ledger_writes_both(
    ledger: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    keys = tmp_path / "sex.csv"
    keys.write_text("Sex\nFemale\nMale\n")
    q = tmp_path / "query.html"
    argv = ["query", "adult", "--epsilon", "0.25", "--group-by", "Sex", "--keys", str(keys)]
    assert main([*argv, "--count", "--ledger", str(ledger), "--report", str(q), "--seed", "1"]) == 0
    assert f"report written to {q}" in capsys.readouterr().out
    s = tmp_path / "sql.html"
    sql = "SELECT Education, COUNT(*) AS n FROM data GROUP BY Education"
    argv = ["sql", "adult", sql, "--epsilon", "0.25", "--delta", "1e-7", "--json"]
    assert main([*argv, "--ledger", str(ledger), "--report", str(s)]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["columns"] == ["Education", "n", "n_low", "n_high"]  # JSON only
    assert f"report written to {s}" in out.err
    query_page, sql_page = q.read_text(), s.read_text()
    assert "Session query: count by Sex" in query_page and 'class="banner warning"' in query_page
    assert sql in sql_page and "Key selection ran." in sql_page
    both = tmp_path / "both.html"
    assert main(["report", str(ledger), "-o", str(both), "--title", "Q3"]) == 0
    assert capsys.readouterr().out.strip() == f"report written to {both}"
    page = both.read_text()
    assert page.count('<article id="release-') == 2 and "<title>Q3</title>" in page
    # the ledger's report of the SQL release is the SQL run's own, bar its other release
    one = re.search(r'<article id="release-2".*?</article>', page, re.S)
    assert one is not None and one.group(0) in sql_page


def test_a_bad_report_path_is_refused_before_the_spend(
    ledger: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for bad, why in ((tmp_path, "is a folder"), (tmp_path / "no" / "r.html", "does not exist")):
        argv = ["query", "adult", "--epsilon", "0.25", "--count", "--ledger", str(ledger)]
        assert main([*argv, "--report", str(bad)]) == 2
        err = capsys.readouterr().err
        assert why in err and err.count("\n") == 1
        sql = ["sql", "adult", "SELECT COUNT(*) FROM data", "--epsilon", "0.25"]
        assert main([*sql, "--ledger", str(ledger), "--report", str(bad)]) == 2
        assert why in capsys.readouterr().err
    assert _spends(ledger) == 0


def test_report_errors_are_one_line(
    ledger: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = [
        (["report", str(tmp_path / "none.sqlite"), "-o", str(tmp_path / "r.html")], "no ledger"),
        (["report", str(ledger), "-o", str(tmp_path)], "is a folder"),
        (["report", str(ledger), "-o", "r.html", "--audit", str(tmp_path / "a.json")], "no such"),
    ]
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    cases.append(
        (["report", str(ledger), "-o", str(tmp_path / "r.html"), "--audit", str(bad)], "no audit")
    )
    for argv, why in cases:
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("dpkit report: error:") and why in err and err.count("\n") == 1


def test_audit_results_from_dpkit_audit_are_shown(
    ledger: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(["audit", "laplace", "--samples", "2000", "--seed", "1", "--json", "--no-progress"])
        == 0
    )
    audit = tmp_path / "audit.json"
    audit.write_text(capsys.readouterr().out)
    out = tmp_path / "r.html"
    assert main(["report", str(ledger), "-o", str(out), "--audit", str(audit)]) == 0
    page = out.read_text()
    assert ">laplace<" in page and ">pass<" in page and "PureDP(epsilon=1.0)" in page


def test_the_cli_report_equals_the_python_one(ledger: Path, tmp_path: Path) -> None:
    from dpkit.report.release_report import ledger_report

    acct = dp.Accountant.open(ledger)
    s = dp.Session(dp.datasets.load_adult(), accountant=acct, rng=4)
    s.query().agg(dp.mean("Age", bounds=(0, 100))).measure(epsilon=0.25)
    acct.close()
    out = tmp_path / "r.html"
    assert main(["report", str(ledger), "-o", str(out)]) == 0
    assert GENERATED.sub("", out.read_text()) == GENERATED.sub("", ledger_report(ledger))
