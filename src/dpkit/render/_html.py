"""The release report's page furniture: its stylesheet, HTML escaping, number formats, tables,
times, banners, and the two charts, drawn as inline SVG by hand (no plotting library, no
script).

Every chart is an ``<svg role="img">`` with a ``<title>`` and a ``<desc>`` (its text
alternative) and a ``<title>`` on every mark, sized by its ``width`` and ``height``
attributes, so it reads without JavaScript, prints, and is described to a screen reader.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

__all__ = [
    "CSP",
    "CSS",
    "budget_chart",
    "esc",
    "exact",
    "fmt",
    "nice_ticks",
    "value_chart",
]

#: Nothing may be fetched: no script, font, image or style from anywhere but the page itself.
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"

CSS = """
:root { --ink: #1b1f24; --muted: #57606a; --rule: #d0d7de; --band: #f6f8fa;
        --accent: #0b5cad; --warn-bg: #fff4d6; --warn: #7a4b00; --bad: #a40e26; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--ink); background: #fff;
       font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue",
             Arial, sans-serif; }
header, main, nav, footer { max-width: 980px; margin: 0 auto; padding: 0 24px; }
header { padding-top: 24px; }
h1 { font-size: 1.8rem; margin: 0 0 4px; }
h2 { font-size: 1.35rem; margin: 32px 0 8px; padding-top: 8px;
     border-top: 2px solid var(--ink); }
h3 { font-size: 1.15rem; margin: 28px 0 6px; }
h4 { font-size: 1rem; margin: 18px 0 6px; }
p, ul, ol, dl { margin: 6px 0 10px; }
.subtitle, .muted { color: var(--muted); }
a { color: var(--accent); }
code, pre, td.num, th.num .v {
  font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 0.88em; }
pre { background: var(--band); border: 1px solid var(--rule); padding: 10px 12px;
      overflow-x: auto; white-space: pre-wrap; word-break: break-word; }
table { border-collapse: collapse; margin: 8px 0 14px; font-size: 0.9rem; }
.wide { overflow-x: auto; max-width: 100%; }
caption { text-align: left; font-weight: 600; padding: 4px 0; caption-side: top; }
th, td { border: 1px solid var(--rule); padding: 3px 8px; vertical-align: top;
         text-align: left; }
thead th { background: var(--band); }
td.num, th.num { text-align: right; white-space: nowrap; }
tbody th { font-weight: 600; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; }
dl.facts dt { font-weight: 600; }
dl.facts dd { margin: 0; }
.figures { display: grid; grid-template-columns: repeat(auto-fit, minmax(170px, 1fr));
           gap: 10px; margin: 12px 0; padding: 0; list-style: none; }
.figures li { border: 1px solid var(--rule); padding: 8px 10px; background: var(--band); }
.figures .label { display: block; font-size: 0.8rem; color: var(--muted); }
.figures .value { display: block; font-size: 1.05rem; font-weight: 600; }
.banner { border-left: 6px solid var(--warn); background: var(--warn-bg); color: #3d2600;
          padding: 8px 12px; margin: 10px 0; }
