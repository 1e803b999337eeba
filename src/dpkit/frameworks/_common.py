"""Helpers shared by the framework modules: accountant calls, grids, query names."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from dpkit._lattice import Values, parse_values, round_values
from dpkit._validate import check_number
from dpkit.accounting.loss import PrivacyLoss
from dpkit.errors import ParameterError

__all__ = [
    "grid_for_bounds",
    "on_grid",
    "quantile_of",
    "spend",
]

#: The output grid of a framework is ``2**(floor(log2(upper - lower)) - GRID_BITS)``: about
#: ``GRID_BITS`` binary digits below the width of the bounds. It depends on the bounds only
#: (public), never on the data.
GRID_BITS = 30


def spend(accountant: Any, cost: PrivacyLoss, label: str) -> None:
    """Charge ``cost`` to ``accountant`` (if any) before any noise is drawn."""
    if accountant is None:
        return
    fn = getattr(accountant, "spend", None)
    if not callable(fn):
        raise TypeError(
            f"{label}: `accountant` must have a spend(cost, *, label) method; "
            f"got {type(accountant).__name__}"
        )
    fn(cost, label=label)


def grid_for_bounds(lower: float, upper: float, bits: int = GRID_BITS) -> float:
    """The power-of-two grid spacing used for outputs between ``lower`` and ``upper``."""
    return math.ldexp(1.0, math.floor(math.log2(upper - lower)) - bits)


def on_grid(value: float, spacing: float) -> int:
    """``round(value / spacing)`` as a Python int (half to even; ``spacing`` a power of two)."""
    return round(Fraction(value) / Fraction(spacing))


def grid_value(units: int, spacing: float) -> float:
    """``units * spacing`` correctly rounded to float (exact while ``|units| < 2**53``)."""
    return float(Fraction(units) * Fraction(spacing))


def quantile_of(owner: str, query: Any, percentile: Any) -> tuple[str, float]:
    """Normalise a quantile query to ``(name, p)`` with ``p`` in [0, 1].

    Accepts ``"median"``, ``"percentile"`` with ``percentile=`` in [0, 100], or a
    :mod:`dpkit.queries` percentile query (``kind == "percentile"``, ``q = p / 100``).
    """
    name = query if isinstance(query, str) else getattr(query, "name", None)
    if not isinstance(query, str) and getattr(query, "kind", None) == "percentile":
        q = getattr(query, "q", None)  # a dpkit.queries percentile: q = p / 100
        if q is not None and percentile is None:
            return ("median", 0.5) if q == 0.5 else ("percentile", float(q))
    if name == "median":
        if percentile is not None and float(percentile) != 50:
            raise ParameterError(
                f"{owner}: `percentile` must be 50 (or omitted) for the median; got {percentile!r}"
            )
        return "median", 0.5
    if name in ("percentile", "quantile"):
        if percentile is None:
            raise ParameterError(
                f"{owner}: query 'percentile' needs `percentile=` in [0, 100]; got None"
            )
        p = check_number(owner, "percentile", percentile)
        if not 0 <= p <= 100:
            raise ParameterError(f"{owner}: `percentile` must be in [0, 100]; got {percentile!r}")
        return "percentile", p / 100
    raise ParameterError(
        f"{owner}: `query` must be 'median' or 'percentile' (with `percentile=`); got {query!r}"
    )


def as_sorted(arr: np.ndarray, lower: float, upper: float) -> np.ndarray:
    """The data clipped to the bounds and sorted (a per-record map, then a sort)."""
    out = np.clip(arr, lower, upper)
    out.sort()
    return out


def spacing_for(scale: float, bits: int = GRID_BITS) -> float:
    """Power-of-two grid about ``2**-bits`` times a public ``scale`` (never data-derived)."""
    return math.ldexp(1.0, math.floor(math.log2(scale)) - bits)


def laplace_on_grid(
    value: Any,
    sensitivity: float,
    epsilon: float,
    spacing: float,
    rng: Any,
) -> tuple[np.ndarray, float]:
    """``value`` rounded to the grid plus exactly sampled rounded Laplace noise.

    The statistic rounded to the grid ``g`` has sensitivity at most ``sensitivity + g``;
    the released ``g * round((f~ + X) / g)`` with ``X ~ Laplace((sensitivity + g) / epsilon)``
    is a post-processing of the Laplace mechanism on ``f~`` (Dwork et al. 2006), so it is
    ``epsilon``-DP. ``K = round(X / g)`` comes from
    :func:`dpkit.samplers.heavy_tailed.rounded_laplace`. ``value`` is a float, an array, or an
    exact statistic (int, :class:`~fractions.Fraction`, a sequence of them or a
    :class:`dpkit._lattice.Values`), rounded to the grid exactly (:func:`on_lattice`); one
    independent draw per value. Returns the released values and the noise scale.
    """
    from dpkit.samplers.heavy_tailed import rounded_laplace

    g = Fraction(spacing)
    scale = (Fraction(sensitivity) + g) / Fraction(epsilon)
    units = on_lattice(value, spacing).ravel()
    k = rounded_laplace(scale / g, units.size, rng)
    out = (units + k).astype(np.float64) * spacing  # exact while |units + k| < 2**53
    return out, float(scale)


def on_lattice(value: Any, spacing: float) -> np.ndarray:
    """``value / spacing`` rounded to the nearest integer (ties to even) as int64, exactly.

    Floats go through exact power-of-two scaling and ``rint``; exact statistics (ints,
    Fractions, :class:`dpkit._lattice.Values`) through rational arithmetic.
    """
    vals = value if isinstance(value, Values) else parse_values("framework", value)
    return round_values("framework", vals, spacing, limit=2.0**52)
