"""Validation at the boundary: one place for the checks every public entry point makes.

Messages name the object, the parameter, what is allowed and what was received, for
example ``Laplace: `epsilon` must be a finite number > 0; got -1.0``. Wrong types raise
:class:`TypeError`; wrong values raise :class:`~dpkit.errors.ParameterError`.

The checks, by class of input:

* real numbers (:func:`check_number`, :func:`check_positive`, :func:`check_delta`,
  :func:`check_probability`): a Python or NumPy real, never a ``bool``, a
  ``numpy.timedelta64`` (NumPy files it under the integers), a string or a ``Decimal``; an
  ``int`` or ``Fraction`` too large for a float (``10**400``) is a :class:`ParameterError`
  naming the parameter, not an ``OverflowError``;
* integers (:func:`check_int`): ``int`` or NumPy integer (no bool, no timedelta, no float);
* string choices (:func:`check_choice`): ``relation``, ``norm``, ``calibration``, ``noise``,
  ``aggregator``, ``statistic``, ... must be one of the allowed strings; arrays, Series and
  other non-strings are refused by name (never "the truth value of an array is ambiguous");
* arrays of data (:func:`as_real_array`, :func:`check_finite_array`): numbers only, finite,
  rectangular (a ragged or nested list is refused), of the expected dimension. **Masked
  arrays are refused**: dpkit does not guess whether a masked entry is missing, private or
  an error; pass ``a.compressed()`` to drop the masked entries or ``a.filled(v)`` to impute;
* derived quantities (:func:`check_finite_result`): a scale, width or lattice computed from
  valid parameters that overflows or underflows is refused, naming the parameters;
* bounds (:func:`check_bounds`): ``lower < upper``, both finite, and a finite width.
"""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from dpkit.errors import ParameterError

__all__ = [
    "MAX_LEVEL_DENOMINATOR",
    "MIN_ALPHA",
    "as_rational_level",
    "as_real_array",
    "check_alpha",
    "check_bool",
    "check_bounds",
    "check_choice",
    "check_delta",
    "check_finite_array",
    "check_finite_result",
    "check_int",
    "check_level",
    "check_levels",
    "check_number",
    "check_positive",
    "check_probability",
    "check_relation",
    "check_sensitivity",
    "check_size",
    "check_within_bounds",
    "describe",
    "is_real",
    "series_like",
    "to_fraction",
]

_MAX_REPR = 60


