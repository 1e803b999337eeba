"""The calibration of the Gaussian mechanisms, checked against the law they release.

Every release adds ``N_Z(0, V)^d`` on a lattice; two neighbours' outputs differ by an integer
shift ``mu`` with ``||mu||_2`` at most the charged sensitivity ``D`` (lattice steps). For a
shift ``mu`` the exact privacy curve is (summing ``P(y) - e**eps P(y - mu)`` over the
half-space where it is positive, ``W = <mu, Y>``)::

    delta(eps; mu) = P[W > eps V - |mu|**2 / 2] - exp(eps) P[W > eps V + |mu|**2 / 2]

computed here from the exact pmf of ``W`` (sums of discrete Gaussians, convolved
numerically). The tests check, from ``V`` and the grid the mechanisms report:

* at the reported ``V`` every shift tried (along an axis, spread evenly, mixed) has
  ``delta <= delta``; with sigma 1% lower the axis shift breaks it (so a variance 10% low,
  a dropped rounding charge or a wrong route is seen);
* for ``d = 10**7``, where no convolution is feasible, ``V`` satisfies the smoothing bound
  recomputed here independently, and is tight (1% less sigma breaks the continuous curve
  it is within ``1e-7`` of);
* the two facts the smoothing bound rests on: Poisson summation bounds the normaliser of a
  discrete Gaussian centred anywhere, and the discrete Gaussian is, pointwise within the
  stated factor, a continuous Gaussian rounded by a narrow discrete Gaussian kernel;
* the empirical standard deviation of a large seeded vector release, and ``.sigma``,
  ``accuracy()`` and the ``Release`` record, all report the sigma drawn.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from scipy import integrate, stats
from scipy.signal import fftconvolve

import dpkit as dp
from dpkit.errors import ParameterError
from dpkit.noise.gaussian_calibration import smoothing_losses

# ----------------------------------------------------------------------------- exact curves


def _dg_pmf(v: float) -> tuple[int, np.ndarray]:
    """``(first support point, pmf)`` of ``N_Z(0, v)`` over ``|y| <= 40 sqrt(v) + 2`` (the
    mass beyond is below 1e-300)."""
    k = math.ceil(40 * math.sqrt(v)) + 2
    y = np.arange(-k, k + 1, dtype=np.float64)
    w = np.exp(-(y * y) / (2 * v))
    return -k, w / w.sum()


def _sum_pmf(v: float, copies: int) -> tuple[int, np.ndarray]:
    """``(first support point, pmf)`` of the sum of ``copies`` independent ``N_Z(0, v)``."""
    first, w = _dg_pmf(v)
    out, start = w, first
    for _ in range(copies - 1):
        out = np.clip(fftconvolve(out, w), 0.0, None)  # FFT round-off: |error| < 1e-17
        start += first
    return start, out


def _above(start: int, pmf: np.ndarray, t: np.ndarray) -> np.ndarray:
    """``P[S > t]`` for ``S`` with ``pmf`` on ``start, start + 1, ...``."""
    tail = np.concatenate([np.cumsum(pmf[::-1])[::-1], [0.0]])  # tail[i] = P[S >= start + i]
    idx = np.clip(np.floor(t).astype(np.int64) + 1 - start, 0, pmf.size)
    return tail[idx]


def _vector_delta(v: float, shift: list[tuple[int, int]], eps: float) -> float:
    """Exact ``delta(eps; mu)`` of ``N_Z(0, v)^d`` for ``mu`` made of blocks ``(c, k)``: ``k``
    coordinates equal to ``c`` (one or two blocks; the zero coordinates do not matter)."""
    m = sum(c * c * k for c, k in shift)
    t1, t2 = eps * v - m / 2, eps * v + m / 2
    (c1, k1), rest = shift[0], shift[1:]
    s1, w1 = _sum_pmf(v, k1)
    if not rest:  # W = c1 S1
        p = _above(s1, w1, np.array([t1 / c1, t2 / c1]))
        return float(p[0] - math.exp(eps) * p[1])
    ((c2, k2),) = rest  # W = c1 S1 + c2 S2: condition on S1
    s2, w2 = _sum_pmf(v, k2)
    values = s1 + np.arange(w1.size)
    keep = w1 > 0
    values, w1 = values[keep], w1[keep]
    p1 = float(w1 @ _above(s2, w2, (t1 - c1 * values) / c2))
    p2 = float(w1 @ _above(s2, w2, (t2 - c1 * values) / c2))
    return p1 - math.exp(eps) * p2


def test_vector_delta_matches_direct_enumeration() -> None:
    # the convolution oracle against a brute-force sum over Z**3 on a small variance
    v, eps = 2.3, 0.7
    k = 40
    y = np.arange(-k, k + 1, dtype=np.float64)
    z = np.exp(-(y * y) / (2 * v)).sum()  # the normaliser of one coordinate
    grid = np.stack(np.meshgrid(y, y, y, indexing="ij"), axis=-1)
    p = np.exp(-(grid**2).sum(-1) / (2 * v)) / z**3
    for mu, blocks in (((2, 0, 0), [(2, 1)]), ((1, 1, 1), [(1, 3)]), ((2, 1, 1), [(2, 1), (1, 2)])):
        shifted = np.exp(-((grid - np.array(mu)) ** 2).sum(-1) / (2 * v)) / z**3
        brute = float(np.clip(p - math.exp(eps) * shifted, 0, None).sum())
        assert _vector_delta(v, blocks, eps) == pytest.approx(brute, rel=1e-9)


# ----------------------------------------------------------------------------- Gaussian


def _figures(gau: dp.Gaussian, d: int) -> tuple[float, float, float]:
    """Grid, charged L2 sensitivity (steps) and variance V, all from public figures."""
    g = gau.grid(d)
    assert math.log2(g) == int(math.log2(g))
    steps = math.floor(gau.sensitivity / g) + 1 if d == 1 else gau.sensitivity / g + math.sqrt(d)
    return g, steps, (gau.noise_scale(d) / g) ** 2


def test_gaussian_vector_law_meets_delta_at_every_shift_and_is_tight() -> None:
    gau = dp.Gaussian(epsilon=1.0, delta=1e-5, sensitivity=1.0)
    _, steps, v = _figures(gau, 2)
    v = round(v)  # an integer number of steps squared
    axis = math.floor(steps)  # |x - x'| = s plus one rounding step on one coordinate
    even = math.floor(steps / math.sqrt(2))
    shifts = [[(axis, 1)], [(even, 2)], [(axis, 1), (1, 1)]]
    for mu in shifts:
        assert sum(c * c * k for c, k in mu) <= steps**2
        assert _vector_delta(v, mu, gau.epsilon) <= gau.delta, mu
    # tight: sigma 1% lower breaks delta (by about 18%: a 10% error is far outside)
    assert _vector_delta(0.99**2 * v, shifts[0], gau.epsilon) > 1.1 * gau.delta


def _balle_wang(eps: float, sens: float, sigma: float) -> float:
    """Balle and Wang's exact delta of ``N(0, sigma**2)`` at L2 shift ``sens`` (SciPy)."""
    a, b = sens / (2 * sigma), eps * sigma / sens
    return float(stats.norm.cdf(a - b) - math.exp(eps) * stats.norm.cdf(-a - b))


