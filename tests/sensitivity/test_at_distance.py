"""A(f, x, k) = max LS_1 over the ball of radius k: exact algorithm against brute force."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpkit import ParameterError
from dpkit import sensitivity as sens

L, U = 0.0, 10.0
QUERIES = ["count", "sum", "mean", "median", "p25", "p90", "p0", "p100"]


def _oracle_universe(x: list[float], k: int) -> np.ndarray:
    # The maximisers of A(f, x, k) for these queries only ever hold data values and the
    # bounds: percentiles are integrals of the interpolant's slopes (linear in each order
    # statistic), the mean's LS_1 terms are convex in each record. A universe holding the data
    # plus k + 2 copies of each bound therefore contains them (k for the ball, one for the
    # LS_1 step, one spare), while every dataset it offers is within the bounds: the brute
    # force over it must then equal the exact value, not merely bound it.
    return np.concatenate([x, [L] * (k + 2), [U] * (k + 2)])


@settings(max_examples=120, deadline=None)
@given(
    x=st.lists(st.integers(0, 10), min_size=1, max_size=5).map(lambda v: [float(i) for i in v]),
    k=st.integers(0, 3),
    relation=st.sampled_from(["bounded", "unbounded"]),
    query=st.sampled_from(QUERIES),
)
def test_matches_brute_force(x: list[float], k: int, relation: str, query: str) -> None:
    exact = sens.local_at_distance(query, x, k, relation=relation, bounds=(L, U))
    brute = sens.empirical_at_distance(query, x, _oracle_universe(x, k), k, relation=relation)
    assert exact == pytest.approx(brute, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("relation", ["bounded", "unbounded"])
@pytest.mark.parametrize("query", ["mean", "median", "p30"])
def test_no_other_value_does_better(relation: str, query: str) -> None:
    # A grid of interior values added to the universe cannot raise the brute force above the
    # exact value (the grid datasets are inside the bounds ball) and the exact value is still
    # reached: the extremes need only data values and bounds.
    rng = np.random.default_rng(11)
    for _ in range(6):
        x = np.round(rng.uniform(L, U, size=int(rng.integers(2, 5))), 1).tolist()
        k = 1
        uni = np.concatenate([_oracle_universe(x, k), np.linspace(L, U, 7)[1:-1]])
        exact = sens.local_at_distance(query, x, k, relation=relation, bounds=(L, U))
        brute = sens.empirical_at_distance(query, x, uni, k, relation=relation)
        assert exact == pytest.approx(brute, rel=1e-9)


def _nrs07_median(x: np.ndarray, k: int, lower: float, upper: float) -> float:
    # NRS07 section 3.1, odd n, bounded: A(k) = max_{0<=t<=k+1} (x[m+t] - x[m+t-k-1]) with
    # 1-based x[i] = lower for i < 1 and upper for i > n, m = (n + 1) / 2.
    n = x.size
    m = (n + 1) // 2

    def at(i: int) -> float:
        return lower if i < 1 else upper if i > n else float(x[i - 1])

    return max(at(m + t) - at(m + t - k - 1) for t in range(k + 2))


def test_median_equals_nrs07_formula() -> None:
    rng = np.random.default_rng(7)
    for _ in range(50):
        n = int(rng.integers(0, 20)) * 2 + 1
        x = np.sort(rng.uniform(0, 50, size=n))
        for k in (0, 1, 2, 5, n):
            got = sens.local_at_distance("median", x, k, relation="bounded", bounds=(0, 50))
            assert got == pytest.approx(_nrs07_median(x, k, 0, 50), rel=1e-12)


def test_closed_forms() -> None:
    x = [2.0, 4.0, 9.0]
    assert sens.local_at_distance("count", x, 3, relation="unbounded") == 1.0
    assert sens.local_at_distance("count", x, 3, relation="bounded") == 0.0
    b = (-5.0, 10.0)
    assert sens.local_at_distance("sum", x, 2, relation="unbounded", bounds=b) == 10.0
    assert sens.local_at_distance("sum", x, 0, relation="bounded", bounds=b) == 14.0
    assert sens.local_at_distance("sum", x, 1, relation="bounded", bounds=b) == 15.0
    assert sens.local_at_distance("mean", x, 0, relation="bounded", bounds=b) == 14.0 / 3
    assert sens.local_at_distance("mean", x, 4, relation="bounded", bounds=b) == 5.0


def test_zero_is_local_sensitivity_and_monotone() -> None:
    rng = np.random.default_rng(3)
    x = rng.uniform(0, 100, size=101)
    for rel in ("bounded", "unbounded"):
        for q in ("mean", "median", "p75"):
            a = [sens.local_at_distance(q, x, k, relation=rel, bounds=(0, 100)) for k in range(8)]
            assert a[0] == pytest.approx(sens.local(q, x, relation=rel, bounds=(0, 100)))
            assert all(b >= c for b, c in zip(a[1:], a[:-1], strict=True))


@pytest.mark.parametrize(
    ("kwargs", "exc", "words"),
    [
        ({"query": "var"}, ParameterError, "empirical_at_distance"),
        ({"query": "nope"}, ParameterError, "unknown query"),
        ({"k": -1}, ParameterError, "`k` must be an int >= 0"),
        ({"k": 1.5}, TypeError, "`k`"),
        ({"data": []}, ParameterError, "empty"),
        ({"data": [1.0, float("nan")]}, ParameterError, "NaN"),
        ({"bounds": (10, 0)}, ParameterError, "lower < upper"),
        ({"bounds": None}, ParameterError, "`bounds` is required"),
        ({"data": [1.0, 50.0, 60.0]}, ParameterError, "2 value(s) of `data` lie outside"),
        ({"relation": "replace"}, ParameterError, "`relation`"),
    ],
)
def test_bad_input(kwargs: dict, exc: type, words: str) -> None:
    args = {
        "query": "median",
        "data": [1.0, 2.0, 3.0],
        "k": 1,
        "relation": "bounded",
        "bounds": (0, 10),
    }
    args.update(kwargs)
    with pytest.raises(exc, match=None) as info:
        sens.local_at_distance(
            args["query"],
            args["data"],
            args["k"],
            relation=args["relation"],
            bounds=args["bounds"],
        )
    assert words in str(info.value)
    assert "local_at_distance" in str(info.value)
