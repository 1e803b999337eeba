"""A real browser reads the release report: headless Chromium (Debian's ``chromium``) driven
by Playwright with ``executable_path``; no browser is ever downloaded.

The report of a Session with three releases (private keys with groups left out by key
selection, public keys, and a seeded one) is opened from its file. The checks: no console
error and no request outside the file; every released number on the page (table cells and
chart marks) is the release's value, exactly; the seeded release carries its warning; every
chart is drawn, non-empty, at its stated size; headings, tables and charts have what a
screen reader needs; the print stylesheet keeps tables whole; the page reads without
JavaScript. A screenshot of each section goes to docs/_screenshots/report/ (git-ignored).

Without Playwright or Chromium the tests skip with the reason (``DPKIT_DOCS_BROWSER=1``, as
``make docs-test`` sets, makes that a failure).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import dpkit as dp
from dpkit.render._html import exact, fmt

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "docs" / "_screenshots" / "report"
SECTIONS = ("summary", "releases", "unprotected", "audit", "reproducibility")


def _people() -> pl.DataFrame:
    """1,800 people in six towns (300 each, far above the key threshold of about 113, whose
    noise has a standard deviation of about 22) with up to three rows each, and two people
    alone in their towns (left out by key selection)."""
    towns = ["Ash", "Birch", "Cedar", "Dale", "Elm", "Fir"]
    pid, town, age, hours = [], [], [], []
    for i in range(1800):
        for j in range(1 + i % 3):
            pid.append(i)
            town.append(towns[i % 6])
            age.append(float(18 + (13 * i + 7 * j) % 70))
            hours.append(float(10 + (11 * i) % 60))
    for k, name in enumerate(("Rare-1", "Rare-2")):
        pid.append(1000 + k)
        town.append(name)
        age.append(50.0)
        hours.append(40.0)
    return pl.DataFrame({"pid": pid, "town": town, "age": age, "hours": hours})


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Any], dp.Session]:
    folder = tmp_path_factory.mktemp("report")
    acct = dp.Accountant(dp.ApproxDP(2.0, 1e-5), ledger=folder / "budget.sqlite")
    s = dp.Session(_people(), privacy_unit="pid", max_rows_per_unit=2, accountant=acct)
    private = (
        s.query()
        .group_by("town", pre_threshold=1)
        .agg(dp.count(), dp.mean("age", bounds=(0, 100)))
        .measure(epsilon=0.5, delta=1e-6, label="people and mean age by town")
    )
    public = s.sql(
        "SELECT town, COUNT(*) AS n, AVG(hours) AS h FROM data GROUP BY town",
        epsilon=0.5,
        keys={"town": ["Ash", "Birch", "Cedar", "Nowhere"]},
        bounds={"hours": (0, 100)},
        measure=True,
    )
    seeded = (
        s.query()
        .agg(dp.quantile("age", [0.25, 0.5, 0.75], bounds=(0, 100)))
        .measure(epsilon=0.25, rng=2024, label="age quartiles (seeded)")
    )
    assert "Rare-1" not in private.frame["town"].to_list()  # key selection left it out
    path = s.report(folder / "report.html")
    return path, [private, public, seeded], s


@pytest.fixture(scope="module")
def browser(chromium: Any) -> Any:
    return chromium


class Visit:
    """One load of the report file: console errors and every request that is not the file."""

    def __init__(self, browser: Any, path: Path, **context: Any) -> None:
        self.errors: list[str] = []
        self.outside: list[str] = []
        self.url = path.resolve().as_uri()
        self.context = browser.new_context(viewport={"width": 1280, "height": 900}, **context)
        self.page = self.context.new_page()
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

        def route(r: Any) -> None:
            if r.request.url == self.url:
                r.continue_()
            else:
                self.outside.append(r.request.url)
                r.abort()

        self.page.route("**/*", route)
        self.page.goto(self.url, wait_until="load")

    def close(self) -> None:
        self.context.close()


@pytest.fixture(scope="module")
def visit(browser: Any, made: tuple[Path, list[Any], dp.Session]) -> Iterator[Visit]:
    v = Visit(browser, made[0])
    yield v
    v.close()


def test_no_console_error_and_no_request_outside_the_file(visit: Visit) -> None:
    visit.page.wait_for_timeout(200)  # anything the page would fetch late
    assert visit.outside == [], f"requests outside the file: {visit.outside}"
    assert visit.errors == [], f"console errors: {visit.errors}"
    assert visit.page.title() == "Release report"


def _rows(frame: Any) -> list[list[Any]]:
    out = frame if isinstance(frame, pl.DataFrame) else pl.from_pandas(frame)
    return [list(r) for r in out.iter_rows()]


def test_every_released_number_is_the_release_value(
    visit: Visit, made: tuple[Path, list[Any], dp.Session]
) -> None:
    _, releases, _ = made
    page = visit.page
    for rel in releases:
        spend = rel.record["spend"]
        article = page.locator(f"article#release-{spend}")
        cells = article.locator("table.released tbody tr").evaluate_all(
            "rows => rows.map(r => Array.from(r.querySelectorAll('span.v'))"
            ".map(s => [s.dataset.column, s.textContent]))"
        )
        columns = list(rel.frame.columns)
        labels = [c for c in columns if not any(f"{c}_{e}" in columns for e in ("low", "high"))]
        labels = [c for c in labels if not c.endswith(("_low", "_high"))]
        order = labels + [c for c in columns if c not in labels]
        expected = [[[c, exact(row[columns.index(c)])] for c in order] for row in _rows(rel.frame)]
        assert cells == expected, spend
        assert len(cells) == len(rel.frame) > 0
        # each chart mark's title: the group, the value and its interval, exactly
        stats = [c for c in columns if f"{c}_low" in columns]
        titles = article.locator("figure.values").evaluate_all(
            "figs => figs.map(f => Array.from(f.querySelectorAll('g.mark > title'))"
            ".map(t => t.textContent))"
        )
        assert len(titles) == len(stats)
        for stat, got in zip(stats, titles, strict=True):
            want = []
            for row in _rows(rel.frame):
                label = " · ".join(exact(row[columns.index(c)]) for c in labels) or "all rows"
                v, lo, hi = (row[columns.index(c)] for c in (stat, f"{stat}_low", f"{stat}_high"))
                want.append(f"{label}: {exact(v)} ({exact(lo)} to {exact(hi)})")
            assert got == want, stat
    # the budget's figures are the accountant's
    figures = page.locator("ul.figures li").evaluate_all(
        "lis => Object.fromEntries(lis.map(li => [li.querySelector('.label').textContent, "
        "li.querySelector('.value').textContent]))"
    )
    spent = made[2].accountant.spent
    assert figures["Spent, as charged"] == f"ε = {fmt(spent.epsilon, 6)}, δ = {fmt(spent.delta)}"
    assert figures["Releases in this report"] == "3"


def test_the_seeded_release_carries_the_warning(
    visit: Visit, made: tuple[Path, list[Any], dp.Session]
) -> None:
    _, (private, public, seeded), _ = made
    page = visit.page
    for rel, warned in ((private, False), (public, False), (seeded, True)):
        banner = page.locator(f"article#release-{rel.record['spend']} .banner.warning")
        assert banner.count() == int(warned)
        if warned:
            assert banner.is_visible() and "not private" in banner.inner_text()
    top = page.locator("header .banner.warning")
    assert top.is_visible() and "1 release(s)" in top.inner_text()


def test_charts_are_drawn_at_their_size_and_not_empty(visit: Visit) -> None:
    from io import BytesIO

    image_module = pytest.importorskip("PIL.Image", reason="reading the screenshots needs Pillow")
    page = visit.page
    figures = page.locator("figure")
    assert figures.count() == 1 + 2 + 2 + 3  # the budget; two, two and three statistics
    for i in range(figures.count()):
        fig = figures.nth(i)
        svg = fig.locator("svg.chart")
        box = svg.bounding_box()
        assert box is not None
        assert (round(box["width"]), round(box["height"])) == (
            int(fig.get_attribute("data-width") or 0),
            int(fig.get_attribute("data-height") or 0),
        )
        marks = fig.get_attribute("data-marks")
        if marks is not None:  # a value chart: one dot per released row, all drawn
            assert int(marks) > 0 and svg.locator("circle.dot").count() == int(marks)
        else:
            assert svg.locator("polyline.basic").count() == 1
        svg.scroll_into_view_if_needed()
        image = image_module.open(BytesIO(svg.screenshot())).convert("RGB")
        assert image.size[0] >= 600
        colours = image.getcolors(maxcolors=1 << 16) or []
        inked = sum(n for n, c in colours if sum(c) < 600)  # not white or near-white
        assert inked > 200, f"chart {i} looks empty"


def test_screen_readers_get_headings_tables_and_chart_names(visit: Visit) -> None:
    page = visit.page
    levels = page.locator("h1, h2, h3, h4").evaluate_all("hs => hs.map(h => Number(h.tagName[1]))")
    assert levels[0] == 1 and levels.count(1) == 1
    assert all(b - a <= 1 for a, b in itertools.pairwise(levels))  # no level skipped
    for name in ("1. Summary", "2. Releases", "3. What is not protected"):
        assert page.get_by_role("heading", name=name).count() == 1
    tables = page.locator("table")
    for i in range(tables.count()):
        t = tables.nth(i)
        assert t.locator("caption").count() == 1
        assert t.locator("thead th[scope=col]").count() == t.locator("thead th").count()
    charts = page.locator("svg.chart")
    for i in range(charts.count()):
        title = charts.nth(i).locator(":scope > title").text_content() or ""
        assert title
        # the accessible name and description a screen reader announces (the browser's)
        assert page.get_by_role("img", name=title, exact=True).count() >= 1
        desc = charts.nth(i).locator(":scope > desc").text_content() or ""
        described = charts.nth(i).evaluate(
            "s => document.getElementById(s.getAttribute('aria-describedby')).textContent"
        )
        assert desc.strip() and described == desc


def test_the_print_stylesheet_keeps_tables_whole(visit: Visit, tmp_path: Path) -> None:
    page = visit.page
    page.emulate_media(media="print")
    try:
        styles = page.locator("table").evaluate_all(
            "ts => ts.map(t => getComputedStyle(t).breakInside)"
        )
        assert styles and set(styles) == {"avoid"}
        rows = page.locator("tr").evaluate_all("rs => rs.map(r => getComputedStyle(r).breakInside)")
        assert set(rows) == {"avoid"}
        assert page.locator("nav").evaluate("n => getComputedStyle(n).display") == "none"
        pdf = page.pdf(format="A4")
        assert pdf[:5] == b"%PDF-" and len(pdf) > 10_000
    finally:
        page.emulate_media(media="screen")


def test_the_report_reads_without_javascript(
    browser: Any, made: tuple[Path, list[Any], Any]
) -> None:
    v = Visit(browser, made[0], java_script_enabled=False)
    try:
        assert v.page.locator("table.released").count() == 3
        assert v.page.locator("svg.chart circle.dot").count() > 0
        assert v.outside == [] and v.errors == []
    finally:
        v.close()


def test_a_screenshot_of_each_section(visit: Visit) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page = visit.page
    page.set_viewport_size({"width": 1100, "height": 900})
    saved = []
    targets = [(s, f"#{s}") for s in SECTIONS]
    targets += [
        (f"release-{i + 1}", f"article.release >> nth={i}")
        for i in range(page.locator("article.release").count())
    ]
    for name, selector in targets:
        element = page.locator(selector).first
        element.scroll_into_view_if_needed()
        path = SHOTS / f"report-{name}.png"
        element.screenshot(path=str(path))
        saved.append(path)
    for path in saved:
        data = path.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 2_000, path.name
