"""``dpkit sensitivity``: tables of global and local sensitivity.

Two modes:

- over a universe (brute force, any catalogue query)::

    dpkit sensitivity --query median --universe 1,2,3,10,11 --size 3 --distance 1..3 --relation both

- on a real column (exact local sensitivity, beside the global one for that size)::

    dpkit sensitivity --data adult.csv --column Age --bounds 0,100 --query median,mean

  Missing values are dropped with a note; values outside ``--bounds`` are refused unless
  ``--clip`` (then counted in a note): the rule of :mod:`dpkit.cli._column`, which
  ``dpkit compare`` follows too.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from dpkit.cli._args import note_figure, once_each, terminal_width
from dpkit.errors import ParameterError

__all__ = ["parse_distances", "register", "run"]

DEFAULT_QUERIES = "count,sum,mean,median,var,std"


def register(sub: Any) -> None:
    p = sub.add_parser(
        "sensitivity",
        help="global and local sensitivity of queries, bounded and unbounded, at distance k",
        description=(
            "Sensitivity tables. With --universe: global sensitivity by brute force over every "
            "dataset of --size records drawn from the universe (or local at --at). With --data: "
            "exact local sensitivity of a CSV column within --bounds, beside the global one. "
            "Missing values are dropped (with a note); values outside --bounds are refused "
            "unless --clip."
        ),
    )
    once_each(p)  # an option that takes one value is given at most once
    p.add_argument(
        "--query",
        default=DEFAULT_QUERIES,
        help="comma-separated queries: count, sum, mean, median, var, std, pNN "
        "(default: %(default)s)",
    )
    p.add_argument("--universe", help="comma-separated records, for example 1,2,3,10,11")
    p.add_argument("--size", type=int, help="dataset size (with --universe)")
    p.add_argument("--at", help="comma-separated dataset drawn from the universe: local instead")
    p.add_argument("--data", type=Path, help="a CSV file (local sensitivity of a column)")
    p.add_argument("--column", help="the column of --data")
    p.add_argument("--bounds", help="lower,upper for --data (chosen without looking at it)")
    p.add_argument(
        "--clip",
        action="store_true",
        help="clip --data values to --bounds instead of refusing them (the count is noted)",
    )
    p.add_argument("--distance", default="1", help="k, k1,k2,... or a range a..b (default: 1)")
    p.add_argument(
        "--relation",
        choices=("bounded", "unbounded", "both"),
        default="both",
        help="neighbour relation (default: %(default)s)",
    )
    p.add_argument("--json", action="store_true", help="print JSON rows instead of a table")
    p.add_argument("--plot", type=Path, help="also draw sensitivity against distance to FILE.png")
    p.add_argument(
        "--max-datasets", type=int, default=None, help="raise the brute-force enumeration limit"
    )
    p.set_defaults(func=run)


def parse_distances(text: str) -> list[int]:
    """``"2"``, ``"1,2,5"`` or ``"1..3"`` -> a list of distances (each >= 1)."""
    try:
        if ".." in text:
            a, b = text.split("..", 1)
            out = list(range(int(a), int(b) + 1))
        else:
            out = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise ParameterError(f"--distance: expected k, k1,k2,... or a..b; got {text!r}") from None
    if not out or min(out) < 1:
        raise ParameterError(f"--distance: distances must be integers >= 1; got {text!r}")
    return out


def _numbers(flag: str, text: str) -> list[float]:
    try:
        return [float(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise ParameterError(f"{flag}: expected comma-separated numbers; got {text!r}") from None


def _fmt(v: float | None) -> str:
    if v is None:
        return "n/a"
    if math.isinf(v):
        return "inf"
    return f"{v:.6g}"


def run(args: argparse.Namespace) -> int:
    from dpkit.sensitivity.catalogue import resolve

    qs = [resolve(t.strip(), owner="--query") for t in args.query.split(",") if t.strip()]
    ks = parse_distances(args.distance)
    rels = ["bounded", "unbounded"] if args.relation == "both" else [args.relation]
    if (args.universe is None) == (args.data is None):
        raise ParameterError(
            "pass either --universe (with --size or --at) or --data (with --column and --bounds)"
        )
    if args.plot is not None:
        from dpkit.plot import require_matplotlib

        require_matplotlib("--plot")  # before the work, not after it
    if args.universe is not None:
        return _universe_mode(args, qs, ks, rels)
    return _data_mode(args, qs, ks, rels)


def _universe_mode(args: argparse.Namespace, qs: list[Any], ks: list[int], rels: list[str]) -> int:
    from dpkit.sensitivity import DEFAULT_MAX_DATASETS, sweep

    universe = _numbers("--universe", args.universe)
    limit = args.max_datasets or DEFAULT_MAX_DATASETS
    if args.at is not None:
        data = _numbers("--at", args.at)
        rows = sweep(qs, universe, data=data, distances=ks, relations=rels, max_datasets=limit)
        head = f"local sensitivity at {_show(data)}, neighbours drawn from {_show(universe)}"
    else:
        if args.size is None:
            raise ParameterError("--universe needs --size (or --at)")
        rows = sweep(qs, universe, size=args.size, distances=ks, relations=rels, max_datasets=limit)
        head = (
            f"global sensitivity over datasets of {args.size} records drawn from "
            f"{_show(universe)} (brute force)"
        )
    if args.json:
        print(json.dumps([r.as_dict() for r in rows], indent=2))
    else:
        print(head)
        _table([(r.query, r.relation, r.distance, r.sensitivity) for r in rows], ks)
    if args.plot is not None:
        _plot(rows, args.plot, args.json)
    return 0


def _data_mode(args: argparse.Namespace, qs: list[Any], ks: list[int], rels: list[str]) -> int:
    from dpkit._validate import check_bounds
    from dpkit.cli._column import read_column, within_bounds
    from dpkit.sensitivity import SweepRow, global_sensitivity, local_by_distance

    if args.column is None or args.bounds is None:
        raise ParameterError("--data needs --column and --bounds lower,upper")
    bounds = check_bounds("--bounds", tuple(_numbers("--bounds", args.bounds)))
    values, _ = read_column(args.data, args.column)
    values = within_bounds(values, args.column, bounds, clip=args.clip)
    n = int(values.size)
    rows: list[SweepRow] = []
    table = []
    out = []
    for q in qs:
        for rel in rels:
            # every distance at once: the shapes of the largest ball are scored once
            by_k = local_by_distance(q, values, ks, relation=rel, bounds=bounds)
            for k, ls in zip(ks, by_k, strict=True):
                try:
                    gs: float | None = global_sensitivity(
                        q, bounds=bounds, relation=rel, n=n, distance=k
                    )
                except ParameterError:
                    gs = None  # no closed form here: shown as n/a
                rows.append(SweepRow(q.name, rel, k, "local", ls))
                table.append((q.name, rel, k, ls, gs))
                out.append(
                    {
                        "query": q.name,
                        "relation": rel,
                        "distance": k,
                        "local": ls,
                        "global": gs,
                        "n": n,
                    }
                )
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(
            f"local sensitivity of {args.column!r} ({n:,} values in {args.data}), bounds "
            f"[{bounds[0]:g}, {bounds[1]:g}]; global: every dataset of {n:,} values (exact)"
        )
        print(f"{'query':<10} {'relation':<10} {'k':>3} {'local':>14} {'global':>14}")
        for name, rel, k, ls, gs in table:
            print(f"{name:<10} {rel:<10} {k:>3} {_fmt(ls):>14} {_fmt(gs):>14}")
        print(
            "local sensitivity is never used directly to scale noise: see propose-test-release "
            "and smooth sensitivity"
        )
    if args.plot is not None:
        _plot(rows, args.plot, args.json)
    return 0


def _show(values: list[float]) -> str:
    return "{" + ", ".join(f"{v:g}" for v in values) + "}"


def _table(rows: list[tuple[str, str, int, float]], ks: list[int]) -> None:
    """One row per query and relation, one column per distance; one row per (query,
    relation, k) instead when that would be wider than the terminal."""
    cells: dict[tuple[str, str], dict[int, float]] = {}
    for name, rel, k, v in rows:
        cells.setdefault((name, rel), {})[k] = v
    if 21 + 10 * len(ks) > terminal_width():
        print(f"{'query':<10} {'relation':<10} {'k':>6} {'sensitivity':>14}")
        for (name, rel), by_k in cells.items():
            for k in ks:
                print(f"{name:<10} {rel:<10} {k:>6} {_fmt(by_k.get(k)):>14}")
        return
    header = f"{'query':<10} {'relation':<10}" + "".join(f"{'k=' + str(k):>10}" for k in ks)
    print(header)
    for (name, rel), by_k in cells.items():
        print(f"{name:<10} {rel:<10}" + "".join(f"{_fmt(by_k.get(k)):>10}" for k in ks))


def _plot(rows: Any, path: Path, json_output: bool) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from dpkit.plot import sensitivity_by_distance

    fig, ax = plt.subplots(figsize=(9, 5))
    sensitivity_by_distance(rows=rows, ax=ax)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    note_figure(path, json_output)