def _smoothing_bound(eps: float, sens: float, v: float, d: int, tau: float) -> float:
    """The delta the smoothing theorem proves for ``N_Z(0, v)^d``, recomputed here:
    ``A**d delta_c(eps - d ln(A B), s')`` with ``s'**2 = v - tau**2``."""
    eta = sum(math.exp(-2 * math.pi**2 * tau**2 * k * k) for k in range(1, 8))
    ln_a = math.log1p(2 * eta)
    ln_ab = 2 * ln_a - math.log1p(-2 * eta)
    return math.exp(d * ln_a) * _balle_wang(eps - d * ln_ab, sens, math.sqrt(v - tau**2))


def test_gaussian_ten_million_values_are_calibrated_by_the_smoothing_bound() -> None:
    gau = dp.Gaussian(epsilon=1.0, delta=1e-5, sensitivity=1.0)
    d = 10**7
    _, steps, v = _figures(gau, d)
    assert min(_smoothing_bound(1.0, steps, v, d, t) for t in (1.5, 2.0, 3.0)) <= 1e-5
    # tight: the axis shift floor(steps) at sigma 1% lower breaks delta (the discrete curve
    # at sigma 1.6e7 steps is the continuous one to a relative 1e-13)
    assert _balle_wang(1.0, math.floor(steps), 0.99 * math.sqrt(v)) > 1.1e-5
    # within 1% of the analytic sigma (the rounding charge is 2**-10)
    analytic = dp.mechanisms.analytic_gaussian_sigma(1.0, 1e-5, 1.0)
    assert gau.noise_scale(d) <= analytic * (1 + 2**-10 + 1e-6)


