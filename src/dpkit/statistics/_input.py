"""Validation shared by the statistics entry points: levels, compact summaries, data."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from dpkit._validate import as_real_array, check_finite_array, check_number, check_positive
from dpkit.errors import ParameterError
from dpkit.frameworks._quantile_em import MAX_DENOMINATOR, Counts, Lattice

__all__ = [
    "MAX_RECORDS",
    "MIN_ALPHA",
    "as_rational_level",
    "check_alpha",
    "check_count_array",
    "check_level",
    "check_levels",
    "check_total",
    "counts_from_data",
    "counts_from_summary",
    "exact_total",
    "record_array",
    "series_like",
]

#: Largest total of records (or persons) a summary may hold: ``2**40`` keeps the weighted
#: counts of the mechanisms (``2**20 * n``) exact in int64.
MAX_RECORDS = 2**40
#: Smallest ``alpha``: the intervals divide it over their union bounds (by up to a few
#: thousand times the number of levels) and take its logarithm, which must not underflow.
MIN_ALPHA = 1e-250


def as_rational_level(q: float) -> Fraction:
    """The level as the nearest fraction with denominator at most ``2**20`` (public rounding).

    ``0.1`` becomes ``1/10`` and ``1/3`` (as a float) becomes ``1/3``; the change is at most
    ``2**-21`` (neighbouring fractions of denominators up to ``N`` are ``1 / (q q') <= 1 / N``
    apart), and below ``2**-40`` when the nearest fraction's denominator is near ``2**20``.
    Exact rationals keep the mechanism's exponents integers. Levels within about ``2**-21``
    of 0 or 1 would round onto them: :func:`check_level` refuses those.
    """
    if type(q) is float:  # a function of the float alone: cached (a Session asks for the
        return _rational_level(q)  # same few levels in every group; Fractions are immutable)
    return Fraction(q).limit_denominator(MAX_DENOMINATOR)


@functools.lru_cache(maxsize=1024)
def _rational_level(q: float) -> Fraction:
    return Fraction(q).limit_denominator(MAX_DENOMINATOR)


def check_level(owner: str, name: str, value: Any, low: float = 0.0) -> float:
    """A level in ``(low, 1)`` that stays there after :func:`as_rational_level` (TypeError for
    non-numbers, ParameterError naming ``name`` otherwise, hinting the median for 0.5).

    Without the second check, ``1e-9`` would silently become the level 0 (the minimum)."""
    v = check_number(owner, name, value)
    if not low < v < 1:
        hint = " (0.5 is the median)" if low == 0 else ""
        raise ParameterError(f"{owner}: `{name}` must be in ({low:g}, 1){hint}; got {value!r}")
    r = as_rational_level(v)
    if not low < r < 1:
        edge = f"{low:g}" if r <= low else "1"
        raise ParameterError(
            f"{owner}: `{name}` {value!r} is too close to {edge}: levels are rounded to the "
            f"nearest fraction with denominator at most 2**20, which would make it {edge}; "
            "use a level at least 2**-20 away from it"
        )
    return v


def series_like(value: Any) -> bool:
    """Whether ``value`` is a pandas or polars Series (or another sized array-like that is
    neither a sequence nor a NumPy array or scalar)."""
    return (
        not isinstance(value, Sequence | np.ndarray | np.generic | str | bytes)
        and hasattr(value, "__array__")
        and hasattr(value, "__len__")
    )


def check_levels(owner: str, levels: Any) -> tuple[tuple[float, ...], bool]:
    """Levels as a tuple of floats in (0, 1), strictly increasing; and whether a scalar came in.

    Raises TypeError for non-numbers (bool included) and ParameterError for values outside
    (0, 1), NaN, an empty sequence, unsorted or repeated levels.
    """
    if series_like(levels):  # its values, as for an ndarray
        levels = np.asarray(levels)
    scalar = not isinstance(levels, Sequence | np.ndarray) or isinstance(levels, str | bytes)
    if isinstance(levels, np.ndarray) and levels.ndim == 0:
        scalar = True
        levels = levels.item()
    items = [levels] if scalar else list(levels)
    if not items:
        raise ParameterError(f"{owner}: `levels` is empty; give one level or more in (0, 1)")
    out: list[float] = []
    for i, q in enumerate(items):
        out.append(check_level(owner, "levels" if scalar else f"levels[{i}]", q))
    for i in range(1, len(out)):
        if out[i] == out[i - 1]:
            raise ParameterError(f"{owner}: `levels` must not repeat a level; got {out[i]!r} twice")
        if out[i] < out[i - 1]:
            raise ParameterError(
                f"{owner}: `levels` must be sorted in increasing order; got {out[i - 1]!r} "
                f"before {out[i]!r}"
            )
    rational = [as_rational_level(q) for q in out]
    for i in range(1, len(rational)):
        if rational[i] <= rational[i - 1]:  # the rounding is monotone: equal after it
            raise ParameterError(
                f"{owner}: levels {out[i - 1]!r} and {out[i]!r} both round to {rational[i]} "
                "(levels are rounded to the nearest fraction with denominator at most 2**20); "
                "use levels at least 2**-20 apart, or merge them"
            )
    return tuple(out), scalar


def check_alpha(owner: str, alpha: Any) -> float:
    """An error probability in ``[MIN_ALPHA, 1)`` (smaller ones underflow in the intervals'
    union bounds, :data:`MIN_ALPHA`)."""
    a = check_positive(owner, "alpha", alpha)
    if not a < 1:
        raise ParameterError(f"{owner}: `alpha` must be in (0, 1); got {alpha!r}")
    if a < MIN_ALPHA:
        raise ParameterError(
            f"{owner}: `alpha` must be at least {MIN_ALPHA:g}: smaller error probabilities "
            f"underflow in the intervals' union bounds; got {alpha!r}"
        )
    return a


def record_array(owner: str, data: Any) -> np.ndarray:
    """Records as a 1-D array of real numbers in their own dtype (not yet float64): a
    scalar or a 2-D array is refused as by the frameworks ("must be a 1-D array"), as are
    masked arrays, bools, time deltas and other non-numbers (:func:`as_real_array`).
    pandas and polars Series are read through ``numpy.asarray``."""
    if isinstance(data, np.ma.MaskedArray):
        raise TypeError(
            f"{owner}: `data` must not be a masked array; drop or fill the masked values first"
        )
    return as_real_array(owner, "data", data, ndim=1)


def check_count_array(
    owner: str,
    name: str,
    value: Any,
    *,
    whole_floats: bool,
    minimum: int = 0,
    what: str = "counts",
) -> np.ndarray:
    """Counts (``>= minimum``; 0 or 1) as a 1-D int64 array, refused before any spend when
    they are not integers (bool and time deltas included: NumPy files those under the
    integers), not 1-D, below ``minimum`` or too large for int64 (a uint64 past ``2**63``
    would wrap). ``whole_floats`` also accepts floats holding whole numbers: below ``2**62``
    for counts, below ``2**53`` (where floats stop being exact) for row counts
    (``minimum=1``). The callers cap the exact total (:func:`exact_total`).

    Counts are private data: the messages never quote them."""
    if isinstance(value, str | bytes | np.ma.MaskedArray):
        raise TypeError(f"{owner}: `{name}` must be an array of integers")
    try:
        arr = np.asarray(value)
    except (ValueError, RecursionError, TypeError):  # ragged or nested: not one array
        raise TypeError(
            f"{owner}: `{name}` must be a flat sequence of integers or a 1-D array; got a "
            f"ragged or nested {type(value).__name__}"
        ) from None
    kinds = "iuf" if whole_floats else "iu"
    if arr.dtype.kind not in kinds:
        raise TypeError(f"{owner}: `{name}` must hold integers; got dtype {arr.dtype}")
    if arr.ndim != 1:
        shape = "a scalar" if arr.ndim == 0 else f"{arr.ndim}-D shape {arr.shape}"
        raise ParameterError(f"{owner}: `{name}` must be a 1-D array of {what}; got {shape}")
    if arr.dtype.kind == "f" and (not np.all(np.isfinite(arr)) or np.any(arr != np.floor(arr))):
        raise ParameterError(f"{owner}: `{name}` must be whole numbers")
    if arr.size and arr.min() < minimum:
        if minimum == 0:
            raise ParameterError(f"{owner}: `{name}` must be >= 0")
        raise ParameterError(f"{owner}: every row count in `{name}` must be >= 1")
    # checked before the cast, which would wrap them
    limit, text = (2.0**62, "2**62") if minimum == 0 else (2.0**53, "2**53")
    if arr.dtype.kind == "f" and arr.size and arr.max() >= limit:
        raise ParameterError(f"{owner}: `{name}` must be below {text}")
    if arr.dtype.kind == "u" and arr.size and arr.max() > np.iinfo(np.int64).max:
        raise ParameterError(f"{owner}: `{name}` must fit in int64 (below 2**63)")
    return arr.astype(np.int64)


def counts_from_data(owner: str, data: Any, lattice: Lattice) -> Counts:
    """Records (finite reals in a 1-D array, :func:`record_array`; clipped to the bounds) as
    sorted lattice values with counts."""
    arr = check_finite_array(owner, "data", record_array(owner, data))
    return Counts.from_units(lattice, lattice.units(arr))


def exact_total(counts: np.ndarray) -> int:
    """The exact sum of int64 counts ``>= 0`` as a Python int (an int64 sum can wrap: two
    counts of ``2**62`` sum to ``-2**63``): blocks of ``2**20`` counts below ``2**43`` sum
    exactly in int64; larger counts are summed as Python ints."""
    if counts.size == 0:
        return 0
    if int(counts.max()) >= 2**43:
        return sum(int(c) for c in counts.tolist())
    return sum(int(counts[i : i + 2**20].sum()) for i in range(0, counts.size, 2**20))


def check_total(owner: str, counts: np.ndarray, what: str = "records") -> None:
    """Refuse int64 counts whose exact total (:func:`exact_total`) is :data:`MAX_RECORDS`
    or more; the total is private and never quoted."""
    if exact_total(counts) >= MAX_RECORDS:
        raise ParameterError(f"{owner}: more than 2**40 {what} are not supported")


def counts_from_summary(owner: str, points: Any, counts: Any, lattice: Lattice) -> Counts:
    """A compact summary: sorted distinct finite ``points`` with int ``counts >= 0``.

    Points outside the bounds are clipped (records there count at the bound, as for data);
    points mapping to the same lattice value are merged. An all-zero summary is allowed: an
    empty group is released like any other (its emptiness is not revealed by an error).
    """
    if isinstance(points, np.ma.MaskedArray) or isinstance(counts, np.ma.MaskedArray):
        raise TypeError(f"{owner}: `points` and `counts` must not be masked arrays")
    pts = check_finite_array(owner, "points", points, allow_empty=True)
    if pts.ndim != 1:
        raise ParameterError(f"{owner}: `points` must be one-dimensional; got shape {pts.shape}")
    if isinstance(counts, str | bytes):
        raise TypeError(f"{owner}: `counts` must hold integers; got {type(counts).__name__}")
    # counts are private data: no message quotes them, nor their total
    cnt = check_count_array(owner, "counts", counts, whole_floats=True)
    if cnt.shape != pts.shape:
        raise ParameterError(
            f"{owner}: `counts` must have the shape of `points` {pts.shape}; got {cnt.shape}"
        )
    if pts.size > 1 and not np.all(pts[1:] > pts[:-1]):
        raise ParameterError(f"{owner}: `points` must be sorted and distinct (strictly increasing)")
    check_total(owner, cnt)
    return Counts.build(lattice, lattice.units(pts), cnt)
