"""Vector-valued queries: L1 and L2 sensitivities, and L2 <= L1 (far smaller for long vectors)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpkit import ParameterError, queries
from dpkit import sensitivity as sens

BINS = [0, 10, 20, 30]
UNIVERSE = [5, 5, 15, 15, 25, 25]


@pytest.mark.parametrize(
    ("relation", "norm", "expected"),
    [
        ("unbounded", "l1", 1.0),
        ("unbounded", "l2", 1.0),
        ("bounded", "l1", 2.0),
        ("bounded", "l2", math.sqrt(2)),
    ],
)
def test_histogram_global_matches_brute_force(relation: str, norm: str, expected: float) -> None:
    h = queries.histogram(BINS)
    assert sens.global_sensitivity(h, relation=relation, norm=norm) == pytest.approx(expected)
    brute = sens.empirical_global(h, UNIVERSE, 3, relation=relation, norm=norm)
    assert brute == pytest.approx(expected)


@pytest.mark.parametrize("relation", ["bounded", "unbounded"])
@pytest.mark.parametrize("norm", ["l1", "l2"])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_histogram_local_matches_brute_force(relation: str, norm: str, k: int) -> None:
    # bin representatives 5, 15, 25 with k spare copies each: every move the exact algorithm
    # counts is available in the universe
    h = queries.histogram(BINS)
    for x in ([5.0], [5.0, 5.0, 15.0], [25.0, 25.0, 25.0], [5.0, 15.0, 25.0]):
        uni = x + [5.0, 15.0, 25.0] * k
        exact = sens.local(h, x, distance=k, relation=relation, norm=norm)
        brute = sens.empirical_local(h, x, uni, distance=k, relation=relation, norm=norm)
        assert exact == pytest.approx(brute), (x, k)


@pytest.mark.parametrize("d", [1, 4, 16])
def test_l2_at_most_l1_and_far_smaller_for_long_vectors(d: int) -> None:
    # Threshold counts: f(x)_j = #{x_i >= j} for j = 1..d. One added record in [d, d+1)
    # raises all d counts by one: L1 = d but L2 = sqrt(d).
    def thresholds(x: np.ndarray) -> np.ndarray:
        return (x[:, None] >= np.arange(1, d + 1)[None, :]).sum(axis=0).astype(float)

    q = queries.custom(thresholds, name="thresholds", min_size=0, vector=True)
    uni = [0.0, float(d), float(d)]
    l1 = sens.empirical_global(q, uni, 1, relation="unbounded", norm="l1")
    l2 = sens.empirical_global(q, uni, 1, relation="unbounded", norm="l2")
    assert l1 == pytest.approx(d)
    assert l2 == pytest.approx(math.sqrt(d))
    assert l2 <= l1


def test_vector_needs_norm() -> None:
    with pytest.raises(ParameterError, match="`norm` \\('l1' or 'l2'\\) is required"):
        sens.local(queries.histogram(BINS), [5.0], relation="bounded")
    with pytest.raises(ParameterError, match="`norm` must be 'l1' or 'l2'"):
        sens.local(queries.histogram(BINS), [5.0], relation="bounded", norm="linf")
    with pytest.raises(ParameterError, match="outside"):
        sens.local(queries.histogram(BINS), [45.0], relation="bounded", norm="l1")
