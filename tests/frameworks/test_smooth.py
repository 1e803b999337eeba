"""Smooth-sensitivity release: S against the toolkit and brute force, noise laws, privacy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import dpkit
from dpkit import sensitivity as sens
from dpkit.frameworks import (
    smooth_noise_parameters,
    smooth_sensitivity_release,
    smooth_upper_bound,
)
from dpkit.frameworks.smooth import smooth_sensitivity_sample


def test_smooth_sensitivity_equals_the_toolkit_and_a_brute_force_median() -> None:
    rng = np.random.default_rng(0)
    for _ in range(15):
        x = np.sort(rng.integers(0, 20, int(rng.integers(3, 25))).astype(float))
        beta = float(rng.choice([0.05, 0.3, 1.0]))
        for rel in ("bounded", "unbounded"):
            got, _, exact = smooth_upper_bound("median", x, beta, rel, 0.0, 20.0, exact_k=128)
            want = sens.smooth("median", x, beta=beta, relation=rel, bounds=(0, 20))
            assert exact and got == pytest.approx(want.sensitivity)
        if x.size % 2 == 1:
            # NRS07 closed form for the odd-size median under replacement, x_i = bound outside
            n, m = x.size, x.size // 2

            def pad(i: int, x: np.ndarray = x, n: int = n) -> float:
                return 0.0 if i < 0 else (20.0 if i >= n else float(x[i]))

            brute = max(
                math.exp(-beta * k) * max(pad(m + t) - pad(m + t - k - 1) for t in range(k + 2))
                for k in range(n + 2)
            )
            got, _, _ = smooth_upper_bound("median", x, beta, "bounded", 0.0, 20.0)
            assert got == pytest.approx(brute)


def test_envelope_beyond_the_exact_range_is_still_an_upper_bound() -> None:
    x = np.repeat(np.arange(10.0), 30)
    exact = sens.smooth("median", x, beta=0.05, relation="unbounded", bounds=(0, 10))
    capped, _, _ = smooth_upper_bound("median", x, 0.05, "unbounded", 0.0, 10.0, exact_k=3)
    assert capped >= exact.sensitivity


def test_release_details_and_privacy() -> None:
    x = np.random.default_rng(1).normal(50, 5, 501)
    rel = smooth_sensitivity_release(x, "median", epsilon=1.0, delta=1e-6, bounds=(0, 100), rng=0)
    assert rel.diagnostics["exact"]
    capped = smooth_sensitivity_release(
        x, "median", epsilon=1.0, delta=1e-6, bounds=(0, 100), exact_k=2
    )
    assert capped.diagnostics["smooth_sensitivity"] >= rel.diagnostics["smooth_sensitivity"]
    beta, mult = smooth_noise_parameters("laplace", 1.0, 1e-6)
    s = sens.smooth("median", x, beta=beta, relation="unbounded", bounds=(0, 100)).sensitivity
    assert rel.details["beta"] == beta
    assert rel.diagnostics["smooth_sensitivity"] == pytest.approx(s)
    assert rel.scale is None  # data-dependent: reported only as a diagnostic
    assert rel.diagnostics["scale"] == pytest.approx(mult * s, rel=1e-6)
    assert rel.privacy == dpkit.ApproxDP(1.0, 1e-6)
    c = smooth_sensitivity_release(x, "median", epsilon=1.0, bounds=(0, 100), noise="cauchy", rng=0)
    assert c.privacy == dpkit.PureDP(1.0) and c.details["beta"] == pytest.approx(1 / 6)


@pytest.mark.parametrize(
    ("noise", "delta", "dist"),
    [
        ("laplace", 1e-6, stats.laplace),
        ("cauchy", 0.0, stats.cauchy),
        ("student_t", 0.0, stats.t(3)),
    ],
)
def test_noise_follows_its_law_with_the_stated_scale(noise, delta, dist) -> None:
    x = np.arange(1.0, 102.0)  # median 51, smooth sensitivity about 1
    p = smooth_sensitivity_release(
        x, "median", epsilon=1.0, delta=delta, bounds=(0, 200), noise=noise, rng=0
    )
    n = 400 if noise != "laplace" else 3000
    vals = smooth_sensitivity_sample(
        x, "median", epsilon=1.0, delta=delta, bounds=(0, 200), noise=noise, size=n, rng=1
    )
    z = (vals - 51.0) / p.diagnostics["scale"]
    # KS at level 1e-3; a scale wrong by 30% fails at these sizes
    assert stats.kstest(z, dist.cdf).pvalue > 1e-3


def test_student_t_and_cauchy_parameters_are_admissible_numerically() -> None:
    # Bun-Steinke: D_inf(T_d || e^t T_d + s) <= |t|(d+1) + |s|(d+1)/(2 sqrt d). With our
    # beta and multiplier a neighbour shifts the noise by at most 1/mult in noise units and
    # dilates it by e^beta: the worst log density ratio must stay <= epsilon.
    z = np.linspace(-400, 400, 400_001)
    for noise, dist in (("student_t", stats.t(3)), ("cauchy", stats.cauchy)):
        eps = 1.0
        beta, mult = smooth_noise_parameters(noise, eps)
        shift = 1 / mult
        worst = 0.0
        for t in (-beta, 0.0, beta):
            for sgn in (-1, 1):
                other = dist.logpdf((z - sgn * shift) / math.exp(t)) - t
                worst = max(worst, float(np.max(np.abs(dist.logpdf(z) - other))))
        assert worst <= eps
        assert worst > eps / 8  # the check can fail: it is not vacuous


def test_laplace_parameters_match_the_book() -> None:
    beta, mult = smooth_noise_parameters("laplace", 1.0, 1e-8)
    assert beta == pytest.approx(1 / (2 * math.log(2 / 1e-8)))
    assert mult == 2.0


def test_accountant_is_charged_before_noise() -> None:
    spends = []

    class Fake:
        def spend(self, cost, *, label, relation="unbounded"):
            spends.append((cost, label))

    smooth_sensitivity_release(
        [1.0, 2.0, 3.0], "mean", epsilon=1.0, delta=1e-5, bounds=(0, 10), rng=0, accountant=Fake()
    )
    assert spends == [(dpkit.ApproxDP(1.0, 1e-5), "smooth_sensitivity_release")]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"delta": 0.0}, "delta"),
        ({"delta": 1.0}, "delta"),
        ({"noise": "cauchy", "delta": 1e-6}, "delta=0"),
        ({"noise": "gaussian"}, "noise"),
        ({"epsilon": -1.0}, "epsilon"),
        ({"data": [1.0, float("inf")]}, "NaN"),
        ({"bounds": (3, 3)}, "lower < upper"),
        ({"df": 0, "noise": "student_t", "delta": 0.0}, "df"),
    ],
)
def test_bad_input_gets_a_clear_error(kwargs: dict, match: str) -> None:
    args = {
        "data": [1.0, 2.0, 3.0],
        "query": "median",
        "epsilon": 1.0,
        "delta": 1e-6,
        "bounds": (0, 10),
    }
    args.update(kwargs)
    with pytest.raises(dpkit.ParameterError, match=match):
        smooth_sensitivity_release(**args)
