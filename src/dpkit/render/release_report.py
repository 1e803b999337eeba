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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from fractions import Fraction
from pathlib import Path
from typing import Any

from dpkit.accounting import ZCDP, Accountant, ApproxDP, PrivacyLoss, PureDP, compose
from dpkit.accounting import events as ev
from dpkit.accounting.accountant import compose_as_charged, plain_event
from dpkit.errors import ParameterError
from dpkit.render._html import CSP, CSS, banner, budget_chart, esc, fmt, table, time_tag
from dpkit.render._sections import (
    audit_section,
    loss_from_json,
    loss_text,
    release_section,
    reproducibility_section,
    seeded,
    unprotected_section,
)

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
#: the release records this renderer reads (dpkit.session._record's FORMAT and VERSION)
RECORD_FORMAT, RECORD_VERSION = "dpkit-release", 1

#: the analyses of dpkit.accounting.compose, in plain words
ANALYSES = {
    "gaussian": "exact Gaussian composition",
    "pld": "privacy-loss distributions (PLD)",
    "rdp": "Rényi DP",
    "zcdp": "zero-concentrated DP (zCDP)",
    "advanced": "advanced composition",
    "basic": "basic composition",
}
#: prefixes of the spends at which the tightest analysis is drawn in the budget chart
CURVE_POINTS = 24


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
    composition: str = "basic"
    title: str = TITLE
    generated: datetime = field(default_factory=lambda: datetime.now(UTC))


# -- inputs ---------------------------------------------------------------------------------


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


def _accountant_data(
    acct: Any,
    ledger: str | None,
    records: Iterable[Mapping[str, Any]],
    audits: tuple[Any, ...],
    title: str,
) -> ReportData:
    """A whole budget's report: ``acct``'s budget, spends and totals, and ``records``."""
    return ReportData(
        budget=acct.budget,
        relation=acct.relation,
        ledger=ledger,
        spends=tuple(_row(s) for s in acct.history),
        records=tuple(records),
        complete=True,
        spent=acct.spent,
        remaining=acct.remaining,
        audits=audits,
        composition=acct.composition,
        title=title,
    )


def session_data(session: Any, *, audit: Any = None, title: Any = None) -> ReportData:
    """What the report of a Session shows: its releases' records, and its accountant's
    budget and spends (all of them: a shared ledger's other spends too)."""
    audits, name = _audits(audit), _title(title)
    acct = session.accountant
    ledger = None if acct.ledger is None else acct.ledger.name
    records = sorted(session.records, key=lambda r: r["spend"])
    return _accountant_data(acct, ledger, records, audits, name)


def session_report(
    session: Any, path: str | os.PathLike[str], *, audit: Any = None, title: Any = None
) -> Path:
    """Write the report of a Session's releases (:meth:`dpkit.Session.report`)."""
    return _write(path, render(session_data(session, audit=audit, title=title)))


def _readable(record: Any) -> bool:
    """A record this renderer reads (a Session release record, format version 1); another
    one (a later dpkit's) leaves its spend listed without a release."""
    return (
        isinstance(record, Mapping)
        and record.get("format") == RECORD_FORMAT
        and record.get("version") == RECORD_VERSION
    )


