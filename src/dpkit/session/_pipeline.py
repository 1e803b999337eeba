"""The ordered steps of one release, from the checked query to the released table.

1. Before the spend (:func:`check_before_spend`, after the query's own checks and its plan,
   ``session/query.py`` and ``session/_plan.py``): every check that can refuse the release,
   on the schema and the public parameters only, so a refusal spends nothing and no value
   of the data decides it.
2. The spend (:func:`measure`): the label and the bit source checked, then the plan's cost
   charged to the Session's accountant, before any row is read.
3. After the spend (:func:`run`): the data read, the automatic stages (the contribution
   bound, then the bounds), each choice re-planned by method (``Plan.with_rows``,
   ``Plan.with_bounds``), the rows bounded with a fresh salt, and :func:`execute`: the
   engine's aggregation (``session/_engine.py``) and the noise (``session/_draw.py``). Any
   error here is reported as one after the spend (``_engine.after_spend``).
4. The record (``SessionHandle.recorded``): the release kept with what it was.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import narwhals as nw

from dpkit.session import _engine as ex
from dpkit.session._auto import WORST_BOUNDS, check_stages, choose_bounds, choose_max_rows
from dpkit.session._draw import check_quantile_plan, draw, statistics_layer
from dpkit.session._handle import SessionHandle
from dpkit.session._plan import Plan
from dpkit.session._record import release_events
from dpkit.session.aggregates import Quantile
from dpkit.session.result import QueryRelease

__all__ = ["check_before_spend", "execute", "measure", "run"]


def check_before_spend(ctx: ex.Context, plan: Plan) -> None:
    """The checks of a release that need its plan, before anything is spent: the
    statistics on the worst bounds ``bounds="auto"`` can choose, the automatic stages'
    noise, each sum's interval, each quantile's planned stages."""
    if plan.bounds:  # the statistics once bounds are chosen: checked on the worst lattice
        worst = tuple(a.resolve(WORST_BOUNDS) if a.auto else a for a in ctx.aggregates)
        plan.with_bounds(worst)
    check_stages(plan)  # the automatic stages' noise within the sampler's range
    for part in plan.parts:  # a sum's interval within the float range for some table
        if part.part.label == "sum":
            from dpkit.statistics.moments import check_sum_interval

            what = "narrow the bounds (rescale the data) or raise epsilon (or rho)"
            owner = f"Session ({part.aggregate})"
            check_sum_interval(owner, part.half_width, part.part.unit, what)
    if plan.quantiles:
        statistics_layer()  # fails before spending if the statistics layer is missing
        quantiles = [a for a in ctx.aggregates if isinstance(a, Quantile)]
        for a, qp in zip(quantiles, plan.quantiles, strict=True):  # the planned stages
            check_quantile_plan(a, qp, plan.alpha)  # run as planned, noise in range


def measure(
    handle: SessionHandle,
    ctx: ex.Context,
    plan: Plan,
    *,
    source: Callable[[], Any],
    label: Any,
    default_label: str,
    on_data: Callable[[ex.Context], ex.Context],
    text: Callable[[], str],
    finish: Any = None,
) -> QueryRelease:
    """The spend and what follows, for a checked ``ctx`` and ``plan``: ``source`` gives the
    release's bit source (a bad ``rng`` is refused before the spend), ``on_data`` the query
    on the data itself, ``text`` the query as written; ``finish`` (SQL's) turns the release
    into what the caller returns: ``finish(rel) -> (rel, language, text)``."""
    assert plan.budget is not None
    if label is not None and not isinstance(label, str):
        raise TypeError(f"release: `label` must be None or a str; got {type(label).__name__}")
    bits = source()  # a bad rng is refused before the spend
    label = label or default_label
    spend = handle.spend(plan.budget.cost, label, release_events(plan))
    rel = ex.after_spend(lambda: run(on_data(ctx), plan, bits, label, handle.engine))
    language, written = "python", text()
    if finish is not None:
        rel, language, written = finish(rel)
    return handle.recorded(rel, spend, language, written, bits)


def run(ctx: ex.Context, plan: Plan, source: Any, label: str, engine: Any) -> QueryRelease:
    """The release once its cost is charged, on the data (``ctx``): the automatic stages,
    then the statistics."""
    contribution = None
    if plan.rows is not None:  # max_rows_per_unit="auto": chosen first, then the plan
        auto = plan.rows.auto
        contribution = choose_max_rows(ctx, plan.rows.epsilon, auto.level, auto.max_bound, source)
        k = contribution.bound
        plan = plan.with_rows(k)
        ctx = dataclasses.replace(ctx, max_rows=plan.max_rows, max_groups=plan.max_groups)
    rows = ex.bounded_rows(ctx, ex.fresh_salt(ctx, source))
    chosen: dict[str, Any] = {}
    if plan.bounds:  # bounds="auto": chosen on the bounded rows, then the statistics
        ctx, chosen = choose_bounds(ctx, rows, plan, source)
        plan = plan.with_bounds(ctx.aggregates, tuple(chosen.items()))
    out = execute(ctx, plan, rows, source, label, engine)
    return dataclasses.replace(out, bounds=chosen, contribution=contribution)


def execute(
    ctx: ex.Context, plan: Plan, rows: nw.LazyFrame[Any], source: Any, label: str, engine: Any
) -> QueryRelease:
    """Aggregate in the engine, then draw the noise: groups sorted by key, a fixed draw order
    (the selection count, then each aggregate's statistics in order), so a seed reproduces a
    release on every engine."""
    assert plan.budget is not None
    frame, releases = draw(ctx, plan, ex.aggregate(ctx, plan, rows), source)
    sel = plan.selection
    return QueryRelease(
        frame=engine.output(frame, like=ctx.frame, keys=ctx.by),
        privacy=plan.budget.cost,
        relation="unbounded",
        privacy_unit=ctx.unit,
        label=label,
        plan=plan,
        releases=releases,
        threshold=None if sel is None else sel.threshold,
    )
