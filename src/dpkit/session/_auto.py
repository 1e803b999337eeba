"""Parameters a release chooses privately: ``bounds="auto"`` and ``max_rows_per_unit="auto"``.

Both run inside a release, after it has spent its whole budget and before any other noise:

* **Contribution bound** (:func:`choose_max_rows`): the engine counts each unit's rows and
  then the units per row count (a histogram of rows per unit: at most one row per distinct
  count reaches Python, never one per unit);
  :func:`dpkit.statistics.contribution_bound_from_counts` releases a DP quantile of it
  (Amin, Kulesza, Munoz Medina and Vassilvitskii 2019) with its share of the budget, by
  AboveThreshold upward from one row (``method="threshold"``: robust to the loose public
  cap, unlike the exponential mechanism over ``0 .. cap``). One unit is one record of that
  histogram, so the stage is pure ``epsilon_k``-DP under add/remove of one unit whatever
  the unit's row count.
* **Clipping bounds** (:func:`choose_bounds`): the engine maps each kept value to its signed
  log2 bucket (:func:`dpkit.statistics.log2_buckets`; the formula below) and counts rows per
  bucket over all groups; :func:`dpkit.statistics.bounds_from_counts` releases the bounds
  (discrete Laplace noise, threshold; after Google's ApproximateBounds) with a DP estimate of
  the fraction of values outside them. When no bucket passes the threshold (too few values
  for the noise), the bounds are the public fallback of
  :func:`dpkit.statistics.bounds.default_fallback` (``(-1, 1)``, or from ``lower``), never a
  bucket picked by noise alone; the release says so (``BoundsRelease.fallback``, the plan's
  text). A unit keeps at most ``k`` rows, so it moves the
  histogram by at most ``k`` in L1: the stage runs at ``epsilon_b / k`` per record, which is
  ``epsilon_b``-DP per unit (group privacy). With ``bounds_method="tail"`` the engine counts
  each value's candidate index instead (:func:`tail_step`, the map of
  :func:`dpkit.statistics.tail_steps`) and :func:`dpkit.statistics.tail_bounds_from_counts`
  runs AboveThreshold on them (Durfee 2023), also at ``epsilon_b / k`` per record.

The engine's bucket of a value ``x`` (finite after the null/NaN rule; infinities fall in the
outermost bucket) is ``sign(x) * (clip(floor(log2 |x|) + 1, -1073, 1024) + 1075)`` and 0 for
``x = 0``: the exponent of :func:`math.frexp`, offset. An engine whose ``log2`` rounds at an
exact power of two moves that value to the neighbouring bucket: still a function of the
record alone, so privacy is unaffected (only which bucket counts it).
"""

from __future__ import annotations

import dataclasses
import math
import sys
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import narwhals as nw
import numpy as np

from dpkit._validate import check_level, check_number
from dpkit.errors import ParameterError
from dpkit.samplers import MAX_NOISE_SCALE
from dpkit.session import _engine as ex
from dpkit.statistics.bounds import BASE as TAIL_BASE
from dpkit.statistics.bounds import MAX_STEPS as TAIL_STEPS
from dpkit.statistics.bounds import bounds_noise_scale, threshold_noise_scale

__all__ = [
    "WORST_BOUNDS",
    "AutoRows",
    "auto_rows",
    "check_stages",
    "choose_bounds",
    "choose_max_rows",
    "log2_bucket",
    "tail_step",
]

_BUCKET = "__dpkit_log2"
_ROWS = "__dpkit_rows"
_TINY = 5e-324  # the smallest positive double: log2 of it is -1074
_HUGE = sys.float_info.max


#: bounds whose lattice has the largest per-row range (checks made before spending use it)
WORST_BOUNDS = (0.0, 2.0 - 2.0**-30)


#: the tail method's upper quantile: the default ``tail`` of
#: :func:`dpkit.statistics.tail_bounds_from_counts`, which the Session uses
TAIL = 0.999


