"""The exponential mechanism for quantiles on a power-of-two lattice, support-aware.

A mechanism of its own: :mod:`dpkit.statistics` (single quantiles, ApproximateQuantiles,
JointExp, interval helpers, the Session's quantiles) and
:func:`dpkit.frameworks.inverse_sensitivity` (``support="auto"``) both draw through it;
:mod:`dpkit.mechanisms.quantile_view` draws the same law in O(window).

Lattice
-------
The bounds ``[lower, upper]`` fix a spacing ``g = 2**(floor(log2(upper - lower)) - 30)``
(public; :func:`dpkit._lattice.unit_for`) and every record is mapped to the integer
``u(x) = clip(floor(clip(x, lower, upper) / g + 1/2), ceil(lower / g), floor(upper / g))``
(:func:`dpkit._lattice.units`, the per-record map engines reproduce bit for bit): neighbours
stay neighbours. Outputs are lattice points ``u * g``. A data set becomes sorted
distinct lattice values ``v_0 < ... < v_{d-1}`` with multiplicities ``c_j`` (:class:`Counts`).

Base measure (``support``)
--------------------------
The exponential mechanism draws a lattice point ``t`` with probability proportional to
``mu(t) exp(-rate * loss(t))`` for a **data-independent** base measure ``mu``:

* ``"continuous"``: ``mu(t) = 1`` (the lattice version of Smith's interval mechanism: a data
  gap gets mass proportional to its length, a tied value one lattice point's worth).
* ``"auto"``: ``mu(t) = 31 + sum_{j=0}^{30} 2**j [2**j divides t]``: half the mass is spread
  evenly (``31`` per point), half sits on the dyadic grids ``2**j g Z`` with each grid carrying
  the same total. A point on a coarse grid (an integer, a half, ...) weighs as much as a
  stretch of that grid's spacing divided by the number of grids, so a value held by many
  records is released *exactly* instead of beside its tie block (Lalanne et al. 2022
  describe how interval mechanisms fail on atoms), at any dyadic resolution.
* a resolution ``r`` (a power of two, for data known to lie on ``r Z``, such as an integer
  column: ``r = 1``): ``mu(t) = 1 + 2**k [2**k divides t]`` with ``r = 2**k g``: half the mass
  on the grid ``r Z``, one atom weighing as much as the stretch ``r`` it stands for. Much
  stronger atoms than ``"auto"``; the column's type (schema, not data) tells it.

The measure depends only on the bounds and the support, never on the data, so no
data-dependent "is it integer?" test is needed: the privacy proof is the usual one.

Cells
-----
Between consecutive data values the loss is constant, so the candidates are grouped into
cells: gaps ``[v_{j-1} + 1, v_j - 1]`` (with the range ends) and atoms ``{v_j}``. A cell has
its exact integer mass ``mu(cell)`` (below ``2**53``: exact as float64), the number of
records strictly below it (``below``) and at most it (``atmost``). The mechanism draws a cell
with :func:`~dpkit.samplers.heavy_tailed.exp_weighted_choice` (floats only propose; acceptance
is an exact comparison) and then a point of the cell with probability ``mu(t) / mu(cell)``
by exact integer sampling (:func:`sample_in_ranges`).

Every function here is internal; the public entry points validate their inputs.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dpkit._lattice import GRID_BITS, check_unit, unit_for
from dpkit._lattice import units as lattice_units
from dpkit._validate import is_real
from dpkit.errors import InternalError, ParameterError
from dpkit.samplers import uniform_one
from dpkit.samplers.heavy_tailed import exp_weighted_choice, uniform_below

__all__ = [
    "LEVELS",
    "SUPPORTS",
    "Counts",
    "Measure",
    "QuantileLattice",
    "cells",
    "draw_cells",
    "rank_exponents",
    "resolution_level",
    "sample_in_range",
    "sample_in_ranges",
]

#: Dyadic grids carrying atoms: spacings ``2**j * g`` for ``j = 0 .. GRID_BITS``.
LEVELS = GRID_BITS + 1
SUPPORTS = ("auto", "continuous")


@dataclass(frozen=True, slots=True)
class QuantileLattice:
    """The quantile mechanism's output lattice for the bounds: spacing ``g`` and the integer
    range ``[lo, hi]``."""

    lower: float
    upper: float
    spacing: float
    lo: int
    hi: int
    #: a multiple of ``2**GRID_BITS`` at or below ``lo``: shifts keep dyadic sums in int64
    origin: int

    @classmethod
    def for_bounds(
        cls, owner: str, lower: float, upper: float, bits: int = GRID_BITS
    ) -> QuantileLattice:
        """The shared lattice of the bounds (:func:`dpkit._lattice.unit_for` with ``bits``)."""
        g = unit_for(lower, upper, bits, owner=owner)
        lo, hi = check_unit(owner, g, lower, upper)
        origin = (lo >> GRID_BITS) << GRID_BITS
        return cls(lower, upper, g, lo, hi, origin)

    def units(self, x: np.ndarray) -> np.ndarray:
        """The per-record lattice map (:func:`dpkit._lattice.units`), as int64."""
        return lattice_units(x, self.spacing, self.lower, self.upper)

    def values(self, u: np.ndarray) -> np.ndarray:
        """Lattice indices back to floats (exact: ``|u| < 2**52``, ``g`` a power of two)."""
        return np.asarray(u, dtype=np.int64).astype(np.float64) * self.spacing


@dataclass(frozen=True, slots=True)
class Counts:
    """Sorted distinct lattice values with positive multiplicities (one data set)."""

    lattice: QuantileLattice
    values: np.ndarray  # int64, strictly increasing, inside [lo, hi]
    counts: np.ndarray  # int64, >= 1
    cum: np.ndarray  # int64, cum[j] = records strictly below values[j]; cum[-1] = n

    @classmethod
    def from_units(cls, lattice: QuantileLattice, units: np.ndarray) -> Counts:
        """Sorted distinct values with their counts (``np.unique``; the units lie in
        ``[lo, hi]``, so offsets from ``lo`` are sorted as 32-bit integers when they fit,
        which is faster and gives the same result)."""
        u = np.asarray(units, dtype=np.int64)
        if u.size and lattice.hi - lattice.lo < 2**32:
            s = np.sort((u - lattice.lo).astype(np.uint32))
            first = np.empty(s.size, dtype=bool)
            first[0] = True
            np.not_equal(s[1:], s[:-1], out=first[1:])
            starts = np.flatnonzero(first)
            values = s[starts].astype(np.int64) + lattice.lo
            counts = np.diff(np.append(starts, s.size)).astype(np.int64)
        else:
            values, counts = np.unique(u, return_counts=True)
        cum = np.zeros(values.size + 1, dtype=np.int64)
        np.cumsum(counts, out=cum[1:])
        return cls(lattice, values.astype(np.int64), counts.astype(np.int64), cum)

    @classmethod
    def build(cls, lattice: QuantileLattice, values: np.ndarray, counts: np.ndarray) -> Counts:
        """From sorted (not necessarily distinct) lattice values and counts >= 0."""
        keep = counts > 0
        values, counts = values[keep], counts[keep]
        if values.size > 1 and np.any(values[1:] == values[:-1]):
            starts = np.flatnonzero(np.concatenate(([True], values[1:] != values[:-1])))
            counts = np.add.reduceat(counts, starts)
            values = values[starts]
        cum = np.zeros(values.size + 1, dtype=np.int64)
        np.cumsum(counts, out=cum[1:])
        return cls(lattice, values, counts, cum)

    @property
    def n(self) -> int:
        return int(self.cum[-1])


class Measure:
    """The base measure ``mu`` of a support on a lattice (module docstring).

    ``mu(t) = base + sum_{(j, w) in levels} w [2**j divides t]``: an even part and atoms on
    dyadic grids. ``support`` is ``"auto"`` (every grid, ``base = 31``, ``w_j = 2**j``),
    ``"continuous"`` (``base = 1``, no atoms) or a resolution: a power of two ``r`` in value
    units, for data known to lie on ``r Z`` (integer columns: ``r = 1``): ``base = 1`` and
    atoms ``2**k`` on the grid of spacing ``r = 2**k g``, so the atoms carry half the mass and
    one atom weighs as much as the stretch ``r`` of the line it stands for.
    """

    def __init__(self, lattice: QuantileLattice, support: Any) -> None:
        self.lattice = lattice
        self.support = support
        self.levels: list[tuple[int, int]]
        if isinstance(support, str):
            if support not in SUPPORTS:
                raise ParameterError(
                    f"`support` must be one of {SUPPORTS} or a power-of-two resolution; "
                    f"got {support!r}"
                )
            if support == "auto":
                self.base = LEVELS
                self.levels = [(j, 1 << j) for j in range(LEVELS)]
            else:
                self.base = 1
                self.levels = []
        else:
            k = resolution_level(lattice, support)
            self.base = 1
            self.levels = [(k, 1 << k)] if k > 0 else []
        self.atoms = bool(self.levels)
        # every grid with weight 2**j (support "auto"): point_atoms has a closed form
        self._dyadic = self.levels == [(j, 1 << j) for j in range(LEVELS)]
        self._shifts = np.array([j for j, _w in self.levels], dtype=np.int64)
        self._weights = np.array([w for _j, w in self.levels], dtype=np.int64)

    def _prefix(self, u: np.ndarray) -> np.ndarray:
        """``sum w_j floor((u - origin) / 2**j)``: the atoms' mass in ``(-inf, u]`` + const."""
        s = np.asarray(u, dtype=np.int64) - self.lattice.origin
        if not self.levels:
            return np.zeros(s.shape, dtype=np.int64)
        shifts, weights = self._shifts, self._weights
        if s.size * shifts.size <= 1 << 22:  # one broadcast: shifts as a second axis
            # arithmetic shift = floor division (also below the origin)
            return ((s[..., None] >> shifts) * weights).sum(axis=-1)
        out = np.zeros(s.shape, dtype=np.int64)
        for j, w in self.levels:
            out += (s >> j) * w
        return out

    def point_atoms(self, u: np.ndarray) -> np.ndarray:
        """``_prefix(u) - _prefix(u - 1)``: the atoms' mass at each lattice point ``u``,
        ``sum w_j [2**j divides u - origin]`` (int64).

        For ``"auto"`` the grids dividing ``s = u - origin`` are those up to its trailing
        zeros, so the sum is ``2**(min(tz(s), LEVELS - 1) + 1) - 1`` (``s = 0``: every grid):
        with ``x = s | 2**(LEVELS - 1)``, ``x & -x`` is ``2**min(tz(s), LEVELS - 1)`` (the
        lowest set bit, two's complement: negatives too)."""
        s = np.asarray(u, dtype=np.int64) - self.lattice.origin
        if self._dyadic:
            s |= 1 << (LEVELS - 1)
            s &= -s
            s <<= 1
            s -= 1
            return s
        out = np.zeros(s.shape, dtype=np.int64)
        for j, w in self.levels:
            out += w * ((s & ((1 << j) - 1)) == 0)
        return out

    def mass_of(self, a: int, b: int) -> int:
        """Exact ``mu([a, b])`` of one range (0 when ``b < a``), in Python integers."""
        if b < a:
            return 0
        return self.base * (b - a + 1) + (self.prefix_at(b) - self.prefix_at(a - 1))

    def range_mass(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Exact integer ``mu([a, b])`` per pair (0 when ``b < a``), int64 below ``2**53``."""
        a = np.asarray(a, dtype=np.int64)
        b = np.asarray(b, dtype=np.int64)
        length = np.maximum(b - a + 1, 0)
        mass = self.base * length
        if self.atoms:
            live = length > 0
            extra = self._prefix(b) - self._prefix(a - 1)
            mass = mass + np.where(live, extra, 0)
        return mass

    def point_mass(self, u: np.ndarray) -> np.ndarray:
        return self.range_mass(u, u)

    def marks(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(P(v), P(v - 1))`` per value: what :func:`cells` needs, reusable in a recursion
        (``P(v - 1)`` is ``P(v)`` less the atoms at ``v``, :meth:`point_atoms`)."""
        v = np.asarray(values, dtype=np.int64)
        at = self._prefix(v)
        return at, at - self.point_atoms(v)

    def prefix_at(self, u: int) -> int:
        """``_prefix`` of one lattice index, in Python integers (no array overhead).

        For ``"auto"``, with ``s = H + t`` (``H`` a multiple of ``2**L``, ``0 <= t < 2**L``,
        ``L = LEVELS``): ``sum_{j < L} 2**j floor(s / 2**j) = L H + sum_b bit_b(t) 2**b
        (b + 1)``, read from one table per byte of ``t`` (:data:`_DYADIC_BYTES`)."""
        s = int(u) - self.lattice.origin
        if self._dyadic:
            t = s & ((1 << LEVELS) - 1)
            return LEVELS * (s - t) + sum(
                table[(t >> (8 * k)) & 255] for k, table in enumerate(_DYADIC_BYTES)
            )
        return sum((s >> j) * w for j, w in self.levels)

    @functools.cached_property
    def total(self) -> int:
        """``mu`` of the whole lattice range (public; computed once)."""
        lat = self.lattice
        return self.mass_of(lat.lo, lat.hi)


#: ``_DYADIC_BYTES[k][x] = sum_i bit_i(x) 2**(8k + i) (8k + i + 1)`` over the bits of the
#: byte ``x`` below ``LEVELS``: :meth:`Measure.prefix_at` of the ``"auto"`` measure.
_DYADIC_BYTES = tuple(
    tuple(
        sum(
            (1 << (8 * k + i)) * (8 * k + i + 1)
            for i in range(8)
            if x >> i & 1 and 8 * k + i < LEVELS
        )
        for x in range(256)
    )
    for k in range((LEVELS + 7) // 8)
)


def resolution_level(lattice: QuantileLattice, resolution: Any) -> int:
    """``k`` with ``resolution = 2**k * g``: a power of two between ``g`` and the width."""
    if not is_real(resolution):  # bool, complex and time deltas are not resolutions
        raise TypeError(
            f"`support` must be 'auto', 'continuous' or a number (a resolution); "
            f"got {type(resolution).__name__}"
        )
    r = float(resolution)
    if not (math.isfinite(r) and r > 0):
        raise ParameterError(f"`support` resolution must be a finite number > 0; got {r!r}")
    mant, _exp = math.frexp(r)
    if mant != 0.5:
        raise ParameterError(
            f"`support` resolution must be a power of two (1, 0.5, 2, ...); got {r!r}; "
            "rescale decimal data by a public factor first (x10 makes tenths integers)"
        )
    k = round(math.log2(r / lattice.spacing))
    if not 0 <= k <= GRID_BITS:
        raise ParameterError(
            f"`support` resolution {r!r} must lie between the lattice spacing "
            f"{lattice.spacing!r} and the width of the bounds"
        )
    return k


def sample_in_ranges(measure: Measure, a: np.ndarray, b: np.ndarray, source: Any) -> np.ndarray:
    """One lattice point of ``[a_i, b_i]`` per row, drawn exactly with probability ``mu(t)/mu``.

    ``mu`` is the sum of ``base`` per point and ``w_j`` per multiple of ``2**j`` (each atom
    level): a component (the even part or one level) is chosen with probability proportional
    to its integer mass, then a point uniformly among that component's points.
    """
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    if a.size == 0:
        return a.copy()
    if np.any(b < a):
        raise InternalError("sample_in_ranges: empty range")
    length = b - a + 1
    if not measure.atoms:
        return a + uniform_below(length, source)
    if a.size == 1:  # one range: the same draws in Python integers, without array overhead
        return np.array([_one_in_range(measure, int(a[0]), int(b[0]), source)], dtype=np.int64)
    o = measure.lattice.origin
    sa, sb = a - 1 - o, b - o
    levels = measure.levels
    weights = np.empty((a.size, len(levels) + 1), dtype=np.int64)
    weights[:, 0] = measure.base * length
    for col, (j, w) in enumerate(levels, start=1):
        weights[:, col] = ((sb >> j) - (sa >> j)) * w
    cum = np.cumsum(weights, axis=1)
    r = uniform_below(cum[:, -1], source)
    comp = (cum <= r[:, None]).sum(axis=1)  # first component whose cumulative mass exceeds r
    out = np.empty(a.size, dtype=np.int64)
    even = comp == 0
    if np.any(even):
        out[even] = a[even] + uniform_below(length[even], source)
    for col in np.unique(comp[~even]):
        rows = np.flatnonzero(comp == col)
        lev = levels[int(col) - 1][0]
        first = (sa[rows] >> lev) + 1  # the first multiple of 2**lev at or above a (shifted)
        cnt = (sb[rows] >> lev) - (sa[rows] >> lev)
        out[rows] = ((first + uniform_below(cnt, source)) << lev) + o
    return out


def sample_in_range(measure: Measure, a: int, b: int, source: Any) -> int:
    """:func:`sample_in_ranges` for one range ``[a, b]`` given as Python ints (same draws)."""
    if b < a:
        raise InternalError("sample_in_ranges: empty range")
    if not measure.atoms:
        return a + int(uniform_below(np.array([b - a + 1], dtype=np.int64), source)[0])
    return _one_in_range(measure, a, b, source)


def _one_in_range(measure: Measure, a: int, b: int, source: Any) -> int:
    """:func:`sample_in_ranges` for one range (same components, same exact draws)."""
    o = measure.lattice.origin
    sa, sb = a - 1 - o, b - o
    weights = [measure.base * (b - a + 1)]
    weights += [((sb >> j) - (sa >> j)) * w for j, w in measure.levels]
    r = uniform_one(sum(weights), source)
    comp = 0
    while r >= weights[comp]:
        r -= weights[comp]
        comp += 1
    if comp == 0:
        return a + uniform_one(b - a + 1, source)
    lev = measure.levels[comp - 1][0]
    cnt = (sb >> lev) - (sa >> lev)
    return ((((sa >> lev) + 1) + uniform_one(cnt, source)) << lev) + o


@dataclass(frozen=True, slots=True)
class Cells:
    """The cells of one sub-problem: gap, atom, gap, ..., atom, gap (``2k + 1`` entries)."""

    start: np.ndarray  # int64 first lattice point of the cell
    stop: np.ndarray  # int64 last lattice point (start - 1 for an empty gap)
    mass: np.ndarray  # float64 exact integer masses
    below: np.ndarray  # int64 records of the sub-problem strictly below the cell
    atmost: np.ndarray  # int64 records at or below the cell
    n: int  # records in the sub-problem


def cells(
    counts: Counts,
    measure: Measure,
    out_lo: int,
    out_hi: int,
    prefix: tuple[np.ndarray, np.ndarray] | None = None,
) -> Cells:
    """Cells for the records of ``counts`` and outputs in ``[out_lo, out_hi]``.

    Every value of ``counts`` must lie inside ``[out_lo, out_hi]``. ``prefix`` may carry
    :meth:`Measure.marks` of ``counts.values`` computed once for a whole recursion.
    """
    v = counts.values
    k = v.size
    start = np.empty(2 * k + 1, dtype=np.int64)
    stop = np.empty(2 * k + 1, dtype=np.int64)
    start[0] = out_lo
    start[2::2] = v + 1
    stop[-1] = out_hi
    stop[0:-1:2] = v - 1
    start[1::2] = v
    stop[1::2] = v
    mass = measure.base * np.maximum(stop - start + 1, 0)
    if measure.atoms:
        # atoms in [start, stop] = P(stop) - P(start - 1) with P the atoms' prefix mass; the
        # boundary sequence is P(out_lo - 1), P(v0 - 1), P(v0), P(v1 - 1), ..., P(out_hi)
        pv, pvm1 = prefix if prefix is not None else measure.marks(v)
        seq = np.empty(2 * k + 2, dtype=np.int64)
        seq[0] = measure.prefix_at(out_lo - 1)
        seq[1:-1:2] = pvm1
        seq[2:-1:2] = pv
        seq[-1] = measure.prefix_at(out_hi)
        mass = mass + np.diff(seq)
    below = np.empty(2 * k + 1, dtype=np.int64)
    below[0::2] = counts.cum
    below[1::2] = counts.cum[:-1]
    atmost = below.copy()
    atmost[1::2] = counts.cum[1:]
    return Cells(start, stop, mass.astype(np.float64), below, atmost, counts.n)


def rank_exponents(c: Cells, tau: Fraction) -> tuple[np.ndarray, int]:
    """``(D * d, D)`` with ``d = max(0, below - tau, tau - atmost)`` and ``D`` tau's denominator.

    ``d`` is the tie-aware distance from the target rank ``tau`` to the cell's rank range: 0
    exactly when every point of the cell is a ``tau``-th order statistic. Integers, exact.
    """
    num, den = tau.numerator, tau.denominator
    if den * (c.n + 1) >= 2**62 or abs(num) >= 2**62:
        raise ParameterError("quantile target too fine for the data size (denominator overflow)")
    e = np.maximum(c.below * den - num, num - c.atmost * den)
    np.maximum(e, 0, out=e)
    return e, den


def draw_cells(
    c: Cells, measure: Measure, exponents: np.ndarray, rate: Fraction, size: int, source: Any
) -> tuple[np.ndarray, np.ndarray]:
    """``size`` draws of ``P[t] ∝ mu(t) exp(-rate * e(cell(t)))``: lattice points and cells."""
    idx = exp_weighted_choice(c.mass, exponents, rate, size, source)
    points = sample_in_ranges(measure, c.start[idx], c.stop[idx], source)
    return points, idx
