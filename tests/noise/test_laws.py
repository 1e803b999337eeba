"""The noise laws: tails, tail indices, half-widths and the probability of zero against the
exact pmf, and draws through the samplers' kernels, block by block."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from dpkit.noise import DiscreteGaussianLaw, DiscreteLaplaceLaw, law, threshold
from dpkit.noise.laws import laplace_tail, laplace_tail_index
from dpkit.samplers import SeededSource, discrete_gaussian, discrete_laplace


def _dlap_pmf(t: float, support: np.ndarray) -> np.ndarray:
    """Discrete Laplace pmf ``(1 - q) / (1 + q) q**|z|``, ``q = exp(-1 / t)``."""
    q = math.exp(-1 / t)
    return (1 - q) / (1 + q) * q ** np.abs(support)


def _dgauss_pmf(s2: float, support: np.ndarray) -> np.ndarray:
    """Discrete Gaussian pmf on ``support`` (wide enough that the rest is below 1e-300)."""
    w = np.exp(-(support.astype(float) ** 2) / (2 * s2))
    return w / w.sum()


@pytest.mark.parametrize("kind", ["laplace", "gaussian"])
@pytest.mark.parametrize("scale", [1e-3, 0.3, 0.9, 1.0, 2.5, 40.0])
def test_zero_probability_matches_the_pmf(kind: str, scale: float) -> None:
    z = np.arange(-4000, 4001)
    pmf = _dlap_pmf(scale, z) if kind == "laplace" else _dgauss_pmf(scale, z)
    assert law(kind, Fraction(scale)).zero_probability() == pytest.approx(pmf[4000], rel=1e-12)


@pytest.mark.parametrize("t", [Fraction(1, 100), Fraction(1, 3), Fraction(1), Fraction(7, 2), 40])
@pytest.mark.parametrize("alpha", [0.5, 0.1, 0.05, 1e-3, 1e-9])
def test_laplace_half_width_is_the_smallest_covering_integer(t: Fraction, alpha: float) -> None:
    # brute force on the exact pmf: the smallest k with P[|Z| > k] <= alpha; the law's
    # half-width may exceed it only where the exact tail is within its 1e-9 margin of alpha
    z = np.arange(-20000, 20001)
    pmf = _dlap_pmf(float(t), z)
    above = np.array([pmf[np.abs(z) > k].sum() for k in range(0, 2000)])
    exact = int(np.argmax(above <= alpha))
    k = DiscreteLaplaceLaw(Fraction(t)).half_width(alpha)
    assert k == exact


@pytest.mark.parametrize("t", [Fraction(1, 10**6), Fraction(1, 7), Fraction(3), Fraction(2**50)])
@pytest.mark.parametrize("p", [0.4, 1e-6, 1e-300, 5e-324])
def test_laplace_tail_index_is_the_search_over_the_tail(t: Fraction, p: float) -> None:
    # the closed form agrees with a search over the tail bound it inverts, up to the float
    # evaluation of the tail (one step moves it by a relative 1 / t: 1e-15 at t = 2**50)
    j = laplace_tail_index(t, math.log(p))
    if p < 1e-300:  # the tail's float underflows there: compare in logarithms
        q = math.exp(-1 / float(t))
        log_tail = lambda i: -i / float(t) - math.log1p(q) + math.log1p(1e-9)  # noqa: E731
        tol = 1e-12 * abs(math.log(p))
        assert log_tail(j) <= math.log(p) + tol
        assert j == 1 or log_tail(j - 1) > math.log(p) - tol
        return
    assert laplace_tail(t, j) <= p * (1 + 1e-12)
    assert j == 1 or laplace_tail(t, j - 1) > p * (1 - 1e-12)


def test_laplace_half_width_is_finite_at_the_smallest_alpha() -> None:
    # log(alpha / 2) would be -inf: alpha / 2 underflows to 0 for the smallest double
    assert DiscreteLaplaceLaw(Fraction(1)).half_width(5e-324) == 744


@pytest.mark.parametrize("s2", [Fraction(1, 100), Fraction(2), Fraction(81, 4), Fraction(900)])
@pytest.mark.parametrize("alpha", [0.2, 0.05, 1e-4])
def test_gaussian_half_width_is_the_smallest_covering_integer(s2: Fraction, alpha: float) -> None:
    z = np.arange(-3000, 3001)
    pmf = _dgauss_pmf(float(s2), z)
    above = np.array([pmf[np.abs(z) > k].sum() for k in range(0, 3000)])
    assert DiscreteGaussianLaw(s2).half_width(alpha) == int(np.argmax(above <= alpha))


@pytest.mark.parametrize("kind, scale", [("laplace", Fraction(5, 2)), ("gaussian", Fraction(30))])
def test_tails_bound_the_exact_tail(kind: str, scale: Fraction) -> None:
    z = np.arange(-4000, 4001)
    pmf = _dlap_pmf(float(scale), z) if kind == "laplace" else _dgauss_pmf(float(scale), z)
    noise = law(kind, scale)
    for j in range(1, 60):
        exact = pmf[z >= j].sum()
        assert noise.tail(j) >= exact
        if kind == "laplace":  # exact up to the margin
            assert noise.tail(j) <= exact * (1 + 1e-8)


@pytest.mark.parametrize("kind, scale", [("laplace", Fraction(4)), ("gaussian", Fraction(16))])
def test_threshold_is_the_smallest_count_with_the_tail_below_delta(
    kind: str, scale: Fraction
) -> None:
    noise = law(kind, scale)
    tau = threshold(kind, scale, 1e-6, top=3)
    assert noise.tail(tau - 3) <= 1e-6 < noise.tail(tau - 4)


@pytest.mark.parametrize("size", [0, 5, 16, 17, 70_000, 140_000])
def test_laplace_blocks_are_the_draws(size: int) -> None:
    t = Fraction(2**36 + 10**7)
    noise = DiscreteLaplaceLaw(t)
    whole = noise.draw(size, SeededSource(3))
    blocks = [b.copy() for b in noise.blocks(size, SeededSource(3))]
    assert np.array_equal(np.concatenate(blocks) if blocks else np.zeros(0), whole)
    assert np.array_equal(whole, discrete_laplace(t, size, rng=3))  # the public sampler's


@pytest.mark.parametrize("s2", [Fraction(9, 4), Fraction(5000), Fraction(2**44)])
@pytest.mark.parametrize("size", [1, 45_000, 100_000])
def test_gaussian_blocks_are_the_draws(s2: Fraction, size: int) -> None:
    noise = DiscreteGaussianLaw(s2)
    whole = noise.draw(size, SeededSource(4))
    blocks = [b.copy() for b in noise.blocks(size, SeededSource(4))]
    assert np.array_equal(np.concatenate(blocks), whole)
    if s2 <= 2**40:
        assert np.array_equal(whole, discrete_gaussian(0, size, rng=4, sigma2=s2))
