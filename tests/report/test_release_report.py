"""The release report: one page rendered from public facts only, the same from the Session
and from the ledger, changing between neighbouring tables only where released values do."""

from __future__ import annotations

import dataclasses
import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import dpkit as dp
from dpkit.accounting import compose
from dpkit.accounting import events as ev
from dpkit.cli.main import main
from dpkit.render import release_report as rr
from dpkit.render._html import fmt
from dpkit.render._sections import CHART_ROWS

DATA = Path(__file__).parents[1] / "accounting" / "data" / "ledger-v2.sqlite"
GENERATED = re.compile(r'<time class="generated" datetime="[^"]*">[^<]*</time>')
ANY_TIME = re.compile(r'<time( class="generated")? datetime="[^"]*">[^<]*</time>')


def _people(with_rare: bool = True) -> pl.DataFrame:
    """400 people in four towns (one row each), and (``with_rare``) one more person with
    five rows, alone in the town "ZZZ-rare": removing them gives a neighbouring table."""
    towns = ["Ash", "Birch", "Cedar", "Dale"]
    pid = list(range(400))
    town = [towns[i % 4] for i in range(400)]
    age = [float(20 + (7 * i) % 60) for i in range(400)]
    if with_rare:
        pid += [400] * 5
        town += ["ZZZ-rare"] * 5
        age += [99.0] * 5
    return pl.DataFrame({"pid": pid, "town": town, "age": age})


def _releases(s: dp.Session) -> None:
    """Four releases: private keys (the rare town a candidate, left out by the threshold),
    public keys, a quantile, SQL (private keys, the rare town dropped by the pre-threshold)."""
    q = s.query().group_by("town", pre_threshold=1)
    q.agg(dp.count(), dp.mean("age", bounds=(0, 100))).measure(epsilon=0.5, delta=1e-6)
    s.query().group_by("town", keys=["Ash", "Birch", "ZZZ-rare"]).agg(dp.count()).measure(
        epsilon=0.25
    )
    s.query().agg(dp.median("age", bounds=(0, 100))).measure(epsilon=0.25, label="median <age>")
    s.sql(
        "SELECT town, AVG(age) AS a FROM data GROUP BY town ORDER BY a",
        epsilon=0.5,
        delta=1e-6,
        bounds={"age": (0, 100)},
    )


def _session(data: pl.DataFrame, ledger: Path | None = None, rng: Any = 11) -> dp.Session:
    budget = dp.ApproxDP(2.0, 1e-5)
    acct = dp.Accountant(budget, ledger=ledger)
    return dp.Session(data, privacy_unit="pid", max_rows_per_unit=2, accountant=acct, rng=rng)


def test_the_report_from_the_ledger_equals_the_report_from_the_session(tmp_path: Path) -> None:
    ledger = tmp_path / "budget.sqlite"
    s = _session(_people(), ledger)
    _releases(s)
    s.query().agg(dp.sum("age", bounds="auto")).measure(epsilon=0.25, rng=None)
    from_session = s.report(tmp_path / "session.html").read_text()
    s.accountant.close()
    from_ledger = rr.ledger_report(ledger)
    assert main(["report", str(ledger), "-o", str(tmp_path / "cli.html")]) == 0
    from_cli = (tmp_path / "cli.html").read_text()
    # the same bytes, but for the one <time class="generated"> (when the page was written)
    assert len(GENERATED.findall(from_session)) == 2  # header and reproducibility
    same = GENERATED.sub("", from_session)
    assert same == GENERATED.sub("", from_ledger) == GENERATED.sub("", from_cli)
    assert from_session.count('<article id="release-') == 5


def _substituted(data: rr.ReportData, other: rr.ReportData) -> rr.ReportData:
    """``data`` with ``other``'s released values (each record's table) and times."""
    records = tuple(
        {**r, "table": o["table"], "time": o["time"]}
        for r, o in zip(data.records, other.records, strict=True)
    )
    spends = tuple(
        dataclasses.replace(s, time=o.time) for s, o in zip(data.spends, other.spends, strict=True)
    )
    return dataclasses.replace(data, records=records, spends=spends, generated=other.generated)


