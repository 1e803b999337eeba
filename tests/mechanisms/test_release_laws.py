"""The laws of ``Laplace.release`` and ``Gaussian.release`` themselves.

The noise tests in test_distributions.py sample ``.noise()``; a release that drew less noise
than ``.noise()``, or forgot to charge the lattice rounding, would pass them. Here every check
draws from ``release()`` and compares with a scale derived from the math in this file, never
with the scale the mechanism reports:

* **Laplace** (lattice ``g``, read from the public ``grid(d)``): rounding ``d`` coordinates to
  the lattice moves two inputs at L1 distance ``s`` at most ``floor(s / g) + d`` lattice steps
  apart (each ``rint`` adds at most 1/2 on each side), so the discrete Laplace noise on the
  lattice must have scale ``t = (floor(s / g) + d) / epsilon`` lattice units.
* **Gaussian**: the variance ``V`` (lattice units) is read from ``noise_scale`` and *checked*
  against the math: for a scalar, the exact discrete-Gaussian delta of Canonne, Kamath and
  Steinke (2020, Theorem 7), computed here by direct summation, at the charged lattice
  sensitivity ``floor(s / g) + 1`` must be at most ``delta`` and must exceed it when ``V`` is
  2**-8 smaller (so ``V`` is tight, not inflated); for ``d`` coordinates, the exact curve of
  the multivariate law at several shifts and the smoothing bound are checked in
  tests/noise/test_gaussian_calibration.py, and the law drawn (``N_Z(0, V)`` per coordinate) here.

Each law is tested two ways:

1. *Chi-square* over 40 cells of equal probability under the exact lattice law, at level
   1e-3, with the same draws tested against the law with the scale 10% off in each direction
   (must give p < 1e-6; with 200,000 draws the statistic is then in the thousands).
2. *Coupling*: ``release(x, rng=seed)`` must equal ``rint(x / g) + draws`` of dpkit's public
   exact sampler (``dpkit.samplers.discrete_laplace`` / ``discrete_gaussian``, whose laws
   tests/samplers checks against the exact pmf) given the same seed and the scale above. Equal
   draws mean the release adds exactly that noise. It is sharp where statistics cannot be:
   dropping the rounding charge changes the Laplace scale by 2**-12 relatively for 200,000
   coordinates, which moves about 770 of the 200,000 draws.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

import dpkit as dp

N = 200_000
PASS, FAIL = 1e-3, 1e-6


def _cells_pvalue(draws: np.ndarray, below: Callable[[np.ndarray], np.ndarray]) -> float:
    """Chi-square p-value of integer ``draws`` over ~40 cells ``[e_i, e_{i+1})``.

    ``below(e)`` is the exact ``P[Z < e]``; the cell edges are sample quantiles (any fixed
    partition works; quantiles keep every expected count large).
    """
    edges = np.unique(np.quantile(draws, np.linspace(0, 1, 41)[1:-1]).astype(np.int64))
    probs = np.diff(np.concatenate([[0.0], below(edges), [1.0]]))
    obs = np.bincount(np.searchsorted(edges, draws, side="left"), minlength=edges.size + 1)
    exp = probs * draws.size
    return float(stats.chi2.sf(float(((obs - exp) ** 2 / exp).sum()), df=edges.size))


def _dlap_below(t: float) -> Callable[[np.ndarray], np.ndarray]:
    """``P[Z < e]`` for ``P[Z = z] = (1 - q) / (1 + q) q**|z|``, ``q = exp(-1 / t)``."""
    q = math.exp(-1 / t)

    def below(e: np.ndarray) -> np.ndarray:
        e = e.astype(np.float64)
        # P[Z >= k] = q**k / (1 + q) for k >= 1, and by symmetry P[Z <= k] for k <= 0
        return np.where(e >= 1, 1 - q**e / (1 + q), q ** (1 - e) / (1 + q))

    return below


def _dgauss_below(v: float) -> Callable[[np.ndarray], np.ndarray]:
    """``P[Z < e]`` for the discrete Gaussian of variance parameter ``v >= 1e6``.

    ``sum_{z < e} exp(-z**2 / 2v)`` is the midpoint rule for the normal integral up to
    ``e - 1/2``; for ``sigma >= 1000`` its error is below 1e-9, far under the sampling error.
    """
    sigma = math.sqrt(v)
    assert sigma >= 1000

    def below(e: np.ndarray) -> np.ndarray:
        return stats.norm.cdf((e.astype(np.float64) - 0.5) / sigma)

    return below


def _laplace_t(lap: dp.Laplace, d: int) -> tuple[float, Fraction]:
    """The grid (public) and the lattice scale the math requires, from first principles."""
    g = lap.grid(d)
    assert math.log2(g) == int(math.log2(g))  # a power of two: x / g is exact
    steps = math.floor(Fraction(lap.sensitivity) / Fraction(g)) + d
    return g, Fraction(steps) / Fraction(lap.epsilon)


def test_laplace_vector_release_is_the_exact_lattice_law() -> None:
    lap = dp.Laplace(epsilon=0.5, sensitivity=2.0)
    g, t = _laplace_t(lap, N)
    x = np.arange(N) * 0.37 + 1 / 3  # values off the lattice: rounding is part of the law
    out = lap.release(x, rng=1)
    lattice = np.rint(x / g)
    noise = out / g - lattice
    assert np.array_equal(noise, np.rint(noise))  # outputs on the lattice
    z = noise.astype(np.int64)
    assert _cells_pvalue(z, _dlap_below(float(t))) > PASS
    assert _cells_pvalue(z, _dlap_below(1.1 * float(t))) < FAIL
    assert _cells_pvalue(z, _dlap_below(float(t) / 1.1)) < FAIL
    # coupling: exactly the public sampler's draws at scale t (including the rounding charge)
    assert np.array_equal(z, dp.samplers.discrete_laplace(t, N, rng=1))
    assert lap.noise_scale(N) == float(t) * g


def test_laplace_scalar_release_is_the_exact_lattice_law() -> None:
    # one release per call: d = 1, its own grid and charge. Coupled draw by draw with the
    # public sampler (the chi-square power is in the vector test; here any scale change
    # moves nearly every draw, and the grid must be a power of two for a non-dyadic s)
    lap = dp.Laplace(epsilon=2.0, sensitivity=3.0)
    g, t = _laplace_t(lap, 1)
    k = 3000
    mine, ref = dp.samplers.SeededSource(2), dp.samplers.SeededSource(2)
    out = np.array([lap.release(7.3, rng=mine) for _ in range(k)])
    z = out / g - np.rint(7.3 / g)
    want = np.concatenate([dp.samplers.discrete_laplace(t, 1, rng=ref) for _ in range(k)])
    assert np.array_equal(z, want)
    assert lap.noise_scale(1) == float(t) * g


def _dg_delta(v: float, sens: int, eps: float) -> float:
    """Exact delta of ``x + N_Z(0, v)`` at integer sensitivity ``sens`` (CKS 2020, Thm 7).

    ``delta = P[Y > eps v / D - D / 2] - e**eps P[Y > eps v / D + D / 2]``, the tails summed
    directly over ``|y| <= 40 sqrt(v) + D`` (the mass beyond is below 1e-300).
    """
    k = math.ceil(40 * math.sqrt(v)) + sens + 2
    y = np.arange(-k, k + 1, dtype=np.float64)
    w = np.exp(-(y * y) / (2 * v))
    w /= w.sum()
    a = eps * v / sens

    def above(c: float) -> float:
        return float(w[y > c].sum())

    return above(a - sens / 2) - math.exp(eps) * above(a + sens / 2)


def _gaussian_figures(gau: dp.Gaussian, d: int) -> tuple[float, int]:
    """The lattice ``g`` and variance ``V`` in lattice units (integer), as reported."""
    g = gau.grid(d)
    v = (gau.noise_scale(d) / g) ** 2
    assert abs(v - round(v)) < 1e-3 * max(1.0, v / 2**40)  # V = t * c, an integer
    return g, round(v)


def test_gaussian_scalar_variance_is_private_and_tight_at_the_charged_sensitivity() -> None:
    for gau in (
        dp.Gaussian(epsilon=1.0, delta=1e-5, sensitivity=1.0),
        dp.Gaussian(epsilon=2.0, delta=1e-6, sensitivity=1.0),
        dp.Gaussian(epsilon=0.1, delta=1e-6, sensitivity=1.0),  # lattice sigma 3.7e4: smoothing
        dp.Gaussian(epsilon=3.0, delta=1e-9, sensitivity=5.0, calibration="analytic"),
    ):
        g, v = _gaussian_figures(gau, 1)
        steps = math.floor(Fraction(gau.sensitivity) / Fraction(g)) + 1  # rounding charged
        assert _dg_delta(v, steps, gau.epsilon) <= gau.delta
        assert _dg_delta(v * (1 - 2**-8), steps, gau.epsilon) > gau.delta


def test_gaussian_scalar_release_is_the_exact_lattice_law() -> None:
    # coupled draw by draw with the public exact sampler at the variance checked above
    gau = dp.Gaussian(epsilon=1.0, delta=1e-5, sensitivity=1.0)
    g, v = _gaussian_figures(gau, 1)
    k = 2000
    mine, ref = dp.samplers.SeededSource(4), dp.samplers.SeededSource(4)
    out = np.array([gau.release(-2.7, rng=mine) for _ in range(k)])
    z = out / g - np.rint(-2.7 / g)
    want = np.concatenate(
        [dp.samplers.discrete_gaussian(0, 1, rng=ref, sigma2=v) for _ in range(k)]
    )
    assert np.array_equal(z, want)


def test_gaussian_vector_release_is_the_exact_lattice_law() -> None:
    gau = dp.Gaussian(epsilon=1.0, delta=1e-5, sensitivity=1.0)
    g, v = _gaussian_figures(gau, N)
    # the variance is calibrated for the charged L2 sensitivity s / g + sqrt(d) (its privacy
    # is checked in tests/noise/test_gaussian_calibration.py): within 2**-10 + 1e-6 of the
    # analytic one
    steps = gau.sensitivity / g + math.sqrt(N)
    analytic = dp.mechanisms.analytic_gaussian_sigma(gau.epsilon, gau.delta, steps)
    assert analytic**2 <= v <= (analytic * (1 + 1e-6)) ** 2
    x = np.linspace(-3.0, 5.0, N) + 2**-30
    out = gau.release(x, rng=5)
    noise = out / g - np.rint(x / g)
    assert np.array_equal(noise, np.rint(noise))
    z = noise.astype(np.int64)
    assert _cells_pvalue(z, _dgauss_below(v)) > PASS
    assert _cells_pvalue(z, _dgauss_below(1.21 * v)) < FAIL
    assert _cells_pvalue(z, _dgauss_below(v / 1.21)) < FAIL
    # coupling with the exact sampler at V: the release adds exactly N_Z(0, V) noise
    from dpkit.samplers._discrete import discrete_gaussian_tc  # V > 2**40: the (1, V) form

    assert np.array_equal(z, discrete_gaussian_tc(1, v, N, rng=5))


@pytest.mark.parametrize("mech", [dp.Laplace(1.0, 1.0), dp.Gaussian(1.0, 1e-5, 1.0)])
def test_release_rounds_to_the_nearest_lattice_point(mech: dp.Laplace | dp.Gaussian) -> None:
    # the same seed with two inputs one lattice step apart shifts every output by one step,
    # and inputs within a step round to the nearest point (rint), never floor/ceil
    g = mech.measure(0.0, rng=0).details["grid"]
    base = np.array([mech.release(0.0, rng=s) for s in range(50)])
    for shift, steps in ((g, 1), (0.49 * g, 0), (0.51 * g, 1), (-0.51 * g, -1), (5.5 * g, 6)):
        moved = np.array([mech.release(shift, rng=s) for s in range(50)])
        assert np.array_equal(moved - base, np.full(50, steps * g)), shift


@pytest.mark.parametrize(("eps", "delta", "sens"), [(1.0, 1e-5, 1), (2.0, 1e-3, 1), (0.5, 1e-6, 3)])
def test_discrete_gaussian_variance_is_private_and_tight(
    eps: float, delta: float, sens: int
) -> None:
    # integers need no rounding: the charged sensitivity is the sensitivity itself
    mech = dp.DiscreteGaussian(epsilon=eps, delta=delta, sensitivity=sens)
    v1 = float(mech._s2(1))  # the variance a scalar release draws with
    assert _dg_delta(v1, sens, eps) <= delta
    assert _dg_delta(v1 * (1 - 2**-8), sens, eps) > delta
    d = 1000  # d coordinates: checked at every shift in tests/noise/test_gaussian_calibration.py
    out = mech.release(np.zeros(d, dtype=np.int64), rng=6)
    assert np.array_equal(out, dp.samplers.discrete_gaussian(0, d, rng=6, sigma2=mech._s2(d)))


@pytest.mark.parametrize(
    ("v", "sens", "eps"),
    [(14.0, 1, 1.0), (3824.0**2, 1025, 1.0), (2.5, 2, 0.3), (400.0, 3, 2.0)],
)
def test_discrete_gaussian_delta_matches_direct_summation(v: float, sens: int, eps: float) -> None:
    # the calibration aid the mechanisms trust, against the sum written out in this file
    got = dp.mechanisms.discrete_gaussian_delta(v, sens, eps)
    assert got == pytest.approx(_dg_delta(v, sens, eps), rel=1e-9, abs=1e-300)
    assert got > 0


def test_discrete_gaussian_beyond_sigma_two_to_the_twenty_draws_its_variance() -> None:
    # epsilon 5e-6, sensitivity 10: V about 2.0e12 > 2**40, drawn by the (1, V) form of the
    # exact sampler; chi-square at 1e-3, and the scale 10% off either way rejected
    mech = dp.DiscreteGaussian(epsilon=5e-6, delta=1e-6, sensitivity=10)
    v = mech._s2(N)
    assert v > 2**40 and v.denominator == 1
    z = mech.release(np.zeros(N, dtype=np.int64), rng=8)
    assert _cells_pvalue(z, _dgauss_below(float(v))) > PASS
    assert _cells_pvalue(z, _dgauss_below(1.21 * float(v))) < FAIL
    assert _cells_pvalue(z, _dgauss_below(float(v) / 1.21)) < FAIL
