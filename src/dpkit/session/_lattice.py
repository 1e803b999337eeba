"""The per-record lattice map of :mod:`dpkit._lattice` as an engine expression.

Every value an aggregate sums is first mapped, in the engine, to an integer number of
``unit`` steps with the shared formula (CONTRACTS.md, contract 2; :func:`dpkit._lattice.units`
is the NumPy reference)::

    units(x) = clip(floor(clip(x, lower, upper) / unit + 0.5),
                    ceil(lower / unit), floor(upper / unit))

in float64, with ``unit`` a power of two and every ``|bound / unit| < 2**52`` (checked by
:func:`dpkit._lattice.check_unit`), so every engine computes the same integers bit for bit.
The engine then sums the *offsets* ``units(x) - centre`` as Int64; they are small
(``|offset| <= 2**(bits + 1)``), so the sums are exact integers for up to
``2**62 / 2**(bits + 1)`` rows per group (checked after the fact: no term exceeds the bound,
so no overflow can have happened), and the exact sum of units is ``centre * count + offsets``
in Python integers: no high/low split is needed. No float sum of bounded values is ever
trusted, so the float-sum attack on engines that sum floats (order-dependent rounding larger
than the sensitivity at offsets such as ``(1e15, 1e15 + 1)``) does not apply.

Privacy depends only on every record's units lying in ``[ceil(lower/unit), floor(upper/unit)]``
(the clip guarantees it) and being a function of that record alone; the rounding to the
lattice (at most ``unit`` per record) is an accuracy matter.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import narwhals as nw

from dpkit._lattice import check_unit, unit_for
from dpkit.errors import ParameterError

__all__ = ["Lattice"]


@dataclass(frozen=True, slots=True)
class Lattice:
    """The lattice of one aggregate: ``unit``, its integer range ``[low, high]`` and ``centre``.

    ``unit`` is :func:`dpkit._lattice.unit_for` ``(lower, upper, bits)``: the largest power of
    two at most ``(upper - lower) / 2**bits``, doubled until ``max(|lower|, |upper|) / unit <
    2**52``. For integer data with integer bounds and ``unit <= 1``, every integer is a
    lattice point.
    """

    lower: float
    upper: float
    unit: float
    low: int
    high: int
    centre: int

    @classmethod
    def for_bounds(cls, owner: str, lower: float, upper: float, bits: int) -> Lattice:
        if not math.isfinite(upper - lower):
            raise ParameterError(
                f"{owner}: `bounds` ({lower!r}, {upper!r}) are too far apart for float64"
            )
        unit = unit_for(lower, upper, bits)
        low, high = check_unit(owner, unit, lower, upper)
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
