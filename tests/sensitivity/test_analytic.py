"""Closed-form global sensitivity against brute force over universes that hold the worst case."""

from __future__ import annotations

import math
import time
from fractions import Fraction

import pytest

import dpkit as dp
from dpkit import ParameterError, queries
from dpkit import sensitivity as sens
from dpkit.sensitivity.analytic import _mean_unbounded, _var_change, _var_change_table


@pytest.mark.parametrize("relation", ["bounded", "unbounded"])
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("query", ["count", "sum", "mean", "median", "p25", "p90"])
def test_matches_brute_force(relation: str, n: int, k: int, query: str) -> None:
    # The worst datasets have every record at a bound (the mean's change is linear in each
    # record, the percentiles' change is a weighted sum of gaps between order statistics,
    # which is largest with one jump from lower to upper). A universe of n + k copies of each
    # bound holds all of them and their neighbours, and nothing outside the bounds.
    lower, upper = -1.0, 3.0
    uni = [lower] * (n + k) + [upper] * (n + k)
    exact = sens.global_sensitivity(
        query, bounds=(lower, upper), relation=relation, n=n, distance=k
    )
    brute = sens.empirical_global(query, uni, n, distance=k, relation=relation)
    assert exact == pytest.approx(brute, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_unbounded_mean_over_every_size(k: int) -> None:
    exact = sens.global_sensitivity("mean", bounds=(0, 1), relation="unbounded", distance=k)
    brute = max(
        sens.empirical_global(
            "mean", [0.0] * (n + k) + [1.0] * (n + k), n, distance=k, relation="unbounded"
        )
        for n in range(1, 3 * k + 3)
    )
    assert exact == pytest.approx(brute)


def test_textbook_values() -> None:
    g = sens.global_sensitivity
    assert g("median", bounds=(0, 100), relation="unbounded") == 50.0
    assert g("median", bounds=(0, 100), relation="bounded", n=1001) == 100.0
    assert g("median", bounds=(0, 100), relation="bounded", n=1000) == 50.0
    assert g("mean", bounds=(0, 100), relation="bounded", n=1000) == 0.1
    assert g("sum", bounds=(-5, 3), relation="unbounded", distance=2) == 10.0
    assert g("sum", bounds=(-5, 3), relation="bounded", distance=2) == 16.0
    hist = queries.histogram([0, 1, 2, 3])
    assert g(hist, relation="unbounded", norm="l1") == 1.0
    assert g(hist, relation="unbounded", norm="l2") == 1.0
    assert g(hist, relation="bounded", norm="l1") == 2.0
    assert g(hist, relation="bounded", norm="l2") == pytest.approx(math.sqrt(2))


@pytest.mark.parametrize(
    ("query", "kwargs", "words"),
    [
        ("sum", {"relation": "unbounded"}, "infinite without bounds"),
        ("var", {"relation": "bounded", "bounds": (0, 1)}, "pass `n`"),
        ("std", {"relation": "unbounded", "n": 5}, "infinite without bounds"),
        (lambda x: x.max(), {"relation": "bounded"}, "empirical_global"),
        ("median", {"relation": "bounded", "bounds": (0, 1)}, "pass `n`"),
        ("median", {"relation": "bounded", "bounds": (1, 0), "n": 3}, "lower < upper"),
        ("median", {"relation": "bounded", "bounds": (0, 1), "n": 3, "distance": 0}, ">= 1"),
        ("median", {"relation": "unbounded"}, "`bounds` is required"),
        ("modal", {"relation": "unbounded"}, "unknown query"),
    ],
)
def test_errors(query: object, kwargs: dict, words: str) -> None:
    with pytest.raises(ParameterError) as info:
        sens.global_sensitivity(query, **kwargs)
    assert words in str(info.value)


@pytest.mark.parametrize("relation", ["bounded", "unbounded"])
@pytest.mark.parametrize(("n", "k"), [(1, 1), (1, 2), (2, 1), (2, 2), (3, 1), (3, 2), (4, 1)])
@pytest.mark.parametrize("query", ["var", "std"])
def test_moments_match_brute_force(relation: str, n: int, k: int, query: str) -> None:
    # The worst pairs have every record at a bound except removed ones, which sit at the mean
    # of the records kept (docstring of _var_change): a multiple of 1/c for c <= 4 kept
    # records, so the grid of twelfths on [lower, upper], n + k copies each, holds them all.
    lower, upper = -1.0, 3.0
    grid = [lower + (upper - lower) * i / 12 for i in range(13)]
    uni = [g for g in grid for _ in range(n + k)]
    exact = sens.global_sensitivity(
        query, bounds=(lower, upper), relation=relation, n=n, distance=k
    )
    brute = sens.empirical_global(query, uni, n, distance=k, relation=relation)
    assert exact == pytest.approx(brute, rel=1e-12, abs=1e-12)
    assert exact >= brute - 1e-12  # never below what a real pair of datasets reaches


def _var_change_every_u(n: int, k: int) -> Fraction:
    """The maximum of _var_change's docstring with every u in [0, c] tried."""
    best = Fraction(0)
    for r in range(min(k, n) + 1):
        c = n - r
        for a in range(k + 1 - r):
            m = n - r + a
            if m < 1 or r + a == 0:
                continue
            for big_t, small_t, extra in ((m, n, a), (n, m, r)):
                for p in range(extra + 1):
                    for u in range(c + 1):
                        val = Fraction((u + p) * (big_t - u - p), big_t * big_t)
                        if c:
                            val -= Fraction(u * (c - u), small_t * c)
                        best = max(best, val)
    return best


def _var_change_ends(n: int, k: int) -> Fraction:
    """The maximum of _var_change's docstring over u in {0, c} and every p (its Z)."""
    best = Fraction(0)
    for r in range(min(k, n) + 1):
        c = n - r
        for a in range(k + 1 - r):
            m = n - r + a
            if m < 1 or r + a == 0:
                continue
            for big_t, extra in ((m, a), (n, r)):
                for p in range(extra + 1):
                    for u in {0, c}:
                        best = max(best, Fraction((u + p) * (big_t - u - p), big_t * big_t))
    return best


def test_var_change_candidates_find_the_maximum() -> None:
    # the dozen candidates per (r, a) against trying every u and every p, including concave
    # cases (x = 2 records, x' = x plus one at their mean: the interior point wins there)
    for n in range(1, 26):
        for k in range(1, 8):
            big, zero = _var_change(n, k)
            assert big == _var_change_every_u(n, k), (n, k)
            assert zero == _var_change_ends(n, k), (n, k)


def test_var_change_table_is_shared_by_smaller_distances() -> None:
    # one table up to a power of two serves every distance below it, as computing each alone
    n = 17
    for k in range(1, 9):
        alone = _var_change_table.__wrapped__(n, k)  # built for k itself, not cached
        assert _var_change(n, k) == (max(b for b, _ in alone), max(z for _, z in alone))


def _mean_unbounded_every_split(n: int, k: int) -> float:
    """The unbounded mean's change, every split of r and a between the bounds and both ends
    of the records at 1 tried, in float as the closed form's search computes it."""
    best = 0.0
    for ru in range(k + 1):
        for rl in range(k + 1 - ru):
            r = ru + rl
            if r > n:
                continue
            for au in range(k + 1 - r):
                for al in range(k + 1 - r - au):
                    m = n - r + au + al
                    if m < 1 or r + au + al == 0:
                        continue
                    for c in (ru, n - rl):
                        best = max(best, abs((c - ru + au) / m - c / n))
    return best


def test_unbounded_mean_is_the_float_of_every_split() -> None:
    # O(k) shapes instead of O(k**4): the same float, not just a close one
    for n in [*range(1, 30), 97, 1000]:
        for k in range(1, 11):
            assert _mean_unbounded(n, k) == _mean_unbounded_every_split(n, k), (n, k)


def test_deviation_is_certified() -> None:
    # the largest variance change is always reached from a zero-variance end, so the
    # deviation's sensitivity is exactly its square root (not just at most)
    for n in [*range(1, 40), 1000, 32561]:
        for k in range(1, 7):
            big, zero = _var_change(n, k)
            assert big == zero, (n, k)


def test_moment_textbook_values_and_rounding() -> None:
    g = sens.global_sensitivity
    # bounded, one replacement: (upper - lower)**2 (n - 1) / n**2, deviation its square root
    n = 1000
    assert g("var", bounds=(0, 10), relation="bounded", n=n) >= 100 * (n - 1) / n**2
    assert g("var", bounds=(0, 10), relation="bounded", n=n) == pytest.approx(0.0999)
    assert g("std", bounds=(0, 10), relation="bounded", n=n) == pytest.approx(
        10 * math.sqrt(n - 1) / n
    )
    # unbounded, one record: removing one of n costs (n - 1) / n**2, more than adding one
    assert g("var", bounds=(0, 1), relation="unbounded", n=n) == pytest.approx((n - 1) / n**2)
    # k >= n / 2 replacements reach the largest variance, w**2 / 4, from zero
    assert g("var", bounds=(0, 2), relation="bounded", n=6, distance=3) == 1.0
    assert g("std", bounds=(0, 2), relation="bounded", n=6, distance=5) == 1.0
    # every size: a single record and one added at the other bound
    assert g("var", bounds=(0, 2), relation="unbounded") == 1.0
    assert g("std", bounds=(0, 2), relation="unbounded", distance=4) == 1.0
    # rounded up, never down: 0.09 has no float, its root 0.3 neither
    v = g("var", bounds=(0, 1), relation="bounded", n=10, distance=1)
    assert Fraction(v) >= Fraction(9, 100) > Fraction(math.nextafter(v, 0.0))
    sd = g("std", bounds=(0, 1), relation="unbounded", n=1000, distance=100)
    assert Fraction(sd) ** 2 >= Fraction(9, 100) > Fraction(math.nextafter(sd, 0.0)) ** 2


def test_percentile_cell_overlap_matches_the_dense_scan_of_every_cell() -> None:
    """The O(1) overlap (a concave function of the cell, peaked at the floors and ceilings of
    its two ends) against the scan of every cell of ``range(-1, n)`` on random intervals."""
    import numpy as np

    from dpkit.sensitivity.analytic import _overlap

    rng = np.random.default_rng(3)
    for _ in range(2000):
        n = int(rng.integers(1, 40))
        start = float(rng.uniform(-3, n + 2))
        end = start + float(rng.choice([0.0, rng.uniform(0, 0.99), rng.uniform(0, 4)]))
        c = np.arange(-1, n)
        dense = float(max(0.0, float(np.max(np.minimum(end, c + 1) - np.maximum(start, c)))))
        assert _overlap(start, end, range(-1, n)) == dense, (start, end, n)


def test_percentile_sensitivity_at_any_size_in_constant_memory() -> None:
    """The closed form needs no array of the dataset's size: at n = 10**6 it allocates
    almost nothing, and past 2**53 (where float64 positions are not exact) it still answers,
    exactly: the median moves by w for odd n (bounded) and w / 2 for even n."""
    import tracemalloc

    tracemalloc.start()
    try:
        v = sens.global_sensitivity("median", bounds=(0, 100), relation="bounded", n=10**6 + 1)
        u = sens.global_sensitivity("median", bounds=(0, 100), relation="unbounded", n=10**6)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (v, u) == (100.0, 50.0)
    assert peak < 2**20  # a scan of the cells would hold 8 MB per array
    big = 2**53
    assert sens.global_sensitivity("median", bounds=(0, 100), relation="bounded", n=big + 1) == 100
    assert sens.global_sensitivity("median", bounds=(0, 100), relation="bounded", n=big + 2) == 50
    huge = sens.global_sensitivity("median", bounds=(0, 1), relation="unbounded", n=10**30)
    assert huge == 0.5


def test_global_sensitivity_at_huge_distance_saturates_at_once() -> None:
    t0 = time.perf_counter()
    w = 100.0
    q10 = dp.queries.percentile(10)
    assert sens.global_sensitivity(q10, bounds=(0, 100), relation="unbounded", distance=10**6) == w
    assert (
        sens.global_sensitivity("mean", bounds=(0, 100), relation="unbounded", distance=10**6) == w
    )
    assert (
        sens.global_sensitivity("mean", bounds=(0, 100), relation="unbounded", n=5, distance=10**6)
        == w
    )
    assert sens.global_sensitivity(
        "var", bounds=(0, 10), relation="unbounded", n=5, distance=10**6
    ) == pytest.approx(25.0)
    assert time.perf_counter() - t0 < 5


def test_sum_bounds_too_far_apart_are_refused() -> None:
    # their width overflows a float: the sensitivity would be infinite
    with pytest.raises(ParameterError, match=r"`bounds` .* are too far apart"):
        sens.global_sensitivity("sum", bounds=(-1e308, 1e308), relation="bounded", n=10)
