"""Exact local sensitivity LS_k against the brute-force oracle, both relations, k <= 3."""

from __future__ import annotations

import itertools
import math
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpkit import ParameterError
from dpkit import sensitivity as sens

L, U = -2.0, 10.0
data_st = st.lists(st.integers(-2, 10), min_size=1, max_size=6).map(lambda v: [float(i) for i in v])


@settings(max_examples=250, deadline=None)
@given(
    x=data_st,
    k=st.integers(1, 3),
    relation=st.sampled_from(["bounded", "unbounded"]),
    query=st.sampled_from(["count", "sum", "mean", "median", "p20", "p75", "p100"]),
)
def test_monotone_queries_match_brute_force(
    x: list[float], k: int, relation: str, query: str
) -> None:
    # For count, sum, mean and percentiles the extremes of the ball remove the smallest or
    # largest records and add records at a bound (every order statistic, hence the query, is
    # monotone in each record). A universe of the data plus k copies of each bound contains
    # those extremes and offers nothing outside the bounds, so the oracle must agree exactly.
    uni = np.concatenate([x, [L] * k, [U] * k])
    exact = sens.local(query, x, distance=k, relation=relation, bounds=(L, U))
    brute = sens.empirical_local(query, x, uni, distance=k, relation=relation)
    assert exact == pytest.approx(brute, rel=1e-9, abs=1e-12)


@settings(max_examples=80, deadline=None)
@given(
    x=st.lists(st.integers(-2, 10), min_size=1, max_size=4).map(lambda v: [float(i) for i in v]),
    k=st.integers(1, 2),
    relation=st.sampled_from(["bounded", "unbounded"]),
    query=st.sampled_from(["var", "std"]),
)
def test_variance_matches_brute_force(x: list[float], k: int, relation: str, query: str) -> None:
    # The variance is largest with added records at the bounds, and smallest with a kept
    # window plus copies of the kept records' mean, a value that is usually neither a data
    # point nor a bound. The universe therefore also holds k copies of the mean of every
    # sub-multiset of the data (a superset of the windows' means, computed here by brute force,
    # not by the algorithm under test), making the oracle exact.
    means = {float(np.mean(c)) for r in range(1, len(x) + 1) for c in itertools.combinations(x, r)}
    uni = np.concatenate([x, [L] * k, [U] * k, np.repeat(sorted(means), k)])
    exact = sens.local(query, x, distance=k, relation=relation, bounds=(L, U))
    brute = sens.empirical_local(query, x, uni, distance=k, relation=relation)
    assert exact == pytest.approx(brute, rel=1e-9, abs=1e-9)


def test_variance_bounds_only_universe_is_a_lower_bound() -> None:
    # A universe missing the extremisers explores fewer datasets, so the oracle over it can
    # only be smaller. For x = {2, 4} (var 1) the largest change adds 10 (var({2, 4, 10}) = 11.56,
    # a change of 10.56); with only {2, 4} in the universe the oracle can
    # remove a record (var 0, change 1) but cannot add 10.
    x = [2.0, 4.0]
    exact = sens.local("var", x, relation="unbounded", bounds=(0, 10))
    assert exact == pytest.approx(np.var([2.0, 4.0, 10.0]) - 1.0)
    brute = sens.empirical_local("var", x, x, relation="unbounded")
    assert brute == pytest.approx(1.0)
    assert brute < exact


def test_known_values() -> None:
    x = [1, 2, 3, 10, 11]
    assert sens.local("median", x, relation="bounded", bounds=(0, 20)) == 7.0
    assert sens.local("median", x, relation="unbounded", bounds=(0, 20)) == 3.5
    assert sens.local("count", x, relation="unbounded", distance=3) == 3.0
    assert sens.local("count", x, relation="bounded", distance=3) == 0.0
    assert sens.local("sum", x, relation="bounded", bounds=(0, 20)) == 19.0
    assert sens.local("mean", x, relation="bounded", bounds=(0, 20)) == pytest.approx(19 / 5)


def test_percentile_matches_numpy_on_the_extreme_neighbour() -> None:
    rng = np.random.default_rng(1)
    x = np.sort(rng.uniform(0, 1, 50))
    got = sens.local("p90", x, relation="bounded", bounds=(0, 1))
    up = np.percentile(np.concatenate([x[1:], [1.0]]), 90) - np.percentile(x, 90)
    down = np.percentile(x, 90) - np.percentile(np.concatenate([[0.0], x[:-1]]), 90)
    assert got == pytest.approx(max(up, down), rel=1e-12)


@pytest.mark.parametrize("query", ["median", "p90", "mean", "var"])
def test_linearithmic_on_a_million(query: str) -> None:
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 100, 1_000_000)
    start = time.perf_counter()
    got = sens.local(query, x, relation="unbounded", bounds=(0, 100))
    assert 0 < got < 1
    # generous limit on a shared 2-core machine; the benchmark reports the real figure
    assert time.perf_counter() - start < 5


