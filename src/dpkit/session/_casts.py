"""Total casts: a value that cannot be converted gives null, on every engine.

The conversions :mod:`dpkit.session._total` rewrites a user's ``cast`` into, and the ones a
Session applies to declared types (``Session(..., schema=)``) and to text read by numeric
aggregates (:func:`parse_number`). Each is decided from the source and target types alone
(a conversion not known to be total is refused before anything is spent) and evaluates no
value it could fail on: text is matched against a strict pattern and numbers against the
target's range, and only then cast, the rest fed a safe constant whose result is masked
back to null (:func:`guarded`), so that even an engine evaluating every branch of a
``when/then`` for every row never casts a value that does not convert.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

import narwhals as nw

from dpkit.errors import ParameterError

__all__ = [
    "INT_PATTERN",
    "NUMBER_PATTERN",
    "guarded",
    "int_range",
    "parse_number",
    "parse_temporal",
    "refuse",
    "total_cast",
    "when",
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


def refuse(owner: str, what: str, hint: str, why: str = _PARTIAL) -> ParameterError:
    return ParameterError(
        f"{owner}: {what} is not supported: {why}; {hint}. Row operations are total: a cast "
        "that cannot convert gives null, arithmetic that overflows or divides by zero gives "
        "null"
    )


def when(cond: nw.Expr, value: nw.Expr) -> nw.Expr:
    """``value`` where ``cond`` is true, null elsewhere (null ``cond`` counts as false)."""
    return nw.when(cond.fill_null(False)).then(value)


def guarded(
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
    return guarded(x, valid, 0, source, lambda v: v.cast(target))


def _int_from_float(x: nw.Expr, source: Any, target: Any) -> nw.Expr:
    """Whole numbers in range only: engines disagree on the rest (DuckDB rounds, the others
    truncate), so a float with a fraction gives null, as NaN and infinities do."""
    lo, hi, bits = int_range(target)  # type: ignore[misc]
    if bits == 64:  # no float64 is within 1 of 2**63 or 2**64 but those limits themselves
        valid = (x >= float(lo)) & (x < float(hi + 1))
    else:
        valid = (x >= float(lo)) & (x <= float(hi))
    valid = valid & (x.floor() == x)
    return guarded(x, valid, 0.0, source, lambda v: v.cast(target))


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
    return guarded(x, valid, "0", nw.String(), lambda v: v.cast(nw.Float64()))


def _parse_int(x: nw.Expr) -> nw.Expr:
    valid = _matches(x, INT_PATTERN, "0-9-")
    return guarded(x, valid, "0", nw.String(), lambda v: v.cast(nw.Int64()))


def _days_in_month(year: nw.Expr, month: nw.Expr) -> nw.Expr:
    leap = ((year % 4 == 0) & (year % 100 != 0)) | (year % 400 == 0)
    short = month.is_in([4, 6, 9, 11])
    feb = nw.when(leap).then(nw.lit(29)).otherwise(nw.lit(28))
    return (
        nw.when(month == 2)
        .then(feb)
        .otherwise(nw.when(short).then(nw.lit(30)).otherwise(nw.lit(31)))
    )


def parse_temporal(x: nw.Expr, kind: str, target: Any, *, date_only: bool = False) -> nw.Expr:
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

    return guarded(text, valid, safe, nw.String(), parse)


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
            return guarded(x, valid, 0.0, source, lambda v: v.cast(target))
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
            return parse_temporal(x, "date", target)
    elif isinstance(target, nw.Datetime) and target.time_zone is None:
        if isinstance(source, nw.String):
            return parse_temporal(x, "datetime", target)
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
            return guarded(x, valid, safe, source, lambda v: v.cast(target))
    hint = "cast to a type listed in the Session's documentation, or compare the text instead"
    raise refuse(owner, what, hint)
