"""The per-record lattice map, as an engine expression and as its NumPy reference.

Every value an aggregate sums is first mapped, in the engine, to an integer number of
``unit`` steps (CONTRACTS.md, contract 2)::

    units(x) = clip(floor(clip(x, lower, upper) / unit + 0.5),
                    ceil(lower / unit), floor(upper / unit))

in float64, with ``unit`` a power of two and every ``|bound / unit| < 2**52`` (checked), so
the division is exact, the result is an integer-valued float64 and the cast to int64 is exact.
Every step is IEEE-754 float64 arithmetic with round-to-nearest, so Polars, pandas, DuckDB
and NumPy (and Spark) compute the same integers bit for bit. The engine then sums the
*offsets* ``units(x) - centre`` as Int64; they are small (``|offset| <= 2**(bits + 1)``), so
the sums are exact integers with no overflow for up to ``2**62 / 2**(bits + 1)`` rows per
group (checked after the fact), and the exact sum of units is ``centre * count + offsets``
in Python integers. No float sum of bounded values is ever trusted: the float-sum attack on
engines that sum floats (order-dependent rounding exceeding the sensitivity at offsets such as
``(1e15, 1e15 + 1)``) cannot apply.

Privacy depends only on every record's units lying in ``[ceil(lower/unit), floor(upper/unit)]``
(the clip guarantees it) and being a function of that record alone; the rounding to the
lattice (at most ``unit / 2`` per record) is an accuracy matter.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import narwhals as nw
import numpy as np

from dpkit.errors import ParameterError

__all__ = ["Lattice", "units_numpy"]

#: |bound / unit| must stay below this so that float64 represents every lattice point
_MAX_UNITS = 2.0**52


def _pow2_at_most(x: float) -> float:
    _m, e = math.frexp(x)
    return math.ldexp(1.0, e - 1)


@dataclass(frozen=True, slots=True)
class Lattice:
    """The lattice of one aggregate: ``unit``, its integer range ``[low, high]`` and ``centre``.

    ``unit`` is the largest power of two at most ``(upper - lower) / 2**bits``, doubled until
    ``max(|lower|, |upper|) / unit < 2**52``. For integer data with integer bounds and
    ``unit <= 1``, every integer is a lattice point.
    """

    lower: float
    upper: float
    unit: float
    low: int
    high: int
    centre: int

    @classmethod
    def for_bounds(cls, owner: str, lower: float, upper: float, bits: int) -> Lattice:
        width = upper - lower
        if not math.isfinite(width):
            raise ParameterError(
                f"{owner}: `bounds` ({lower!r}, {upper!r}) are too far apart for float64"
            )
        unit = _pow2_at_most(width / 2.0**bits)
        biggest = max(abs(lower), abs(upper))
        while biggest / unit >= _MAX_UNITS:
            unit *= 2.0
        low, high = math.ceil(lower / unit), math.floor(upper / unit)
        if low > high:  # pragma: no cover - unit <= width guarantees a lattice point inside
            raise ParameterError(f"{owner}: no lattice point inside `bounds`")
        return cls(lower, upper, unit, low, high, (low + high) // 2)

    @property
    def half_range(self) -> int:
        """The largest ``|units - centre|``: the per-record sensitivity of a centred sum."""
        return max(self.high - self.centre, self.centre - self.low)

    @property
    def magnitude(self) -> int:
        """The largest ``|units|``: the per-record sensitivity of a plain sum."""
        return max(abs(self.low), abs(self.high))

    def valid(self, column: str, dtype: Any) -> nw.Expr:
        """True where the record has a value (not null, not NaN)."""
        ok = ~nw.col(column).is_null()
        if dtype.is_float():
            ok = ok & ~nw.col(column).is_nan()
        return ok

    def offsets(self, column: str, valid: nw.Expr, fill: float | None) -> nw.Expr:
        """Int64 ``units(x) - centre`` per record; 0 where ``valid`` is false."""
        stand_in = self.lower if fill is None else fill
        x = nw.when(valid).then(nw.col(column).cast(nw.Float64)).otherwise(nw.lit(stand_in))
        u = (x.clip(self.lower, self.upper) / self.unit + 0.5).floor()
        u = u.clip(float(self.low), float(self.high)).cast(nw.Int64)
        off = u - nw.lit(self.centre, nw.Int64)
        if fill is not None:
            return off
        return nw.when(valid).then(off).otherwise(nw.lit(0, nw.Int64))


def units_numpy(x: Any, lower: float, upper: float, unit: float) -> np.ndarray:
    """The contract-2 map in NumPy (the reference the engines are tested against).

    Examples
    --------
    >>> units_numpy([-3.0, 0.2, 0.7, 99.9, 250.0], 0.0, 100.0, 0.5)
    array([  0,   0,   1, 200, 200])
    """
    arr = np.asarray(x, dtype=np.float64)
    u = np.floor(np.clip(arr, lower, upper) / unit + 0.5)
    return np.clip(u, math.ceil(lower / unit), math.floor(upper / unit)).astype(np.int64)
