"""The documentation stays true: links resolve, nothing points outside the repository, and the
architecture page names every part of the package."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import dpkit

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "dpkit"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]

_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    return {_slug(m.group(1)) for m in re.finditer(r"^#+ (.+)$", text, flags=re.M)}


def _links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)  # code is not a link
    return [m.group(1) for m in _LINK.finditer(text)]


def test_pages_exist() -> None:
    assert ARCHITECTURE.exists()
    assert len(PAGES) >= 6  # README, the architecture page, four proof sketches


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page: Path) -> None:
    broken = []
    for target in _links(page):
        if re.match(r"[a-z]+:", target):  # https:, mailto: ... are not checked offline
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif not dest.resolve().is_relative_to(ROOT):
            broken.append(f"{target}: outside the repository")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(f"{target}: no heading #{anchor} in {dest.name}")
    assert not broken, f"{page.name}: " + "; ".join(broken)


def test_nothing_points_to_a_design_document_outside_the_repository() -> None:
    files = [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]
    files += [p for p in SRC.rglob("*") if p.is_file() and p.suffix in (".py", ".md", ".txt")]
    offenders = [str(p.relative_to(ROOT)) for p in files if "DESIGN.md" in p.read_text()]
    assert not offenders


def test_package_docstring_and_readme_point_to_the_architecture_page() -> None:
    assert dpkit.__doc__ is not None and "docs/architecture.md" in dpkit.__doc__
    assert "(docs/architecture.md)" in (ROOT / "README.md").read_text()


def test_architecture_page_names_every_top_level_part() -> None:
    # a new layer or top-level module lands with its row on the page
    text = ARCHITECTURE.read_text()
    parts = [p.name for p in SRC.iterdir() if p.is_dir() and (p / "__init__.py").exists()]
    parts += [p.name for p in SRC.glob("*.py") if p.name != "__init__.py"]
    missing = [name for name in parts if f"`{name}" not in text and f"{name}/" not in text]
    assert not missing, f"not on docs/architecture.md: {missing}"


def test_architecture_page_names_every_layer_of_the_guard() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("arch", ROOT / "tests" / "test_architecture.py")
    assert spec is not None and spec.loader is not None
    arch = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(arch)
    diagram = ARCHITECTURE.read_text().split("```")[1]  # the layer diagram
    for layer in arch.LAYERS:
        for member in layer:
            assert member in diagram, member
