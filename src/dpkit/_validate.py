"""Validation at the boundary: one place for the checks every public entry point makes.

Messages follow STYLE.md: they name the object, the parameter, what is allowed and what was
received, for example ``Laplace: `epsilon` must be a finite number > 0; got -1.0``.
Wrong types raise :class:`TypeError`; wrong values raise :class:`~dpkit.errors.ParameterError`.

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

import math
import numbers
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from dpkit.errors import ParameterError

__all__ = [
    "as_real_array",
    "check_bounds",
    "check_choice",
    "check_delta",
    "check_finite_array",
    "check_finite_result",
    "check_int",
    "check_number",
    "check_positive",
    "check_probability",
    "check_relation",
    "check_within_bounds",
    "describe",
    "is_real",
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
