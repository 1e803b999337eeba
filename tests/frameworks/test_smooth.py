"""Smooth-sensitivity release: S against the toolkit and brute force, noise laws, privacy."""

from __future__ import annotations

import math
import time
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

import dpkit
import dpkit as dp
from dpkit import sensitivity as sens
from dpkit.frameworks import (
    smooth_noise_parameters,
    smooth_sensitivity_release,
    smooth_upper_bound,
)
from dpkit.frameworks.smooth import smooth_sensitivity_sample
from dpkit.samplers.heavy_tailed import rounded_cauchy, rounded_laplace, rounded_student_t


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


def _nrs_median_smooth(x: np.ndarray, beta: float, lower: float, upper: float) -> float:
    """NRS07 (section 3.1): smooth sensitivity of the median of an odd number of records
    under replace-one neighbours, ``max_k e**(-beta k) max_{0 <= t <= k+1} (x_(m+t) -
    x_(m+t-k-1))`` with ``x_i = lower`` below the data and ``upper`` above; past
    ``k = n + 1`` the spread is ``upper - lower`` and the weight only falls."""
    n, m = x.size, x.size // 2

    def pad(i: int) -> float:
        return lower if i < 0 else (upper if i >= n else float(x[i]))

    return max(
        math.exp(-beta * k) * max(pad(m + t) - pad(m + t - k - 1) for t in range(k + 2))
        for k in range(n + 2)
    )


#: beta and the noise scale per unit of smooth sensitivity, from the module's table
#: (NRS07 Lemmas 2.6, 2.7; Bun and Steinke 2019, section 3.4 with d = 3), written out here
#: so the test does not read them from the code under test
_TABLE = {
    "laplace": lambda eps, delta: (eps / (2 * math.log(2 / delta)), 2 / eps),
    "cauchy": lambda eps, delta: (eps / 6, 6 / eps),
    "student_t": lambda eps, delta: (eps / 8, 4 / (eps * math.sqrt(3))),
}
_SAMPLERS = {
    "laplace": rounded_laplace,
    "cauchy": rounded_cauchy,
    "student_t": lambda ratio, n, rng: rounded_student_t(3, ratio, n, rng),
}


@pytest.mark.parametrize(
    ("noise", "delta", "dist", "n"),
    [
        ("laplace", 1e-6, stats.laplace, 3000),
        ("cauchy", 0.0, stats.cauchy, 600),
        ("student_t", 0.0, stats.t(3), 600),
    ],
)
def test_noise_follows_its_law_with_the_scale_from_the_math(noise, delta, dist, n) -> None:
    # The scale is computed here from the math, never read from the release: beta and the
    # multiplier from the table, the smooth sensitivity S of the median by NRS07's formula,
    # the output grid g = 2**(floor(log2((upper - lower) / eps)) - 30), and the noise scale
    # multiplier * (S + g) (S + g is beta-smooth for the statistic rounded to the grid).
    eps, lower, upper = 1.0, 0.0, 200.0
    x = np.arange(1.0, 102.0)  # median 51
    beta, mult = _TABLE[noise](eps, delta)
    s = _nrs_median_smooth(x, beta, lower, upper)
    g = 2.0 ** (math.floor(math.log2((upper - lower) / eps)) - 30)
    scale = mult * (s + g)
    kwargs = dict(epsilon=eps, delta=delta, bounds=(lower, upper), noise=noise, clamp=False)
    vals = smooth_sensitivity_sample(x, "median", relation="bounded", size=n, rng=1, **kwargs)
    k = vals / g - round(51.0 / g)  # the noise in grid units
    # 1. its law: KS at level 1e-3 against the noise law at the scale above (halving the
    # noise gives a KS distance of 0.15 or more, p < 1e-9 even at 600 draws)
    assert stats.kstest(k * g / scale, dist.cdf).pvalue > 1e-3
    # 2. coupling: the same bits through dpkit's exact rounded sampler at ratio scale / g
    # give the same draws, up to the sampler's documented 2**-40 round-up of the ratio and
    # the last grid step. The draws are ~1e8 grid units, so a relative scale error above
    # 1e-9 (a 10% error, a beta off, the grid charge g dropped: 5e-8) shows in every draw
    want = _SAMPLERS[noise](Fraction(mult) * (Fraction(s) + Fraction(g)) / Fraction(g), n, 1)
    assert np.median(np.abs(want)) > 1e7
    assert np.allclose(k, want, rtol=1e-9, atol=1.0)
    # the release itself draws the same way (one draw per call)
    for seed in range(5):
        rel = smooth_sensitivity_release(x, "median", relation="bounded", rng=seed, **kwargs)
        one = _SAMPLERS[noise](Fraction(mult) * (Fraction(s) + Fraction(g)) / Fraction(g), 1, seed)
        assert rel.value / g - round(51.0 / g) == pytest.approx(float(one[0]), rel=1e-9, abs=1.0)


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
    acct = dpkit.Accountant(dpkit.ApproxDP(10.0, 0.5))
    smooth_sensitivity_release(
        [1.0, 2.0, 3.0], "mean", epsilon=1.0, delta=1e-5, bounds=(0, 10), rng=0, accountant=acct
    )
    assert [(s.cost, s.label) for s in acct.history] == [
        (dpkit.ApproxDP(1.0, 1e-5), "smooth_sensitivity_release")
    ]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"delta": 0.0}, "delta"),
        ({"delta": 1.0}, "delta"),
        ({"noise": "cauchy", "delta": 1e-6}, "`delta`=0"),
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


