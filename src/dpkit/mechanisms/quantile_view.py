"""The quantile exponential mechanism in O(window) per draw: views, windows, exact envelopes.

A :class:`View` is a sub-problem of a sorted :class:`~dpkit.mechanisms.quantile_em.Counts`
without copying it: a range ``[a, b)`` of its distinct values, at most a few count overrides
(the tied records a split sent to one side) and an output range ``[out_lo, out_hi]``.
ApproximateQuantiles splits views in O(1).

:func:`draw_view` draws the mechanism of :mod:`dpkit.mechanisms.quantile_em` (probability
``∝ mu(t) exp(-rate D d(t))``) on a view, looking only at a window of cells around the target
rank, with the same law as the full computation:

* **Window.** The cells whose rank range lies within ``W`` ranks of the target (found by binary
  search on the cumulative counts) are built exactly (masses from the base measure's prefix
  sums, exponents from exact integer ranks).
* **Envelope.** Left of the window every cell has at most ``below(j_l)`` records at or under
  it, so its exponent is at least ``e_L = D max(0, tau - below(j_l))``; right of it at least
  ``e_R = D max(0, below(j_r) - tau)``. Each side joins the proposal as one item: its exact
  total mass (prefix sums again) with exponent ``e``.
* **Outside, exactly.** When a side is drawn, one of its cells is drawn with probability
  proportional to its mass and accepted with probability ``exp(-rate (e_cell - e))``; on
  rejection the draw comes from the full law instead. With ``I`` the window's mass and
  ``O <= E`` the outside mass and its envelope, a window cell is returned with probability
  ``I_x / (I + E) + (E - O) / (I + E) * I_x / (I + O) = I_x / (I + O)`` and an outside cell
  ``y`` with ``O_y / (I + E) + (E - O) / (I + E) * O_y / (I + O) = O_y / (I + O)``: the target.
  The default ``W`` makes ``E`` below ``2**-40`` of the mass at the target, so the full law is
  essentially never computed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from dpkit.mechanisms.quantile_em import Counts, Measure, cells, sample_in_range, sample_in_ranges
from dpkit.samplers import bernoulli_exp
from dpkit.samplers.heavy_tailed import exp_weighted_choice

__all__ = ["View", "Window", "draw_view", "draw_view_many", "root_view"]

Marks = tuple[np.ndarray, np.ndarray] | None


@dataclass(frozen=True)
class View:
    """Values ``root.values[a:b]`` (counts overridden at a few indices), outputs in
    ``[out_lo, out_hi]``."""

    root: Counts
    marks: Marks
    a: int
    b: int
    out_lo: int
    out_hi: int
    over: dict[int, int] = field(default_factory=dict)

    def _adjust(self, j: int) -> int:
        """Records added by the overrides at indices ``a <= i < j``."""
        cnt = self.root.counts
        return sum(c - int(cnt[i]) for i, c in self.over.items() if self.a <= i < j)

    def below(self, j: int) -> int:
        """Records of the view strictly below ``root.values[j]`` (``a <= j <= b``)."""
        cum = self.root.cum
        return int(cum[j] - cum[self.a]) + self._adjust(j)

    @property
    def n(self) -> int:
        return self.below(self.b)

    def count(self, i: int) -> int:
        return self.over.get(i, int(self.root.counts[i]))

    def part(self, j0: int, j1: int) -> tuple[Counts, Marks]:
        """The values ``j0 .. j1 - 1`` as a small :class:`Counts` (overrides applied)."""
        vals = self.root.values[j0:j1]
        cnt = self.root.counts[j0:j1].copy()
        for i, c in self.over.items():
            if j0 <= i < j1:
                cnt[i - j0] = c
        keep = cnt > 0
        marks = None
        if self.marks is not None:
            marks = (self.marks[0][j0:j1][keep], self.marks[1][j0:j1][keep])
        return Counts.build(self.root.lattice, vals[keep], cnt[keep]), marks

    def split(self, v: int, go_left: int) -> tuple[View, View]:
        """Below ``v`` left, above right; of the records at ``v``, ``go_left`` go left."""
        vals = self.root.values
        lo = self.a + int(np.searchsorted(vals[self.a : self.b], v, side="left"))
        hi = self.a + int(np.searchsorted(vals[self.a : self.b], v, side="right"))
        tie = self.count(lo) if hi > lo else 0
        keep_l = {i: c for i, c in self.over.items() if i < lo}
        keep_r = {i: c for i, c in self.over.items() if i >= hi}
        if tie and go_left:
            left = View(
                self.root, self.marks, self.a, lo + 1, self.out_lo, v, {**keep_l, lo: go_left}
            )
        else:
            left = View(self.root, self.marks, self.a, lo, self.out_lo, v, keep_l)
        if tie and tie - go_left:
            right = View(
                self.root, self.marks, lo, self.b, v, self.out_hi, {lo: tie - go_left, **keep_r}
            )
        else:
            right = View(self.root, self.marks, hi, self.b, v, self.out_hi, keep_r)
        return left, right


def root_view(counts: Counts, measure: Measure) -> View:
    """The whole data set; the base measure's prefix sums are computed per window, lazily."""
    lat = counts.lattice
    return View(counts, None, 0, counts.values.size, lat.lo, lat.hi)