def check_stages(plan: Any) -> None:
    """Refuse, before anything is spent, an automatic stage whose discrete Laplace noise
    would exceed the exact sampler's range (``2**50``): its scale follows from public
    quantities only, the stage's epsilon (already divided by the rows a unit keeps, the
    worst case ``max_rows_cap`` when that is chosen too) and its method. The contribution
    bound is AboveThreshold at ``max_rows_level``; the bounds are the histogram (scale
    ``1 / epsilon``) or AboveThreshold at :data:`TAIL` (each side at ``epsilon / 2``
    without ``lower``)."""
    stages: list[tuple[str, float, Fraction | None, str]] = []
    if plan.rows is not None:
        eps = Fraction(plan.rows.epsilon)
        scale: Fraction | None = (
            threshold_noise_scale(plan.rows.auto.level, eps) if eps > 0 else None
        )
        stages.append(("max_rows_per_unit='auto'", plan.rows.epsilon, scale, "max_rows_share"))
    for bp in plan.bounds:
        scale = bounds_noise_scale(Fraction(bp.epsilon), bp.method, bp.lower, TAIL)
        hint = "bounds_share, or give public bounds, or lower max_rows_per_unit"
        stages.append((f"bounds='auto' of {bp.aggregate!r}", bp.epsilon, scale, hint))
    for what, eps_v, sc, hint in stages:
        if sc is None or sc > MAX_NOISE_SCALE:
            size = "unbounded" if sc is None else f"{float(sc):.3g}"
            raise ParameterError(
                f"release: the budget is too small for {what}: its stage runs at epsilon "
                f"{eps_v:.3g}, so its discrete Laplace noise would have scale {size}, "
                f"beyond 2**50, the exact sampler's range; raise epsilon (or {hint})"
            )


@dataclass(frozen=True, slots=True)
class AutoRows:
    """Settings of ``max_rows_per_unit="auto"``: the share of the release's budget spent on
    the bound, the quantile level of rows per unit it estimates, and the public cap."""

    share: float = 0.1
    level: float = 0.95
    max_bound: int = 1000


def auto_rows(owner: str, share: Any, level: Any, max_bound: Any) -> AutoRows:
    """Validated :class:`AutoRows` (TypeError / ParameterError naming ``owner``)."""
    sh = check_number(owner, "max_rows_share", share)
    if not 0 < sh < 1:
        raise ParameterError(f"{owner}: `max_rows_share` must be in (0, 1); got {share!r}")
    lv = check_level(owner, "max_rows_level", level)
    if isinstance(max_bound, bool) or not isinstance(max_bound, int | np.integer):
        raise TypeError(f"{owner}: `max_rows_cap` must be an int >= 1; got {max_bound!r}")
    if not 1 <= int(max_bound) <= 10**6:
        raise ParameterError(f"{owner}: `max_rows_cap` must be in [1, 10**6]; got {max_bound!r}")
    return AutoRows(sh, lv, int(max_bound))


def log2_bucket(x: nw.Expr) -> nw.Expr:
    """The signed log2 bucket of a Float64 expression (module docstring), as Int64."""
    a = nw.min_horizontal(x.abs(), nw.lit(_HUGE))
    e = (nw.max_horizontal(a, nw.lit(_TINY)).log(base=2).floor() + 1).clip(-1073, 1024)
    magnitude = nw.when(a > 0).then(e + 1075).otherwise(nw.lit(0.0))
    sign = (x > 0).cast(nw.Float64) - (x < 0).cast(nw.Float64)
    return (sign * magnitude).cast(nw.Int64)


def tail_step(x: nw.Expr, lower: float | None) -> nw.Expr:
    """The tail method's candidate index of a Float64 expression, as Int64: the engine's
    :func:`dpkit.statistics.tail_steps` (signed when ``lower`` is None)."""
    a = nw.max_horizontal(nw.min_horizontal(x, nw.lit(_HUGE)), nw.lit(-_HUGE))
    if lower is None:
        arg = a.abs() + 1.0
        sign = (x > 0).cast(nw.Float64) - (x < 0).cast(nw.Float64)
    else:
        arg = a - float(lower) + 1.0
        sign = None
    arg = nw.max_horizontal(nw.min_horizontal(arg, nw.lit(_HUGE)), nw.lit(1.0))
    idx = (arg.log() / math.log(TAIL_BASE)).ceil().clip(0, TAIL_STEPS)
    return (idx if sign is None else sign * idx).cast(nw.Int64)


