"""dpkit's public names and the Sphinx directive that documents them.

The public API is every name in ``dpkit.__all__`` and in the ``__all__`` of each public
package (a package of ``dpkit`` whose dotted name has no part starting with ``_`` and that
declares ``__all__``), plus the modules ``dpkit.__all__`` names. :func:`public_modules` finds
them by walking the package, :func:`entries` lists each name with its kind and docstring
summary, and the ``dpkit-api`` directive (``.. dpkit-api:: dpkit.statistics`` in an
``{eval-rst}`` block of a page of ``docs/api/``) documents every name of one module with
autodoc. A name exported by several
public modules is documented in full where it is most specific (``dpkit.mechanisms.Laplace``)
and as a short entry pointing there elsewhere (``dpkit.Laplace``).

tests/docs/test_api_reference.py checks that every public module has a page and every public
name a summary; the directive itself warns (an error under ``make docs``) about a name
without one. This module imports Sphinx only inside :func:`setup`.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Public modules documented beside the packages: the README and the tutorials use them.
EXTRA_MODULES = ("dpkit.audit.neighbours",)


@dataclass(frozen=True)
class Entry:
    """One public name: where it is exported, what it is, its summary, its full home."""

    module: str
    name: str
    kind: str  # module, class, exception, function, data
    summary: str
    home: str  # the dotted name documented in full

    @property
    def qualified(self) -> str:
        return f"{self.module}.{self.name}"


def public_modules() -> list[str]:
    """``dpkit``, its public packages with ``__all__``, and the modules ``dpkit.__all__`` names."""
    import dpkit

    found = ["dpkit"]
    for info in pkgutil.walk_packages(dpkit.__path__, "dpkit."):
        if any(part.startswith("_") for part in info.name.split(".")) or not info.ispkg:
            continue
        module = importlib.import_module(info.name)
        if hasattr(module, "__all__"):
            found.append(info.name)
    for name in dpkit.__all__:
        obj = getattr(dpkit, name)
        if isinstance(obj, types.ModuleType) and obj.__name__ not in found:
            found.append(obj.__name__)
    found += [m for m in EXTRA_MODULES if m not in found]
    return sorted(found, key=lambda m: (m != "dpkit", m))


def _kind(obj: Any) -> str:
    if isinstance(obj, types.ModuleType):
        return "module"
    if inspect.isclass(obj):
        return "exception" if issubclass(obj, BaseException) else "class"
    if callable(obj) and not _is_alias(obj):
        return "function"
    return "data"


def _is_alias(obj: Any) -> bool:
    """A typing alias (``PureDP | ApproxDP``) is documented as data."""
    return type(obj).__module__ in ("typing", "types") and not inspect.isfunction(obj)


def _first_line(doc: str | None) -> str:
    """The summary: the docstring's first paragraph, or "" when a section heading runs into
    it (a summary without the blank line after it, which numpydoc and napoleon misread)."""
    lines = [line.strip() for line in inspect.cleandoc(doc or "").splitlines()]
    summary = []
    for line in lines:
        if not line:
            break
        if set(line) == {"-"} and len(line) >= 3:
            return ""
        summary.append(line)
    return " ".join(summary)


def attribute_doc(module_name: str, name: str) -> str:
    """The ``#:`` comment above (or the string below) ``name = ...`` where it is defined.

    Searches ``module_name`` and, for a package, its modules (private ones included) for the
    module-level assignment of the very object ``module_name`` exports under ``name``.
    """
    module = importlib.import_module(module_name)
    obj = getattr(module, name)
    candidates = [module]
    if hasattr(module, "__path__"):
        for info in pkgutil.walk_packages(module.__path__, module_name + "."):
            candidates.append(importlib.import_module(info.name))
    for candidate in candidates:
        if candidate.__dict__.get(name, _MISSING) is not obj or not candidate.__file__:
            continue
        doc = _assignment_doc(Path(candidate.__file__), name)
        if doc:
            return doc
    return ""


_MISSING = object()


def _assignment_doc(path: Path, name: str) -> str:
    source = path.read_text()
    lines = source.splitlines()
    tree = ast.parse(source)
    for i, node in enumerate(tree.body):
        targets = []
        if isinstance(node, ast.Assign):
            targets = [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            targets = [node.target.id]
        if name not in targets:
            continue
        comment = []
        row = node.lineno - 2
        while row >= 0 and lines[row].lstrip().startswith("#:"):
            comment.insert(0, lines[row].lstrip()[2:].strip())
            row -= 1
        if comment:
            return " ".join(comment)
        following = tree.body[i + 1] if i + 1 < len(tree.body) else None
        if (
            isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            return " ".join(following.value.value.split())
    return ""


def _depth(module: str) -> int:
    return module.count(".")


def entries(module_name: str, modules: list[str] | None = None) -> list[Entry]:
    """Every name in ``module_name.__all__`` with its kind, summary and home."""
    modules = public_modules() if modules is None else modules
    module = importlib.import_module(module_name)
    out = []
    for name in module.__all__:
        obj = getattr(module, name)
        kind = _kind(obj)
        if kind == "module":
            summary, home = _first_line(obj.__doc__), obj.__name__
        elif kind == "data":
            summary, home = attribute_doc(module_name, name), f"{module_name}.{name}"
        else:
            summary = _first_line(obj.__doc__)
            home = f"{module_name}.{name}"
            for other in sorted(modules, key=_depth, reverse=True):
                mod = importlib.import_module(other)
                if name in getattr(mod, "__all__", ()) and getattr(mod, name) is obj:
                    home = f"{other}.{name}"
                    break
        out.append(Entry(module_name, name, kind, summary, home))
    return out


# -- Sphinx -------------------------------------------------------------------------------

_AUTODOC = {
    "class": ("autoclass", ["   :members:", "   :show-inheritance:"]),
    "exception": ("autoexception", ["   :show-inheritance:"]),
    "function": ("autofunction", []),
}
_SHORT = {"class": "class", "exception": "exception", "function": "function", "data": "data"}


def _rst(module_name: str, modules: list[str]) -> tuple[list[str], list[str]]:
    """The reStructuredText documenting one module, and the names without a summary."""
    lines = [f".. automodule:: {module_name}", ""]
    missing = []
    for entry in entries(module_name, modules):
        if not entry.summary:
            missing.append(entry.qualified)
        if entry.kind == "module":
            if entry.home == entry.qualified:
                continue
            lines += [
                f".. py:data:: {entry.name}",
                f"   :module: {module_name}",
                "   :type: module",
                "",
                f"   {entry.summary} The module :mod:`{entry.home}`.",
                "",
            ]
        elif entry.home != entry.qualified:
            lines += [
                f".. py:{_SHORT[entry.kind]}:: {entry.name}",
                f"   :module: {module_name}",
                "",
                f"   {entry.summary} The same object as :py:obj:`{entry.home}`.",
                "",
            ]
        elif entry.kind == "data":
            value = repr(getattr(importlib.import_module(module_name), entry.name))
            value = value if len(value) <= 60 else value[:57] + "..."
            lines += [
                f".. py:data:: {entry.name}",
                f"   :module: {module_name}",
                f"   :value: {value}",
                "",
                f"   {entry.summary}",
                "",
            ]
        else:
            directive, options = _AUTODOC[entry.kind]
            lines += [f".. {directive}:: {entry.qualified}", *options, ""]
    return lines, missing


def setup(app: Any) -> dict[str, Any]:
    from docutils import nodes
    from docutils.statemachine import StringList
    from sphinx.util import logging
    from sphinx.util.docutils import SphinxDirective
    from sphinx.util.nodes import nested_parse_with_titles

    logger = logging.getLogger(__name__)
    modules = public_modules()

    class DpkitApi(SphinxDirective):
        """``.. dpkit-api:: dpkit.statistics``: every public name of one module."""

        required_arguments = 1

        def run(self) -> list[Any]:
            module_name = self.arguments[0]
            if module_name not in modules:
                logger.warning(
                    "dpkit-api: %s is not a public module (%s)",
                    module_name,
                    ", ".join(modules),
                    location=self.get_location(),
                )
            lines, missing = _rst(module_name, modules)
            for name in missing:
                logger.warning(
                    "dpkit-api: %s has no docstring summary", name, location=self.get_location()
                )
            self.env.note_dependency(__file__)
            container = nodes.container()
            nested_parse_with_titles(
                self.state, StringList(lines, source=f"<dpkit-api {module_name}>"), container
            )
            return list(container.children)

    documented: set[str] = set()

    def collect(app: Any, docname: str, source: list[str]) -> None:
        import re

        for m in re.finditer(r"(?:\{dpkit-api\}|\.\. dpkit-api::)\s+(\S+)", source[0]):
            documented.add(m.group(1))

    def check(app: Any, env: Any) -> None:
        for module_name in modules:
            if module_name not in documented:
                logger.warning("dpkit-api: the public module %s has no API page", module_name)

    app.add_directive("dpkit-api", DpkitApi)
    app.connect("source-read", collect)
    app.connect("env-check-consistency", check)
    return {"version": "1", "parallel_read_safe": False, "parallel_write_safe": True}
