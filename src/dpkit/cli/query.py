"""``dpkit query``: a differentially private table from a CSV or Parquet file.

Examples::

    dpkit query adult --epsilon 1 --group-by Education --keys education.csv --count
    dpkit query data.csv --epsilon 1 --delta 1e-6 --unit pid --max-rows 5 --max-groups 2 \\
        --group-by Sex --count --mean Age:0:100 --median "Hours per week":0:100
    dpkit query data.parquet --epsilon 1 --count --explain
    dpkit query data.parquet --engine spark --epsilon 1 --group-by Sex --keys sex.csv --count

``DATA`` is a .csv or .parquet path, or ``adult`` for the bundled UCI Adult table. Aggregates
are written ``COLUMN:LOWER:UPPER`` (``--quantile COLUMN:Q1,Q2:LOWER:UPPER``, ``--histogram
COLUMN:E0,E1,...``); a column name may itself contain colons, since the fields are split
from the right. ``--sum/--mean/--var/--std COLUMN:auto`` chooses the bounds privately with
half of that aggregate's budget (``bounds="auto"``; the chosen bounds and the DP clipped
fraction are printed; ``COLUMN:tail`` chooses them at a private 0.1th and 99.9th percentile
instead, ``bounds_method="tail"``, for heavy-tailed columns), and ``--max-rows auto``
chooses the rows kept per unit privately with a tenth of the release's budget::

    dpkit query adult --epsilon 1 --mean Age:auto --std "Hours per week":auto
    dpkit query data.csv --epsilon 1 --unit pid --max-rows auto --count

An option that takes one value may be given once: ``--histogram A --histogram B`` is a usage
error (a histogram is released in a query of its own), as is a second ``--epsilon``,
``--unit``, ``--ledger``, ... (:class:`dpkit.cli._args.Once`). ``--delta`` is at most 1/2
(:data:`dpkit.cli._args.MAX_DELTA`: above it, delta is above 1/n for every table of two or
more people), and should be far below 1/n.

``--engine spark`` reads the file with a local Spark (``local[2]``, 127.0.0.1, see
:func:`dpkit.session.engines.spark.local_session`) and runs the query there; only the
aggregates and the released table come back. On a cluster, use the Python API under
``spark-submit`` (docs/guides/spark.md, "The Session on Spark").
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from dpkit.cli._args import Once, check_delta_limit, once_each
from dpkit.errors import ParameterError

__all__ = ["register"]

_BOUNDED = ("sum", "mean", "var", "std", "median")
ENGINES = ("polars", "spark")


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
    p.add_argument("--epsilon", type=float, default=None, help="epsilon of this release (> 0)")
    p.add_argument(
        "--delta",
        type=float,
        default=0.0,
        help="delta (default 0: pure DP), at most 1/2 and far below 1/n for n people",
    )
    p.add_argument("--rho", type=float, default=None, help="a zCDP release instead of epsilon")
    p.add_argument("--alpha", type=float, default=0.05, help="intervals at level 1 - alpha")
    p.add_argument("--unit", default=None, help="column naming the person (privacy unit)")
    p.add_argument(
        "--max-rows",
        default=None,
        metavar="K",
        help="rows kept per unit (an int), or 'auto' to choose it privately",
    )
    p.add_argument("--max-groups", type=int, default=None, help="groups kept per unit")
    p.add_argument("--group-by", default=None, help="comma-separated key columns")
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
        metavar="COL:E0,E1,...",
        help="counts per bin of a column (numeric edges), alone in its query (once)",
    )
    p.add_argument("--ledger", default=None, help="spend from this ledger (dpkit budget init)")
    p.add_argument("--seed", type=int, default=None, help="reproducible noise (NOT private)")
    p.add_argument(
        "--json", action="store_true", help="print JSON (a value past the float range is null)"
    )
    p.add_argument("--explain", action="store_true", help="print the plan; spend nothing")
    p.set_defaults(func=run)


def _number(text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ParameterError(f"query: {what} must be a number; got {text!r}") from None
    return value


def _bounded(spec: str, flag: str) -> tuple[str, tuple[float, float] | str]:
    col, _, last = spec.rpartition(":")
    if flag != "median" and last in ("auto", "tail") and col:
        return col, last
    parts = spec.rsplit(":", 2)
    if len(parts) != 3 or not parts[0]:
        raise ParameterError(f"query: --{flag} takes COLUMN:LOWER:UPPER; got {spec!r}")
    col, lo, hi = parts
    return col, (_number(lo, f"--{flag} lower"), _number(hi, f"--{flag} upper"))


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
            col, bounds = _bounded(spec, name)
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
        col, _, edges = args.histogram.rpartition(":")
        if not col:
            raise ParameterError(
                f"query: --histogram takes COLUMN:E0,E1,...; got {args.histogram!r}"
            )
        aggs.append(dp.histogram(col, bins=[_number(e, "a bin edge") for e in edges.split(",")]))
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
    """The file as a Spark DataFrame, read by a local Spark (nothing read by Python)."""
    from dpkit.session.engines.spark import local_session

    suffix = path.suffix.lower()
    if suffix not in (".csv", ".parquet", ".pq"):
        raise ParameterError(
            f"query: --engine spark reads .csv or .parquet files; got {str(path)!r}"
        )
    spark = local_session(app_name="dpkit query")
    if suffix == ".csv":
        return spark.read.csv(str(path), header=True, inferSchema=True)
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


def _keys(args: argparse.Namespace, by: list[str]) -> Any:
    if args.keys is None:
        return None
    import polars as pl

    try:
        frame = pl.read_csv(args.keys, infer_schema_length=10_000)
    except (pl.exceptions.PolarsError, OSError) as err:  # the message may quote the file
        raise ParameterError(
            f"query: cannot read the --keys file {args.keys!r} as CSV ({type(err).__name__})"
        ) from None
    missing = [c for c in by if c not in frame.columns]
    if missing:
        raise ParameterError(f"query: the --keys file lacks column(s) {missing}")
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


def run(args: argparse.Namespace) -> int:
    import polars as pl

    import dpkit as dp

    check_delta_limit("query", args.delta)
    aggs = _aggregates(args)
    if args.group_by is None and args.keys is not None:
        raise ParameterError("query: --keys needs --group-by")
    acct = _accountant(args)
    session = dp.Session(
        _data(args.data, args.engine),
        privacy_unit=args.unit,
        accountant=acct,
        rng=args.seed,
        max_rows_per_unit=_max_rows(args.max_rows),
        max_groups_per_unit=args.max_groups,
    )
    q = session.query()
    if args.group_by:
        by = [c.strip() for c in args.group_by.split(",") if c.strip()]
        q = q.group_by(*by, keys=_keys(args, by))
    q = q.agg(*aggs)
    release = {"epsilon": args.epsilon, "delta": args.delta, "rho": args.rho, "alpha": args.alpha}
    if args.explain:
        plan = q.explain(**release)
        print(json.dumps({"plan": str(plan)}) if args.json else plan)
        return 0
    rel = q.measure(**release)
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
                name: {"bounds": list(b.bounds), "clipped_fraction": b.clipped_fraction}
                for name, b in rel.bounds.items()
            },
            "max_rows_per_unit": None if rel.contribution is None else rel.contribution.bound,
        }
        print(json.dumps(out, default=str, allow_nan=False))
        return 0
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=240, tbl_hide_dataframe_shape=True):
        print(frame)
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
        print(f"{name}: bounds chosen privately {b.bounds} (global); {frac}")
    if rel.contribution is not None:
        print(f"max_rows_per_unit chosen privately: {rel.contribution.bound}")
    return 0
