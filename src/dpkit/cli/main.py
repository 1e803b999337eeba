"""Entry point of the ``dpkit`` command.

Each subcommand lives in its own module under :mod:`dpkit.cli` and exposes
``register(subparsers)``, which adds its parser and sets ``func`` to a callable taking the
parsed arguments and returning an exit code. Add a subcommand by appending its module to
``SUBCOMMANDS``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from dpkit.errors import DPError

__all__ = ["SUBCOMMANDS", "build_parser", "main"]

SUBCOMMANDS: tuple[str, ...] = (
    "dpkit.cli.demo",
    "dpkit.cli.budget",
    "dpkit.cli.sensitivity",
    "dpkit.cli.compare",
    "dpkit.cli.audit",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dpkit",
        description="Differential privacy built around sensitivity.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in SUBCOMMANDS:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``dpkit`` command; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (DPError, ValueError, TypeError, OSError) as exc:
        print(f"dpkit {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
