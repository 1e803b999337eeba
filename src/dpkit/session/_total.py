"""Total row-level expressions: a narwhals expression rebuilt so that no value can make it fail.

A release must not raise, warn or change its output type because of one record: an
exception carries no noise, so a filter that fails on one value tells neighbouring tables
apart with certainty. Engines fail on values in many ways: a strict cast of ``"x"`` to an
integer (Polars, DuckDB, Spark), an integer overflow or a division by zero (DuckDB, Spark
under ANSI mode), the absolute value of the smallest integer (DuckDB), a cast of a NaN to an
integer (pandas); NumPy warns where others return NaN. This module is the one place that
makes row-level expressions *total*, the same way on every engine, as OpenDP's
transformations are:

* a cast that cannot convert a value gives null (:func:`total_cast`): text is matched
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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import narwhals as nw
import polars as pl
from narwhals._expression_parsing import ExprKind, ExprNode

from dpkit.errors import ParameterError

__all__ = [
    "INT_PATTERN",
    "NUMBER_PATTERN",
    "Typed",
    "columns_of",
    "int_range",
    "parse_number",
    "total_cast",
    "total_expression",
    "total_predicate",
]

#: text that every engine casts to an integer: an optional minus sign and 1 to 18 ASCII
#: digits (below 10**18 < 2**63, so the cast cannot overflow). ``[0-9]``, not ``\d``:
#: regex engines differ on whether ``\d`` takes other scripts' digits, and casts differ too.
INT_PATTERN = r"^-?[0-9]{1,18}$"
#: text that every engine casts to a float: decimal notation with an optional exponent of
#: at most four digits (beyond the float range every engine gives an infinity), or
#: ``NaN``, ``inf``, ``-inf`` as Polars writes them (other spellings are not numbers here)
NUMBER_PATTERN = (
    r"^(?:-?(?:[0-9]{1,200}(?:\.[0-9]{1,200})?|\.[0-9]{1,200})(?:[eE][+-]?[0-9]{1,4})?"
    r"|NaN|-?inf)$"
)
_DATE_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
_DATETIME_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[ T][0-9]{2}:[0-9]{2}:[0-9]{2}$"
#: formats of ``str.to_date`` / ``str.to_datetime`` that are parsed totally
_DATE_FORMATS = {"%Y-%m-%d": "date", "%Y-%m-%d %H:%M:%S": "datetime"}
_DATE_FORMATS["%Y-%m-%dT%H:%M:%S"] = "datetime"

_INTS: dict[type, tuple[int, bool]] = {
    nw.Int8: (8, True),
    nw.Int16: (16, True),
    nw.Int32: (32, True),
    nw.Int64: (64, True),
    nw.UInt8: (8, False),
    nw.UInt16: (16, False),
    nw.UInt32: (32, False),
    nw.UInt64: (64, False),
}
_F32_MAX = 3.4028234663852886e38
#: float64 rounds a product or sum of two 64-bit integers by at most this much (relative
#: error below 2**-51 on magnitudes below 2**65): results this close to a 64-bit type's
#: limit are treated as overflowing
_INT64_MARGIN = 2.0**14


def int_range(dtype: Any) -> tuple[int, int, int] | None:
    """``(lowest, highest, bits)`` of an integer narwhals ``dtype`` (Int8 ... UInt64); None
    for any other type (Int128 and UInt128 included)."""
    for kind, (bits, signed) in _INTS.items():
        if isinstance(dtype, kind):
            if signed:
                return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1, bits
            return 0, 2**bits - 1, bits
    return None


_PARTIAL = (
    "it could fail or warn on some values, and whether it does would depend on the data (an "
    "error carries no noise)"
)
_ROW_BY_ROW = (
    "only row-by-row operations are allowed (no aggregations, windows or over(): a filter "
    "that looks at other rows would let one person change which rows of others are kept)"
)
_KINDS = (
    "values of different kinds compare differently on each engine (DuckDB casts text to "
    "a number row by row, and fails on text that is not one)"
)


def _refuse(owner: str, what: str, hint: str, why: str = _PARTIAL) -> ParameterError:
    return ParameterError(
        f"{owner}: {what} is not supported: {why}; {hint}. Row operations are total: a cast "
        "that cannot convert gives null, arithmetic that overflows or divides by zero gives "
        "null"
    )


# -- types ------------------------------------------------------------------------------------


def _polars_dtype(dtype: Any) -> pl.DataType | None:
    """The Polars type of a narwhals ``dtype`` (None for types Polars has no equivalent of)."""
    if isinstance(dtype, nw.Object | nw.Unknown):
        return None
    frame = nw.from_native(pl.DataFrame({"c": pl.Series([], dtype=pl.Null)}))
    try:
        return frame.select(nw.col("c").cast(dtype)).to_native().schema["c"]
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


def _when(cond: nw.Expr, value: nw.Expr) -> nw.Expr:
    """``value`` where ``cond`` is true, null elsewhere (null ``cond`` counts as false)."""
    return nw.when(cond.fill_null(False)).then(value)


def _guarded(
    x: nw.Expr, valid: nw.Expr, safe: Any, safe_dtype: Any, op: Callable[[nw.Expr], nw.Expr]
) -> nw.Expr:
    """``op(x)`` where ``valid``, null elsewhere, with ``op`` never applied to a value that
    is not valid: those rows (and nulls) get the constant ``safe`` first. A cast needs this
    rather than a null input: pandas' casts fail on missing values."""
    ok = valid.fill_null(False)
    fed = nw.when(ok).then(x).otherwise(nw.lit(safe, safe_dtype))
    return nw.when(ok).then(op(fed))


