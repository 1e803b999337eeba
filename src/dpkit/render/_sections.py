"""The release report's sections other than the summary: each release (its facts, query,
plan, released table and charts), what is not protected, audit verdicts and reproducibility;
and the words for privacy losses and events they share with the summary.

Every function reads release records (plain JSON data, :mod:`dpkit.session._record`) and
returns HTML; nothing here reads data or draws randomness.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from dpkit.accounting import ZCDP, ApproxDP, PrivacyLoss, PureDP
from dpkit.accounting import events as ev
from dpkit.accounting.loss import event_to_dict, loss_from_dict
from dpkit.errors import ParameterError
from dpkit.render._html import banner, esc, exact, fmt, table, time_tag, value_chart

if TYPE_CHECKING:
    from dpkit.render.release_report import ReportData

__all__ = [
    "CHART_ROWS",
    "QUANTILE_METHODS",
    "audit_section",
    "event_text",
    "loss_from_json",
    "loss_text",
    "record_loss",
    "release_section",
    "reproducibility_section",
    "seeded",
    "unprotected_section",
]


#: the quantile methods of dpkit.statistics, in words
QUANTILE_METHODS = {
    "exponential": "exponential mechanism (one level)",
    "aq": "ApproximateQuantiles (Kaplan, Schnapp and Stemmer 2022)",
    "joint": "JointExp (Gillenwater, Joseph and Kulesza 2021)",
    "independent": "one exponential mechanism per level",
    "cdf": "a noisy histogram on the integers (CDF)",
}


#: rows drawn per chart (the table lists all)
CHART_ROWS = 60


def loss_from_json(data: Mapping[str, Any]) -> PrivacyLoss:
    if data["type"] not in ("PureDP", "ApproxDP", "ZCDP"):
        raise ParameterError(f"report: a record names an unknown privacy loss {data['type']!r}")
    return loss_from_dict(data)


def loss_text(loss: PrivacyLoss | None) -> str:
    if loss is None:
        return "n/a"
    if isinstance(loss, ZCDP):
        return f"ρ = {fmt(loss.rho, 6)} (zCDP)"
    if isinstance(loss, PureDP) or (isinstance(loss, ApproxDP) and loss.delta == 0):
        return f"ε = {fmt(loss.epsilon, 6)}"
    assert isinstance(loss, ApproxDP)
    return f"ε = {fmt(loss.epsilon, 6)}, δ = {fmt(loss.delta, 4)}"


def record_loss(data: Mapping[str, Any]) -> str:
    return loss_text(loss_from_json(data))


def event_text(e: Mapping[str, Any] | ev.Event) -> str:
    fields = event_to_dict(e) if isinstance(e, ev.Event) else dict(e)
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


def _unit_words(unit: str | None) -> str:
    return "one row" if unit is None else f"one person (all rows with the same {unit!r})"


def seeded(records: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [r for r in records if not r["randomness"]["secure"]]


def _columns(table: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """``(labels, stats)``: the key-like columns and the statistics (a column ``s`` with
    ``s_low`` and ``s_high``)."""
    names = [c["name"] for c in table["columns"]]
    stats = [c for c in names if f"{c}_low" in names and f"{c}_high" in names]
    bounds = {f"{c}_{e}" for c in stats for e in ("low", "high")}
    labels = [c for c in names if c not in stats and c not in bounds]
    return labels, stats


def release_section(record: Mapping[str, Any]) -> str:
    idx = record["spend"]
    plan = record["plan"]
    privacy = record["privacy"]
    level = f"{1 - plan['alpha']:.3g}"
    out = [f'<article id="release-{idx}" class="release" aria-labelledby="release-{idx}-h">']
    out.append(f'<h3 id="release-{idx}-h">Release #{idx}: {esc(record["label"])}</h3>')
    if not record["randomness"]["secure"]:
        out.append(
            banner(
                "this release used <strong>seeded randomness</strong>: it is reproducible, "
                "and anyone with the seed can recompute its noise and so the exact "
                "statistics. It is <strong>not private</strong>; publish only releases made "
                "with secure randomness."
            )
        )
    unit = record["privacy_unit"]
    bounding = plan["bounding"]
    facts = [
        ("When", time_tag(record["time"])),
        ("Spend", esc(f"#{idx} of the budget")),
        ("Privacy cost", esc(record_loss(privacy["cost"]))),
        (
            "Charged",
            esc(
                "the same"
                if record_loss(privacy["charged"]) == record_loss(privacy["cost"])
                else record_loss(privacy["charged"])
            ),
        ),
        (
            "Accounting events",
            esc("; ".join(event_text(e) for e in privacy["events"]) or "none stated"),
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
            table(
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
            table(
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
            table(
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
            else f"its own count, {fmt(sel['share'], 3)} of the budget"
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
    released = record["table"]
    names = [c["name"] for c in released["columns"]]
    labels, stats = _columns(released)
    order = labels + [c for c in names if c not in labels]
    pos = [names.index(c) for c in order]
    rows = released["rows"]
    out = [f'<h4 id="release-{idx}-table">The released table</h4>']
    numeric = {
        i
        for i, c in enumerate(order)
        if c not in labels
        or released["columns"][names.index(c)]["dtype"].startswith(("Int", "UInt", "Float"))
    }
    body = []
    for row in rows:
        body.append(
            [
                f'<span class="v" data-column="{esc(order[j])}">{esc(exact(row[p]))}</span>'
                for j, p in enumerate(pos)
            ]
        )
    table_html = table(
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


def unprotected_section(data: ReportData) -> str:
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
            table(
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


def audit_section(data: ReportData) -> str:
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
            table(
                "Audit results",
                ["audited", "claim", "epsilon lower bound", "confidence", "draws", "verdict"],
                rows,
                numeric=(2, 3, 4),
                raw=True,
            )
        )
    out.append("</section>")
    return "".join(out)


def reproducibility_section(data: ReportData) -> str:
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
            time_tag(r["time"]),
            "secure"
            if r["randomness"]["secure"]
            else '<strong class="over">seeded: reproducible, NOT private</strong>',
            esc(r["dpkit"]),
        ]
        for r in data.records
    ]
    out.append(
        table(
            "Each release's randomness and dpkit version",
            ["release", "when (UTC)", "randomness", "dpkit"],
            rows,
            raw=True,
        )
    )
    out.append(
        '<dl class="facts">'
        f"<dt>Report written</dt><dd>{time_tag(data.generated.isoformat(), 'generated')} by "
        f"dpkit {esc(own)}</dd>"
        f"<dt>Ledger</dt><dd>{esc(data.ledger or 'none (kept in memory)')}</dd>"
        "</dl>"
        "<p>A secure release cannot be reproduced: its noise came from the operating "
        "system's randomness and is kept nowhere. A seeded one can, by anyone with its seed, "
        "which is why it is not private and why the seed is not recorded.</p>"
    )
    out.append("</section>")
    return "".join(out)
