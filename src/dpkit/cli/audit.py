"""``dpkit audit``: empirical privacy audits of dpkit's mechanisms, frameworks and queries.

Examples::

    dpkit audit laplace --epsilon 1
    dpkit audit gaussian --epsilon 0.5 --delta 1e-6 --calibration classic --samples 1000000
    dpkit audit ptr --query mean --lower 0 --upper 100 --time-budget 30
    dpkit audit session_group_by --delta 1e-6 --engine duckdb   # a Session query kind
    dpkit audit all --samples 200000          # every mechanism, framework and query kind

Each row is printed as its audit finishes; Ctrl-C keeps the finished rows (and with --json
prints them) and says how many of the audits ran (exit 130).
    dpkit audit query my_query.py --json      # a query file (dpkit.audit.query_file)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from dpkit.cli._args import once_each
from dpkit.cli._interrupt import Interrupted

__all__ = ["register", "run"]


def _common(p: argparse.ArgumentParser) -> None:
    from dpkit.audit.core import MIN_CONFIDENCE
    from dpkit.cli._args import memory_size

    p.add_argument(
        "--samples",
        type=int,
        default=None,
        help="draws per input (default: as many as the time budget and --max-memory allow)",
    )
    p.add_argument(
        "--time-budget",
        type=float,
        default=60.0,
        help="seconds per audited pair, drawing and analysis; sampling stops early to keep "
        "to it (default: %(default)s)",
    )
    p.add_argument(
        "--max-memory",
        type=memory_size,
        default=None,
        metavar="SIZE",
        help="refuse --samples estimated to need more memory than this (without --samples, "
        "draw fewer), for example 512M or 8G (default: 4G)",
    )
    p.add_argument(
        "--confidence",
        type=float,
        default=0.95,
        help="probability that the reported lower bound holds, in "
        f"[{MIN_CONFIDENCE}, 1) (default: %(default)s)",
    )
    p.add_argument("--seed", type=int, default=None, help="reproducible draws (default secure)")
    p.add_argument("--json", action="store_true", help="print JSON rows instead of a table")
    p.add_argument(
        "--no-progress", action="store_true", help="no progress bar (off anyway if not a TTY)"
    )


def register(sub: Any) -> None:
    from dpkit.audit.targets import TARGETS

    p = sub.add_parser(
        "audit",
        help="test a mechanism, framework or query on worst-case neighbours (epsilon lower bound)",
        description=(
            "Draw outputs on neighbouring inputs, choose an event on half the draws and "
            "bound epsilon from below on the other half (Clopper-Pearson); the verdict is "
            "'violation' when the bound exceeds the claimed epsilon. A pass is evidence, "
            "not a proof."
        ),
    )
    targets = p.add_subparsers(dest="target", metavar="TARGET")
    targets.required = True
    for name, t in TARGETS.items():
        tp = once_each(targets.add_parser(name, help=t.summary, description=t.summary))
        for param, (typ, default, text) in t.params.items():
            tp.add_argument(
                f"--{param.replace('_', '-')}",
                dest=f"param_{param}",
                type=typ,
                default=default,
                help=f"{text} (default: %(default)s)",
            )
        _common(tp)
        tp.set_defaults(func=run)
    ap = once_each(
        targets.add_parser(
            "all", help="every mechanism, framework and Session query kind with its defaults"
        )
    )
    _common(ap)
    ap.set_defaults(func=run)
    qp = once_each(
        targets.add_parser(
            "query", help="a query file: query(frame, rng), CLAIM or EPSILON, neighbours or DATA"
        )
    )
    qp.add_argument("file", type=Path, help="the query file (see dpkit.audit.query_file)")
    _common(qp)
    qp.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from dpkit.audit.core import table_header, table_row
    from dpkit.audit.targets import TARGETS, cases

    if args.target == "all":
        todo = [c for name in TARGETS for c in cases(name)]
    elif args.target == "query":
        from dpkit.audit.query_file import load_query_file

        todo = load_query_file(args.file)
    else:
        params = {k[len("param_") :]: v for k, v in vars(args).items() if k.startswith("param_")}
        todo = cases(args.target, **params)
    progress = None if not args.no_progress else False
    results: list[Any] = []
    if not args.json:
        print(table_header(), flush=True)
    try:
        for case in todo:
            result = case.run(
                samples=args.samples,
                time_budget=args.time_budget,
                **({} if args.max_memory is None else {"max_memory": args.max_memory}),
                confidence=args.confidence,
                rng=args.seed,
                progress=progress,
            )
            results.append(result)
            if not args.json:  # each row as it finishes: a long run shows its progress
                print(table_row(result), flush=True)
    except KeyboardInterrupt:
        if args.json:  # the finished audits are kept
            json.dump([r.as_dict() for r in results], sys.stdout, indent=2, default=str)
            print()
        kept = "printed above" if not args.json else "printed as JSON"
        raise Interrupted(
            f"interrupted after {len(results)} of {len(todo)} audit(s); the finished rows are "
            f"{kept}" + ("" if results else " (none)")
        ) from None
    if args.json:
        json.dump([r.as_dict() for r in results], sys.stdout, indent=2, default=str)
        print()
    else:
        if any(r.lattice is not None and not r.lattice.consistent for r in results):
            print(
                "[lattice leak]: lattice events alone exceed the claim (outputs reveal "
                "their input through their floating-point representation)"
            )
        short = sum(r.time_limited for r in results)
        if short and args.samples is not None:
            print(
                f"[time limited]: {short} audit(s) stopped at --time-budget before --samples "
                "draws; the samples column says how many were drawn"
            )
    return 1 if any(r.verdict == "violation" for r in results) else 0
