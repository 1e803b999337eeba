"""Order statistics on a sorted array padded with the bounds.

The exact algorithms for the median and percentiles work on the *padded* sorted data
``xt[j] = lower`` for ``j < 0``, ``xt[j] = x[j]`` for ``0 <= j < n`` and ``xt[j] = upper`` for
``j >= n``: removing the ``r`` smallest records and adding ``a`` records at ``upper`` turns
position ``i`` of the new sorted dataset into position ``i + r`` of ``xt``, and similarly at the
other end, so every neighbour the algorithms need is a shifted window of ``xt``.
"""

from __future__ import annotations

import numpy as np


def padded(x: np.ndarray, lower: float, upper: float, idx: np.ndarray) -> np.ndarray:
    """``xt[idx]`` for an integer array ``idx`` (any range)."""
    n = x.size
    clipped = np.clip(idx, 0, n - 1)
    return np.where(idx < 0, lower, np.where(idx >= n, upper, x[clipped]))


def interp(
    x: np.ndarray, lower: float, upper: float, offset: np.ndarray, h: np.ndarray
) -> np.ndarray:
    """Linear interpolation of ``xt`` at position ``offset + h`` (``offset`` integer).

    ``h`` is the in-dataset position ``q (m - 1)`` computed exactly as NumPy does, so the
    integer part and the fraction agree with :func:`numpy.percentile` on the neighbour.
    """
    base = np.floor(h)
    frac = h - base
    lo = offset + base.astype(np.int64)
    a = padded(x, lower, upper, lo)
    b = padded(x, lower, upper, lo + 1)
    diff = b - a
    # NumPy's lerp: a + t (b - a), computed from b's side when t >= 0.5.
    val = np.where(frac >= 0.5, b - diff * (1 - frac), a + diff * frac)
    return np.where(frac == 0, a, val)


def percentile_of_sorted(x: np.ndarray, q: float) -> float:
    """``numpy.percentile`` of sorted ``x`` at fraction ``q`` (no re-sort)."""
    h = np.asarray([q * (x.size - 1)])
    return float(interp(x, float(x[0]), float(x[-1]), np.zeros(1, dtype=np.int64), h)[0])