# -- casts ------------------------------------------------------------------------------------


def _is_temporal(dtype: Any) -> bool:
    return isinstance(dtype, nw.Date | nw.Datetime | nw.Time | nw.Duration)


def _int_from_int(x: nw.Expr, source: Any, target: Any) -> nw.Expr:
    lo, hi, _ = int_range(target)  # type: ignore[misc]
    src = int_range(source)
    if source == target:
        return x
    if src is not None and lo <= src[0] and src[1] <= hi:
        return x.cast(target)
    if src is None or (src[0] < lo and src[1] > hi):  # Int128 / UInt128: compare in the source type
        valid = (x >= lo) & (x <= hi)
    elif src[0] < lo:
        valid = x >= lo
    else:
        valid = x <= hi
    return _guarded(x, valid, 0, source, lambda v: v.cast(target))


def _int_from_float(x: nw.Expr, source: Any, target: Any) -> nw.Expr:
    """Whole numbers in range only: engines disagree on the rest (DuckDB rounds, the others
    truncate), so a float with a fraction gives null, as NaN and infinities do."""
    lo, hi, bits = int_range(target)  # type: ignore[misc]
    if bits == 64:  # no float64 is within 1 of 2**63 or 2**64 but those limits themselves
        valid = (x >= float(lo)) & (x < float(hi + 1))
    else:
        valid = (x >= float(lo)) & (x <= float(hi))
    valid = valid & (x.floor() == x)
    return _guarded(x, valid, 0.0, source, lambda v: v.cast(target))


def _matches(x: nw.Expr, pattern: str, chars: str) -> nw.Expr:
    """Whether the whole text matches ``pattern``, every character being one of ``chars``
    (a character class body): regex engines disagree on whether ``$`` matches before a
    final line break (Python's and Java's do, before ``\\r`` too for Java), and casts
    disagree on whether they trim it, so no other character may pass."""
    return x.str.contains(pattern) & ~x.str.contains(f"[^{chars}]")


def parse_number(x: nw.Expr) -> nw.Expr:
    """Text as a Float64, null where it is not a plain decimal number (:data:`NUMBER_PATTERN`):
    the total parse numeric aggregates apply to a text column."""
    valid = _matches(x, NUMBER_PATTERN, "0-9.eE+Nanif-")
    return _guarded(x, valid, "0", nw.String(), lambda v: v.cast(nw.Float64()))


def _parse_int(x: nw.Expr) -> nw.Expr:
    valid = _matches(x, INT_PATTERN, "0-9-")
    return _guarded(x, valid, "0", nw.String(), lambda v: v.cast(nw.Int64()))


def _days_in_month(year: nw.Expr, month: nw.Expr) -> nw.Expr:
    leap = ((year % 4 == 0) & (year % 100 != 0)) | (year % 400 == 0)
    short = month.is_in([4, 6, 9, 11])
    feb = nw.when(leap).then(nw.lit(29)).otherwise(nw.lit(28))
    return (
        nw.when(month == 2)
        .then(feb)
        .otherwise(nw.when(short).then(nw.lit(30)).otherwise(nw.lit(31)))
    )


