"""Distribution tests for the mechanisms (fixed seeds; tolerances derived in comments)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from scipy import integrate, optimize, stats

import dpkit as dp
from dpkit.errors import ParameterError
from dpkit.mechanisms import analytic_gaussian_sigma, classic_gaussian_sigma

N = 200_000
PASS, FAIL = 1e-3, 1e-6


def _binned(draws: np.ndarray, cdf: Callable[[np.ndarray], np.ndarray], bins: int = 40) -> float:
    """Chi-square p-value over ~equiprobable cells [e_i, e_{i+1}) of an exact lattice cdf."""
    edges = np.unique(np.quantile(draws, np.linspace(0, 1, bins + 1)[1:-1]))
    probs = np.diff(np.concatenate([[0.0], cdf(edges), [1.0]]))
    obs = np.bincount(np.searchsorted(edges, draws, side="left"), minlength=edges.size + 1)
    exp = probs * draws.size
    return float(stats.chi2.sf(float(((obs - exp) ** 2 / exp).sum()), df=edges.size))


def _laplace_cdf(t: float, g: float) -> Callable[[np.ndarray], np.ndarray]:
    """P[noise < e] for noise = g * Z, Z discrete Laplace with scale t (lattice units)."""
    q = math.exp(-1 / t)

    def cdf(e: np.ndarray) -> np.ndarray:
        k = np.ceil(e / g)  # noise < e  <=>  Z <= k - 1
        return np.where(k >= 1, 1 - q**k / (1 + q), q ** (1 - k) / (1 + q))

    return cdf


def test_laplace_noise_distribution() -> None:
    lap = dp.Laplace(epsilon=0.5, sensitivity=2.0)
    g = lap.grid()
    t = lap.noise_scale() / g
    noise = lap.noise(N, rng=1)
    assert np.all(noise / g == np.rint(noise / g))
    assert _binned(noise, _laplace_cdf(t, g)) > PASS
    # a scale wrong by 10% is rejected: with 40 cells and 200,000 draws the statistic is ~1000
    assert _binned(noise, _laplace_cdf(1.1 * t, g)) < FAIL
    assert _binned(noise, _laplace_cdf(t / 1.1, g)) < FAIL
    assert lap.noise_scale() == pytest.approx(lap.scale, rel=2**-15)


def _gauss_cdf(sigma2: float, g: float) -> Callable[[np.ndarray], np.ndarray]:
    k = int(40 * math.sqrt(sigma2)) + 2
    support = np.arange(-k, k + 1)
    pmf = np.exp(-(support.astype(float) ** 2) / (2 * sigma2))
    cum = np.cumsum(pmf / pmf.sum())

    def cdf(e: np.ndarray) -> np.ndarray:
        kk = np.ceil(e / g).astype(np.int64)  # noise < e <=> Z <= kk - 1
        idx = np.clip(kk - 1 + k, -1, 2 * k)
        return np.where(idx < 0, 0.0, cum[np.maximum(idx, 0)])

    return cdf


def test_gaussian_noise_distribution() -> None:
    gau = dp.Gaussian(epsilon=1.0, delta=1e-5, sensitivity=1.0)
    g = gau.grid()
    v = (gau.sigma / g) ** 2  # the lattice variance a scalar release draws with
    noise = gau.noise(N, rng=2)
    assert np.all(noise / g == np.rint(noise / g))
    assert _binned(noise, _gauss_cdf(v, g)) > PASS
    assert _binned(noise, _gauss_cdf(1.21 * v, g)) < FAIL  # sigma 10% too large
    assert _binned(noise, _gauss_cdf(v / 1.21, g)) < FAIL  # sigma 10% too small
    assert gau.sigma == pytest.approx(analytic_gaussian_sigma(1.0, 1e-5, 1.0), rel=2e-3)


def _dlap_pmf(t: float, support: np.ndarray) -> np.ndarray:
    """Discrete Laplace pmf ``(1 - q) / (1 + q) q**|z|``, ``q = exp(-1 / t)``."""
    q = math.exp(-1 / t)
    return (1 - q) / (1 + q) * q ** np.abs(support)


def _dgauss_pmf(s2: float, support: np.ndarray) -> np.ndarray:
    """Discrete Gaussian pmf on ``support`` (wide enough that the rest is below 1e-300)."""
    w = np.exp(-(support.astype(float) ** 2) / (2 * s2))
    return w / w.sum()


def test_geometric_mechanism_distribution(chi2_pvalue: Callable) -> None:
    geo = dp.Geometric(epsilon=0.5, sensitivity=2)  # scale t = 4
    out = geo.release(np.full(N, 10, dtype=np.int64), rng=11) - 10
    support = np.arange(-200, 201)
    assert chi2_pvalue(out, support, _dlap_pmf(4.0, support)) > PASS
    # a scale wrong by 10% either way is rejected (the statistic is in the hundreds)
    assert chi2_pvalue(out, support, _dlap_pmf(4.4, support)) < FAIL
    assert chi2_pvalue(out, support, _dlap_pmf(4.0 / 1.1, support)) < FAIL


@pytest.mark.parametrize(("eps", "delta", "sens"), [(1.0, 1e-5, 1), (0.002, 1e-6, 10)])
def test_discrete_gaussian_mechanism_distribution(eps: float, delta: float, sens: int) -> None:
    mech = dp.DiscreteGaussian(epsilon=eps, delta=delta, sensitivity=sens)
    out = mech.release(np.zeros(N, dtype=np.int64), rng=12)
    s2f = float(mech._s2(N))  # d = N coordinates: the variance the release draws with
    # wide cells for a large sigma: chi-square over 40 equiprobable cells of the exact cdf
    half = int(40 * math.sqrt(s2f)) + 2
    support = np.arange(-half, half + 1)
    cells = np.unique(np.quantile(out, np.linspace(0, 1, 41)[1:-1]).astype(np.int64))

    def pvalue(var: float) -> float:
        cum = np.cumsum(_dgauss_pmf(var, support))
        probs = np.diff(np.concatenate([[0.0], cum[cells + half], [1.0]]))
        obs = np.bincount(np.searchsorted(cells, out, side="left"), minlength=cells.size + 1)
        exp = probs * out.size
        return float(stats.chi2.sf(float(((obs - exp) ** 2 / exp).sum()), df=cells.size))

    assert pvalue(s2f) > PASS
    assert pvalue(1.21 * s2f) < FAIL  # sigma 10% too large
    assert pvalue(s2f / 1.21) < FAIL  # sigma 10% too small


def _rnm_probabilities(scores: np.ndarray, b: float) -> np.ndarray:
    """P[arg max of scores + Laplace(b) noise = i], by quadrature (ties have probability 0).

    dpkit's noise is discrete Laplace on the lattice of 2**-20 score units with scale
    ``b 2**20``: its cdf is within ~1e-6 of the continuous one, far below the sampling error.
    """
    lap = stats.laplace(scale=b)
    out = []
    for i, si in enumerate(scores):

        def dens(v: float, i: int = i, si: float = si) -> float:
            p = lap.pdf(v - si)
            for j, sj in enumerate(scores):
                if j != i:
                    p *= lap.cdf(v - sj)
            return float(p)

        lo, hi = scores.min() - 60 * b, scores.max() + 60 * b
        pts = sorted(set(scores.tolist()))
        out.append(integrate.quad(dens, lo, hi, points=pts, limit=500, epsabs=1e-13)[0])
    return np.array(out)


def test_report_noisy_max_frequencies(chi2_pvalue: Callable) -> None:
    scores = np.array([3.0, 0.0, 7.0, 1.0, 5.0, 2.0, 6.0, 4.0])
    rnm = dp.ReportNoisyMax(epsilon=1.0, sensitivity=1.0)  # Laplace scale 2 s / eps = 2
    source = dp.samplers.SeededSource(13)
    picks = np.array([rnm.select(range(8), scores, rng=source) for _ in range(30_000)])
    support = np.arange(8)
    assert chi2_pvalue(picks, support, _rnm_probabilities(scores, 2.0)) > PASS
    # a noise scale 10% off: sum (p - p')**2 / p' is ~0.0055, so the statistic's
    # non-centrality is ~165 at 30,000 draws, against 40 for p = 1e-6 with 7 degrees of freedom
    assert chi2_pvalue(picks, support, _rnm_probabilities(scores, 2.2)) < FAIL
    assert chi2_pvalue(picks, support, _rnm_probabilities(scores, 2.0 / 1.1)) < FAIL


@pytest.mark.parametrize(
    "mech",
    [
        dp.Laplace(epsilon=1.0, sensitivity=1.0),
        dp.Gaussian(epsilon=1.0, delta=1e-5, sensitivity=1.0),
    ],
)
def test_outputs_for_neighbours_share_one_lattice(mech: object) -> None:
    # The lattice depends only on the mechanism, never on the value: releases of 0 and of 1
    # both land on multiples of the same power-of-two grid, so no output is impossible under
    # the other input (the Mironov attack needs such impossible outputs).
    g = mech.grid()
    out0 = np.array([mech.release(0.0, rng=s) for s in range(200)])
    out1 = np.array([mech.release(1.0, rng=s) for s in range(200)])
    out_odd = np.array([mech.release(0.1 + 2**-30, rng=s) for s in range(200)])
    for out in (out0, out1, out_odd):
        assert np.all(out / g == np.rint(out / g))
    assert math.log2(g) == int(math.log2(g))


def test_classic_sigma_values() -> None:
    for eps, delta, sens in [(0.5, 1e-5, 1.0), (0.1, 1e-6, 3.0), (0.9, 0.01, 0.25)]:
        expected = sens * math.sqrt(2 * math.log(1.25 / delta)) / eps
        assert classic_gaussian_sigma(eps, delta, sens) == pytest.approx(expected, rel=1e-15)
    assert classic_gaussian_sigma(0.5, 1e-5, 1.0) == pytest.approx(9.6896105, rel=1e-7)


def _analytic_independent(eps: float, delta: float, sens: float) -> float:
    """Solve Balle and Wang's Theorem 8 condition with SciPy's normal cdf and brentq."""

    def gap(sigma: float) -> float:
        a, b = sens / (2 * sigma), eps * sigma / sens
        return stats.norm.cdf(a - b) - math.exp(eps) * stats.norm.cdf(-a - b) - delta

    return optimize.brentq(gap, 1e-3 * sens, 1e3 * sens, xtol=1e-14, rtol=1e-14)


@pytest.mark.parametrize(
    ("eps", "delta", "sens"),
    [(1.0, 1e-5, 1.0), (0.1, 1e-6, 1.0), (4.0, 1e-9, 2.5), (0.5, 1e-3, 0.1)],
)
def test_analytic_sigma_matches_independent_solution(eps: float, delta: float, sens: float) -> None:
    ours = analytic_gaussian_sigma(eps, delta, sens)
    assert ours == pytest.approx(_analytic_independent(eps, delta, sens), rel=1e-9)
    # never noisier than the classic calibration where both apply
    if eps < 1:
        assert ours <= classic_gaussian_sigma(eps, delta, sens)


def test_discrete_gaussian_delta_is_checked() -> None:
    mech = dp.DiscreteGaussian(epsilon=1.0, delta=1e-5)
    s2 = mech.sigma**2
    assert dp.mechanisms.discrete_gaussian_delta(s2, 1, 1.0) <= 1e-5
    # ... and it is nearly tight: 1% less variance breaks the requested delta
    assert dp.mechanisms.discrete_gaussian_delta(0.99 * s2, 1, 1.0) > 1e-5


def test_exponential_frequencies_match_weights(chi2_pvalue: Callable) -> None:
    # 12,000 selections against the normalised exp(eps u / (2 s)) weights; p > 1e-3.
    scores = np.array([0.0, 1.0, 2.5, 3.0])
    exp = dp.Exponential(epsilon=1.0, sensitivity=1.0)
    source = dp.samplers.SeededSource(5)
    picks = np.array([exp.select(range(4), scores, rng=source) for _ in range(12_000)])
    w = np.exp(scores / 2)
    assert chi2_pvalue(picks, np.arange(4), w / w.sum()) > PASS
    assert np.allclose(exp.probabilities(scores), w / w.sum(), rtol=1e-12)
    wrong = np.exp(scores / 2 * 1.2)  # epsilon 20% off must be rejected
    assert chi2_pvalue(picks, np.arange(4), wrong / wrong.sum()) < FAIL


def test_exponential_monotonic_and_fractional_sensitivity(chi2_pvalue: Callable) -> None:
    scores = np.array([0.25, 0.5, 0.75])
    exp = dp.Exponential(epsilon=2.0, sensitivity=0.25, monotonic=True)
    source = dp.samplers.SeededSource(6)
    picks = np.array([exp.select(range(3), scores, rng=source) for _ in range(8_000)])
    w = np.exp(2.0 * scores / 0.25)
    assert chi2_pvalue(picks, np.arange(3), w / w.sum()) > PASS


def _pf_probabilities(p: np.ndarray) -> np.ndarray:
    """Exact permute-and-flip output probabilities by enumerating the orders."""
    n = p.size
    out = np.zeros(n)
    for order in itertools.permutations(range(n)):
        survive = 1.0
        for r in order:
            out[r] += survive * p[r] / math.factorial(n)
            survive *= 1 - p[r]
    return out


def test_permute_and_flip_frequencies(chi2_pvalue: Callable) -> None:
    scores = np.array([0.0, 1.0, 3.0, 2.0])
    pf = dp.PermuteAndFlip(epsilon=1.0, sensitivity=1.0)
    source = dp.samplers.SeededSource(7)
    picks = np.array([pf.select(range(4), scores, rng=source) for _ in range(12_000)])
    coins = np.exp((scores - scores.max()) / 2)
    assert chi2_pvalue(picks, np.arange(4), _pf_probabilities(coins)) > PASS
    w = np.exp(scores / 2)  # ... and it is not the exponential mechanism's distribution
    assert chi2_pvalue(picks, np.arange(4), w / w.sum()) < FAIL


def _dlap_difference_tail(t: float, m: int) -> float:
    """``P[Z0 - Z1 >= m]`` for independent discrete Laplace ``Z0, Z1`` of scale ``t``, exactly.

    With ``q = exp(-1/t)``, ``P[Z0 - Z1 = k] = ((1-q)/(1+q))**2 q**|k| (2/(1-q**2) + |k| - 1)``
    (summing ``q**(|z| + |z - k|)`` over ``z`` in three ranges); summed over ``k >= m >= 1``:
    ``q**m / (1+q)**2 ((1+q**2)/(1+q) + m (1-q) + q)``; ``m <= 0`` by symmetry. As ``t``
    grows this tends to the continuous ``(2 + x/b) e**(-x/b) / 4``.
    """
    if m <= 0:
        return 1.0 - _dlap_difference_tail(t, 1 - m)
    q, one_minus_q = math.exp(-1 / t), -math.expm1(-1 / t)
    return math.exp(-m / t) / (1 + q) ** 2 * ((1 + q * q) / (1 + q) + m * one_minus_q + q)


def _rnm_pick_first(t: float, gap: int) -> float:
    """P[report-noisy-max picks candidate 0 of two] when ``q_0 - q_1 = gap`` lattice units.

    Candidate 0 wins when ``Z0 - (max q - q0) >= Z1 - (max q - q1)`` (ties go to the first):
    ``Z0 - Z1 >= -gap``.
    """
    return _dlap_difference_tail(t, -gap)


def test_report_noisy_max_respects_epsilon() -> None:
    # Scores move by the sensitivity in opposite directions between neighbours: x = (6, 0),
    # x' = (5, 1). The law is exact: with h = 2**-20 (scores in lattice units q = u / h) and
    # the lattice sensitivity ceil(1 / h) = 2**20, the noise is discrete Laplace of scale
    # t = 2 * 2**20 / epsilon lattice units (Laplace 2 s / epsilon in score units).
    eps, units = 1.0, 2**20
    t = 2 * units / eps
    rnm = dp.ReportNoisyMax(epsilon=eps, sensitivity=1.0)
    n = 8000
    stat, stat_small = 0.0, 0.0
    for seed, (u0, u1) in ((8, (6.0, 0.0)), (9, (5.0, 1.0))):
        source = dp.samplers.SeededSource(seed)
        firsts = sum(rnm.select([0, 1], [u0, u1], rng=source) == 0 for _ in range(n))
        gap = round((u0 - u1) * units)
        for scale, acc in ((t, "ok"), (0.9 * t, "small")):
            p = _rnm_pick_first(scale, gap)
            z2 = (firsts - n * p) ** 2 / (n * p * (1 - p))
            if acc == "ok":
                stat += z2
            else:
                stat_small += z2
    # 1. the selections follow the exact law at scale t (chi-square, 2 df, level 1e-3), and
    # not the law of noise 10% smaller: sum (p - p')**2 / (p (1 - p)) is 0.0074 per pair of
    # draws at these gaps, so its statistic is about 60 at 8,000 pairs (p < 1e-4 needs 18.4)
    assert stats.chi2.sf(stat, df=2) > PASS
    assert stats.chi2.sf(stat_small, df=2) < 1e-4

    # 2. that exact law is epsilon-DP on every pair of neighbouring gaps (scores moved by at
    # most the sensitivity each: the gap by at most 2), and nearly tight: the log ratio of
    # picking the loser tends to 2 units / t = epsilon as the gap grows
    def worst(scale: float) -> float:
        out = 0.0
        for g in range(-100, 300):
            for dg in (1, 2):
                h = (g - dg) * units
                first = _rnm_pick_first(scale, g * units) / _rnm_pick_first(scale, h)
                # the second candidate's probability straight from the tail (no 1 - p)
                second = _dlap_difference_tail(scale, g * units + 1) / _dlap_difference_tail(
                    scale, h + 1
                )
                out = max(out, abs(math.log(first)), abs(math.log(second)))
        return out

    assert eps * 0.99 < worst(t) <= eps
    assert worst(0.9 * t) > eps  # noise 10% smaller breaks the claim
    assert worst(t / 4) > 3 * eps  # and quartered noise by far


def test_laplace_accuracy_is_a_valid_interval() -> None:
    lap = dp.Laplace(epsilon=1.0, sensitivity=1.0)
    half = lap.accuracy(0.05)
    assert half == pytest.approx(math.log(20), rel=1e-3)
    noise = lap.noise(N, rng=3)
    # the fraction outside is binomial(N, <=0.05): sd 4.9e-4, so 0.05 + 5 sd bounds it
    assert np.mean(np.abs(noise) > half) < 0.05 + 0.0025
    rel = lap.measure(10.0, rng=3)
    assert rel.interval == (rel.value - half, rel.value + half)
    assert rel.privacy == dp.PureDP(1.0)


@pytest.mark.parametrize(
    "mech", [dp.Laplace(epsilon=0.5, sensitivity=2.0), dp.Gaussian(0.5, 1e-6, sensitivity=2.0)]
)
def test_measure_is_release_with_its_figures(mech: Any) -> None:
    # same seed, same draws: measure adds figures around release, never different noise
    rel = mech.measure(10.0, rng=7)
    assert rel.value == mech.release(10.0, rng=7)
    assert rel.mechanism == type(mech).__name__ and rel.privacy == mech.privacy
    half = mech.accuracy(0.05)
    assert rel.interval == (rel.value - half, rel.value + half)
    assert rel.details["half_width"] == half and rel.details["grid"] > 0
    vec = mech.measure(np.zeros((2, 3)), alpha=0.1, rng=7)
    assert vec.value.shape == (2, 3) and vec.interval is None
    assert vec.scale == mech.noise_scale(6) and vec.details["half_width"] == mech.accuracy(0.1, 6)


@pytest.mark.parametrize(
    "mech",
    [
        dp.Exponential(epsilon=1.0, sensitivity=1.0),
        dp.PermuteAndFlip(epsilon=1.0, sensitivity=1.0),
        dp.ReportNoisyMax(epsilon=1.0, sensitivity=1.0),
    ],
)
def test_selection_accuracy_bound_holds(mech: object) -> None:
    # 50 candidates with evenly spread scores; the utility loss exceeds accuracy(0.1, 50)
    # in at most 10% of 2,000 selections (binomial sd 0.0067: 0.1 + 5 sd = 0.134 bounds it;
    # the union bound is loose, so the observed rate is far lower).
    scores = np.linspace(0, 30, 50)
    bound = mech.accuracy(0.1, n=50)
    source = dp.samplers.SeededSource(12)
    losses = np.array(
        [30 - scores[mech.select(range(50), scores, rng=source)] for _ in range(2000)]
    )
    assert np.mean(losses > bound) < 0.134
    assert bound == pytest.approx(
        (2 if isinstance(mech, dp.ReportNoisyMax) else 1) * 2 * math.log(50 / 0.1)
    )
    with pytest.raises(ParameterError):
        mech.accuracy(1.5, n=50)


@pytest.mark.parametrize(
    "make",
    [
        lambda eps: dp.Laplace(epsilon=eps, sensitivity=1.0),
        lambda eps: dp.Geometric(epsilon=eps),
        lambda eps: dp.DiscreteGaussian(epsilon=eps, delta=1e-5),
    ],
)
def test_release_record_says_when_the_noise_is_below_the_lattice_step(make: Any) -> None:
    # epsilon 1e300: the noise is zero with probability 1 (to float precision), the
    # interval has width 0, and the record says why; at epsilon 1 it says nothing
    huge = make(1e300).measure(3, rng=1)
    assert huge.value == 3 and huge.interval == (3, 3)
    assert huge.details["note"].startswith("noise below the lattice step")
    assert "note" not in make(1.0).measure(3, rng=1).details


@pytest.mark.parametrize("s2", [0.2, 1.0, 1.45**2, 4.0, 30.0, 5000.0])
@pytest.mark.parametrize("alpha", [0.5, 0.05, 1e-6])
def test_discrete_gaussian_accuracy_is_the_exact_discrete_quantile(s2: float, alpha: float) -> None:
    # the smallest k with P[|Z| > k] <= alpha, from the pmf; the normal approximation
    # sigma z(1 - alpha/2) undercovers at small sigma (sigma 1.45, alpha 0.05: 2.84, where
    # P[|Z| >= 3] = 0.078)
    from dpkit.mechanisms.gaussian import discrete_gaussian_accuracy

    k = discrete_gaussian_accuracy(s2, alpha)
    z = np.arange(-4000, 4001)
    pmf = _dgauss_pmf(s2, z)
    outside = lambda j: pmf[np.abs(z) > j].sum()  # noqa: E731
    assert outside(k) <= alpha and (k == 0 or outside(k - 1) > alpha)


def test_discrete_gaussian_measure_reports_what_it_draws() -> None:
    mech = dp.DiscreteGaussian(epsilon=2.0, delta=1e-3)
    rel = mech.measure(10, rng=3)
    assert rel.value == mech.release(10, rng=3)
    k = mech.accuracy(0.05)
    assert rel.interval == (rel.value - k, rel.value + k) and rel.scale == mech.sigma
    assert rel.details["variance"] == float(mech._s2(1)) and rel.details["analysis"] == "exact"
    vec = mech.measure(np.zeros(50, dtype=np.int64), rng=3)
    assert vec.interval is None and vec.details["half_width"] == mech.accuracy(0.05, 50)
