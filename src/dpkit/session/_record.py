"""The release record: one Session release as plain, serialisable data.

A record says what one release was and what it released, in JSON types only (dicts, lists,
strings, numbers, booleans, ``None``; no float that is not finite), so that it can be kept
beside the release's spend in the ledger (:meth:`dpkit.Accountant.attach_record`) and a
report rendered from the ledger alone is the report of the Session that made the release
(:mod:`dpkit.render.release_report`). Keys (format ``dpkit-release`` version 1):

``time``, ``spend``, ``label``
    When the budget was charged (ISO 8601, UTC), the spend's index in its accountant, and
    its label.
``query``
    ``{"language": "python" | "sql", "text": ...}``: the SQL as given, or the builder's
    calls written out (:mod:`dpkit.session._text`).
``engine``, ``privacy_unit``, ``relation``, ``schema``, ``public_tables``
    Where it ran, whom it protects (``None``: each row), under which neighbour relation,
    the public schema (``declared``: given with ``schema=``) and the SQL public tables'
    columns.
``privacy``
    ``cost`` and ``charged`` (loss values as ``{"type": "PureDP", ...}``), ``events`` (what
    the release is, for accounting: :func:`release_events`), ``budget`` (the accountant's
    total, relation and ledger file name).
``plan``
    The facts of the plan, from public parameters only: ``noise``, ``epsilon``, ``rho``,
    ``delta``, ``alpha``, ``bounding``, ``group_by``, ``aggregates`` (with their public or
    privately chosen bounds, the DP clipped fraction), ``parts`` (each noisy statistic's
    share, sensitivity, mechanism, noise scale and interval half-width, in the statistic's
    units), ``quantiles``, ``selection`` (threshold, pre-threshold, delta), ``notes`` and
    ``text`` (what ``explain()`` prints for the executed plan).
``table``
    The released table: ``columns`` (name and type) and ``rows``; a float that is not
    finite is the string ``"inf"``, ``"-inf"`` or ``"nan"``.
``randomness``
    ``{"secure": bool}``: a seeded release is reproducible and so not private. The seed is
    never recorded (it would give the noise away).
``dpkit``
    The version that made the release.

Privacy
-------
Everything in a record is public: the analyst's query and parameters, the public schema,
the plan (a function of those), the released values and the DP outputs of the automatic
stages. Nothing is read from the data: no count of rows dropped by bounding, of groups key
selection left out, no key that was not released, no exact statistic.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from dpkit.accounting import events as ev
from dpkit.accounting.loss import event_to_dict, loss_to_dict
from dpkit.session._budget import float_up
from dpkit.session._plan import STAGE_MECHANISMS, STAGE_NAMES
from dpkit.session.aggregates import Aggregate, Histogram, Quantile

if TYPE_CHECKING:
    from dpkit.session.result import QueryRelease

__all__ = ["FORMAT", "VERSION", "build", "release_events"]

FORMAT = "dpkit-release"
VERSION = 1

_MECHANISMS = {"laplace": "discrete Laplace", "gaussian": "discrete Gaussian"}


def release_events(plan: Any) -> tuple[ev.Event, ...]:
    """What a Session release is, for accounting, from its plan (before the spend).

    A release with Laplace-type noise is pure ``epsilon``-DP in everything but its key
    selection: :class:`~dpkit.accounting.events.Approx` ``(epsilon, 0)``. One with
    Gaussian-type noise is ``rho``-zCDP in everything but its key selection (every stage,
    the quantiles' and the automatic bounds' included, is charged from its part of rho):
    :class:`~dpkit.accounting.events.Zcdp` ``(rho)``, rho rounded up. Private keys add
    :class:`~dpkit.accounting.events.KeySelection` with the delta the budget gives key
    selection, which the threshold was set for (:func:`dpkit.session._plan.selection_threshold`:
    the output on groups one unit alone decides differs by at most that delta, independently
    of the rest). Both are valid descriptions of the release; the exact events (each noise
    and its scale) are finer and would compose more tightly.
    """
    budget = plan.budget
    out: list[ev.Event] = []
    if budget.noise == "laplace":
        cost = budget.cost
        out.append(ev.Approx(epsilon=cost.epsilon))
    else:
        out.append(ev.Zcdp(rho=float_up(budget.rho)))
    if budget.delta_select > 0:
        out.append(ev.KeySelection(delta=budget.delta_select))
    return tuple(out)


def _number(x: Any) -> Any:
    """A JSON number (a float that is not finite as its name)."""
    if isinstance(x, Fraction):
        x = float(x)
    if isinstance(x, float) and not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    return x


def _cell(value: Any) -> Any:
    """A released cell as JSON: numbers, text, booleans and ``None`` as they are; dates and
    times in ISO 8601; anything else as its text."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return _number(value)
    if isinstance(value, dt.date | dt.time | dt.datetime):
        return value.isoformat()
    return str(value)