def _parse_temporal(x: nw.Expr, kind: str, target: Any, *, date_only: bool = False) -> nw.Expr:
    """ISO text (``YYYY-MM-DD``, and for a datetime ``YYYY-MM-DD HH:MM:SS`` or with ``T``)
    as a Date / naive Datetime, null unless every field is in range (the day exists in its
    month). The fields are read from text already known to be digits in place."""
    pattern = _DATE_PATTERN if kind == "date" else _DATETIME_PATTERN
    if date_only:  # a date read as a datetime: text with a time is not one
        x = nw.when(x.str.contains(_DATE_PATTERN).fill_null(False)).then(x)
    if kind == "datetime":  # a date alone is its midnight
        alone = x.str.contains(_DATE_PATTERN).fill_null(False)
        midnight = nw.concat_str([x, nw.lit(" 00:00:00")], separator="")
        x = nw.when(alone).then(midnight).otherwise(x)
    shape = _matches(x, pattern, "0-9 :T-")
    safe = "2000-01-01" if kind == "date" else "2000-01-01 00:00:00"
    fed = nw.when(shape.fill_null(False)).then(x).otherwise(nw.lit(safe, nw.String()))

    def field(start: int, length: int) -> nw.Expr:
        return fed.str.slice(start, length).cast(nw.Int64())

    year, month, day = field(0, 4), field(5, 2), field(8, 2)
    valid = shape & (year >= 1) & (month >= 1) & (month <= 12) & (day >= 1)
    valid = valid & (day <= _days_in_month(year, month))
    text = fed
    if kind == "datetime":
        hour, minute, second = field(11, 2), field(14, 2), field(17, 2)
        valid = valid & (hour <= 23) & (minute <= 59) & (second <= 59)
        # one separator for every engine (some read only the space, some only the T)
        text = nw.concat_str([fed.str.slice(0, 10), fed.str.slice(11, 8)], separator=" ")

        def parse(v: nw.Expr) -> nw.Expr:
            return v.str.to_datetime(format="%Y-%m-%d %H:%M:%S").cast(target)
    else:

        def parse(v: nw.Expr) -> nw.Expr:
            return v.str.to_date(format="%Y-%m-%d")

    return _guarded(text, valid, safe, nw.String(), parse)


def _bool_from_text(x: nw.Expr) -> nw.Expr:
    low = x.str.to_lowercase()
    return (
        nw.when(low == "true")
        .then(nw.lit(True))
        .otherwise(nw.when(low == "false").then(nw.lit(False)))
    )


#: the range each Datetime unit holds on every engine (nanoseconds: 1677-09-22 to 2262-04-11)
def _datetime_limits(unit: str) -> tuple[datetime.datetime, datetime.datetime]:
    """The dates a cast to a Datetime keeps: within the unit's range on every engine
    (nanoseconds: 1677-09-22 to 2262-04-11), and from the year 1000 (Spark refuses a
    literal of an earlier year)."""
    if unit == "ns":
        return datetime.datetime(1678, 1, 1), datetime.datetime(2262, 1, 1)
    return datetime.datetime(1000, 1, 1), datetime.datetime(9999, 12, 31, 23, 59, 59)


