"""Total row-level expressions: a narwhals expression rebuilt so that no value can make it fail.

A release must not raise, warn or change its output type because of one record: an
exception carries no noise, so a filter that fails on one value tells neighbouring tables
apart with certainty. Engines fail on values in many ways: a strict cast of ``"x"`` to an
integer (Polars, DuckDB, Spark), an integer overflow or a division by zero (DuckDB, Spark
under ANSI mode), the absolute value of the smallest integer (DuckDB), a cast of a NaN to an
integer (pandas); NumPy warns where others return NaN. This module is the one place that
makes row-level expressions *total*, the same way on every engine, as OpenDP's
transformations are:

* a cast that cannot convert a value gives null (:func:`total_cast`, in
  :mod:`dpkit.session._casts`): text is matched
  against a strict pattern before it is cast (at most 18 digits for an integer, so it
  cannot overflow; an ISO date whose day exists in its month), a number against the
  target's range;
* integer arithmetic whose result would leave its type, a division, floor division or
  modulo by zero, the logarithm of a number <= 0, the square root of a negative number, a
  sine or cosine of a non-finite number give null;
* an operation that is not known to be total is refused (:class:`~dpkit.ParameterError`,
  from the expression's form and the public schema alone, before anything is spent),
  naming the construct and what works instead.

The partial operations are rewritten by masking their *inputs*: the value an operation could
fail on is replaced by null (or, for casts, by a safe constant whose result is then masked
again) before the operation runs, so no engine ever sees it, even engines that evaluate
every branch of a ``when/then`` for every row. Whether a value is masked is decided by
total operations only (comparisons, pattern matches, casts that cannot fail).

:func:`total_predicate` is what :meth:`dpkit.session.Query.filter` applies; its result is
null-safe (a row whose condition is null is dropped). The rules depend on the schema only;
types are read by evaluating the expression on an empty Polars frame of that schema, which
involves no value at all. Engines still differ in what a total operation returns on edge
values (DuckDB rounds a float cast to an integer, the others truncate; Spark renders booleans
as ``"true"``, pandas as ``"True"``): those are differences of value, never of outcome.
"""

from __future__ import annotations

import datetime
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import narwhals as nw
import polars as pl
from narwhals._expression_parsing import ExprKind, ExprNode

from dpkit.errors import ParameterError
from dpkit.session._casts import (
    _DATE_FORMATS,
    _INT64_MARGIN,
    _PARTIAL,
    INT_PATTERN,
    NUMBER_PATTERN,
    int_range,
    parse_number,
    parse_temporal,
    refuse,
    total_cast,
    when,
)

__all__ = [
    "INT_PATTERN",
    "NUMBER_PATTERN",
    "Typed",
    "columns_of",
    "int_range",
    "parse_number",
    "polars_type",
    "total_cast",
    "total_expression",
    "total_predicate",
]

_ROW_BY_ROW = (
    "only row-by-row operations are allowed (no aggregations, windows or over(): a filter "
    "that looks at other rows would let one person change which rows of others are kept)"
)
_KINDS = (
    "values of different kinds compare differently on each engine (DuckDB casts text to "
    "a number row by row, and fails on text that is not one)"
)


# -- types ------------------------------------------------------------------------------------


def polars_type(dtype: Any) -> Any:
    """The Polars type of a narwhals ``dtype``: the type narwhals casts an empty Polars
    column to (raises for a type Polars cannot make)."""
    frame = nw.from_native(pl.DataFrame({"c": pl.Series([], dtype=pl.Null)}))
    return frame.select(nw.col("c").cast(dtype)).to_native().schema["c"]


def _polars_dtype(dtype: Any) -> pl.DataType | None:
    """The Polars type of a narwhals ``dtype`` (None for types Polars has no equivalent of)."""
    if isinstance(dtype, nw.Object | nw.Unknown):
        return None
    try:
        return polars_type(dtype)
    except Exception:  # a type Polars cannot make (the schema is public)
        return None


