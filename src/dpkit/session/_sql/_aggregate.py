"""SQL aggregate calls: what each asks the Session for, and what is refused.

``COUNT``, ``SUM``, ``AVG``, ``VAR_POP``/``VARIANCE``, ``STDDEV``/``STDDEV_POP``, ``MEDIAN``,
``PERCENTILE_CONT``/``PERCENTILE_DISC`` (``WITHIN GROUP``), ``QUANTILE_CONT``/``QUANTILE_DISC``
and ``APPROX_QUANTILE`` map onto the Session's aggregates; ``MIN``/``MAX``, distinct counts,
``FILTER`` and every other aggregate are refused with a hint.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dpkit.session._sql._expr import literal_number, sql_text
from dpkit.session._sql._parse import refuse, sqlglot_modules

__all__ = [
    "AGGREGATES",
    "BOUNDED",
    "Call",
    "clamped",
    "contains_aggregate",
    "is_aggregate",
    "read_call",
    "unparen",
]

_, exp = sqlglot_modules()

#: SQL aggregate -> dpkit aggregate (also the suffix of its default output name)
BOUNDED: dict[type, str] = {
    exp.Sum: "sum",
    exp.Avg: "mean",
    exp.VariancePop: "var",
    exp.Variance: "var",
    exp.Stddev: "std",
    exp.StddevPop: "std",
}
_QUANTILE_FUNCS = (exp.PercentileCont, exp.PercentileDisc, exp.ApproxQuantile, exp.Quantile)
AGGREGATES = (
    "COUNT(*), COUNT(x), SUM, AVG, VAR_POP/VARIANCE, STDDEV/STDDEV_POP, MEDIAN, "
    "PERCENTILE_CONT(q) WITHIN GROUP (ORDER BY x), QUANTILE_CONT(x, q or [q1, q2, ...])"
)


def is_aggregate(node: Any) -> bool:
    return isinstance(node, exp.AggFunc | exp.WithinGroup | exp.Filter)


def contains_aggregate(node: Any) -> bool:
    return any(True for _ in node.find_all(exp.AggFunc, exp.WithinGroup, exp.Filter))


def unparen(node: Any) -> Any:
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def _levels(node: Any, call: Any) -> tuple[tuple[float, ...], bool]:
    """The quantile level(s) of a literal number or a list of them; (levels, is a list)."""
    items = node.expressions if isinstance(node, exp.Array) else [node]
    levels = []
    for item in items:
        q = literal_number(item)
        if q is None or not 0 < q < 1:
            extreme = q is not None and q in (0, 1)
            raise refuse(
                f"the level {sql_text(item)} of {sql_text(call)}",
                "an exact minimum or maximum has unbounded sensitivity"
                if extreme
                else "a quantile level is a number literal strictly between 0 and 1",
                "use a level such as 0.01 or 0.99 (a private low or high percentile)"
                if extreme
                else "write the level as a literal, such as 0.5",
            )
        levels.append(float(q))
    return tuple(levels), isinstance(node, exp.Array)


@dataclass
class Call:
    """An aggregate call as written: its kind, argument node and levels."""

    kind: str
    arg: Any
    levels: tuple[float, ...] = ()
    listed: bool = False
    single: bool = False  # MEDIAN: one column named <x>_median


def read_call(node: Any) -> Call:
    """What an aggregate call asks for; refusals for what has no private counterpart."""
    node = unparen(node)
    text = sql_text(node)
    if isinstance(node, exp.Filter):
        raise refuse(
            f"{text}",
            "FILTER on an aggregate is not compiled",
            "put the condition inside: SUM(CASE WHEN cond THEN x END), or in WHERE",
        )
    if isinstance(node, exp.Min | exp.Max):
        which = "MIN" if isinstance(node, exp.Min) else "MAX"
        level = "0.01" if which == "MIN" else "0.99"
        arg = sql_text(node.this)
        raise refuse(
            f"{which}({arg})",
            "an exact extreme has unbounded sensitivity: one record decides it",
            f"release a low or high percentile instead, QUANTILE_CONT({arg}, {level}) or "
            f"PERCENTILE_CONT({level}) WITHIN GROUP (ORDER BY {arg}), with bounds",
        )
    if isinstance(node, exp.Count):
        arg = node.this
        if isinstance(arg, exp.Distinct):
            raise refuse(
                f"{text}",
                "a count of distinct values is not released by the Session",
                "GROUP BY the column and release COUNT(*) (its groups chosen privately), "
                "or count rows",
            )
        if arg is None or isinstance(arg, exp.Star) or literal_number(arg) is not None:
            return Call("count", None)
        return Call("count", arg)
    kind = BOUNDED.get(type(node))
    if kind is not None:
        if isinstance(node.this, exp.Distinct):
            raise refuse(f"{text}", "DISTINCT inside an aggregate is not released", "drop it")
        return Call(kind, node.this)
    if isinstance(node, exp.Median):
        return Call("quantile", node.this, (0.5,), single=True)
    if isinstance(node, exp.WithinGroup):
        inner = node.this
        order = node.expression
        if not isinstance(inner, exp.PercentileCont | exp.PercentileDisc) or not isinstance(
            order, exp.Order
        ):
            raise refuse(f"{text}", "this WITHIN GROUP aggregate is not supported", AGGREGATES)
        if len(order.expressions) != 1:
            raise refuse(f"{text}", "order by one value", "WITHIN GROUP (ORDER BY x)")
        ordered = order.expressions[0]
        levels, listed = _levels(inner.this, node)
        if ordered.args.get("desc"):
            levels = tuple(sorted(1 - q for q in levels))
        return Call("quantile", ordered.this, levels, listed=listed)
    if isinstance(node, _QUANTILE_FUNCS):
        level_node = node.args.get("quantile") or node.args.get("expression")
        if level_node is None:
            raise refuse(f"{text}", "a quantile needs its level", "QUANTILE_CONT(x, 0.5)")
        levels, listed = _levels(level_node, node)
        return Call("quantile", node.this, levels, listed=listed)
    if isinstance(node, exp.AggFunc):
        name = node.key.upper()
        raise refuse(
            f"the aggregate {text}",
            f"{name} has no private release in dpkit",
            f"use {AGGREGATES}",
        )
    raise refuse(f"{text}", "not an aggregate", AGGREGATES)  # pragma: no cover


def clamped(arg: Any) -> tuple[Any, tuple[float, float] | None]:
    """``CLAMP(x, lo, hi)``, ``LEAST(GREATEST(x, lo), hi)`` or ``GREATEST(LEAST(x, hi), lo)``
    with literal bounds -> (x, (lo, hi)); anything else -> (arg, None)."""
    node = unparen(arg)
    clamp = isinstance(node, exp.Anonymous) and str(node.this).upper() == "CLAMP"
    if clamp and len(node.expressions) == 3:
        lo, hi = (literal_number(a) for a in node.expressions[1:])
        if lo is not None and hi is not None:
            return node.expressions[0], (float(lo), float(hi))
    for outer, inner_cls in ((exp.Least, exp.Greatest), (exp.Greatest, exp.Least)):
        if isinstance(node, outer) and len(node.expressions) == 1:
            inner = unparen(node.this)
            outer_b = literal_number(node.expressions[0])
            if isinstance(inner, inner_cls) and len(inner.expressions) == 1:
                inner_b = literal_number(inner.expressions[0])
                if outer_b is not None and inner_b is not None:
                    lo, hi = (inner_b, outer_b) if outer is exp.Least else (outer_b, inner_b)
                    return inner.this, (float(lo), float(hi))
    return arg, None
