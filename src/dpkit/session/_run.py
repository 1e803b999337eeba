"""Executing a planned query: engine aggregation, then noise in a fixed order."""

from __future__ import annotations

from typing import Any

import narwhals as nw
import numpy as np
import polars as pl

from dpkit.accounting import ZCDP, PrivacyLoss, PureDP
from dpkit.errors import ParameterError
from dpkit.mechanisms import Release
from dpkit.session import _execute as ex
from dpkit.session._plan import Plan
from dpkit.session._specs import DistinctUnits, Rows
from dpkit.session.aggregates import Histogram, Quantile
from dpkit.session.result import QueryRelease

__all__ = ["execute", "statistics_layer"]


def statistics_layer() -> Any:
    try:
        import dpkit.statistics as statistics
    except ImportError:  # pragma: no cover - depends on the statistics layer landing
        raise ParameterError(
            "dp.median / dp.quantile need dpkit.statistics.quantiles_from_counts, which this "
            "build of dpkit does not have yet"
        ) from None
    return statistics


def execute(
    ctx: ex.Context, plan: Plan, rows: nw.LazyFrame[Any], source: Any, label: str, engine: Any
) -> QueryRelease:
    """Aggregate in the engine, then draw the noise: groups sorted by key, a fixed draw order
    (the selection count, then each aggregate's statistics in order), so a seed reproduces a
    release on every engine."""
    budget = plan.budget
    assert budget is not None
    columns: dict[str, Any] = {}
    clean = ex.clean_columns(ctx, rows)
    for i, a in enumerate(ctx.aggregates):
        if hasattr(a, "columns"):
            columns.update(a.columns(ctx.schema, f"__a{i}_", clean))
    sel = plan.selection
    if sel is not None and sel.reuse is None:
        columns[ex.SELECT] = Rows() if ctx.unit is None else DistinctUnits(ctx.unit)
    table = ex.aggregate_table(ctx, rows, columns) if columns else ex.keys_only(ctx)
    arrays = ex.column_arrays(table, list(columns))
    parts: dict[str, list[Any]] = {}
    for p in plan.parts:
        parts.setdefault(p.aggregate, []).append(p)
    stats = {
        a.name: a.statistics(arrays, f"__a{i}_")  # type: ignore[attr-defined]
        for i, a in enumerate(ctx.aggregates)
        if not isinstance(a, Quantile | Histogram)
    }
    kept = np.arange(table.height)
    noisy: dict[str, list[np.ndarray]] = {}
    if sel is not None:
        if sel.reuse is None:
            selection = sel.noise.draw(arrays[ex.SELECT], source)
        else:
            selection = parts[sel.reuse][0].noise.draw(stats[sel.reuse][0], source)
        kept = np.flatnonzero(selection >= sel.threshold)
        if sel.reuse is not None:
            noisy[sel.reuse] = [selection[kept]]
    releases: dict[str, Release] = {}
    out: dict[str, Any] = {c: table[c].gather(kept) for c in ctx.by}
    for a in ctx.aggregates:
        if isinstance(a, Quantile | Histogram):
            continue
        vals = noisy.get(a.name) or [
            p.noise.draw(stat[kept], source)
            for p, stat in zip(parts[a.name], stats[a.name], strict=True)
        ]
        for p, v in zip(parts[a.name], vals, strict=True):
            releases[f"{a.name}: {p.part.label}"] = _part_release(p, v, budget.noise)
        halves = [p.half_width for p in parts[a.name]]
        out.update(a.finish(vals, halves, plan.alpha))  # type: ignore[attr-defined]
    frame = pl.DataFrame(out)
    quantiles = [a for a in ctx.aggregates if isinstance(a, Quantile)]
    for qp, q in zip(plan.quantiles, quantiles, strict=True):
        frame = _quantiles(ctx, rows, q, qp, frame, source, plan.alpha)
    for a in ctx.aggregates:
        if isinstance(a, Histogram):
            frame = _histogram(ctx, rows, a, plan, frame, source)
    if not any(isinstance(a, Histogram) for a in ctx.aggregates):  # the user's order
        names = [n + x for a in ctx.aggregates for n in a.outputs() for x in ("", "_low", "_high")]
        frame = frame.select(*ctx.by, *names)
    return QueryRelease(
        frame=engine.output(frame),
        privacy=budget.cost,
        relation="unbounded",
        privacy_unit=ctx.unit,
        label=label,
        plan=plan,
        releases=releases,
        threshold=None if sel is None else sel.threshold,
    )