def describe(value: Any) -> str:
    """A short description of ``value`` for an error message (huge numbers abridged)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"an int of about 10**{int(value.bit_length() * 0.30103)}"
    if (
        isinstance(value, Fraction)
        and max(abs(value.numerator).bit_length(), value.denominator.bit_length()) > 64
    ):
        mag = abs(value.numerator).bit_length() - value.denominator.bit_length()
        return f"a Fraction of about 2**{mag}"
    try:
        text = repr(value)
    except Exception:  # pragma: no cover - a repr that raises
        text = f"<{type(value).__name__}>"
    text = " ".join(text.split())
    return text if len(text) <= _MAX_REPR else text[: _MAX_REPR - 3] + "..."


def is_real(value: Any) -> bool:
    """``True`` for a real number: Python or NumPy, never ``bool`` or a time delta."""
    if isinstance(value, bool | np.bool_ | np.timedelta64 | np.datetime64):
        return False
    return isinstance(value, numbers.Real | np.floating | np.integer)


def _real(owner: str, name: str, value: Any, requirement: str) -> float:
    """``value`` as a float, or a TypeError / ParameterError stating ``requirement``."""
    if not is_real(value):
        raise TypeError(
            f"{owner}: `{name}` must be a real number ({requirement}); got "
            f"{type(value).__name__} {describe(value)}"
        )
    try:
        out = float(value)
    except OverflowError:
        raise ParameterError(
            f"{owner}: `{name}` must be {requirement}; got {describe(value)}, too large for a float"
        ) from None
    if not math.isfinite(out):
        raise ParameterError(f"{owner}: `{name}` must be {requirement}; got {describe(value)}")
    return out


def check_number(owner: str, name: str, value: Any) -> float:
    """Return ``value`` as a float after rejecting bools, non-numbers, NaN and infinities."""
    return _real(owner, name, value, "a finite number")


def check_nonnegative(owner: str, name: str, value: Any) -> float:
    """A finite number greater than or equal to zero."""
    out = _real(owner, name, value, "a finite number")
    if out < 0:
        raise ParameterError(
            f"{owner}: `{name}` must be a finite number >= 0; got {describe(value)}"
        )
    return out


def check_positive(
    owner: str, name: str, value: Any, *, at_most: float | None = None, hint: str = ""
) -> float:
    """A finite number strictly greater than zero (and at most ``at_most`` when given)."""
    requirement = "a finite number > 0" if at_most is None else f"a number in (0, {at_most:g}]"
    out = _real(owner, name, value, requirement)
    if not out > 0 or (at_most is not None and out > at_most):
        raise ParameterError(
            f"{owner}: `{name}` must be {requirement}; got {describe(value)}{hint}"
        )
    return out


def check_delta(owner: str, value: Any, *, allow_zero: bool = True, name: str = "delta") -> float:
    """A probability in [0, 1) (or (0, 1) when ``allow_zero`` is false)."""
    low = "0 <=" if allow_zero else "0 <"
    requirement = f"a number with {low} {name} < 1"
    out = _real(owner, name, value, requirement)
    ok = (out >= 0 if allow_zero else out > 0) and out < 1
    if not ok:
        raise ParameterError(f"{owner}: `{name}` must be {requirement}; got {describe(value)}")
    return out


def check_probability(owner: str, name: str, value: Any) -> float:
    """A probability in [0, 1]."""
    out = _real(owner, name, value, "a number in [0, 1]")
    if not 0 <= out <= 1:
        raise ParameterError(f"{owner}: `{name}` must be in [0, 1]; got {describe(value)}")
    return out


def check_int(
    owner: str,
    name: str,
    value: Any,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
) -> int:
    """An integer (Python or NumPy; no bool, float or time delta) within the given range."""
    if type(value) is not int and (
        isinstance(value, bool | np.bool_ | np.timedelta64)
        or not isinstance(value, numbers.Integral | np.integer)
    ):
        raise TypeError(
            f"{owner}: `{name}` must be {_int_requirement(minimum, maximum)}; "
            f"got {type(value).__name__} {describe(value)}"
        )
    out = int(value)
    if (minimum is not None and out < minimum) or (maximum is not None and out > maximum):
        raise ParameterError(
            f"{owner}: `{name}` must be {_int_requirement(minimum, maximum)}; got {describe(value)}"
        )
    return out


def check_size(owner: str, size: Any) -> int:
    """The number of releases a ``sample`` method draws: an int >= 1."""
    return check_int(owner, "size", size, minimum=1)


def check_alpha(owner: str, alpha: Any, *, smallest: float | None = None) -> float:
    """An error probability ``alpha`` in ``(0, 1)`` (at least ``smallest`` when given: the
    statistics' intervals divide ``alpha`` over union bounds and take its logarithm, so
    they refuse one that would underflow there)."""
    a = check_positive(owner, "alpha", alpha)
    if not a < 1:
        raise ParameterError(f"{owner}: `alpha` must be in (0, 1); got {alpha!r}")
    if smallest is not None and a < smallest:
        raise ParameterError(
            f"{owner}: `alpha` must be at least {smallest:g}: smaller error probabilities "
            f"underflow in the intervals' union bounds; got {alpha!r}"
        )
    return a


def _int_requirement(minimum: int | None, maximum: int | None) -> str:
    if minimum is not None and maximum is not None:
        return f"an int in [{minimum}, {maximum}]"
    if minimum is not None:
        return f"an int >= {minimum}"
    if maximum is not None:
        return f"an int <= {maximum}"
    return "an int"


def check_choice(owner: str, name: str, value: Any, choices: Sequence[str]) -> str:
    """One of the allowed strings; a non-string (array, Series, number) is a TypeError.

    ``None`` (no choice made) is a ParameterError saying the choice is required.
    """
    names = [repr(c) for c in choices]
    allowed = " or ".join(names) if len(names) <= 2 else "one of " + ", ".join(names)
    if value is None:
        raise ParameterError(f"{owner}: `{name}` is required: {allowed}; got None")
    if not isinstance(value, str):
        raise TypeError(
            f"{owner}: `{name}` must be {allowed}; got {type(value).__name__} {describe(value)}"
        )
    if value not in choices:
        raise ParameterError(f"{owner}: `{name}` must be {allowed}; got {describe(value)}")
    return str(value)


def check_finite_result(owner: str, what: str, value: float, *, cause: str) -> float:
    """A quantity derived from valid parameters (a scale, a width, a grid) that must be a
    finite positive float: overflow to infinity or underflow to zero is refused, the message
    naming the parameters responsible (``cause``)."""
    if not (math.isfinite(value) and value > 0):
        state = "overflows" if not math.isfinite(value) else "underflows to 0"
        raise ParameterError(f"{owner}: {what} {state} in floating point; {cause}")
    return value


#: The neighbour relations: ``"unbounded"`` adds or removes one record, ``"bounded"`` replaces
#: one record (the record is a row, or all rows of one person when there is a privacy unit).
RELATIONS = ("bounded", "unbounded")


def check_relation(owner: str, relation: Any) -> str:
    """``"bounded"`` (replace one record) or ``"unbounded"`` (add or remove one record)."""
    if not isinstance(relation, str):  # None included: a TypeError, like any non-string
        raise TypeError(
            f"{owner}: `relation` must be the str 'bounded' or 'unbounded'; got "
            f"{type(relation).__name__} {describe(relation)}"
        )
    if relation not in RELATIONS:
        raise ParameterError(
            f"{owner}: `relation` must be 'bounded' (same size, replace records) or "
            f"'unbounded' (add or remove records); got {relation!r}"
        )
    return relation


def check_bounds(owner: str, bounds: Any, *, name: str = "bounds") -> tuple[float, float]:
    """A pair ``(lower, upper)`` of finite numbers with ``lower < upper`` and a finite width."""
    if bounds is None:
        raise ParameterError(
            f"{owner}: `{name}` is required: pass (lower, upper) chosen without looking at the "
            "data; bounds derived from the data are not private"
        )
    if not isinstance(bounds, tuple | list) or len(bounds) != 2:
        raise TypeError(
            f"{owner}: `{name}` must be a pair (lower, upper); got {type(bounds).__name__} "
            f"{describe(bounds)}"
        )
    lower = check_number(owner, f"{name}[0]", bounds[0])
    upper = check_number(owner, f"{name}[1]", bounds[1])
    if not lower < upper:
        raise ParameterError(
            f"{owner}: `{name}` must satisfy lower < upper; got ({lower!r}, {upper!r})"
        )
    if not math.isfinite(upper - lower):
        raise ParameterError(
            f"{owner}: `{name}` ({lower!r}, {upper!r}) are too far apart: their width "
            "overflows a float; narrow the bounds"
        )
    return lower, upper


def as_real_array(owner: str, name: str, value: Any, *, ndim: int | None = None) -> np.ndarray:
    """``value`` as a NumPy array of real numbers (int, uint or float dtype), unconverted.

    Refuses, by name: strings and bytes, masked arrays (see the module docstring), ragged or
    nested sequences, non-numeric dtypes (bool, complex, object, time deltas), and, when
    ``ndim`` is given, any other number of dimensions. NaN and infinities are the caller's
    to check (see :func:`check_finite_array`).
    """
    if isinstance(value, str | bytes):
        raise TypeError(f"{owner}: `{name}` must be numeric; got {type(value).__name__}")
    if isinstance(value, np.ma.MaskedArray):
        raise TypeError(
            f"{owner}: `{name}` is a masked array; dpkit does not guess what masked entries "
            "mean: pass `.compressed()` to drop them or `.filled(value)` to impute them"
        )
    if isinstance(value, dict | set | frozenset):
        raise TypeError(
            f"{owner}: `{name}` must be a sequence or array of numbers; got {type(value).__name__}"
        )
    try:
        arr = np.asarray(value)
    except (ValueError, RecursionError, TypeError) as exc:
        raise TypeError(
            f"{owner}: `{name}` must be a flat sequence of numbers or a rectangular array; "
            f"got a ragged or nested {type(value).__name__} ({str(exc).split('.')[0]})"
        ) from None
    if arr.dtype.kind not in "iuf":
        raise TypeError(
            f"{owner}: `{name}` must hold real numbers; got dtype {arr.dtype}"
            + (" (bool is not a number here)" if arr.dtype.kind == "b" else "")
        )
    if ndim is not None and arr.ndim != ndim:
        what = "a scalar" if arr.ndim == 0 else f"{arr.ndim}-D shape {arr.shape}"
        raise ParameterError(
            f"{owner}: `{name}` must be a {ndim}-D array of values; got {what}"
            + ("; pass one record per entry, e.g. numpy.ravel(data)" if arr.ndim > 1 else "")
        )
    return arr


def check_finite_array(
    owner: str,
    name: str,
    value: Any,
    *,
    allow_empty: bool = False,
    ndim: int | None = None,
) -> np.ndarray:
    """A float64 array with no NaN or infinity (and not empty unless allowed).

    ``ndim`` (for example 1 for a dataset of records) refuses other shapes, scalars
    included; see :func:`as_real_array` for the rest of what is refused.
    """
    arr = as_real_array(owner, name, value, ndim=ndim).astype(np.float64, copy=False)
    if arr.size == 0 and not allow_empty:
        raise ParameterError(f"{owner}: `{name}` is empty; at least one value is needed")
    if not np.isfinite(arr).all():
        bad = int(np.count_nonzero(~np.isfinite(arr)))
        raise ParameterError(
            f"{owner}: `{name}` must be finite; found {bad} NaN or infinite value(s)"
            " (or values too large for a float)"
        )
    return arr


def check_within_bounds(
    owner: str,
    name: str,
    arr: np.ndarray,
    bounds: tuple[float, float],
    *,
    clip: bool,
    bounds_name: str = "`bounds`",
    clip_hint: str = "clip=True",
) -> tuple[np.ndarray, int]:
    """Data values outside public bounds: refused, or clipped when asked (and counted).

    The one rule for a tool that takes a column and public bounds (``dpkit.compare.compare``,
    ``dpkit compare`` and ``dpkit sensitivity --data``): a value outside ``bounds`` is an
    error naming how many there are, unless the caller asked for clipping, in which case
    they are clipped and their number is returned so it can be reported. Silent clipping
    would report the statistic of other data than the user's.

    Returns ``(values, clipped)``: the values (clipped to the bounds if ``clip``) and how
    many were outside.
    """
    lower, upper = bounds
    outside = int(np.count_nonzero((arr < lower) | (arr > upper)))
    if outside and not clip:
        raise ParameterError(
            f"{owner}: {outside:,} of {arr.size:,} value(s) of {name} lie outside {bounds_name} "
            f"[{lower:g}, {upper:g}]; widen the bounds (chosen without looking at the data) or "
            f"pass {clip_hint} to clip them to the bounds"
        )
    return (np.clip(arr, lower, upper) if outside else arr), outside


def to_fraction(value: float) -> Fraction:
    """The exact rational value of a finite float (floats are dyadic rationals)."""
    return Fraction(value)


#: Largest denominator of a quantile level (and of the exponential mechanism's relative
#: targets): levels are rounded to the nearest fraction with denominator at most ``2**20``.
MAX_LEVEL_DENOMINATOR = 1 << 20
#: Smallest ``alpha`` of the statistics' intervals: they divide it over their union bounds
#: (by up to a few thousand times the number of levels) and take its logarithm, which must
#: not underflow.
MIN_ALPHA = 1e-250


def as_rational_level(q: float) -> Fraction:
    """The level as the nearest fraction with denominator at most ``2**20`` (public rounding).

    ``0.1`` becomes ``1/10`` and ``1/3`` (as a float) becomes ``1/3``; the change is at most
    ``2**-21`` (neighbouring fractions of denominators up to ``N`` are ``1 / (q q') <= 1 / N``
    apart), and below ``2**-40`` when the nearest fraction's denominator is near ``2**20``.
    Exact rationals keep the mechanism's exponents integers. Levels within about ``2**-21``
    of 0 or 1 would round onto them: :func:`check_level` refuses those.
    """
    if type(q) is float:  # a function of the float alone: cached (a Session asks for the
        return _rational_level(q)  # same few levels in every group; Fractions are immutable)
    return Fraction(q).limit_denominator(MAX_LEVEL_DENOMINATOR)


@functools.lru_cache(maxsize=1024)
def _rational_level(q: float) -> Fraction:
    return Fraction(q).limit_denominator(MAX_LEVEL_DENOMINATOR)


def check_level(owner: str, name: str, value: Any, low: float = 0.0) -> float:
    """A level in ``(low, 1)`` that stays there after :func:`as_rational_level` (TypeError for
    non-numbers, ParameterError naming ``name`` otherwise, hinting the median for 0.5).

    Without the second check, ``1e-9`` would silently become the level 0 (the minimum)."""
    v = check_number(owner, name, value)
    if not low < v < 1:
        hint = " (0.5 is the median)" if low == 0 else ""
        raise ParameterError(f"{owner}: `{name}` must be in ({low:g}, 1){hint}; got {value!r}")
    r = as_rational_level(v)
    if not low < r < 1:
        edge = f"{low:g}" if r <= low else "1"
        raise ParameterError(
            f"{owner}: `{name}` {value!r} is too close to {edge}: levels are rounded to the "
            f"nearest fraction with denominator at most 2**20, which would make it {edge}; "
            "use a level at least 2**-20 away from it"
        )
    return v


def series_like(value: Any) -> bool:
    """Whether ``value`` is a pandas or polars Series (or another sized array-like that is
    neither a sequence nor a NumPy array or scalar)."""
    return (
        not isinstance(value, Sequence | np.ndarray | np.generic | str | bytes)
        and hasattr(value, "__array__")
        and hasattr(value, "__len__")
    )


def check_levels(owner: str, levels: Any) -> tuple[tuple[float, ...], bool]:
    """Levels as a tuple of floats in (0, 1), strictly increasing; and whether a scalar came in.

    Raises TypeError for non-numbers (bool included) and ParameterError for values outside
    (0, 1), NaN, an empty sequence, unsorted or repeated levels.
    """
    if series_like(levels):  # its values, as for an ndarray
        levels = np.asarray(levels)
    scalar = not isinstance(levels, Sequence | np.ndarray) or isinstance(levels, str | bytes)
    if isinstance(levels, np.ndarray) and levels.ndim == 0:
        scalar = True
        levels = levels.item()
    items = [levels] if scalar else list(levels)
    if not items:
        raise ParameterError(f"{owner}: `levels` is empty; give one level or more in (0, 1)")
    out: list[float] = []
    for i, q in enumerate(items):
        out.append(check_level(owner, "levels" if scalar else f"levels[{i}]", q))
    for i in range(1, len(out)):
        if out[i] == out[i - 1]:
            raise ParameterError(f"{owner}: `levels` must not repeat a level; got {out[i]!r} twice")
        if out[i] < out[i - 1]:
            raise ParameterError(
                f"{owner}: `levels` must be sorted in increasing order; got {out[i - 1]!r} "
                f"before {out[i]!r}"
            )
    rational = [as_rational_level(q) for q in out]
    for i in range(1, len(rational)):
        if rational[i] <= rational[i - 1]:  # the rounding is monotone: equal after it
            raise ParameterError(
                f"{owner}: levels {out[i - 1]!r} and {out[i]!r} both round to {rational[i]} "
                "(levels are rounded to the nearest fraction with denominator at most 2**20); "
                "use levels at least 2**-20 apart, or merge them"
            )
    return tuple(out), scalar


def check_bool(owner: str, name: str, value: Any) -> bool:
    """``value`` if it is ``True`` or ``False`` (NumPy's bool too); a TypeError naming it."""
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"{owner}: `{name}` must be True or False; got {describe(value)}")
    return bool(value)


def check_sensitivity(owner: str, value: float) -> float:
    """A computed sensitivity must be a finite float: one that overflows (a variance over
    bounds wider than about 1e154, a sum of many huge values) is refused, naming the
    bounds, rather than returned as infinity."""
    if not math.isfinite(value):
        raise ParameterError(
            f"{owner}: the sensitivity overflows a float ({value!r}) for these `bounds`; "
            "rescale the data (other units) so the bounds are smaller"
        )
    return value
