"""Samplers at the edges of their parameters.

Distribution tests follow tests/samplers/test_distributions.py: a fixed seed, a chi-square
goodness-of-fit against the exact pmf that must give p > 1e-3 (a correct sampler fails with
probability 1e-3 for a random seed; the seed is fixed, so the outcome is deterministic), and
the same draws against the pmf of the wrong variant (the scale 10% off) that must give
p < 1e-6: at 200,000 draws the expected chi-square statistic of that error is in the hundreds.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest

from dpkit.errors import ParameterError
from dpkit.samplers import (
    bernoulli_exp,
    bernoulli_exp_int,
    discrete_gaussian,
    discrete_laplace,
    geometric,
    uniform_int,
)
from dpkit.samplers._exact import LN2_UP, ExpNegReal
from dpkit.samplers.heavy_tailed import rounded_cauchy, rounded_student_t, student_t_cdf

N = 200_000
PASS = 1e-3
FAIL = 1e-6


def _dgauss_pmf(sigma2: float, support: np.ndarray) -> np.ndarray:
    full = np.arange(-40, 41)
    z = np.exp(-(full.astype(float) ** 2) / (2 * sigma2)).sum()
    return np.exp(-(support.astype(float) ** 2) / (2 * sigma2)) / z


# ----------------------------------------------------------------- discrete Gaussian, small sigma


@pytest.mark.parametrize("sigma", [0.3, 0.45])
def test_discrete_gaussian_small_sigma_has_the_exact_law(
    chi2_pvalue: Callable, sigma: float
) -> None:
    # sigma < 1/2 used to raise "_exp_decimal: exponent out of range" (after the spend, in the
    # mechanism); P[|Z| = 1] is 0.0039 (sigma 0.3) and 0.085 (sigma 0.45), so 200,000 draws
    # see hundreds to thousands of them and a 10% error in sigma moves that mass by 2.6x / 1.5x
    draws = discrete_gaussian(sigma, N, rng=31)
    support = np.arange(-4, 5)
    assert chi2_pvalue(draws, support, _dgauss_pmf(sigma**2, support)) > PASS
    assert chi2_pvalue(draws, support, _dgauss_pmf((1.1 * sigma) ** 2, support)) < FAIL


def test_discrete_gaussian_tiny_sigma_is_zero() -> None:
    # P[Z != 0] = 2 exp(-1 / (2 sigma**2)) / Z: about 4e-22 at sigma 0.1, 0 to any precision
    # at 1e-8, so every draw is 0 (and the call is quick)
    assert not discrete_gaussian(0.1, 10_000, rng=1).any()
    assert not discrete_gaussian(1e-8, 1000, rng=2).any()
    assert not discrete_gaussian(0, 1000, rng=3, sigma2=Fraction(1, 10**30)).any()


# ----------------------------------------------------------------- exp(-x) and its zero digits


def test_exp_neg_zero_digits_are_exact_at_the_threshold() -> None:
    # floor(2**64 exp(-x)) is 1 just below x = 64 ln 2 and 0 above: the shortcut must only
    # skip work where the digits are provably zero (a wrong LN2_UP below ln 2 would return 0
    # for x just below 64 ln 2)
    with localcontext() as ctx:
        ctx.prec = 60
        ln2 = Decimal(2).ln()
    below = Fraction(ln2 * 64) - Fraction(1, 10**12)
    above = Fraction(ln2 * 64) + Fraction(1, 10**12)
    assert ExpNegReal(below).prefix(64) == 1
    assert ExpNegReal(above).prefix(64) == 0
    assert Fraction(ln2) < LN2_UP and LN2_UP - Fraction(ln2) < Fraction(1, 10**15)
    # with a factor r: r exp(-x) below 2**-64 needs x >= (64 + log2 r) ln 2
    r = Fraction(2**20)
    x = Fraction(ln2 * 84) - Fraction(1, 10**12)
    assert ExpNegReal(x, r).prefix(64) == 1


@pytest.mark.parametrize(
    "call",
    [
        lambda: bernoulli_exp(2**31, 5, rng=1),
        lambda: bernoulli_exp(Fraction(10**400), 5, rng=1),
        lambda: bernoulli_exp_int(2**31, [0, 1, 2], rng=1),
        lambda: geometric(2**31, 5, rng=1),
        lambda: discrete_laplace(1e-300, 5, rng=1),
    ],
)
def test_huge_rates_finish_at_once_with_the_exact_answer(call: Callable[[], np.ndarray]) -> None:
    # exp(-2**31) has about 3e9 leading zero bits: every Bernoulli is False (except k = 0,
    # probability exactly 1), every geometric and discrete Laplace draw is 0
    t0 = time.perf_counter()
    out = call()
    assert time.perf_counter() - t0 < 5  # it used to run forever (cost linear in x)
    if out.dtype == bool:
        assert out.tolist() in ([False] * 5, [True, False, False])
    else:
        assert not out.any()


def test_bernoulli_exp_near_the_shortcut_keeps_its_law(chi2_pvalue: Callable) -> None:
    # x = 40: exp(-40) = 4.2e-18 is above 2**-64, computed; 2**20 draws all fail except with
    # probability 4e-12; x = 1/2 and 3 have the textbook law (test_distributions does more)
    assert not bernoulli_exp(40, 1 << 16, rng=5).any()
    p = math.exp(-3)
    draws = bernoulli_exp(3, N, rng=6).astype(int)
    assert chi2_pvalue(draws, np.array([0, 1]), np.array([1 - p, p])) > PASS
    wrong = math.exp(-3.3)
    assert chi2_pvalue(draws, np.array([0, 1]), np.array([1 - wrong, wrong])) < FAIL


def test_sizes_beyond_the_limit_are_refused_before_allocating() -> None:
    for call in (
        lambda: uniform_int(3, 2**31),
        lambda: discrete_laplace(1.0, 2**53 + 1),
        lambda: geometric(1.0, 2**63),
    ):
        with pytest.raises(ParameterError, match="`size` must be at most 2\\*\\*28"):
            call()


# ----------------------------------------------------------------- rounded heavy tails


class _Words:
    """A BitSource replaying given words, then a seeded stream."""

    secure = False

    def __init__(self, words: list[int]) -> None:
        from dpkit.samplers import SeededSource

        self._script = list(words)
        self._rest = SeededSource(0)

    def words(self, n: int) -> np.ndarray:
        take, self._script = self._script[:n], self._script[n:]
        out = np.empty(n, dtype=np.uint64)
        out[: len(take)] = take
        if n > len(take):
            out[len(take) :] = self._rest.words(n - len(take))
        return out


def _source(words: list[int]):
    from dpkit.samplers import BitSource

    return type("Words", (_Words, BitSource), {})(words)


def _consistent(k: int, ratio: Fraction, df: int, word: int) -> bool:
    """Whether K = k is possible for U in [word, word + 1) / 2**64: the cell
    [F((k-1/2)/r), F((k+1/2)/r)) of k meets that interval (at huge ratios the first word
    holds billions of cells, and later words, drawn lazily, pick the one)."""
    with localcontext() as ctx:
        ctx.prec = 100
        lo = Fraction(student_t_cdf((k - Fraction(1, 2)) / ratio, df))
        hi = Fraction(student_t_cdf((k + Fraction(1, 2)) / ratio, df))
    u_lo, u_hi = Fraction(word, 2**64), Fraction(word + 1, 2**64)
    return lo < u_hi and u_lo < hi


@pytest.mark.parametrize("ratio", [Fraction(2**20), Fraction(2**40), Fraction(10**30)])
@pytest.mark.parametrize("df", [1, 3])
def test_far_tail_inversion_is_exact_and_total(ratio: Fraction, df: int) -> None:
    # U near 1 - 1e-5 at a large sigma/grid ratio made the old search step oscillate and raise
    # InternalError after the spend; the exact galloping search returns the K that U forces
    word = int((1 - 1e-5) * 2**64)
    for u in (word, 2**64 - 2, 7):
        sampler = rounded_cauchy if df == 1 else lambda r, n, rng: rounded_student_t(3, r, n, rng)
        k = int(sampler(ratio, 1, _source([u]))[0])
        assert _consistent(k, ratio, df, u), (k, u)


def _cauchy_cdf(z: np.ndarray) -> np.ndarray:
    return 0.5 + np.arctan(z) / np.pi


@pytest.mark.parametrize("sampler", ["cauchy", "t3"])
def test_rounded_heavy_tails_at_a_small_ratio_have_the_exact_law(
    chi2_pvalue: Callable, sampler: str
) -> None:
    # ratio 1/2: the cells [(k - 1/2) g, (k + 1/2) g) are two scales wide, so the law of K
    # depends sharply on where the search puts a cell's ends. 6,000 draws (about 2 s each)
    # against the exact pmf (p > 1e-3), and the same draws against two wrong variants
    # (p < 1e-6): cells whose ends sit a quarter cell off (P[K = 1] 0.23 and P[K = -1] 0.10
    # instead of 0.15 each, tens of standard errors) and a scale 25% too large (P[K = 0]
    # 0.43 instead of 0.50 for Cauchy: 10 standard errors of 0.0065)
    from scipy import stats

    ratio = Fraction(1, 2)
    if sampler == "cauchy":
        k = rounded_cauchy(ratio, 6000, rng=11)
        cdf: Callable[[np.ndarray], np.ndarray] = _cauchy_cdf
    else:
        k = rounded_student_t(3, ratio, 6000, rng=11)
        cdf = stats.t(3).cdf
    support = np.arange(-12, 13)
    draws = np.asarray(k, dtype=np.int64)

    def pmf(r: float, shift: float = 0.0) -> np.ndarray:
        return cdf((support + 0.5 + shift) / r) - cdf((support - 0.5 + shift) / r)

    assert chi2_pvalue(draws, support, pmf(0.5)) > PASS
    assert chi2_pvalue(draws, support, pmf(0.5, shift=-0.25)) < FAIL
    assert chi2_pvalue(draws, support, pmf(0.625)) < FAIL
