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
    {"render"},
    {"noise"},
    {"mechanisms"},
    {"queries", "sensitivity"},
    {"frameworks", "statistics"},
    {"session", "compare"},
    {"audit"},
    {"plot", "report"},
    {"cli"},
]


#: Imports that climb a layer, as ``(importer, package)``: none. The Session hands its
#: release records to the renderer (``render/``), which sits below it and reads plain data.
UPWARD: set[tuple[str, str]] = set()
RENDERER = ("render/release_report.py", "render/_sections.py", "render/_html.py")


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


#: Imports of another package's private module that are allowed, as ``(importer, module)``:
#: none. Where another package needs an internal interface it gets a public name.
PRIVATE_IMPORTS_ALLOWED: dict[tuple[str, str], str] = {}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(node: ast.AST, importer: str, is_package: bool) -> list[tuple[str, list[str]]]:
    """``(module, names)`` for each dpkit module an import statement names: a module it
    imports, and for ``from package import name`` also ``package.name`` (it may be a module)."""
    if isinstance(node, ast.Import):
        return [(a.name, []) for a in node.names if a.name.startswith("dpkit")]
    if not isinstance(node, ast.ImportFrom):
        return []
    module = node.module or ""
    if node.level:  # relative: resolved against the importer's package
        base = importer.split(".")
        base = base if is_package else base[:-1]
        base = base[: len(base) - (node.level - 1)]
        module = ".".join([*base, module] if module else base)
    if not module.startswith("dpkit"):
        return []
    names = [a.name for a in node.names]
    submodules = [f"{module}.{n}" for n in names if _is_module(f"{module}.{n}")]
    return [(module, names)] + [(m, []) for m in submodules]


def _is_module(dotted: str) -> bool:
    path = SRC.parent / dotted.replace(".", "/")
    return path.is_dir() or path.with_suffix(".py").is_file()


def _owner(module: str) -> str | None:
    """The package that owns ``module`` if its path has a private part (``dpkit.a._b`` and
    ``dpkit.a._b.c`` belong to ``dpkit.a``), else ``None``."""
    parts = module.split(".")
    for i, part in enumerate(parts[1:], start=1):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:i])
    return None


def _inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_no_package_imports_another_packages_private_module() -> None:
    # a module whose name starts with an underscore is private to its package: the rule
    # docs/architecture.md states, kept for every import (function-level ones included)
    offenders = []
    for path in _modules():
        importer = _module_name(path)
        rel = str(path.relative_to(SRC))
        for node in ast.walk(ast.parse(path.read_text())):
            for module, names in _imported(node, importer, path.name == "__init__.py"):
                owner = _owner(module)
                if owner is not None and not _inside(importer, owner):
                    if (rel, module) not in PRIVATE_IMPORTS_ALLOWED:
                        offenders.append(f"{rel} imports {module}")
                    continue
                private = [n for n in names if n.startswith("_") and not n.startswith("__")]
                is_package = (SRC.parent / module.replace(".", "/")).is_dir()
                home = module if is_package else module.rpartition(".")[0]
                if private and not _inside(importer, home):
                    offenders.append(f"{rel} imports {', '.join(private)} from {module}")
    assert not offenders, "imports of another package's private code:\n" + "\n".join(offenders)


def test_the_allowed_private_imports_still_exist() -> None:
    # an entry that no longer matches an import is stale: the allowance must shrink with it
    found = set()
    for path in _modules():
        importer = _module_name(path)
        for node in ast.walk(ast.parse(path.read_text())):
            for module, _names in _imported(node, importer, path.name == "__init__.py"):
                found.add((str(path.relative_to(SRC)), module))
    assert set(PRIVATE_IMPORTS_ALLOWED) <= found


def test_no_private_import_is_allowed() -> None:
    # the allowance stays empty: a package that needs another's internals gets a public name
    assert not PRIVATE_IMPORTS_ALLOWED


ROOT = SRC.parents[1]
#: A file a docstring names: a document, a test file, or a path under one of the
#: repository's folders (example files of a user, ``data.csv`` or ``my_query.py``, are not).
_FILE = re.compile(r"(?<![\w./-])((?:[\w.-]+/)*[\w.-]+\.(?:md|py|toml|txt|ipynb))\b")
_TOP = ("docs/", "tests/", "src/", "benchmarks/", "examples/")


def _names_a_repository_file(name: str) -> bool:
    return name.endswith(".md") or name.startswith((*_TOP, "test_")) or "/" in name


def test_docstrings_name_only_files_in_the_repository() -> None:
    # a docstring pointing at a document that is not in the repository (a design note kept
    # elsewhere) or at a file that moved leaves the reader nowhere
    present = {p.name for p in ROOT.rglob("*") if p.is_file() and ".git" not in p.parts}
    offenders = []
    for path in _modules():
        tree = ast.parse(path.read_text())
        nodes = [n for n in ast.walk(tree) if isinstance(n, ast.Module | ast.ClassDef)]
        nodes += [
            n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
        ]
        for node in nodes:
            doc = ast.get_docstring(node, clean=False) or ""
            for name in (m.group(1) for m in _FILE.finditer(doc)):
                if not _names_a_repository_file(name):
                    continue
                bases = (ROOT, SRC, SRC.parent, path.parent)
                if any((base / name).exists() for base in bases):
                    continue
                if "/" not in name and name in present:
                    continue
                offenders.append(f"{path.relative_to(SRC)}: {name}")
    assert not offenders, "docstrings naming files not in the repository:\n" + "\n".join(
        sorted(set(offenders))
    )


def test_no_import_climbs_a_layer() -> None:
    # every edge goes down: an allowance for an upward import is a layer out of place
    assert not UPWARD


def test_release_report_renderer_stays_low() -> None:
    # the renderer the Session calls reads plain data: nothing above accounting
    allowed = {"accounting", "errors", "render"}
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
                if top not in allowed:
                    offenders.append(f"{rel} imports {name}")
    assert not offenders, "the renderer reaches above accounting:\n" + "\n".join(offenders)
