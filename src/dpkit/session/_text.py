"""A query's builder calls as readable Python text, for reports and records.

:class:`~dpkit.session.Query` keeps each ``with_columns`` and ``filter`` call as text when it
is made (the expressions are rebuilt as total ones, whose form is dpkit's, not the
analyst's), and writes the whole chain with :func:`query_text`::

    s.query()
     .filter(nw.col("Age") >= 18)
     .group_by("Education")
     .agg(dp.count(), dp.mean("Age", bounds=(0.0, 100.0)))

The text is for people (a privacy officer reading a report): it names what the analyst
wrote, from the expression's own nodes, and falls back to narwhals' own notation for a
construct it has no operator for. Everything in it is public (the query, its bounds, its
public keys: the analyst's own inputs).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import narwhals as nw

__all__ = ["aggregate_text", "expr_text", "query_text", "value_text"]

_BINARY = {
    "__ge__": ">=",
    "__gt__": ">",
    "__le__": "<=",
    "__lt__": "<",
    "__eq__": "==",
    "__ne__": "!=",
    "__and__": "&",
    "__or__": "|",
    "__xor__": "^",
    "__add__": "+",
    "__sub__": "-",
    "__mul__": "*",
    "__truediv__": "/",
    "__floordiv__": "//",
    "__mod__": "%",
    "__pow__": "**",
}
_REFLECTED = {f"__r{name[2:]}": op for name, op in _BINARY.items()}
_UNARY = {"__invert__": "~", "__neg__": "-"}
#: at most this many items of a list are written out (bins, public keys)
_SHOWN = 8


def value_text(value: Any) -> str:
    """A Python literal for ``value``: strings in double quotes, lists shortened."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e16:
        return repr(value)
    if isinstance(value, list | tuple):
        items = [value_text(v) for v in value[:_SHOWN]]
        if len(value) > _SHOWN:
            items.append(f"... {len(value) - _SHOWN} more")
        inner = ", ".join(items)
        return f"({inner})" if isinstance(value, tuple) else f"[{inner}]"
    if isinstance(value, nw.dtypes.DType | type):
        return f"nw.{value}"
    return repr(value)


def _arg(value: Any, str_as_lit: bool) -> tuple[str, bool]:
    """An argument of a node: ``(text, atomic)``."""
    if isinstance(value, nw.Expr):
        return _render(value)
    if isinstance(value, str) and not str_as_lit:
        return f"nw.col({value_text(value)})", True
    return value_text(value), True


def _render(expr: nw.Expr) -> tuple[str, bool]:
    """``(text, atomic)``: atomic text needs no parentheses before ``.method()``."""
    nodes = getattr(expr, "_nodes", None)
    if not nodes:
        return repr(expr), True
    text, atomic = "", True
    for node in nodes:
        name = node.name
        args = [_arg(e, node.str_as_lit) for e in node.exprs]
        kwargs = {k: v for k, v in node.kwargs.items() if v is not None}
        if name == "col":
            names = kwargs.get("names", [])
            text, atomic = f"nw.col({', '.join(value_text(n) for n in names)})", True
        elif name == "lit":
            text, atomic = f"nw.lit({value_text(kwargs.get('value'))})", True
        elif name == "when_then" and len(args) in (2, 3):
            cond = _condition(node.exprs[0])
            text = f"nw.when({cond}).then({args[1][0]})"
            if len(args) == 3:
                text += f".otherwise({args[2][0]})"
            atomic = True
        elif name in _BINARY and len(args) == 1:
            right = args[0][0] if args[0][1] else f"({args[0][0]})"
            left = text if atomic else f"({text})"
            text, atomic = f"{left} {_BINARY[name]} {right}", False
        elif name in _REFLECTED and len(args) == 1:
            left = args[0][0] if args[0][1] else f"({args[0][0]})"
            right = text if atomic else f"({text})"
            text, atomic = f"{left} {_REFLECTED[name]} {right}", False
        elif name in _UNARY and not args:
            inner = text if atomic else f"({text})"
            text, atomic = f"{_UNARY[name]}{inner}", False
        else:
            parts = [a for a, _ in args]
            parts += [f"{k}={value_text(v)}" for k, v in kwargs.items()]
            call = f"{name}({', '.join(parts)})"
            # a function may start an expression (all_horizontal, ...)
            base = text if atomic else f"({text})"
            text = f"{base}.{call}" if text else f"nw.{call}"
            atomic = True
    return text, atomic


