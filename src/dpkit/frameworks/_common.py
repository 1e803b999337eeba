"""Helpers shared by the framework modules: accountant calls, grids, query names."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, NamedTuple

import numpy as np

from dpkit._lattice import GRID_BITS, unit_for
from dpkit._lattice import units as lattice_units
from dpkit._validate import check_number, describe
from dpkit.errors import ParameterError
from dpkit.noise.grid import MAX_FLOAT

__all__ = [
    "EXACT_QUERIES",
    "OnLattice",
    "check_bool",
    "check_exact_query",
    "clamp_to_range",
    "grid_for_bounds",
    "on_data_lattice",
    "public_range",
    "quantile_of",
]


def grid_for_bounds(lower: float, upper: float, bits: int = GRID_BITS) -> float:
    """The power-of-two grid spacing used for outputs between ``lower`` and ``upper``."""
    return math.ldexp(1.0, math.floor(math.log2(upper - lower)) - bits)


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
