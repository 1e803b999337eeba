"""The noise side of a release: the draws, in a fixed order, on the engine's exact figures.

:func:`dpkit.session._engine.aggregate` runs the engine work on the bounded rows and returns
only the exact, noise-free per-group figures (never released); :func:`draw` adds the noise to
them: one release (``size=None``) or ``size`` independent
releases at once, by the same code. For ``size=1`` the random bits are consumed in the same
order as one release, so a seed gives the same values; :class:`dpkit.session.batch.QuerySampler`
(the audit's batched path) draws many at once.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from dpkit.accounting import ZCDP, PrivacyLoss, PureDP
from dpkit.errors import ParameterError
from dpkit.release import Release
from dpkit.samplers import as_source
from dpkit.session import _engine as ex
from dpkit.session._plan import QUANTILE_INTERVAL_SHARE, Plan
from dpkit.session.aggregates import Histogram, Quantile

__all__ = [
    "check_quantile_plan",
    "draw",
    "statistics_layer",
]


def statistics_layer() -> Any:
    try:
        import dpkit.statistics as statistics
    except ImportError:  # pragma: no cover - depends on the statistics layer landing
        raise ParameterError(
            "dp.median / dp.quantile need dpkit.statistics.quantiles_from_counts, which this "
            "build of dpkit does not have yet"
        ) from None
    return statistics


def draw(
    ctx: ex.Context, plan: Plan, agg: ex.Aggregated, source: Any, size: int | None = None
) -> tuple[pl.DataFrame, dict[str, Release]]:
    """The noisy frame of one release (``size=None``), or of ``size`` independent releases
    stacked with a ``draw`` column (``0 .. size - 1``; a draw releasing no group has no row).

    Each release: the selection count of every group (private keys), then each aggregate's
    statistics for the released groups, then quantiles and histograms per released group.
    Batched, every stage draws for all releases at once (release-major order), so ``size=1``
    consumes the bits exactly as one release does. Batched quantiles release their values
    only (the interval columns are NaN; see :func:`_quantiles`).
    """
    budget = plan.budget
    assert budget is not None
    reps = 1 if size is None else size
    n_groups = agg.table.height
    parts: dict[str, list[Any]] = {}
    for p in plan.parts:
        parts.setdefault(p.aggregate, []).append(p)
    stats = {
        a.name: a.statistics(agg.arrays, f"__dpkit_a{i}_")
        for i, a in enumerate(ctx.aggregates)
        if not isinstance(a, Quantile | Histogram)
    }
    # cells: (release, group) pairs released, flattened release-major
    cells = np.arange(reps * n_groups)
    noisy: dict[str, list[np.ndarray]] = {}
    sel = plan.selection
    if sel is not None:
        if sel.reuse is None:
            selection = sel.noise.draw(_tile(agg.arrays[ex.SELECT], reps), source)
        else:
            selection = parts[sel.reuse][0].noise.draw(_tile(stats[sel.reuse][0], reps), source)
        cells = np.flatnonzero(selection >= sel.threshold)
        if sel.reuse is not None:
            noisy[sel.reuse] = [selection[cells]]
    group = cells % n_groups if n_groups else cells
    releases: dict[str, Release] = {}
    out: dict[str, Any] = {} if size is None else {"draw": cells // max(n_groups, 1)}
    out.update({c: agg.table[c].gather(group) for c in ctx.by})
    for a in ctx.aggregates:
        if isinstance(a, Quantile | Histogram):
            continue
        vals = noisy.get(a.name) or [
            p.noise.draw(stat[group], source)
            for p, stat in zip(parts[a.name], stats[a.name], strict=True)
        ]
        if size is None:
            for p, v in zip(parts[a.name], vals, strict=True):
                releases[f"{a.name}: {p.part.label}"] = _part_release(p, v, budget.noise)
        halves = [p.half_width for p in parts[a.name]]
        out.update(a.finish(vals, halves, plan.alpha))
    frame = pl.DataFrame(out)
    quantiles = [a for a in ctx.aggregates if isinstance(a, Quantile)]
    for qp, q, counts in zip(plan.quantiles, quantiles, agg.grids, strict=True):
        frame = _quantiles(ctx, agg.table, q, qp, counts, frame, group, source, plan.alpha, size)
        if size is None:
            releases[f"{q.name}: quantiles"] = _quantile_release(q, qp, frame, plan)
    hists = [a for a in ctx.aggregates if isinstance(a, Histogram)]
    for h, counts in zip(hists, agg.hists, strict=True):
        frame = _histogram(ctx, agg.table, h, plan, counts, group, out.get("draw"), source)
        if size is None:
            part = plan.parts[-1]  # the histogram's (see _histogram)
            noisy_counts = frame[h.name].to_numpy()
            releases[f"{h.name}: {part.part.label}"] = _part_release(
                part, noisy_counts, budget.noise
            )
    if not hists:  # the user's order
        names = [n + x for a in ctx.aggregates for n in a.outputs() for x in ("", "_low", "_high")]
        frame = frame.select(*([] if size is None else ["draw"]), *ctx.by, *names)
    return frame, releases


def _tile(values: np.ndarray, reps: int) -> np.ndarray:
    """``values`` repeated for ``reps`` releases (release-major); itself for one release."""
    return values if reps == 1 else np.tile(values, reps)


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


def _quantile_release(agg: Quantile, qp: Any, frame: pl.DataFrame, plan: Plan) -> Release:
    """The record of one quantile aggregate: per released group (the frame's rows, in
    order) its values, one column per level, with their value intervals in ``details``.
    ``privacy`` is the mechanism's pure epsilon per group under add/remove of one unit:
    its epsilon per record times the rows a unit keeps (group privacy)."""
    outs = agg.outputs()
    values = frame.select(outs).to_numpy()
    low = frame.select([o + "_low" for o in outs]).to_numpy()
    high = frame.select([o + "_high" for o in outs]).to_numpy()
    return Release(
        value=values,
        mechanism="quantiles",
        privacy=PureDP(qp.epsilon * plan.max_rows),
        alpha=plan.alpha,
        relation="unbounded",
        details={
            "share": float(qp.share),
            "levels": agg.levels,
            "method": qp.method,
            "epsilon_per_record": qp.epsilon,
            "interval_share": QUANTILE_INTERVAL_SHARE,
            "stages": {
                st.name: float(e) for st, e in zip(qp.spend.stages, qp.spend.epsilons, strict=True)
            },
            "value_intervals": np.stack((low, high), axis=-1),
        },
    )


def check_quantile_plan(agg: Quantile, qp: Any, alpha: float) -> None:
    """Every check of the statistics layer's release of ``qp`` (the planned method and stage
    epsilons, the levels, bounds and support), made before anything is spent: the same call
    that builds the release in :func:`_quantiles`."""
    _releaser(agg, qp, alpha)


def _releaser(agg: Quantile, qp: Any, alpha: float) -> Any:
    from dpkit.statistics.quantile_release import spend_releaser

    return spend_releaser(
        list(agg.levels),
        qp.spend,
        bounds=agg.bounds,
        alpha=alpha,
        support=qp.support,
        owner=f"Session ({qp.aggregate})",
    )


def _summaries(
    ctx: ex.Context, table: pl.DataFrame, counts: pl.DataFrame, unit: float
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per group of ``table`` (in its order): the grid points and their counts."""
    by = list(ctx.by)
    bucket, n = counts[ex.BUCKET], counts["__dpkit_n"]
    if not by:
        return [_summary(bucket.to_numpy(), n.to_numpy(), unit)]
    # the rows of each group as iterating counts.group_by(by, maintain_order=True) gives
    # them (keys as tuples of Python values): where each group's rows are contiguous (the
    # engine's counts come sorted by key), slices of the columns instead of a gather each
    row = "__dpkit_row"
    groups = (
        counts.select(by)
        .with_row_index(row)
        .group_by(by, maintain_order=True)
        .agg(
            pl.col(row).first().alias("__dpkit_first"),
            pl.col(row).last().alias("__dpkit_last"),
            pl.len().alias("__dpkit_len"),
        )
    )
    first, last = groups["__dpkit_first"].to_numpy(), groups["__dpkit_last"].to_numpy()
    size = groups["__dpkit_len"].to_numpy().astype(np.int64)
    if bucket.null_count() or n.null_count() or np.any(last - first + 1 != size):
        index = {k: g for k, g in counts.group_by(by, maintain_order=True)}  # pragma: no cover
        return [  # pragma: no cover - the engine's counts are sorted by key, never null
            (np.zeros(0), np.zeros(0, dtype=np.int64))
            if (sub := index.get(key)) is None
            else _summary(sub[ex.BUCKET].to_numpy(), sub["__dpkit_n"].to_numpy(), unit)
            for key in table.select(by).rows()
        ]
    ends = zip(first.tolist(), (last + 1).tolist(), strict=True)
    spans = dict(zip(groups.select(by).iter_rows(), ends, strict=True))
    b_all, n_all = bucket.to_numpy(), n.to_numpy()
    out = []
    for key in table.select(by).rows():
        span = spans.get(key)
        if span is None:
            out.append((np.zeros(0), np.zeros(0, dtype=np.int64)))
        else:
            out.append(_summary(b_all[span[0] : span[1]], n_all[span[0] : span[1]], unit))
    return out