def test_neighbouring_tables_give_reports_that_differ_only_in_released_values() -> None:
    # the same seed on D and on D without one person (five rows, alone in a town that key
    # selection leaves out): whatever the report shows beyond the released values (counts of
    # suppressed groups, rows dropped by bounding, keys, exact statistics) would differ too
    reports = []
    for with_rare in (True, False):
        s = _session(_people(with_rare))
        _releases(s)
        reports.append(rr.session_data(s))
    d, d_prime = reports
    d_prime = dataclasses.replace(d_prime, generated=d.generated)
    assert rr.render(d) != rr.render(d_prime)  # released values differ (the public key's count)
    for r, o in zip(d.records, d_prime.records, strict=True):
        assert {k: v for k, v in r.items() if k not in ("table", "time")} == {
            k: v for k, v in o.items() if k not in ("table", "time")
        }
    # with D's released values, D''s report is D's, byte for byte
    assert rr.render(_substituted(d_prime, d)) == rr.render(d)
    page = rr.render(d)
    assert "ZZZ-rare" in page  # as a public key, given by the analyst ...
    released = [row[0] for r in d.records for row in r["table"]["rows"]]
    assert released.count("ZZZ-rare") == 1  # ... and only there: never as a private key


def test_sections_come_in_order_with_their_contents(tmp_path: Path) -> None:
    s = _session(_people())
    _releases(s)
    page = s.report(tmp_path / "r.html").read_text()
    order = [
        'id="summary"',
        'id="releases"',
        'id="unprotected"',
        'id="audit"',
        'id="reproducibility"',
    ]
    assert [page.index(m) for m in order] == sorted(page.index(m) for m in order)
    assert page.count("<h1>") == 1
    for text in (
        "Key selection ran.",
        "the threshold τ =",
        "Pre-threshold: a group of fewer than",
        "Delta for key selection",
        "How many groups were left out, and which, is not shown",
        "SELECT town, AVG(age) AS a FROM data GROUP BY town ORDER BY a",
        "s.query(max_rows_per_unit=2, max_groups_per_unit=2)",
        "at most 2 row(s) and 2 group(s) per person",
        "each person, all of whose rows share one value of &#x27;pid&#x27;",
        "cover the noise only",
        "The public schema",
        "the group keys of town",
        "No audit result was attached",
    ):
        assert text in page, text
    # seeded throughout: every release is flagged, in the header and in its own section
    assert page.count('class="banner warning"') == 2 + 4
    assert "median &lt;age&gt;" in page and "<age>" not in page  # labels are escaped


def test_the_page_fetches_nothing_and_runs_nothing(tmp_path: Path) -> None:
    s = _session(_people())
    _releases(s)
    page = s.report(tmp_path / "r.html").read_text()
    assert not re.search(r"<script|\son\w+=|<link|<img|<iframe|@import|url\(", page)
    urls = set(re.findall(r"https?://[^\s\"'<>]+", page))
    assert urls <= {"http://www.w3.org/2000/svg"}
    assert "default-src 'none'" in page


def _approx_ledger(tmp_path: Path, described: bool) -> Path:
    ledger = tmp_path / "b.sqlite"
    with dp.Accountant(dp.ApproxDP(4.0, 1e-5), ledger=ledger) as acct:
        for _ in range(20):  # 20 Laplace releases at epsilon 0.1 (sensitivity 1, scale 10)
            events = [ev.Laplace(scale=10.0)] if described else None
            acct.spend(dp.PureDP(0.1), label="Laplace", events=events)
    return ledger


def _analyses(page: str) -> dict[str, str]:
    table = page[page.index("Spent and remaining epsilon by analysis") :]
    table = table[: table.index("</table>")]
    rows = re.findall(r'<th scope="row">([^<]*)</th><td class="num">([^<]*)</td>', table)
    return dict(rows)


def test_the_budget_shows_each_analysis_and_the_tightest(tmp_path: Path) -> None:
    # spends described only by their cost: Approx events
    page = rr.ledger_report(_approx_ledger(tmp_path, described=False))
    expected = compose([ev.Approx(epsilon=0.1)] * 20, delta=1e-5)
    shown = _analyses(page)
    assert {k.replace(" (tightest)", "") for k in shown} == {
        rr.ANALYSES[m] for m in expected.by_method
    }
    for m, eps in expected.by_method.items():
        mark = " (tightest)" if m == expected.method else ""
        assert shown[rr.ANALYSES[m] + mark] == fmt(eps, 6)
    assert "0 of 20 spend(s) stated their events" in page


