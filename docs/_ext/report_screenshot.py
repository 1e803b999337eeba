"""The README's picture of the release report: headless Chromium photographs a report's page.

``make report-screenshot`` runs the demo's analyst section (which writes its release report,
``demo-output/analyst-report.html``) and then this script, which opens the report in
Debian's ``chromium`` through Playwright (``executable_path``: no browser is downloaded)
and saves the top of the page, the summary with its budget chart, as
``docs/_static/report-screenshot.png``::

    python docs/_ext/report_screenshot.py demo-output/analyst-report.html \\
        docs/_static/report-screenshot.png

Nothing is fetched: every request other than the report file is refused.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

CHROMIUM = os.environ.get("DPKIT_CHROMIUM", "/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]
#: the part of the page photographed: the header, the contents and the summary's top
WIDTH, HEIGHT = 1100, 1500


def screenshot(report: Path, out: Path) -> None:
    """Save the top ``WIDTH`` x ``HEIGHT`` CSS pixels of ``report`` as a PNG at ``out``."""
    from playwright.sync_api import sync_playwright

    url = report.resolve().as_uri()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
            page.route("**/*", lambda r: r.continue_() if r.request.url == url else r.abort())
            page.goto(url, wait_until="load")
            page.screenshot(path=str(out), full_page=False)
        finally:
            browser.close()


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: report_screenshot.py REPORT.html OUT.png")
    screenshot(Path(sys.argv[1]), Path(sys.argv[2]))
    print(f"screenshot written to {sys.argv[2]}")
