"""Sample-and-aggregate: exact chunk count, uniform partition, noise scale, errors."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from scipy import stats

import dpkit
from dpkit.frameworks import chunk_outputs, sample_and_aggregate


@pytest.mark.parametrize(("n", "chunks"), [(10, 3), (32561, 600), (7, 7), (5, 1), (601, 600)])
def test_uses_exactly_chunks_parts_covering_every_record_once(n: int, chunks: int) -> None:
    seen: list[np.ndarray] = []

    def record(part: np.ndarray) -> float:
        seen.append(part.copy())
        return float(part.size)

    rel = sample_and_aggregate(
        np.arange(n, dtype=float),
        record,
        chunks=chunks,
        output_bounds=(0, n),
        epsilon=1.0,
        rng=0,
    )
    assert len(seen) == chunks
    assert rel.details["chunks"] == chunks
    allrec = np.sort(np.concatenate(seen))
    assert np.array_equal(allrec, np.arange(n, dtype=float))
    sizes = sorted(p.size for p in seen)
    assert sizes[-1] - sizes[0] <= 1 and sizes[0] >= 1
    assert rel.details["chunk_sizes"] == (sizes[0], sizes[-1])
    # the noise is calibrated to the parts actually used
    assert rel.details["sensitivity"] == pytest.approx(n / chunks)


def test_partition_is_uniformly_random() -> None:
    # 4 records into 2 parts of 2: three pairings, each with probability 1/3
    counts: Counter[frozenset] = Counter()
    for seed in range(1500):
        parts: list[frozenset] = []

        def grab(part: np.ndarray, parts: list = parts) -> float:
            parts.append(frozenset(part.tolist()))
            return 0.0

        chunk_outputs(np.arange(4.0), grab, chunks=2, output_bounds=(0, 1), rng=seed)
        counts[frozenset(parts)] += 1
    obs = np.array(list(counts.values()))
    assert len(counts) == 3
    # chi-square, 2 dof, level 1e-3
    assert stats.chisquare(obs).pvalue > 1e-3


def test_fast_string_path_equals_callable_path() -> None:
    x = np.random.default_rng(0).normal(40, 10, 1003)
    a, _ = chunk_outputs(x, "mean", chunks=17, output_bounds=(20, 60), rng=5)
    b, _ = chunk_outputs(x, np.mean, chunks=17, output_bounds=(20, 60), rng=5)
    assert np.allclose(np.sort(a), np.sort(b))
    c, _ = chunk_outputs(x, "median", chunks=17, output_bounds=(20, 60), rng=5)
    d, _ = chunk_outputs(x, np.median, chunks=17, output_bounds=(20, 60), rng=5)
    assert np.allclose(np.sort(c), np.sort(d))


def test_outputs_are_clipped_and_nonfinite_outputs_neutralised() -> None:
    outs, bad = chunk_outputs(
        np.arange(10.0),
        lambda p: np.nan if p.min() == 0 else 1e9,
        chunks=5,
        output_bounds=(0, 10),
        rng=0,
    )
    assert bad == 1
    assert sorted(outs.tolist()) == [5.0, 10.0, 10.0, 10.0, 10.0]


def test_noise_is_laplace_with_scale_range_over_chunks() -> None:
    # all parts give the same output, so the release is that value plus the noise alone
    x = np.full(200, 3.0)
    vals = np.array(
        [
            sample_and_aggregate(
                x, np.mean, chunks=20, output_bounds=(0, 10), epsilon=0.5, rng=s
            ).value
            for s in range(400)
        ]
    )
    scale = (10 / 20) / 0.5
    # KS against Laplace(3, scale) at level 1e-3; a scale off by 25% fails at n = 400
    assert stats.kstest(vals, "laplace", args=(3.0, scale)).pvalue > 1e-3
    rel = sample_and_aggregate(x, np.mean, chunks=20, output_bounds=(0, 10), epsilon=0.5)
    assert rel.scale == pytest.approx(scale, rel=1e-8)
    assert rel.privacy == dpkit.PureDP(0.5)


def test_neighbouring_datasets_privacy_loss_within_epsilon() -> None:
    # x and x' differ in one record whose part output moves from 0 to 10; with 5 parts the
    # noisy mean shifts by 2 = sensitivity. Histogram bins with mass >= 0.05 over 1200 draws
    # have log-ratio standard error <= sqrt(2 / 60) = 0.18; allow 3 of them.
    eps = 1.0
    x = np.zeros(5)
    y = x.copy()
    y[0] = 10.0
    a = [
        sample_and_aggregate(x, np.mean, chunks=5, output_bounds=(0, 10), epsilon=eps, rng=s).value
        for s in range(1200)
    ]
    b = [
        sample_and_aggregate(
            y, np.mean, chunks=5, output_bounds=(0, 10), epsilon=eps, rng=10_000 + s
        ).value
        for s in range(1200)
    ]
    edges = np.linspace(-4, 6, 11)
    ha = np.histogram(a, edges)[0] / 1200
    hb = np.histogram(b, edges)[0] / 1200
    keep = (ha >= 0.05) & (hb >= 0.05)
    assert keep.sum() >= 3
    assert np.abs(np.log(ha[keep] / hb[keep])).max() <= eps + 3 * math.sqrt(2 / 60)
    # and the shift is visible: the test would catch a mechanism that ignores the data
    assert abs(np.mean(b) - np.mean(a) - 2.0) < 0.3


def test_median_aggregator_and_accountant() -> None:
    spends = []

    class Fake:
        def spend(self, cost, *, label, relation="unbounded"):
            spends.append((cost, label))

    x = np.random.default_rng(1).normal(50, 5, 2000)
    rel = sample_and_aggregate(
        x,
        np.mean,
        chunks=100,
        output_bounds=(0, 100),
        epsilon=1.0,
        aggregator="median",
        rng=3,
        accountant=Fake(),
    )
    assert spends == [(dpkit.PureDP(1.0), "sample_and_aggregate")]
    assert abs(rel.value - 50) < 3


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"chunks": 11}, dpkit.ParameterError, "chunks"),
        ({"chunks": 0}, dpkit.ParameterError, "chunks"),
        ({"chunks": 2.5}, TypeError, "chunks"),
        ({"output_bounds": (80, 20)}, dpkit.ParameterError, "lower < upper"),
        ({"output_bounds": None}, dpkit.ParameterError, "output_bounds"),
        ({"epsilon": -1}, dpkit.ParameterError, "epsilon"),
        ({"data": [1.0, np.nan] * 5}, dpkit.ParameterError, "NaN"),
        ({"data": []}, dpkit.ParameterError, "empty"),
        ({"aggregator": "sum"}, dpkit.ParameterError, "aggregator"),
        ({"func": 3}, TypeError, "callable"),
    ],
)
def test_bad_input_gets_a_clear_error(kwargs: dict, exc: type, match: str) -> None:
    args = {
        "data": np.arange(10.0),
        "func": np.mean,
        "chunks": 2,
        "output_bounds": (0, 10),
        "epsilon": 1.0,
    }
    args.update(kwargs)
    with pytest.raises(exc, match=match):
        sample_and_aggregate(**args)
