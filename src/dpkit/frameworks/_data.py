"""A framework's data on the grid of its public bounds: the grid, sorting, exact row means."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from dpkit._lattice import GRID_BITS, unit_for
from dpkit._lattice import units as lattice_units
from dpkit.errors import ParameterError

__all__ = ["as_sorted", "check_grid_bounds", "grid_for_bounds", "mean_on_grid"]


def grid_for_bounds(lower: float, upper: float, bits: int = GRID_BITS) -> float:
    """The power-of-two grid spacing used for outputs between ``lower`` and ``upper``."""
    return math.ldexp(1.0, math.floor(math.log2(upper - lower)) - bits)


def as_sorted(arr: np.ndarray, lower: float, upper: float) -> np.ndarray:
    """The data clipped to the bounds and sorted (a per-record map, then a sort)."""
    out = np.clip(arr, lower, upper)
    out.sort()
    return out


def check_grid_bounds(owner: str, lower: float, upper: float, *, name: str = "bounds") -> float:
    """The frameworks' data grid ``grid_for_bounds(lower, upper)``, checked to be a normal
    float with the bounds within ``2**52`` grid units of 0 (so grid units are exact)."""
    width = upper - lower
    if width < 2.0**-990:
        raise ParameterError(
            f"{owner}: `{name}` ({lower!r}, {upper!r}) are too close together: their width "
            f"{width:.3g} leaves no room for a grid of 2**-30 of it (the width must be at "
            "least 2**-990, about 1e-298); rescale the data"
        )
    spacing = grid_for_bounds(lower, upper)
    if max(abs(lower), abs(upper)) / spacing >= 2**52:
        raise ParameterError(
            f"{owner}: `{name}` ({lower!r}, {upper!r}) are too far from 0 for their width "
            "(more than 2**22 widths); shift the data by a public offset so that the bounds "
            "straddle or come near 0"
        )
    return spacing


def mean_on_grid(outs: np.ndarray, lower: float, upper: float, spacing: float) -> np.ndarray:
    """Row means of ``outs`` (``(rows, k)`` floats in the bounds), each output first mapped to
    the lattice of the bounds (:func:`dpkit._lattice.units`), divided by ``spacing`` and
    rounded to the nearest integer (ties to even), exactly: int64, one per row.

    Row sums of units are exact (high and low 26-bit parts summed separately in int64, then
    combined as Python ints); the division by ``k`` and the rounding are integer arithmetic.
    """
    unit = unit_for(lower, upper)
    u = lattice_units(outs, unit, lower, upper).reshape(outs.shape)
    k = int(np.shape(outs)[1])
    sums = (u >> 26).sum(axis=1).astype(object) * (1 << 26) + (u & ((1 << 26) - 1)).sum(
        axis=1
    ).astype(object)
    ratio = Fraction(unit) / Fraction(spacing)
    num = sums * ratio.numerator
    den = k * ratio.denominator
    quo = num // den
    twice = 2 * (num - quo * den)
    up = (twice > den) | ((twice == den) & (quo % 2 == 1))
    return (quo + up.astype(np.int64)).astype(np.int64)
