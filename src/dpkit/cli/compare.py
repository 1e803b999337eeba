"""``dpkit compare``: global sensitivity against the local-sensitivity frameworks.

Examples::

    dpkit compare                                  # mean of Adult's Age, 1,000 trials each
    dpkit compare --statistic median --plot errors.png
    dpkit compare --data people.csv --column income --bounds 0,500000 --statistic median
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from dpkit.errors import ParameterError

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    p = sub.add_parser(
        "compare",
        help="compare global sensitivity, PTR, smooth sensitivity, sample-and-aggregate and "
        "inverse sensitivity on one statistic",
        description=(
            "Run every method many times on one column at the same total privacy cost and "
            "print the distribution of its errors (and optionally plot it). Without --data the "
            "bundled UCI Adult table is used."
        ),
    )
    p.add_argument("--data", type=Path, help="a CSV file (default: the bundled Adult data)")
    p.add_argument("--column", default="Age", help="the column to use (default: %(default)s)")
    p.add_argument(
        "--bounds", default="0,100", help="lower,upper chosen without looking at the data"
    )
    p.add_argument("--statistic", choices=("mean", "median"), default="mean")
    p.add_argument("--epsilon", type=float, default=1.0, help="total epsilon (default: 1)")
    p.add_argument(
        "--delta", type=float, default=None, help="total delta (default: 1/n^2, as the book)"
    )
    p.add_argument("--trials", type=int, default=1000, help="releases per method")
    p.add_argument("--methods", default=None, help="comma-separated subset of the methods")
    p.add_argument("--ptr-bound", type=float, default=None, help="PTR's proposed bound")
    p.add_argument("--chunks", type=int, default=600, help="sample-and-aggregate parts")
    p.add_argument("--plot", type=Path, help="also draw the error histograms to FILE.png")
    p.add_argument("--json", action="store_true", help="print JSON rows instead of a table")
    p.add_argument(
        "--seed", type=int, default=None, help="reproducible (NOT private) noise; default secure"
    )
    p.set_defaults(func=run)


def _bounds(text: str) -> tuple[float, float]:
    try:
        lo, hi = (float(t) for t in text.split(","))
    except ValueError:
        raise ParameterError(f"--bounds: expected lower,upper; got {text!r}") from None
    return lo, hi


def _column(args: argparse.Namespace) -> Any:
    import polars as pl

    if args.data is None:
        from dpkit.datasets import load_adult

        df = load_adult()
    else:
        if not args.data.exists():
            raise ParameterError(f"--data: no such file {str(args.data)!r}")
        df = pl.read_csv(args.data)
    if args.column not in df.columns:
        raise ParameterError(
            f"--column: {args.column!r} is not a column; choose from {', '.join(df.columns)}"
        )
    return df[args.column].cast(pl.Float64).drop_nulls().to_numpy()


def run(args: argparse.Namespace) -> int:
    from dpkit.compare import compare

    values = _column(args)
    bounds = _bounds(args.bounds)
    delta = args.delta if args.delta is not None else 1 / max(len(values), 2) ** 2
    methods = None if args.methods is None else [m.strip() for m in args.methods.split(",")]
    comp = compare(
        values,
        args.statistic,
        bounds=bounds,
        epsilon=args.epsilon,
        delta=delta,
        trials=args.trials,
        methods=methods,
        ptr_bound=args.ptr_bound,
        chunks=args.chunks,
        column=args.column,
        rng=args.seed,
    )
    if args.json:
        rows = comp.summary()
        for row in rows:
            row["privacy"] = repr(row["privacy"])
        json.dump({"truth": comp.truth, "rows": rows}, sys.stdout, indent=2)
        print()
    else:
        print(comp.table())
        if args.seed is not None:
            print(f"(noise from seed {args.seed}: reproducible, NOT private)")
    if args.plot is not None:
        import matplotlib

        matplotlib.use("Agg")
        from dpkit.plot.compare import plot_comparison

        ax = plot_comparison(comp)
        ax.figure.tight_layout()
        ax.figure.savefig(args.plot, dpi=120)
        import matplotlib.pyplot as plt

        plt.close(ax.figure)
        print(f"figure written to {args.plot}")
    return 0