def _key(agg: Any, x: nw.Expr) -> nw.Expr:
    if agg.bounds_method == "tail":
        return tail_step(x, agg.lower)
    return log2_bucket(x)


def bucket_counts(ctx: ex.Context, rows: nw.LazyFrame[Any], agg: Any) -> tuple[Any, Any]:
    """``(keys, counts)``: the kept rows per signed log2 bucket of ``agg``'s column (or per
    tail candidate index, with ``bounds_method="tail"``), over all groups (nulls and NaN left
    out, or replaced by ``fill``, as the aggregate does)."""
    column = agg.column
    x = nw.col(column).cast(nw.Float64)
    valid = ~nw.col(column).is_null()
    if ctx.schema[column].is_float():
        valid = valid & ~nw.col(column).is_nan()
    if agg.fill is None:
        lf = rows.filter(valid)
    else:
        lf = rows.with_columns(nw.when(valid).then(x).otherwise(nw.lit(float(agg.fill))))
        x = nw.col(column).cast(nw.Float64)
    lf = lf.select(_key(agg, x).alias(_BUCKET))
    out = ctx.engine.collect(lf.group_by(_BUCKET).agg(nw.len().alias("__dpkit_n")))
    out = out.sort(_BUCKET)
    return (
        out[_BUCKET].to_numpy().astype(np.int64),
        out["__dpkit_n"].to_numpy().astype(np.int64),
    )


def choose_bounds(
    ctx: ex.Context, rows: nw.LazyFrame[Any], plan: Any, source: Any
) -> tuple[ex.Context, dict[str, Any]]:
    """Resolve every ``bounds="auto"`` aggregate of ``ctx`` (in the query's order): its
    bucket counts from the engine, then :func:`dpkit.statistics.bounds_from_counts` at the
    plan's epsilon. Returns the context with resolved aggregates and the releases."""
    from dpkit.statistics import bounds_from_counts, tail_bounds_from_counts

    eps = {bp.aggregate: bp.epsilon for bp in plan.bounds}
    chosen: dict[str, Any] = {}
    resolved = []
    for agg in ctx.aggregates:
        if not agg.auto:
            resolved.append(agg)
            continue
        keys, counts = bucket_counts(ctx, rows, agg)
        low = agg.lower
        if agg.bounds_method == "tail":
            rel = tail_bounds_from_counts(
                keys, counts, epsilon=eps[agg.name], lower=low, rng=source
            )
        else:
            rel = bounds_from_counts(keys, counts, epsilon=eps[agg.name], lower=low, rng=source)
        done = agg.resolve(rel.bounds)
        assert done.bounds is not None  # a bounded aggregate keeps its (chosen) bounds
        # report the bounds the statistic uses (kept where its lattice exists)
        chosen[agg.name] = dataclasses.replace(rel, bounds=done.bounds)
        resolved.append(done)
    return dataclasses.replace(ctx, aggregates=tuple(resolved)), chosen


def rows_per_unit(ctx: ex.Context) -> tuple[Any, Any]:
    """``(rows, units)``: how many units have each row count, in the filtered table (two
    group-bys in the engine; one row per distinct count reaches Python)."""
    assert ctx.unit is not None
    units = ex.canonical_floats(ctx.frame.select(ctx.unit), ctx.schema, [ctx.unit])
    per_unit = units.group_by(ctx.unit).agg(nw.len().alias(_ROWS))
    hist = ctx.engine.collect(per_unit.group_by(_ROWS).agg(nw.len().alias("__dpkit_n"))).sort(_ROWS)
    return hist[_ROWS].to_numpy().astype(np.int64), hist["__dpkit_n"].to_numpy().astype(np.int64)


def choose_max_rows(
    ctx: ex.Context, epsilon: float, level: float, max_bound: int, source: Any
) -> Any:
    """The private ``max_rows_per_unit`` of this release
    (:func:`dpkit.statistics.contribution_bound_from_counts`)."""
    from dpkit.statistics import contribution_bound_from_counts

    rows, units = rows_per_unit(ctx)  # empty after a filter: released like any other
    return contribution_bound_from_counts(
        rows,
        units,
        epsilon=epsilon,
        level=level,
        max_bound=max_bound,
        rng=source,
        method="threshold",
    )