def _table(out: Any) -> dict[str, Any]:
    return {
        "columns": [{"name": c, "dtype": str(t)} for c, t in out.schema.items()],
        "rows": [[_cell(v) for v in row] for row in out.iter_rows()],
    }


def _aggregate(agg: Aggregate, chosen: dict[str, Any], auto: dict[str, Any]) -> dict[str, Any]:
    """One aggregate's public facts: kind, column, outputs, bounds and how they were set."""
    kind = type(agg).__name__.lower()
    if agg.root:
        kind = "std"
    if isinstance(agg, Quantile) and agg.single and tuple(agg.levels) == (0.5,):
        kind = "median"
    out: dict[str, Any] = {
        "name": agg.name,
        "kind": kind,
        "column": agg.column,
        "outputs": list(agg.outputs()),
    }
    if isinstance(agg, Quantile):
        out["levels"] = list(agg.levels)
    if isinstance(agg, Histogram) and agg.edges is not None:
        out["bins"] = [_number(e) for e in agg.edges]
    elif isinstance(agg, Histogram) and agg.categories is not None:
        out["bins"] = [_cell(c) for c in agg.categories]
    if agg.bounds is not None:
        plan = auto.get(agg.name)
        got = chosen.get(agg.name)
        if plan is None:
            out["bounds"] = {"source": "public", "value": [_number(b) for b in agg.bounds]}
        else:
            out["bounds"] = {
                "source": "private",
                "method": plan.method,
                "share": float(plan.share),
                "epsilon": plan.epsilon,
                "lower": plan.lower,
                "value": None if got is None else [_number(b) for b in got.bounds],
                "clipped_fraction": None if got is None else _number(got.clipped_fraction),
                "fallback": None if got is None else bool(got.fallback),
            }
    if agg.fill is not None:
        out["fill"] = _number(agg.fill)
    return out


def _parts(plan: Any) -> list[dict[str, Any]]:
    out = []
    for p in plan.parts:
        unit = p.part.unit
        noise = p.noise
        if noise.kind == "laplace":
            scale = float(noise.scale) * noise.step * unit  # the Laplace b
        else:
            scale = math.sqrt(float(noise.scale)) * noise.step * unit  # the Gaussian sigma
        out.append(
            {
                "aggregate": p.aggregate,
                "statistic": p.part.label,
                "share": float(p.share),
                "sensitivity": _number(p.sensitivity * unit),
                "mechanism": _MECHANISMS[noise.kind],
                "scale": _number(scale),
                "std": _number(noise.std * unit),
                "half_width": _number(p.half_width * unit),
                "unit": unit,
            }
        )
    return out


def _quantiles(plan: Any) -> list[dict[str, Any]]:
    return [
        {
            "aggregate": q.aggregate,
            "share": float(q.share),
            "method": q.method,
            "epsilon_per_group": q.epsilon,
            "stages": [
                {
                    "stage": STAGE_NAMES.get(st.name, st.name),
                    "mechanism": STAGE_MECHANISMS.get(st.kind, st.kind),
                    "epsilon": float(e),
                }
                for st, e in zip(q.spend.stages, q.spend.epsilons, strict=True)
            ],
        }
        for q in plan.quantiles
    ]


