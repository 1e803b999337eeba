"""``dpkit compare``: global sensitivity against the local-sensitivity frameworks.

Examples::

    dpkit compare --bounds 0,100                   # mean of Adult's Age, 1,000 trials each
    dpkit compare --bounds 0,100 --statistic median --plot errors.png
    dpkit compare --data people.csv --column income --bounds 0,500000 --statistic median

``--bounds`` is required: public bounds chosen without looking at the data. The column is read
by the rule every ``--data`` subcommand follows (:mod:`dpkit.cli._column`): missing values are
dropped with a note, values outside the bounds are refused unless ``--clip``. ``--delta``
defaults to ``min(1/n^2, 1e-6)`` and must stay at most ``1/n`` unless ``--force-delta``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from dpkit.cli._args import memory_size, note_figure, once_each
from dpkit.errors import ParameterError

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    """Add the ``compare`` subcommand to ``sub`` (an argparse subparsers object).

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The subparsers of the ``dpkit`` parser.

    Returns
    -------
    None
    """
    p = sub.add_parser(
        "compare",
        help="compare global sensitivity, PTR, smooth sensitivity, sample-and-aggregate and "
        "inverse sensitivity on one statistic",
        description=(
            "Run every method many times on one column at the same privacy cost per release "
            "and print the distribution of its errors (and optionally plot it). Without --data "
            "the bundled UCI Adult table is used. Missing values are dropped (with a note); "
            "values outside --bounds are refused unless --clip."
        ),
    )
    once_each(p)  # an option that takes one value is given at most once
    p.add_argument("--data", type=Path, help="a CSV file (default: the bundled Adult data)")
    p.add_argument("--column", default=None, help="the column to use (default with Adult: Age)")
    p.add_argument(
        "--bounds",
        default=None,
        help="lower,upper chosen without looking at the data (required; for Adult's Age: 0,100)",
    )
    p.add_argument(
        "--clip", action="store_true", help="clip values outside --bounds instead of refusing"
    )
    p.add_argument("--statistic", choices=("mean", "median"), default="mean")
    p.add_argument("--epsilon", type=float, default=1.0, help="epsilon per release (default: 1)")
    p.add_argument(
        "--delta",
        type=float,
        default=None,
        help="delta of PTR and smooth sensitivity, at most 1/n (default: min(1/n^2, 1e-6))",
    )
    p.add_argument(
        "--force-delta",
        action="store_true",
        help="allow --delta above 1/n, which protects no one (to study what it does)",
    )
    p.add_argument(
        "--trials", type=int, default=1000, help="releases per method (default: %(default)s)"
    )
    p.add_argument(
        "--max-memory",
        type=memory_size,
        default=None,
        metavar="SIZE",
        help="refuse runs estimated to need more memory than this, for example 512M or 4G "
        "(default: 2G)",
    )
    p.add_argument(
        "--methods",
        default=None,
        help="comma-separated subset of global, ptr, smooth, sample_and_aggregate, "
        "inverse_sensitivity (default: all)",
    )
    p.add_argument("--ptr-bound", type=float, default=None, help="PTR's proposed bound")
    p.add_argument(
        "--chunks",
        type=int,
        default=None,
        help="sample-and-aggregate parts, at most n (default: 600, or n if fewer records)",
    )
    p.add_argument("--plot", type=Path, help="also draw the error histograms to FILE.png")
    p.add_argument("--json", action="store_true", help="print JSON rows instead of a table")
    p.add_argument(
        "--seed", type=int, default=None, help="reproducible (NOT private) noise; default secure"
    )
    p.add_argument(
        "--no-progress", action="store_true", help="no progress bar (off anyway if not a TTY)"
    )
    p.set_defaults(func=run)


def _bounds(text: str | None) -> tuple[float, float]:
    from dpkit._validate import check_bounds

    if text is None:
        raise ParameterError(
            "--bounds lower,upper is required: public bounds chosen without looking at the "
            "data (for Adult's Age, --bounds 0,100); bounds taken from the data are not private"
        )
    try:
        lo, hi = (float(t) for t in text.split(","))
    except ValueError:
        raise ParameterError(f"--bounds: expected lower,upper; got {text!r}") from None
    return check_bounds("--bounds", (lo, hi))


def run(args: argparse.Namespace) -> int:
    """Run ``dpkit compare`` with parsed arguments; print the table (or JSON).

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line.

    Returns
    -------
    int
        0.

    Raises
    ------
    ParameterError
        Missing or bad ``--bounds``, an unreadable file or column, values outside the bounds
        without ``--clip``, unsafe ``--delta``, ``--chunks`` above n, ``--trials`` needing more
        memory than ``--max-memory`` (estimated before any work), or more than the machine
        has free (a ``MemoryError``, reported in one line).
    ImportError
        ``--plot`` without matplotlib (before any work), naming the ``plot`` extra.
    """
    try:
        return _run(args)
    except MemoryError:
        # the estimate fitted --max-memory, but this machine has less free memory than that
        raise ParameterError(
            f"--trials {args.trials:,}: the run ran out of memory (the machine has less free "
            "memory than --max-memory allows); lower --trials or --max-memory"
        ) from None


def _run(args: argparse.Namespace) -> int:
    from dpkit.cli._column import read_column, within_bounds
    from dpkit.compare import compare

    bounds = _bounds(args.bounds)
    if args.plot is not None:
        from dpkit.plot import require_matplotlib

        require_matplotlib("--plot")
    column = args.column if args.column is not None or args.data is not None else "Age"
    values, _ = read_column(args.data, column)
    inside = within_bounds(values, column, bounds, clip=args.clip)  # refuses, or notes clipping
    methods = None if args.methods is None else [m.strip() for m in args.methods.split(",")]
    comp = compare(
        values if args.clip else inside,  # compare() clips again and counts for its table
        args.statistic,
        bounds=bounds,
        epsilon=args.epsilon,
        delta=args.delta,
        force_delta=args.force_delta,
        trials=args.trials,
        methods=methods,
        **({} if args.max_memory is None else {"max_memory": args.max_memory}),
        ptr_bound=args.ptr_bound,
        chunks=args.chunks,
        column=column,
        clip=args.clip,
        rng=args.seed,
        progress=False if args.no_progress else None,
    )
    if args.json:
        rows = comp.summary()
        for row in rows:
            row["privacy"] = repr(row["privacy"])
        payload = {"truth": comp.truth, "n": comp.n, "delta": comp.delta, "rows": rows}
        json.dump(payload, sys.stdout, indent=2)
        print()
    else:
        print(comp.table())
        if args.seed is not None:
            print(f"(noise from seed {args.seed}: reproducible, NOT private)")
    if args.plot is not None:
        import matplotlib

        matplotlib.use("Agg")
        from dpkit.plot.comparison import plot_comparison

        ax = plot_comparison(comp)
        ax.figure.tight_layout()
        ax.figure.savefig(args.plot, dpi=120)
        import matplotlib.pyplot as plt

        plt.close(ax.figure)
        note_figure(args.plot, args.json)
    return 0
