"""The frameworks clamp a release to its statistic's public range, and say so.

A release outside the range every value of the statistic can take (known from public
parameters alone) is moved to the range's nearest end: post-processing, never farther from
the true value. The range must be public: the same on neighbouring datasets, never read
from the data (a clamp to the data's own minimum and maximum would leak them).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import dpkit as dp
from dpkit.frameworks._range import clamp_to_range, public_range
from dpkit.frameworks.ptr import propose_test_release_sample
from dpkit.frameworks.sample_aggregate import sample_and_aggregate_sample
from dpkit.frameworks.smooth import smooth_sensitivity_sample


def test_public_range_of_each_statistic() -> None:
    assert public_range("mean", 0.0, 100.0, 7, "unbounded") == (0.0, 100.0)
    assert public_range("percentile", -5.0, 5.0, 7, "bounded") == (-5.0, 5.0)
    assert public_range("var", 0.0, 100.0, 7, "unbounded") == (0.0, pytest.approx(2500.0))
    assert public_range("std", 0.0, 100.0, 7, "unbounded") == (0.0, pytest.approx(50.0))
    # counts and sums: n is public only for replace-one neighbours
    assert public_range("count", 0.0, 100.0, 7, "unbounded") == (0.0, math.inf)
    assert public_range("count", 0.0, 100.0, 7, "bounded") == (7.0, 7.0)
    assert public_range("sum", 0.0, 100.0, 7, "unbounded") == (0.0, math.inf)
    assert public_range("sum", -3.0, 100.0, 7, "unbounded") == (-math.inf, math.inf)
    assert public_range("sum", -3.0, -1.0, 7, "unbounded") == (-math.inf, 0.0)
    assert public_range("sum", -3.0, 100.0, 7, "bounded") == (-21.0, 700.0)


@pytest.mark.parametrize("kind", ["mean", "percentile", "var", "std", "count", "sum"])
@pytest.mark.parametrize("relation", ["bounded", "unbounded"])
def test_every_statistic_lies_in_its_public_range(kind: str, relation: str) -> None:
    # 2,000 seeded datasets of 1 to 30 records clipped to the bounds, extremes included
    rng = np.random.default_rng(5)
    lower, upper = -2.0, 7.0
    fn = {
        "mean": np.mean,
        "percentile": lambda x: np.percentile(x, 30),
        "var": np.var,
        "std": np.std,
        "count": len,
        "sum": np.sum,
    }[kind]
    for _ in range(2000):
        n = int(rng.integers(1, 31))
        x = np.clip(rng.choice([lower, upper, *rng.uniform(-5, 10, 3)], n), lower, upper)
        lo, hi = public_range(kind, lower, upper, n, relation)
        assert lo <= fn(x) <= hi


def test_clamp_reports_where_it_acted_and_keeps_refusals() -> None:
    out, moved = clamp_to_range(np.array([-1.0, 3.0, 11.0, np.nan]), 0.0, 10.0)
    assert out[:3].tolist() == [0.0, 3.0, 10.0] and math.isnan(out[3])
    assert moved.tolist() == [True, False, True, False]


def test_smooth_release_stays_in_the_bounds_and_says_so() -> None:
    # the median of 50 values in [0, 100] at epsilon 0.1 with Cauchy noise: unclamped, the
    # draws spread far past the bounds (the noise scale is about 6 S / 0.1); clamped, every
    # release is in [0, 100] and `clamped` marks the ones moved to an end
    x = np.clip(np.random.default_rng(0).normal(50, 30, 50), 0, 100)
    args = dict(epsilon=0.1, bounds=(0, 100), noise="cauchy")
    raw = smooth_sensitivity_sample(x, "median", size=400, rng=1, clamp=False, **args)
    assert (raw < 0).sum() > 20 and (raw > 100).sum() > 20
    rels = [dp.smooth_sensitivity_release(x, "median", rng=s, **args) for s in range(60)]
    values = np.array([r.value for r in rels])
    assert values.min() >= 0 and values.max() <= 100
    for r in rels:
        assert r.details["range"] == (0.0, 100.0)
        assert r.details["clamped"] == (r.value in (0.0, 100.0))
    # the same draws, clamped by the sample path too
    clamped = smooth_sensitivity_sample(x, "median", size=400, rng=1, **args)
    assert np.array_equal(clamped, np.clip(raw, 0, 100))


def test_smooth_release_range_is_public_not_the_data_range() -> None:
    # data well inside the bounds: the range is still the bounds (a clamp to the data's own
    # span would tell neighbours apart), and the variance's range is [0, (b - a)**2 / 4]
    x = np.linspace(30.0, 60.0, 41)
    rel = dp.smooth_sensitivity_release(x, "median", epsilon=1.0, delta=1e-6, bounds=(0, 100))
    assert rel.details["range"] == (0.0, 100.0)
    var = dp.smooth_sensitivity_release(x, "var", epsilon=0.01, delta=1e-6, bounds=(0, 100))
    assert var.details["range"] == (0.0, pytest.approx(2500.0))
    assert 0.0 <= var.value <= 2500.0
    sums = dp.smooth_sensitivity_release(x, "sum", epsilon=1.0, delta=1e-6, bounds=(0, 100))
    assert sums.details["range"] == (0.0, math.inf)  # n is private under add/remove


def test_ptr_count_is_never_negative() -> None:
    # a count of 3 records with proposed bound 1 at epsilon 0.2: Laplace noise of scale ~10
    # puts many raw releases below 0; clamped, none is, and the flag says which moved
    x = np.array([1.0, 2.0, 3.0])
    args = dict(epsilon=0.2, delta=1e-3, bounds=(0, 10))
    raw = propose_test_release_sample(x, "count", 1.0, size=300, rng=2, clamp=False, **args)
    assert (raw[~np.isnan(raw)] < 0).sum() > 30
    clamped = propose_test_release_sample(x, "count", 1.0, size=300, rng=2, **args)
    assert np.array_equal(clamped, np.clip(raw, 0, None), equal_nan=True)
    rels = [dp.propose_test_release(x, "count", 1.0, rng=s, **args) for s in range(40)]
    for r in rels:
        if not r.refused:
            assert r.value >= 0 and r.details["range"] == (0.0, math.inf)
            assert r.details["clamped"] == (r.value == 0.0)


def test_sample_and_aggregate_mean_stays_in_the_output_bounds() -> None:
    x = np.linspace(0, 10, 20)
    args = dict(chunks=20, output_bounds=(0, 10), epsilon=0.1)
    raw = sample_and_aggregate_sample(x, "mean", size=300, rng=3, clamp=False, **args)
    assert ((raw < 0) | (raw > 10)).sum() > 30
    rel = [dp.sample_and_aggregate(x, "mean", rng=s, **args) for s in range(30)]
    assert all(0 <= r.value <= 10 and r.details["range"] == (0.0, 10.0) for r in rel)
    assert any(r.details["clamped"] for r in rel)


def test_inverse_sensitivity_reports_its_range() -> None:
    rel = dp.inverse_sensitivity(np.arange(10.0), epsilon=1.0, bounds=(0, 100), rng=1)
    assert rel.details["range"] == (0.0, 100.0) and 0 <= rel.value <= 100


@pytest.mark.parametrize(
    "call",
    [
        lambda: dp.smooth_sensitivity_release(
            [1.0], "mean", epsilon=1, delta=1e-6, bounds=(0, 1), clamp=1
        ),
        lambda: dp.propose_test_release(
            [1.0], "mean", 1.0, epsilon=1, delta=1e-6, bounds=(0, 1), clamp="yes"
        ),
        lambda: dp.sample_and_aggregate(
            [1.0, 2.0], "mean", chunks=2, output_bounds=(0, 2), epsilon=1, clamp=None
        ),
    ],
)
def test_clamp_must_be_a_bool(call) -> None:
    with pytest.raises(TypeError, match="`clamp` must be True or False"):
        call()