def _selection(plan: Any) -> dict[str, Any] | None:
    s = plan.selection
    if s is None:
        return None
    return {
        "mechanism": _MECHANISMS[s.kind],
        "threshold": s.threshold,
        "pre_threshold": s.cut,
        "delta": s.delta,
        "delta_bound": s.delta_bound,
        "delta_pre_threshold": s.delta_cut,
        "keys_per_unit": s.keys_per_unit,
        "share": float(s.share),
        "reuses": s.reuse,
        "std": _number(s.noise.std),
    }


def _bounding(plan: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "max_rows_per_unit": plan.max_rows,
        "max_groups_per_unit": plan.max_groups,
        "auto": None,
    }
    r = plan.rows
    if r is not None:
        out["auto"] = {
            "level": r.auto.level,
            "cap": r.auto.max_bound,
            "share": float(r.share),
            "epsilon": r.epsilon,
            "chosen": r.chosen,
        }
    return out


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("dpkit")
    except PackageNotFoundError:
        return "unknown"


def build(
    rel: QueryRelease,
    *,
    accountant: Any,
    schema: dict[str, Any],
    declared: Any,
    public_tables: dict[str, Any],
    engine: Any,
    spend: Any,
    language: str,
    text: str,
    secure: bool,
) -> dict[str, Any]:
    """The record of ``rel``, paid for by ``spend`` (the :class:`~dpkit.accounting.Spend`
    ``accountant`` returned), as JSON data.

    The Session's public facts: its ``schema`` (``declared``: the columns given with
    ``schema=``), its SQL ``public_tables`` and its ``engine`` (which hands the released
    frame back as Polars). ``language`` and ``text`` are the query as written
    (``"python"``, the builder's text; ``"sql"``, the SQL); ``secure`` says whether its
    randomness was secure.
    """
    plan = rel.plan
    budget = plan.budget
    assert budget is not None  # a released plan has its budget
    acct = accountant
    chosen = dict(rel.bounds)
    auto = {b.aggregate: b for b in plan.bounds}
    declared = set(declared)
    public = public_tables or {}
    keys = None
    if plan.by:
        keys = "public" if plan.public_keys else "private"
    record: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "time": spend.timestamp.isoformat(),
        "spend": spend.index,
        "label": rel.label,
        "query": {"language": language, "text": text},
        "engine": plan.engine,
        "privacy_unit": rel.privacy_unit,
        "relation": rel.relation,
        "schema": [
            {"name": c, "type": str(t), "declared": c in declared} for c, t in schema.items()
        ],
        "public_tables": (
            {name: list(frame.columns) for name, frame in public.items()}
            if language == "sql"
            else {}
        ),
        "privacy": {
            "cost": loss_to_dict(rel.privacy),
            "charged": loss_to_dict(spend.charge),
            "events": [event_to_dict(e) for e in spend.events],
            "budget": {
                "total": loss_to_dict(acct.budget),
                "relation": acct.relation,
                "ledger": None if acct.ledger is None else acct.ledger.name,
            },
        },
        "plan": {
            "noise": budget.noise,
            "epsilon": None if budget.epsilon is None else float(budget.epsilon),
            "rho": None if budget.rho is None else float_up(budget.rho),
            "delta": getattr(budget.cost, "delta", 0.0),
            "alpha": plan.alpha,
            "bounding": _bounding(plan),
            "group_by": {"columns": list(plan.by), "keys": keys},
            "aggregates": [_aggregate(a, chosen, auto) for a in plan.aggregates],
            "parts": _parts(plan),
            "quantiles": _quantiles(plan),
            "selection": _selection(plan),
            "notes": list(plan.notes),
            "text": str(plan),
        },
        "table": _table(engine.released(rel.frame)),
        "randomness": {"secure": bool(secure)},
        "dpkit": _version(),
    }
    # the form it has once stored (tuples as lists): a record read back equals this one
    return json.loads(json.dumps(record, allow_nan=False))
