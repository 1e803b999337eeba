"""``dpkit query``: a differentially private table from a CSV or Parquet file.

Examples::

    dpkit query adult --epsilon 1 --group-by Education --keys education.csv --count
    dpkit query data.csv --epsilon 1 --delta 1e-6 --unit pid --max-rows 5 --max-groups 2 \\
        --group-by Sex --count --mean Age:0:100 --median "Hours per week":0:100
    dpkit query data.parquet --epsilon 1 --count --explain
    dpkit query data.parquet --engine spark --epsilon 1 --group-by Sex --keys sex.csv --count
    dpkit query data.csv --schema Age:int --epsilon 1 --mean Age:0:100

``DATA`` is a .csv or .parquet path, or ``adult`` for the bundled UCI Adult table. Aggregates
are written ``COLUMN:LOWER:UPPER`` (``--quantile COLUMN:Q1,Q2:LOWER:UPPER``; ``--histogram
COLUMN:E0,E1,...`` with two or more bin edges, or ``COLUMN:LOWER:UPPER:BINS`` for ``BINS``
equal-width bins); a column name may itself contain colons, since the fields are split
from the right. ``--group-by`` names each key column once.
``--sum/--mean/--var/--std COLUMN:auto`` chooses the bounds privately with half of that
aggregate's budget (``bounds="auto"``; the chosen bounds and the DP clipped
fraction are printed; ``COLUMN:tail`` chooses them at a private 0.1th and 99.9th percentile
instead, ``bounds_method="tail"``, for heavy-tailed columns), and ``--max-rows auto``
chooses the rows kept per unit privately with a tenth of the release's budget::

    dpkit query adult --epsilon 1 --mean Age:auto --std "Hours per week":auto
    dpkit query data.csv --epsilon 1 --unit pid --max-rows auto --count

The released table is printed wide (one row per group) when it fits the terminal, else long
(one row per group and statistic: value, low, high); ``--layout wide|long`` chooses. Errors
name the options (``--keys FILE``, ``--delta``), not the library's Python parameters
(:mod:`dpkit.cli._errors`). Ctrl-C prints one line (exit 130): after the spend, that the
budget was charged and nothing released.

An option that takes one value may be given once: ``--histogram A --histogram B`` is a usage
error (a histogram is released in a query of its own), as is a second ``--epsilon``,
``--unit``, ``--ledger``, ... (:class:`dpkit.cli._args.Once`). ``--delta`` is at most 1/2
(:data:`dpkit.cli._args.MAX_DELTA`: above it, delta is above 1/n for every table of two or
more people), and should be far below 1/n.

A CSV file declares no types: its columns are text, which numeric aggregates parse (text
that is not a plain number counts as missing); ``--schema COL:TYPE`` declares a column's type
(``int``, ``float``, ``str``, ``bool``, ``date``, ``datetime``), as ``Session(schema=...)``.

``--engine spark`` reads the file with a local Spark (``local[2]``, 127.0.0.1, see
:func:`dpkit.session.engines.spark.local_session`) and runs the query there; only the
aggregates and the released table come back. On a cluster, use the Python API under
``spark-submit`` (docs/guides/spark.md, "The Session on Spark").
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from dpkit.cli._args import (
    Once,
    add_output_options,
    add_release_options,
    add_schema,
    check_delta_limit,
    once_each,
    schema_of,
    terminal_width,
)
from dpkit.cli._errors import query_message
from dpkit.cli._interrupt import Interrupted, InterruptWatch, settled
from dpkit.cli.report import check_output
from dpkit.errors import ParameterError

__all__ = ["register"]

_BOUNDED = ("sum", "mean", "var", "std", "median")
ENGINES = ("polars", "spark")
LAYOUTS = ("auto", "wide", "long")
_RETRIES = 10  # Ctrl-Cs absorbed while an interrupt is reported


def register(sub: Any) -> None:
    """Add the ``query`` subcommand."""
    p = sub.add_parser(
        "query",
        help="release a differentially private table (counts, means, quantiles, ...)",
        description="Release a differentially private table from a CSV or Parquet file (or "
        "'adult', the bundled data): the released values with their confidence intervals. "
        "--explain prints the plan and spends nothing.",
    )
    once_each(p)  # every option taking one value is given at most once: a repeat is a usage error
    p.add_argument("data", metavar="DATA", help="a .csv or .parquet file, or 'adult'")
    p.add_argument(
        "--engine",
        choices=ENGINES,
        default="polars",
        help="where the query runs: polars (default, lazy scan) or spark (a local Spark; "
        "needs pip install 'dpkit[spark]' and Java 17+)",
    )
    add_release_options(
        p, delta_help="delta (default 0: pure DP), at most 1/2 and far below 1/n for n people"
    )
    p.add_argument("--group-by", default=None, help="comma-separated key columns, each named once")
    p.add_argument("--keys", default=None, help="CSV file of public keys (the key columns)")
    p.add_argument("--count", action="store_true", help="count rows")
    for name in _BOUNDED:
        p.add_argument(
            f"--{name}",
            action="append",
            default=[],
            metavar="COL:LOWER:UPPER" if name == "median" else "COL:LOWER:UPPER|COL:auto|COL:tail",
            help=f"{name} of a column clipped to [LOWER, UPPER] (repeatable)"
            + (
                ""
                if name == "median"
                else "; COL:auto chooses the bounds privately (log2 histogram), COL:tail by "
                "a private 0.1th and 99.9th percentile (heavy tails)"
            ),
        )
    p.add_argument(
        "--quantile",
        action="append",
        default=[],
        metavar="COL:Q1,Q2:LOWER:UPPER",
        help="quantiles of a column at the given levels (repeatable)",
    )
    p.add_argument(
        "--histogram",
        action=Once,
        hint="a histogram is released in a query of its own: run one query per histogram",
        default=None,
        metavar="COL:E0,E1,...|COL:LOWER:UPPER:BINS",
        help="counts per bin of a column, alone in its query (once): bins between the "
        "comma-separated edges E0 < E1 < ... (at least two; Age:0,18,65,100), or BINS "
        "equal-width bins from LOWER to UPPER (Age:0:100:10)",
    )
    add_schema(p)
    add_output_options(
        p,
        layouts=LAYOUTS,
        layout_help="the printed table: wide (one row per group), long (one row per group and "
        "statistic) or auto (long when wide is wider than the terminal); not with --json",
    )
    p.set_defaults(
        func=run,
        error_text=query_message,
        interrupted="interrupted before the spend: nothing was charged or released",
    )


def _number(text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ParameterError(f"query: {what} must be a number; got {text!r}") from None
    return value


def _bounded(
    spec: str, flag: str, words: tuple[str, ...], usage: str
) -> tuple[str, tuple[float, float] | str]:
    """``COL:LOWER:UPPER`` or ``COL:WORD`` for a word of ``words`` (split from the right: a
    column name may hold colons) -> (column, bounds or the word); ``usage`` is the message
    for a spec of neither form."""
    col, _, last = spec.rpartition(":")
    if last in words and col:
        return col, last
    parts = spec.rsplit(":", 2)
    if len(parts) != 3 or not parts[0]:
        raise ParameterError(f"{usage}; got {spec!r}")
    col, lo, hi = parts
    return col, (_number(lo, f"--{flag} lower"), _number(hi, f"--{flag} upper"))


def _histogram(spec: str) -> tuple[str, list[float]]:
    """``COL:E0,E1,...`` (two or more edges) or ``COL:LOWER:UPPER:BINS`` -> (column, edges).

    Split from the right, so a column name may hold colons; anything else (``Age:0:100``:
    one edge) is a usage error showing both forms."""
    usage = (
        f"query: --histogram takes COL:E0,E1,... (two or more comma-separated edges, such as "
        f"Age:0,18,65,100) or COL:LOWER:UPPER:BINS (BINS equal-width bins, such as "
        f"Age:0:100:10); got {spec!r}"
    )
    parts = spec.rsplit(":", 3)
    if len(parts) == 4 and parts[0] and "," not in parts[3]:
        col, lo, hi, count = parts
        try:
            low, high, bins = float(lo), float(hi), int(count)
        except ValueError:
            pass
        else:
            if not (math.isfinite(low) and math.isfinite(high) and low < high):
                raise ParameterError(f"{usage}: LOWER < UPPER, both finite")
            if not 1 <= bins <= 10_000:
                raise ParameterError(f"{usage}: BINS between 1 and 10,000")
            step = (high - low) / bins
            return col, [low + i * step for i in range(bins)] + [high]
    col, _, edges = spec.rpartition(":")
    if not col or "," not in edges:
        hint = ""
        head, _, last = col.rpartition(":")
        if head and _is_number(last) and _is_number(edges):
            hint = (
                f" (for bins from {last} to {edges}: {head}:{last},{edges} or "
                f"{head}:{last}:{edges}:10)"
            )
        raise ParameterError(usage + hint)
    return col, [_number(e, "a --histogram bin edge") for e in edges.split(",")]


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _group_by(text: str) -> list[str]:
    """``--group-by a,b`` -> ``["a", "b"]``; a column named twice is a usage error."""
    by = [c.strip() for c in text.split(",") if c.strip()]
    if not by:
        raise ParameterError(f"query: --group-by names no column; got {text!r}")
    twice = sorted({c for c in by if by.count(c) > 1})
    if twice:
        raise ParameterError(
            f"query: --group-by names {', '.join(repr(c) for c in twice)} more than once; "
            "give each key column once"
        )
    return by


def _aggregates(args: argparse.Namespace) -> list[Any]:
    import dpkit as dp

    aggs: list[Any] = []
    if args.count:
        aggs.append(dp.count())
    makers: dict[str, Any] = {
        "sum": dp.sum,
        "mean": dp.mean,
        "var": dp.var,
        "std": dp.std,
        "median": dp.median,
    }
    for name in _BOUNDED:
        for spec in getattr(args, name):
            words = () if name == "median" else ("auto", "tail")
            usage = f"query: --{name} takes COLUMN:LOWER:UPPER"
            col, bounds = _bounded(spec, name, words, usage)
            if bounds == "tail":  # bounds="auto" by a private tail quantile (heavy tails)
                aggs.append(makers[name](col, bounds="auto", bounds_method="tail"))
            else:
                aggs.append(makers[name](col, bounds=bounds))
    for spec in args.quantile:
        parts = spec.rsplit(":", 3)
        if len(parts) != 4 or not parts[0]:
            raise ParameterError(f"query: --quantile takes COLUMN:Q1,Q2:LOWER:UPPER; got {spec!r}")
        col, qs, lo, hi = parts
        levels = [_number(q, "a --quantile level") for q in qs.split(",")]
        bounds = (_number(lo, "--quantile lower"), _number(hi, "--quantile upper"))
        aggs.append(dp.quantile(col, levels, bounds=bounds))
    if args.histogram:
        col, edges = _histogram(args.histogram)
        aggs.append(dp.histogram(col, bins=edges))
    if not aggs:
        raise ParameterError(
            "query: ask for at least one aggregate: --count, --sum/--mean/--var/--std/"
            "--median COL:LOWER:UPPER, --quantile COL:Q:LOWER:UPPER or --histogram COL:EDGES"
        )
    return aggs


def _data(text: str, engine: str) -> Any:
    if text == "adult":
        from dpkit.datasets import load_adult

        frame = load_adult()
        return _spark_frame(frame) if engine == "spark" else frame
    path = Path(text)
    if not path.is_file():
        raise ParameterError(
            f"query: no such file {text!r} (give a .csv or .parquet file, or 'adult')"
        )
    if engine == "spark":
        return _spark_read(path)
    return path


def _spark_read(path: Path) -> Any:
    """The file as a Spark DataFrame, read by a local Spark (nothing read by Python).

    A CSV file's columns are read as text, as the default engine reads them: Spark's
    ``inferSchema`` would choose each column's type from its values, so one record could
    change a type (and with it the query's outcome). ``--schema`` declares the types, which
    the Session applies with its total cast."""
    from dpkit.session.engines.spark import local_session

    suffix = path.suffix.lower()
    if suffix not in (".csv", ".parquet", ".pq"):
        raise ParameterError(
            f"query: --engine spark reads .csv or .parquet files; got {str(path)!r}"
        )
    spark = local_session(app_name="dpkit query")
    if suffix == ".csv":
        return spark.read.csv(str(path), header=True, inferSchema=False)
    return spark.read.parquet(str(path))


def _spark_frame(frame: Any) -> Any:
    import polars as pl

    from dpkit.session.engines.spark import local_session

    spark = local_session(app_name="dpkit query")
    return spark.createDataFrame(frame.to_arrow(compat_level=pl.CompatLevel.oldest()))


def _polars(frame: Any) -> Any:
    """The released table as Polars for printing (a Spark release is collected: it is public)."""
    import polars as pl

    if isinstance(frame, pl.DataFrame):
        return frame
    return pl.from_arrow(frame.toArrow())


def _accountant(args: argparse.Namespace) -> Any:
    from dpkit.accounting import ZCDP, Accountant, ApproxDP, PureDP

    if args.ledger is not None:
        if not Path(args.ledger).exists():
            raise ParameterError(
                f"query: no ledger {args.ledger!r}; create it first with "
                "`dpkit budget init FILE --epsilon ...`"
            )
        return Accountant.open(args.ledger)
    # no ledger: an accountant holding exactly this release's cost
    if args.rho is not None:
        return Accountant(ZCDP(args.rho))
    eps = 1.0 if args.epsilon is None else args.epsilon
    if not (math.isfinite(eps) and eps > 0):
        eps = 1.0  # the release itself refuses the bad epsilon with the proper message
    if args.delta:
        return Accountant(ApproxDP(eps, args.delta))
    return Accountant(PureDP(eps))


def _read_frame(path: Any, failure: str, *, parquet: bool = False) -> Any:
    """A CSV (or Parquet) file as a Polars frame; one it cannot read is refused with
    ``failure`` and the error's type only."""
    import polars as pl

    try:
        if parquet:
            return pl.read_parquet(path)
        return pl.read_csv(path, infer_schema_length=10_000)
    except (pl.exceptions.PolarsError, OSError) as err:  # the message may quote the file
        raise ParameterError(f"{failure} ({type(err).__name__})") from None


def _keys(args: argparse.Namespace, by: list[str]) -> Any:
    if args.keys is None:
        return None
    frame = _read_frame(args.keys, f"query: cannot read the --keys file {args.keys!r} as CSV")
    missing = [c for c in by if c not in frame.columns]
    if missing:
        lacks = ", ".join(repr(c) for c in missing)
        has = ", ".join(repr(c) for c in frame.columns)
        raise ParameterError(
            f"query: the --keys file {args.keys!r} lacks the --group-by column(s) {lacks}; "
            f"it has {has}"
        )
    return frame.select(by)


def _json_number(value: Any) -> Any:
    """``value``, or None for a float that is not finite (strict JSON has neither)."""
    return None if isinstance(value, float) and not math.isfinite(value) else value


def _max_rows(text: str | None) -> int | str | None:
    if text is None or text == "auto":
        return text
    try:
        return int(text)
    except ValueError:
        raise ParameterError(f"query: --max-rows takes an int or 'auto'; got {text!r}") from None


def _measure(q: Any, release: dict[str, Any], acct: Any, ledger: str | None) -> Any:
    """``q.measure(**release)``; an interrupt says whether the budget was charged.

    SIGINT is watched while the release runs (:class:`InterruptWatch`): an engine may turn
    it into its own error (Spark cancels its jobs and the collect fails), which is then
    reported as the interrupt it was, not as a failing filter."""
    before = len(acct.history)
    watch = InterruptWatch()
    try:
        with watch:
            return q.measure(**release)
    except (KeyboardInterrupt, Exception) as exc:
        failure: BaseException = exc
    # The same Ctrl-C can be raised twice (by Polars, then by the interpreter at its next
    # check, which may be any call here): each time it is absorbed and the check repeated.
    for _ in range(_RETRIES):
        try:
            interrupted, charged = settled(
                lambda f=failure: (  # type: ignore[misc]
                    isinstance(f, KeyboardInterrupt) or watch.seen,
                    acct.history[before:],
                )
            )
            break
        except KeyboardInterrupt:
            failure = KeyboardInterrupt()
    else:
        interrupted, charged = True, acct.history[before:]
    if not interrupted:
        raise failure
    where = f" in the ledger {ledger!r}" if ledger else ""
    if charged:
        cost = " + ".join(repr(e.cost) for e in charged)
        raise Interrupted(
            f"interrupted after the spend: the budget was charged {cost}{where} and nothing "
            "was released"
        ) from None
    raise Interrupted("interrupted before the spend: nothing was charged or released") from None


def _table(frame: Any, layout: str, width: int) -> str:
    """The released table as text: wide (Polars' own), or long when asked or when the wide
    table is wider than ``width``."""
    import polars as pl

    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=65_535, tbl_hide_dataframe_shape=True):
        wide = str(frame)
    too_wide = max((len(line) for line in wide.splitlines()), default=0) > width
    if layout == "wide" or (layout == "auto" and not too_wide):
        return wide
    return _long(frame)


