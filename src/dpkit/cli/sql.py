"""``dpkit sql``: a differentially private SELECT on a CSV or Parquet file (or 'adult').

Examples::

    dpkit sql adult "SELECT Sex, COUNT(*), AVG(Age) FROM data GROUP BY Sex" \\
        --epsilon 1 --keys sex.csv --bounds Age:0:100
    dpkit sql data.csv "SELECT MEDIAN(income) FROM data WHERE Age >= 18" \\
        --schema Age:int --schema income:float --bounds income:0:200000 --epsilon 0.5
    dpkit sql data.parquet "SELECT r.name, COUNT(*) FROM data d JOIN regions r
        ON d.region = r.id GROUP BY r.name" --public regions=regions.csv --epsilon 1
    dpkit sql adult "EXPLAIN SELECT QUANTILE_CONT(Age, [0.1, 0.5, 0.9]) FROM data" \\
        --epsilon 1 --bounds Age:0:100

The query is compiled into the Session's own plan (:meth:`dpkit.Session.sql`; the grammar,
each construct's mechanism and the refusals are in ``docs/sql.md``); it never reaches an
engine as SQL. ``DATA`` is read as ``dpkit query`` reads it (``--engine spark`` included),
and is the table ``data`` (``--name`` renames it). ``--bounds COL:LOWER:UPPER`` or
``COL:auto`` bounds an aggregated column (or an aggregate's alias); ``--keys FILE`` is a CSV
of public group keys, one column per GROUP BY key (named as in the output); ``--public
NAME=FILE`` registers a public table for joins. ``EXPLAIN SELECT ...`` or ``--explain``
prints the plan and spends nothing.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from dpkit.cli._args import (
    add_output_options,
    add_release_options,
    add_schema,
    check_delta_limit,
    once_each,
)
from dpkit.cli._errors import query_message
from dpkit.cli.query import (
    ENGINES,
    LAYOUTS,
    _accountant,
    _bounded,
    _measure,
    _read_frame,
    make_session,
    print_release,
)
from dpkit.cli.report import check_output
from dpkit.errors import ParameterError
from dpkit.session import QueryRelease

__all__ = ["register"]


def register(sub: Any) -> None:
    """Add the ``sql`` subcommand."""
    p = sub.add_parser(
        "sql",
        help="release a differentially private SELECT (counts, means, quantiles, ...)",
        description="Release one SQL SELECT on a CSV or Parquet file (or 'adult', the bundled "
        "data), compiled into the same private plan as `dpkit query`: each aggregate with its "
        "confidence interval. EXPLAIN SELECT ... (or --explain) prints the plan and spends "
        "nothing.",
    )
    once_each(p)
    p.add_argument("data", metavar="DATA", help="a .csv or .parquet file, or 'adult'")
    p.add_argument("query", metavar="QUERY", help='one SELECT, such as "SELECT COUNT(*) FROM data"')
    p.add_argument(
        "--engine",
        choices=ENGINES,
        default="polars",
        help="where the query runs: polars (default) or spark (a local Spark)",
    )
    add_release_options(
        p, delta_help="delta (default 0: pure DP; > 0 lets GROUP BY choose its groups privately)"
    )
    p.add_argument(
        "--bounds",
        action="append",
        default=[],
        metavar="COL:LOWER:UPPER|COL:auto",
        help="bounds of an aggregated column or alias (repeatable); COL:auto chooses them "
        "privately (sums, means, variances)",
    )
    p.add_argument(
        "--keys", default=None, help="CSV file of public group keys (the GROUP BY columns)"
    )
    p.add_argument(
        "--public",
        action="append",
        default=[],
        metavar="NAME=FILE",
        help="register a public table (CSV or Parquet) that the query may JOIN (repeatable)",
    )
    p.add_argument("--name", default="data", help="the table's name in the query (default data)")
    add_schema(p)
    add_output_options(
        p,
        layouts=LAYOUTS,
        layout_help="the printed table: wide, long or auto (long when wide is wider than "
        "the terminal)",
    )
    p.set_defaults(
        func=run,
        error_text=query_message,
        interrupted="interrupted before the spend: nothing was charged or released",
    )


def _bounds(specs: list[str]) -> dict[str, Any] | None:
    """``--bounds COL:LOWER:UPPER`` or ``COL:auto`` (split from the right: a column name may
    hold colons) as the ``bounds=`` of :meth:`Session.sql`."""
    usage = "sql: --bounds takes COLUMN:LOWER:UPPER or COLUMN:auto"
    out: dict[str, Any] = {}
    for spec in specs:
        col, bounds = _bounded(spec, "bounds", ("auto",), usage)
        out[col] = bounds
    return out or None


def _read_table(path: str, what: str) -> Any:
    p = Path(path)
    if not p.is_file():
        raise ParameterError(f"sql: no such file {path!r} for {what}")
    parquet = p.suffix.lower() in (".parquet", ".pq")
    return _read_frame(p, f"sql: cannot read {what} {path!r}", parquet=parquet)


def _public(specs: list[str]) -> dict[str, Any] | None:
    out: dict[str, Any] = {}
    for spec in specs:
        name, eq, path = spec.partition("=")
        if not eq or not name or not path:
            raise ParameterError(f"sql: --public takes NAME=FILE; got {spec!r}")
        if name in out:
            raise ParameterError(f"sql: --public names {name!r} twice")
        out[name] = _read_table(path, f"the public table {name!r}")
    return out or None


def run(args: argparse.Namespace) -> int:

    check_delta_limit("sql", args.delta)
    report = None if args.report is None else check_output("sql: --report", args.report)
    bounds = _bounds(args.bounds)
    keys = None if args.keys is None else _read_table(args.keys, "the --keys file")
    acct = _accountant(args)
    session = make_session(args, "sql", acct, name=args.name, public=_public(args.public))
    release = {
        "epsilon": args.epsilon,
        "delta": args.delta,
        "rho": args.rho,
        "alpha": args.alpha,
        "bounds": bounds,
        "keys": keys,
    }
    text = args.query
    if args.explain:
        return _print_plan(session.sql(text, **release, explain=True), args)
    # Session.sql makes every refusal before it spends; an EXPLAIN statement (as the parser
    # reads it, comments and all) gives its plan and spends nothing
    rel = _measure(_SqlQuery(session, text, release), {}, acct, args.ledger)
    if not isinstance(rel, QueryRelease):
        return _print_plan(rel, args)
    return print_release(rel, args, session, report)


def _print_plan(plan: Any, args: argparse.Namespace) -> int:
    print(json.dumps({"plan": str(plan)}) if args.json else plan)
    return 0


class _SqlQuery:
    """The release as ``dpkit query`` runs one (``measure(**release)``), for its interrupt
    handling."""

    def __init__(self, session: Any, text: str, release: dict[str, Any]) -> None:
        self.session = session
        self.text = text
        self.release = release

    def measure(self) -> Any:
        return self.session.sql(self.text, **self.release, measure=True)