class Probe:
    """An empty Polars frame with a public schema: the type of an expression, read by
    evaluating it on no rows (nothing about any value can be learnt or can fail there)."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        self.schema = dict(schema)
        cols = {}
        for name, dtype in self.schema.items():
            native = _polars_dtype(dtype)
            cols[name] = pl.Series([], dtype=pl.Null if native is None else native)
        self._frame = nw.from_native(pl.DataFrame(cols).lazy())

    def dtype(self, expr: nw.Expr) -> Any:
        """The narwhals type of ``expr`` on this schema; raises the engine's error (a type
        error visible from the schema) if it does not type-check."""
        frame = self._frame.select(expr.alias("__dpkit_v"))
        frame.collect()  # some type errors show only when the plan runs (on no rows here)
        return frame.collect_schema()["__dpkit_v"]


def _family(dtype: Any) -> str:
    """Which comparison family a type belongs to (values compare only within one)."""
    if isinstance(dtype, nw.Unknown):
        return "null"
    if isinstance(dtype, nw.Boolean):
        return "boolean"
    if dtype.is_numeric():
        return "number"
    if isinstance(dtype, nw.String | nw.Categorical | nw.Enum):
        return "text"
    if isinstance(dtype, nw.Datetime):
        return f"datetime[{dtype.time_zone}]"
    for kind in (nw.Date, nw.Time, nw.Duration):
        if isinstance(dtype, kind):
            return kind.__name__.lower()
    return str(dtype)


def _value_family(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, datetime.datetime):
        tz = None if value.tzinfo is None else "*"
        return f"datetime[{tz}]"
    if isinstance(value, datetime.date):
        return "date"
    if isinstance(value, datetime.time):
        return "time"
    if isinstance(value, datetime.timedelta):
        return "duration"
    return type(value).__name__


def _compatible(a: str, b: str) -> bool:
    if "null" in (a, b) or a == b:
        return True
    if a.startswith("datetime[") and b.startswith("datetime["):
        # aware with aware (instants, whatever their zones); never naive with aware
        return "datetime[None]" not in (a, b)
    return False


# -- the typed tree ---------------------------------------------------------------------------


_NO_VALUE = object()


@dataclass(frozen=True)
class Typed:
    """A total expression with its narwhals type; ``value`` is the Python literal when the
    argument was given as a plain value (kept as such when the node is rebuilt, so that
    every engine types it as it would the user's own literal)."""

    expr: nw.Expr
    dtype: Any
    value: Any = _NO_VALUE

    @property
    def is_literal(self) -> bool:
        return self.value is not _NO_VALUE

    def arg(self) -> Any:
        """What to hand a rebuilt node: the plain value for a literal, else the expression."""
        return self.value if self.is_literal else self.expr


def _node(kind: ExprKind, name: str, args: list[Any], like: ExprNode, **kwargs: Any) -> ExprNode:
    return ExprNode(
        kind,
        name,
        exprs=tuple(args),
        str_as_lit=like.str_as_lit,
        allow_multi_output=like.allow_multi_output,
        **kwargs,
    )


# -- the walker -------------------------------------------------------------------------------

_COMPARISONS = {"__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"}
_LOGIC = {"__and__", "__or__", "__xor__"}
_ARITHMETIC = {
    "__add__",
    "__sub__",
    "__rsub__",
    "__mul__",
    "__truediv__",
    "__rtruediv__",
    "__floordiv__",
    "__rfloordiv__",
    "__mod__",
    "__rmod__",
    "__pow__",
    "__rpow__",
}
#: methods that are total on any input of the types they accept (type errors are refused
#: from the schema by the probe)
_PASS = {
    "alias",
    "is_null",
    "is_between",
    "clip",
    "clip_lower",
    "clip_upper",
    "fill_null",
    "str.len_chars",
    "str.starts_with",
    "str.ends_with",
    "str.to_uppercase",
    "str.to_lowercase",
    "str.to_titlecase",
    "str.strip_chars",
    "str.strip_chars_start",
    "str.strip_chars_end",
    "str.slice",
    "str.zfill",
    "str.pad_start",
    "str.pad_end",
    "dt.date",
    "dt.year",
    "dt.month",
    "dt.day",
    "dt.hour",
    "dt.minute",
    "dt.second",
    "dt.millisecond",
    "dt.microsecond",
    "dt.nanosecond",
    "dt.ordinal_day",
    "dt.weekday",
    "name.keep",
    "name.prefix",
    "name.suffix",
    "name.to_lowercase",
    "name.to_uppercase",
}
_FLOAT_ONLY = {"is_nan", "fill_nan", "is_finite"}
_ROOTS_PASS = {"all_horizontal", "any_horizontal", "min_horizontal", "max_horizontal"}
_HINTS = {
    "map_batches": "write the condition with narwhals expressions (a Python function on the "
    "values cannot be checked)",
    "str.to_time": "compare the text itself, or use dt fields of a Date/Datetime column",
    "replace_strict": "give it a `default=` (then every value has an image), or use when/then",
    "dt.replace_time_zone": "declare the column's time zone in the data (local times that do "
    "not exist or are ambiguous fail)",
    "dt.timestamp": "compare the Datetime with a datetime literal instead",
    "dt.offset_by": "compare with a shifted datetime literal instead",
    "dt.truncate": "compare dt.year(), dt.month(), ... instead",
    "sum_horizontal": "cast the columns to nw.Float64 first (an integer sum can overflow)",
    "mean_horizontal": "cast the columns to nw.Float64 first (an integer sum can overflow)",
}


class _Walker:
    """Rebuilds one expression as a total one (see the module docstring)."""

    def __init__(self, probe: Probe, owner: str) -> None:
        self.probe = probe
        self.owner = owner
        self.columns: set[str] = set()

    # -- helpers

    def refuse(self, what: str, hint: str = "", why: str = _PARTIAL) -> ParameterError:
        hint = hint or (
            "rewrite it with comparisons, boolean operators, is_in, is_null, string "
            "predicates, dt fields or casts"
        )
        return refuse(self.owner, what, hint, why)

    def typed(self, expr: nw.Expr, value: Any = _NO_VALUE) -> Typed:
        try:
            dtype = self.probe.dtype(expr)
        except ParameterError:
            raise
        except Exception as err:  # the engine's type error, from the schema alone
            raise ParameterError(
                f"{self.owner}: the expression does not type-check on the data's schema "
                f"({type(err).__name__}: {_first_line(err)}); got {expr!r}"
            ) from None
        return Typed(expr, dtype, value)

    def arg(self, value: Any, str_as_lit: bool) -> Typed:
        """One argument of a node: an expression, a column name or a literal value."""
        if isinstance(value, nw.Expr):
            return self.walk(value)
        if isinstance(value, str) and not str_as_lit:
            return self.walk(nw.col(value))
        if isinstance(value, list | tuple | dict | set):
            raise self.refuse(f"the value {value!r} as an argument", "give a scalar value")
        return self.typed(nw.lit(value), value)

    # -- entry

    def walk(self, expr: nw.Expr) -> Typed:
        nodes = getattr(expr, "_nodes", None)
        if not nodes:
            raise TypeError(f"{self.owner}: expected a narwhals expression; got {expr!r}")
        acc = self.root(nodes[0])
        for node in nodes[1:]:
            acc = self.apply(acc, node)
        return acc

    def root(self, node: ExprNode) -> Typed:
        name = node.name
        if name == "col":
            names = node.kwargs.get("names", [])
            if len(names) != 1:
                raise self.refuse(
                    f"nw.col with {len(names)} columns", "name one column per expression"
                )
            col = names[0]
            if col not in self.probe.schema:
                raise ParameterError(
                    f"{self.owner}: unknown column {col!r}; the data has "
                    f"{', '.join(map(repr, self.probe.schema))}"
                )
            dtype = self.probe.schema[col]
            if _polars_dtype(dtype) is None:
                raise ParameterError(
                    f"{self.owner}: column {col!r} of type {dtype} cannot be used in an "
                    "expression; declare its type with `schema=`"
                )
            self.columns.add(col)
            return Typed(nw.col(col), dtype)
        if name == "lit":
            value = node.kwargs.get("value")
            if isinstance(value, list | tuple | dict | set):
                raise self.refuse(f"the literal {value!r}", "use scalar literals")
            return self.typed(
                nw.Expr(node), value if node.kwargs.get("dtype") is None else _NO_VALUE
            )
        args = [self.arg(v, node.str_as_lit) for v in node.exprs]
        if name == "when_then":
            self.check_boolean(args[0], "the condition of when/then")
            parts = [args[0].expr.fill_null(False), *(a.arg() for a in args[1:])]
            rebuilt = nw.Expr(_node(node.kind, name, parts, node, **node.kwargs))
            return self.typed(rebuilt)
        if name in _ROOTS_PASS or name in ("concat_str", "coalesce"):
            if name in ("all_horizontal", "any_horizontal"):
                for a in args:
                    self.check_boolean(a, f"an argument of {name}")
            elif name in ("min_horizontal", "max_horizontal"):
                for a in args:
                    self.check_number(a, name)
            elif name == "concat_str":
                for a in args:
                    if _family(a.dtype) not in ("text", "null"):
                        raise self.refuse(f"concat_str of {a.dtype}", "cast to nw.String first")
            elif name == "coalesce":
                self.check_same_family(args, name)
            exprs = [a.expr for a in args]
            return self.typed(nw.Expr(_node(node.kind, name, exprs, node, **node.kwargs)))
        if name in ("sum_horizontal", "mean_horizontal") and all(a.dtype.is_float() for a in args):
            exprs = [a.expr for a in args]
            return self.typed(nw.Expr(_node(node.kind, name, exprs, node, **node.kwargs)))
        raise self.refuse(f"{name}(...)", _HINTS.get(name, ""))

    def apply(self, acc: Typed, node: ExprNode) -> Typed:
        name = node.name
        if node.kind not in (ExprKind.ELEMENTWISE, ExprKind.WHEN_THEN):
            if name in _HINTS:
                raise self.refuse(f".{name}()", _HINTS[name])
            raise self.refuse(
                f".{name}()", "write a condition on each row's own values", _ROW_BY_ROW
            )
        if name == "cast":
            target = node.kwargs["dtype"]
            target = target() if isinstance(target, type) else target
            return self.typed(total_cast(acc.expr, acc.dtype, target, self.owner))
        if name in _COMPARISONS:
            other = self.arg(node.exprs[0], node.str_as_lit)
            self.check_same_family([acc, other], "a comparison")
            return self.rebuild(acc, node, [other])
        if name in _LOGIC or name == "__invert__":
            others = [self.arg(v, node.str_as_lit) for v in node.exprs]
            for t in [acc, *others]:
                if not (isinstance(t.dtype, nw.Boolean | nw.Unknown) or int_range(t.dtype)):
                    raise self.refuse(f"{name} on {t.dtype}", "apply it to booleans")
            return self.rebuild(acc, node, others)
        if name in _ARITHMETIC:
            return self.arithmetic(acc, node)
        if name in ("abs", "__neg__"):
            return self.negation(acc, node)
        if name in ("round", "floor", "ceil"):
            self.check_number(acc, name)
            if name == "round" and not 0 <= int(node.kwargs.get("decimals", 0)) <= 15:
                raise self.refuse("round with decimals outside 0..15", "round to 0..15 digits")
            if acc.dtype.is_integer():
                return acc  # already whole: every engine returns the value itself
            if name != "round" and acc.dtype.is_float():
                return self.whole(acc, node)
            return self.rebuild(acc, node, [])
        if name in ("log", "sqrt", "exp", "sin", "cos"):
            return self.domain(acc, node)
        if name in _FLOAT_ONLY:
            if not acc.dtype.is_numeric():
                raise self.refuse(f".{name}() on {acc.dtype}", "apply it to a number column")
            others = [self.arg(v, node.str_as_lit) for v in node.exprs]
            return self.rebuild(acc, node, others)
        if name == "is_in":
            values = node.kwargs.get("other", [])
            family = _family(acc.dtype)
            bad = [v for v in values if not _compatible(family, _value_family(v))]
            if bad:
                raise self.refuse(
                    f"is_in with values {bad[:3]!r} on a {acc.dtype} column",
                    "give values of the column's own type",
                    _KINDS,
                )
            return self.rebuild(acc, node, [])
        if name == "replace_strict" and node.kwargs.get("default") is not _no_default():
            # narwhals holds a given default among the node's arguments, not its kwargs
            others = [self.arg(v, node.str_as_lit) for v in node.exprs]
            return self.rebuild(acc, node, others)
        if name in ("str.contains", "str.replace", "str.replace_all"):
            return self.regex(acc, node)
        if name in ("str.to_date", "str.to_datetime"):
            fmt = node.kwargs.get("format")
            kind = _DATE_FORMATS.get(fmt) if isinstance(fmt, str) else None
            if kind is None or (kind == "datetime" and name == "str.to_date"):
                raise self.refuse(
                    f".{name}(format={fmt!r})",
                    "give format='%Y-%m-%d' for dates or '%Y-%m-%d %H:%M:%S' for datetimes "
                    "(parsed totally: text that is not such a date gives null), or declare "
                    "the column's type with `schema=`",
                )
            self.check_text(acc, name)
            if name == "str.to_date":
                return self.typed(parse_temporal(acc.expr, "date", nw.Date()))
            only = kind == "date"
            return self.typed(
                parse_temporal(acc.expr, "datetime", nw.Datetime("us"), date_only=only)
            )
        if name == "_is_close_float_promote":
            return self.rebuild(acc, node, [])
        if name in _PASS:
            others = [self.arg(v, node.str_as_lit) for v in node.exprs]
            if name == "fill_null":
                if node.kwargs.get("strategy") is not None:
                    raise self.refuse("fill_null with a strategy", "give a fill value")
                self.check_same_family([acc, *others], "fill_null")
            return self.rebuild(acc, node, others)
        raise self.refuse(f".{name}()", _HINTS.get(name, ""))

    # -- node kinds

    def rebuild(self, acc: Typed, node: ExprNode, others: list[Typed]) -> Typed:
        args = [o.arg() for o in others]
        return self.typed(
            acc.expr._append_node(_node(node.kind, node.name, args, node, **node.kwargs))
        )

    def check_boolean(self, t: Typed, what: str) -> None:
        if not isinstance(t.dtype, nw.Boolean | nw.Unknown):
            raise ParameterError(
                f"{self.owner}: {what} must be a boolean expression; got {t.dtype}"
            )

    def check_number(self, t: Typed, what: str) -> None:
        if not (t.dtype.is_numeric() or isinstance(t.dtype, nw.Unknown)):
            raise self.refuse(f"{what} on {t.dtype}", "apply it to number columns")

    def check_text(self, t: Typed, what: str) -> None:
        if _family(t.dtype) not in ("text", "null"):
            raise self.refuse(f".{what}() on {t.dtype}", "apply it to a text column")

    def check_same_family(self, items: list[Typed], what: str) -> None:
        fams = [_value_family(t.value) if t.is_literal else _family(t.dtype) for t in items]
        for f in fams[1:]:
            if not _compatible(fams[0], f):
                types = " and ".join(str(t.dtype) for t in items)
                raise self.refuse(
                    f"{what} of {types}",
                    "compare values of one kind (numbers with numbers, text with text, a "
                    "date column with a datetime.date); to compare text with a number, cast "
                    "the text first (nw.col(...).cast(nw.Int64) gives null where it is not a "
                    "number)",
                    _KINDS,
                )

    def regex(self, acc: Typed, node: ExprNode) -> Typed:
        self.check_text(acc, node.name)
        others = [self.arg(v, node.str_as_lit) for v in node.exprs]
        literal = bool(node.kwargs.get("literal", False))
        pattern = others[0] if others else None
        if pattern is None or not pattern.is_literal or not isinstance(pattern.value, str):
            raise self.refuse(f".{node.name}() with a pattern that is not a string literal", "")
        for t in others[1:]:
            if not t.is_literal:
                raise self.refuse(f".{node.name}() with a replacement that is not a literal", "")
        if not literal:
            _check_pattern(self.owner, pattern.value)
        return self.rebuild(acc, node, others)

    def negation(self, acc: Typed, node: ExprNode) -> Typed:
        self.check_number(acc, node.name)
        rng = int_range(acc.dtype)
        if rng is None:
            if not acc.dtype.is_float():
                raise self.refuse(f".{node.name}() on {acc.dtype}", "cast to nw.Float64 first")
            return self.rebuild(acc, node, [])
        if rng[0] == 0:
            if node.name == "abs":
                return acc
            raise self.refuse("negating an unsigned integer", "cast to a signed type first")
        masked = when(acc.expr != rng[0], acc.expr)  # -(min) does not exist in the type
        return self.typed(masked._append_node(_node(node.kind, node.name, [], node)))

    def whole(self, acc: Typed, node: ExprNode) -> Typed:
        """``floor`` or ``ceil`` of a float. Spark computes them as a 64-bit integer, which
        fails (ANSI mode) on NaN, an infinity or a value beyond ``2**63``; a float of at
        least ``2**52`` in magnitude (``2**23`` in Float32) is whole already, so only
        smaller ones are rounded (the others masked to null first) and the rest pass as
        they are. The result keeps the float type on every engine, with -0.0 as 0.0
        (Spark's integer has no sign of zero)."""
        x = acc.expr
        top = float(2**23) if isinstance(acc.dtype, nw.Float32) else float(2**52)
        small = x.abs() < top  # false for NaN and the infinities
        masked = when(small, x)
        rounded = masked._append_node(_node(node.kind, node.name, [], node, **node.kwargs))
        rounded = rounded.cast(acc.dtype)
        zero = nw.lit(0.0, acc.dtype)  # -0.0 as 0.0 (Polars simplifies away x + 0.0)
        rounded = nw.when(rounded == 0).then(zero).otherwise(rounded)
        return self.typed(nw.when(small).then(rounded).otherwise(x))

    def domain(self, acc: Typed, node: ExprNode) -> Typed:
        self.check_number(acc, node.name)
        x = acc.expr if acc.dtype.is_float() else acc.expr.cast(nw.Float64())
        # NaN is masked too: engines order it above every number (Polars, DuckDB, Spark)
        # or compare it as false (NumPy), so a bare comparison would not say the same
        if node.name == "log":
            base = node.kwargs.get("base", math.e)
            if not (
                isinstance(base, int | float) and math.isfinite(base) and base > 0 and base != 1
            ):
                raise self.refuse(f"log with base {base!r}", "give a finite base > 0, not 1")
            x = when((x > 0) & ~x.is_nan(), x)
        elif node.name == "sqrt":
            x = when((x >= 0) & ~x.is_nan(), x)
        elif node.name in ("sin", "cos"):
            x = when(x.is_finite(), x)
        # exp: IEEE overflow gives inf on every engine (NumPy's warning is silenced)
        return self.typed(x._append_node(_node(node.kind, node.name, [], node, **node.kwargs)))

    def arithmetic(self, acc: Typed, node: ExprNode) -> Typed:
        other = self.arg(node.exprs[0], node.str_as_lit)
        name = node.name
        reverse = name.startswith("__r")
        op = name.replace("__r", "__", 1) if reverse else name
        left, right = (other, acc) if reverse else (acc, other)  # as the user wrote them
        return self.binary(left, right, op)

    def binary(self, left: Typed, right: Typed, op: str) -> Typed:
        """``left op right`` with the operands masked to null where the result would not
        exist: a division by zero, an integer result outside its type."""
        for t in (left, right):
            if not (t.dtype.is_numeric() or isinstance(t.dtype, nw.Unknown)):
                raise self.refuse(f"arithmetic ({op}) on {t.dtype}", "apply it to numbers")
            if isinstance(t.dtype, nw.Decimal | nw.Int128 | nw.UInt128):
                raise self.refuse(f"arithmetic on {t.dtype}", "cast to nw.Float64 first")
        if op == "__pow__":
            return self.power(left, right)
        naive = self.typed(_binary(left.expr, op, right.arg()))
        result = naive.dtype
        if op in ("__truediv__", "__floordiv__", "__mod__"):
            ok = right.expr != 0
            rng = int_range(result)
            if rng is not None and op == "__floordiv__":
                # Spark floors the float quotient into a 64-bit integer, DuckDB subtracts 1
                # from the truncated one: keep the quotient inside the type
                q = left.expr.cast(nw.Float64()) / right.expr.cast(nw.Float64())
                ok = ok & (q.abs() <= float(2 ** (rng[2] - 2)))
            elif rng is not None and op == "__mod__":
                # DuckDB and Spark restore Python's sign as ((a % b) + b) % b
                ok = ok & (right.expr.cast(nw.Float64()).abs() <= float(2 ** (rng[2] - 2)))
        elif result.is_float() or isinstance(result, nw.Unknown):
            return naive  # IEEE arithmetic: inf and NaN, never an error
        else:
            rng = int_range(result)
            if rng is None:
                raise self.refuse(f"arithmetic giving {result}", "cast to nw.Float64 first")
            lo, hi, bits = rng
            fl, fr = left.expr.cast(nw.Float64()), right.expr.cast(nw.Float64())
            r = {"__add__": fl + fr, "__sub__": fl - fr, "__mul__": fl * fr}[op]
            if bits == 64:  # float64 rounds: keep a margin from the limits
                lo_f = float(lo) + _INT64_MARGIN if lo else 0.0
                hi_f = float(hi + 1) - _INT64_MARGIN
            else:  # exact in float64
                lo_f, hi_f = float(lo), float(hi)
            ok = (r >= lo_f) & (r <= hi_f)
        masked_left = when(ok, left.expr)
        masked_right = right.arg() if right.is_literal else when(ok, right.expr)
        return self.typed(_binary(masked_left, op, masked_right))

    def power(self, base: Typed, exponent: Typed) -> Typed:
        k = exponent.value if exponent.is_literal else None
        if isinstance(k, bool) or not isinstance(k, int | float):
            raise self.refuse("a power with a column as exponent", "use a literal exponent")
        if base.dtype.is_integer():
            if isinstance(k, float) and k.is_integer():
                k = int(k)
            if not isinstance(k, int) or not 0 <= k <= 8:
                raise self.refuse(
                    f"an integer to the power {k!r}", "cast to nw.Float64 first, or use 0..8"
                )
            if k == 0:
                return self.typed(when(~base.expr.is_null(), nw.lit(1, base.dtype)))
            out = base
            for _ in range(k - 1):  # repeated total multiplication: one type on every engine
                out = self.binary(out, base, "__mul__")
            return out
        if not math.isfinite(k):
            raise self.refuse(f"a power {k!r}", "use a finite exponent")
        x = base.expr
        if not float(k).is_integer():  # a negative number to a fractional power: null
            x = when((x >= 0) & ~x.is_nan(), x)
        return self.typed(x**k)


def _binary(left: nw.Expr, op: str, right: Any) -> nw.Expr:
    """``left op right`` through narwhals' own operator (``right`` an expression or a value)."""
    out: nw.Expr = getattr(left, op)(right)
    return out


def _no_default() -> Any:
    from narwhals._utils import NO_DEFAULT

    return NO_DEFAULT


def _first_line(err: Exception) -> str:
    text = str(err).strip().splitlines()
    return text[0][:160] if text else ""


def _check_pattern(owner: str, pattern: str) -> None:
    """Refuse a regular expression some engine cannot compile (Python's ``re`` and Polars'
    Rust regex both must accept it). Compiled on one row of text: an engine that compiles
    only when it meets a value would otherwise fail on a non-empty table only."""
    try:
        re.compile(pattern)
        pl.DataFrame({"s": ["a"]}).select(pl.col("s").str.contains(pattern))
    except Exception:
        raise ParameterError(
            f"{owner}: the regular expression {pattern!r} is not valid on every engine "
            "(Python's re and Polars' regex must both accept it; look-around and "
            "backreferences are not supported); pass literal=True for a plain substring"
        ) from None


def total_expression(
    expr: Any, schema: Mapping[str, Any], owner: str
) -> tuple[Typed, frozenset[str]]:
    """``expr`` rebuilt as a total expression on ``schema`` (narwhals types), with its type
    and the columns it reads; ParameterError for what cannot be made total (see the module
    docstring). Decided from the expression and the schema alone."""
    walker = _Walker(Probe(schema), owner)
    return walker.walk(expr), frozenset(walker.columns)


def total_predicate(
    expr: Any, schema: Mapping[str, Any], owner: str = "Query.filter"
) -> tuple[nw.Expr, frozenset[str]]:
    """A row condition as a total boolean expression (null counts as false: the row is
    dropped) and the columns it reads; ParameterError for a condition that is not boolean
    or not total (see the module docstring)."""
    typed, cols = total_expression(expr, schema, owner)
    if not isinstance(typed.dtype, nw.Boolean | nw.Unknown):
        raise ParameterError(
            f"{owner}: a filter must be a boolean condition; got an expression of type "
            f"{typed.dtype} ({expr!r})"
        )
    return typed.expr.fill_null(False), cols


def columns_of(expr: Any) -> frozenset[str]:
    """The columns an expression reads (every ``nw.col`` in it, and column names given as
    plain strings where narwhals reads them as columns)."""
    out: set[str] = set()

    def visit(e: Any, str_as_lit: bool) -> None:
        if isinstance(e, str) and not str_as_lit:
            out.add(e)
            return
        nodes = getattr(e, "_nodes", None)
        if not isinstance(e, nw.Expr) or not nodes:
            return
        for node in nodes:
            if node.name == "col":
                out.update(node.kwargs.get("names", []))
            for arg in node.exprs:
                visit(arg, node.str_as_lit)

    visit(expr, False)
    return frozenset(out)
