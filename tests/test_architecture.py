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
    {"accounting", "release"},
    {"noise"},
    {"mechanisms"},
    {"queries", "sensitivity"},
    {"frameworks", "statistics"},
    {"session", "compare"},
    {"audit"},
    {"plot", "report"},
    {"cli"},
]


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
                if other is not None and other > own:
                    offenders.append(f"{path.relative_to(SRC)} imports dpkit.{t}")
    assert not offenders, "upward imports:\n" + "\n".join(offenders)


#: Packages of one layer that stand side by side: neither imports the other.
SIBLINGS = [("frameworks", "statistics")]


def test_siblings_do_not_import_each_other() -> None:
    offenders = []
    for path in _modules():
        top = _top(path)
        for a, b in SIBLINGS:
            other = b if top == a else a if top == b else None
            if other is None:
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                names: list[str] = []
                if isinstance(node, ast.ImportFrom) and node.module:
                    names = [node.module]
                elif isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                if any(n == f"dpkit.{other}" or n.startswith(f"dpkit.{other}.") for n in names):
                    offenders.append(f"{path.relative_to(SRC)} imports dpkit.{other}")
    assert not offenders, "siblings importing each other:\n" + "\n".join(offenders)
