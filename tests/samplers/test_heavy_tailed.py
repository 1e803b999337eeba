"""Known-answer and distribution tests of dpkit.samplers.heavy_tailed (used by the frameworks)."""

from __future__ import annotations

import math
from decimal import localcontext
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

import dpkit
from dpkit.samplers.heavy_tailed import (
    exp_weighted_choice,
    rounded_cauchy,
    rounded_laplace,
    rounded_student_t,
    student_t_cdf,
    uniform_below,
    uniform_on_grid,
)


def _rounded_pmf(cdf, ratio: float, support: np.ndarray) -> np.ndarray:
    return cdf((support + 0.5) / ratio) - cdf((support - 0.5) / ratio)


@pytest.mark.parametrize("df", [1, 2, 3, 4, 7])
def test_student_t_cdf_matches_scipy(df: int) -> None:
    with localcontext() as ctx:
        ctx.prec = 40
        for z in (Fraction(-50), Fraction(-7, 3), Fraction(0), Fraction(1, 10), Fraction(9)):
            assert float(student_t_cdf(z, df)) == pytest.approx(
                stats.t.cdf(float(z), df), abs=1e-15
            )


def test_rounded_laplace_has_the_exact_law(chi2_pvalue) -> None:
    ratio = 3.0
    k = rounded_laplace(ratio, 40_000, rng=1)
    support = np.arange(-30, 31)
    pmf = _rounded_pmf(stats.laplace(scale=ratio).cdf, 1.0, support)
    # chi-square at level 1e-3 with 40k draws: a scale off by 5% fails
    assert chi2_pvalue(k, support, pmf) > 1e-3


@pytest.mark.parametrize(
    ("sampler", "dist"),
    [
        (lambda r, n, rng: rounded_cauchy(r, n, rng), stats.cauchy),
        (lambda r, n, rng: rounded_student_t(3, r, n, rng), stats.t(3)),
    ],
)
def test_rounded_heavy_tails_have_the_exact_law(chi2_pvalue, sampler, dist) -> None:
    ratio = 2.5
    k = sampler(ratio, 3000, 7)
    support = np.arange(-25, 26)
    pmf = _rounded_pmf(dist.cdf, ratio, support)
    # chi-square at level 1e-3; a scale off by 20% fails at 3000 draws
    assert chi2_pvalue(np.asarray(k, dtype=np.int64), support, pmf) > 1e-3


def test_tiny_ratio_concentrates_on_zero_and_huge_ratio_spreads() -> None:
    assert set(rounded_cauchy(Fraction(1, 10**6), 50, rng=0).tolist()) <= {-1, 0, 1}
    big = rounded_cauchy(2**40, 20, rng=0)
    assert np.median(np.abs(big)) > 2**36


def test_exp_weighted_choice_law_and_zero_weights(chi2_pvalue) -> None:
    w = np.array([0.5, 0.0, 2.0, 1.0, 3.0])
    e = np.array([3, 0, 1, 0, 5])
    rate = Fraction(2, 3)
    idx = exp_weighted_choice(w, e, rate, 30_000, rng=5)
    assert 1 not in set(idx.tolist())  # weight 0 is never drawn
    p = w * np.exp(-float(rate) * e)
    p /= p.sum()
    assert chi2_pvalue(idx, np.arange(5), p) > 1e-3


def test_exp_weighted_choice_uses_exact_weights_and_extreme_exponents() -> None:
    # exponents 0 and 2000: exp(-1000) underflows in float, yet the draw is exact and the
    # class keeps positive (tiny) probability; with equal exponents the exact weights rule
    idx = exp_weighted_choice(
        np.array([1.0, 1.0]), np.array([0, 2000]), Fraction(1, 2), 2000, rng=3
    )
    assert set(idx.tolist()) == {0}
    exact = {0: Fraction(1, 3), 1: Fraction(2, 3)}
    idx = exp_weighted_choice(
        np.array([1 / 3, 2 / 3]),
        np.array([4, 4]),
        Fraction(1),
        6000,
        rng=4,
        exact_weight=exact.__getitem__,
    )
    assert abs(np.mean(idx == 1) - 2 / 3) < 4 * math.sqrt(2 / 9 / 6000)


def test_uniform_below_is_uniform_per_entry() -> None:
    n = np.array([3] * 30_000 + [1000] * 10)
    v = uniform_below(n, rng=2)
    assert v.shape == n.shape
    assert np.all((v >= 0) & (v < n))  # never n itself (a draw of 3 has probability 1/4)
    counts = np.bincount(v[:30_000], minlength=3)
    assert counts.size == 3 and stats.chisquare(counts).pvalue > 1e-3


def test_uniform_on_grid_masses_are_the_cell_intersections() -> None:
    # [0.1, 0.9] on the grid 1/4: cells of 0 (0.1..0.125), 0.25, 0.5, 0.75 (full) and of 1
    # (0.875..0.9): masses 0.025, 0.25, 0.25, 0.25, 0.025 over 0.8
    vals = np.array([uniform_on_grid(0.1, 0.9, 0.25, rng=s) for s in range(4000)])
    got = np.array([np.mean(vals == z) for z in (0.0, 0.25, 0.5, 0.75, 1.0)])
    want = np.array([0.025, 0.25, 0.25, 0.25, 0.025]) / 0.8
    assert np.all(np.abs(got - want) < 4 * np.sqrt(want * (1 - want) / 4000) + 1e-3)


@pytest.mark.parametrize(
    ("call", "exc"),
    [
        (lambda: rounded_laplace(0, 1), dpkit.ParameterError),
        (lambda: rounded_cauchy(-1.0, 1), dpkit.ParameterError),
        (lambda: rounded_cauchy(True, 1), TypeError),
        (lambda: rounded_student_t(0, 1.0, 1), dpkit.ParameterError),
        (
            lambda: exp_weighted_choice(np.zeros(3), np.zeros(3, int), Fraction(1), 1),
            dpkit.ParameterError,
        ),
        (lambda: uniform_below([0]), dpkit.ParameterError),
        (lambda: uniform_on_grid(0.0, 1.0, 0.3), dpkit.ParameterError),
    ],
)
def test_bad_parameters(call, exc) -> None:
    with pytest.raises(exc):
        call()


def test_rational_cdf_boundaries_are_handled_exactly(chi2_pvalue) -> None:
    # ratio 1/2 puts the cell boundaries of k = 0 and k = -1 at z = +-1, where the Cauchy CDF
    # is exactly 3/4 and 1/4 (rational: decimal digits would never settle the comparison)
    k = rounded_cauchy(0.5, 2000, rng=11)
    support = np.arange(-6, 7)
    pmf = _rounded_pmf(stats.cauchy.cdf, 0.5, support)
    assert chi2_pvalue(k, support, pmf) > 1e-3
    # an even df with df + z**2 a square: t_4 at z = 3/2 is exactly 112/125
    assert rounded_student_t(4, Fraction(1, 3), 50, rng=1).size == 50  # h = 3: z = 3/2 at k = 0