@pytest.mark.parametrize(
    ("kwargs", "exc", "words"),
    [
        ({"data": []}, ParameterError, "`data` is empty"),
        ({"data": [1.0, float("nan")]}, ParameterError, "NaN"),
        ({"data": ["a"]}, TypeError, "real numbers"),
        ({"bounds": (5, 1)}, ParameterError, "lower < upper"),
        ({"distance": 0}, ParameterError, "`distance` must be an int >= 1; got 0"),
        ({"query": "mode"}, ParameterError, "unknown query 'mode'"),
        ({"query": lambda v: v.max()}, ParameterError, "empirical_local"),
        ({"relation": None}, TypeError, "'bounded'"),
        ({"data": [1.0, 99.0]}, ParameterError, "1 value(s) of `data` lie outside"),
        ({"bounds": None}, ParameterError, "`bounds` is required for 'median'"),
    ],
)
def test_bad_input(kwargs: dict, exc: type, words: str) -> None:
    args = {
        "query": "median",
        "data": [1.0, 2.0],
        "distance": 1,
        "relation": "bounded",
        "bounds": (0, 10),
    }
    args.update(kwargs)
    with pytest.raises(exc) as info:
        sens.local(
            args["query"],
            args["data"],
            distance=args["distance"],
            relation=args["relation"],
            bounds=args["bounds"],
        )
    assert words in str(info.value)
    assert str(info.value).startswith("local:")


def _moment_one_distance(query: str, x: np.ndarray, k: int, relation: str) -> float:
    """LS_k of var or std on [L, U] the straightforward way: every shape (r, a) of the ball
    of radius k scored on its own (_max_var for the largest variance, every kept window for
    the smallest), nothing shared between distances."""
    from dpkit.sensitivity._var_distance import VarData, _max_var

    x = np.sort(np.asarray(x, dtype=float))
    n = x.size
    d = VarData(x, L, U)
    if relation == "unbounded":
        k = min(k, n + 2)
        pairs = [(r, a) for r in range(min(k, n) + 1) for a in range(k + 1 - r) if n - r + a >= 1]
    else:
        pairs = [(r, r) for r in range(min(k, n) + 1)]
    vmax, vmin = 0.0, math.inf
    for r, a in pairs:
        vmax = max(vmax, _max_var(d, r, a))
        s = n - r
        if s == 0:
            vmin = 0.0
            continue
        b = np.arange(r + 1)
        w1, w2 = d.p1[b + s] - d.p1[b], d.p2[b + s] - d.p2[b]
        vmin = min(vmin, float(np.min(np.maximum(w2 / s - (w1 / s) ** 2, 0.0))) * s / (s + a))
    v0 = float(np.var(x - (L + U) / 2))
    if query == "var":
        return float(max(vmax - v0, v0 - max(vmin, 0.0), 0.0))
    s0 = math.sqrt(v0)
    return float(max(math.sqrt(vmax) - s0, s0 - math.sqrt(max(vmin, 0.0)), 0.0))


def test_local_by_distance_is_each_distance_on_its_own() -> None:
    # One sweep shares the shapes of the largest ball between the distances (the variance's
    # cost k**3 log n paid once, not per distance): the same floats as each distance alone,
    # on data with ties, records at the bounds, distances past n + 2, in any order.
    rng = np.random.default_rng(12)
    for case in range(40):
        n = int(rng.integers(1, 12))
        x = rng.integers(-2, 11, n).astype(float) if case % 2 else rng.uniform(L, U, n)
        if case % 5 == 0:
            x[: n // 2] = L
        ks = [int(k) for k in rng.permutation(np.arange(1, n + 6))[:5]]
        for relation in ("bounded", "unbounded"):
            for query in ("var", "std"):
                got = sens.local_by_distance(query, x, ks, relation=relation, bounds=(L, U))
                want = [_moment_one_distance(query, x, k, relation) for k in ks]
                assert got == want, (x.tolist(), ks, relation, query)
            for query in ("mean", "median", "p90", "sum", "count"):
                got = sens.local_by_distance(query, x, ks, relation=relation, bounds=(L, U))
                assert got == [
                    sens.local(query, x, distance=k, relation=relation, bounds=(L, U)) for k in ks
                ]


def test_max_var_many_is_max_var_shape_by_shape() -> None:
    from dpkit.sensitivity._var_distance import VarData, _max_var, _max_var_many

    rng = np.random.default_rng(13)
    for case in range(30):
        n = int(rng.integers(1, 40))
        x = np.sort(rng.integers(-2, 11, n).astype(float) if case % 2 else rng.uniform(L, U, n))
        d = VarData(x, L, U)
        r = rng.integers(0, n + 1, 25)
        a = rng.integers(0, 30, 25)
        got = _max_var_many(d, r, a)
        assert got.tolist() == [_max_var(d, int(ri), int(ai)) for ri, ai in zip(r, a, strict=True)]


@pytest.mark.parametrize("relation", ["bounded", "unbounded"])
def test_deviation_over_bounds_near_the_float_limit_is_the_rescaled_value(relation: str) -> None:
    """Squares of values near 1e308 overflow float64: the deviation's local sensitivity is
    computed on the data times a power of two (exact) and scaled back, so it equals the
    answer on the data in other units; the variance's, beyond the float range, is refused."""
    x = np.array([1.0, 2.0, 3.0, 1e100, 5e307])
    shrink = 2.0**-600  # exact: a power of two
    for k in (1, 2):
        got = sens.local("std", x, distance=k, relation=relation, bounds=(0, 1e308))
        small = sens.local(
            "std", x * shrink, distance=k, relation=relation, bounds=(0, 1e308 * shrink)
        )
        assert math.isfinite(got) and got == small / shrink
    with pytest.raises(ParameterError, match="overflows a float"):
        sens.local("var", x, relation=relation, bounds=(0, 1e308))
    # the variance where it is a float (below the rescaling threshold): the same in units
    # 2**200 times smaller, its figure 2**400 times smaller
    v = sens.local("var", [1.0, 3e149], relation=relation, bounds=(0, 1e150))
    w = sens.local(
        "var", np.array([1.0, 3e149]) * 2.0**-200, relation=relation, bounds=(0, 1e150 * 2.0**-200)
    )
    assert v == w * 2.0**400
