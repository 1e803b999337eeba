"""Noise on a power-of-two output grid of floats: the frameworks' noise.

The frameworks (propose-test-release, smooth sensitivity, sample-and-aggregate) and
``compare`` release a statistic ``f`` on the grid ``g Z``, ``g`` a power of two about
``2**-30`` of a public noise scale (:func:`spacing_for`), made coarser where the bounds'
magnitude needs it (:func:`noise_spacing`, :func:`grid_for`): the statistic is rounded to the
grid exactly (:func:`on_lattice`), its rounding charged as sensitivity, and an integer number
of grid steps of noise is added (:func:`grid_release`). Laplace noise is
``g round(X / g)`` with ``X`` continuous Laplace of scale ``(sensitivity + g) / epsilon``
(:func:`laplace_units`, exactly sampled by :func:`dpkit.samplers.heavy_tailed.rounded_laplace`),
a post-processing of the Laplace mechanism; smooth sensitivity's heavy-tailed laws (Cauchy,
Student's t) the same way (:func:`heavy_tailed_units`). The mechanisms' discrete lattice
noise is :mod:`dpkit.noise.lattice`.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from dpkit._lattice import GRID_BITS, Values, parse_values, round_values
from dpkit.errors import InternalError, ParameterError
from dpkit.samplers.heavy_tailed import rounded_cauchy, rounded_laplace, rounded_student_t

__all__ = [
    "MAX_FLOAT",
    "MAX_GRID_NOISE_SCALE",
    "grid_for",
    "grid_laplace_scale",
    "grid_release",
    "heavy_tailed_units",
    "laplace_on_grid",
    "laplace_units",
    "noise_spacing",
    "on_lattice",
    "spacing_for",
]


def spacing_for(scale: float, bits: int = GRID_BITS) -> float:
    """Power-of-two grid about ``2**-bits`` times a public ``scale`` (never data-derived)."""
    return math.ldexp(1.0, math.floor(math.log2(scale)) - bits)


#: Largest noise scale a framework accepts. Heavy-tailed noise (Cauchy) exceeds ``2**62``
#: times its scale with probability below ``2**-62``, so with scales up to ``2**960`` a
#: release stays below ``2**1023``: never infinite (the rare excess is clipped to the
#: largest float, a post-processing). Beyond it epsilon is absurdly small for the bounds.
MAX_GRID_NOISE_SCALE = 2.0**960
#: Smallest normal float: grids are never subnormal (``value / spacing`` must not overflow).
_MIN_NORMAL = 2.0**-1022
MAX_FLOAT = float.fromhex("0x1.fffffffffffffp+1023")


def noise_spacing(
    owner: str,
    scale: float,
    *,
    extent: float,
    params: str,
    bits: int = GRID_BITS,
    exact_bits: int = 52,
    epsilon: float | None = None,
) -> float:
    """The output grid of a release with noise of public ``scale``, checked before spending.

    ``spacing_for(scale)`` (about ``2**-30`` of the scale), made coarser where needed so that
    every value of magnitude up to ``extent`` (public: the bounds) is below ``2**exact_bits``
    grid units (exact in float64) and the spacing is a normal float. A coarser grid only adds its
    own rounding, which the mechanisms charge (``laplace_on_grid`` adds the spacing to the
    sensitivity), so the guarantee is unchanged; it happens only when epsilon is so large
    that the noise is below ``2**-22`` of the bounds' magnitude.

    Raises
    ------
    ParameterError
        The scale is not a finite positive float or exceeds :data:`MAX_GRID_NOISE_SCALE`
        (``params`` names the parameters responsible, e.g. epsilon).
    """
    if not (math.isfinite(scale) and 0 < scale <= MAX_GRID_NOISE_SCALE):
        raise ParameterError(
            f"{owner}: {params} give a noise scale of {scale:.3g}, outside (0, 2**960]: "
            + (
                "epsilon is too small for this sensitivity (the noise would swamp any value "
                "and could overflow a float)"
                if not scale > 0 or scale > MAX_GRID_NOISE_SCALE
                else "the parameters are too extreme"
            )
        )
    g = spacing_for(scale, bits) if scale >= 2.0**-990 else 0.0
    _m, e = math.frexp(extent)  # extent < 2**e
    spacing = max(g, math.ldexp(1.0, e - exact_bits), _MIN_NORMAL)
    # Laplace noise on this grid (laplace_units) has scale (sensitivity + spacing) / epsilon,
    # that is scale / spacing + 1 / epsilon grid steps: within the exact sampler's 2**50
    if epsilon is not None and scale / spacing + 1 / epsilon > 2.0**50:
        raise ParameterError(
            f"{owner}: {params} give Laplace noise of more than 2**50 steps of its output grid "
            "(the grid's own rounding is charged as sensitivity, adding 1 / epsilon steps), "
            "beyond the exact sampler's range: epsilon is too small (about 1e-15 at least)"
        )
    return spacing


def grid_release(units: Any, k: Any, spacing: float) -> np.ndarray:
    """``(units + k) * spacing`` as float64, clipped to the finite floats.

    Exact while ``|units + k| < 2**53``. The clip is post-processing and only ever acts with
    probability below ``2**-62`` (see :data:`MAX_NOISE_SCALE`): no release is infinite.
    """
    total = np.asarray(units, dtype=np.float64) + np.asarray(k, dtype=np.float64)
    with np.errstate(over="ignore"):
        out = total * spacing
    return np.clip(out, -MAX_FLOAT, MAX_FLOAT)


def grid_for(
    scale: float,
    lower: float,
    upper: float,
    bits: int = GRID_BITS,
    *,
    owner: str = "framework",
    params: str = "`epsilon` and the sensitivity",
    epsilon: float | None = None,
) -> float:
    """The output grid of a statistic valued in ``[lower, upper]``: :func:`spacing_for`
    ``(scale)``, doubled until every value of the bounds is fewer than ``2**51`` grid steps
    from zero, so that a value on the grid and its noise stay exact in float64 and int64.

    Far from zero relative to the width (bounds ``(1e15, 1e15 + 1)``) the grid is therefore
    about ``2**-51`` of the bounds' magnitude (0.5 there): float64 itself resolves no finer
    than ``2**-52`` of it. The rounding is charged in the sensitivity like any grid. The
    scale is checked (:func:`noise_spacing`; ``owner`` and ``params`` name the caller and
    the parameters for the error), so this runs before any spend.

    Examples
    --------
    >>> grid_for(1.0, 0.0, 100.0), grid_for(1 / 7, 1e15, 1e15 + 1)
    (9.313225746154785e-10, 0.5)
    """
    top = max(abs(lower), abs(upper))
    return noise_spacing(
        owner, scale, extent=top, params=params, bits=bits, exact_bits=51, epsilon=epsilon
    )


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
    return laplace_units(on_lattice(value, spacing).ravel(), sensitivity, epsilon, spacing, rng)


def grid_laplace_scale(sensitivity: float, epsilon: float, spacing: float) -> Fraction:
    """The Laplace scale of a statistic of ``sensitivity`` released on the grid ``spacing``
    at ``epsilon``: ``(sensitivity + g) / epsilon``, exactly (the statistic rounded to the
    grid moves by at most ``sensitivity + g`` between neighbours)."""
    return (Fraction(sensitivity) + Fraction(spacing)) / Fraction(epsilon)


def laplace_units(
    units: np.ndarray, sensitivity: float, epsilon: float, spacing: float, rng: Any
) -> tuple[np.ndarray, float]:
    """:func:`laplace_on_grid` for a statistic already rounded to the grid: ``units`` (int64)
    are multiples of ``spacing``."""
    g = Fraction(spacing)
    scale = grid_laplace_scale(sensitivity, epsilon, spacing)
    units = np.asarray(units, dtype=np.int64).ravel()
    k = rounded_laplace(scale / g, units.size, rng)
    out = grid_release(units, k, spacing)  # exact while |units + k| < 2**53
    return out, float(scale)


def heavy_tailed_units(
    law: str, ratio: Fraction, size: int, source: Any, df: int | None = None
) -> np.ndarray:
    """``size`` draws of ``round(X / g)`` for ``X`` of scale ``ratio * g`` and law ``law``:
    ``"laplace"``, ``"cauchy"`` or ``"student_t"`` (with ``df`` degrees of freedom), each
    exactly sampled on the grid by :mod:`dpkit.samplers.heavy_tailed` (int64 grid steps).
    ``ratio`` is the noise scale in grid steps, checked by the caller before its spend."""
    if law == "laplace":
        return rounded_laplace(ratio, size, source)
    if law == "cauchy":
        return rounded_cauchy(ratio, size, source)
    if law == "student_t" and df is not None:
        return rounded_student_t(df, ratio, size, source)
    raise InternalError(f"heavy_tailed_units: unknown law {law!r} (df {df!r})")


def on_lattice(value: Any, spacing: float) -> np.ndarray:
    """``value / spacing`` rounded to the nearest integer (ties to even) as int64, exactly.

    Floats go through exact power-of-two scaling and ``rint``; exact statistics (ints,
    Fractions, :class:`dpkit._lattice.Values`) through rational arithmetic.
    """
    vals = value if isinstance(value, Values) else parse_values("framework", value)
    return round_values("framework", vals, spacing, limit=2.0**52)
