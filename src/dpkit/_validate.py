"""Validation at the boundary: one place for the checks every public entry point makes.

Messages follow STYLE.md: they name the object, the parameter, what is allowed and what was
received, for example ``Laplace: `epsilon` must be a finite number > 0; got -1.0``.
Wrong types raise :class:`TypeError`; wrong values raise :class:`~dpkit.errors.ParameterError`.
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction
from typing import Any

import numpy as np

from dpkit.errors import ParameterError

__all__ = [
    "check_bounds",
    "check_delta",
    "check_finite_array",
    "check_number",
    "check_positive",
    "check_probability",
    "check_relation",
    "check_within_bounds",
    "to_fraction",
]


def _is_real(value: Any) -> bool:
    return isinstance(value, numbers.Real | np.floating | np.integer) and not isinstance(
        value, bool | np.bool_
    )


def check_number(owner: str, name: str, value: Any) -> float:
    """Return ``value`` as a float after rejecting bools, non-numbers, NaN and infinities."""
    if not _is_real(value):
        raise TypeError(
            f"{owner}: `{name}` must be a real number; got {type(value).__name__} {value!r}"
        )
    out = float(value)
    if not math.isfinite(out):
        raise ParameterError(f"{owner}: `{name}` must be a finite number; got {value!r}")
    return out


def check_positive(owner: str, name: str, value: Any) -> float:
    """A finite number strictly greater than zero."""
    if not _is_real(value):
        raise TypeError(
            f"{owner}: `{name}` must be a finite number > 0; got {type(value).__name__} {value!r}"
        )
    out = float(value)
    if not (math.isfinite(out) and out > 0):
        raise ParameterError(f"{owner}: `{name}` must be a finite number > 0; got {value!r}")
    return out


def check_delta(owner: str, value: Any, *, allow_zero: bool = True, name: str = "delta") -> float:
    """A probability in [0, 1) (or (0, 1) when ``allow_zero`` is false)."""
    low = "0 <=" if allow_zero else "0 <"
    if not _is_real(value):
        raise TypeError(
            f"{owner}: `{name}` must be a number with {low} {name} < 1; "
            f"got {type(value).__name__} {value!r}"
        )
    out = float(value)
    ok = math.isfinite(out) and (out >= 0 if allow_zero else out > 0) and out < 1
    if not ok:
        raise ParameterError(
            f"{owner}: `{name}` must be a number with {low} {name} < 1; got {value!r}"
        )
    return out


def check_probability(owner: str, name: str, value: Any) -> float:
    """A probability in [0, 1]."""
    out = check_number(owner, name, value)
    if not 0 <= out <= 1:
        raise ParameterError(f"{owner}: `{name}` must be in [0, 1]; got {value!r}")
    return out


#: The neighbour relations: ``"unbounded"`` adds or removes one record, ``"bounded"`` replaces
#: one record (the record is a row, or all rows of one person when there is a privacy unit).
RELATIONS = ("bounded", "unbounded")


def check_relation(owner: str, relation: Any) -> str:
    """``"bounded"`` (replace one record) or ``"unbounded"`` (add or remove one record)."""
    if not isinstance(relation, str):
        raise TypeError(
            f"{owner}: `relation` must be the str 'bounded' or 'unbounded'; got "
            f"{type(relation).__name__} {relation!r}"
        )
    if relation not in RELATIONS:
        raise ParameterError(
            f"{owner}: `relation` must be 'bounded' (same size, replace records) or "
            f"'unbounded' (add or remove records); got {relation!r}"
        )
    return relation


def check_bounds(owner: str, bounds: Any, *, name: str = "bounds") -> tuple[float, float]:
    """A pair ``(lower, upper)`` of finite numbers with lower < upper."""
    if bounds is None:
        raise ParameterError(
            f"{owner}: `{name}` is required: pass (lower, upper) chosen without looking at the "
            "data; bounds derived from the data are not private"
        )
    if not isinstance(bounds, tuple | list) or len(bounds) != 2:
        raise TypeError(f"{owner}: `{name}` must be a pair (lower, upper); got {bounds!r}")
    lower = check_number(owner, f"{name}[0]", bounds[0])
    upper = check_number(owner, f"{name}[1]", bounds[1])
    if not lower < upper:
        raise ParameterError(
            f"{owner}: `{name}` must satisfy lower < upper; got ({lower!r}, {upper!r})"
        )
    return lower, upper


def check_finite_array(
    owner: str, name: str, value: Any, *, allow_empty: bool = False
) -> np.ndarray:
    """A float64 array with no NaN or infinity (and not empty unless allowed)."""
    if isinstance(value, str | bytes):
        raise TypeError(f"{owner}: `{name}` must be numeric; got {type(value).__name__}")
    arr = np.asarray(value)
    if arr.dtype == np.bool_ or not (
        np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)
    ):
        raise TypeError(f"{owner}: `{name}` must hold real numbers; got dtype {arr.dtype}")
    arr = arr.astype(np.float64, copy=False)
    if arr.size == 0 and not allow_empty:
        raise ParameterError(f"{owner}: `{name}` is empty; at least one value is needed")
    if not np.isfinite(arr).all():
        bad = int(np.count_nonzero(~np.isfinite(arr)))
        raise ParameterError(
            f"{owner}: `{name}` must be finite; found {bad} NaN or infinite value(s)"
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
