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

__all__ = ["SECTIONS", "DemoContext", "run_demo"]

SECTIONS: tuple[str, ...] = (
    "dpkit.report.demo_mechanisms",
    "dpkit.report.demo_sensitivity",
    "dpkit.report.demo_frameworks",
    "dpkit.report.demo_budget",
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


def run_demo(
    out: Path,
    *,
    seed: int | None = None,
    only: Sequence[str] | None = None,
    echo: Callable[[str], None] = print,
) -> DemoContext:
    out.mkdir(parents=True, exist_ok=True)
    ctx = DemoContext(out=out, seed=seed, echo=echo)
    mode = "secure randomness" if seed is None else f"seed {seed} (reproducible, NOT private)"
    echo(f"dpkit demo on the UCI Adult data ({len(ctx.adult):,} rows), noise from {mode}")
    for name in SECTIONS:
        mod = importlib.import_module(name)
        if only and not any(
            o.lower() in mod.TITLE.lower() or o == name.rsplit(".", 1)[-1] for o in only
        ):
            continue
        echo("")
        echo(f"== {mod.TITLE} ==")
        mod.run(ctx)
    echo("")
    echo(f"figures written to {out.resolve()}")
    return ctx
