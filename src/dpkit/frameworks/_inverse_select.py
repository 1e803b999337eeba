"""The continuous inverse-sensitivity quantile in O(n): selection on a window, exact outside.

Same law as the sort-based sampler of :mod:`dpkit.frameworks.inverse` (the gap ``g`` between
the ``g``-th and ``(g+1)``-th smallest grid units, ``g = 0 .. n``, has loss
``ceil(|g - p n|)`` and probability proportional to its length times
``exp(-epsilon loss / 2)``, then a uniform cell of the gap), without sorting the data:

1. **Bracket.** Two data values ``a < b`` are picked from a strided sample (Floyd and Rivest
   1975) so that, in rank, they enclose ``p n - w .. p n + w`` and lie strictly outside any
   tie block there (``w`` is the window half-width). One pass over the grid units counts the
   records below ``A = u(a)`` and keeps those in ``[A, B]``, which are sorted (small). The
   gaps between them have exact lengths and losses ``ceil(|g - p n|)``, ``g`` their global
   index. The sample only affects speed: any bracket gives the same law.
2. **Envelope.** The cells left of ``A`` all have at most ``below`` records under them, so
   loss at least ``e_L = ceil(p n - below)``; the cells from ``B`` on have at least
   ``below + k`` records at or under them, loss at least ``e_R = ceil(below + k - p n)``.
   The proposal is the inside gaps with their exact weights plus two envelope items (the two
   regions' lengths with exponents ``e_L``, ``e_R``), drawn by
   :func:`~dpkit.samplers.heavy_tailed.exp_weighted_choice` (exact).
3. **Outside, exactly.** When an envelope item is drawn, a uniform cell of its region is
   taken, its gap ``g`` counted in O(n), and it is accepted with probability
   ``exp(-epsilon (loss(g) - e) / 2)`` (exact Bernoulli). On rejection the draw comes from the
   full sort-based law instead.

Why this is exact: write ``I`` for the inside mass, ``O <= E`` for a region's mass and its
envelope (``E`` = length times ``exp(-epsilon e / 2)``). An inside point ``x`` is returned with
probability
``I_x / (I + E) + (E - O) / (I + E) * I_x / (I + O) = I_x / (I + O)``, and an outside point
``y`` with ``(E / (I + E)) (O_y / E) + (E - O) / (I + E) * O_y / (I + O) = O_y / (I + O)``:
the target law in both cases (with two regions the same computation runs with
``E = E_L + E_R``). The window is chosen so that ``E`` is below ``2**-40`` of one cell's mass
at loss 0, so the O(n log n) fallback essentially never runs. With ``w`` covering all the data
the sort-based sampler runs directly.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from dpkit.samplers import bernoulli_exp
from dpkit.samplers.heavy_tailed import exp_weighted_choice, uniform_below

__all__ = ["default_window", "select_sample"]

#: Size of the strided sample that brackets the window.
_SAMPLE = 16384


def default_window(epsilon: float, cells: float) -> int:
    """Half-width ``w`` (in ranks) with ``cells * exp(-epsilon w / 2) <= 2**-40``.

    Capped at ``2**62`` (a tiny epsilon): any window gives the same law, and one that wide
    holds every rank."""
    w = 2 / epsilon * (math.log(max(cells, 2.0)) + 40 * math.log(2))
    return max(1, math.ceil(w)) if w < 2.0**62 else 2**62


def _bracket(arr: np.ndarray, r_lo: int, r_hi: int) -> tuple[float, float]:
    """Data values ``a < b`` enclosing the ranks ``r_lo .. r_hi`` (about), strictly outside
    the tie blocks at those ranks; ``-inf`` / ``inf`` when the bracket reaches an end."""
    n = arr.size
    step = max(1, n // _SAMPLE)
    sample = np.sort(arr[::step])
    m = sample.size
    slack = 0 if step == 1 else 2 * math.isqrt(m) + 2
    ia = r_lo * m // n - slack
    ib = r_hi * m // n + slack
    a = -math.inf
    if ia >= 0:
        j = int(np.searchsorted(sample, sample[min(ia, m - 1)], side="left")) - 1
        a = float(sample[j]) if j >= 0 else -math.inf
    b = math.inf
    if ib <= m - 1:
        j = int(np.searchsorted(sample, sample[max(ib, 0)], side="right"))
        b = float(sample[j]) if j < m else math.inf
    return a, b


def select_sample(
    arr: np.ndarray,
    p: float,
    eps: float,
    lower: float,
    upper: float,
    size: int,
    source: Any,
    *,
    units: Callable[[np.ndarray], tuple[np.ndarray, float, float, float]],
    full: Callable[[int], tuple[np.ndarray, np.ndarray]],
    window: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``size`` draws of the continuous quantile mechanism in O(n) (module docstring).

    ``units(values) -> (grid units, lo, hi, spacing)`` is the per-record grid map of the
    sort-based path (a non-decreasing map), and ``full(k)`` draws ``k`` values (with losses)
    from the sort-based path: the fallback.
    """
    n = arr.size
    pn = Fraction(p) * n
    _, lo, hi, spacing = units(np.array([lower]))
    w = default_window(eps, hi - lo + 1) if window is None else int(window)
    r_lo, r_hi = math.floor(pn) - w, math.ceil(pn) + w
    if r_lo <= 0 and r_hi >= n - 1:
        return full(size)
    # bracket in raw values: the grid map is non-decreasing, so records below a have units
    # <= u(a) and the counts below stay exact for the inside gaps (module docstring)
    a, b = _bracket(arr, r_lo, r_hi)
    below = 0
    if a != -math.inf or b != math.inf:
        sel = arr >= a
        below = n - int(np.count_nonzero(sel))
        sel &= arr <= b
        kept = arr[sel]
    else:
        kept = arr
    vals, cnt = np.unique(units(kept)[0], return_counts=True)
    big_a = lo if a == -math.inf else vals[0]
    big_b = hi if b == math.inf else vals[-1]
    # keep the distinct values whose ranks meet [p n - w, p n + w], plus one on each side
    # (so the gaps next to a tie block are inside); the rest joins the envelope regions
    cum = np.concatenate(([0], np.cumsum(cnt))) + below  # records below vals[i] = cum[i]
    centre = float(pn)  # trimming only changes speed: a float is fine here
    i_lo = max(int(np.searchsorted(cum[1:], centre - w, side="left")) - 1, 0)
    i_hi = min(int(np.searchsorted(cum[:-1], centre + w, side="right")), vals.size - 1)
    if i_lo > 0:
        a, big_a, below = float(vals[i_lo]), vals[i_lo], int(cum[i_lo])
    if i_hi < vals.size - 1:
        b, big_b = float(vals[i_hi]), vals[i_hi]
    vals, cnt = vals[i_lo : i_hi + 1], cnt[i_lo : i_hi + 1]
    k = int(cnt.sum())
    ext = vals
    gap_below = np.cumsum(cnt)[:-1] + below  # records below the gap after vals[i]
    if a == -math.inf:
        ext = np.concatenate(([lo], ext))
        gap_below = np.concatenate(([below], gap_below))
    if b == math.inf:
        ext = np.concatenate((ext, [hi]))
        gap_below = np.concatenate((gap_below, [below + k]))
    lengths = np.diff(ext)
    gaps = gap_below.astype(np.int64)
    q = math.floor(pn)
    frac = int(pn != q)
    # ceil(|g - p n|): g - q above the centre, q + frac - g at or below it (integers)
    losses = np.where(gaps > q, gaps - q, q + frac - gaps).astype(np.int64)
    # the envelope regions: cells lo .. A - 1 and B .. hi - 1
    t_left = (big_a - lo) if a != -math.inf else 0.0
    t_right = (hi - big_b) if b != math.inf else 0.0
    e_left = max(0, math.ceil(pn - below))
    e_right = max(0, math.ceil(below + k - pn))
    weights = np.concatenate((lengths, [t_left, t_right]))
    exps = np.concatenate((losses, [e_left, e_right]))
    rate = Fraction(eps) / 2
    values = np.empty(size)
    out_losses = np.empty(size, dtype=np.int64)
    idx = exp_weighted_choice(weights, exps, rate, size, source)
    inside = idx < lengths.size
    if np.any(inside):
        j = idx[inside]
        start = ext[j].astype(np.int64)
        cell = start + uniform_below(lengths[j].astype(np.int64), source)
        values[inside] = (cell + 0.5) * spacing
        out_losses[inside] = losses[j]
    env = np.flatnonzero(~inside)
    if env.size:
        # the rare branch: an exact outside cell, its gap by one count, an exact acceptance
        left = idx[env] == lengths.size
        span = np.where(left, t_left, t_right).astype(np.int64)
        c = uniform_below(span, source)
        cell = np.where(left, int(lo) + c, int(big_b) + c)
        u = np.sort(units(arr)[0])  # every record's grid unit: O(n log n), this branch only
        g = np.searchsorted(u, cell, side="right")  # records with units <= cell
        loss = np.where(g > q, g - q, q + frac - g).astype(np.int64)
        excess = loss - np.where(left, e_left, e_right)  # >= 0: the envelope bounds the loss
        keep = np.zeros(env.size, dtype=bool)
        for ex in np.unique(excess):
            rows = np.flatnonzero(excess == ex)
            keep[rows] = bernoulli_exp(rate * int(ex), rows.size, source)
        values[env[keep]] = (cell[keep] + 0.5) * spacing
        out_losses[env[keep]] = loss[keep]
        if np.any(~keep):
            v, ell_full = full(int(np.count_nonzero(~keep)))
            values[env[~keep]] = v
            out_losses[env[~keep]] = ell_full
    return values, out_losses
