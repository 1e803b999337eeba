"""Validation shared by the statistics entry points: levels, compact summaries, data."""

from __future__ import annotations

from typing import Any

import numpy as np

from dpkit._validate import (
    MIN_ALPHA,
    as_rational_level,
    as_real_array,
    check_finite_array,
    check_level,
    check_levels,
    series_like,
)
from dpkit._validate import check_alpha as _check_alpha
from dpkit.errors import ParameterError
from dpkit.mechanisms.quantile_em import Counts, QuantileLattice

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


def check_alpha(owner: str, alpha: Any) -> float:
    """An error probability in ``[MIN_ALPHA, 1)`` (smaller ones underflow in the intervals'
    union bounds, :data:`dpkit._validate.MIN_ALPHA`)."""
    return _check_alpha(owner, alpha, smallest=MIN_ALPHA)


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


def counts_from_data(owner: str, data: Any, lattice: QuantileLattice) -> Counts:
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


def counts_from_summary(owner: str, points: Any, counts: Any, lattice: QuantileLattice) -> Counts:
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