# D11: the default exact scan of the median took minutes (O(K^3)); the framework finds the same
# smooth sensitivity faster (frameworks.smooth._smooth_percentile: first O(K^2), now a
# branch-and-bound over the distances), and a noise range the sampler cannot draw from is
# refused before any scan.
def _fast_cases() -> list[tuple[np.ndarray, tuple[float, float], float, float]]:
    rng = np.random.default_rng(11)
    cases = []
    for i in range(90):
        n = int(rng.integers(1, 90))
        shape = i % 5
        if shape == 0:
            x, b = rng.integers(0, 12, n).astype(float), (0.0, 12.0)
        elif shape == 1:  # off the lattice of the bounds: the slack is added
            x, b = rng.normal(50, 10, n).clip(0, 100), (0.0, 100.0)
        elif shape == 2:
            x, b = np.linspace(1, 99, n), (0.0, 100.0)
        elif shape == 3:  # long runs of ties
            x, b = np.repeat(rng.integers(0, 5, 4), n // 4 + 1).astype(float), (0.0, 10.0)
        else:
            x, b = rng.exponential(2.0, n).clip(-3, 30), (-3.0, 30.0)
        beta = float(10 ** rng.uniform(-4.5, 0.5))
        q = (0.5, 0.25, 0.75, 0.125, 0.0, 1.0, 0.375, 0.5)[i % 8]
        cases.append((x, b, beta, q))
    return cases


def test_fast_percentile_scan_equals_the_toolkit_exactly() -> None:
    from dpkit.frameworks.smooth import _fast_percentile, _smooth_percentile
    from dpkit.queries import percentile, resolve
    from dpkit.sensitivity import at_distance

    for x, b, beta, level in _fast_cases():
        q = resolve("median" if level == 0.5 else percentile(level * 100))
        assert _fast_percentile(q, "unbounded")
        want = sens.smooth(q, x, beta=beta, relation="unbounded", bounds=b)
        xs, lo, hi = at_distance.prepare("t", q, x, b)
        assert _smooth_percentile(q, xs, beta, lo, hi) == (want.sensitivity, want.k)
        # and through the framework's entry point (the default exact_k=None)
        got = smooth_upper_bound(q, x, beta, "unbounded", b[0], b[1])
        assert got == (want.sensitivity, want.k, True)


# The fast path now finds (S, k) by branch-and-bound over the distances, with A(f, x, k) at
# one distance from O(k D) candidates (sensitivity.percentile_distance), under both
# relations: at a tiny epsilon it visits a few distances instead of all n + 1 (compare's
# Adult median at epsilon 1e-12: > 900 s -> about 1 s). The toolkit's scan (sens.smooth, every
# distance, every candidate) is the reference; the tiny betas are the regime where A's last
# jumps all compete, and below 1e-16 exp(-beta k) rounds to 1.0 so equal values tie and the
# search must still return the first k that attains the largest value.
def _search_cases() -> list[tuple[np.ndarray, tuple[float, float], float, float, str]]:
    rng = np.random.default_rng(20261124)
    levels = (0.5, 0.25, 0.75, 0.0625, 0.9375, 0.0, 1.0, 0.375, 0.125, 0.875)
    cases = []
    for i in range(120):
        n = (1, 2, 3)[i % 3] if i % 7 == 0 else int(rng.integers(1, 45))
        shape = i % 6
        if shape == 0:
            x, b = rng.integers(0, 12, n).astype(float), (0.0, 12.0)
        elif shape == 1:  # off the lattice of the bounds
            x, b = rng.normal(50, 10, n).clip(0, 100), (0.0, 100.0)
        elif shape == 2:  # atoms at the bounds
            x, b = rng.choice([0.0, 10.0, 5.0], n), (0.0, 10.0)
        elif shape == 3:  # long runs of ties
            x, b = np.repeat(rng.integers(0, 5, 4), n // 4 + 1).astype(float), (0.0, 10.0)
        elif shape == 4:
            x, b = np.linspace(1, 99, n), (0.0, 100.0)
        else:
            x, b = rng.exponential(2.0, n).clip(-3, 30), (-3.0, 30.0)
        if i % 5 == 4:  # exp(-beta k) == 1.0 for the first k: ties, the first k must win
            beta = float(10 ** rng.uniform(-21, -16))
        elif i % 2:
            beta = float(10 ** rng.uniform(-13, -6))
        else:
            beta = float(10 ** rng.uniform(-6, 0.7))
        cases.append((x, b, beta, levels[i % len(levels)], ("unbounded", "bounded")[i % 4 // 2]))
    return cases


def test_fast_percentile_search_equals_the_toolkit_at_tiny_beta_and_both_relations() -> None:
    from dpkit.frameworks.smooth import _fast_percentile, _smooth_percentile
    from dpkit.queries import percentile, resolve
    from dpkit.sensitivity import at_distance

    for x, b, beta, level, rel in _search_cases():
        q = resolve("median" if level == 0.5 else percentile(level * 100))
        assert _fast_percentile(q, rel)
        want = sens.smooth(q, x, beta=beta, relation=rel, bounds=b)
        xs, lo, hi = at_distance.prepare("t", q, x, b)
        assert _smooth_percentile(q, xs, beta, lo, hi, rel) == (want.sensitivity, want.k), (
            x.tolist(),
            b,
            beta,
            level,
            rel,
        )
        got = smooth_upper_bound(q, x, beta, rel, b[0], b[1])
        assert got == (want.sensitivity, want.k, True)


def test_default_median_release_is_unchanged() -> None:
    """The default path (no ``exact_k``) at a small epsilon, where the smooth sensitivity's
    distance reaches n + 1 (18 s with the O(K^3) scan, 0.2 s with the windowed one, a few
    distances now; speed is the benchmarks' business), gives the toolkit's exact value."""
    x = np.linspace(1, 99, 501)
    rel = smooth_sensitivity_release(
        x, "median", epsilon=1e-3, delta=1e-6, bounds=(0.0, 100.0), rng=1
    )
    beta = smooth_noise_parameters("laplace", 1e-3, 1e-6)[0]
    want = sens.smooth("median", x[:101], beta=beta, relation="unbounded", bounds=(0, 100))
    small = smooth_upper_bound("median", x[:101], beta, "unbounded", 0.0, 100.0)
    assert small == (want.sensitivity, want.k, True)
    assert rel.diagnostics["k"] == 502 and rel.diagnostics["exact"]


def test_noise_out_of_the_samplers_range_is_refused_before_the_scan(monkeypatch) -> None:
    import dpkit.frameworks.smooth as smooth_module

    def no_scan(*args: object, **kwargs: object) -> None:
        raise AssertionError("the smooth scan ran before the public noise-range check")

    monkeypatch.setattr(smooth_module, "smooth_upper_bound", no_scan)
    x = np.linspace(1, 99, 501)
    with pytest.raises(dpkit.ParameterError, match="2\\*\\*50 steps"):
        smooth_sensitivity_release(x, "median", epsilon=1e-20, delta=1e-6, bounds=(0.0, 100.0))
    with pytest.raises(dpkit.ParameterError, match="2\\*\\*960"):
        smooth_sensitivity_release(
            x, "median", epsilon=1e-300, bounds=(0.0, 1e300), noise="cauchy", delta=0.0
        )


def test_smooth_release_at_small_epsilon_is_quick() -> None:
    # n = 100 at epsilon 1e-4: the scan stops at n + 1, the distance past which A is constant
    t0 = time.perf_counter()
    rel = dp.smooth_sensitivity_release(
        np.arange(100.0), "median", epsilon=1e-4, delta=1e-6, bounds=(0, 100), rng=1
    )
    assert time.perf_counter() - t0 < 10
    assert math.isfinite(rel.value)