def test_theta_normaliser_is_within_the_poisson_bound() -> None:
    # sum_j exp(-(j - z)**2 / (2 tau**2)) / (sqrt(2 pi) tau) lies in [1 - 2 eta, 1 + 2 eta]
    # for every centre z, with eta the library's bound (read back from ln A = ln(1 + 2 eta));
    # the extremes sit at z = 0 and z = 1/2, where it is 1 +- 2 exp(-2 pi**2 tau**2) nearly
    for tau in (0.4, 0.5, 0.7):
        eta = math.expm1(smoothing_losses(tau, 1)[1]) / 2
        z = np.linspace(0, 1, 201)[:, None]
        j = np.arange(-40, 41)[None, :]
        theta = np.exp(-((j - z) ** 2) / (2 * tau**2)).sum(1) / (math.sqrt(2 * math.pi) * tau)
        assert np.all(np.abs(theta - 1) <= 2 * eta + 1e-13)  # the bound is tight at z = 0
        assert np.max(np.abs(theta - 1)) > 1.9 * math.exp(-2 * math.pi**2 * tau**2)


def test_discrete_gaussian_is_a_rounded_continuous_gaussian_within_the_lemma() -> None:
    # Q(k) = integral phi_s'(z) N_Z(z, tau**2)(k) dz against P(k) = N_Z(0, s'**2 + tau**2)(k):
    # P / Q within [(1 - 2 eta) / (1 + 2 eta), 1 + 2 eta], and the bound not vacuous
    s1, tau = 1.2, 0.5
    eta = math.expm1(smoothing_losses(tau, 1)[1]) / 2
    v = s1 * s1 + tau * tau
    ks = np.arange(-9, 10)
    p = np.exp(-(ks**2) / (2 * v))
    p /= np.exp(-(np.arange(-60, 61) ** 2) / (2 * v)).sum()
    j = np.arange(-60, 61)

    def kernel(z: float, k: int) -> float:
        norm = np.exp(-((j - z) ** 2) / (2 * tau**2)).sum()
        return float(stats.norm.pdf(z, scale=s1) * math.exp(-((k - z) ** 2) / (2 * tau**2)) / norm)

    q = np.array(
        [integrate.quad(kernel, -12, 12, args=(int(k),), points=[int(k)], limit=400)[0] for k in ks]
    )
    ratio = p / q
    assert np.all(ratio <= 1 + 2 * eta) and np.all(ratio >= (1 - 2 * eta) / (1 + 2 * eta))
    assert np.max(np.abs(ratio - 1)) > eta / 4


def test_gaussian_vector_release_draws_the_sigma_it_reports() -> None:
    gau = dp.Gaussian(epsilon=1.0, delta=1e-5, sensitivity=1.0)
    n = 10**6
    x = np.random.default_rng(0).uniform(0.0, 100.0, n)
    noise = gau.release(x, rng=11) - x
    # the sample sd of 1e6 normal draws has relative standard error 1 / sqrt(2n) = 7.1e-4;
    # 0.4% is 5.6 of them. .sigma (scalar) and noise_scale(n) differ by under 0.1%
    sd = float(noise.std())
    assert sd == pytest.approx(gau.noise_scale(n), rel=4e-3)
    assert sd == pytest.approx(gau.sigma, rel=5e-3)
    assert sd <= 1.01 * dp.mechanisms.analytic_gaussian_sigma(1.0, 1e-5, 1.0)


@pytest.mark.parametrize("d", [1, 1000])
def test_gaussian_sigma_accuracy_and_release_record_agree(d: int) -> None:
    gau = dp.Gaussian(epsilon=0.7, delta=1e-6, sensitivity=2.0)
    assert gau.sigma == gau.scale == gau.noise_scale(1)
    assert gau.noise_scale(d) >= dp.mechanisms.analytic_gaussian_sigma(0.7, 1e-6, 2.0)
    assert abs(gau.noise_scale(d) / gau.sigma - 1) < 2e-3
    rel = gau.measure(np.zeros(d) if d > 1 else 0.0, alpha=0.1, rng=1)
    assert rel.scale == gau.noise_scale(d)
    # the half-width: the exact discrete quantile of the noise drawn, on the lattice; at
    # thousands of steps the normal one rounded up to a step
    g, v = gau.grid(d), round((gau.noise_scale(d) / gau.grid(d)) ** 2)
    half = dp.mechanisms.gaussian.discrete_gaussian_accuracy(v, 0.1) * g
    assert rel.details["half_width"] == gau.accuracy(0.1, d) == half
    normal = dp.mechanisms.gaussian_sigma_to_accuracy(gau.noise_scale(d), 0.1)
    assert normal <= half <= normal + g
    assert rel.details["grid"] == gau.grid(d)
    assert rel.details["analysis"] in ("exact", "smoothing", "zcdp")


