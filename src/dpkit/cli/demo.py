"""``dpkit demo``: the guided tour on the bundled Adult data."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def register(sub: Any) -> None:
    p = sub.add_parser("demo", help="run the tour of dpkit on the bundled UCI Adult data")
    p.add_argument("--out", default="demo-output", help="folder for figures (default: %(default)s)")
    p.add_argument(
        "--seed",
        type=int,
        default=None,
        help="seed for reproducible (NOT private) noise; default: secure randomness",
    )
    from dpkit.report.demo import section_names

    p.add_argument(
        "--only",
        action="append",
        default=None,
        metavar="SECTION",
        help=f"run only this section (repeatable): {', '.join(section_names())}",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from dpkit.report.demo import run_demo

    run_demo(Path(args.out), seed=args.seed, only=args.only)
    return 0