def _summary(bucket: np.ndarray, n: np.ndarray, unit: float) -> tuple[np.ndarray, np.ndarray]:
    """One group's grid points (bucket units times ``unit``) and counts."""
    return bucket.astype(np.float64) * unit, n.astype(np.int64)


def _quantiles(
    ctx: ex.Context,
    table: pl.DataFrame,
    agg: Quantile,
    qp: Any,
    counts: pl.DataFrame,
    frame: pl.DataFrame,
    group: np.ndarray,
    source: Any,
    alpha: float,
    size: int | None,
) -> pl.DataFrame:
    """Per released group, the statistics layer's quantiles from the engine's grid counts.

    One release runs the statistics layer's release (:func:`dpkit.statistics.
    quantiles_from_counts`) on every released group (the values and their intervals),
    through :func:`dpkit.statistics.quantile_release.spend_releaser`: the method and each stage's
    epsilon are the plan's (``qp.spend``), decided before the spend; the parameters are
    checked once and each group's summary as it comes. Batched, each group's releases come
    from one call of :func:`dpkit.statistics.sampling.spend_samples`: the same first stage
    (the values, at the same epsilon), without the interval stage, whose columns are then
    NaN; each released value is distributed exactly as in a release.
    """
    statistics_layer()  # a clear error if this build has no statistics layer
    grid = agg.grid(ex.grid_groups(ctx))  # the grid of :func:`ex.grid_counts`
    support = qp.support
    summaries = _summaries(ctx, table, counts, grid.unit)
    outs = agg.outputs()
    m = len(outs)
    values = np.full((group.size, m), np.nan)
    low = np.full((group.size, m), np.nan)
    high = np.full((group.size, m), np.nan)
    if size is None:
        if group.size:  # parameters checked once, each group's summary as it is released
            release = _releaser(agg, qp, alpha)
            source = as_source(source)
        for i, g in enumerate(group.tolist()):
            pts, cnt = summaries[g]
            rel = release(pts, cnt, source)
            values[i] = np.atleast_1d(np.asarray(rel.values, dtype=np.float64))
            intervals = np.asarray(rel.value_intervals, dtype=np.float64).reshape(-1, 2)
            low[i], high[i] = intervals[:, 0], intervals[:, 1]
    else:
        from dpkit.statistics.sampling import spend_samples

        for g in np.unique(group).tolist():
            idx = np.flatnonzero(group == g)
            pts, cnt = summaries[g]
            values[idx] = spend_samples(
                pts,
                cnt,
                list(agg.levels),
                qp.spend,
                bounds=agg.bounds,
                support=support,
                size=idx.size,
                rng=source,
            )
    cols: dict[str, np.ndarray] = {}
    for j, name in enumerate(outs):
        cols[name], cols[name + "_low"], cols[name + "_high"] = values[:, j], low[:, j], high[:, j]
    add = pl.DataFrame(cols)
    return add if frame.width == 0 else pl.concat([frame, add], how="horizontal")


