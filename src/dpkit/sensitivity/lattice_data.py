"""Data on the integer lattice for the sensitivity algorithms that scale noise.

``A(f, x, k)`` decides propose-test-release's distance and sets the smooth sensitivity, so it
must be exact or a certified upper bound. Float arithmetic on raw records cannot promise
either: prefix sums of ``n`` floats carry errors growing with ``n`` and with the records'
distance from zero (bounds ``(1e15, 1e15 + 1)``: the float mean of seven records is off by
more than their sensitivity), and variances of nearly equal records cancel catastrophically.
So the algorithms run on integers:

* the records are mapped onto the lattice of the bounds with the documented per-record map
  (:func:`dpkit._lattice.units`, unit ``u = unit_for(lower, upper)``) and centred:
  ``w_i = units(x_i) - C`` with ``C = (L + U) // 2``, ``L = ceil(lower / u)``,
  ``U = floor(upper / u)``; every ``|w_i| <= 2**30 + 1``;
* prefix sums of ``w`` are exact int64 (below ``2**63`` for fewer than ``2**32`` records),
  so every window sum is an exact integer;
* results are in units of ``u`` and scaled back exactly (``u`` is a power of two).

When the records and the bounds already lie on the lattice (the frameworks map their data
there first; integer data with integer bounds always do), ``A`` of the lattice data is ``A``
of the data. Otherwise every record and every value a neighbour may take moves by at most one
unit under the map, and ``|f(y) - f(R(y))| <= L_f u`` for a statistic with sup-norm Lipschitz
constant ``L_f`` (1 for the mean, percentiles and the standard deviation; ``2 (upper - lower)
+ u`` for the variance), so ``A(f, x, k) <= A(f, R(x), k) + 2 L_f u`` over the bounds: the
callers add that slack (:attr:`LatticeData.slack`).
"""

from __future__ import annotations

import math
import sys
from fractions import Fraction

import numpy as np

from dpkit._lattice import unit_for, units

__all__ = ["LatticeData", "ceil_float"]


def ceil_float(x: Fraction) -> float:
    """The smallest float ``>= x`` (a monotone map: it keeps every inequality between values):
    infinity above the largest float, the most negative float below it."""
    try:
        f = float(x)
    except OverflowError:  # beyond the float range (a variance over bounds near 1e308)
        return math.inf if x > 0 else -sys.float_info.max
    if Fraction(f) < x:
        f = math.nextafter(f, math.inf)
    return f


class LatticeData:
    """Sorted centred lattice units of a dataset and its bounds, with exact prefix sums.

    Attributes
    ----------
    w : numpy.ndarray
        Sorted centred units (int64).
    lo, hi : int
        The centred lattice bounds, ``L - C`` and ``U - C``.
    unit : float
        The lattice unit (a power of two).
    n : int
        Number of records.
    p1 : numpy.ndarray
        Exact prefix sums of ``w`` (int64, length ``n + 1``).
    on_lattice : bool
        Whether the records and both bounds were lattice points (then no slack is needed).
    """

    def __init__(self, x: np.ndarray, lower: float, upper: float) -> None:
        u = unit_for(lower, upper)
        first, last = math.ceil(lower / u), math.floor(upper / u)
        centre = (first + last) // 2
        raw = units(x, u, lower, upper)
        self.unit = u
        self.lower, self.upper = float(lower), float(upper)
        self.on_lattice = (
            Fraction(lower) == first * Fraction(u)
            and Fraction(upper) == last * Fraction(u)
            and bool(np.array_equal(raw.astype(np.float64) * u, x))
        )
        self.w = np.sort(raw - centre)
        self.lo, self.hi = first - centre, last - centre
        self.n = int(self.w.size)
        self.p1 = np.concatenate(([0], np.cumsum(self.w))).astype(np.int64)

    @property
    def width(self) -> int:
        """``hi - lo`` in units."""
        return self.hi - self.lo

    def slack(self, lipschitz: float | Fraction) -> Fraction:
        """``2 L_f u`` when the data or bounds were off the lattice, else 0 (module docs)."""
        if self.on_lattice:
            return Fraction(0)
        return 2 * Fraction(lipschitz) * Fraction(self.unit)

    def floats(self) -> tuple[np.ndarray, float, float]:
        """The centred units as float64 (exact: below ``2**31``) with the bounds."""
        return self.w.astype(np.float64), float(self.lo), float(self.hi)