def test_tight_accounting_shows_once_the_spends_state_their_events(tmp_path: Path) -> None:
    # the same spends, each saying it is Laplace noise of scale 10: the PLD analysis wins
    page = rr.ledger_report(_approx_ledger(tmp_path, described=True))
    expected = compose([(ev.Laplace(scale=10.0), 20)], delta=1e-5)
    assert expected.method == "pld" and expected.epsilon < 1.7  # basic: 2
    assert _analyses(page)[rr.ANALYSES["pld"] + " (tightest)"] == fmt(expected.epsilon, 6)
    assert "20 of 20 spend(s) stated their events" in page
    assert f"Spent, tightest analysis ({rr.ANALYSES['pld']})" in page


def test_a_spend_converted_to_the_budget_relation_is_composed_as_charged(tmp_path: Path) -> None:
    # an add/remove spend against a replace-one budget is charged 2 epsilon (group privacy);
    # its own events hold under add/remove only, so the analyses use the charge
    ledger = tmp_path / "b.sqlite"
    with dp.Accountant(dp.ApproxDP(4.0, 1e-5), relation="bounded", ledger=ledger) as acct:
        acct.spend(dp.PureDP(0.5), label="x", events=[ev.Laplace(scale=2.0)])
    data = rr.ledger_data(ledger)
    assert rr.spend_events(data.spends[0], data.relation) == (ev.Approx(epsilon=1.0),)
    shown = _analyses(rr.render(data))
    assert shown["basic composition" + ("" if len(shown) > 1 else " (tightest)")] == fmt(1.0, 6)


@pytest.mark.parametrize(
    ("budget", "note"),
    [(dp.PureDP(1.0), "A pure-DP budget"), (dp.ZCDP(0.5), "A zCDP budget composes exactly")],
)
def test_budgets_without_a_delta_say_why_no_other_analysis_applies(budget: Any, note: str) -> None:
    s = dp.Session(_people(), budget=budget, rng=1)
    kw = {"epsilon": 0.25} if isinstance(budget, dp.PureDP) else {"rho": 0.125}
    s.query().group_by("town", keys=["Ash"]).agg(dp.count()).measure(**kw)
    page = rr.render(rr.session_data(s))
    assert note in page and "Spent and remaining epsilon by analysis" not in page


def test_one_release_has_its_own_report(tmp_path: Path) -> None:
    s = _session(_people(), rng=None)
    rel = s.query().group_by("town", keys=["Ash"]).agg(dp.count()).measure(epsilon=0.5)
    page = rel.report(tmp_path / "one.html").read_text()
    assert "This report covers one release" in page and "Charged by this release" in page
    assert 'class="banner warning"' not in page  # secure randomness
    assert page.count('<article id="release-') == 1
    bare = dataclasses.replace(rel, record=None)
    with pytest.raises(dp.ParameterError, match="no release record"):
        bare.report(tmp_path / "x.html")


def test_audit_verdicts_are_shown(tmp_path: Path) -> None:
    from dpkit.audit import audit

    lap = dp.Laplace(epsilon=1.0, sensitivity=1.0)
    result = audit(
        lambda x, rng: lap.release(x, rng=rng),
        0.0,
        1.0,
        claimed=dp.PureDP(1.0),
        samples=2000,
        rng=1,
        name="Laplace count",
    )
    s = _session(_people())
    page = s.report(tmp_path / "r.html", audit=[result, {**result.as_dict(), "name": "again"}])
    text = page.read_text()
    assert "Laplace count" in text and "again" in text and ">pass<" in text
    with pytest.raises(TypeError, match="audit result"):
        s.report(tmp_path / "r.html", audit=["not an audit"])


def test_spends_without_a_record_and_older_ledgers_are_listed(tmp_path: Path) -> None:
    old = tmp_path / "old.sqlite"
    old.write_bytes(DATA.read_bytes())
    page = rr.ledger_report(old)
    assert page.count("<td>no release record</td>") == 3 and "No release is recorded." in page
    assert "0 of 3 spend(s) stated their events" in page
    acct = dp.Accountant.open(old)
    dp.Laplace(epsilon=0.125, sensitivity=1.0).release(1.0, rng=1, accountant=acct)
    s = dp.Session(_people(), accountant=acct, rng=1)
    s.query().group_by("town", keys=["Ash"]).agg(dp.count()).measure(epsilon=0.125)
    page = rr.render(rr.session_data(s))
    assert page.count("<td>no release record</td>") == 4
    assert page.count('<article id="release-') == 1


def test_a_title_must_be_text_and_is_escaped(tmp_path: Path) -> None:
    s = _session(_people())
    page = s.report(tmp_path / "r.html", title="Q3 <draft>").read_text()
    assert "<title>Q3 &lt;draft&gt;</title>" in page
    with pytest.raises(TypeError, match="title"):
        s.report(tmp_path / "r.html", title=3)  # type: ignore[arg-type]


