"""A real browser opens the built site: headless Chromium (Debian's ``chromium``) driven by
Playwright, the site served on 127.0.0.1 from docs/_site.

``make docs-test`` runs this file after ``make docs`` (with ``DPKIT_DOCS_BROWSER=1``, under
which a missing site, Playwright or Chromium is a failure); elsewhere, as in ``make test``
with the development tools only, it skips with the reason. Playwright never downloads a
browser here: it launches ``/usr/bin/chromium`` (``apt-get install chromium``).
Screenshots go to docs/_screenshots/ (git-ignored).
"""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "docs" / "_site"
SHOTS = ROOT / "docs" / "_screenshots"
TUTORIAL = "tutorials/budgets.html"


@pytest.fixture(scope="module")
def site(skip_or_fail: Any) -> Iterator[str]:
    if not (SITE / "index.html").exists():
        skip_or_fail("no built site in docs/_site (make docs)")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=str(SITE))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def browser(site: str, chromium: Any) -> Any:
    return chromium  # after `site`: without a built site, that is the reason given


class Visit:
    """One page load: console errors, failed requests and requests outside the site."""

    def __init__(self, browser: Any, site: str, path: str) -> None:
        self.errors: list[str] = []
        self.outside: list[str] = []
        self.failed: list[str] = []
        self.page = browser.new_page(viewport={"width": 1280, "height": 900})
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("requestfailed", lambda r: self.failed.append(r.url))

        def route(r: Any) -> None:
            if r.request.url.startswith(site) or r.request.url.startswith("data:"):
                r.continue_()
            else:
                self.outside.append(r.request.url)
                r.abort()

        self.page.route("**/*", route)
        self.page.goto(site + path, wait_until="networkidle")

    def check_clean(self) -> None:
        assert self.outside == [], f"requests outside the site: {self.outside}"
        assert self.failed == [], f"failed requests: {self.failed}"
        assert self.errors == [], f"console errors: {self.errors}"

    def shot(self, name: str) -> Path:
        SHOTS.mkdir(exist_ok=True)
        path = SHOTS / name
        self.page.screenshot(path=str(path), full_page=False)
        return path


def _rendered_math(page: Any) -> int:
    page.wait_for_function("() => document.querySelectorAll('mjx-container').length > 0")
    return int(page.evaluate("document.querySelectorAll('mjx-container').length"))


def _figures_loaded(page: Any) -> int:
    return int(
        page.evaluate(
            "Array.from(document.querySelectorAll('div.cell_output img'))"
            ".filter(i => i.complete && i.naturalWidth > 100).length"
        )
    )


def test_home_page_renders_its_math_and_output(browser: Any, site: str) -> None:
    visit = Visit(browser, site, "index.html")
    assert "differential privacy" in visit.page.title().lower() or "dpkit" in visit.page.title()
    assert _rendered_math(visit.page) >= 2
    assert "released" in visit.page.inner_text("div.cell_output")
    visit.shot("home.png")
    visit.check_clean()


def test_a_tutorial_shows_its_figures_and_math(browser: Any, site: str) -> None:
    visit = Visit(browser, site, TUTORIAL)
    assert _rendered_math(visit.page) >= 10
    assert _figures_loaded(visit.page) >= 2
    # MathJax renders a formula it cannot parse as an <mjx-merror> element
    assert visit.page.locator("mjx-merror").count() == 0
    visit.shot("tutorial-budgets.png")
    visit.page.locator("div.cell_output img").first.scroll_into_view_if_needed()
    visit.shot("tutorial-budgets-figure.png")
    visit.check_clean()


def test_api_reference_documents_the_public_names(browser: Any, site: str) -> None:
    visit = Visit(browser, site, "api/statistics.html")
    for name in ("dpkit.statistics.quantiles", "dpkit.statistics.private_bounds"):
        assert visit.page.locator(f"[id='{name}']").count() == 1, name
    assert "Privacy" in visit.page.inner_text("article")
    visit.shot("api-statistics.png")
    visit.check_clean()
    top = Visit(browser, site, "api/dpkit.html")
    assert top.page.locator("[id='dpkit.Session']").count() == 1
    top.check_clean()


def test_search_finds_smooth_sensitivity(browser: Any, site: str) -> None:
    visit = Visit(browser, site, "search.html?q=smooth+sensitivity")
    visit.page.wait_for_selector("ul.search li", timeout=30_000)
    hits = visit.page.locator("ul.search li").all_inner_texts()
    assert hits and any("smooth" in h.lower() for h in hits), hits
    visit.shot("search-smooth-sensitivity.png")
    visit.check_clean()