def ledger_data(
    ledger: str | os.PathLike[str], *, audit: Any = None, title: Any = None
) -> ReportData:
    """What the report of a ledger shows: every record and spend it keeps."""
    audits, name = _audits(audit), _title(title)
    with Accountant.open(ledger) as acct:
        kept = acct.records()
        records = [kept[i] for i in sorted(kept) if _readable(kept[i])]
        return _accountant_data(acct, Path(os.fspath(ledger)).name, records, audits, name)


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
        loss_from_json(privacy["cost"]),
        loss_from_json(privacy["charged"]),
        record["relation"],
        tuple(_event(e) for e in privacy["events"]),
    )
    data = ReportData(
        budget=loss_from_json(budget["total"]),
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


def spend_events(row: SpendRow, relation: str) -> tuple[ev.Event, ...]:
    """What a spend is, for accounting under the budget's ``relation``: the events the
    release stated; its cost when it stated none; its charge when its own relation differs
    (the charge is the guarantee converted to the budget's relation)."""
    if row.relation != relation:
        return (plain_event(row.charge),)
    return row.events or (plain_event(row.cost),)


def _up(x: Fraction) -> float:
    out = float(x)
    return math.nextafter(out, math.inf) if Fraction(out) < x else out


@dataclass
class _Budget:
    total: float
    delta: float
    unit: str
    running: list[float]  # the charges' sum after each spend (basic composition)
    charged: list[float] = field(default_factory=list)  # as the accountant charged it
    by_method: dict[str, float] | None = None
    method: str | None = None
    curve: list[tuple[int, float]] | None = None
    stated: int = 0
    note: str = ""


def _tight_running(
    events: list[tuple[ev.Event, ...]], running: list[float], deltas: list[Fraction], delta: float
) -> list[float]:
    """Epsilon after each spend as a tight accountant charges it: the smaller of the
    charges' sum (when their deltas fit the budget's) and the events' tightest composition
    at the budget's delta (:meth:`dpkit.Accountant.composed`)."""
    out = []
    counts: dict[ev.Event, int] = {}
    for k, group in enumerate(events):
        for e in group:
            counts[e] = counts.get(e, 0) + 1
        try:
            tight = compose_as_charged(tuple(counts.items()), delta).epsilon
        except ParameterError:  # no analysis applies
            tight = math.inf
        charged = running[k] if deltas[k] <= Fraction(delta) else math.inf
        out.append(min(tight, charged))
    return out


def _budget(data: ReportData) -> _Budget:
    b = data.budget
    if isinstance(b, ZCDP):
        kind, total, delta, unit = "zcdp", b.rho, 0.0, "rho"
    elif isinstance(b, ApproxDP) and b.delta > 0:
        kind, total, delta, unit = "approx", b.epsilon, b.delta, "epsilon"
    else:
        kind, total, delta, unit = "pure", b.epsilon, 0.0, "epsilon"
    running, acc = [], Fraction(0)
    deltas, acc_d = [], Fraction(0)
    for s in data.spends:
        eps, d = _pair(s.charge)
        acc += eps
        acc_d += d
        running.append(_up(acc))
        deltas.append(acc_d)
    out = _Budget(total, delta, unit, running, charged=list(running))
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
    if data.composition == "tight":
        out.charged = _tight_running(events, running, deltas, delta)
    n = len(events)
    marks = sorted({max(1, round(n * k / CURVE_POINTS)) for k in range(1, CURVE_POINTS + 1)})
    curve = []
    for k in marks:
        if k == n:
            curve.append((k, whole.epsilon))
        else:
            try:
                part = compose([e for group in events[:k] for e in group], delta=delta)
            except ParameterError:  # no analysis applies to these spends: no point drawn
                continue
            curve.append((k, part.epsilon))
    out.curve = curve
    return out


# -- sections -------------------------------------------------------------------------------


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
    figures = [("Budget", loss_text(data.budget))]
    if data.complete:
        figures.append(("Spent, as charged", loss_text(data.spent)))
        figures.append(("Remaining, as charged", loss_text(data.remaining)))
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
        figures.append(("Charged by this release", loss_text(data.spends[0].charge)))
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
    flagged = seeded(recs)
    if flagged:
        out.append(
            banner(
                f"{len(flagged)} of {len(recs)} release(s) in this report used seeded "
                "(reproducible) randomness: anyone with the seed can recompute their noise, "
                "so they are <strong>not private</strong>. See "
                + ", ".join(
                    f'<a href="#release-{r["spend"]}">release #{r["spend"]}</a>' for r in flagged
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
        table(
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
    for s, total in zip(data.spends, bv.charged, strict=True):
        link = (
            f'<a href="#release-{s.index}">release #{s.index}</a>'
            if s.index in shown
            else "no release record"
        )
        cost, charged = loss_text(s.cost), loss_text(s.charge)
        rows.append(
            [
                esc(s.index),
                time_tag(s.time),
                esc(s.label),
                esc(cost),
                esc("same" if charged == cost else charged),
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
        + table(
            "Spends of the budget, oldest first",
            [
                "#",
                "when (UTC)",
                "label",
                "cost",
                "charged",
                f"running total ({bv.unit}"
                + (", tight accounting)" if data.composition == "tight" else ")"),
                "release",
            ],
            rows,
            numeric=(0, 5),
            raw=True,
        )
        + note
    )


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
        f"{len(recs)} release(s), written {time_tag(data.generated.isoformat(), 'generated')}.</p>"
    )
    flagged = seeded(recs)
    if flagged:
        parts.append(
            banner(
                f"{len(flagged)} release(s) in this report used seeded randomness and are "
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
        parts.append(release_section(r))
    parts.append("</section>")
    parts.append(unprotected_section(data))
    parts.append(audit_section(data))
    parts.append(reproducibility_section(data))
    parts.append("</main>")
    parts.append(
        "<footer><p>Written by dpkit. Every figure is a released value, a public parameter or "
        "a function of them; nothing in this page was computed from the data.</p></footer>"
    )
    parts.append("</body></html>\n")
    return "".join(parts)
