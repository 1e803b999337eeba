"""The quantile mechanism's fast paths against the general computation, on random inputs.

``plain_cells`` builds a view's cell masses and exponents from the root's arrays (no
sub-``Counts``); ``Measure.point_atoms`` and ``Measure.prefix_at`` have closed forms for
``support="auto"``; ``sample_in_range`` draws one range in Python ints; ``_full`` uses them
for views without overrides. Each must give exactly the arrays and draws of the general path.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from dpkit.mechanisms.quantile_em import (
    Counts,
    Measure,
    QuantileLattice,
    cells,
    sample_in_range,
    sample_in_ranges,
)
from dpkit.mechanisms.quantile_view import (
    View,
    _cell_range,
    _exponents,
    _full,
    plain_cells,
)
from dpkit.samplers import SeededSource
from dpkit.samplers.heavy_tailed import exp_weighted_choice

BOUNDS = [(0.0, 100.0), (-50.0, 150.0), (-1000.5, -3.0), (10.0, 10.5), (-7.0, 3.0)]


def _measures(lat: QuantileLattice) -> list[Measure]:
    return [Measure(lat, s) for s in ("auto", "continuous", 4 * lat.spacing, 1.0) if _fits(lat, s)]


def _fits(lat: QuantileLattice, support: object) -> bool:
    try:
        Measure(lat, support)
    except Exception:
        return False
    return True


def _random_views(seed: int) -> list[tuple[View, Measure]]:
    """Views of random data (ties, the bounds, integers) over random value and output ranges."""
    rng = np.random.default_rng(seed)
    lower, upper = BOUNDS[seed % len(BOUNDS)]
    lat = QuantileLattice.for_bounds("test", lower, upper)
    n = int(rng.integers(0, 60))
    kind = seed % 3
    if kind == 0:
        x = rng.uniform(lower, upper, n)
    elif kind == 1:
        x = rng.choice(np.linspace(lower, upper, 7), n)  # ties, both bounds included
    else:
        x = np.round(rng.uniform(lower, upper, n))
    empty = np.zeros(0, dtype=np.int64)
    counts = Counts.from_units(lat, lat.units(x)) if n else Counts.build(lat, empty, empty)
    # the outputs run from lat.lo or a point between the values a - 1 and a, to a point
    # between the values b - 1 and b or lat.hi: every value of the view lies inside
    edges = [lat.lo, *counts.values.tolist(), lat.hi]
    out = []
    for _ in range(4):
        a = int(rng.integers(0, len(edges) - 1))
        b = int(rng.integers(a, len(edges) - 1))
        lo = int(rng.integers(edges[a], edges[a + 1] + 1)) if a else lat.lo
        hi = (
            int(rng.integers(max(lo, edges[b]), edges[b + 1] + 1)) if b < len(edges) - 2 else lat.hi
        )
        for measure in _measures(lat):
            out.append((View(counts, None, a, b, lo, hi), measure))
    return out


@pytest.mark.parametrize("seed", range(40))
def test_plain_cells_are_the_cells_of_the_view(seed: int) -> None:
    rng = np.random.default_rng(1000 + seed)
    for view, measure in _random_views(seed):
        sub, marks = view.part(view.a, view.b)
        c = cells(sub, measure, view.out_lo, view.out_hi, marks)
        den = int(rng.integers(1, 2**20))
        num = int(rng.integers(0, den * (view.n + 1) + 1))
        mass, e = plain_cells(view, measure, num, den)
        assert mass.dtype == np.float64 and e.dtype == np.int64
        assert np.array_equal(mass, c.mass)
        assert np.array_equal(e, _exponents(c.below, c.atmost, num, den))
        for i in range(c.mass.size):
            assert _cell_range(view, i) == (int(c.start[i]), int(c.stop[i]))


@pytest.mark.parametrize("bounds", BOUNDS)
def test_point_atoms_and_prefix_at_match_the_level_sums(bounds) -> None:
    lat = QuantileLattice.for_bounds("test", *bounds)
    rng = np.random.default_rng(5)
    u = np.concatenate(
        [
            rng.integers(lat.lo - 3, lat.hi + 3, 2000),
            np.arange(lat.lo - 2, lat.lo + 300),
            lat.origin + (1 << np.arange(0, 33)),
            [lat.origin, lat.origin - 1, lat.hi, lat.origin - 2**40],
        ]
    )
    for measure in _measures(lat):
        assert np.array_equal(measure.point_atoms(u), measure._prefix(u) - measure._prefix(u - 1))
        for t in u[::7].tolist():
            s = t - lat.origin
            assert measure.prefix_at(t) == sum((s >> j) * w for j, w in measure.levels)
        assert measure.total == int(measure.range_mass(np.array([lat.lo]), np.array([lat.hi]))[0])


def test_one_range_draws_match_the_array_draws() -> None:
    lat = QuantileLattice.for_bounds("test", 0.0, 100.0)
    rng = np.random.default_rng(9)
    for measure in _measures(lat):
        for seed in range(300):
            a = int(rng.integers(lat.lo, lat.hi + 1))
            b = min(lat.hi, a + int(rng.choice([0, 1, 2, 1000, 2**20, 2**29])))
            s1, s2 = SeededSource(seed), SeededSource(seed)
            got = sample_in_range(measure, a, b, s1)
            want = int(sample_in_ranges(measure, np.array([a]), np.array([b]), s2)[0])
            assert got == want
            assert s1._counter == s2._counter


def _general_full(view, measure, num, den, rate, size, source) -> np.ndarray:
    """``_full`` as the general path computes it (sub-Counts, cells, exponents)."""
    sub, marks = view.part(view.a, view.b)
    c = cells(sub, measure, view.out_lo, view.out_hi, marks)
    e = _exponents(c.below, c.atmost, num, den)
    idx = exp_weighted_choice(c.mass, e, rate, size, source)
    return sample_in_ranges(measure, c.start[idx], c.stop[idx], source)


@pytest.mark.parametrize("seed", range(20))
def test_full_draws_on_plain_views_match_the_general_path(seed: int) -> None:
    rng = np.random.default_rng(2000 + seed)
    for j, (view, measure) in enumerate(_random_views(seed)):
        den = int(rng.integers(1, 64))
        num = int(rng.integers(0, den * (view.n + 1) + 1))
        rate = Fraction(int(rng.integers(1, 40)), int(rng.integers(1, 40)) * den)
        for size in (1, 3):
            s1, s2 = SeededSource(100 * seed + j), SeededSource(100 * seed + j)
            got = _full(view, measure, num, den, rate, size, s1)
            want = _general_full(view, measure, num, den, rate, size, s2)
            assert np.array_equal(got, want)
            assert s1._counter == s2._counter