def total_cast(x: nw.Expr, source: Any, target: Any, owner: str = "cast") -> nw.Expr:
    """``x`` (of narwhals type ``source``) cast to ``target``, null where a value does not
    convert; a ParameterError (before anything is spent) for a conversion not known to be
    total on every engine.

    Total conversions: to the same type; numbers, booleans and dates to text; between
    numbers (an integer or a float outside the target's range, a float that is not a whole
    number, NaN and infinities to an integer give null; a float beyond Float32's range to
    Float32 gives null); booleans to
    numbers and numbers to booleans (non-zero is true); text to integers (:data:`INT_PATTERN`,
    then the target's range), to floats (:data:`NUMBER_PATTERN`), to booleans (``"true"`` /
    ``"false"`` in any case), to a Date (``YYYY-MM-DD`` naming a day that exists) or a naive
    Datetime (``YYYY-MM-DD HH:MM:SS``, ``T`` or a space between, or a date alone: its
    midnight); a Datetime to a Date; a
    Date or naive Datetime to a naive Datetime (outside the unit's range: null); a
    Categorical or Enum to text; a Decimal as a float.
    """
    if source == target:
        return x
    if isinstance(source, nw.Unknown):  # a null literal
        return x.cast(target)
    if isinstance(source, nw.Decimal) and not isinstance(target, nw.Decimal | nw.String):
        return total_cast(x.cast(nw.Float64()), nw.Float64(), target, owner)
    tgt_int = int_range(target)
    what = f"a cast from {source} to {target}"
    if isinstance(target, nw.String):
        if source.is_numeric() or _is_temporal(source):
            return x.cast(target)
        if isinstance(source, nw.Boolean | nw.Categorical | nw.Enum):
            return x.cast(target)
    elif tgt_int is not None:
        if int_range(source) is not None or isinstance(source, nw.Int128 | nw.UInt128):
            return _int_from_int(x, source, target)
        if source.is_float():
            return _int_from_float(x, source, target)
        if isinstance(source, nw.Boolean):
            return x.cast(target)
        if isinstance(source, nw.String):
            return _int_from_int(_parse_int(x), nw.Int64(), target)
    elif isinstance(target, nw.Float64):
        if source.is_numeric() or isinstance(source, nw.Boolean):
            return x.cast(target)
        if isinstance(source, nw.String):
            return parse_number(x)
    elif isinstance(target, nw.Float32):
        if source.is_integer() or isinstance(source, nw.Boolean | nw.Float32):
            return x.cast(target)
        if source.is_float():
            valid = ~(x.is_finite() & (x.abs() > _F32_MAX))
            return _guarded(x, valid, 0.0, source, lambda v: v.cast(target))
        if isinstance(source, nw.String):
            return total_cast(parse_number(x), nw.Float64(), target, owner)
    elif isinstance(target, nw.Boolean):
        if source.is_numeric():
            return x.cast(target)
        if isinstance(source, nw.String):
            return _bool_from_text(x)
    elif isinstance(target, nw.Date):
        if isinstance(source, nw.Datetime):
            return x.cast(target)
        if isinstance(source, nw.String):
            return _parse_temporal(x, "date", target)
    elif isinstance(target, nw.Datetime) and target.time_zone is None:
        if isinstance(source, nw.String):
            return _parse_temporal(x, "datetime", target)
        if isinstance(source, nw.Date) or (
            isinstance(source, nw.Datetime) and source.time_zone is None
        ):
            lo, hi = _datetime_limits(target.time_unit)
            if isinstance(source, nw.Date):
                valid = (x >= lo.date()) & (x <= hi.date())
            else:
                valid = (x >= lo) & (x <= hi)
            safe = datetime.date(2000, 1, 1)
            if isinstance(source, nw.Datetime):
                safe = datetime.datetime(2000, 1, 1)
            return _guarded(x, valid, safe, source, lambda v: v.cast(target))
    hint = "cast to a type listed in the Session's documentation, or compare the text instead"
    raise _refuse(owner, what, hint)


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
        return _refuse(self.owner, what, hint, why)

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
            return self.rebuild(acc, node, [])
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
                return self.typed(_parse_temporal(acc.expr, "date", nw.Date()))
            only = kind == "date"
            return self.typed(
                _parse_temporal(acc.expr, "datetime", nw.Datetime("us"), date_only=only)
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
        masked = _when(acc.expr != rng[0], acc.expr)  # -(min) does not exist in the type
        return self.typed(masked._append_node(_node(node.kind, node.name, [], node)))

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
            x = _when((x > 0) & ~x.is_nan(), x)
        elif node.name == "sqrt":
            x = _when((x >= 0) & ~x.is_nan(), x)
        elif node.name in ("sin", "cos"):
            x = _when(x.is_finite(), x)
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
        masked_left = _when(ok, left.expr)
        masked_right = right.arg() if right.is_literal else _when(ok, right.expr)
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
                return self.typed(_when(~base.expr.is_null(), nw.lit(1, base.dtype)))
            out = base
            for _ in range(k - 1):  # repeated total multiplication: one type on every engine
                out = self.binary(out, base, "__mul__")
            return out
        if not math.isfinite(k):
            raise self.refuse(f"a power {k!r}", "use a finite exponent")
        x = base.expr
        if not float(k).is_integer():  # a negative number to a fractional power: null
            x = _when((x >= 0) & ~x.is_nan(), x)
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
