"""Run the benchmarks: ``python -m benchmarks [NAME ...] [--json FILE] [--list]``.

Without names every ``benchmarks/bench_*.py`` module runs, in name order. A name may be given
with or without the ``bench_`` prefix (``mechanisms`` or ``bench_mechanisms``). Each module's
``run(table)`` adds rows to one :class:`~benchmarks._harness.Table`, printed at the end. A
module that raises is reported (traceback on stderr, a row in the table) and the others still
run; the exit status is then 1.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path

from benchmarks._harness import Table, environment

HERE = Path(__file__).resolve().parent


def available() -> list[str]:
    """Names (without ``bench_``) of the benchmark modules in this folder, sorted."""
    return sorted(p.stem.removeprefix("bench_") for p in HERE.glob("bench_*.py"))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the selected benchmark modules and print one table; return the exit status."""
    names = available()
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="Time dpkit against NumPy and other DP libraries; prints one table.",
    )
    parser.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help=f"benchmark modules to run (default: all of {', '.join(names) or 'none found'})",
    )
    parser.add_argument("--json", metavar="FILE", help="also save the rows as JSON to FILE")
    parser.add_argument("--list", action="store_true", help="list the benchmark modules and exit")
    parser.add_argument(
        "--quiet", action="store_true", help="do not print each row to stderr as it is measured"
    )
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(names))
        return 0
    selected = [n.removeprefix("bench_").removesuffix(".py") for n in args.names] or names
    unknown = [n for n in selected if n not in names]
    if unknown:
        parser.error(f"unknown benchmark(s) {', '.join(unknown)}; available: {', '.join(names)}")

    table = Table(echo=None if args.quiet else sys.stderr)
    status = 0
    for name in selected:
        start = time.perf_counter()
        if not args.quiet:
            print(f"[bench_{name}]", file=sys.stderr, flush=True)
        try:
            module = importlib.import_module(f"benchmarks.bench_{name}")
            module.run(table)
        except Exception as exc:
            # Report and keep going: one broken module should not hide the others' figures.
            traceback.print_exc(file=sys.stderr)
            table.missing(f"bench_{name}", "(module failed)", exc)
            status = 1
        if not args.quiet:
            took = time.perf_counter() - start
            print(f"[bench_{name}] {took:.1f} s", file=sys.stderr, flush=True)

    env = environment()
    print(table.render(env))
    if args.json:
        table.save_json(args.json, env)
        print(f"\nrows saved to {args.json}")
    return status


if __name__ == "__main__":
    sys.exit(main())