def _long(frame: Any) -> str:
    """One row per (group, statistic): the key columns, then statistic, value, low, high.

    A statistic is a column ``S`` released with ``S_low`` and ``S_high``; every other column
    is part of the group's key (the key columns, a histogram's bin edges)."""
    cols = list(frame.columns)
    stats = [c for c in cols if f"{c}_low" in cols and f"{c}_high" in cols]
    shown = set(stats) | {f"{c}_{e}" for c in stats for e in ("low", "high")}
    keys = [c for c in cols if c not in shown]
    head = [*keys, "statistic", "value", "low", "high"]
    body = []
    for row in frame.iter_rows(named=True):
        key = [_cell(row[k]) for k in keys]
        for stat in stats:
            body.append(
                [*key, stat, *(_cell(row[c]) for c in (stat, f"{stat}_low", f"{stat}_high"))]
            )
    widths = [max([len(h)] + [len(r[i]) for r in body]) for i, h in enumerate(head)]
    left = len(keys) + 1  # keys and the statistic's name left-aligned, the figures right

    def line(cells: list[str]) -> str:
        return "  ".join(
            c.ljust(w) if i < left else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(head), rule, *(line(r) for r in body)])


def _cell(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, float):
        return f"{value:.8g}" if math.isfinite(value) else ("inf" if value > 0 else "-inf")
    return str(value)


