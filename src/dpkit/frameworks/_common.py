"""Helpers shared by the framework modules: accountant calls, grids, query names."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from dpkit._validate import check_number, describe
from dpkit.accounting.guard import check_accountant
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
    acct = check_accountant(label, accountant)
    if acct is not None:
        acct.spend(cost, label=label)


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
    from dpkit.queries import Query

    if not isinstance(query, str | Query):
        raise TypeError(
            f"{owner}: `query` must be 'median', 'percentile' or a dpkit.queries percentile; "
            f"got {type(query).__name__} {describe(query)}"
        )
    name = query if isinstance(query, str) else query.name
    is_quantile = isinstance(query, Query) and query.kind == "percentile" and query.q is not None
    if is_quantile and percentile is None:  # a dpkit.queries percentile: q = p / 100
        assert isinstance(query, Query) and query.q is not None
        return ("median", 0.5) if query.q == 0.5 else ("percentile", float(query.q))
    if name == "median":
        if percentile is not None and check_number(owner, "percentile", percentile) != 50:
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
        f"{owner}: `query` must be 'median' or 'percentile' (with `percentile=`); got "
        f"{describe(query)}"
    )


def as_sorted(arr: np.ndarray, lower: float, upper: float) -> np.ndarray:
    """The data clipped to the bounds and sorted (a per-record map, then a sort)."""
    out = np.clip(arr, lower, upper)
    out.sort()
    return out


def spacing_for(scale: float, bits: int = GRID_BITS) -> float:
    """Power-of-two grid about ``2**-bits`` times a public ``scale`` (never data-derived)."""
    return math.ldexp(1.0, math.floor(math.log2(scale)) - bits)


#: Largest noise scale a framework accepts. Heavy-tailed noise (Cauchy) exceeds ``2**62``
#: times its scale with probability below ``2**-62``, so with scales up to ``2**960`` a
#: release stays below ``2**1023``: never infinite (the rare excess is clipped to the
#: largest float, a post-processing). Beyond it epsilon is absurdly small for the bounds.
MAX_NOISE_SCALE = 2.0**960
#: Smallest normal float: grids are never subnormal (``value / spacing`` must not overflow).
_MIN_NORMAL = 2.0**-1022
MAX_FLOAT = float.fromhex("0x1.fffffffffffffp+1023")


def noise_spacing(owner: str, scale: float, *, extent: float, params: str) -> float:
    """The output grid of a release with noise of public ``scale``, checked before spending.

    ``spacing_for(scale)`` (about ``2**-30`` of the scale), made coarser where needed so that
    every value of magnitude up to ``extent`` (public: the bounds) is below ``2**52`` grid
    units (exact in float64) and the spacing is a normal float. A coarser grid only adds its
    own rounding, which the mechanisms charge (``laplace_on_grid`` adds the spacing to the
    sensitivity), so the guarantee is unchanged; it happens only when epsilon is so large
    that the noise is below ``2**-22`` of the bounds' magnitude.

    Raises
    ------
    ParameterError
        The scale is not a finite positive float or exceeds :data:`MAX_NOISE_SCALE`
        (``params`` names the parameters responsible, e.g. epsilon).
    """
    if not (math.isfinite(scale) and 0 < scale <= MAX_NOISE_SCALE):
        raise ParameterError(
            f"{owner}: {params} give a noise scale of {scale:.3g}, outside (0, 2**960]: "
            + (
                "epsilon is too small for this sensitivity (the noise would swamp any value "
                "and could overflow a float)"
                if not scale > 0 or scale > MAX_NOISE_SCALE
                else "the parameters are too extreme"
            )
        )
    g = spacing_for(scale) if scale >= 2.0**-990 else 0.0
    _m, e = math.frexp(extent)  # extent < 2**e
    return max(g, math.ldexp(1.0, e - 52), _MIN_NORMAL)


def grid_release(units: Any, k: Any, spacing: float) -> np.ndarray:
    """``(units + k) * spacing`` as float64, clipped to the finite floats.

    Exact while ``|units + k| < 2**53``. The clip is post-processing and only ever acts with
    probability below ``2**-62`` (see :data:`MAX_NOISE_SCALE`): no release is infinite.
    """
    total = np.asarray(units, dtype=np.float64) + np.asarray(k, dtype=np.float64)
    with np.errstate(over="ignore"):
        out = total * spacing
    return np.clip(out, -MAX_FLOAT, MAX_FLOAT)


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


def laplace_on_grid(
    value: float | np.ndarray,
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
    :func:`dpkit.samplers.heavy_tailed.rounded_laplace`. Works on an array of values (one
    independent draw each). Returns the released values and the noise scale.
    """
    from dpkit.samplers.heavy_tailed import rounded_laplace

    g = Fraction(spacing)
    scale = (Fraction(sensitivity) + g) / Fraction(epsilon)
    vals = np.atleast_1d(np.asarray(value, dtype=np.float64))
    units = np.rint(vals / spacing)  # exact power-of-two scaling, then round half to even
    k = rounded_laplace(scale / g, vals.size, rng)
    out = grid_release(units, k, spacing)
    return out, float(scale)
