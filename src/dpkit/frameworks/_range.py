"""The public range of a framework's statistic, and clamping a release into it."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from dpkit.noise.grid import MAX_FLOAT

__all__ = ["clamp_to_range", "public_range"]


def public_range(
    kind: str, lower: float, upper: float, n: int, relation: str
) -> tuple[float, float]:
    """The interval every value of the statistic ``kind`` lies in, known without the data.

    The records are clipped to the public bounds ``[lower, upper]``, so: a mean or a
    percentile lies in the bounds; a (population) variance in ``[0, (upper - lower)**2 / 4]``
    (Popoviciu) and a deviation in ``[0, (upper - lower) / 2]``. A count and a sum depend on
    ``n``, public only under ``relation="bounded"`` (replace one record): there the count is
    ``n`` and the sum lies in ``[n lower, n upper]``; under ``"unbounded"`` only the sign is
    public (a count is ``>= 0``, a sum ``>= 0`` when ``lower >= 0`` and ``<= 0`` when
    ``upper <= 0``). Any other statistic: the whole line. Clamping a release to this range
    (:func:`clamp_to_range`) is post-processing: it costs no privacy and never moves the
    release away from the true value.
    """
    inf = math.inf
    if kind in ("mean", "percentile"):
        return lower, upper
    half_width = (Fraction(upper) - Fraction(lower)) / 2  # exact
    if kind == "var":
        return 0.0, _float_up(half_width * half_width)
    if kind == "std":
        return 0.0, _float_up(half_width)
    if kind == "count":
        return (float(n), float(n)) if relation == "bounded" else (0.0, inf)
    if kind == "sum":
        if relation == "bounded":
            with np.errstate(over="ignore"):
                return float(np.float64(n) * lower), float(np.float64(n) * upper)
        return (0.0 if lower >= 0 else -inf), (0.0 if upper <= 0 else inf)
    return -inf, inf


def _float_up(q: Fraction) -> float:
    """The smallest float ``>= q`` (``inf`` past the largest float)."""
    if q > Fraction(MAX_FLOAT):
        return math.inf
    f = float(q)
    return math.nextafter(f, math.inf) if Fraction(f) < q else f


def clamp_to_range(values: Any, lo: float, hi: float) -> tuple[np.ndarray, np.ndarray]:
    """``values`` clamped to ``[lo, hi]`` (NaN, a refusal, kept) and where it acted.

    Post-processing of the released values: a release outside the statistic's public range
    (:func:`public_range`) is moved to its nearest end, which is never farther from the true
    value.
    """
    arr = np.asarray(values, dtype=np.float64)
    out = np.clip(arr, lo, hi)
    return out, (out != arr) & ~np.isnan(arr)