def make_session(args: argparse.Namespace, owner: str, accountant: Any, **more: Any) -> Any:
    """The Session of ``dpkit query`` and ``dpkit sql``: the data, privacy unit, bounds on
    each unit's rows and groups, seed and schema from the shared options, spending from
    ``accountant``; ``more`` goes to :class:`dpkit.Session` as is."""
    import dpkit as dp

    return dp.Session(
        _data(args.data, args.engine),
        privacy_unit=args.unit,
        accountant=accountant,
        rng=args.seed,
        max_rows_per_unit=_max_rows(args.max_rows),
        max_groups_per_unit=args.max_groups,
        schema=schema_of(owner, args.schema),
        **more,
    )


def run(args: argparse.Namespace) -> int:
    check_delta_limit("query", args.delta)
    report = None if args.report is None else check_output("query: --report", args.report)
    aggs = _aggregates(args)
    if args.group_by is None and args.keys is not None:
        raise ParameterError("query: --keys needs --group-by")
    acct = _accountant(args)
    session = make_session(args, "query", acct)
    q = session.query()
    if args.group_by:
        by = _group_by(args.group_by)
        q = q.group_by(*by, keys=_keys(args, by))
    q = q.agg(*aggs)
    release = {"epsilon": args.epsilon, "delta": args.delta, "rho": args.rho, "alpha": args.alpha}
    if args.explain:
        plan = q.explain(**release)
        print(json.dumps({"plan": str(plan)}) if args.json else plan)
        return 0
    rel = _measure(q, release, acct, args.ledger)
    return print_release(rel, args, session, report)


