"""``A(f, x, k)`` of the percentiles from O(k D) candidates per distance (the fast path of
propose-test-release and smooth sensitivity) against the toolkit's O(k^2) candidate family.

The oracle is :func:`dpkit.sensitivity.at_distance._percentile_groups`, which scores every
candidate of a distance (every pair of removals and additions, every placement of the
additions, every split of the removed block) exactly; it is itself checked against brute
force over datasets in ``test_at_distance.py`` and ``test_exact_at_distance.py``. Every value
here must equal it exactly, as integers: one diagonal at a time, the running maximum ``A`` from
two diagonals, and the first distance where ``A`` exceeds a threshold.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from dpkit.sensitivity import at_distance
from dpkit.sensitivity._moves import exact_moves
from dpkit.sensitivity.lattice_data import LatticeData
from dpkit.sensitivity.percentile_distance import PercentileDistances, supported

# every denominator the fast path takes (1, 2, 4, 8, 16), both tails and the ends
LEVELS = (0.5, 0.25, 0.75, 0.125, 0.875, 0.0, 1.0, 0.375, 0.0625, 0.9375, 0.3125)
RELATIONS = ("unbounded", "bounded")


def _dataset(rng: np.random.Generator, i: int) -> tuple[np.ndarray, float, float]:
    """Small sorted datasets: integers with ties, atoms at the bounds, off-lattice normals,
    long runs of one value, n = 1, 2, 3 included."""
    n = (1, 2, 3)[i % 3] if i % 4 == 0 else int(rng.integers(1, 40))
    shape = i % 6
    if shape == 0:
        x, lo, hi = rng.integers(0, 12, n).astype(float), 0.0, 12.0
    elif shape == 1:  # off the lattice of the bounds
        x, lo, hi = rng.normal(50, 10, n).clip(0, 100), 0.0, 100.0
    elif shape == 2:  # atoms at both bounds and the middle
        x, lo, hi = rng.choice([0.0, 5.0, 10.0], n), 0.0, 10.0
    elif shape == 3:  # long runs of ties
        x, lo, hi = np.repeat(rng.integers(0, 5, 3), n // 3 + 1)[:n].astype(float), 0.0, 10.0
    elif shape == 4:  # every record at one bound
        x, lo, hi = np.full(n, (0.0, 7.0)[i % 2]), 0.0, 7.0
    else:
        x, lo, hi = rng.exponential(2.0, n).clip(-3, 30), -3.0, 30.0
    return np.sort(x), lo, hi


def _family(ld: LatticeData, q: float, relation: str, k: int) -> int:
    """The toolkit's exact diagonal (every candidate scored), times D."""
    _groups, direct = at_distance._percentile_groups(ld, q, relation, k, -1.0)
    assert direct is not None  # D <= 2**60: the exact int64 pass
    scaled = direct * Fraction(q).denominator
    assert scaled.denominator == 1
    return int(scaled)


def test_only_small_denominators_are_taken() -> None:
    assert all(supported(q) for q in LEVELS)
    assert not supported(0.1) and not supported(0.9) and not supported(1 / 32)
    with pytest.raises(ValueError, match="denominator"):
        PercentileDistances(LatticeData(np.zeros(1), 0.0, 1.0), 0.1, "unbounded")


@pytest.mark.parametrize("relation", RELATIONS)
def test_moves_equal_the_exact_moves(relation: str) -> None:
    """The int64 moves are :func:`_moves.exact_moves` (Python ints), entry for entry."""
    sizes = np.arange(1, 200, dtype=np.int64)
    for q in LEVELS:
        pd = PercentileDistances(LatticeData(np.zeros(3), 0.0, 1.0), q, relation)
        for mine, ref in zip(pd._moves(sizes), exact_moves(q, sizes, relation), strict=True):
            for a, b in zip(mine, ref, strict=True):
                assert np.array_equal(a, b.astype(a.dtype)) and np.array_equal(a, b)


@pytest.mark.parametrize("relation", RELATIONS)
def test_every_diagonal_and_its_running_maximum_equal_the_full_family(relation: str) -> None:
    """diagonal(k) is the family's maximum at distance k; value(k) is the running maximum of
    the family's diagonals 0..k, for every k up to past the stable distance."""
    rng = np.random.default_rng(20261124)
    cases = 0
    for i in range(132):
        x, lo, hi = _dataset(rng, i)
        q = LEVELS[i % len(LEVELS)]
        ld = LatticeData(x, lo, hi)
        pd = PercentileDistances(ld, q, relation)
        running = 0
        for k in range(x.size + 5):
            want = _family(ld, q, relation, k)
            running = max(running, want)
            assert pd.diagonal(k) == want, (x.tolist(), q, k)
            assert pd.value(k) == running, (x.tolist(), q, k)
            cases += 1
    assert cases > 2500


@pytest.mark.parametrize("relation", RELATIONS)
def test_one_distance_alone_needs_only_two_diagonals(relation: str) -> None:
    """A fresh object asked for A at one distance (no earlier diagonal computed) gives the
    running maximum: the leftover candidates (r in {n - 1, n}) carry what the last two
    diagonals miss, here on data where the window spans every record."""
    rng = np.random.default_rng(7)
    for i in range(40):
        x, lo, hi = _dataset(rng, i)
        q = LEVELS[(i + 3) % len(LEVELS)]
        ld = LatticeData(x, lo, hi)
        ks = range(x.size + 5)
        running = np.maximum.accumulate([_family(ld, q, relation, k) for k in ks])
        for k in ks:
            assert PercentileDistances(ld, q, relation).value(k) == running[k], (x, q, k)


def test_first_above_is_the_first_distance_past_the_threshold() -> None:
    rng = np.random.default_rng(3)
    for i in range(80):
        x, lo, hi = _dataset(rng, i)
        q = LEVELS[i % len(LEVELS)]
        relation = RELATIONS[i % 2]
        ld = LatticeData(x, lo, hi)
        pd = PercentileDistances(ld, q, relation)
        values = [pd.value(k) for k in range(x.size + 4)]
        for threshold in {-1, 0, *values, *(v + 1 for v in values), max(values) + 5}:
            for last in (0, 1, x.size // 2, x.size + 3):
                above = [k for k in range(last + 1) if values[k] > threshold]
                want = above[0] if above else None
                assert pd.first_above(lambda v, t=threshold: v > t, last) == want