def test_the_generated_time_is_the_only_clock_read(tmp_path: Path) -> None:
    s = _session(_people())
    _releases(s)
    data = rr.session_data(s)
    when = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
    page = rr.render(dataclasses.replace(data, generated=when))
    assert page == rr.render(dataclasses.replace(data, generated=when))
    assert page.count("2030-01-02 03:04:05 UTC") == 2
    assert json.loads(json.dumps(data.records)) == list(data.records)


def test_missing_and_infinite_values_are_shown_and_left_out_of_the_charts() -> None:
    s = _session(_people())
    s.query().group_by("town", keys=["Ash", "Birch", "Cedar"]).agg(dp.count()).measure(epsilon=0.5)
    data = rr.session_data(s)
    (record,) = data.records
    rows = [list(r) for r in record["table"]["rows"]]
    rows[0][1:4] = ["inf", None, "nan"]  # as a record writes a non-finite float, and a null
    page = rr.render(
        dataclasses.replace(data, records=({**record, "table": {**record["table"], "rows": rows}},))
    )
    assert ">inf</span>" in page and ">null</span>" in page and ">nan</span>" in page
    assert (
        "2 group(s)" in page and "1 row(s) with a missing or infinite figure are not drawn" in page
    )


def test_a_chart_draws_at_most_sixty_rows_and_says_so() -> None:
    frame = pl.DataFrame({"k": list(range(100)) * 3})
    s = dp.Session(frame, budget=dp.PureDP(1.0), rng=1)
    s.query().group_by("k", keys=list(range(100))).agg(dp.count()).measure(epsilon=1.0)
    page = rr.render(rr.session_data(s))
    assert page.count('<circle class="dot"') == CHART_ROWS == 60
    assert "The first 60 of 100 rows are drawn." in page
    assert page.count('<span class="v" data-column="count">') == 100


def test_a_record_in_another_format_leaves_its_spend_without_a_release(tmp_path: Path) -> None:
    from dpkit.session import _record

    assert (rr.RECORD_FORMAT, rr.RECORD_VERSION) == (_record.FORMAT, _record.VERSION)
    ledger = tmp_path / "b.sqlite"
    with dp.Accountant(dp.PureDP(1.0), ledger=ledger) as acct:
        spend = acct.spend(dp.PureDP(0.5), label="from a later dpkit")
        acct.attach_record(spend.index, {"format": "dpkit-release", "version": 99})
    page = rr.ledger_report(ledger)
    assert "<td>no release record</td>" in page and "No release is recorded." in page


def test_the_running_total_follows_the_tight_charge(tmp_path: Path) -> None:
    # 60 Laplace releases at epsilon 0.1 against epsilon 5: beyond basic composition (6)
    ledger = tmp_path / "tight.sqlite"
    with dp.Accountant(dp.ApproxDP(5.0, 1e-5), ledger=ledger, composition="tight") as acct:
        for _ in range(60):
            acct.spend(dp.PureDP(0.1), label="Laplace", events=[ev.Laplace(scale=10.0)])
        spent = acct.spent.epsilon  # type: ignore[union-attr]
    data = rr.ledger_data(ledger)
    assert data.composition == "tight"
    bv = rr._budget(data)
    assert bv.running[-1] == pytest.approx(6.0)  # the charges' sum, drawn in the chart
    assert bv.charged[-1] == spent < 5.0  # what the accountant charged
    # never above the charges' sum (one of the bounds), and 60 spends only fit tightly
    assert all(c <= r for c, r in zip(bv.charged, bv.running, strict=True))
    assert all(a <= b for a, b in zip(bv.charged, bv.charged[1:], strict=False))
    page = rr.render(data)
    assert "running total (epsilon, tight accounting)" in page
    assert f'<td class="num">{fmt(spent, 6)}</td>' in page
    # a basic ledger's running total is the charges' sum
    plain = tmp_path / "basic.sqlite"
    with dp.Accountant(dp.ApproxDP(5.0, 1e-5), ledger=plain, composition="basic") as acct:
        for _ in range(40):
            acct.spend(dp.PureDP(0.1), label="Laplace", events=[ev.Laplace(scale=10.0)])
    data = rr.ledger_data(plain)
    basic = rr._budget(data)
    assert basic.charged == basic.running and basic.running[-1] == pytest.approx(4.0)
    assert "running total (epsilon)" in rr.render(data)