def print_release(rel: Any, args: argparse.Namespace, session: Any, report: Path | None) -> int:
    """Print a released query (``dpkit query`` and ``dpkit sql``): its table, cost, key
    threshold and privately chosen parameters, or all of it as JSON with ``--json``; write
    the report first when one was asked for. Returns the exit status (0)."""
    args.interrupted = (
        f"interrupted while printing the release: the budget was charged {rel.privacy!r}; "
        "the output above may be incomplete"
    )
    if report is not None:  # before the output: a reader closing the pipe early loses nothing
        session.report(report)
    frame = _polars(rel.frame)
    if args.json:
        out = {
            "columns": frame.columns,
            # strict JSON has no inf or NaN: a sum past the float range is written null
            "rows": [[_json_number(v) for v in r] for r in frame.rows()],
            "privacy": repr(rel.privacy),
            "relation": rel.relation,
            "privacy_unit": rel.privacy_unit,
            "label": rel.label,
            "threshold": rel.threshold,
            "alpha": args.alpha,
            "bounds": {
                name: {
                    "bounds": list(b.bounds),
                    "clipped_fraction": b.clipped_fraction,
                    "fallback": b.fallback,
                }
                for name, b in rel.bounds.items()
            },
            "max_rows_per_unit": None if rel.contribution is None else rel.contribution.bound,
        }
        print(json.dumps(out, default=str, allow_nan=False))
        if report is not None:
            print(f"report written to {report}", file=sys.stderr)
        return 0
    print(_table(frame, args.layout, terminal_width()))
    print(
        f"privacy cost {rel.privacy!r} (add/remove one "
        f"{'row' if rel.privacy_unit is None else repr(rel.privacy_unit)}); "
        f"intervals at level {1 - args.alpha:g}"
    )
    if rel.threshold is not None:
        print(f"groups released only if their noisy count of units reached {rel.threshold}")
    for name, b in rel.bounds.items():
        frac = (
            "clipped at a private 0.1th/99.9th percentile (tail method)"
            if b.clipped_fraction is None
            else f"DP estimate of the fraction of values outside them {b.clipped_fraction:.3g}"
        )
        if b.fallback:
            print(
                f"{name}: public fallback bounds {b.bounds} (global): no bucket of the noisy "
                f"histogram passed its threshold (too few values for the noise); {frac}"
            )
            continue
        print(f"{name}: bounds chosen privately {b.bounds} (global); {frac}")
    if rel.contribution is not None:
        print(f"max_rows_per_unit chosen privately: {rel.contribution.bound}")
    if report is not None:
        print(f"report written to {report}")
    return 0