def default_rank_window(delta: Fraction, eps: Fraction, measure: Measure) -> int:
    """``W`` with ``mu(all) exp(-eps W / (2 delta)) <= 2**-40 * (one point's mass)``."""
    ratio = math.log(max(float(measure.total), 2.0)) + 40 * math.log(2)
    w = 2 * float(delta) / float(eps) * ratio  # capped like the inverse window: any W is exact
    return max(2, math.ceil(w) + 1) if w < 2.0**62 else 2**62


def _exponents(below: np.ndarray, atmost: np.ndarray, num: int, den: int) -> np.ndarray:
    e = np.maximum(below * den - num, num - atmost * den)
    np.maximum(e, 0, out=e)
    return e


def _full(
    view: View, measure: Measure, num: int, den: int, rate: Fraction, size: int, source: Any
) -> np.ndarray:
    if view.over or view.marks is not None:
        sub, marks = view.part(view.a, view.b)
        c = cells(sub, measure, view.out_lo, view.out_hi, marks)
        e = _exponents(c.below, c.atmost, num, den)
        idx = exp_weighted_choice(c.mass, e, rate, size, source)
        return sample_in_ranges(measure, c.start[idx], c.stop[idx], source)
    mass, e = plain_cells(view, measure, num, den)
    idx = exp_weighted_choice(mass, e, rate, size, source)
    if size == 1:
        lo, hi = _cell_range(view, int(idx[0]))
        return np.array([sample_in_range(measure, lo, hi, source)], dtype=np.int64)
    ranges = [_cell_range(view, i) for i in idx.tolist()]
    starts = np.array([r[0] for r in ranges], dtype=np.int64)
    stops = np.array([r[1] for r in ranges], dtype=np.int64)
    return sample_in_ranges(measure, starts, stops, source)


def plain_cells(view: View, measure: Measure, num: int, den: int) -> tuple[np.ndarray, np.ndarray]:
    """The masses and exponents of the cells of a view without overrides: the arrays
    ``cells(*view.part(a, b), ...).mass`` and ``_exponents(...)`` with rank ``num / den``,
    computed from the root's arrays in a few operations (no sub-:class:`Counts`).

    Gap ``i`` (``0 .. k``) runs from ``left_i`` (``out_lo``, then ``v_{i-1} + 1``) to
    ``right_i`` (``v_i - 1``, then ``out_hi``): mass ``base * max(length, 0) + P(right_i) -
    P(left_i - 1)``; atom ``i`` has ``base + (P(v_i) - P(v_i - 1))``, and ``P(v - 1)`` is
    ``P(v)`` less that atom mass. With ``c_i`` the records below ``v_i`` (``c_k = n``) and
    ``d_i = c_i den - num``, a gap's exponent is ``|d_i|`` (its ``below`` and ``atmost``
    are both ``c_i``) and atom ``i``'s is ``max(d_i, -d_{i+1}, 0)``."""
    root = view.root
    a, b, lo, hi = view.a, view.b, view.out_lo, view.out_hi
    v = root.values[a:b]
    k = v.size
    left = np.empty(k + 1, dtype=np.int64)
    right = np.empty(k + 1, dtype=np.int64)
    left[0] = lo
    np.add(v, 1, out=left[1:])
    right[k] = hi
    np.subtract(v, 1, out=right[:k])
    length = right - left
    length += 1
    np.maximum(length, 0, out=length)
    gap = measure.base * length
    mass = np.empty(2 * k + 1, dtype=np.float64)
    if measure.atoms:
        pv = measure._prefix(v)
        atom = measure.point_atoms(v)
        p_right = np.empty(k + 1, dtype=np.int64)
        p_left = np.empty(k + 1, dtype=np.int64)
        np.subtract(pv, atom, out=p_right[:k])
        p_right[k] = measure.prefix_at(hi)
        p_left[0] = measure.prefix_at(lo - 1)
        p_left[1:] = pv
        gap += p_right
        gap -= p_left
        atom += measure.base
        mass[1::2] = atom
    else:
        mass[1::2] = measure.base
    mass[0::2] = gap
    d = root.cum[a : b + 1] - root.cum[a]
    d *= den
    d -= num
    e = np.empty(2 * k + 1, dtype=np.int64)
    np.abs(d, out=e[0::2])
    np.maximum(d[:k], -d[1:], out=e[1::2])
    np.maximum(e[1::2], 0, out=e[1::2])
    return mass, e


