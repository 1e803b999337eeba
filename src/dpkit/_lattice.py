"""The integer lattice every exact computation in dpkit goes through.

Two maps live here, both exact and both reproducible outside Python:

**The per-record map** (:func:`units`). A record ``x`` becomes the integer::

    units(x) = clip(floor(clip(x, lower, upper) / unit + 0.5), ceil(lower / unit),
                    floor(upper / unit))

evaluated in IEEE-754 float64 (every operation rounded to nearest, ties to even), with
``unit`` a positive power of two and ``|lower / unit|``, ``|upper / unit|`` below ``2**52``
(:func:`check_unit` refuses anything else). Division by a power of two is exact, ``floor`` and
``clip`` are exact, and the one rounded operation, ``v + 0.5``, is rounded the same way by
every IEEE-754 engine (NumPy, Polars, DuckDB, Spark, Java), so an engine evaluating the
formula in float64 gets the same int64 bit for bit. It rounds to the nearest multiple of
``unit`` (halves up; the float addition can also round ``v`` a hair below a half up, for
example ``0.49999999999999994``, so ``|x - units(x) * unit| <= unit`` is the safe statement)
and never leaves ``[ceil(lower / unit), floor(upper / unit)]``, so ``units(x) * unit`` is a
record inside the bounds. It is a fixed function of one record: datasets that are neighbours
stay neighbours (or become equal), whatever the neighbour relation.

A statistic of the mapped records is exact: a sum of units is an integer (:func:`exact_sum`
adds int64 arrays without overflow), a mean is the :class:`fractions.Fraction`
``exact_sum(u) * unit / n`` (:func:`exact_mean`). An engine that sums in Int64 must split the
units into high and low parts when ``n * 2**52`` could overflow, as :func:`exact_sum` does.

**Rounding a statistic** (:func:`round_values`). Mechanisms release ``grid * (n + noise)``
with ``n`` the statistic rounded to the nearest multiple of a power-of-two ``grid`` (ties to
even). Float input is divided by ``grid`` (exact) and rounded with ``numpy.rint``; exact input
(Python ``int``, :class:`fractions.Fraction`, or a sequence / object array of them, floats
allowed among them) is rounded in exact rational arithmetic, never through a float, so an
exact mean of records near ``1e15`` keeps every bit. For a float both paths give the same
integer.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, NamedTuple

import numpy as np

from dpkit._validate import as_real_array
from dpkit.errors import ParameterError

__all__ = [
    "GRID_BITS",
    "MAX_UNITS",
    "OnLattice",
    "Values",
    "check_unit",
    "exact_mean",
    "exact_sum",
    "on_data_lattice",
    "parse_values",
    "round_values",
    "unit_for",
    "units",
]

#: Every ``|bound / unit|`` is below this, so float64 holds every lattice point exactly.
MAX_UNITS = 2**52

#: Binary digits of a lattice below the width of its bounds: the unit of ``(lower, upper)``
#: is ``2**(floor(log2(upper - lower)) - GRID_BITS)`` (:func:`unit_for`), and an output grid
#: is about ``2**-GRID_BITS`` of its noise scale. It depends on public figures only.
GRID_BITS = 30

#: Integers below this magnitude convert to float64 exactly.
_EXACT_FLOAT_INT = 2**53


def _is_pow2(x: float) -> bool:
    return x > 0 and math.isfinite(x) and math.frexp(x)[0] == 0.5


def check_unit(owner: str, unit: Any, lower: float, upper: float) -> tuple[int, int]:
    """Check a lattice ``unit`` for ``bounds = (lower, upper)``; return the lattice range.

    Returns ``(ceil(lower / unit), floor(upper / unit))``, the smallest and largest value
    :func:`units` can give.

    Raises
    ------
    TypeError
        ``unit`` not a real number.
    ParameterError
        ``unit`` not a positive power of two, bounds not finite or not increasing, a bound
        ``2**52`` or more units from zero, or no lattice point between the bounds.
    """
    if isinstance(unit, bool) or not isinstance(unit, numbers.Real):
        raise TypeError(f"{owner}: `unit` must be a power of two; got {type(unit).__name__}")
    u = float(unit)
    if not _is_pow2(u):
        raise ParameterError(f"{owner}: `unit` must be a positive power of two; got {unit!r}")
    lo, hi = float(lower), float(upper)
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ParameterError(
            f"{owner}: `bounds` must be finite with lower < upper; got ({lower!r}, {upper!r})"
        )
    if max(abs(lo), abs(hi)) / u >= MAX_UNITS:
        raise ParameterError(
            f"{owner}: bounds ({lo!r}, {hi!r}) are 2**52 or more units of {u!r} from zero; "
            "use a coarser unit (see unit_for) or subtract a public offset first"
        )
    first, last = math.ceil(lo / u), math.floor(hi / u)
    if first > last:
        raise ParameterError(
            f"{owner}: no multiple of `unit` {u!r} lies between the bounds ({lo!r}, {hi!r}); "
            "use a finer unit"
        )
    return first, last


def unit_for(
    lower: float,
    upper: float,
    bits: int = GRID_BITS,
    *,
    owner: str = "unit_for",
    name: str = "bounds",
) -> float:
    """The lattice unit dpkit uses for ``bounds``: a power of two from the bounds alone.

    ``2**(floor(log2(upper - lower)) - bits)``, doubled until both bounds are fewer than
    ``2**52`` units from zero (bounds far from zero relative to their width get a unit close
    to their own float resolution). Never depends on data. Bounds so close together that
    this unit would be below the smallest normal float (``2**-1022``: a width below about
    ``2**(bits - 1022)``) are refused, naming ``owner`` (the caller) and its parameter ``name``.

    Examples
    --------
    >>> unit_for(0.0, 100.0)
    5.960464477539063e-08
    >>> unit_for(1e15, 1e15 + 1)
    0.25
    """
    width = float(upper) - float(lower)
    if not (math.isfinite(width) and width > 0):
        raise ParameterError(
            f"{owner}: `{name}` must be finite with lower < upper; got ({lower!r}, {upper!r})"
        )
    _m, e = math.frexp(width)  # width = m 2**e, 0.5 <= m < 1: floor(log2 width) = e - 1
    if e - 1 - bits < -1022:
        raise ParameterError(
            f"{owner}: `{name}` ({lower!r}, {upper!r}) are too close together: their width "
            f"{width:.3g} leaves no room for a lattice of 2**-{bits} of it above the smallest "
            "normal float; rescale the data (other units)"
        )
    u = math.ldexp(1.0, e - 1 - bits)
    top = max(abs(float(lower)), abs(float(upper)))
    while top / u >= MAX_UNITS:
        u *= 2
    return u


def units(values: Any, unit: float, lower: float, upper: float) -> np.ndarray:
    """The per-record lattice map (module docstring): float records to int64 units.

    ``values`` is a finite float array (checked by the caller); ``unit`` and the bounds must
    pass :func:`check_unit`.

    Examples
    --------
    >>> units(np.array([-3.0, 0.3, 0.75, 2.75, 99.0]), 0.5, 0.0, 10.0).tolist()
    [0, 1, 2, 6, 20]
    """
    first, last = check_unit("units", unit, lower, upper)
    x = np.clip(np.asarray(values, dtype=np.float64), lower, upper)
    x /= unit  # exact: a power of two, no overflow (|bound / unit| < 2**52)
    x += 0.5
    np.floor(x, out=x)
    np.clip(x, first, last, out=x)
    return x.astype(np.int64)


def exact_sum(u: np.ndarray) -> int:
    """The exact sum of an int64 array of lattice units (``|u| < 2**52``), as a Python int.

    The units are split into a high part and a low 26-bit part, each summed in int64 (no
    overflow below ``2**37`` records), then recombined exactly.

    Examples
    --------
    >>> exact_sum(np.full(4096, 2**51 - 1, dtype=np.int64)) == 4096 * (2**51 - 1)
    True
    """
    arr = np.asarray(u, dtype=np.int64).ravel()
    if arr.size == 0:
        return 0
    low = arr & ((1 << 26) - 1)  # in [0, 2**26), also for negative units (two's complement)
    high = arr >> 26  # floor division by 2**26
    return (int(high.sum()) << 26) + int(low.sum())


def exact_mean(u: np.ndarray, unit: float) -> Fraction:
    """The exact mean ``sum(u) * unit / n`` of lattice units, as a Fraction."""
    n = int(np.size(u))
    if n == 0:
        raise ParameterError("exact_mean: the mean of no records is undefined")
    return Fraction(exact_sum(u)) * Fraction(unit) / n


@dataclass(frozen=True, slots=True)
class Values:
    """A release's input: finite floats, or exact rationals, with its shape.

    Exactly one of ``floats`` (a float64 array) and ``exact`` (a tuple of Fractions in C
    order) is set.
    """

    floats: np.ndarray | None
    exact: tuple[Fraction, ...] | None
    shape: tuple[int, ...]
    scalar: bool

    @property
    def size(self) -> int:
        return int(math.prod(self.shape))


def _exact_item(owner: str, v: Any) -> Fraction:
    if isinstance(v, bool | np.bool_ | np.timedelta64 | np.datetime64):
        raise TypeError(f"{owner}: `value` must hold real numbers; got {type(v).__name__}")
    if isinstance(v, numbers.Rational):  # int, Fraction, NumPy integers
        return Fraction(int(v.numerator), int(v.denominator))
    if isinstance(v, float | np.floating):
        if not math.isfinite(float(v)):
            raise ParameterError(
                f"{owner}: `value` must be finite; got NaN or infinity (clip or impute before "
                "releasing)"
            )
        return Fraction(float(v))
    raise TypeError(
        f"{owner}: `value` must hold real numbers (float, int or fractions.Fraction); got "
        f"{type(v).__name__}"
    )


def parse_values(owner: str, value: Any) -> Values:
    """Read a release's ``value``: a float path for floats, an exact path for exact numbers.

    Floats and integers that float64 holds exactly take the float path; a Python ``int``
    beyond ``2**53``, a :class:`~fractions.Fraction`, or a sequence / object array holding
    them take the exact path. Bools, strings and other objects are a TypeError; NaN and
    infinities a ParameterError.
    """
    if isinstance(value, bool | np.bool_):
        raise TypeError(f"{owner}: `value` must be a real number or array; got bool")
    if isinstance(value, str | bytes | np.timedelta64 | np.datetime64):
        raise TypeError(f"{owner}: `value` must be numeric; got {type(value).__name__}")
    if isinstance(value, numbers.Rational) and not isinstance(value, np.integer):
        if isinstance(value, int) and abs(value) < _EXACT_FLOAT_INT:
            return Values(np.asarray(float(value)), None, (), True)
        return Values(None, (_exact_item(owner, value),), (), True)
    if isinstance(value, np.ma.MaskedArray | dict | set | frozenset):
        as_real_array(owner, "value", value)  # refused, naming `value` (masked: see there)
    try:
        arr = np.asarray(value)
    except (ValueError, RecursionError):
        as_real_array(owner, "value", value)  # a ragged or nested list: refused by name
        raise  # pragma: no cover - as_real_array raised
    if arr.dtype == object:
        items = tuple(_exact_item(owner, v) for v in arr.flat)
        return Values(None, items, arr.shape, arr.ndim == 0)
    if arr.dtype.kind not in "iuf":  # bool, complex, time deltas, strings: not numbers
        raise TypeError(f"{owner}: `value` must hold real numbers; got dtype {arr.dtype}")
    if (
        np.issubdtype(arr.dtype, np.integer)
        and arr.size
        and max(-int(arr.min()), int(arr.max())) >= _EXACT_FLOAT_INT
    ):
        items = tuple(Fraction(int(v)) for v in arr.flat)
        return Values(None, items, arr.shape, arr.ndim == 0)
    floats = arr.astype(np.float64, copy=False)
    if floats.size and not np.isfinite(floats).all():
        raise ParameterError(
            f"{owner}: `value` must be finite; got NaN or infinity (clip or impute before "
            "releasing)"
        )
    return Values(floats, None, arr.shape, arr.ndim == 0)


def _too_far(owner: str, limit: float, grid: float) -> ParameterError:
    return ParameterError(
        f"{owner}: `value` must be below {limit * grid:.3g} in magnitude, {limit:.3g} steps "
        f"of this mechanism's grid ({grid!r}), which follows its noise scale (sensitivity / "
        "epsilon); a value that large next to the noise usually means the sensitivity is "
        "understated; otherwise subtract a public offset before releasing"
    )


def round_values(owner: str, values: Values, grid: float, *, limit: float = 2.0**61) -> np.ndarray:
    """``values / grid`` rounded to the nearest integer (ties to even), as int64 in shape.

    ``grid`` is a power of two. Floats: exact division, then :func:`numpy.rint`. Exact values:
    :func:`round` on the exact quotient. ``|values / grid| >= limit`` is a ParameterError
    (the lattice point and the noise must fit in int64).
    """
    if values.floats is not None:
        with np.errstate(over="ignore"):  # an overflow to infinity is refused just below
            scaled = np.asarray(values.floats / grid)  # exact: grid is a power of two
        if scaled.size and max(-float(scaled.min()), float(scaled.max())) >= limit:
            raise _too_far(owner, limit, grid)
        np.rint(scaled, out=scaled)
        return scaled.astype(np.int64).reshape(values.shape)
    assert values.exact is not None
    g = Fraction(grid)
    out = [round(v / g) for v in values.exact]
    if out and max(abs(v) for v in out) >= limit:
        raise _too_far(owner, limit, grid)
    return np.asarray(out, dtype=np.int64).reshape(values.shape)


class OnLattice(NamedTuple):
    """Data mapped record by record onto the lattice of its bounds (:func:`units`).

    ``units`` (sorted int64) and ``unit`` define the records a framework's statistic is
    computed from, exactly; ``values = units * unit`` (exact floats) are the same records for
    the sensitivity analysis.
    """

    units: np.ndarray
    unit: float
    values: np.ndarray


def on_data_lattice(
    arr: np.ndarray, lower: float, upper: float, *, owner: str = "framework"
) -> OnLattice:
    """Map clipped records onto the lattice ``unit_for(lower, upper)`` (a per-record map).

    The frameworks release ``f(R(x))`` with ``R`` this map: ``R`` sends neighbours to
    neighbours (or equal datasets) and every ``R(x_i)`` lies in the bounds, so the
    sensitivity of ``f`` over the bounds, evaluated at ``R(x)``, bounds that of ``f o R`` at
    ``x``; and ``f(R(x))`` is computed exactly (:func:`dpkit.queries.statistic_on_grid`), so
    no floating-point error of the statistic escapes the charged sensitivity.
    """
    unit = unit_for(lower, upper, owner=owner)
    u = units(arr, unit, lower, upper)
    u.sort()
    return OnLattice(u, unit, u.astype(np.float64) * unit)
