"""The release report: one self-contained HTML file a privacy officer reads and signs off.

It is rendered from plain data only: the release records (:mod:`dpkit.session._record`)
and the accountant's spends. The same records are kept by the Session and beside the spends
in the ledger, so :func:`session_report` (``Session.report``), :func:`ledger_report`
(``dpkit report LEDGER``) and :func:`release_report` (``QueryRelease.report``) render the
same page from either place.

Contents, in order: a summary (the budget spent and remaining, under each accounting
analysis the spends' events allow; the releases; the privacy unit and neighbour relation in
plain words; the budget over time), each release (when, the query, the plan, the released
table with its intervals, a chart of the values with their interval bars), what is not
protected, audit verdicts, reproducibility (versions, randomness, dates).

The page has inline CSS and inline SVG charts, no script and nothing fetched (a Content
Security Policy forbids it); headings, tables with captions and header cells, charts with
text alternatives, a print stylesheet that keeps tables whole.

Privacy
-------
Post-processing of public facts: the records hold the analyst's parameters, the plans
(functions of them), the released values and the DP outputs of automatic stages; the
spends hold costs. Nothing is computed from the data: the report never shows the rows
bounding dropped, the number of groups key selection left out (it counts private keys),
such keys, or any exact statistic.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from fractions import Fraction
from pathlib import Path
from typing import Any

from dpkit.accounting import ZCDP, Accountant, ApproxDP, PrivacyLoss, PureDP, compose
from dpkit.accounting import events as ev
from dpkit.errors import ParameterError
from dpkit.report._html import CSP, CSS, budget_chart, esc, exact, fmt, value_chart

__all__ = [
    "ReportData",
    "SpendRow",
    "ledger_data",
    "ledger_report",
    "release_report",
    "render",
    "session_data",
    "session_report",
    "spend_events",
]

TITLE = "Release report"

#: the analyses of dpkit.accounting.compose, in plain words
ANALYSES = {
    "gaussian": "exact Gaussian composition",
    "pld": "privacy-loss distributions (PLD)",
    "rdp": "Rényi DP",
    "zcdp": "zero-concentrated DP (zCDP)",
    "advanced": "advanced composition",
    "basic": "basic composition",
}
#: the quantile methods of dpkit.statistics, in words
QUANTILE_METHODS = {
    "exponential": "exponential mechanism (one level)",
    "aq": "ApproximateQuantiles (Kaplan, Schnapp and Stemmer 2022)",
    "joint": "JointExp (Gillenwater, Joseph and Kulesza 2021)",
    "independent": "one exponential mechanism per level",
    "cdf": "a noisy histogram on the integers (CDF)",
}
#: prefixes of the spends at which the tightest analysis is drawn in the budget chart
CURVE_POINTS = 24
#: rows drawn per chart (the table lists all)
CHART_ROWS = 60


@dataclass(frozen=True)
class SpendRow:
    """One spend of the budget, as the report shows it."""

    index: int
    time: str
    label: str
    cost: PrivacyLoss
    charge: PrivacyLoss
    relation: str
    events: tuple[ev.Event, ...] = ()


@dataclass(frozen=True)
class ReportData:
    """Everything a report shows: public facts only.

    ``spends`` are the budget's spends, oldest first (``complete``: all of them, so the
    budget's totals ``spent`` and ``remaining`` are known); ``records`` the releases shown,
    in spend order.
    """

    budget: PrivacyLoss
    relation: str
    ledger: str | None
    spends: tuple[SpendRow, ...]
    records: tuple[Mapping[str, Any], ...]
    complete: bool
    spent: PrivacyLoss | None = None
    remaining: PrivacyLoss | None = None
    audits: tuple[Any, ...] = ()
    title: str = TITLE
    generated: datetime = field(default_factory=lambda: datetime.now(UTC))


# -- inputs ---------------------------------------------------------------------------------


def _loss(data: Mapping[str, Any]) -> PrivacyLoss:
    kind = data["type"]
    if kind == "PureDP":
        return PureDP(data["epsilon"])
    if kind == "ApproxDP":
        return ApproxDP(data["epsilon"], data["delta"])
    if kind == "ZCDP":
        return ZCDP(data["rho"])
    raise ParameterError(f"report: a record names an unknown privacy loss {kind!r}")


def _event(data: Mapping[str, Any]) -> ev.Event:
    fields = dict(data)
    kind = fields.pop("type")
    if kind not in ev.__all__ or kind == "Event":
        raise ParameterError(f"report: a record names an unknown privacy event {kind!r}")
    event: ev.Event = getattr(ev, kind)(**fields)
    return event


def _row(spend: Any) -> SpendRow:
    return SpendRow(
        spend.index,
        spend.timestamp.isoformat(),
        spend.label,
        spend.cost,
        spend.charge,
        spend.relation,
        tuple(spend.events),
    )


def _audits(audit: Any) -> tuple[Any, ...]:
    """``audit`` as a tuple of audit results (objects or their ``as_dict()`` mappings)."""
    if audit is None:
        return ()
    items = [audit] if hasattr(audit, "verdict") or isinstance(audit, Mapping) else audit
    if isinstance(items, str | bytes) or not isinstance(items, Iterable):
        raise TypeError(
            "report: `audit` must be an audit result (dpkit.audit.audit(...)) or a list of "
            f"them; got {type(audit).__name__}"
        )
    out = tuple(items)
    for a in out:
        if not (hasattr(a, "verdict") or (isinstance(a, Mapping) and "verdict" in a)):
            raise TypeError(
                "report: each `audit` item must be an audit result (dpkit.audit.audit(...)) "
                f"or its as_dict(); got {type(a).__name__}"
            )
    return out


def _title(title: Any) -> str:
    if title is None:
        return TITLE
    if not isinstance(title, str):
        raise TypeError(f"report: `title` must be a str; got {type(title).__name__}")
    return title


def _write(path: str | os.PathLike[str], text: str) -> Path:
    out = Path(os.fspath(path))
    out.write_text(text, encoding="utf-8")
    return out


def session_data(session: Any, *, audit: Any = None, title: Any = None) -> ReportData:
    """What the report of a Session shows: its releases' records, and its accountant's
    budget and spends (all of them: a shared ledger's other spends too)."""
    acct = session.accountant
    return ReportData(
        budget=acct.budget,
        relation=acct.relation,
        ledger=None if acct.ledger is None else acct.ledger.name,
        spends=tuple(_row(s) for s in acct.history),
        records=tuple(sorted(session.records, key=lambda r: r["spend"])),
        complete=True,
        spent=acct.spent,
        remaining=acct.remaining,
        audits=_audits(audit),
        title=_title(title),
    )


def session_report(
    session: Any, path: str | os.PathLike[str], *, audit: Any = None, title: Any = None
) -> Path:
    """Write the report of a Session's releases (:meth:`dpkit.Session.report`)."""
    return _write(path, render(session_data(session, audit=audit, title=title)))


def ledger_data(
    ledger: str | os.PathLike[str], *, audit: Any = None, title: Any = None
) -> ReportData:
    """What the report of a ledger shows: every record and spend it keeps."""
    audits, name = _audits(audit), _title(title)
    with Accountant.open(ledger) as acct:
        records = acct.records()
        return ReportData(
            budget=acct.budget,
            relation=acct.relation,
            ledger=Path(os.fspath(ledger)).name,
            spends=tuple(_row(s) for s in acct.history),
            records=tuple(records[i] for i in sorted(records)),
            complete=True,
            spent=acct.spent,
            remaining=acct.remaining,
            audits=audits,
            title=name,
        )


def ledger_report(
    ledger: str | os.PathLike[str],
    path: str | os.PathLike[str] | None = None,
    *,
    audit: Any = None,
    title: Any = None,
) -> str:
    """The report of every release in a ledger, from the ledger alone (``dpkit report``).

    Parameters
    ----------
    ledger : str or os.PathLike
        An existing ledger file (opened with :meth:`dpkit.Accountant.open`; an older
        ledger is migrated as any opening does).
    path : str or os.PathLike, optional
        Where to write the HTML; ``None`` returns it only.
    audit, title
        As for :meth:`dpkit.Session.report`.

    Returns
    -------
    str
        The HTML.

    Raises
    ------
    LedgerError
        The ledger cannot be opened or read.
    """
    text = render(ledger_data(ledger, audit=audit, title=title))
    if path is not None:
        _write(path, text)
    return text


def release_report(
    rel: Any, path: str | os.PathLike[str], *, audit: Any = None, title: Any = None
) -> Path:
    """Write the report of one release (:meth:`dpkit.session.QueryRelease.report`)."""
    record = getattr(rel, "record", None)
    if record is None:
        raise ParameterError(
            "QueryRelease.report: this result has no release record (it was not released by "
            "a Session's query or SQL); release it with Query.measure or Session.sql"
        )
    privacy = record["privacy"]
    budget = privacy["budget"]
    row = SpendRow(
        record["spend"],
        record["time"],
        record["label"],
        _loss(privacy["cost"]),
        _loss(privacy["charged"]),
        record["relation"],
        tuple(_event(e) for e in privacy["events"]),
    )
    data = ReportData(
        budget=_loss(budget["total"]),
        relation=budget["relation"],
        ledger=budget["ledger"],
        spends=(row,),
        records=(record,),
        complete=False,
        audits=_audits(audit),
        title=_title(title),
    )
    return _write(path, render(data))


# -- accounting -----------------------------------------------------------------------------


def _pair(loss: PrivacyLoss) -> tuple[Fraction, Fraction]:
    if isinstance(loss, ZCDP):
        return Fraction(loss.rho), Fraction(0)
    if isinstance(loss, PureDP):
        return Fraction(loss.epsilon), Fraction(0)
    return Fraction(loss.epsilon), Fraction(loss.delta)


def _as_event(loss: PrivacyLoss) -> ev.Event:
    """A loss as the event it guarantees (valid for any mechanism with that guarantee)."""
    if isinstance(loss, ZCDP):
        return ev.Zcdp(rho=loss.rho)
    if isinstance(loss, PureDP):
        return ev.Approx(epsilon=loss.epsilon)
    return ev.Approx(epsilon=loss.epsilon, delta=loss.delta)


def spend_events(row: SpendRow, relation: str) -> tuple[ev.Event, ...]:
    """What a spend is, for accounting under the budget's ``relation``: the events the
    release stated; its cost when it stated none; its charge when its own relation differs
    (the charge is the guarantee converted to the budget's relation)."""
    if row.relation != relation:
        return (_as_event(row.charge),)
    return row.events or (_as_event(row.cost),)


def _up(x: Fraction) -> float:
    out = float(x)
    return math.nextafter(out, math.inf) if Fraction(out) < x else out


@dataclass
class _Budget:
    kind: str  # "pure", "approx", "zcdp"
    total: float
    delta: float
    unit: str
    running: list[float]
    by_method: dict[str, float] | None = None
    method: str | None = None
    curve: list[tuple[int, float]] | None = None
    stated: int = 0
    note: str = ""


def _budget(data: ReportData) -> _Budget:
    b = data.budget
    if isinstance(b, ZCDP):
        kind, total, delta, unit = "zcdp", b.rho, 0.0, "rho"
    elif isinstance(b, ApproxDP) and b.delta > 0:
        kind, total, delta, unit = "approx", b.epsilon, b.delta, "epsilon"
    else:
        kind, total, delta, unit = "pure", b.epsilon, 0.0, "epsilon"
    running, acc = [], Fraction(0)
    for s in data.spends:
        acc += _pair(s.charge)[0]
        running.append(_up(acc))
    out = _Budget(kind, total, delta, unit, running)
    out.stated = sum(1 for s in data.spends if s.events and s.relation == data.relation)
    if kind != "approx":
        out.note = (
            "A zCDP budget composes exactly by adding rho: the total charged is the budget's "
            "own accounting, and no other analysis applies."
            if kind == "zcdp"
            else "A pure-DP budget (delta = 0) composes by adding epsilons: the analyses that "
            "spend less trade a delta > 0, which this budget does not allow."
        )
        return out
    if not data.spends:
        return out
    events = [spend_events(s, data.relation) for s in data.spends]
    try:
        whole = compose([e for group in events for e in group], delta=delta)
    except ParameterError as exc:  # no analysis applies
        out.note = f"No analysis composes these spends ({exc})."
        return out
    out.by_method = dict(whole.by_method)
    out.method = whole.method
    n = len(events)
    marks = sorted({max(1, round(n * k / CURVE_POINTS)) for k in range(1, CURVE_POINTS + 1)})
    curve = []
    for k in marks:
        if k == n:
            curve.append((k, whole.epsilon))
        else:
            part = compose([e for group in events[:k] for e in group], delta=delta)
            curve.append((k, part.epsilon))
    out.curve = curve
    return out


# -- formatting -----------------------------------------------------------------------------


def _loss_text(loss: PrivacyLoss | None) -> str:
    if loss is None:
        return "n/a"
    if isinstance(loss, ZCDP):
        return f"ρ = {fmt(loss.rho, 6)} (zCDP)"
    if isinstance(loss, PureDP) or (isinstance(loss, ApproxDP) and loss.delta == 0):
        return f"ε = {fmt(loss.epsilon, 6)}"
    assert isinstance(loss, ApproxDP)
    return f"ε = {fmt(loss.epsilon, 6)}, δ = {fmt(loss.delta, 4)}"


def _record_loss(data: Mapping[str, Any]) -> str:
    return _loss_text(_loss(data))


def _event_text(e: Mapping[str, Any] | ev.Event) -> str:
    if isinstance(e, ev.Event):
        name = type(e).__name__
        fields = {k: getattr(e, k) for k in e.__dataclass_fields__}  # type: ignore[attr-defined]
    else:
        fields = dict(e)
        name = fields.pop("type")
    if name == "Approx":
        return (
            f"(ε = {fmt(fields['epsilon'], 6)}, δ = {fmt(fields['delta'])})-DP"
            if fields["delta"]
            else f"pure ε = {fmt(fields['epsilon'], 6)}"
        )
    if name == "Zcdp":
        return f"zCDP ρ = {fmt(fields['rho'], 6)}"
    if name == "KeySelection":
        return f"key selection δ = {fmt(fields['delta'])}"
    args = ", ".join(f"{k}={fmt(v) if isinstance(v, float) else v}" for k, v in fields.items())
    return f"{name}({args})"


def _time(iso: str, cls: str = "") -> str:
    try:
        when = datetime.fromisoformat(iso)
        shown = when.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    except ValueError:
        shown = iso
    attr = f' class="{cls}"' if cls else ""
    return f'<time{attr} datetime="{esc(iso)}">{esc(shown)}</time>'


def _table(
    caption: str,
    head: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    numeric: Iterable[int] = (),
    row_header: int = 1,
    cls: str = "",
    raw: bool = False,
) -> str:
    """A table with a caption, column headers (``scope="col"``) and the first
    ``row_header`` cells of each row as row headers; cells are escaped unless ``raw``."""
    nums = set(numeric)
    out = [f"<table{f' class={chr(34)}{cls}{chr(34)}' if cls else ''}>"]
    out.append(f"<caption>{caption}</caption>")
    out.append(
        "<thead><tr>"
        + "".join(
            f'<th scope="col"{" class=" + chr(34) + "num" + chr(34) if i in nums else ""}>'
            f"{esc(h)}</th>"
            for i, h in enumerate(head)
        )
        + "</tr></thead><tbody>"
    )
    for row in rows:
        cells = []
        for i, c in enumerate(row):
            text = c if raw else esc(c)
            num = ' class="num"' if i in nums else ""
            if i < row_header:
                cells.append(f'<th scope="row"{num}>{text}</th>')
            else:
                cells.append(f"<td{num}>{text}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _unit_words(unit: str | None) -> str:
    return "one row" if unit is None else f"one person (all rows with the same {unit!r})"


# -- sections -------------------------------------------------------------------------------


def _seeded(records: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [r for r in records if not r["randomness"]["secure"]]


def _banner(text: str) -> str:
    return (
        '<div class="banner warning" role="note" aria-label="Warning">'
        f"<strong>Warning:</strong> {text}</div>"
    )


def _summary(data: ReportData, bv: _Budget) -> str:
    recs = data.records
    out = ['<section id="summary" aria-labelledby="summary-h">']
    out.append('<h2 id="summary-h">1. Summary</h2>')
    if not data.complete:
        out.append(
            "<p>This report covers one release. What the whole budget has spent is in the "
            "Session's report (<code>Session.report</code>) or the ledger's "
            "(<code>dpkit report LEDGER</code>).</p>"
        )
    figures = [("Budget", _loss_text(data.budget))]
    if data.complete:
        figures.append(("Spent, as charged", _loss_text(data.spent)))
        figures.append(("Remaining, as charged", _loss_text(data.remaining)))
        if bv.method is not None and bv.by_method:
            eps = bv.by_method[bv.method]
            figures.append(
                (
                    f"Spent, tightest analysis ({ANALYSES[bv.method]})",
                    f"ε = {fmt(eps, 6)} at δ = {fmt(bv.delta)}",
                )
            )
            figures.append(("Remaining, tightest analysis", _left(bv.total, eps)))
    else:
        figures.append(("Charged by this release", _loss_text(data.spends[0].charge)))
    figures.append(("Releases in this report", str(len(recs))))
    if data.complete:
        figures.append(("Spends of the budget", str(len(data.spends))))
    out.append('<ul class="figures" aria-label="Key figures">')
    for label, value in figures:
        out.append(
            f'<li><span class="label">{esc(label)}</span>'
            f'<span class="value">{esc(value)}</span></li>'
        )
    out.append("</ul>")
    units = sorted({str(r["privacy_unit"]) for r in recs if r["privacy_unit"] is not None})
    rowwise = any(r["privacy_unit"] is None for r in recs)
    who = []
    if rowwise:
        who.append("each row")
    who += [f"each person, all of whose rows share one value of {u!r}" for u in units]
    protected = " and ".join(who) if who else "each record"
    eps = data.budget.rho if isinstance(data.budget, ZCDP) else data.budget.epsilon
    if data.relation == "unbounded":
        relation = (
            "<em>adding or removing one unit</em> (relation 'unbounded'): every release below "
            "would have been about as likely had any one unit's data been left out"
        )
    else:
        relation = (
            "<em>replacing one unit's data</em> (relation 'bounded'; the number of units is "
            "public): every release below would have been about as likely had any one unit's "
            "data been replaced by any other"
        )
    out.append(
        f"<p><strong>Whom it protects.</strong> The unit of privacy is {esc(protected)}. "
        f"Neighbouring tables differ by {relation}.</p>"
    )
    if not isinstance(data.budget, ZCDP):
        out.append(
            f"<p><strong>What the budget means.</strong> Within a budget of ε = {fmt(eps)}, "
            "no outcome of all the releases together becomes more than "
            f"e<sup>ε</sup> = {fmt(math.exp(min(eps, 700)), 3)} times more or less likely "
            "because of one unit"
            + (
                f", except with probability at most δ = {fmt(data.budget.delta)}"
                if isinstance(data.budget, ApproxDP) and data.budget.delta > 0
                else ""
            )
            + ".</p>"
        )
    seeded = _seeded(recs)
    if seeded:
        out.append(
            _banner(
                f"{len(seeded)} of {len(recs)} release(s) in this report used seeded "
                "(reproducible) randomness: anyone with the seed can recompute their noise, "
                "so they are <strong>not private</strong>. See "
                + ", ".join(
                    f'<a href="#release-{r["spend"]}">release #{r["spend"]}</a>' for r in seeded
                )
                + "."
            )
        )
    out.append(_analyses(data, bv))
    out.append(_budget_figure(data, bv))
    out.append(_spends_table(data, bv))
    out.append("</section>")
    return "".join(out)


def _left(total: float, spent: float, prefix: str = "ε = ") -> str:
    """What remains of ``total`` after ``spent``: ``0`` within rounding (1e-9 relative, the
    analyses round their bounds up), "over budget" beyond it."""
    left = total - spent
    tol = 1e-9 * max(total, 1.0)
    if left < -tol:
        return "over budget"
    return prefix + (fmt(left, 6) if left > tol else "0")


def _analyses(data: ReportData, bv: _Budget) -> str:
    out = ['<h3 id="accounting">The budget under each accounting analysis</h3>']
    out.append(
        "<p>The accountant charges each spend its cost and adds the costs up (basic "
        "composition: the figures charged above). Each analysis below composes what the "
        "spends are (their privacy events) instead; every one is a valid upper bound, so the "
        "smallest is what the budget has really spent.</p>"
    )
    if bv.by_method is None:
        out.append(f"<p>{esc(bv.note or 'No spends yet.')}</p>")
        return "".join(out)
    n = len(data.spends)
    out.append(
        f"<p>{bv.stated} of {n} spend(s) stated their events; the others are described by "
        f"their cost. Epsilon of all {n} spend(s) together at δ = {fmt(bv.delta)} (the "
        "budget's delta):</p>"
    )
    rows = []
    for m, eps in bv.by_method.items():
        mark = " (tightest)" if m == bv.method else ""
        rows.append([ANALYSES.get(m, m) + mark, fmt(eps, 6), _left(bv.total, eps, "")])
    out.append(
        _table(
            "Spent and remaining epsilon by analysis",
            ["analysis", "epsilon spent", "epsilon remaining"],
            rows,
            numeric=(1, 2),
        )
    )
    return "".join(out)


def _budget_figure(data: ReportData, bv: _Budget) -> str:
    tight = None
    if bv.curve and bv.method is not None:
        tight = bv.curve
    svg, w, h = budget_chart(
        "chart-budget",
        bv.total,
        bv.unit,
        bv.running,
        tight,
        ANALYSES.get(bv.method or "", ""),
    )
    what = "the spends in this report" if not data.complete else "every spend of the budget"
    return (
        f'<figure id="budget-over-time" data-width="{w}" data-height="{h}">{svg}'
        f"<figcaption>Figure: the budget over time, {what} in the order they were made: the "
        "running total charged by basic composition, the budget"
        + (", and the tightest analysis' epsilon" if tight else "")
        + ". The table below has the same figures.</figcaption></figure>"
    )


def _spends_table(data: ReportData, bv: _Budget) -> str:
    shown = {r["spend"] for r in data.records}
    rows = []
    for s, total in zip(data.spends, bv.running, strict=True):
        link = (
            f'<a href="#release-{s.index}">release #{s.index}</a>'
            if s.index in shown
            else "no release record"
        )
        rows.append(
            [
                esc(s.index),
                _time(s.time),
                esc(s.label),
                esc(_loss_text(s.cost)),
                esc("same" if _loss_text(s.charge) == _loss_text(s.cost) else _loss_text(s.charge)),
                esc(fmt(total, 6)),
                link,
            ]
        )
    note = ""
    if data.complete and any(s.index not in shown for s in data.spends):
        note = (
            '<p class="muted">A spend with no release record was charged by something other '
            "than a Session release in this report (a mechanism, another Session, an older "
            "dpkit), or its release failed after the charge.</p>"
        )
    return (
        '<h3 id="spends">Every spend</h3>'
        + _table(
            "Spends of the budget, oldest first",
            [
                "#",
                "when (UTC)",
                "label",
                "cost",
                "charged",
                f"running total ({bv.unit})",
                "release",
            ],
            rows,
            numeric=(0, 5),
            raw=True,
        )
        + note
    )


def _columns(table: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """``(labels, stats)``: the key-like columns and the statistics (a column ``s`` with
    ``s_low`` and ``s_high``)."""
    names = [c["name"] for c in table["columns"]]
    stats = [c for c in names if f"{c}_low" in names and f"{c}_high" in names]
    bounds = {f"{c}_{e}" for c in stats for e in ("low", "high")}
    labels = [c for c in names if c not in stats and c not in bounds]
    return labels, stats


def _release(record: Mapping[str, Any]) -> str:
    idx = record["spend"]
    plan = record["plan"]
    privacy = record["privacy"]
    level = f"{1 - plan['alpha']:.3g}"
    out = [f'<article id="release-{idx}" class="release" aria-labelledby="release-{idx}-h">']
    out.append(f'<h3 id="release-{idx}-h">Release #{idx}: {esc(record["label"])}</h3>')
    if not record["randomness"]["secure"]:
        out.append(
            _banner(
                "this release used <strong>seeded randomness</strong>: it is reproducible, "
                "and anyone with the seed can recompute its noise and so the exact "
                "statistics. It is <strong>not private</strong>; publish only releases made "
                "with secure randomness."
            )
        )
    unit = record["privacy_unit"]
    bounding = plan["bounding"]
    facts = [
        ("When", _time(record["time"])),
        ("Spend", esc(f"#{idx} of the budget")),
        ("Privacy cost", esc(_record_loss(privacy["cost"]))),
        (
            "Charged",
            esc(
                "the same"
                if _record_loss(privacy["charged"]) == _record_loss(privacy["cost"])
                else _record_loss(privacy["charged"])
            ),
        ),
        (
            "Accounting events",
            esc("; ".join(_event_text(e) for e in privacy["events"]) or "none stated"),
        ),
        (
            "Neighbours",
            esc(f"add or remove {_unit_words(unit)} (relation {record['relation']!r})"),
        ),
        ("Engine", esc(record["engine"])),
        (
            "Randomness",
            "secure (the operating system's)"
            if record["randomness"]["secure"]
            else '<strong class="over">seeded: reproducible, NOT private</strong>',
        ),
    ]
    if unit is not None:
        auto = bounding["auto"]
        rows = f"chosen privately: {auto['chosen']}" if auto else str(bounding["max_rows_per_unit"])
        facts.insert(
            6,
            (
                "Contribution bounds",
                esc(
                    f"at most {rows} row(s) and {bounding['max_groups_per_unit']} group(s) "
                    "per person, kept at random for each release"
                ),
            ),
        )
    out.append('<dl class="facts">')
    for k, v in facts:
        out.append(f"<dt>{esc(k)}</dt><dd>{v}</dd>")
    out.append("</dl>")
    query = record["query"]
    lang = "in SQL" if query["language"] == "sql" else "as the Session's builder calls (Python)"
    out.append(f'<h4 id="release-{idx}-query">The query, {esc(lang)}</h4>')
    out.append(
        f'<pre><code class="language-{esc(query["language"])}">{esc(query["text"])}</code></pre>'
    )
    out.append(_plan(record, idx, level))
    out.append(_released(record, idx, level))
    out.append("</article>")
    return "".join(out)


def _plan(record: Mapping[str, Any], idx: int, level: str) -> str:
    plan = record["plan"]
    out = [f'<h4 id="release-{idx}-plan">The plan</h4>']
    noise = (
        f"discrete Laplace noise, pure DP, ε = {fmt(plan['epsilon'], 6)}"
        if plan["noise"] == "laplace"
        else f"discrete Gaussian noise, zCDP, ρ = {fmt(plan['rho'], 6)}"
    )
    out.append(f"<p>Noise: {esc(noise)}; intervals at level {esc(level)}.</p>")
    bounding = plan["bounding"]
    if record["privacy_unit"] is None:
        out.append("<p>Bounding: none needed; each row is its own unit.</p>")
    elif bounding["auto"]:
        a = bounding["auto"]
        out.append(
            "<p>Bounding: the rows kept per person were chosen privately as a DP "
            f"{esc(fmt(a['level']))}-quantile of rows per person (capped at {esc(a['cap'])}), "
            f"with {esc(fmt(a['share']))} of the budget (ε = {esc(fmt(a['epsilon']))}): "
            f"chosen {esc(a['chosen'])}; at most {esc(bounding['max_groups_per_unit'])} "
            "group(s) per person.</p>"
        )
    else:
        out.append(
            f"<p>Bounding: at most {esc(bounding['max_rows_per_unit'])} row(s) and "
            f"{esc(bounding['max_groups_per_unit'])} group(s) per person (public), kept at "
            "random afresh for each release. The sensitivities below follow from these bounds, "
            "never from the data.</p>"
        )
    gb = plan["group_by"]
    if gb["columns"]:
        keys = (
            "public keys given by the analyst (each released, empty ones included)"
            if gb["keys"] == "public"
            else "keys chosen privately (key selection, below)"
        )
        out.append(f"<p>Groups: by {esc(', '.join(gb['columns']))}; {esc(keys)}.</p>")
    if plan["parts"]:
        rows = [
            [
                p["aggregate"],
                p["statistic"],
                p["mechanism"],
                fmt(p["share"], 3),
                fmt(p["sensitivity"]),
                fmt(p["scale"]),
                fmt(p["std"]),
                "± " + fmt(p["half_width"]),
            ]
            for p in plan["parts"]
        ]
        out.append(
            _table(
                f"Noisy statistics: budget share, sensitivity and noise ({esc(level)} interval)",
                [
                    "aggregate",
                    "statistic",
                    "mechanism",
                    "budget share",
                    "sensitivity",
                    "noise scale",
                    "noise std",
                    "interval half-width",
                ],
                rows,
                numeric=(3, 4, 5, 6, 7),
            )
        )
    if plan["quantiles"]:
        rows = [
            [
                q["aggregate"],
                QUANTILE_METHODS.get(q["method"], q["method"]),
                fmt(q["share"], 3),
                fmt(q["epsilon_per_group"]),
                "; ".join(
                    f"{st['stage']}: {st['mechanism']}, ε {fmt(st['epsilon'])}"
                    for st in q["stages"]
                ),
            ]
            for q in plan["quantiles"]
        ]
        out.append(
            _table(
                "Quantiles: method, budget share and epsilon per group (per row of a person)",
                ["aggregate", "method", "budget share", "ε per group", "stages"],
                rows,
                numeric=(2, 3),
            )
        )
    bounded = [a for a in plan["aggregates"] if "bounds" in a]
    if bounded:
        rows = []
        for a in bounded:
            b = a["bounds"]
            value = (
                "not chosen"
                if b["value"] is None
                else f"[{exact(b['value'][0])}, {exact(b['value'][1])}]"
            )
            if b["source"] == "public":
                how, frac = "public, given by the analyst", "n/a"
            else:
                method = (
                    "a noisy signed log2 histogram"
                    if b["method"] == "histogram"
                    else "a private 0.1th/99.9th percentile"
                )
                how = (
                    f"chosen privately ({method}; {fmt(b['share'], 3)} of the budget, "
                    f"ε {fmt(b['epsilon'])} per row)"
                )
                if b["fallback"]:
                    how += "; no bucket passed its threshold: the public fallback"
                cf = b["clipped_fraction"]
                frac = "n/a (tail method)" if cf is None else exact(cf)
            rows.append([a["name"], str(a["column"]), value, how, frac])
        out.append(
            _table(
                "Bounds: values are clipped to them before any statistic",
                ["aggregate", "column", "bounds", "how they were set", "DP clipped fraction"],
                rows,
            )
        )
    sel = plan["selection"]
    if sel is not None:
        src = (
            f"the released {sel['reuses']!r} count"
            if sel["reuses"]
            else f"its own count ({fmt(sel['share'], 3)} of the budget)"
        )
        out.append(
            f'<p id="release-{idx}-selection"><strong>Key selection ran.</strong> A group '
            "is released only if its noisy count of distinct units "
            f"({esc(sel['mechanism'])}, noise std {esc(fmt(sel['std']))}; {esc(src)}) reaches "
            f"the threshold τ = {esc(sel['threshold'])}. "
            + (
                f"Pre-threshold: a group of fewer than {esc(sel['pre_threshold'])} distinct "
                "units is dropped inside the engine before any noise. "
                if sel["pre_threshold"] > 1
                else ""
            )
            + f"Delta for key selection: δ = {esc(fmt(sel['delta']))} (the probability that a "
            f"group one unit alone decides appears, summed over a unit's "
            f"{esc(sel['keys_per_unit'])} group(s), is at most {esc(fmt(sel['delta_bound']))}"
            + (
                f", of which {esc(fmt(sel['delta_pre_threshold']))} pays for the pre-threshold"
                if sel["pre_threshold"] > 1
                else ""
            )
            + "). How many groups were left out, and which, is not shown: that number counts "
            "private keys.</p>"
        )
    if plan["notes"]:
        out.append("<p>Notes:</p><ul>")
        out += [f"<li>{esc(n)}</li>" for n in plan["notes"]]
        out.append("</ul>")
    out.append(
        "<details><summary>The plan as dpkit prints it (<code>explain()</code>)</summary>"
        f"<pre>{esc(plan['text'])}</pre></details>"
    )
    return "".join(out)


def _released(record: Mapping[str, Any], idx: int, level: str) -> str:
    table = record["table"]
    names = [c["name"] for c in table["columns"]]
    labels, stats = _columns(table)
    order = labels + [c for c in names if c not in labels]
    pos = [names.index(c) for c in order]
    rows = table["rows"]
    out = [f'<h4 id="release-{idx}-table">The released table</h4>']
    numeric = {
        i
        for i, c in enumerate(order)
        if c not in labels
        or table["columns"][names.index(c)]["dtype"].startswith(("Int", "UInt", "Float"))
    }
    body = []
    for row in rows:
        body.append(
            [
                f'<span class="v" data-column="{esc(order[j])}">{esc(exact(row[p]))}</span>'
                for j, p in enumerate(pos)
            ]
        )
    table_html = _table(
        f"Released values ({len(rows)} row(s)), each with its {esc(level)} interval "
        "(<code>_low</code>, <code>_high</code>)",
        order,
        body,
        numeric=numeric,
        row_header=len(labels),
        cls="released",
        raw=True,
    )
    # a wide table scrolls on screen (a labelled region a keyboard can reach)
    out.append(
        f'<div class="wide" role="region" aria-labelledby="release-{idx}-table" tabindex="0">'
        f"{table_html}</div>"
    )
    if not rows:
        out.append("<p>No row was released.</p>")
    out.append(
        f'<p class="muted">Intervals at level {esc(level)} cover the noise only, not the '
        "bias of clipping to the bounds, of per-person bounding or of key selection.</p>"
    )
    where = {c: names.index(c) for c in names}
    label_of = [
        " · ".join(exact(row[where[c]]) for c in labels) if labels else "all rows" for row in rows
    ]
    for k, stat in enumerate(stats):
        shown = rows[:CHART_ROWS]
        svg, w, h, marks = value_chart(
            f"chart-{idx}-{k}",
            f"{stat} with its {level} interval" + (f", by {', '.join(labels)}" if labels else ""),
            label_of[:CHART_ROWS],
            [r[where[stat]] for r in shown],
            [r[where[f"{stat}_low"]] for r in shown],
            [r[where[f"{stat}_high"]] for r in shown],
            level,
        )
        more = (
            f" The first {CHART_ROWS} of {len(rows)} rows are drawn."
            if len(rows) > CHART_ROWS
            else ""
        )
        out.append(
            f'<figure class="values" data-width="{w}" data-height="{h}" data-marks="{marks}">'
            f"{svg}<figcaption>Figure: {esc(stat)}, released values (dots) with their "
            f"{esc(level)} intervals (bars).{esc(more)}</figcaption></figure>"
        )
    return "".join(out)


def _unprotected(data: ReportData) -> str:
    recs = data.records
    out = ['<section id="unprotected" aria-labelledby="unprotected-h">']
    out.append('<h2 id="unprotected-h">3. What is not protected</h2>')
    out.append(
        "<p>Differential privacy protects the unit of privacy in the data. It does not "
        "protect what was public to begin with, and it makes public everything released:</p>"
        "<ul>"
        "<li><strong>The released values</strong>, every figure in the tables above, are "
        "public once released; the ledger keeps them beside their spends.</li>"
        "<li><strong>The schema</strong>: the table's column names and types (below).</li>"
        "<li><strong>What the analyst declared public</strong>: public group keys, bounds, "
        "histogram bins, quantile levels, contribution bounds, filters and the query text "
        "(below, and in each release's query).</li>"
        "<li><strong>The intervals' caveats</strong>: each interval covers the noise only. "
        "Clipping to the bounds, per-person bounding and key selection can bias a value "
        "beyond its interval; means, variances and quantiles have conservative intervals.</li>"
        "</ul>"
    )
    if recs:
        latest = recs[-1]
        rows = [
            [c["name"], c["type"], "declared (schema=)" if c["declared"] else "the data's own"]
            for c in latest["schema"]
        ]
        out.append(
            _table(
                "The public schema (as of the last release)",
                ["column", "type", "where the type comes from"],
                rows,
            )
        )
    items = []
    for r in recs:
        plan = r["plan"]
        facts = []
        gb = plan["group_by"]
        if gb["keys"] == "public":
            facts.append(f"the group keys of {', '.join(gb['columns'])} (every row of its table)")
        for a in plan["aggregates"]:
            b = a.get("bounds")
            if b is not None and b["source"] == "public":
                facts.append(
                    f"the bounds of {a['name']}: [{exact(b['value'][0])}, {exact(b['value'][1])}]"
                )
            if "bins" in a:
                facts.append(f"the bins of {a['name']}: {', '.join(exact(x) for x in a['bins'])}")
            if "levels" in a and a["kind"] == "quantile":
                facts.append(
                    f"the levels of {a['name']}: {', '.join(exact(x) for x in a['levels'])}"
                )
        if r["privacy_unit"] is not None and not plan["bounding"]["auto"]:
            facts.append(
                f"the contribution bounds ({plan['bounding']['max_rows_per_unit']} row(s), "
                f"{plan['bounding']['max_groups_per_unit']} group(s) per person)"
            )
        for name, cols in r.get("public_tables", {}).items():
            facts.append(f"the public table {name!r} ({', '.join(cols)})")
        if not r["randomness"]["secure"]:
            facts.append("its noise, to anyone with the seed (seeded randomness)")
        shown = "; ".join(facts) if facts else "nothing beyond its query"
        items.append(
            f'<li><a href="#release-{r["spend"]}">Release #{r["spend"]}</a>: {esc(shown)}.</li>'
        )
    if items:
        out.append("<p>Declared public, release by release:</p><ul>" + "".join(items) + "</ul>")
    out.append(
        "<p><strong>Never in this report</strong>: the rows dropped by bounding, the number "
        "of groups key selection left out (it counts private keys) and those keys, any "
        "exact (un-noised) statistic, and the seed of a seeded release.</p>"
    )
    out.append("</section>")
    return "".join(out)


def _get(a: Any, name: str, default: Any = None) -> Any:
    if isinstance(a, Mapping):
        return a.get(name, default)
    return getattr(a, name, default)


def _audit(data: ReportData) -> str:
    out = ['<section id="audit" aria-labelledby="audit-h">']
    out.append('<h2 id="audit-h">4. Audit verdicts</h2>')
    if not data.audits:
        out.append(
            "<p>No audit result was attached to this report. <code>dpkit.audit.audit</code> "
            "(or <code>dpkit audit</code>) measures a lower bound on a release's epsilon on "
            "worst-case neighbouring tables; attach its results with "
            "<code>report(..., audit=...)</code>.</p>"
        )
    else:
        rows = []
        for a in data.audits:
            verdict = str(_get(a, "verdict"))
            cls = "over" if verdict != "pass" else "winner"
            rows.append(
                [
                    esc(_get(a, "name") or "(unnamed)"),
                    esc(_get(a, "claim") if isinstance(a, Mapping) else repr(_get(a, "claim"))),
                    esc(fmt(_get(a, "epsilon_lower_bound"))),
                    esc(fmt(_get(a, "confidence"))),
                    esc(fmt(_get(a, "samples"))),
                    f'<span class="{cls}">{esc(verdict)}</span>',
                ]
            )
        out.append(
            "<p>An audit draws many outputs on two neighbouring inputs and bounds epsilon "
            "from below; a verdict of <em>violation</em> means the lower bound exceeds the "
            "claim.</p>"
        )
        out.append(
            _table(
                "Audit results",
                ["audited", "claim", "epsilon lower bound", "confidence", "draws", "verdict"],
                rows,
                numeric=(2, 3, 4),
                raw=True,
            )
        )
    out.append("</section>")
    return "".join(out)


def _reproducibility(data: ReportData) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        own = version("dpkit")
    except PackageNotFoundError:
        own = "unknown"
    out = ['<section id="reproducibility" aria-labelledby="reproducibility-h">']
    out.append('<h2 id="reproducibility-h">5. Reproducibility</h2>')
    rows = [
        [
            f'<a href="#release-{r["spend"]}">#{r["spend"]}</a>',
            _time(r["time"]),
            "secure"
            if r["randomness"]["secure"]
            else '<strong class="over">seeded: reproducible, NOT private</strong>',
            esc(r["dpkit"]),
        ]
        for r in data.records
    ]
    out.append(
        _table(
            "Each release's randomness and dpkit version",
            ["release", "when (UTC)", "randomness", "dpkit"],
            rows,
            raw=True,
        )
    )
    out.append(
        '<dl class="facts">'
        f"<dt>Report written</dt><dd>{_time(data.generated.isoformat(), 'generated')} by "
        f"dpkit {esc(own)}</dd>"
        f"<dt>Ledger</dt><dd>{esc(data.ledger or 'none (kept in memory)')}</dd>"
        "</dl>"
        "<p>A secure release cannot be reproduced: its noise came from the operating "
        "system's randomness and is kept nowhere. A seeded one can, by anyone with its seed, "
        "which is why it is not private and why the seed is not recorded.</p>"
    )
    out.append("</section>")
    return "".join(out)


def render(data: ReportData) -> str:
    """The report's HTML (one self-contained page) for ``data``."""
    bv = _budget(data)
    recs = data.records
    head = (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="generator" content="dpkit">'
        f"<title>{esc(data.title)}</title><style>{CSS}</style></head><body>"
    )
    parts = [head, "<header>"]
    parts.append(f"<h1>{esc(data.title)}</h1>")
    parts.append(
        '<p class="subtitle">Differentially private releases made with dpkit: '
        f"{len(recs)} release(s), written {_time(data.generated.isoformat(), 'generated')}.</p>"
    )
    seeded = _seeded(recs)
    if seeded:
        parts.append(
            _banner(
                f"{len(seeded)} release(s) in this report used seeded randomness and are "
                "<strong>not private</strong> (see the summary)."
            )
        )
    parts.append("</header>")
    toc = [
        '<nav aria-label="Contents"><h2 id="contents">Contents</h2><ol>',
        '<li><a href="#summary">Summary</a></li>',
        '<li><a href="#releases">Releases</a><ol>',
    ]
    for r in recs:
        toc.append(
            f'<li><a href="#release-{r["spend"]}">Release #{r["spend"]}: {esc(r["label"])}</a></li>'
        )
    toc.append("</ol></li>")
    toc += [
        '<li><a href="#unprotected">What is not protected</a></li>',
        '<li><a href="#audit">Audit verdicts</a></li>',
        '<li><a href="#reproducibility">Reproducibility</a></li></ol></nav>',
    ]
    parts += toc
    parts.append("<main>")
    parts.append(_summary(data, bv))
    parts.append('<section id="releases" aria-labelledby="releases-h">')
    parts.append('<h2 id="releases-h">2. Releases</h2>')
    if not recs:
        parts.append("<p>No release is recorded.</p>")
    for r in recs:
        parts.append(_release(r))
    parts.append("</section>")
    parts.append(_unprotected(data))
    parts.append(_audit(data))
    parts.append(_reproducibility(data))
    parts.append("</main>")
    parts.append(
        "<footer><p>Written by dpkit. Every figure is a released value, a public parameter or "
        "a function of them; nothing in this page was computed from the data.</p></footer>"
    )
    parts.append("</body></html>\n")
    return "".join(parts)
