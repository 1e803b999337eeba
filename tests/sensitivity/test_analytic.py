"""Closed-form global sensitivity against brute force over universes that hold the worst case."""

from __future__ import annotations

import math

import pytest

from dpkit import ParameterError, queries
from dpkit import sensitivity as sens


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
        ("var", {"relation": "bounded", "bounds": (0, 1), "n": 5}, "empirical_global"),
        (lambda x: x.max(), {"relation": "bounded"}, "empirical_global"),
        ("median", {"relation": "bounded", "bounds": (0, 1)}, "pass n="),
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
