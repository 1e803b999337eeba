"""Run the site's pages outside Jupyter and keep their outputs as text snapshots.

The site's pages are MyST-NB markdown notebooks (``docs/**/*.md`` with a ``{code-cell}``):
``make docs`` executes them in a Jupyter kernel and shows their outputs. The tests run the
same cells in-process, in order, in one namespace per page (tests/docs/test_pages.py), and
compare what each cell shows with a snapshot kept beside the page in ``docs/_snapshots/``:
its printed text, the value of its last line as Jupyter shows it (IPython's pretty printer),
and one ``[figure]`` line per matplotlib figure. Seeded output is compared character for
character. A cell tagged ``secure-random`` draws from secure randomness on purpose (its
output differs on every run): it runs too, and its snapshot keeps the text with every
number replaced by ``#``, so the words, the columns and the rows are still compared.

``python docs/_ext/pages.py [PAGE ...]`` rewrites the snapshots (``make docs-snapshot``):
review the diff before committing it, a changed number is a changed release.

This module imports neither Sphinx nor Jupyter.
"""

from __future__ import annotations

import ast
import contextlib
import io
import os
import re
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parents[1]
SNAPSHOTS = DOCS / "_snapshots"
#: Folders of ``docs/`` that hold no page of the site.
SKIP = ("_build", "_site", "_snapshots", "_screenshots", "_ext", "_static", "jupyter_execute")
#: The tag of a cell whose output depends on secure randomness.
SECURE = "secure-random"

_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
_OPTION = re.compile(r"^:(\w[\w-]*):\s*(.*)$")
_NUMBER = re.compile(r"[-+]?(?:\d[\d,_]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_ADDRESS = re.compile(r"\bat 0x[0-9a-f]+")


@dataclass
class Cell:
    """One code cell of a page: its source, its options (``:tags: [...]``) and its line."""

    source: str
    line: int
    options: dict[str, str] = field(default_factory=dict)

    @property
    def tags(self) -> list[str]:
        raw = self.options.get("tags", "").strip().strip("[]")
        return [t.strip().strip("'\"") for t in raw.split(",") if t.strip()]


def pages() -> list[Path]:
    """Every page of the site with at least one code cell, in a fixed order."""
    found = []
    for path in sorted(DOCS.rglob("*.md")):
        rel = path.relative_to(DOCS)
        if rel.parts[0] in SKIP:
            continue
        if _CELL.search(path.read_text()):
            found.append(path)
    return found


def cells(page: Path) -> list[Cell]:
    """The code cells of a MyST-NB page, in order."""
    text = page.read_text()
    out = []
    for m in _CELL.finditer(text):
        lines = m.group(1).splitlines()
        options: dict[str, str] = {}
        while lines and (opt := _OPTION.match(lines[0])):
            options[opt.group(1)] = opt.group(2)
            lines.pop(0)
        out.append(Cell("\n".join(lines) + "\n", text.count("\n", 0, m.start()) + 2, options))
    return out


def mask(text: str) -> str:
    """``text`` with every number written ``#`` and runs of spaces made one space."""
    return re.sub(r"[ \t]+", " ", _NUMBER.sub("#", text))


def _pretty(value: Any) -> str:
    """The value as Jupyter's ``text/plain`` shows it."""
    from IPython.lib.pretty import pretty

    return str(pretty(value, max_width=79, max_seq_length=1000))


@contextlib.contextmanager
def _page_environment(workdir: Path) -> Iterator[list[str]]:
    """Agg figures, ``plt.show`` recorded instead of shown, the page run in ``workdir``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown: list[str] = []

    def show(*args: Any, **kwargs: Any) -> None:
        for _ in plt.get_fignums():
            shown.append("[figure]")
        plt.close("all")

    old_show, old_cwd = plt.show, Path.cwd()
    # no terminal width: the CLI lays its tables out by $COLUMNS, which pytest-xdist's
    # workers set to 80 and a shell may export; the site's build unsets it too (conf.py)
    old_columns = os.environ.pop("COLUMNS", None)
    plt.show = show
    os.chdir(workdir)
    try:
        yield shown
    finally:
        plt.show = old_show
        os.chdir(old_cwd)
        plt.close("all")
        if old_columns is not None:
            os.environ["COLUMNS"] = old_columns


def run_page(page: Path, workdir: Path | None = None) -> list[str]:
    """Run every cell of ``page`` in order; return each cell's output as text.

    Raises whatever a cell raises, with the page and line in the traceback.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    namespace: dict[str, Any] = {"__name__": "__main__"}
    outputs = []
    with contextlib.ExitStack() as stack:
        if workdir is None:
            workdir = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        shown = stack.enter_context(_page_environment(workdir))
        for cell in cells(page):
            buffer = io.StringIO()
            tree = ast.parse(cell.source, filename=str(page))
            ast.increment_lineno(tree, cell.line - 1)
            last = None
            shows_last = not cell.source.rstrip().endswith(";")
            if tree.body and isinstance(tree.body[-1], ast.Expr) and shows_last:
                last = ast.Expression(tree.body.pop().value)
            with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
                exec(compile(tree, str(page), "exec"), namespace)
                value = None if last is None else eval(compile(last, str(page), "eval"), namespace)
                shown_here = list(shown)
                shown.clear()
                if value is not None and not _is_figure(value):
                    print(_pretty(value))
                open_figures = plt.get_fignums()
                shown_here += ["[figure]"] * len(open_figures)
                if _is_figure(value) and value.number not in open_figures:
                    shown_here.append("[figure]")
                plt.close("all")
                for line in shown_here:
                    print(line)
            text = buffer.getvalue()
            if _ADDRESS.search(text):
                raise AssertionError(
                    f"{page.name}, cell at line {cell.line}: its output shows a memory address "
                    "(it changes on every run): end the line with ';' or print what matters"
                )
            outputs.append(mask(text) if SECURE in cell.tags else text)
    return outputs


def _is_figure(value: Any) -> bool:
    from matplotlib.figure import Figure

    return isinstance(value, Figure)


def snapshot_path(page: Path) -> Path:
    """Where the snapshot of ``page`` is kept."""
    return SNAPSHOTS / page.relative_to(DOCS).with_suffix(".txt")


def render(page: Path, outputs: list[str]) -> str:
    """The snapshot text: one header per cell (its number and tags), then its output."""
    parts = []
    for number, (cell, out) in enumerate(zip(cells(page), outputs, strict=True), start=1):
        tag = f" [{SECURE}: numbers masked]" if SECURE in cell.tags else ""
        parts.append(f"### cell {number}{tag}\n{out}")
    return "".join(p if p.endswith("\n") else p + "\n" for p in parts)


def main(argv: list[str]) -> int:
    chosen = [Path(a).resolve() for a in argv] or pages()
    for page in chosen:
        path = snapshot_path(page)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render(page, run_page(page)))
        print(f"wrote {path.relative_to(DOCS.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
