"""The audit suite: every dpkit mechanism, framework and Session query kind passes its audit
on worst-case neighbours (fixed seeds, 95% confidence: a correct mechanism is flagged with
probability at most 5% per case, and the seeds are fixed so the run is reproducible)."""

from __future__ import annotations

import numpy as np
import pytest

import dpkit as dp
from dpkit.audit import targets

# (target, parameters, draws per input): the heavy-tailed exact samplers and the per-draw
# median aggregator are slow, so they get fewer draws (their resolution is coarser)
SUITE = [
    ("laplace", {}, 50_000),
    ("laplace", {"epsilon": 0.5, "sensitivity": 3.0}, 50_000),
    ("gaussian", {}, 50_000),
    ("gaussian", {"epsilon": 0.5, "calibration": "classic"}, 50_000),
    ("geometric", {}, 50_000),
    ("discrete_gaussian", {}, 50_000),
    ("exponential", {}, 20_000),
    ("report_noisy_max", {}, 50_000),
    ("permute_and_flip", {}, 50_000),
    ("ptr", {}, 50_000),
    ("ptr", {"query": "mean", "proposed_bound": 0.2, "n": 60}, 20_000),
    ("smooth", {}, 50_000),
    ("smooth", {"noise": "cauchy", "delta": 0.0}, 1_500),
    ("smooth", {"noise": "student_t", "delta": 0.0}, 1_500),
    ("smooth", {"query": "mean", "n": 40}, 50_000),
    ("sample_and_aggregate", {}, 50_000),
    ("sample_and_aggregate", {"aggregator": "median", "chunks": 5}, 1_000),
    ("inverse_sensitivity", {}, 50_000),
    ("inverse_sensitivity", {"query": "percentile", "percentile": 25.0}, 50_000),
    ("inverse_sensitivity", {"query": "mean"}, 50_000),
    # the Session's queries on worst-case tables (dpkit.audit.session_query): one bounding salt, or
    # a pool of 16 salts drawn uniformly per release; Polars, DuckDB and pandas
    ("session_count", {}, 50_000),
    ("session_count", {"salts": 16, "engine": "duckdb"}, 20_000),
    ("session_sum", {}, 50_000),
    ("session_mean", {}, 50_000),
    ("session_quantile", {}, 20_000),
    ("session_group_by", {"salts": 16}, 50_000),
    ("session_group_by", {"noise": "gaussian", "engine": "pandas"}, 20_000),
    # under zCDP (tested at delta 0.3) and (epsilon, delta) with Gaussian noise; the
    # quartiles' ApproximateQuantiles draws one release at a time, so fewer draws
    ("session_gaussian", {}, 20_000),
    ("session_quantile_cdf", {}, 50_000),
    ("session_quantile_em", {}, 3_000),
    ("session_several", {}, 50_000),
]

CASES = [
    pytest.param(case, n, id=case.name)
    for name, params, n in SUITE
    for case in targets.cases(name, **params)
]


@pytest.mark.parametrize(("case", "n"), CASES)
def test_every_mechanism_and_framework_passes_its_audit(case: targets.AuditCase, n: int):
    res = case.run(samples=n, rng=20260101, time_budget=120, progress=False)
    assert res.verdict == "pass", res
    assert res.samples == n and not res.time_limited
    if res.lattice is not None:
        assert res.lattice.consistent, res.lattice


def test_the_suite_covers_every_target():
    assert {name for name, _p, _n in SUITE} == set(targets.TARGETS)


def test_the_audit_resolves_laplace_epsilon():
    # Laplace at epsilon 1 on neighbours a sensitivity apart has privacy loss exactly 1 on the
    # tail events: with 50,000 draws per input the 95% lower bound lands within 0.2 of it
    # (the log-ratio's standard error is 0.02 to 0.1 on the tail events the selection half
    # may pick) and the plug-in estimate within 0.1 of 1.
    res = targets.cases("laplace")[0].run(samples=50_000, rng=7, progress=False)
    assert 0.8 < res.epsilon_lower_bound <= 1.0
    assert abs(res.epsilon_estimate - 1.0) < 0.1


@pytest.mark.parametrize(
    "mech",
    [dp.Laplace(1.0), dp.Gaussian(1.0, 1e-5), dp.Geometric(1.0), dp.DiscreteGaussian(1.0, 1e-5)],
    ids=lambda m: type(m).__name__,
)
def test_sample_draws_what_release_draws(mech):
    # the audit samples through `sample`; a release with the same seed must give the same
    # value, so a change to one path that the other lacks is caught here
    x = 3 if isinstance(mech, dp.Geometric | dp.DiscreteGaussian) else 3.25
    for seed in range(5):
        assert mech.release(x, rng=seed) == mech.sample(x, 1, rng=seed)[0]
    vec = np.array([1, 2, 3]) if isinstance(x, int) else np.array([1.5, 2.0, 3.0])
    np.testing.assert_array_equal(mech.release(vec, rng=9), mech.sample(vec, 1, rng=9)[0])


@pytest.mark.parametrize("cls", [dp.Exponential, dp.ReportNoisyMax, dp.PermuteAndFlip])
def test_selection_sample_draws_what_select_draws(cls):
    mech = cls(epsilon=1.0)
    cands, scores = ["a", "b", "c"], [0.0, 0.5, 1.0]
    for seed in range(5):
        assert (
            mech.select(cands, scores, rng=seed)
            == cands[mech.sample(cands, scores, 1, rng=seed)[0]]
        )


def test_framework_samples_draw_what_releases_draw():
    from dpkit.frameworks.ptr import propose_test_release_sample
    from dpkit.frameworks.sample_aggregate import sample_and_aggregate_sample

    ages = np.arange(20.0, 70.0).repeat(100)
    kw = {"epsilon": 2.0, "delta": 1e-6, "bounds": (0, 100)}
    for seed in range(3):
        rel = dp.propose_test_release(ages, "mean", 0.05, rng=seed, **kw)
        one = propose_test_release_sample(ages, "mean", 0.05, size=1, rng=seed, **kw)
        assert rel.value == one[0]
        kw2 = {"chunks": 10, "output_bounds": (0, 100), "epsilon": 1.0}
        rel2 = dp.sample_and_aggregate(ages, "mean", rng=seed, **kw2)
        assert rel2.value == sample_and_aggregate_sample(ages, "mean", size=1, rng=seed, **kw2)[0]