def _cell_range(view: View, i: int) -> tuple[int, int]:
    """The lattice range of cell ``i`` of :func:`plain_cells` (gap ``i // 2`` or atom)."""
    vals = view.root.values
    if i % 2:
        v = int(vals[view.a + i // 2])
        return v, v
    g = i // 2
    lo = view.out_lo if g == 0 else int(vals[view.a + g - 1]) + 1
    hi = view.out_hi if view.a + g == view.b else int(vals[view.a + g]) - 1
    return lo, hi


def draw_view(
    view: View,
    measure: Measure,
    slope: Fraction,
    offset: Fraction,
    epsilon: Fraction,
    source: Any,
    window: int | None = None,
) -> int:
    """One draw for the target rank ``slope * n + offset`` on ``view`` (module docstring)."""
    win = Window(view, measure, slope, offset, epsilon, window)
    if win.full:  # what draw_view_many returns for a full window, without its copies
        return int(_full(view, measure, win.num, win.den, win.rate, 1, source)[0])
    return int(_complete(win, 1, source)[0])


def draw_view_many(
    view: View,
    measure: Measure,
    slope: Fraction,
    offset: Fraction,
    epsilon: Fraction,
    source: Any,
    size: int,
    window: int | None = None,
) -> np.ndarray:
    """``size`` independent draws (the window is built once; module docstring)."""
    return _complete(Window(view, measure, slope, offset, epsilon, window), size, source)


def _complete(win: Window, size: int, source: Any) -> np.ndarray:
    """``size`` draws of ``win`` completed to lattice points."""
    start, stop, done = win.draw(size, source)
    out = start.copy()
    cell = np.flatnonzero(~done)
    if cell.size:
        out[cell] = sample_in_ranges(win.measure, start[cell], stop[cell], source)
    return out


class Window:
    """The window of one target on one view, built once (module docstring); :meth:`draw`
    draws from it as many times as needed (a rejection sampler drawing proposals in batches
    builds it once)."""

    def __init__(
        self,
        view: View,
        measure: Measure,
        slope: Fraction,
        offset: Fraction,
        epsilon: Fraction,
        window: int | None = None,
    ) -> None:
        self.view, self.measure = view, measure
        n = view.n
        # tau = slope n + offset and rate = epsilon / (2 delta den) as integer ratios (the
        # Fraction constructor reduces them: the same values as Fraction arithmetic, faster)
        sn, sd, on, od = slope.numerator, slope.denominator, offset.numerator, offset.denominator
        tau = Fraction(sn * n * od + on * sd, sd * od)
        self.num, self.den = num, den = tau.numerator, tau.denominator
        delta = slope if 2 * sn >= sd else Fraction(sd - sn, sd)  # max(slope, 1 - slope)
        self.rate = Fraction(
            epsilon.numerator * delta.denominator, epsilon.denominator * 2 * delta.numerator * den
        )
        a, b = view.a, view.b
        w = default_rank_window(delta, epsilon, measure) if window is None else int(window)
        cum = view.root.cum
        base = float(cum[a])
        centre = float(tau)
        # value indices whose rank ranges meet [tau - w, tau + w] (a guide only: any window
        # is exact)
        jl = int(np.searchsorted(cum, base + centre - w, side="right")) - 2
        jr = int(np.searchsorted(cum, base + centre + w, side="left")) + 1
        self.jl, self.jr = jl, jr = min(max(jl, a), b), min(max(jr, a), b)
        self.full = jl == a and jr == b
        if self.full:
            return
        vals = view.root.values
        sub, marks = view.part(jl, jr)
        self.lo_edge = lo_edge = int(vals[jl - 1]) + 1 if jl > a else view.out_lo
        self.hi_edge = hi_edge = int(vals[jr]) - 1 if jr < b else view.out_hi
        if sub.values.size == 0:  # every value of the window was overridden to zero
            self.full = True
            return
        self.c = c = cells(sub, measure, lo_edge, hi_edge, marks)
        off = view.below(jl)
        e = _exponents(c.below + off, c.atmost + off, num, den)
        self.e_left = e_left = max(0, num - off * den)
        self.e_right = e_right = max(0, view.below(jr) * den - num)
        m_left = measure.mass_of(view.out_lo, lo_edge - 1)
        m_right = measure.mass_of(hi_edge + 1, view.out_hi)
        self.weights = np.concatenate((c.mass, [float(m_left), float(m_right)]))
        self.exps = np.concatenate((e, [e_left, e_right]))

    def draw(self, size: int, source: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``size`` independent draws stopped at the cells: ``(start, stop, done)`` per draw,
        the drawn cell's lattice range (every point of a cell has the same rank range), and
        ``done`` where the draw is already resolved to its point (``start == stop``, the rare
        draws outside the window). ``sample_in_ranges`` on the other ranges completes the
        draws with exactly :func:`draw_view_many`'s law, so a caller that accepts or rejects
        draws by their ranks can sample points for the accepted ones only."""
        view, measure = self.view, self.measure
        num, den, rate = self.num, self.den, self.rate
        if self.full:
            pts = _full(view, measure, num, den, rate, size, source)
            return pts, pts.copy(), np.ones(size, dtype=bool)
        a, b, jl, jr = view.a, view.b, self.jl, self.jr
        lo_edge, hi_edge, c = self.lo_edge, self.hi_edge, self.c
        idx = exp_weighted_choice(self.weights, self.exps, rate, size, source)
        out = np.empty(size, dtype=np.int64)
        stop = np.empty(size, dtype=np.int64)
        inside = idx < c.mass.size
        done = ~inside
        if np.any(inside):
            k = idx[inside]
            out[inside] = c.start[k]
            stop[inside] = c.stop[k]
        for side, env in ((c.mass.size, self.e_left), (c.mass.size + 1, self.e_right)):
            rows = np.flatnonzero(idx == side)
            if rows.size == 0:
                continue
            # an envelope item: exact outside cells, their acceptance, or the full law
            if side == c.mass.size:
                part, pmarks = view.part(a, jl)
                oc = cells(part, measure, view.out_lo, lo_edge - 1, pmarks)
                o_off = view.below(a)
            else:
                part, pmarks = view.part(jr, b)
                oc = cells(part, measure, hi_edge + 1, view.out_hi, pmarks)
                o_off = view.below(jr)
            o_exp = _exponents(oc.below + o_off, oc.atmost + o_off, num, den)
            zeros = np.zeros(oc.mass.size, dtype=np.int64)
            k = exp_weighted_choice(oc.mass, zeros, Fraction(0), rows.size, source)
            excess = o_exp[k] - env  # >= 0: the envelope bounds every outside exponent
            keep = np.zeros(rows.size, dtype=bool)
            for ex in np.unique(excess):
                sel = np.flatnonzero(excess == ex)
                keep[sel] = bernoulli_exp(rate * int(ex), sel.size, source)
            if np.any(keep):
                out[rows[keep]] = sample_in_ranges(
                    measure, oc.start[k[keep]], oc.stop[k[keep]], source
                )
            if np.any(~keep):
                out[rows[~keep]] = _full(
                    view, measure, num, den, rate, int(np.count_nonzero(~keep)), source
                )
            stop[rows] = out[rows]
        return out, stop, done