# ----------------------------------------------------------------------------- integers


@pytest.mark.parametrize(("eps", "delta"), [(1.0, 1e-5), (5.0, 1e-5), (2.0, 1e-3), (10.0, 1e-5)])
def test_discrete_gaussian_vector_meets_delta_at_every_integer_shift(
    eps: float, delta: float
) -> None:
    # sensitivity 2: every integer shift of L2 norm <= 2, up to sign and order (epsilon 10
    # takes the zCDP route: the variance 19% lower breaks delta at (2,) by a factor 4)
    mech = dp.DiscreteGaussian(epsilon=eps, delta=delta, sensitivity=2)
    v = float(mech._s2(10))
    for mu in ([(2, 1)], [(1, 4)], [(1, 3)], [(1, 2)], [(1, 1)]):
        assert _vector_delta(v, mu, eps) <= delta, mu
    # the scalar's variance (its exact one-coordinate curve) does not cover (1, 1, 1, 1)
    # at epsilon 1 and 5: the vector needs its own calibration
    if eps in (1.0, 5.0):
        assert _vector_delta(float(mech._s2(1)), [(1, 4)], eps) > delta


def test_discrete_gaussian_vector_at_sensitivity_one_has_the_scalar_curve() -> None:
    # an integer vector of L2 norm 1 is +-e_i: the vector's variance is the scalar's, and
    # its exact curve is met and tight (1% less sigma breaks it)
    mech = dp.DiscreteGaussian(epsilon=1.0, delta=1e-5, sensitivity=1)
    assert mech._s2(1000) == mech._s2(1)
    v = float(mech._s2(1000))
    assert _vector_delta(v, [(1, 1)], 1.0) <= 1e-5
    assert _vector_delta(0.99**2 * v, [(1, 1)], 1.0) > 1e-5


def test_discrete_gaussian_reports_the_variance_it_draws() -> None:
    mech = dp.DiscreteGaussian(epsilon=0.5, delta=1e-6, sensitivity=3)
    d = 200_000
    out = mech.release(np.zeros(d, dtype=np.int64), rng=4)
    # relative standard error of the sd: 1 / sqrt(2 d) = 1.6e-3; 1% is 6 of them
    assert float(out.std()) == pytest.approx(math.sqrt(mech._s2(d)), rel=1e-2)
    assert mech.sigma == math.sqrt(mech._s2(1))
    assert mech.accuracy(0.05, d) == dp.mechanisms.gaussian.discrete_gaussian_accuracy(
        mech._s2(d), 0.05
    )


@pytest.mark.parametrize("sensitivity", [1e-300, 1e-160, 1.0, 1e154, 1e300])
def test_analytic_sigma_scales_with_the_sensitivity_and_returns_at_once(sensitivity: float) -> None:
    # Balle and Wang's condition depends on sigma / sensitivity only, so sigma is exactly
    # proportional to the sensitivity, and found at once at any scale (1e-300 to 1e300)
    t0 = time.perf_counter()
    sigma = dp.mechanisms.analytic_gaussian_sigma(1.0, 1e-5, sensitivity)
    assert time.perf_counter() - t0 < 2
    assert sigma == pytest.approx(3.730631634816461 * sensitivity, rel=1e-11)


def test_analytic_sigma_survives_epsilon_past_exp_overflow() -> None:
    # exp(709.8) overflows; the erfcx form never builds exp(epsilon). For a huge epsilon the
    # condition is met once A = 1/(2u) - eps u is a few units negative: u about 1/sqrt(2 eps)
    for eps in (709.9, 1e6, 1e308):
        u = dp.mechanisms.analytic_gaussian_sigma(eps, 1e-5, 1.0)
        assert 0 < u < 10 / math.sqrt(eps) + 5 / eps
    with pytest.raises(ParameterError, match="`sensitivity`"):
        dp.Gaussian(epsilon=1.0, delta=1e-5, sensitivity=1e308)
