"""The engine side of a release: bounding and aggregation, run in the user's engine.

The validated query (:class:`Context`), its rows bounded per privacy unit with a fresh
secret salt (:func:`fresh_salt`, :func:`bounded_rows`), and every aggregation a release
needs (:func:`aggregate`: the exact per-group figures, never released). Only aggregated
frames (one row per group, or per group and bucket/bin) leave the engine; the noise is
drawn in Python (``session/_draw.py``).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import narwhals as nw
import numpy as np
import polars as pl

from dpkit.errors import DPError, ParameterError
from dpkit.samplers import uniform_int
from dpkit.session._specs import (
    CleanColumns,
    DistinctUnits,
    Rows,
    Summed,
    aggregation,
    digits,
    split_for,
)
from dpkit.session.aggregates import Aggregate, Histogram, Quantile
from dpkit.session.engines import Engine

if TYPE_CHECKING:
    from dpkit.session._plan import Plan

__all__ = [
    "RESERVED",
    "Aggregated",
    "Context",
    "Guarded",
    "after_spend",
    "aggregate",
    "aggregate_table",
    "bounded_rows",
    "canonical_floats",
    "fresh_salt",
    "grid_counts",
    "grid_groups",
    "grid_keys",
    "histogram_counts",
    "keys_only",
    "summed_columns",
    "table_clean",
]

#: The prefix of every working column dpkit adds to a query (a Session refuses data columns
#: that start with it, so that none can clash with a key, a unit or a statistic's column).
RESERVED = "__dpkit"
_ROW_RANK = "__dpkit_row_rank"
_GROUP_RANK = "__dpkit_group_rank"
SELECT = "__dpkit_select"
BUCKET = "__dpkit_bucket"


@dataclass(frozen=True)
class Context:
    """The validated inputs of one query run (all public)."""

    engine: Engine
    frame: nw.LazyFrame[Any]  # filtered, on the user's engine
    schema: Any
    unit: str | None
    max_rows: int
    max_groups: int
    by: tuple[str, ...]
    keys: pl.DataFrame | None  # public keys, or None for private selection
    aggregates: tuple[Aggregate, ...]
    #: the Session's whole table (unfiltered) and what is known of its columns: column ->
    #: its (min, max) if it has no null and no NaN, else None, and the table's rows under
    #: "__dpkit_len" (filled by :func:`table_clean`, once per Session and column); None
    #: when the engine's data may change between releases (checked in every release)
    table: nw.LazyFrame[Any] | None = None
    known_clean: dict[str, tuple[Any, Any] | None] | None = field(default_factory=dict)

    def used_columns(self) -> list[str]:
        cols: list[str] = []
        for c in [self.unit, *self.by, *(a.column for a in self.aggregates)]:
            if c is not None and c not in cols:
                cols.append(c)
        return cols


_ONE = "__dpkit_one"


def canonical_floats(lf: nw.LazyFrame[Any], schema: Any, names: list[str]) -> nw.LazyFrame[Any]:
    """Float ``names`` (privacy unit, group keys) with one bit pattern per value: -0.0 as
    0.0, every NaN as the positive quiet NaN.

    Engines group -0.0 with 0.0 and every NaN together, but the key they output carries the
    bits of one of the group's rows (the first, on Polars, pandas, PyArrow and DuckDB): a
    privately selected key would then tell whether one record holds -0.0 or a negative NaN,
    an output bit with no noise on it. Canonical keys depend on the group only. Which
    columns are floats is read from ``lf`` itself (a pandas privacy unit keeps its NumPy
    integers, exact beyond ``2**53``, whatever its public type).
    """
    exprs = []
    floats = [c for c in dict.fromkeys(names) if schema[c].is_float()]
    physical = lf.collect_schema() if floats else {}
    for c in floats:
        dtype = physical[c]
        if not dtype.is_float():
            continue
        col = nw.col(c)
        nan = nw.when(col.is_nan()).then(nw.lit(float("nan"), dtype)).otherwise(col)
        exprs.append(nw.when(col == 0).then(nw.lit(0.0, dtype)).otherwise(nan).alias(c))
    return lf.with_columns(*exprs) if exprs else lf


def bounded_rows(ctx: Context, salt: tuple[int, ...] | None) -> nw.LazyFrame[Any]:
    """The rows that enter the aggregates, after per-unit contribution bounding.

    With a privacy unit: first each unit keeps at most ``max_groups`` of its groups (dense rank
    of a salted hash of (unit, group key), ties broken by the key, so distinct groups never
    share a rank), then at most ``max_rows`` of its remaining rows (ordinal rank of a salted
    hash of the row's used columns, ties broken by those columns, so only identical rows tie).
    Each unit's kept rows depend on its own rows and the salt only, so removing a unit changes
    nothing else: the sensitivities hold for any selection rule, and the fresh secret salt only
    makes the choice uniformly random instead of systematically biased.
    """
    cols = ctx.used_columns()
    if cols:
        # only the used columns; an engine that prunes the others itself is spared the
        # projection when no window follows (on Spark a new frame costs calls to the JVM)
        lf = ctx.frame
        if ctx.unit is not None or not ctx.engine.prunes_columns:
            lf = lf.select(*cols)
        lf = canonical_floats(lf, ctx.schema, [c for c in (ctx.unit, *ctx.by) if c is not None])
    else:
        # no column is read (a bare count): a literal must be attached to every row, because
        # select(lit) alone is one row on some engines
        lf = ctx.frame.with_columns(nw.lit(1).alias(_ONE)).select(_ONE)
    if ctx.unit is None:
        return lf
    assert salt is not None
    unit = ctx.unit
    if ctx.by and ctx.max_groups < ctx.max_rows:
        lf = ctx.engine.with_rank(
            lf,
            partition=unit,
            hash_columns=[unit, *ctx.by],
            tie_columns=list(ctx.by),
            salt=salt[:2],
            method="dense",
            name=_GROUP_RANK,
        )
        lf = lf.filter(nw.col(_GROUP_RANK) <= ctx.max_groups).drop(_GROUP_RANK)
    lf = ctx.engine.with_rank(
        lf,
        partition=unit,
        hash_columns=cols,
        tie_columns=[c for c in cols if c != unit],
        salt=salt[2:],
        method="ordinal",
        name=_ROW_RANK,
    )
    return lf.filter(nw.col(_ROW_RANK) <= ctx.max_rows).drop(_ROW_RANK)


_T = TypeVar("_T")


class Guarded(Engine):
    """``engine`` with its :meth:`collect` guarded: a failure of the
    engine becomes a ParameterError naming the error's type but not its message, because an
    engine's message can quote values of the data (a cast of ``"x9"`` to an integer, say),
    which a release never reveals; the original error is neither shown nor chained. dpkit's
    own errors pass unchanged. Every other method is ``engine``'s. Queries run on a guarded
    engine (:meth:`dpkit.session.Query.release`), so a step of the caller's own plan that
    fails on some values, after the spend, says so without quoting them."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.name = engine.name
        self.accepts = engine.accepts
        self.prunes_columns = engine.prunes_columns

    def matches(self, data: Any) -> bool:
        return self.engine.matches(data)

    def to_lazy(self, data: Any) -> nw.LazyFrame[Any]:
        return self.engine.to_lazy(data)

    def with_rank(self, frame: nw.LazyFrame[Any], **kw: Any) -> nw.LazyFrame[Any]:
        return self.engine.with_rank(frame, **kw)

    def snapshot(self, data: Any) -> bool:
        return self.engine.snapshot(data)

    def output(
        self,
        frame: pl.DataFrame,
        like: nw.LazyFrame[Any] | None = None,
        keys: tuple[str, ...] = (),
    ) -> Any:
        return self.engine.output(frame, like=like, keys=keys)

    def check_column(self, owner: str, name: str, role: str, dtype: Any = None) -> None:
        self.engine.check_column(owner, name, role, dtype)

    def check_declared(self, owner: str, name: str, dtype: Any) -> None:
        self.engine.check_declared(owner, name, dtype)

    def public_schema(self, frame: nw.LazyFrame[Any]) -> dict[str, Any]:
        return self.engine.public_schema(frame)

    def with_types(self, frame: nw.LazyFrame[Any], schema: dict[str, Any]) -> nw.LazyFrame[Any]:
        return self.engine.with_types(frame, schema)

    def where(
        self, frame: nw.LazyFrame[Any], conditions: list[nw.Expr], schema: dict[str, Any]
    ) -> nw.LazyFrame[Any]:
        return self.engine.where(frame, conditions, schema)

    def converted(
        self, frame: nw.LazyFrame[Any], columns: dict[str, nw.Expr], schema: dict[str, Any]
    ) -> nw.LazyFrame[Any]:
        return self.engine.converted(frame, columns, schema)

    def without_rows(self, frame: nw.LazyFrame[Any]) -> nw.LazyFrame[Any]:
        return self.engine.without_rows(frame)

    def read_as_text(self, data: Any, frame: nw.LazyFrame[Any]) -> frozenset[str]:
        return self.engine.read_as_text(data, frame)

    def changes(self, data: Any) -> bool:
        return self.engine.changes(data)

    def ambiguous_columns(self, frame: nw.LazyFrame[Any]) -> frozenset[str]:
        return self._guarded(lambda: self.engine.ambiguous_columns(frame))

    def with_bins(
        self, frame: nw.LazyFrame[Any], column: str, edges: tuple[float, ...], name: str
    ) -> nw.LazyFrame[Any]:
        return self._guarded(lambda: self.engine.with_bins(frame, column, edges, name))

    def with_categories(
        self, frame: nw.LazyFrame[Any], column: str, categories: tuple[Any, ...], name: str
    ) -> nw.LazyFrame[Any]:
        return self._guarded(lambda: self.engine.with_categories(frame, column, categories, name))

    def aggregate(
        self, frame: nw.LazyFrame[Any], by: list[str], aggs: list[tuple[str, str, str | None]]
    ) -> nw.LazyFrame[Any]:
        return self._guarded(lambda: self.engine.aggregate(frame, by, aggs))

    def collect(self, frame: nw.LazyFrame[Any]) -> pl.DataFrame:
        return self._guarded(lambda: self.engine.collect(frame))

    @staticmethod
    def _guarded(run: Callable[[], _T], what: str = "the engine failed") -> _T:
        failed = None
        try:
            return run()
        except (DPError, MemoryError):
            raise
        except Exception as err:  # the engine's own error types
            failed = type(err).__name__
        raise ParameterError(  # outside the handler: the engine's error is not chained
            f"Session: {what} ({failed}) while running the query; its message is "
            "not shown because it can quote values of the data. The usual causes are a filter "
            "that cannot be evaluated on some rows (a comparison of mismatched types, a cast "
            "that fails on some value) and a column the engine cannot read as its declared "
            "type (a CSV column whose type was guessed from its first rows): check the "
            "query's filters and the data's types"
        )


def after_spend(run: Callable[[], _T]) -> _T:
    """``run()``, the part of a release that follows its spend, with any error that is not
    dpkit's own turned into a ParameterError naming only its type: engines that evaluate
    eagerly (pandas) raise while the query is built, outside :class:`Guarded`'s collect,
    and their messages can quote values of the data. NumPy's floating-point warnings are
    silenced while it runs (a second line of defence: row operations are total, but a
    warning one value triggers would be an outcome with no noise on it)."""

    def quiet() -> _T:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return run()

    return Guarded._guarded(quiet, "the release failed after its spend")


def _plain_keys(frame: pl.DataFrame, by: tuple[str, ...]) -> pl.DataFrame:
    """Categorical/enum keys as strings, so that every engine sorts them the same way."""
    casts = [
        pl.col(c).cast(pl.String)
        for c in by
        if isinstance(frame.schema[c], pl.Categorical | pl.Enum)
    ]
    return frame.with_columns(casts) if casts else frame


def _with_keys(agg: pl.DataFrame, ctx: Context, stats: list[str]) -> pl.DataFrame:
    """Restrict to the public keys (empty groups as zeros), or keep the data's groups; sorted."""
    by = list(ctx.by)
    agg = _plain_keys(agg, ctx.by)
    if ctx.keys is not None:
        keys = _plain_keys(ctx.keys, ctx.by)
        try:
            keys = keys.with_columns([pl.col(c).cast(agg.schema[c]) for c in by])
        except pl.exceptions.PolarsError as err:
            raise ParameterError(
                f"group_by: the public `keys` do not match the data's key types "
                f"({dict(agg.select(by).schema)}): {err}"
            ) from None
        agg = keys.join(agg, on=by, how="left", nulls_equal=True)
        agg = agg.with_columns([pl.col(c).fill_null(0) for c in stats])
    return agg.sort(by, nulls_last=True, maintain_order=True) if by else agg


def aggregate_table(
    ctx: Context,
    rows: nw.LazyFrame[Any],
    columns: dict[str, Any],
    size: int | None = None,
    cut: tuple[str, int] | None = None,
) -> pl.DataFrame:
    """The per-group figures of ``columns`` (:mod:`dpkit.session._specs`), one row per
    group, sorted by key; public keys restrict and complete the groups.

    The row-level columns are computed first and only plain sums and counts are aggregated,
    so every engine (pandas included) runs a native group-by. ``size`` bounds the rows of
    any group (the table's, from :func:`table_clean`; None: unknown): a sum whose float64
    total could pass ``2**53`` at that size is summed as its digits (Int64 sums,
    :func:`dpkit.session._specs.split_for`) and recombined exactly in Int128, so no size of
    table makes a figure inexact, or a release fail after its spend. ``cut = (column, t)``
    keeps, inside the engine, only the groups whose ``column`` is at least ``t`` (private
    keys' pre-threshold: the other candidates never reach Python).
    """
    top = size if size is not None else 2**62
    row_exprs: list[nw.Expr] = []
    aggs: list[tuple[str, str, str | None]] = []
    splits: dict[str, tuple[int, int]] = {}
    for k, spec in columns.items():
        split = split_for(top, spec.bound) if isinstance(spec, Summed) else None
        if isinstance(spec, Summed):
            row_exprs.append(spec.expr.alias(k))
        if split is None:
            aggs.append(aggregation(k, spec))
            continue
        splits[k] = split
        aggs.extend((f"{k}{_DIGIT}{j}", "sum", f"{k}{_DIGIT}{j}") for j in range(split[1]))
    lf = rows.with_columns(*row_exprs) if row_exprs else rows
    if splits:  # the digits of the row column computed above (each reads it twice)
        lf = lf.with_columns(
            d.alias(f"{k}{_DIGIT}{j}")
            for k, split in splits.items()
            for j, d in enumerate(digits(nw.col(k), *split))
        )
    grouped = ctx.engine.aggregate(lf, list(ctx.by), aggs)
    if cut is not None and cut[1] > 1:
        grouped = grouped.filter(nw.col(cut[0]) >= cut[1])
    agg = ctx.engine.collect(grouped)
    if splits:  # each digit sum is below 2**62; their combination, exact in Int128
        agg = agg.with_columns(
            pl.sum_horizontal(
                pl.col(f"{k}{_DIGIT}{j}").fill_null(0).cast(pl.Int128)
                * pl.lit(2 ** (bits * j), dtype=pl.Int128)
                for j in range(count)
            ).alias(k)
            for k, (bits, count) in splits.items()
        ).drop(f"{k}{_DIGIT}{j}" for k, (_, count) in splits.items() for j in range(count))
    # integer-valued float sums below 2**53 and counts: exact as Int64
    agg = agg.with_columns(
        [pl.col(k).fill_null(0).cast(pl.Int128 if k in splits else pl.Int64) for k in columns]
    )
    centred = [
        (pl.col(k) - pl.col(spec.count).cast(pl.Int128) * spec.centre).alias(k)
        if k in splits
        else (pl.col(k) - spec.centre * pl.col(spec.count)).alias(k)
        for k, spec in columns.items()
        if isinstance(spec, Summed) and spec.centre and spec.count is not None
    ]
    if centred:  # in Int64 while |sum|, |centre * count| <= 2**53, else in Int128: exact
        agg = agg.with_columns(centred)
    return _with_keys(agg, ctx, list(columns))


_DIGIT = "__dpkit_digit"


_LEN = "__dpkit_len"
_COUNT = "__dpkit_count_"
_PROBE = "__dpkit_probe_"
_MIN = "__dpkit_min_"
_MAX = "__dpkit_max_"


def summed_columns(ctx: Context) -> list[str]:
    """The numeric columns whose values the aggregates map to the lattice (sorted)."""
    from dpkit.session.aggregates import Count, Histogram

    return sorted(
        {a.column for a in ctx.aggregates if a.column and not isinstance(a, Count | Histogram)}
    )


def _probes(ctx: Context, cols: list[str]) -> list[nw.Expr]:
    """Aggregations telling whether a column has a null or a NaN, and its range.

    ``len - count`` is its number of missing values (nulls; pandas counts NaN as missing
    too), and a float column's plain sum is NaN (or null, where an engine hands NaN out as
    null) as soon as one of its values is NaN: NaN propagates through every addition. The
    sum may also be NaN without a NaN value (``inf + -inf``); the column then counts as
    having one, which only costs the masking. ``min`` and ``max`` are read only for a column
    with neither.
    """
    probes = [nw.len().alias(_LEN)]
    for i, c in enumerate(cols):
        probes.append(nw.col(c).count().alias(f"{_COUNT}{i}"))
        probes.append(nw.col(c).min().alias(f"{_MIN}{i}"))
        probes.append(nw.col(c).max().alias(f"{_MAX}{i}"))
        if ctx.schema[c].is_float():
            probes.append(nw.col(c).sum().alias(f"{_PROBE}{i}"))
    return probes


def _spans(agg: pl.DataFrame, cols: list[str]) -> dict[str, tuple[Any, Any] | None]:
    """Per column of ``cols``: ``(min, max)`` if :func:`_probes` found no null and no NaN
    in it, else None."""
    got = agg.row(0, named=True)
    out: dict[str, tuple[Any, Any] | None] = {}
    for i, c in enumerate(cols):
        bad = int(got[f"{_COUNT}{i}"]) != int(got[_LEN])
        probe = got.get(f"{_PROBE}{i}", 0.0)
        bad = bad or probe is None or math.isnan(float(probe))
        out[c] = None if bad else (got[f"{_MIN}{i}"], got[f"{_MAX}{i}"])
    return out


def table_clean(ctx: Context, cols: list[str]) -> CleanColumns:
    """The columns of ``cols`` with no null and no NaN in the Session's whole table, with
    their ranges (``.spans``).

    Checked once per Session and column (one engine pass for the columns not yet known,
    cached in ``ctx.known_clean``) when the Session's data is a snapshot no later change can
    reach (:meth:`~dpkit.session.engines.Engine.snapshot`: a Polars DataFrame, a PyArrow
    Table); otherwise (pandas, DuckDB, files, Spark: data that may change between releases)
    on the query's filtered rows in every release, one pass before the aggregation, as
    before. Any rows of a clean table are clean, whatever the filter and the bounding keep,
    so their lattice map needs no masking, and if the table's values lie inside an
    aggregate's clip bounds, no clip either; a column with a null or a NaN somewhere is
    masked. Masking a column that has none, or clipping values already inside the bounds,
    changes no record's units: the released values are the same either way, and so is
    every privacy guarantee (the function of the data computed is the same). The range is
    used for that choice only; it is never released.
    """
    known = {} if ctx.known_clean is None else ctx.known_clean
    table = ctx.frame if ctx.table is None or ctx.known_clean is None else ctx.table
    todo = [c for c in cols if c not in known]
    if todo:
        with np.errstate(over="ignore", invalid="ignore"):  # a probe sum may overflow: inf
            agg = ctx.engine.collect(table.select(*_probes(ctx, todo)))
        known.update(_spans(agg, todo))
        known[_LEN] = (int(agg[_LEN][0]), None)  # the table's rows
    clean = [c for c in cols if known[c] is not None]
    spans = {c: span for c in clean if (span := known[c]) is not None}
    rows = known.get(_LEN)
    return CleanColumns(clean, spans, int(rows[0]) if rows is not None else None)


def keys_only(ctx: Context) -> pl.DataFrame:
    """The groups when no statistic needs the main table: the public keys, or one total."""
    if ctx.keys is not None:
        return _plain_keys(ctx.keys, ctx.by).sort(list(ctx.by), nulls_last=True)
    return pl.DataFrame({"__dpkit_total": [0]})


def grid_groups(ctx: Context) -> int | None:
    """A public bound on the groups whose grid counts reach Python, or None if there is none.

    One without a group-by. With public keys on integer, string or boolean columns (whose
    membership every engine tests exactly), the number of combinations of the keys' values
    in each column, when it is small enough to refine the grid (:func:`grid_keys` then keeps
    only those rows in the engine's count; a longer list would only make a long literal
    filter for no finer grid). None otherwise: private keys (the groups come from the data),
    other key types, many keys; the grid is then the coarsest.
    """
    from dpkit.session._kinds import QUANTILE_CELLS, QUANTILE_MIN_BITS, quantile_bits

    if not ctx.by:
        return 1
    if ctx.keys is None:
        return None
    groups = 1
    for c in ctx.by:
        dtype = ctx.schema[c]
        if not (dtype.is_integer() or isinstance(dtype, nw.String | nw.Boolean)):
            return None
        groups *= ctx.keys[c].n_unique()
        if groups > QUANTILE_CELLS:
            return None
    return groups if quantile_bits(groups) > QUANTILE_MIN_BITS else None


def grid_keys(ctx: Context) -> nw.Expr:
    """True on the rows whose key columns each hold one of the public keys' values (every
    public group's rows, and no row of a group with a value outside them): what
    :func:`grid_groups` counts. Public values only; a release drops the other groups anyway,
    so the filter changes no released value, only what the engine hands Python."""
    assert ctx.keys is not None
    cond: nw.Expr | None = None
    for c in ctx.by:
        values = ctx.keys[c].unique()
        inside = nw.col(c).is_in(values.drop_nulls().to_list())
        if values.null_count():
            inside = inside | nw.col(c).is_null()
        cond = inside if cond is None else cond & inside
    assert cond is not None
    return cond


def grid_counts(ctx: Context, rows: nw.LazyFrame[Any], agg: Quantile) -> pl.DataFrame:
    """Counts of the column's grid points per group: (keys..., bucket units, count).

    The grid is ``agg.grid(grid_groups(ctx))``: a public resolution, so the counts are the
    histogram of a per-record map (each record's grid point depends on that record alone)
    over the bounded rows, and at most ``2**bits + 1`` rows per group reach Python."""
    assert agg.column is not None
    groups = grid_groups(ctx)
    grid = agg.grid(groups)
    valid = grid.valid(agg.column, ctx.schema[agg.column])
    off = grid.offsets(agg.column, valid, agg.fill)
    lf = rows if agg.fill is not None else rows.filter(valid)
    if ctx.by and groups is not None:
        lf = lf.filter(grid_keys(ctx))
    lf = lf.with_columns((off + float(grid.centre)).alias(BUCKET))
    by = [*ctx.by, BUCKET]
    out = ctx.engine.collect(ctx.engine.aggregate(lf, by, [("__dpkit_n", "len", None)]))
    out = _plain_keys(out, ctx.by).with_columns(pl.col(BUCKET).cast(pl.Int64))
    return out.sort(by, nulls_last=True)


def histogram_counts(ctx: Context, rows: nw.LazyFrame[Any], agg: Histogram) -> pl.DataFrame:
    """Counts per (group, bin): (keys..., bin, count) for the bins that occur."""
    assert agg.column is not None
    if agg.edges is None:  # categories: the engine's lookup, null for the other values
        cats = tuple(agg.categories or ())
        lf = ctx.engine.with_categories(rows, agg.column, cats, BUCKET)
        lf = lf.filter(~nw.col(BUCKET).is_null())
    else:  # numeric edges: the engine's own search
        lf = rows.filter(agg.bin_expr(ctx.schema))
        lf = ctx.engine.with_bins(lf, agg.column, agg.edges, BUCKET)
    by = [*ctx.by, BUCKET]
    out = ctx.engine.collect(ctx.engine.aggregate(lf, by, [("__dpkit_n", "len", None)]))
    return _plain_keys(out, ctx.by)


def column_arrays(frame: pl.DataFrame, names: list[str]) -> dict[str, np.ndarray]:
    """Integer statistic columns as NumPy arrays, exactly: int64, or Python ints (object)
    for a column summed by digits whose values leave int64."""
    out = {}
    for k in names:
        col = frame[k]
        if col.dtype == pl.Int128:
            fits = col.len() == 0 or (col.abs().max() < 2**62)  # type: ignore[operator]
            out[k] = (
                col.cast(pl.Int64).to_numpy() if fits else np.asarray(col.to_list(), dtype=object)
            )
        else:
            out[k] = col.to_numpy().astype(np.int64)
    return out


def fresh_salt(ctx: Context, source: Any) -> tuple[int, ...] | None:
    """The secret salt of one release's bounding (``None`` without a privacy unit): four
    uniform 63-bit words, drawn fresh from ``source`` for every release."""
    salt = None
    if ctx.unit is not None:
        salt = tuple(int(v) for v in uniform_int(2**63, 4, source))
    return salt


@dataclass(frozen=True)
class Aggregated:
    """The exact per-group figures of one bounded table (inputs of the noise; never released).

    ``table`` has one row per group (keys sorted, public keys completed) and the statistic
    columns; ``arrays`` holds those columns as int64 arrays; ``grids`` and ``hists`` hold the
    grid counts of each quantile aggregate and the bin counts of each histogram.
    """

    table: pl.DataFrame
    arrays: dict[str, np.ndarray]
    grids: tuple[pl.DataFrame, ...]
    hists: tuple[pl.DataFrame, ...]


def aggregate(ctx: Context, plan: Plan, rows: nw.LazyFrame[Any]) -> Aggregated:
    """Every engine aggregation the release needs, on the bounded ``rows``.

    With private keys, the groups whose exact selection count is below the plan's
    pre-threshold are dropped in the engine (:func:`dpkit.session._plan.selection_threshold`):
    only candidates at or above the cut reach Python."""
    columns: dict[str, Any] = {}
    named: dict[str, list[str]] = {}
    clean = table_clean(ctx, summed_columns(ctx))
    for i, a in enumerate(ctx.aggregates):
        cols = a.columns(ctx.schema, f"__dpkit_a{i}_", clean)
        if cols:
            columns.update(cols)
            named[a.name] = list(cols)
    sel = plan.selection
    cut = None
    if sel is not None:
        if sel.reuse is None:
            columns[SELECT] = Rows() if ctx.unit is None else DistinctUnits(ctx.unit)
            cut = (SELECT, sel.cut)
        else:  # the count of one row per unit: its first (only) column
            cut = (named[sel.reuse][0], sel.cut)
    table = aggregate_table(ctx, rows, columns, clean.rows, cut) if columns else keys_only(ctx)
    return Aggregated(
        table,
        column_arrays(table, list(columns)),
        tuple(grid_counts(ctx, rows, a) for a in ctx.aggregates if isinstance(a, Quantile)),
        tuple(histogram_counts(ctx, rows, a) for a in ctx.aggregates if isinstance(a, Histogram)),
    )