def _part_release(p: Any, vals: np.ndarray, noise: str) -> Release:
    privacy: PrivacyLoss
    if noise == "laplace":
        privacy = PureDP(float(p.noise.sensitivity / p.noise.scale))
        mech = "Geometric" if p.noise.step == 1 else "Geometric (coarse lattice)"
    else:
        privacy = ZCDP(float(p.noise.sensitivity**2 / (2 * p.noise.scale)))
        mech = "DiscreteGaussian" if p.noise.step == 1 else "DiscreteGaussian (coarse lattice)"
    return Release(
        value=vals,
        mechanism=mech,
        privacy=privacy,
        scale=p.noise.std,
        alpha=p.alpha,
        relation="unbounded",
        details={
            "share": float(p.share),
            "sensitivity": p.sensitivity,
            "step": p.noise.step,
            "half_width": p.half_width,
            "unit": p.part.unit,
        },
    )


def _quantiles(
    ctx: ex.Context,
    rows: nw.LazyFrame[Any],
    agg: Quantile,
    qp: Any,
    frame: pl.DataFrame,
    source: Any,
    alpha: float,
) -> pl.DataFrame:
    """Per released group, the statistics layer's quantiles from the engine's grid counts."""
    statistics = statistics_layer()
    grid = agg.grid()
    # an integer-typed column (a public schema fact) puts atoms on the integers
    assert agg.column is not None
    support: str | float = "auto"
    if ctx.schema[agg.column].is_integer() and grid.unit <= 1:
        support = 1.0
    counts = ex.grid_counts(ctx, rows, agg)
    by = list(ctx.by)
    n = frame.height if by else 1
    outs = agg.outputs()
    cols: dict[str, list[float]] = {}
    for name in outs:
        for suffix in ("", "_low", "_high"):
            cols[name + suffix] = []
    groups = frame.select(by).rows() if by else [()]
    index = {k: g for k, g in counts.group_by(by, maintain_order=True)} if by else {}
    for key in groups[:n]:
        sub = index.get(key) if by else counts
        if sub is None:
            pts, cnt = np.zeros(0), np.zeros(0, dtype=np.int64)
        else:
            pts = sub[ex.BUCKET].to_numpy().astype(np.float64) * grid.unit
            cnt = sub["__n"].to_numpy().astype(np.int64)
        rel = statistics.quantiles_from_counts(
            pts,
            cnt,
            list(agg.levels),
            epsilon=qp.epsilon,
            bounds=agg.bounds,
            alpha=alpha,
            rng=source,
            support=support,
        )
        values = np.atleast_1d(np.asarray(rel.values, dtype=np.float64))
        intervals = np.asarray(rel.value_intervals, dtype=np.float64).reshape(-1, 2)
        for j, name in enumerate(outs):
            cols[name].append(float(values[j]))
            cols[name + "_low"].append(float(intervals[j, 0]))
            cols[name + "_high"].append(float(intervals[j, 1]))
    add = pl.DataFrame(cols)
    return add if frame.width == 0 else pl.concat([frame, add], how="horizontal")


def _histogram(
    ctx: ex.Context,
    rows: nw.LazyFrame[Any],
    agg: Histogram,
    plan: Plan,
    frame: pl.DataFrame,
    source: Any,
) -> pl.DataFrame:
    """Noisy counts for every (released group, bin), in long form."""
    part = plan.parts[-1]
    counts = ex.histogram_counts(ctx, rows, agg)
    labels = agg.labels()
    n_bins = len(labels[0]) if isinstance(labels, tuple) else len(labels)
    by = list(ctx.by)
    groups = frame.select(by) if by else pl.DataFrame({"__g": [0]})
    grid = groups.join(pl.DataFrame({ex.BUCKET: np.arange(n_bins, dtype=np.int64)}), how="cross")
    if by:
        counts = counts.with_columns(pl.col(ex.BUCKET).cast(pl.Int64))
        grid = grid.join(counts, on=[*by, ex.BUCKET], how="left", nulls_equal=True)
    else:
        counts = counts.with_columns(pl.col(ex.BUCKET).cast(pl.Int64))
        grid = grid.join(counts, on=ex.BUCKET, how="left").drop("__g")
    stat = grid["__n"].fill_null(0).to_numpy().astype(np.int64)
    noisy = part.noise.draw(stat, source)
    h = part.half_width
    assert agg.column is not None
    b = grid[ex.BUCKET].to_numpy()
    if isinstance(labels, tuple):
        bins = {
            f"{agg.column}_from": np.asarray(labels[0])[b],
            f"{agg.column}_to": np.asarray(labels[1])[b],
        }
    else:
        bins = {agg.column: pl.Series([labels[i] for i in b], strict=False)}
    out = grid.select(by).with_columns(**bins) if by else pl.DataFrame(bins)
    return out.with_columns(
        pl.Series(agg.name, noisy.astype(np.int64)),
        pl.Series(f"{agg.name}_low", (noisy - h).astype(np.int64)),
        pl.Series(f"{agg.name}_high", (noisy + h).astype(np.int64)),
    )