def _condition(cond: Any) -> str:
    """The condition of ``nw.when``, which narwhals wraps in ``all_horizontal``."""
    nodes = getattr(cond, "_nodes", None)
    if nodes and len(nodes) == 1 and nodes[0].name == "all_horizontal":
        inner = [_arg(e, False)[0] for e in nodes[0].exprs]
        return ", ".join(inner)
    return _arg(cond, False)[0]


def expr_text(expr: Any) -> str:
    """A narwhals expression as the Python that builds it (``nw.col("Age") >= 18``)."""
    return _render(expr)[0]


_DEFAULT_NAMES = {
    "Sum": "{}_sum",
    "Mean": "{}_mean",
    "Var": "{}_var",
    "Std": "{}_std",
}


def aggregate_text(agg: Any) -> str:
    """A dpkit aggregate as the call that makes it (``dp.mean("Age", bounds=(0.0, 100.0))``)."""
    kind = type(agg).__name__
    column = agg.column
    args: list[str] = []
    kw: list[str] = []
    if kind == "Count":
        func = "count"
        default = "count" if column is None else f"{column}_count"
        if column is not None:
            args.append(value_text(column))
    elif kind == "Histogram":
        func = "histogram"
        default = f"{column}_count"
        args.append(value_text(column))
        bins = agg.edges if agg.edges is not None else agg.categories
        kw.append(f"bins={value_text(list(bins))}")
    elif kind == "Quantile":
        levels = list(agg.levels)
        func = "median" if agg.single and levels == [0.5] else "quantile"
        default = f"{column}_median" if func == "median" else str(column)
        args.append(value_text(column))
        if func == "quantile":
            args.append(value_text(levels[0] if len(levels) == 1 else levels))
        kw.append(f"bounds={value_text(tuple(agg.bounds))}")
        if agg.method != "auto":
            kw.append(f"method={value_text(agg.method)}")
    else:
        if agg.root:
            kind = "Std"
        func = kind.lower()
        default = _DEFAULT_NAMES.get(kind, "{}").format(column)
        args.append(value_text(column))
        if agg.auto:
            kw.append('bounds="auto"')
            if agg.bounds_method != "histogram":
                kw.append(f"bounds_method={value_text(agg.bounds_method)}")
            if agg.lower is not None:
                kw.append(f"lower={value_text(agg.lower)}")
        else:
            kw.append(f"bounds={value_text(tuple(agg.bounds))}")
    fill = agg.fill
    if fill is not None:
        kw.append(f"fill={value_text(fill)}")
    if agg.name != default:
        kw.append(f"name={value_text(agg.name)}")
    if agg.weight != 1.0:
        kw.append(f"weight={value_text(agg.weight)}")
    return f"dp.{func}({', '.join(args + kw)})"


def query_text(
    head: str,
    steps: Sequence[str],
    by: Sequence[str],
    keys: Any,
    aggregates: Sequence[Any],
    group_options: Sequence[str] = (),
) -> str:
    """The builder chain: ``head`` (``s.query(...)``), the recorded ``with_columns`` and
    ``filter`` steps, the ``group_by`` (``keys``: ``None`` or the public keys' frame) and
    the ``agg``, one call per line."""
    lines = [head, *steps]
    if by:
        cols = ", ".join(value_text(c) for c in by)
        if keys is None:
            key_text = "keys=None"
        else:
            rows = keys.rows() if len(by) > 1 else keys[by[0]].to_list()
            key_text = f"keys={value_text(list(rows))}"
        lines.append(f".group_by({', '.join([cols, key_text, *group_options])})")
    lines.append(f".agg({', '.join(aggregate_text(a) for a in aggregates)})")
    return "\n ".join(lines)
