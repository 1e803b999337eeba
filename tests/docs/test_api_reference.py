"""The API reference covers every public name, each with a docstring summary.

The public names are those of ``dpkit.__all__`` and of the ``__all__`` of each public
package; docs/_ext/dpkit_api.py finds them and its directive documents them on the pages of
docs/api/ when ``make docs`` runs. This test needs no Sphinx: it checks that every public
module has its page and every name a summary, read as the site reads it.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

import dpkit

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("dpkit_doc_api", ROOT / "docs/_ext/dpkit_api.py")
assert _spec is not None and _spec.loader is not None
api = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = api  # dataclasses look their module up there
_spec.loader.exec_module(api)

MODULES = api.public_modules()
DOCUMENTED = {
    m.group(1)
    for page in (ROOT / "docs" / "api").glob("*.md")
    for m in re.finditer(r"^\.\. dpkit-api:: (\S+)$", page.read_text(), flags=re.M)
}


def test_public_modules_include_the_top_level_and_its_packages() -> None:
    for name in ("dpkit", "dpkit.statistics", "dpkit.session", "dpkit.audit", "dpkit.errors"):
        assert name in MODULES
    assert not [m for m in MODULES if "._" in m]


def test_every_public_module_has_an_api_page() -> None:
    assert sorted(set(MODULES) - DOCUMENTED) == []
    assert sorted(DOCUMENTED - set(MODULES)) == []


@pytest.mark.parametrize("module", MODULES)
def test_every_public_name_has_an_entry_with_a_summary(module: str) -> None:
    entries = api.entries(module, MODULES)
    assert [e.name for e in entries] == list(importlib.import_module(module).__all__)
    missing = [e.qualified for e in entries if not e.summary]
    assert missing == [], "add a docstring summary (or a `#:` comment above a constant)"


def test_every_top_level_name_points_to_a_documented_home() -> None:
    homes = {e.home for m in MODULES for e in api.entries(m, MODULES)}
    for entry in api.entries("dpkit", MODULES):
        module, _, _name = entry.home.rpartition(".")
        assert entry.home in homes and (entry.kind == "module" or module in MODULES), entry


def test_a_summary_run_into_a_section_heading_is_no_summary() -> None:
    assert api._first_line("Mean of it.\nParameters\n----------\nx : int\n") == ""
    assert api._first_line("Mean of it,\nwith a second line.\n\nParameters\n---\n") == (
        "Mean of it, with a second line."
    )


def test_a_constant_is_summarised_by_its_doc_comment() -> None:
    assert "Draws per input" in api.attribute_doc("dpkit.audit", "DEFAULT_MAX_SAMPLES")
    assert dpkit.compare.METHODS and api.attribute_doc("dpkit.compare", "METHODS")
