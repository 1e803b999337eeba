"""Guards on the layers of docs/architecture.md: randomness stays in samplers/, imports go down."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import dpkit

SRC = Path(dpkit.__file__).parent

# lower index = lower layer; a module may import only its own layer or lower ones
LAYERS = [
    {"samplers", "errors", "_validate", "_lattice", "datasets"},
    {"accounting"},
    {"mechanisms"},
    {"queries", "sensitivity"},
    {"frameworks"},
    {"statistics"},
    {"session", "compare"},
    {"audit"},
    {"plot", "report"},
    {"cli"},
]


#: The one upward edge: ``Session.report`` and ``QueryRelease.report`` hand their records to
#: the release report's renderer, importing it when called. The renderer reads plain data
#: and imports nothing above accounting (test_release_report_renderer_stays_low), so the
#: session layer never depends on the demo or the plots.
UPWARD = {
    ("session/session.py", "report"),
    ("session/result.py", "report"),
}
RENDERER = ("report/release_report.py", "report/_sections.py", "report/_html.py")


def _layer(name: str) -> int | None:
    for i, members in enumerate(LAYERS):
        if name in members:
            return i
    return None


def _modules() -> list[Path]:
    return sorted(p for p in SRC.rglob("*.py") if "__pycache__" not in p.parts)


def _top(path: Path) -> str:
    rel = path.relative_to(SRC).with_suffix("")
    return rel.parts[0]


def test_only_samplers_touch_raw_randomness() -> None:
    pattern = re.compile(r"np\.random\.|numpy\.random|\bimport random\b|os\.urandom|\bsecrets\b")
    offenders = []
    for path in _modules():
        if _top(path) == "samplers":
            continue
        for lineno, line in enumerate(path.read_text().splitlines(), start=1):
            code = line.split("#", 1)[0]
            if code.lstrip().startswith((">>>", "...")):
                continue  # doctest examples may make up example data, like tests do
            if pattern.search(code):
                offenders.append(f"{path.relative_to(SRC)}:{lineno}: {line.strip()}")
    assert not offenders, "raw randomness outside samplers/:\n" + "\n".join(offenders)


def test_imports_flow_downward() -> None:
    offenders = []
    for path in _modules():
        own = _layer(_top(path))
        if own is None:
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            targets: list[str] = []
            module = node.module if isinstance(node, ast.ImportFrom) else None
            if module and module.startswith("dpkit."):
                targets = [module.split(".")[1]]
            elif isinstance(node, ast.Import):
                targets = [a.name.split(".")[1] for a in node.names if a.name.startswith("dpkit.")]
            for t in targets:
                other = _layer(t)
                rel = path.relative_to(SRC).as_posix()
                if other is not None and other > own and (rel, t) not in UPWARD:
                    offenders.append(f"{path.relative_to(SRC)} imports dpkit.{t}")
    assert not offenders, "upward imports:\n" + "\n".join(offenders)


def test_release_report_renderer_stays_low() -> None:
    # what the session layer may import upward (UPWARD) must not lead back above it
    allowed = {"accounting", "errors", "report"}
    offenders = []
    for rel in RENDERER:
        tree = ast.parse((SRC / rel).read_text())
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("dpkit"):
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names if a.name.startswith("dpkit")]
            for name in names:
                parts = name.split(".")
                top = parts[1] if len(parts) > 1 else ""
                if top not in allowed or name.startswith("dpkit.report.demo"):
                    offenders.append(f"{rel} imports {name}")
    assert not offenders, "the renderer reaches above accounting:\n" + "\n".join(offenders)