def _histogram(
    ctx: ex.Context,
    table: pl.DataFrame,
    agg: Histogram,
    plan: Plan,
    counts: pl.DataFrame,
    group: np.ndarray,
    draws: np.ndarray | None,
    source: Any,
) -> pl.DataFrame:
    """Noisy counts for every (released group, bin), in long form (``draws``: the release of
    each released group, batched)."""
    part = plan.parts[-1]
    labels = agg.labels()
    n_bins = len(labels[0]) if isinstance(labels, tuple) else len(labels)
    by = list(ctx.by)
    groups = table.select(by) if by else pl.DataFrame({"__dpkit_g": [0]})
    grid = groups.with_row_index("__dpkit_row").join(
        pl.DataFrame({ex.BUCKET: np.arange(n_bins, dtype=np.int64)}), how="cross"
    )
    counts = counts.with_columns(pl.col(ex.BUCKET).cast(pl.Int64))
    if by:
        grid = grid.join(counts, on=[*by, ex.BUCKET], how="left", nulls_equal=True)
    else:
        grid = grid.join(counts, on=ex.BUCKET, how="left").drop("__dpkit_g")
    grid = grid.sort("__dpkit_row", ex.BUCKET, maintain_order=True)
    matrix = grid["__dpkit_n"].fill_null(0).to_numpy().astype(np.int64).reshape(-1, n_bins)
    noisy = part.noise.draw(matrix[group].ravel(), source)
    h = part.half_width
    assert agg.column is not None
    b = np.tile(np.arange(n_bins), group.size)
    bins: dict[str, Any]
    if isinstance(labels, tuple):
        bins = {
            f"{agg.column}_from": np.asarray(labels[0])[b],
            f"{agg.column}_to": np.asarray(labels[1])[b],
        }
    else:
        bins = {agg.column: pl.Series([labels[i] for i in b], strict=False)}
    rows = np.repeat(group, n_bins)
    head: dict[str, Any] = {} if draws is None else {"draw": np.repeat(draws, n_bins)}
    head.update({c: table[c].gather(rows) for c in by})
    out = pl.DataFrame(head).with_columns(**bins) if head else pl.DataFrame(bins)
    return out.with_columns(
        pl.Series(agg.name, noisy.astype(np.int64)),
        pl.Series(f"{agg.name}_low", (noisy - h).astype(np.int64)),
        pl.Series(f"{agg.name}_high", (noisy + h).astype(np.int64)),
    )
