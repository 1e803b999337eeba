"""Exact-distribution tests for every sampler.

Each test draws a fixed-seed sample and runs a chi-square goodness-of-fit test against the
exact pmf; the test passes when p > 1e-3 (a correct sampler fails with probability 1e-3 for
a random seed, and the seed is fixed, so the outcome is deterministic). Every scale-bearing
sampler is also tested against the pmf with its scale 10% off, which must give p < 1e-6: the
sample sizes (200,000 draws) are chosen so that this discriminates (the expected chi-square
statistic for a 10% scale error at this size is in the hundreds or more).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

import numpy as np
import pytest

from dpkit.errors import ParameterError
from dpkit.samplers import (
    BitSource,
    bernoulli,
    bernoulli_exp,
    bernoulli_exp_int,
    discrete_gaussian,
    discrete_laplace,
    geometric,
    permutation,
    uniform_int,
)
from dpkit.samplers._discrete import discrete_gaussian_tc

N = 200_000
PASS = 1e-3
FAIL = 1e-6


def _dlap_pmf(scale: float, support: np.ndarray) -> np.ndarray:
    q = math.exp(-1 / scale)
    return (1 - q) / (1 + q) * q ** np.abs(support)


def _dgauss_pmf(sigma2: float, support: np.ndarray) -> np.ndarray:
    k = int(40 * math.sqrt(sigma2)) + 10
    full = np.arange(-k, k + 1)
    z = np.exp(-(full.astype(float) ** 2) / (2 * sigma2)).sum()
    return np.exp(-(support.astype(float) ** 2) / (2 * sigma2)) / z


def test_uniform_int(chi2_pvalue: Callable) -> None:
    draws = uniform_int(37, N, rng=1)
    support = np.arange(37)
    assert chi2_pvalue(draws, support, np.full(37, 1 / 37)) > PASS
    assert draws.min() >= 0 and draws.max() < 37


def test_uniform_int_large_n() -> None:
    n = 2**63
    draws = uniform_int(n, 1000, rng=2)
    assert draws.min() >= 0
    # the top bit is set about half the time (binomial sd ~16; 6 sd window)
    assert abs(int((draws >= 2**62).sum()) - 500) < 100


@pytest.mark.parametrize("p", [Fraction(1, 3), Fraction(0), Fraction(1), 0.125])
def test_bernoulli(chi2_pvalue: Callable, p: Fraction | float) -> None:
    draws = bernoulli(p, N, rng=3).astype(int)
    pf = float(p)
    if pf in (0.0, 1.0):
        assert np.all(draws == int(pf))
        return
    assert chi2_pvalue(draws, np.array([0, 1]), np.array([1 - pf, pf])) > PASS


@pytest.mark.parametrize("x", [0.5, 2.0, Fraction(1, 7)])
def test_bernoulli_exp(chi2_pvalue: Callable, x: float | Fraction) -> None:
    p = math.exp(-float(x))
    draws = bernoulli_exp(x, N, rng=4).astype(int)
    assert chi2_pvalue(draws, np.array([0, 1]), np.array([1 - p, p])) > PASS
    wrong = math.exp(-float(x) * 1.1)
    assert chi2_pvalue(draws, np.array([0, 1]), np.array([1 - wrong, wrong])) < FAIL


def test_bernoulli_exp_int(chi2_pvalue: Callable) -> None:
    # exponents k * x whose k spans one to three bytes; probabilities between 0.1 and 0.9
    x = Fraction(1, 2**19)
    assert bernoulli_exp_int(x, np.zeros(100, dtype=np.int64), rng=0).all()
    for k in (55_000, 2**18, 2**19 + 77, 1_153_434):
        p = math.exp(-float(x) * k)
        draws = bernoulli_exp_int(x, np.full(50_000, k), rng=k).astype(int)
        assert chi2_pvalue(draws, np.array([0, 1]), np.array([1 - p, p])) > PASS
    # mixed exponents in one call keep each element's own probability
    ks = np.tile(np.array([3, 0, 6]), 30_000)
    draws = bernoulli_exp_int(Fraction(1, 3), ks, rng=11)
    for k in (3, 6):
        p = math.exp(-k / 3)
        got = draws[ks == k].astype(int)
        assert chi2_pvalue(got, np.array([0, 1]), np.array([1 - p, p])) > PASS
    assert draws[ks == 0].all()


@pytest.mark.parametrize("x", [0.5, 3.0, Fraction(1, 1000)])
def test_geometric(chi2_pvalue: Callable, x: float | Fraction) -> None:
    xf = float(x)
    draws = geometric(x, N, rng=5)
    support = np.arange(0, int(60 / xf))
    q = math.exp(-xf)
    assert chi2_pvalue(draws, support, (1 - q) * q**support) > PASS
    qw = math.exp(-xf / 1.1)
    assert chi2_pvalue(draws, support, (1 - qw) * qw**support) < FAIL


@pytest.mark.parametrize("scale", [0.7, 3.0, 10.5])
def test_discrete_laplace(chi2_pvalue: Callable, scale: float) -> None:
    draws = discrete_laplace(scale, N, rng=6)
    support = np.arange(-int(40 * scale) - 5, int(40 * scale) + 6)
    assert chi2_pvalue(draws, support, _dlap_pmf(scale, support)) > PASS
    assert chi2_pvalue(draws, support, _dlap_pmf(scale * 1.1, support)) < FAIL


def _binned_pvalue(draws: np.ndarray, cdf: Callable[[np.ndarray], np.ndarray], bins: int) -> float:
    """Chi-square over `bins` cells of equal probability under the exact cdf."""
    from scipy import stats

    edges = np.quantile(draws, np.linspace(0, 1, bins + 1)[1:-1]).astype(np.int64)
    edges = np.unique(edges)
    probs = np.diff(np.concatenate([[0.0], cdf(edges), [1.0]]))
    obs = np.bincount(np.searchsorted(edges, draws, side="left"), minlength=edges.size + 1)
    exp = probs * draws.size
    stat = float(((obs - exp) ** 2 / exp).sum())
    return float(stats.chi2.sf(stat, df=edges.size))


def _dlap_cdf(scale: float) -> Callable[[np.ndarray], np.ndarray]:
    """P[Z < e] for each edge e (Z discrete Laplace): the cells are [e_i, e_{i+1})."""
    q = math.exp(-1 / scale)

    def cdf(e: np.ndarray) -> np.ndarray:
        e = e.astype(float)
        # P[Z >= k] = q**k / (1 + q) for k >= 1; P[Z < k] = 1 - that, symmetric below
        upper = 1 - q**e / (1 + q)
        lower = q ** (1 - e) / (1 + q)  # P[Z <= k-1] for k <= 0
        return np.where(e >= 1, upper, lower)

    return cdf


@pytest.mark.parametrize("scale", [65537.0, 2.0**33 + 0.5])
def test_discrete_laplace_large_scale(scale: float) -> None:
    draws = discrete_laplace(scale, N, rng=7)
    assert _binned_pvalue(draws, _dlap_cdf(scale), 50) > PASS
    assert _binned_pvalue(draws, _dlap_cdf(scale * 1.1), 50) < FAIL


@pytest.mark.parametrize("sigma", [0.8, 2.0, 7.3])
def test_discrete_gaussian(chi2_pvalue: Callable, sigma: float) -> None:
    draws = discrete_gaussian(sigma, N, rng=8)
    support = np.arange(-int(12 * sigma) - 3, int(12 * sigma) + 4)
    assert chi2_pvalue(draws, support, _dgauss_pmf(sigma**2, support)) > PASS
    assert chi2_pvalue(draws, support, _dgauss_pmf((1.1 * sigma) ** 2, support)) < FAIL


@pytest.mark.parametrize(("t", "c"), [(3, 3), (5, 4), (40, 39)])
def test_discrete_gaussian_tc(chi2_pvalue: Callable, t: int, c: int) -> None:
    draws = discrete_gaussian_tc(t, c, N, rng=9)
    s2 = t * c
    support = np.arange(-int(12 * math.sqrt(s2)) - 3, int(12 * math.sqrt(s2)) + 4)
    assert chi2_pvalue(draws, support, _dgauss_pmf(s2, support)) > PASS
    assert chi2_pvalue(draws, support, _dgauss_pmf(1.21 * s2, support)) < FAIL


def test_discrete_gaussian_tc_large_sigma() -> None:
    from scipy import stats

    t = c = 2**20  # sigma = 2**20: compare with the normal cdf (discretisation error ~1e-12)
    draws = discrete_gaussian_tc(t, c, N, rng=10).astype(float) / 2**20
    assert stats.kstest(draws, "norm").pvalue > PASS
    assert stats.kstest(draws, "norm", args=(0, 1.1)).pvalue < FAIL


def test_permutation_is_uniform(chi2_pvalue: Callable) -> None:
    perms = np.array([permutation(3, rng=i) for i in range(6000)])
    codes = perms[:, 0] * 9 + perms[:, 1] * 3 + perms[:, 2]
    support = np.array(
        sorted({a * 9 + b * 3 + c for a, b, c in __import__("itertools").permutations(range(3))})
    )
    assert chi2_pvalue(codes, support, np.full(6, 1 / 6)) > PASS
    big = permutation(100_000, rng=1)
    assert np.array_equal(np.sort(big), np.arange(100_000))


@pytest.mark.parametrize(
    ("fn", "args"),
    [
        (geometric, (0,)),
        (geometric, (-1.0,)),
        (discrete_laplace, (float("nan"),)),
        (discrete_laplace, (0.0,)),
        (discrete_gaussian, (-2.0,)),
        (bernoulli, (1.5,)),
        (bernoulli_exp, (-0.5,)),
        (uniform_int, (0,)),
    ],
)
def test_bad_parameters(fn: Callable, args: tuple) -> None:
    with pytest.raises(ValueError):
        fn(*args, 10, rng=0)


def test_bool_and_wrong_types() -> None:
    with pytest.raises(TypeError):
        discrete_laplace(True, 3, rng=0)
    with pytest.raises(TypeError):
        geometric("1", 3, rng=0)
    with pytest.raises(TypeError):
        discrete_laplace(1.0, 2.5, rng=0)


def test_seeded_reproducibility() -> None:
    a = discrete_laplace(3.0, 1000, rng=42)
    b = discrete_laplace(3.0, 1000, rng=42)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, discrete_laplace(3.0, 1000, rng=43))


@pytest.mark.parametrize("y", [0.0, 2.0**-30, 0.3, 1.0, 1.5, 3.7, 12.0])
def test_bernoulli_exp_pairs_law(y: float) -> None:
    # 200,000 draws of Bernoulli(exp(-y)), y = rate (hi + lo) split unevenly over the pair;
    # the frequency within 4.5 standard errors (two-sided level about 7e-6), and a rate 10%
    # off rejected for the y where that moves the frequency by more than 10 standard errors
    from dpkit.samplers._discrete import bernoulli_exp_pairs

    n = 200_000
    hi, lo = np.full(n, 0.75 * y), np.full(n, 0.25 * y)
    out = bernoulli_exp_pairs(Fraction(2, 3), hi * 1.5, lo * 1.5, rng=4)
    p = math.exp(-y)
    se = math.sqrt(max(p * (1 - p), 1e-12) / n)
    assert abs(out.mean() - p) <= 4.5 * se + 1e-12
    if 0.3 <= y <= 3.7:
        assert abs(out.mean() - math.exp(-1.1 * y)) > 10 * se


class _Words(BitSource):
    """Hands out the given 64-bit words, then zeros (for exact threshold tests)."""

    def __init__(self, words: list[int]) -> None:
        self.queue = list(words)

    def words(self, n: int) -> np.ndarray:
        out = [self.queue.pop(0) if self.queue else 0 for _ in range(n)]
        return np.array(out, dtype=np.uint64)


@pytest.mark.parametrize(
    ("hi", "lo"),
    [(2.0**-11, 2.0**-70), (3 * 2.0**-12, -(2.0**-60)), (1e-7, 0.0), (2.0**-10 - 2.0**-40, 0.0)],
)
def test_bernoulli_exp_pairs_decides_at_the_exact_threshold(hi: float, lo: float) -> None:
    # y = hi + lo below 2**-10: one word per draw, compared with floor(2**64 exp(-y)) taken
    # from 60 exact digits; words one below the threshold are accepted, one above rejected,
    # so the float bounds never decide a draw the exact digits would not
    from decimal import Decimal, localcontext

    from dpkit.samplers._discrete import bernoulli_exp_pairs

    y = Fraction(hi) + Fraction(lo)
    with localcontext() as ctx:
        ctx.prec = 60
        thr = int((-Decimal(y.numerator) / y.denominator).exp() * (1 << 64))
    for word, want in (
        (thr - 1, True),
        (thr + 1, False),
        (thr - 2**20, True),
        (thr + 2**20, False),
    ):
        got = bernoulli_exp_pairs(1, [hi], [lo], rng=_Words([word]))
        assert bool(got[0]) is want, (word - thr, want)


def test_bernoulli_exp_pairs_refuses_bad_input() -> None:
    from dpkit.samplers._discrete import bernoulli_exp_pairs

    with pytest.raises(ParameterError, match=">= 0"):
        bernoulli_exp_pairs(1, [1.0], [-2.0])
    with pytest.raises(ParameterError, match="same length"):
        bernoulli_exp_pairs(1, [1.0, 2.0], [0.0])
    with pytest.raises(ParameterError, match="finite"):
        bernoulli_exp_pairs(1, [math.inf], [0.0])
    with pytest.raises(ParameterError, match="`rate`"):
        bernoulli_exp_pairs(-1, [1.0], [0.0])
