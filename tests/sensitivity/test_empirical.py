"""The brute-force oracles: definitions, the seed's universe, limits and errors."""

from __future__ import annotations

import itertools
import time
from typing import Any

import numpy as np
import pytest

import dpkit as dp
from dpkit import ParameterError, queries
from dpkit import sensitivity as sens

SEED_UNIVERSE = [1, 2, 3, 10, 11]


def _naive_global(f: queries.Query, universe: list, size: int, k: int, relation: str) -> float:
    # Straight from the definition, with index subsets: every pair of sub-multisets with
    # 1 <= dist <= k, distance computed on multisets of values (sorted tuples).
    subsets = {
        tuple(sorted(c))
        for s in range(0, len(universe) + 1)
        for c in itertools.combinations(universe, s)
    }

    def dist(a: tuple, b: tuple) -> int:
        ca, cb = {}, {}
        for v in a:
            ca[v] = ca.get(v, 0) + 1
        for v in b:
            cb[v] = cb.get(v, 0) + 1
        d = sum(abs(ca.get(v, 0) - cb.get(v, 0)) for v in set(ca) | set(cb))
        return d // 2 if relation == "bounded" else d

    best = 0.0
    for x in (s for s in subsets if len(s) == size):
        for y in subsets:
            if len(y) < 1 or (relation == "bounded" and len(y) != size):
                continue
            if 1 <= dist(x, y) <= k:
                best = max(best, abs(f(np.array(x)) - f(np.array(y))))
    return best


@pytest.mark.parametrize("relation", ["bounded", "unbounded"])
@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("name", ["mean", "median", "var", "std", "p25"])
def test_global_matches_the_definition(relation: str, k: int, name: str) -> None:
    q = queries.resolve(name)
    got = sens.empirical_global(q, SEED_UNIVERSE, 3, distance=k, relation=relation)
    assert got == pytest.approx(_naive_global(q, SEED_UNIVERSE, 3, k, relation), rel=1e-12)


def test_seed_universe_values() -> None:
    # Worked by hand: median of size-3 datasets from {1, 2, 3, 10, 11}.
    # Bounded: {1, 2, 3} -> {2, 3, 11}? median 2 -> 3; {1, 2, 10} -> {1, 10, 11}: 2 -> 10 (8).
    assert sens.empirical_global("median", SEED_UNIVERSE, 3, relation="bounded") == 8.0
    # Unbounded: {1, 2, 11} minus 1 is {2, 11}, median 6.5: a change of 4.5.
    assert sens.empirical_global("median", SEED_UNIVERSE, 3, relation="unbounded") == 4.5
    assert sens.empirical_global("count", SEED_UNIVERSE, 3, relation="unbounded") == 1.0
    assert sens.empirical_global("count", SEED_UNIVERSE, 3, relation="bounded") == 0.0


def test_callable_and_multiset_universe() -> None:
    def spread(x: np.ndarray) -> float:
        return float(x.max() - x.min())

    # universe [5, 5, 0]: dataset {5, 5} may lose a 5 or swap one for 0
    assert sens.empirical_local(spread, [5, 5], [5, 5, 0], relation="bounded") == 5.0
    with pytest.raises(ParameterError, match="appears 3 time"):
        sens.empirical_local(spread, [5, 5, 5], [5, 5, 0], relation="bounded")
    with pytest.raises(ParameterError, match=r"not in the universe"):
        sens.empirical_local(spread, [7], [5, 5, 0], relation="bounded")


def test_empty_dataset_is_out_of_scope_for_mean_but_not_count() -> None:
    # {4} unbounded: removing the record empties the dataset; the mean is undefined there,
    # so only additions count; the count of the empty dataset is 0.
    assert sens.empirical_local("mean", [4.0], [4.0, 0.0], relation="unbounded") == 2.0
    assert sens.local("mean", [4.0], relation="unbounded", bounds=(0, 4)) == 2.0
    assert sens.empirical_local("count", [4.0], [4.0], relation="unbounded") == 1.0
    assert sens.empirical_local("sum", [4.0], [4.0], relation="unbounded") == 4.0


