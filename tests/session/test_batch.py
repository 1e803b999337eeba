"""The audit's batched path (dpkit.session.batch.QuerySampler) is the release's own code.

One sampled release with a seed equals the release with that seed (the same bits consumed
in the same order); many sampled releases follow the stated laws; a pool of salts gives each
release its own salt; the sampler validates like a release and spends nothing.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import polars as pl
import pytest
from scipy import stats

import dpkit as dp
from dpkit.session.batch import QuerySampler, salt_pool
from dpkit.statistics import quantiles_from_counts
from dpkit.statistics.sampling import quantiles_from_counts_samples


def _people(n: int = 300, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    return pl.DataFrame(
        {
            "id": rng.integers(0, 60, n),
            "g": rng.choice(list("abcdef"), n),
            "x": rng.normal(50, 20, n),
            "k": rng.integers(0, 100, n),
        }
    )


def _duckdb(df: pl.DataFrame) -> Any:
    import duckdb

    return duckdb.connect().from_arrow(df.to_arrow())


QUERIES = {
    "count+mean, private keys": (
        lambda q: q.group_by("g").agg(dp.count(), dp.mean("x", bounds=(0, 100))),
        {"epsilon": 1.0, "delta": 1e-6},
    ),
    "count+sum, private keys, laplace": (
        lambda q: q.group_by("g").agg(dp.count(), dp.sum("x", bounds=(0, 100))),
        {"epsilon": 1.0, "delta": 1e-6, "noise": "laplace"},
    ),
    "var, public keys with an empty one": (
        lambda q: q.group_by("g", keys=list("abcz")).agg(dp.var("x", bounds=(0, 100))),
        {"epsilon": 1.0},
    ),
    "count and median": (
        lambda q: q.agg(dp.count(), dp.median("k", bounds=(0, 100))),
        {"epsilon": 1.0},
    ),
    "two quantiles": (
        lambda q: q.agg(dp.quantile("x", [0.25, 0.75], bounds=(0, 100))),
        {"epsilon": 1.0},
    ),
    "three quantiles of an integer column, and JointExp": (
        lambda q: q.agg(
            dp.quantile("k", [0.1, 0.5, 0.9], bounds=(0, 100)),
            dp.quantile("x", [0.25, 0.75], bounds=(0, 100), method="joint"),
        ),
        {"epsilon": 1.0},
    ),
    "histogram": (
        lambda q: q.group_by("g", keys=list("abc")).agg(dp.histogram("x", bins=[0, 50, 100])),
        {"epsilon": 1.0},
    ),
}


@pytest.mark.parametrize("engine", ["polars", "duckdb"])
@pytest.mark.parametrize("name", list(QUERIES))
def test_one_sampled_release_is_the_release_of_the_same_seed(name: str, engine: str) -> None:
    df = _people()
    data = df if engine == "polars" else _duckdb(df)
    s = dp.Session(
        data,
        privacy_unit="id",
        max_rows_per_unit=3,
        max_groups_per_unit=2,
        budget=dp.ApproxDP(1e6, 0.5),
    )
    build, kw = QUERIES[name]
    q = build(s.query())
    for seed in range(3):
        released = q.release(rng=seed, **kw)
        sampled = QuerySampler(q, **kw).sample(1, rng=seed)
        assert sampled["draw"].to_list() == [0] * released.height
        sampled = sampled.drop("draw")
        # batched quantiles draw their values only (intervals NaN); every other column agrees
        quantile_intervals = [
            c for c in released.columns if c.endswith(("_low", "_high")) and "_count" not in c
        ]
        if "median" in name or "quantiles" in name:
            sampled = sampled.drop(quantile_intervals)
            released = released.drop(quantile_intervals)
        assert released.equals(sampled), (released, sampled)
    assert s.accountant.history[-1].label.startswith("Session query")
    assert len(s.accountant.history) == 3  # the sampler charged nothing


def test_sampled_counts_follow_the_stated_discrete_laplace() -> None:
    """120 rows, no privacy unit: the count is 120 in every release and the noise is the
    discrete Laplace P[Z = z] ~ exp(-|z| / t), t = 1 / epsilon. Chi-square over ~30 cells of
    20,000 sampled releases at the 0.1% level; the same test rejects t 10% off (p < 1e-6)."""
    df = _people(120)
    s = dp.Session(df, budget=dp.PureDP(1.0))
    eps = 0.5
    frame = QuerySampler(s.query().agg(dp.count()), epsilon=eps).sample(20_000, rng=11)
    noise = frame["count"].to_numpy() - 120
    assert frame["draw"].to_list() == list(range(20_000))

    def pvalue(t: float) -> float:
        q = math.exp(-1 / t)
        edges = np.arange(-12, 13)
        cdf = np.where(edges >= 0, 1 - q ** (edges + 1) / (1 + q), q ** (-edges) / (1 + q))
        probs = np.diff(np.concatenate([[0.0], cdf, [1.0]]))
        obs = np.bincount(np.searchsorted(edges, noise, side="left"), minlength=edges.size + 1)
        chi2 = float(((obs - probs * noise.size) ** 2 / (probs * noise.size)).sum())
        return float(stats.chi2.sf(chi2, df=edges.size))

    assert pvalue(1 / eps) > 1e-3
    assert pvalue(1.1 / eps) < 1e-6 and pvalue(0.9 / eps) < 1e-6


def test_sampled_key_selection_follows_the_threshold_law() -> None:
    """Private keys, Laplace thresholding: a group of c distinct persons is released when
    c + Z >= tau, Z the discrete Laplace of the selection count (P[Z = z] ~ q**|z|,
    q = exp(-1/t)), so with probability P[Z >= j] = q**j / (1 + q) for j = tau - c >= 0.
    Over 40,000 sampled releases the frequency is within 4 standard errors of it, for a
    group at the threshold (tau = 8 at epsilon 1, delta 1e-3) and one far below."""
    near, far = 8, 3
    ids = list(range(near)) + [100 + i for i in range(far)]
    df = pl.DataFrame({"id": ids, "g": ["near"] * near + ["far"] * far})
    s = dp.Session(df, privacy_unit="id", max_rows_per_unit=1, budget=dp.ApproxDP(1.0, 0.5))
    q = s.query().group_by("g").agg(dp.count())
    smp = QuerySampler(q, epsilon=1.0, delta=1e-3, noise="laplace")
    sel = smp.plan.selection
    assert sel is not None and sel.reuse == "count"  # one row per unit: the count selects
    n = 40_000
    frame = smp.sample(n, rng=5)
    q = math.exp(-1 / float(sel.noise.scale))
    for group, c in (("near", near), ("far", far)):
        p = q ** (sel.threshold - c) / (1 + q)
        seen = frame.filter(pl.col("g") == group).height / n
        assert abs(seen - p) <= 4 * math.sqrt(p * (1 - p) / n) + 1e-6, (group, seen, p)
    assert sel.threshold == near  # the near group sits at the threshold (p = 0.73)


def test_a_pool_of_salts_gives_each_release_its_own_salt() -> None:
    """Person 1 has two rows, x = 0 and x = 100, and keeps one (max_rows_per_unit=1): the
    salt decides which. At epsilon 1e9 the noise scale is the floor, 1/64 lattice unit, so the
    noise is 0 except with probability about 2 exp(-64): each sampled sum shows its salt's
    choice. A pool of salts with both choices: each
    release takes a pool salt uniformly (frequency of x = 100 within 4 standard errors of
    its pool share), in random order (both halves of the draws see both choices)."""
    df = pl.DataFrame({"id": [1, 1], "x": [0.0, 100.0]})
    s = dp.Session(df, privacy_unit="id", max_rows_per_unit=1, budget=dp.PureDP(1.0))
    smp = QuerySampler(s.query().agg(dp.sum("x", bounds=(0, 100))), epsilon=1e9)
    pool = salt_pool(16, rng=3)
    keeps = [float(smp.sample(1, rng=0, salts=[salt])["x_sum"][0]) for salt in pool]
    assert set(keeps) == {0.0, 100.0}
    share = keeps.count(100.0) / len(pool)
    n = 20_000
    sums = smp.sample(n, rng=4, salts=pool)["x_sum"].to_numpy()
    assert set(np.unique(sums)) == {0.0, 100.0}
    seen = float(np.mean(sums == 100.0))
    assert abs(seen - share) <= 4 * math.sqrt(share * (1 - share) / n)
    assert 0 < np.mean(sums[: n // 2] == 100.0) < 1 and 0 < np.mean(sums[n // 2 :] == 100.0) < 1


def test_the_sampler_validates_like_a_release_and_spends_nothing() -> None:
    df = _people(50)
    s = dp.Session(df, privacy_unit="id", max_rows_per_unit=2, budget=dp.PureDP(1.0))
    q = s.query().group_by("g").agg(dp.count())
    with pytest.raises(dp.ParameterError, match="delta = 0"):
        QuerySampler(q, epsilon=1.0)  # private keys under pure DP: refused as by release
    with pytest.raises(dp.ParameterError, match="epsilon"):
        QuerySampler(q, epsilon=-1.0, delta=1e-6)
    smp = QuerySampler(q, epsilon=5.0, delta=1e-6)  # more than the budget: never charged
    assert smp.privacy == dp.ApproxDP(5.0, 1e-6)
    smp.sample(10, rng=1)
    assert len(s.accountant.history) == 0
    with pytest.raises(TypeError, match="size"):
        smp.sample(0)
    with pytest.raises(dp.ParameterError, match="salt"):
        smp.sample(5, salts=[(1, 2, 3)])
    empty = dp.Session(df.head(0), budget=dp.PureDP(1.0))  # noise alone, like a release
    draws = QuerySampler(empty.query().agg(dp.count()), epsilon=1.0).sample(5, rng=1)
    assert draws.height == 5 and len(empty.accountant.history) == 0


@pytest.mark.parametrize(
    ("levels", "support", "method"),
    [
        (0.5, 1.0, "auto"),
        (0.5, "auto", "auto"),
        ([0.1, 0.5, 0.9], "auto", "auto"),
        ([0.1, 0.5, 0.9], 1.0, "auto"),  # the noisy-histogram method ("cdf")
        (0.5, 1.0, "cdf"),
        ([0.1, 0.5, 0.9], "auto", "joint"),
        (0.5, "auto", "joint"),
        ([0.1, 0.5, 0.9], "auto", "independent"),
    ],
)
def test_quantile_samples_are_the_release_values_of_the_same_seed(
    levels: Any, support: Any, method: str
) -> None:
    points = np.array([3.0, 10.0, 17.0, 40.0, 41.0, 90.0])
    counts = np.array([5, 0, 12, 7, 1, 30])
    kw = {"epsilon": 0.7, "bounds": (0, 100), "support": support, "method": method}
    for seed in range(20):
        rel = quantiles_from_counts(points, counts, levels, rng=seed, **kw)
        got = quantiles_from_counts_samples(points, counts, levels, size=1, rng=seed, **kw)
        np.testing.assert_array_equal(got[0], np.atleast_1d(rel.values))
    many = quantiles_from_counts_samples(points, counts, levels, size=500, rng=1, **kw)
    assert many.shape == (500, np.atleast_1d(levels).size)
    assert np.all(np.diff(many, axis=1) >= 0) and len(np.unique(many[:, 0])) > 1
