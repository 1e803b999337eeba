"""Every code cell of the documentation site runs, and shows what its snapshot recorded.

The site's pages (docs/**/*.md, MyST-NB notebooks) are executed by ``make docs`` in a
Jupyter kernel; here the same cells run in-process, page by page, and their text outputs
(printed text, the last line's value as Jupyter shows it, one ``[figure]`` per figure) are
compared with docs/_snapshots/, character for character. Cells tagged ``secure-random``
run too and are compared with every number masked. ``make docs-snapshot`` rewrites the
snapshots after an intended change (docs/_ext/pages.py says how it all works).
"""

from __future__ import annotations

import difflib
import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("dpkit_doc_pages", ROOT / "docs/_ext/pages.py")
assert _spec is not None and _spec.loader is not None
pages = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = pages  # dataclasses look their module up there
_spec.loader.exec_module(pages)

PAGES = pages.pages()


def _uses_spark(page: Path) -> bool:
    return "local_session" in page.read_text()


def test_the_site_has_its_tutorials() -> None:
    names = {p.stem for p in PAGES}
    for name in (
        "noise-mechanisms",
        "why-private",
        "sensitivity",
        "local-sensitivity",
        "inverse-sensitivity",
        "analyst-guide",
        "budgets",
        "auditing",
    ):
        assert name in names


def test_every_page_with_cells_has_a_snapshot_and_no_stale_one_is_kept() -> None:
    expected = {pages.snapshot_path(p) for p in PAGES}
    kept = set(pages.SNAPSHOTS.rglob("*.txt"))
    assert expected - kept == set(), "run `make docs-snapshot` for the new pages"
    assert kept - expected == set(), "snapshots of pages that no longer exist"


def test_masking_keeps_words_and_layout_but_not_numbers() -> None:
    assert pages.mask("count   1,234.5 (eps 0.25, delta 1e-06)\n") == "count # (eps #, delta #)\n"


@pytest.mark.slow
@pytest.mark.parametrize(
    "page",
    [pytest.param(p, marks=[pytest.mark.spark] if _uses_spark(p) else []) for p in PAGES],
    ids=lambda p: str(p.relative_to(ROOT / "docs")),
)
def test_page_runs_and_matches_its_snapshot(
    page: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if _uses_spark(page):
        request.getfixturevalue("spark")  # the run's shared local Spark, or a skip
    outputs: Any = pages.run_page(page, tmp_path)
    got = pages.render(page, outputs)
    path = pages.snapshot_path(page)
    want = path.read_text() if path.exists() else ""
    if got != want:
        diff = "".join(
            difflib.unified_diff(
                want.splitlines(keepends=True),
                got.splitlines(keepends=True),
                str(path.relative_to(ROOT)),
                "this run",
            )
        )
        pytest.fail(
            f"{page.name} shows other output than its snapshot "
            f"(`make docs-snapshot` if intended):\n{diff}"
        )