def test_limit_names_the_number_of_datasets() -> None:
    with pytest.raises(ParameterError) as info:
        sens.empirical_global("mean", range(30), 10, relation="bounded", max_datasets=1000)
    assert "30,045,015 datasets" in str(info.value)
    assert "max_datasets" in str(info.value)
    with pytest.raises(ParameterError, match="neighbouring datasets"):
        sens.empirical_local(
            "mean", [1.0], range(60), distance=3, relation="unbounded", max_datasets=100
        )


def test_bad_input() -> None:
    with pytest.raises(ParameterError, match="too few for datasets of `size`=6"):
        sens.empirical_global("mean", SEED_UNIVERSE, 6, relation="bounded")
    with pytest.raises(ParameterError, match="`distance` must be an int >= 1"):
        sens.empirical_global("mean", SEED_UNIVERSE, 3, distance=0, relation="bounded")
    with pytest.raises(ParameterError, match="NaN"):
        sens.empirical_global("mean", [1.0, float("nan")], 1, relation="bounded")
    with pytest.raises(ParameterError, match="unknown query"):
        sens.empirical_global("avg", SEED_UNIVERSE, 3, relation="bounded")
    with pytest.raises(ParameterError, match="`data` is empty"):
        sens.empirical_local("mean", [], SEED_UNIVERSE, relation="bounded")
    with pytest.raises(ParameterError, match="`norm`"):
        sens.empirical_global(queries.histogram([0, 5, 12]), SEED_UNIVERSE, 3, relation="bounded")


def test_progress_bar_only_when_asked_or_long_on_a_terminal(
    capsys: pytest.CaptureFixture[str],
) -> None:
    sens.empirical_global("mean", SEED_UNIVERSE, 3, relation="unbounded")
    assert capsys.readouterr().err == ""  # short run, and stderr is not a terminal here
    value = sens.empirical_global("mean", SEED_UNIVERSE, 3, relation="unbounded", progress=True)
    assert "empirical_global" in capsys.readouterr().err
    assert value == sens.empirical_global("mean", SEED_UNIVERSE, 3, relation="unbounded")


def test_empirical_limits_are_checked_before_any_work() -> None:
    t0 = time.perf_counter()
    # 1.3 M datasets would take minutes and gigabytes: refused at once, naming the memory and
    # the comparisons the enumeration would need
    with pytest.raises(ParameterError, match="max_datasets"):
        sens.empirical_global("median", np.arange(200.0), 3, relation="bounded")
    with pytest.raises(ParameterError, match=r"compare .* pairs of datasets"):
        sens.empirical_global("median", np.arange(40.0), 3, relation="bounded")
    # distances far beyond what the universe can reach are clamped, not enumerated
    assert sens.empirical_local(
        "median", [1, 2, 3], [1, 2, 3, 10, 11], distance=10**6, relation="unbounded"
    ) == sens.empirical_local(
        "median", [1, 2, 3], [1, 2, 3, 10, 11], distance=5, relation="unbounded"
    )
    with pytest.raises(ParameterError, match="max_datasets"):
        sens.empirical_at_distance(
            dp.queries.percentile(10), np.arange(5.0), np.arange(40.0), 2**63, relation="unbounded"
        )
    assert time.perf_counter() - t0 < 10


@pytest.mark.parametrize("limit", [None, float("nan"), 2.5, "abc", np.array([1, 2])])
def test_a_bad_limit_never_disables_it(limit: Any) -> None:
    with pytest.raises(TypeError, match="`max_datasets` must be an int >= 1"):
        sens.empirical_global(
            "median", [1, 2, 3, 10, 11], 3, relation="bounded", max_datasets=limit
        )


def test_a_universe_of_a_thousand_values_has_no_recursion_limit() -> None:
    # the sub-multisets are enumerated without recursion (one level per distinct value would
    # pass Python's limit); replacing one record of [1, 2, 3] moves the median by 1 at most
    u = np.arange(1000.0)
    got = sens.empirical_local("median", [1.0, 2.0, 3.0], u, relation="bounded")
    assert got == sens.local("median", [1.0, 2.0, 3.0], relation="bounded", bounds=(0, 999)) == 1
