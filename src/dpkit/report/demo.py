"""The demo: a tour of dpkit on the bundled Adult data, section by section.

Each section is a module with ``TITLE`` and ``run(ctx)``; ``ctx`` carries the output folder,
the randomness (secure unless a seed was given), the loaded data and ``echo`` for printing.
Add a section by appending its module to ``SECTIONS``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["SECTIONS", "DemoContext", "run_demo", "section_names", "select_sections"]

SECTIONS: tuple[str, ...] = (
    "dpkit.report.demo_mechanisms",
    "dpkit.report.demo_sensitivity",
    "dpkit.report.demo_frameworks",
    "dpkit.report.demo_budget",
    "dpkit.report.demo_analyst",
)


@dataclass
class DemoContext:
    out: Path
    seed: int | None
    echo: Callable[[str], None] = print
    _cache: dict[str, Any] = field(default_factory=dict)

    def rng(self, offset: int) -> Any:
        """A source for one step: secure by default; seeded (not private) with --seed."""
        from dpkit.samplers import as_source

        return as_source(None if self.seed is None else self.seed + offset)

    @property
    def adult(self) -> Any:
        if "adult" not in self._cache:
            from dpkit.datasets import load_adult

            self._cache["adult"] = load_adult()
        return self._cache["adult"]


def section_names() -> list[str]:
    """The short names ``--only`` accepts: ``mechanisms``, ``sensitivity``, ..."""
    return [name.rsplit(".", 1)[-1].removeprefix("demo_") for name in SECTIONS]


def select_sections(only: Sequence[str] | None) -> list[str]:
    """The modules to run, in tour order: all, or those named by ``only``.

    A name is a section's short name (``sensitivity``) or its module name
    (``demo_sensitivity``), case-insensitive; an unknown name is an error listing the others.
    """
    if not only:
        return list(SECTIONS)
    short = section_names()
    wanted = set()
    for o in only:
        key = o.strip().lower().removeprefix("demo_")
        if key not in short:
            from dpkit.errors import ParameterError

            raise ParameterError(f"demo: no section {o!r}; the sections are {', '.join(short)}")
        wanted.add(key)
    return [name for name, s in zip(SECTIONS, short, strict=True) if s in wanted]


def run_demo(
    out: Path,
    *,
    seed: int | None = None,
    only: Sequence[str] | None = None,
    echo: Callable[[str], None] = print,
) -> DemoContext:
    """Run the tour: print every section (or those in ``only``) and write its figures.

    Parameters
    ----------
    out : Path
        Folder for the figures and the demo's own ledger (created if missing).
    seed : int, optional
        Reproducible (NOT private) noise; ``None`` means secure randomness.
    only : sequence of str, optional
        Section names to run (see :func:`select_sections`); default all.
    echo : callable
        Where each printed line goes (default ``print``).

    Returns
    -------
    DemoContext
        The context the sections ran with.

    Raises
    ------
    MissingDependencyError
        matplotlib is not installed (checked before anything is printed); the message names
        ``pip install 'dpkit[plot]'``.
    ParameterError
        An unknown section name.
    """
    from dpkit.plot import require_matplotlib

    chosen = select_sections(only)
    require_matplotlib("the demo")  # said before the first section, not after it
    out.mkdir(parents=True, exist_ok=True)
    ctx = DemoContext(out=out, seed=seed, echo=echo)
    mode = "secure randomness" if seed is None else f"seed {seed} (reproducible, NOT private)"
    echo(f"dpkit demo on the UCI Adult data ({len(ctx.adult):,} rows), noise from {mode}")
    for name in chosen:
        mod = importlib.import_module(name)
        echo("")
        echo(f"== {mod.TITLE} ==")
        mod.run(ctx)
    echo("")
    echo(f"figures written to {out.resolve()}")
    return ctx
