"""Helpers shared by the framework modules: accountant calls, grids, query names."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, NamedTuple

import numpy as np

from dpkit._lattice import Values, parse_values, round_values, unit_for
from dpkit._lattice import units as lattice_units
from dpkit._validate import check_number, describe
from dpkit.errors import ParameterError

__all__ = [
    "EXACT_QUERIES",
    "OnLattice",
    "check_bool",
    "check_exact_query",
    "clamp_to_range",
    "grid_for_bounds",
    "on_data_lattice",
    "on_grid",
    "public_range",
    "quantile_of",
]

#: The output grid of a framework is ``2**(floor(log2(upper - lower)) - GRID_BITS)``: about
#: ``GRID_BITS`` binary digits below the width of the bounds. It depends on the bounds only
#: (public), never on the data.
GRID_BITS = 30


def grid_for_bounds(lower: float, upper: float, bits: int = GRID_BITS) -> float:
    """The power-of-two grid spacing used for outputs between ``lower`` and ``upper``."""
    return math.ldexp(1.0, math.floor(math.log2(upper - lower)) - bits)


def on_grid(value: float, spacing: float) -> int:
    """``round(value / spacing)`` as a Python int (half to even; ``spacing`` a power of two)."""
    return round(Fraction(value) / Fraction(spacing))


def grid_value(units: int, spacing: float) -> float:
    """``units * spacing`` correctly rounded to float (exact while ``|units| < 2**53``)."""
    return float(Fraction(units) * Fraction(spacing))


#: The query names with an exact ``A(f, x, k)`` (``dpkit.sensitivity.at_distance.SUPPORTED``).
EXACT_QUERIES = "'count', 'sum', 'mean', 'median', a percentile ('pNN'), 'var' or 'std'"


def check_exact_query(
    owner: str, query: Any, resolved: Any, supported: str = EXACT_QUERIES
) -> None:
    """Refuse a query without an exact ``A(f, x, k)`` (a callable, a histogram), by name.

    ``resolved`` is :func:`dpkit.queries.resolve` of ``query``; ``supported`` lists the
    query names ``owner`` takes (by default all of them). A callable such as
    ``numpy.median`` is named as a callable (its ``__name__`` is not a query name: dpkit
    cannot know what it computes).
    """
    from dpkit.queries import Query
    from dpkit.sensitivity.at_distance import SUPPORTED

    if resolved.kind in SUPPORTED:
        return
    if callable(query) and not isinstance(query, Query):
        what = f"a callable named {describe(getattr(query, '__name__', type(query).__name__))}"
        hint = (
            "; a callable is not a supported query name, even one that computes a supported "
            "statistic: pass the name (for example 'median', not numpy.median); for any "
            "function use sample_and_aggregate"
        )
    else:
        what = f"{describe(resolved.name)} (a {resolved.kind} query)"
        hint = "; for other queries use sample_and_aggregate"
    raise ParameterError(
        f"{owner}: `query` must be one of the supported query names: {supported}; got {what}{hint}"
    )


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
                f"{owner}: query 'percentile' needs `percentile` in [0, 100]; got None"
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


def laplace_units(
    units: np.ndarray, sensitivity: float, epsilon: float, spacing: float, rng: Any
) -> tuple[np.ndarray, float]:
    """:func:`laplace_on_grid` for a statistic already rounded to the grid: ``units`` (int64)
    are multiples of ``spacing``."""
    from dpkit.samplers.heavy_tailed import rounded_laplace

    g = Fraction(spacing)
    scale = (Fraction(sensitivity) + g) / Fraction(epsilon)
    units = np.asarray(units, dtype=np.int64).ravel()
    k = rounded_laplace(scale / g, units.size, rng)
    out = grid_release(units, k, spacing)  # exact while |units + k| < 2**53
    return out, float(scale)


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


def on_lattice(value: Any, spacing: float) -> np.ndarray:
    """``value / spacing`` rounded to the nearest integer (ties to even) as int64, exactly.

    Floats go through exact power-of-two scaling and ``rint``; exact statistics (ints,
    Fractions, :class:`dpkit._lattice.Values`) through rational arithmetic.
    """
    vals = value if isinstance(value, Values) else parse_values("framework", value)
    return round_values("framework", vals, spacing, limit=2.0**52)


class OnLattice(NamedTuple):
    """Data mapped record by record onto the lattice of its bounds (contract 2).

    ``units`` (sorted int64) and ``unit`` define the records a framework's statistic is
    computed from, exactly; ``values = units * unit`` (exact floats) are the same records for
    the sensitivity analysis.
    """

    units: np.ndarray
    unit: float
    values: np.ndarray


def on_data_lattice(
    arr: np.ndarray, lower: float, upper: float, *, owner: str = "framework"
) -> OnLattice:
    """Map clipped records onto the lattice ``unit_for(lower, upper)`` (a per-record map).

    The frameworks release ``f(R(x))`` with ``R`` this map: ``R`` sends neighbours to
    neighbours (or equal datasets) and every ``R(x_i)`` lies in the bounds, so the
    sensitivity of ``f`` over the bounds, evaluated at ``R(x)``, bounds that of ``f o R`` at
    ``x``; and ``f(R(x))`` is computed exactly (:func:`dpkit.queries.statistic_on_grid`), so
    no floating-point error of the statistic escapes the charged sensitivity.
    """
    unit = unit_for(lower, upper, owner=owner)
    u = lattice_units(arr, unit, lower, upper)
    u.sort()
    return OnLattice(u, unit, u.astype(np.float64) * unit)


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


def check_bool(owner: str, name: str, value: Any) -> bool:
    """``value`` if it is ``True`` or ``False`` (NumPy's bool too); a TypeError naming it."""
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"{owner}: `{name}` must be True or False; got {describe(value)}")
    return bool(value)