.banner strong { color: var(--warn); }
.over { color: var(--bad); font-weight: 600; }
.winner { font-weight: 600; }
figure { margin: 10px 0 18px; }
figcaption { font-size: 0.85rem; color: var(--muted); max-width: 640px; }
svg.chart { display: block; max-width: 100%; height: auto; }
svg.chart text { font: 11px system-ui, sans-serif; fill: var(--ink); }
svg.chart .axis { stroke: var(--muted); stroke-width: 1; }
svg.chart .grid { stroke: var(--rule); stroke-width: 1; }
svg.chart .bar { stroke: var(--accent); stroke-width: 2; }
svg.chart .dot { fill: var(--accent); }
svg.chart .budget { stroke: var(--bad); stroke-width: 1.5; stroke-dasharray: 6 4; }
svg.chart .basic { stroke: var(--accent); stroke-width: 2; fill: none; }
svg.chart .tight { stroke: #1a7f37; stroke-width: 2; fill: none; stroke-dasharray: 2 3; }
nav ol { padding-left: 22px; }
nav ol ol { padding-left: 18px; }
details summary { cursor: pointer; color: var(--accent); }
footer { margin-top: 40px; padding-bottom: 32px; color: var(--muted); font-size: 0.85rem;
         border-top: 1px solid var(--rule); }
@media print {
  body { font-size: 10.5pt; }
  header, main, nav, footer { max-width: none; padding: 0; }
  nav { display: none; }
  a { color: inherit; text-decoration: none; }
  h2, h3, h4 { break-after: avoid; page-break-after: avoid; }
  h2 { break-before: page; page-break-before: always; }
  #summary h2 { break-before: auto; page-break-before: auto; }
  table, figure, pre, .banner, dl.facts, .figures { break-inside: avoid;
                                                    page-break-inside: avoid; }
  thead { display: table-header-group; }
  .wide { overflow: visible; }
  tr, th, td { break-inside: avoid; page-break-inside: avoid; }
  .banner { border: 2px solid #000; }
}
"""


def esc(text: Any) -> str:
    """``text`` as HTML text (quotes escaped too, so it also fits an attribute)."""
    return html.escape(str(text), quote=True)


def exact(value: Any) -> str:
    """A released value exactly as it was released: an int in full, a float as its
    shortest round-trip text (``repr``), text as it is; ``null`` for a missing value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def fmt(x: Any, digits: int = 4) -> str:
    """A figure that is not a released value (a scale, a share, an epsilon), to ``digits``
    significant digits."""
    if x is None:
        return "n/a"
    if isinstance(x, str):
        return x
    if isinstance(x, int) and not isinstance(x, bool):
        return f"{x:,}"
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "infinite" if x > 0 else "-infinite"
    return f"{x:.{digits}g}".replace("e-0", "e-").replace("e+0", "e+")


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """About ``count`` round tick values covering ``[lo, hi]`` (steps 1, 2 or 5 times a power
    of ten)."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return []
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / max(count, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.ceil(lo / step) * step
    ticks: list[float] = []
    t = first
    while t <= hi + step * 1e-9 and len(ticks) < 50:
        ticks.append(0.0 if abs(t) < step * 1e-12 else t)
        t += step
    return ticks


def _tick(x: float) -> str:
    return f"{x:.6g}"


#: width of every chart, in CSS pixels
WIDTH = 640
ROW = 20


def _svg_open(chart_id: str, height: int, title: str) -> str:
    """A chart's opening ``<svg>`` tag and its ``<title>``, named for screen readers (the
    ``<desc>`` it points to follows)."""
    return (
        f'<svg class="chart" id="{esc(chart_id)}" role="img" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" xmlns="http://www.w3.org/2000/svg" '
        f'aria-labelledby="{esc(chart_id)}-title" aria-describedby="{esc(chart_id)}-desc">'
        f'<title id="{esc(chart_id)}-title">{esc(title)}</title>'
    )


def value_chart(
    chart_id: str,
    title: str,
    labels: Sequence[str],
    values: Sequence[Any],
    lows: Sequence[Any],
    highs: Sequence[Any],
    level: str,
) -> tuple[str, int, int, int]:
    """A dot-and-interval chart, one row per group: ``(svg, width, height, marks)``.

    ``values``, ``lows``, ``highs`` are the released numbers (``None`` or non-finite ones
    are left out of the chart, and the description says how many). Each dot's ``<title>``
    is ``label: value (low to high)`` with the values written exactly (:func:`exact`).
    """
    rows = []
    skipped = 0
    for lab, v, lo, hi in zip(labels, values, lows, highs, strict=True):
        nums = [v, lo, hi]
        if not all(isinstance(n, int | float) and math.isfinite(n) for n in nums):
            skipped += 1
            continue
        rows.append((lab, v, lo, hi))
    label_w = min(220, 12 + 7 * max((len(r[0]) for r in rows), default=4))
    left, right, top, bottom = label_w, 24, 12, 36
    height = top + ROW * max(len(rows), 1) + bottom
    plot_w = WIDTH - left - right
    finite = [x for r in rows for x in r[1:]]
    lo_all = min(finite, default=0.0)
    hi_all = max(finite, default=1.0)
    if hi_all == lo_all:
        pad = abs(hi_all) * 0.05 or 1.0
        lo_all, hi_all = lo_all - pad, hi_all + pad
    span = hi_all - lo_all
    lo_all, hi_all = lo_all - 0.04 * span, hi_all + 0.04 * span

    def x_of(v: float) -> float:
        return left + (v - lo_all) / (hi_all - lo_all) * plot_w

    parts = [_svg_open(chart_id, height, title)]
    if rows:
        desc = (
            f"One row per group: a dot at the released value and a bar over its {level} "
            f"interval. {len(rows)} group(s); values from {exact(min(r[1] for r in rows))} "
            f"to {exact(max(r[1] for r in rows))}."
        )
    else:
        desc = "No finite released value to draw."
    if skipped:
        desc += f" {skipped} row(s) with a missing or infinite figure are not drawn."
    desc += " The table above lists every value."
    parts.append(f'<desc id="{esc(chart_id)}-desc">{esc(desc)}</desc>')
    axis_y = top + ROW * max(len(rows), 1) + 4
    for t in nice_ticks(lo_all, hi_all):
        x = x_of(t)
        parts.append(
            f'<line class="grid" x1="{x:.1f}" y1="{top - 4}" x2="{x:.1f}" y2="{axis_y}"/>'
            f'<text x="{x:.1f}" y="{axis_y + 16}" text-anchor="middle">{esc(_tick(t))}</text>'
        )
    parts.append(
        f'<line class="axis" x1="{left}" y1="{axis_y}" x2="{WIDTH - right}" y2="{axis_y}"/>'
    )
    for i, (lab, v, lo, hi) in enumerate(rows):
        y = top + ROW * i + ROW / 2
        x0, x1, xv = x_of(min(lo, v)), x_of(max(hi, v)), x_of(v)
        shown = lab if len(lab) <= 30 else lab[:29] + "\u2026"
        parts.append(
            f'<g class="mark"><title>{esc(lab)}: {esc(exact(v))} ({esc(exact(lo))} to '
            f"{esc(exact(hi))})</title>"
            f'<text x="{left - 8}" y="{y + 4:.1f}" text-anchor="end">{esc(shown)}</text>'
            f'<line class="bar" x1="{x0:.1f}" y1="{y:.1f}" x2="{x1:.1f}" y2="{y:.1f}"/>'
            f'<line class="bar" x1="{x0:.1f}" y1="{y - 4:.1f}" x2="{x0:.1f}" y2="{y + 4:.1f}"/>'
            f'<line class="bar" x1="{x1:.1f}" y1="{y - 4:.1f}" x2="{x1:.1f}" y2="{y + 4:.1f}"/>'
            f'<circle class="dot" cx="{xv:.1f}" cy="{y:.1f}" r="4"/></g>'
        )
    parts.append("</svg>")
    return "".join(parts), WIDTH, height, len(rows)


def budget_chart(
    chart_id: str,
    budget: float,
    unit: str,
    basic: Sequence[float],
    tight: Sequence[tuple[int, float]] | None,
    tight_name: str = "",
) -> tuple[str, int, int]:
    """The budget over time: the running total charged after each spend (a staircase), the
    budget as a dashed line and, where given, the tightest analysis' epsilon after some of
    the spends (``tight``: ``(spends so far, epsilon)``). ``(svg, width, height)``."""
    height = 290
    left, right, top, bottom = 64, 24, 16, 74
    plot_w, plot_h = WIDTH - left - right, height - top - bottom
    n = len(basic)
    finite = [b for b in basic if math.isfinite(b)]
    if tight:
        finite += [e for _, e in tight if math.isfinite(e)]
    y_max = max([budget, *finite]) * 1.08 or 1.0

    def x_of(i: float) -> float:
        return left + (i / max(n, 1)) * plot_w

    def y_of(v: float) -> float:
        return top + plot_h - min(v, y_max) / y_max * plot_h

    final = basic[-1] if basic else 0.0
    desc = (
        f"{n} spend(s). The budget is {unit} = {fmt(budget)}; after the last spend "
        f"{fmt(final)} is charged by basic composition"
    )
    if tight:
        desc += f", {fmt(tight[-1][1])} by the tightest analysis ({tight_name})"
    desc += ". The table below lists every spend and the running total."
    parts = [
        _svg_open(chart_id, height, f"Budget spent after each spend ({unit})"),
        f'<desc id="{esc(chart_id)}-desc">{esc(desc)}</desc>',
    ]
    for t in nice_ticks(0.0, y_max):
        y = y_of(t)
        parts.append(
            f'<line class="grid" x1="{left}" y1="{y:.1f}" x2="{WIDTH - right}" y2="{y:.1f}"/>'
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{esc(_tick(t))}</text>'
        )
    step = max(1, math.ceil(n / 10))
    for i in range(0, n + 1, step):
        parts.append(
            f'<text x="{x_of(i):.1f}" y="{top + plot_h + 16}" text-anchor="middle">{i}</text>'
        )
    parts.append(
        f'<text x="{left + plot_w / 2:.1f}" y="{top + plot_h + 34}" text-anchor="middle">'
        "spends, oldest first</text>"
        f'<text x="14" y="{top + plot_h / 2:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 14 {top + plot_h / 2:.1f})">{esc(unit)}</text>'
        f'<line class="axis" x1="{left}" y1="{top + plot_h}" x2="{WIDTH - right}" '
        f'y2="{top + plot_h}"/>'
        f'<line class="axis" x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}"/>'
    )
    yb = y_of(budget)
    parts.append(
        f'<g class="mark"><title>budget: {esc(fmt(budget))}</title>'
        f'<line class="budget" x1="{left}" y1="{yb:.1f}" x2="{WIDTH - right}" y2="{yb:.1f}"/>'
        "</g>"
    )
    points = [f"{x_of(0):.1f},{y_of(0):.1f}"]
    prev = 0.0
    for i, b in enumerate(basic, start=1):
        points.append(f"{x_of(i - 1):.1f},{y_of(prev):.1f}")
        points.append(f"{x_of(i - 1):.1f},{y_of(b):.1f}")
        points.append(f"{x_of(i):.1f},{y_of(b):.1f}")
        prev = b
    parts.append(
        f'<g class="mark"><title>charged by basic composition: {esc(fmt(final))}</title>'
        f'<polyline class="basic" points="{" ".join(points)}"/></g>'
    )
    if tight:
        pts = [f"{x_of(0):.1f},{y_of(0):.1f}"] + [
            f"{x_of(k):.1f},{y_of(e):.1f}" for k, e in tight if math.isfinite(e)
        ]
        parts.append(
            f'<g class="mark"><title>{esc(tight_name)}: {esc(fmt(tight[-1][1]))}</title>'
            f'<polyline class="tight" points="{" ".join(pts)}"/></g>'
        )
    legend_y = height - 10
    parts.append(
        f'<line class="basic" x1="{left}" y1="{legend_y - 4}" x2="{left + 24}" '
        f'y2="{legend_y - 4}"/><text x="{left + 30}" y="{legend_y}">charged (basic)</text>'
        f'<line class="budget" x1="{left + 150}" y1="{legend_y - 4}" x2="{left + 174}" '
        f'y2="{legend_y - 4}"/><text x="{left + 180}" y="{legend_y}">budget</text>'
    )
    if tight:
        parts.append(
            f'<line class="tight" x1="{left + 250}" y1="{legend_y - 4}" x2="{left + 274}" '
            f'y2="{legend_y - 4}"/><text x="{left + 280}" y="{legend_y}">tightest analysis '
            f"({esc(tight_name)})</text>"
        )
    parts.append("</svg>")
    return "".join(parts), WIDTH, height


def time_tag(iso: str, cls: str = "") -> str:
    try:
        when = datetime.fromisoformat(iso)
        shown = when.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    except ValueError:
        shown = iso
    attr = f' class="{cls}"' if cls else ""
    return f'<time{attr} datetime="{esc(iso)}">{esc(shown)}</time>'


def table(
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


def banner(text: str) -> str:
    return (
        '<div class="banner warning" role="note" aria-label="Warning">'
        f"<strong>Warning:</strong> {text}</div>"
    )
