"""The per-record lattice map of :mod:`dpkit._lattice` as an engine expression.

Every value an aggregate sums is first mapped, in the engine, to an integer number of
``unit`` steps with the shared formula (the per-record map; :func:`dpkit._lattice.units`
is the NumPy reference)::

    units(x) = clip(floor(clip(x, lower, upper) / unit + 0.5),
                    ceil(lower / unit), floor(upper / unit))

in float64, with ``unit`` a power of two and every ``|bound / unit| < 2**52`` (checked by
:func:`dpkit._lattice.check_unit`), so every engine computes the same integers bit for bit.
The engine then sums the *offsets* ``units(x) - centre``, integer-valued float64 numbers
with ``|offset| <= 2**(bits + 1)``: every partial sum is an integer below ``2**53`` for up to
``2**52 / 2**(bits + 1)`` rows per group, so the float64 sums are exact in any order, on any
engine (a larger table is summed by the offsets' digits, see
:func:`dpkit.session._specs.split_for`, decided from its number of rows); the exact sum of
units is ``centre * count + offsets`` in Python integers. No float sum of raw values is
ever trusted, so the float-sum attack on engines that sum floats (order-dependent rounding
larger than the sensitivity at offsets such as ``(1e15, 1e15 + 1)``) does not apply.

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
        unit = unit_for(lower, upper, bits, owner=owner)
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

    def inside(self, span: tuple[Any, Any] | None) -> bool:
        """Whether every value in ``span = (min, max)`` (a column's range, no null and no
        NaN) lies in ``[low * unit, high * unit]``, where the clip of :meth:`offsets` leaves
        every value as it is (exact comparisons of Python numbers)."""
        if span is None:
            return False
        lo, hi = span
        ok = (int, float)
        if not (isinstance(lo, ok) and isinstance(hi, ok)) or isinstance(lo, bool):
            return False
        return bool(self.low * self.unit <= lo and hi <= self.high * self.unit)

    def offsets(
        self,
        column: str,
        valid: nw.Expr | None,
        fill: float | None,
        *,
        clip: bool = True,
        centred: bool = True,
    ) -> nw.Expr:
        """``units(x) - centre`` per record as an integer-valued Float64; null where
        ``valid`` is false (nulls and NaN), unless ``fill`` replaces them. ``valid=None``
        says the column has neither (checked on the data), and saves the masking.
        ``clip=False`` leaves out the clip, for a column known to lie inside the clip's
        bounds (:meth:`inside`: the clip is then the identity on every record, so the units
        are the same numbers; ``valid`` must be None). ``centred=False`` gives ``units(x)``
        itself (the centre is then subtracted from the sum: see
        :class:`dpkit.session._specs.Summed`).

        The clip is to the outermost lattice points inside the bounds,
        ``[low * unit, high * unit]``, which gives the contract's ``units(x)`` exactly without
        its second clip: inside them ``clip(x, lower, upper) = x`` and ``x / unit`` lies in
        ``[low, high]``, so ``floor(x / unit + 0.5)`` does too; below ``low * unit`` both give
        ``low`` (the contract's inner value is below ``low + 1/2``, then clipped up), above
        ``high * unit`` both give ``high``. The result is an integer of magnitude at most
        ``2**(bits + 1)``, so float64 sums of up to ``2**52 / 2**(bits + 1)`` of them are exact
        in any order (every partial sum is an integer below ``2**53``).
        """
        x = nw.col(column).cast(nw.Float64)
        if valid is None:  # the column has no null and no NaN: nothing to mask
            fill = 0.0
        elif fill is not None:
            x = nw.when(valid).then(x).otherwise(nw.lit(float(fill)))
        lo, hi = self.low * self.unit, self.high * self.unit  # exact: a power-of-two unit
        if clip or valid is not None:
            clipped = nw.max_horizontal(nw.min_horizontal(x, nw.lit(hi)), nw.lit(lo))
        else:  # every value lies in [lo, hi] (checked on the table): the clip changes none
            clipped = x
        off = (clipped / self.unit + 0.5).floor()
        if centred:
            off = off - float(self.centre)
        return off if fill is not None or valid is None else nw.when(valid).then(off)
