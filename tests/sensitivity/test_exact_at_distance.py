"""A(f, x, k) for the mean and percentiles is exact (rational values on the integer lattice).

The values scale noise (smooth sensitivity) and decide propose-test-release's distance, so
they must be exact or certified upper bounds. An exact rational brute force is the oracle:
on data and bounds on the lattice the reported value is the exact A rounded up to a float;
off the lattice it is a certified upper bound within four lattice units.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from dpkit import sensitivity as sens
from dpkit._lattice import unit_for
from dpkit.sensitivity.lattice_data import ceil_float


def _stat(y: tuple[Fraction, ...], query: str) -> Fraction:
    ys = sorted(y)
    m = len(ys)
    if query == "mean":
        return sum(ys, Fraction(0)) / m
    q = Fraction(0.5) if query == "median" else Fraction(float(query[1:]) / 100)
    h = q * (m - 1)
    f = math.floor(h)
    hi = ys[min(f + 1, m - 1)]
    return ys[f] + (h - f) * (hi - ys[f])


def _neighbours(y: tuple[Fraction, ...], uni: list[Fraction], relation: str):
    if relation == "unbounded":
        for v in uni:
            yield (*y, v)
        if len(y) > 1:
            for i in range(len(y)):
                yield y[:i] + y[i + 1 :]
    else:
        for i in range(len(y)):
            for v in uni:
                yield (*y[:i], v, *y[i + 1 :])


def _oracle(x: list[float], k: int, relation: str, query: str, lower: float, upper: float):
    """Exact A over the datasets within k of x drawn from the data values and the bounds
    (where the maximisers lie), by breadth-first search; Fractions throughout."""
    uni = sorted({Fraction(v) for v in x} | {Fraction(lower), Fraction(upper)})
    start = tuple(sorted(Fraction(v) for v in x))
    seen, frontier = {start}, [start]
    for _ in range(k):
        nxt = []
        for y in frontier:
            for z in _neighbours(y, uni, relation):
                z = tuple(sorted(z))
                if z not in seen:
                    seen.add(z)
                    nxt.append(z)
        frontier = nxt
    best = Fraction(0)
    for y in seen:
        fy = _stat(y, query)
        for z in _neighbours(y, uni, relation):
            best = max(best, abs(_stat(z, query) - fy))
    return best


# p1e-06: a level whose float has a denominator above 2**60 (the band-and-recompute path)
QUERIES = ["mean", "median", "p30", "p90", "p1e-06"]


@pytest.mark.parametrize("relation", ["unbounded", "bounded"])
@pytest.mark.parametrize("query", QUERIES)
def test_on_the_lattice_the_value_is_exact(relation: str, query: str) -> None:
    # data on multiples of 2**-3 with bounds (0, 8): lattice points, so no slack at all
    rng = np.random.default_rng(3)
    for _ in range(25):
        x = (rng.integers(0, 65, size=int(rng.integers(1, 5))) / 8).tolist()
        k = int(rng.integers(0, 3))
        got = sens.local_at_distance(query, x, k, relation=relation, bounds=(0, 8))
        assert got == ceil_float(_oracle(x, k, relation, query, 0.0, 8.0)), (x, k)


@pytest.mark.parametrize("relation", ["unbounded", "bounded"])
def test_far_from_zero_the_mean_is_still_exact(relation: str) -> None:
    # bounds (1e15, 1e15 + 1): float prefix sums of such records are off by more than the
    # mean's local sensitivity; on the 0.25 lattice of these bounds the value is exact
    lo, hi = 1e15, 1e15 + 1
    rng = np.random.default_rng(4)
    for _ in range(20):
        x = (lo + rng.integers(0, 5, size=int(rng.integers(2, 6))) / 4).tolist()
        k = int(rng.integers(0, 3))
        for query in ("mean", "median"):
            got = sens.local_at_distance(query, x, k, relation=relation, bounds=(lo, hi))
            assert got == ceil_float(_oracle(x, k, relation, query, lo, hi)), (x, k, query)


@pytest.mark.parametrize("query", QUERIES)
def test_off_the_lattice_the_value_is_a_certified_upper_bound(query: str) -> None:
    rng = np.random.default_rng(5)
    slack = 4 * unit_for(0.0, 10.0)
    for _ in range(25):
        x = rng.uniform(0, 10, size=int(rng.integers(1, 5))).tolist()
        k = int(rng.integers(0, 3))
        for relation in ("bounded", "unbounded"):
            exact = _oracle(x, k, relation, query, 0.0, 10.0)
            got = sens.local_at_distance(query, x, k, relation=relation, bounds=(0, 10))
            assert exact <= Fraction(got) <= exact + Fraction(slack)


def test_values_only_increase_along_the_sequence_and_with_the_ball() -> None:
    # A(x, k) <= A(x', k + 1) for neighbours: rounding the exact values up keeps it
    x = [1.0, 2.0, 2.0, 7.0]
    for relation, query in itertools.product(("bounded", "unbounded"), QUERIES):
        vals = [
            sens.local_at_distance(query, x, k, relation=relation, bounds=(0, 8)) for k in range(4)
        ]
        assert vals == sorted(vals)
        nb = [1.0, 2.0, 7.0] if relation == "unbounded" else [1.0, 2.0, 5.0, 7.0]
        for k in range(3):
            a = sens.local_at_distance(query, x, k, relation=relation, bounds=(0, 8))
            b = sens.local_at_distance(query, nb, k + 1, relation=relation, bounds=(0, 8))
            assert a <= b


def _mean_ls1(y: list[int], lo: int, hi: int) -> Fraction:
    """LS_1 of the mean at ``y`` (unbounded, records in [lo, hi]), from its definition."""
    m = len(y)
    mu = Fraction(sum(y), m)
    moves = [abs(Fraction(sum(y) + v, m + 1) - mu) for v in (lo, hi)]
    if m >= 2:
        moves += [abs(Fraction(sum(y) - v, m - 1) - mu) for v in (min(y), max(y))]
    return max(moves)


def _mean_diagonal_brute(w: list[int], lo: int, hi: int, k: int) -> Fraction:
    """max LS_1(mean, y) over every r (a = k - r) and the datasets that can attain it: the r
    largest (or smallest) records removed or the r next to the extreme one, the a additions
    at one bound or all but one of them; every LS_1 computed in full from the dataset."""
    n, best = len(w), Fraction(0)
    for r in range(min(k, n) + 1):
        a = k - r
        if n - r + a < 1:
            continue
        ys = [
            w[: n - r] + [lo] * a,
            w[r:] + [hi] * a,
            w[: n - r - 1] + w[-1:] + [lo] * a if r < n else [],
            w[:1] + w[r + 1 :] + [hi] * a if r < n else [],
        ]
        if a >= 1:
            ys += [w[: n - r] + [hi] + [lo] * (a - 1), w[r:] + [lo] + [hi] * (a - 1)]
        best = max([best] + [_mean_ls1(y, lo, hi) for y in ys if y])
    return best


def test_mean_diagonals_match_every_dataset_shape() -> None:
    # The diagonals are found by bisection over r (each shape is unimodal in r): against
    # every r and every candidate dataset, LS_1 computed from its definition, on data with
    # ties, records at the bounds, a single record and distances past n.
    from dpkit.sensitivity import _exact_diagonal
    from dpkit.sensitivity.lattice_data import LatticeData

    rng = np.random.default_rng(11)
    for case in range(300):
        n = int(rng.integers(1, 16))
        kind = case % 4
        if kind == 0:
            x = rng.integers(0, 9, n)  # ties
        elif kind == 1:
            x = rng.choice([0, 8], n)  # only the bounds
        elif kind == 2:
            x = np.concatenate([rng.choice([0, 8], n // 2), rng.integers(0, 9, n - n // 2)])
        else:
            x = np.full(n, int(rng.integers(0, 9)))
        ld = LatticeData(np.sort(x.astype(float)), 0.0, 8.0)
        w = [int(v) for v in ld.w]
        top = n + 3
        got = _exact_diagonal.mean_diagonals(ld, 0, top)
        for k in range(top + 1):
            assert got[k] == _mean_diagonal_brute(w, ld.lo, ld.hi, k), (x.tolist(), k)
        k0 = int(rng.integers(0, top + 1))  # a block starting anywhere gives the same values
        assert _exact_diagonal.mean_diagonals(ld, k0, top) == got[k0:]
        assert _exact_diagonal.mean_diagonal(ld, k0) == got[k0]
