"""``A(f, x, k)`` of a percentile at one distance in ``O(k)``, and the searches over ``k``.

:func:`dpkit.sensitivity.at_distance._percentile_groups` finds ``A`` at distance ``k`` by
scoring a family of candidates (a *diagonal*): for every pair ``(r, a)`` of ``r`` removals
and ``a = k - r`` additions (bounded: ``r = a = k``), every move from the dataset of size
``m = n - r + a`` (its position ``t`` and integer weights ``W0, W1`` over ``D``, ``q = Qn /
D``: :func:`~dpkit.sensitivity._moves.exact_moves`), every position ``l`` in the
window ``[t - a, t]`` (``l = t - p``, ``p`` of the additions at ``lower``) and every split
``d1`` of the removed block; the candidate's value is ``W0 (xt[l + d1 + 1] - xt[l]) + W1
(xt[l + r + 2] - xt[l + d1 + 1])`` on the padded sorted lattice data ``xt``, when its removed
records ``[l + 1, l + d1]`` and ``[l + d1 + 2, l + r + 1]`` are records of ``x`` (indices in
``[0, n - 1]``, the *feasibility* rule). That is ``O(k^2)`` candidates. This module finds the
same maximum from ``O(k D)`` of them, exactly, and ``A`` itself (the running maximum of the
diagonals) from two diagonals, so that a search over ``k`` needs ``A`` at a few distances
only. Three facts, each about the family above (so every value is the one the toolkit
computes, bit for bit):

1. **Two splits suffice.** A value is linear in ``y1 = xt[l + d1 + 1]``, which grows with
   ``d1``, so its largest value over ``d1`` is at ``d1 = 0`` or ``d1 = r``; a split in between
   that is feasible has both blocks inside ``[0, n - 1]``, hence so do the blocks of ``d1 = 0``
   and ``d1 = r``. Candidates with ``l >= n`` or ``l + r + 2 < 0`` are 0 (all three points are
   one bound), so only *active* positions ``-r - 2 <= l <= n - 1`` matter.

2. **Inside a diagonal** (unbounded, the lemma behind :func:`PercentileDistances.diagonal`).
   Let ``P = D / 2`` (``P = 1`` when ``D = 1``) and ``T = 2 P Qn / D``. The pair ``(r + P,
   a - P)`` has size ``m - 2 P``, whose start position is the old one minus ``2 P Qn``, a
   multiple of ``D``: the same weights, and ``t' = t - T``. A candidate ``(l, r, d1)`` is
   dominated by ``(l - delta, r + P, d1 + delta)`` for any ``0 <= delta <= P`` with ``l -
   delta`` in the new window ``[t - T - a + P, t - T]`` whose extra removed records ``[l -
   delta + 1, l]`` and ``[l + r + 2, l + r + 1 + P - delta]`` are records of ``x``: its
   window contains the old one (``y0`` can only fall, ``y2`` only rise, ``y1`` is the same),
   and its split, if not ``0`` or ``r + P``, is dominated by those by fact 1. Working the
   three cases (``l <= -1``: only ``delta = 0`` keeps the left records; ``l >= n - r - 1``:
   only ``delta = P``; ``P - 1 <= l <= n - r - P - 2``: any ``delta``) shows that when the
   pair ``(r + P, a - P)`` exists (``a >= P``, ``r + P <= n`` and ``m - 2 P`` at least 1, or
   2 for the moves that remove a record) every active candidate is dominated except at
   ``l`` in ``[t - a, t - a + 2 P - T - 1]`` or ``[t - T + 1, t]`` (the two ends of the
   window), in ``[0, P - 2]`` or in ``[n - r - P - 1, n - r - 2]``: at most ``4 P`` positions
   per pair. A pair without its partner (at most ``3 P`` of them per diagonal, short ones
   unless ``k > n``) is scored in full. For the median (``P = T = 1``) that is 3 positions.

3. **Across diagonals.** The pair ``(r + 1, a + 1)`` (distance ``k + 2``; bounded: ``(k + 1,
   k + 1)``, distance ``k + 1``) has the same size, weights and ``t``, and a window one
   longer. It dominates ``(l, r, d1)`` by ``(l, r + 1, d1)`` (one more record removed at
   ``l + r + 2``) or ``(l - 1, r + 1, d1 + 1)`` (one more at ``l``) unless neither record
   exists: then ``r = n`` or ``l <= -1 < n <= l + r + 2``, and feasibility leaves only ``r``
   in ``{n - 1, n}`` with ``l`` in ``{-2, -1}``. So with ``s = 2`` (unbounded) or ``1``
   (bounded) ``A(k) = max(diag(k), ..., diag(k - s + 1), F(k - s))``, ``F(j)`` the largest of
   those few leftover candidates at distances ``<= j``: ``A`` at one distance costs one or
   two diagonals, and since ``A`` is non-decreasing, the first distance where it exceeds a
   threshold (propose-test-release) is found by a galloping search.

The values are integers (``A`` in units of ``u / D``): ``W <= D <= 16`` (:data:`MAX_DENOMINATOR`)
and gaps below ``2**32`` keep them far inside int64. ``tests/sensitivity/
test_percentile_distance.py`` compares all of it with the toolkit's candidate family on many
datasets.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

import numpy as np

from dpkit.sensitivity._moves import exact_moves
from dpkit.sensitivity.lattice_data import LatticeData

__all__ = ["MAX_DENOMINATOR", "PercentileDistances", "supported"]

#: Largest denominator ``D`` of the percentile level (a dyadic float ``q = Qn / D``) handled
#: here: the median (``D = 2``), quartiles (4), octiles (8) and sixteenths. Other levels
#: (``0.1`` has ``D = 2**55``) keep the general algorithm.
MAX_DENOMINATOR = 16


def supported(q: float) -> bool:
    """Whether :class:`PercentileDistances` handles the level ``q`` (its ``D <= 16``)."""
    return Fraction(q).denominator <= MAX_DENOMINATOR


class PercentileDistances:
    """``A(f, x, k)`` of one percentile of one dataset, exactly, diagonal by diagonal.

    Values are integers: ``A`` in lattice units times ``D`` (the denominator of ``q``), the
    numerator of the rational that :func:`dpkit.sensitivity.at_distance.sequence` computes.
    Diagonals are kept once computed.
    """

    def __init__(self, ld: LatticeData, q: float, relation: str) -> None:
        qf = Fraction(q)
        if qf.denominator > MAX_DENOMINATOR:
            raise ValueError(f"PercentileDistances: q={q!r} has a denominator above 16")
        self.ld = ld
        self.q = float(q)
        self.den = qf.denominator
        self.relation = relation
        self.n = ld.n
        self.step = 2 if relation == "unbounded" else 1
        self.half = max(self.den // 2, 1)  # P
        self.shift = qf.numerator * 2 * self.half // self.den  # T
        self._diagonals: dict[int, int] = {}
        self._leftover = np.zeros(0, dtype=np.int64)  # F(0), F(1), ...

    # ------------------------------------------------------------------ values

    def _padded(self, idx: np.ndarray) -> np.ndarray:
        """``xt[idx]``: the lattice data padded with the bounds (int64)."""
        ld = self.ld
        clipped = np.clip(idx, 0, self.n - 1)
        return np.where(idx < 0, ld.lo, np.where(idx >= self.n, ld.hi, ld.w[clipped]))

    def _values(self, at: np.ndarray, r: np.ndarray, w0: np.ndarray, w1: np.ndarray) -> np.ndarray:
        """Each candidate's value at position ``l = at``: the larger of the splits ``d1 = 0``
        and ``d1 = r`` (fact 1) that the family's feasibility rule allows, else 0."""
        n = self.n
        y0 = self._padded(at)
        y2 = self._padded(at + r + 2)
        out = np.zeros(at.shape, dtype=np.int64)
        for d1 in (np.zeros_like(r), r):
            feas = (d1 < 1) | ((at + 1 >= 0) & (at + d1 <= n - 1))
            feas &= (d1 >= r) | ((at + d1 + 2 >= 0) & (at + r + 1 <= n - 1))
            y1 = self._padded(at + d1 + 1)
            np.maximum(out, np.where(feas, w0 * (y1 - y0) + w1 * (y2 - y1), 0), out=out)
        return out

    def _pairs(self, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(r, a, m)`` of the diagonal ``k`` (as ``at_distance._diagonal_pairs``)."""
        from dpkit.sensitivity.at_distance import _diagonal_pairs

        r, a = _diagonal_pairs(self.n, k, self.relation)
        return r, a, self.n - r + a

    def _moves(self, m: np.ndarray) -> list[tuple[np.ndarray, ...]]:
        """``(t, W0, W1, allowed)`` per move for sizes ``m``: ``_moves.exact_moves`` in
        int64 (``Qn m <= 16 m`` cannot overflow)."""
        return exact_moves(self.q, m, self.relation, small=True)

    @staticmethod
    def _whole_windows(
        t: np.ndarray, a: np.ndarray, r: np.ndarray, w0: np.ndarray, w1: np.ndarray
    ) -> tuple[np.ndarray, ...]:
        """Every position of the windows ``[t - a, t]``: ``(l, r, W0, W1)`` per candidate."""
        counts = a + 1
        firsts = np.cumsum(counts) - counts
        rep = np.repeat(np.arange(t.size), counts)
        p = np.arange(rep.size) - firsts[rep]
        return t[rep] - p, r[rep], w0[rep], w1[rep]

    def _window_ends(
        self, t: np.ndarray, a: np.ndarray, r: np.ndarray, w0: np.ndarray, w1: np.ndarray
    ) -> tuple[np.ndarray, ...]:
        """The positions of the windows ``[t - a, t]`` that no pair ``(r + P, a - P)``
        dominates (module docstring, fact 2): ``(l, r, W0, W1)`` per candidate."""
        big_p, big_t, n = self.half, self.shift, self.n
        ts, as_, rs = t[:, None], a[:, None], r[:, None]
        pos = np.concatenate(
            [
                ts - as_ + np.arange(2 * big_p - big_t),  # the window's left end
                ts - big_t + 1 + np.arange(big_t),  # its right end
                np.broadcast_to(np.arange(big_p - 1), (t.size, big_p - 1)),  # x's first
                n - rs - big_p - 1 + np.arange(big_p),  # next to x's last record
            ],
            axis=1,
        )
        inside = ((pos >= ts - as_) & (pos <= ts)).ravel()
        cols = pos.shape[1]
        return (
            pos.ravel()[inside],
            np.repeat(r, cols)[inside],
            np.repeat(w0, cols)[inside],
            np.repeat(w1, cols)[inside],
        )

    def diagonal(self, k: int) -> int:
        """The largest candidate value at distance exactly ``k`` (``D`` times lattice units;
        0 when no pair exists): what ``_percentile_groups`` finds, from ``O(k D)``
        candidates (module docstring, facts 1 and 2)."""
        got = self._diagonals.get(k)
        if got is not None:
            return got
        r, a, m = self._pairs(k)
        parts = []
        for move, (t, w0, w1, allowed) in enumerate(self._moves(m)):
            if self.relation == "unbounded":
                m_min = 2 if move >= 2 else 1  # the removing moves need a record
                big_p = self.half
                whole = allowed & ((a < big_p) | (r + big_p > self.n) | (m - 2 * big_p < m_min))
            else:  # one pair per diagonal: its window is scored in full
                whole = allowed
            sel = np.flatnonzero(whole)
            parts.append(self._whole_windows(t[sel], a[sel], r[sel], w0[sel], w1[sel]))
            sel = np.flatnonzero(allowed & ~whole)
            parts.append(self._window_ends(t[sel], a[sel], r[sel], w0[sel], w1[sel]))
        at, rr, w0, w1 = (np.concatenate(c) for c in zip(*parts, strict=True))
        best = int(self._values(at, rr, w0, w1).max()) if at.size else 0
        self._diagonals[k] = best
        return best

    def _leftovers(self, kmax: int) -> np.ndarray:
        """``F(0..kmax)``: the running maximum of the candidates with ``r`` in ``{n - 1, n}``
        and ``l`` in ``{-2, -1}`` (module docstring, fact 3), every distance at once."""
        if self._leftover.size > kmax:
            return self._leftover
        n = self.n
        kmax = max(kmax, 2 * self._leftover.size)  # grown by doubling: O(k) in all
        ks = np.arange(kmax + 1, dtype=np.int64)
        per_k = np.zeros(ks.size, dtype=np.int64)
        for r_val in {max(n - 1, 0), n}:
            if self.relation == "unbounded":
                a = ks - r_val
                keep = (a >= 0) & (n - r_val + a >= 1)
            else:
                a = ks.copy()
                keep = ks == r_val
            kk, a = ks[keep], a[keep]
            if kk.size == 0:
                continue
            m = n - r_val + a
            r = np.full(kk.size, r_val, dtype=np.int64)
            for t, w0, w1, allowed in self._moves(m):
                for pos in (-2, -1):
                    at = np.full(kk.size, pos, dtype=np.int64)
                    ok = allowed & (at >= t - a) & (at <= t)
                    np.maximum.at(per_k, kk[ok], self._values(at[ok], r[ok], w0[ok], w1[ok]))
        self._leftover = np.maximum.accumulate(per_k)
        return self._leftover

    def value(self, k: int) -> int:
        """``A(f, x, k)`` times ``D``, in lattice units: the running maximum of the diagonals
        ``0..k``, from the last ``s`` of them and the leftovers (fact 3)."""
        best = max(self.diagonal(j) for j in range(max(k - self.step + 1, 0), k + 1))
        if k - self.step >= 0:
            best = max(best, int(self._leftovers(k)[k - self.step]))
        return best

    def first_above(self, exceeds: Callable[[int], bool], last: int) -> int | None:
        """The smallest ``k <= last`` with ``exceeds(value(k))``, or ``None``.

        ``exceeds`` must be monotone (false, then true from some value on): :meth:`value` is
        non-decreasing in ``k``, so a galloping search (``1, 2, 4, ...``, then bisection)
        finds it from ``O(log k)`` values, ``O(k D log k)`` in all.
        """
        if exceeds(self.value(0)):
            return 0
        below, step = 0, 1  # value(below) does not exceed
        while True:
            probe = min(below + step, last)
            if probe <= below:
                return None
            if exceeds(self.value(probe)):
                above = probe
                break
            if probe == last:
                return None
            below, step = probe, 2 * step
        while above - below > 1:
            mid = (below + above) // 2
            if exceeds(self.value(mid)):
                above = mid
            else:
                below = mid
        return above
