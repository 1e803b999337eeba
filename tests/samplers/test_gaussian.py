"""The envelope sampler of the discrete Gaussian (large sigma): exact distribution, every path.

Distribution tests follow tests/samplers/test_distributions.py: a fixed seed, a chi-square
test over cells of equal probability under the exact pmf, passing when p > 1e-3, and the
same draws against the pmf with sigma 10% too large, which must give p < 1e-6. With 20
cells the expected chi-square statistic of a 10% sigma error is about 0.0136 per draw
(computed from the pmfs), so 10,000 draws give ~136 against a 1e-6 critical value of 64,
and 200,000 draws give thousands.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpkit.samplers import SeededSource, discrete_gaussian
from dpkit.samplers._discrete import discrete_gaussian_tc
from dpkit.samplers._exact import exp_neg
from dpkit.samplers._gaussian import EnvelopeGaussian, _Workspace

PASS = 1e-3
FAIL = 1e-6


def _pmf(s2: float) -> tuple[np.ndarray, np.ndarray]:
    k = int(40 * math.sqrt(s2)) + 10
    ys = np.arange(-k, k + 1)
    w = np.exp(-(ys.astype(float) ** 2) / (2 * s2))
    return ys, w / w.sum()


def _cells_pvalue(draws: np.ndarray, s2: float, cells: int, sigma_factor: float = 1.0) -> float:
    """Chi-square of ``draws`` over ``cells`` equiprobable cells of N_Z(0, s2), tested
    against N_Z(0, s2 * sigma_factor**2)."""
    ys, pmf = _pmf(s2)
    cdf = np.cumsum(pmf)
    # right ends of the cells: cell i holds the values in (ys[edge_{i-1}], ys[edge_i]]
    edges = np.unique(np.searchsorted(cdf, np.linspace(0, 1, cells + 1)[1:-1]))
    tested = _pmf(s2 * sigma_factor**2)
    tys, tpmf = tested
    tcdf = np.cumsum(tpmf)
    right = np.searchsorted(tys, ys[edges])
    probs = np.diff(np.concatenate([[0.0], tcdf[right], [1.0]]))
    obs = np.bincount(np.searchsorted(ys[edges], draws, side="left"), minlength=edges.size + 1)
    exp = probs * draws.size
    stat = float(((obs - exp) ** 2 / exp).sum())
    return float(stats.chi2.sf(stat, df=edges.size))


@pytest.mark.parametrize(("t", "c"), [(2**14 + 3, 2**14 + 1), (40, 39), (3824, 3824)])
def test_tc_matches_exact_pmf(t: int, c: int) -> None:
    # t c > 2**28 (formerly the byte-wise path); sigma**2 = 1560 near the envelope's lower
    # limit (bins of width 1); the lattice sigma of the scalar Gaussian mechanism
    draws = discrete_gaussian_tc(t, c, 200_000, rng=21)
    assert _cells_pvalue(draws, t * c, 50) > PASS
    assert _cells_pvalue(draws, t * c, 50, 1.1) < FAIL


def test_discrete_gaussian_large_sigma_matches_exact_pmf() -> None:
    sigma = 2.0**14 + 0.5  # rational variance, not of the t * c form
    draws = discrete_gaussian(sigma, 200_000, rng=22)
    assert _cells_pvalue(draws, sigma**2, 50) > PASS
    assert _cells_pvalue(draws, sigma**2, 50, 1.1) < FAIL


def test_largest_sigma_matches_normal() -> None:
    # sigma**2 = 2**56, the largest allowed: squares near int64's limit; the normal cdf is
    # exact to ~1e-16 at this scale, so a KS test against it is sharp
    draws = discrete_gaussian_tc(2**28, 2**28, 200_000, rng=23).astype(float) / 2**28
    assert stats.kstest(draws, "norm").pvalue > PASS
    assert stats.kstest(draws, "norm", args=(0, 1.1)).pvalue < FAIL


def _counting(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Count the comparisons settled by the exact fallback."""
    seen = {"exact": 0}
    inner = EnvelopeGaussian._compare

    def spy(reals: list, words: np.ndarray, source: SeededSource) -> np.ndarray:
        seen["exact"] += len(reals)
        return inner(reals, words, source)

    monkeypatch.setattr(EnvelopeGaussian, "_compare", staticmethod(spy))
    return seen


def test_exact_fallback_alone_is_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    # no squeeze and a float bound of 1: the float test never decides, so every proposal
    # in a bin is settled by the exact decimal comparison
    seen = _counting(monkeypatch)
    s2 = Fraction(1500)
    env = EnvelopeGaussian(s2, squeeze=False, eps=1.0)
    draws = env.sample(10_000, SeededSource(24))
    assert seen["exact"] >= 10_000
    assert _cells_pvalue(draws, float(s2), 20) > PASS
    assert _cells_pvalue(draws, float(s2), 20, 1.1) < FAIL


def test_tail_piece_is_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    # the tail starts at one sigma, so about a third of the draws come from it
    seen = _counting(monkeypatch)
    s2 = Fraction(1500)
    env = EnvelopeGaussian(s2, tail_sigmas=Fraction(1))
    draws = env.sample(20_000, SeededSource(25))
    beyond = np.count_nonzero((draws >= env.R) | (draws < -env.R))
    assert beyond > 5_000 and seen["exact"] > beyond
    assert _cells_pvalue(draws, float(s2), 20) > PASS
    assert _cells_pvalue(draws, float(s2), 20, 1.1) < FAIL


def test_float_test_agrees_with_exact_comparison(monkeypatch: pytest.MonkeyPatch) -> None:
    # brute-force oracle: U < p with U's first 64 bits W and P = floor(2**64 p) is decided
    # by W < P whenever W != P; probe W far from P (the float test decides) and within a
    # few units of the float error (it must hand over to the exact path, never guess)
    seen = _counting(monkeypatch)
    env = EnvelopeGaussian(Fraction(16979299 * 16979298))
    gen = np.random.default_rng(0)
    js = gen.integers(0, env.J, 300)
    ms = js * env.w + gen.integers(0, env.w, js.size)  # a magnitude m in bin j
    ys = np.where(gen.integers(0, 2, js.size) == 1, ~ms, ms)  # y = m or -(m + 1)
    exact = [env._real(int(y), env.scale[int(j)]).prefix(64) for y, j in zip(ys, js, strict=True)]
    for offset in (-(2**40), -(2**24), -(2**12), 1, 2**12, 2**24, 2**40):
        w = np.array([min(max(p + offset, 0), 2**64 - 1) for p in exact], dtype=np.uint64)
        want = w < np.array(exact, dtype=np.uint64)
        before = seen["exact"]
        got = env._float_test(ys, js, w, SeededSource(26))
        assert np.array_equal(got, want), offset
        if abs(offset) >= 2**24:  # 2**24 / 2**64 is far beyond eps = 2**-45
            assert seen["exact"] == before
        if abs(offset) <= 2**12:  # inside the float error band: exact path
            assert seen["exact"] - before == js.size


def test_squeeze_thresholds_are_lower_bounds() -> None:
    # lo_j (its top 24 bits, as used) must not exceed 2**64 p for the farthest y of bin j
    env = EnvelopeGaussian(Fraction(16979299 * 16979298))
    for j in range(env.J):
        y = (j + 1) * env.w
        p64 = env._real(y, env.scale[j]).prefix(64)
        assert (int(env.lo_sh[j]) >> 39) << 40 <= p64
    assert env.guide.size == 2**16
    assert env.acceptance > 0.97


def test_exact_real_of_bin_start_is_below_one() -> None:
    # p = f(j w) 2**64 / (D n_j) <= 1 at the bin starts, checked with exact upper bounds
    env = EnvelopeGaussian(Fraction(2**40))
    for j in range(env.J):
        f_up = exp_neg(env.x * (j * env.w) ** 2).prefix(64) + 1
        assert f_up <= env.D * env.n[j]


def test_word_layout_known_answer(scripted_source: type) -> None:
    # word A: bits 0..15 category, 16..16+b-1 offset, 39..62 the first bits of U, 63 sign;
    # U = 0 is accepted by the squeeze, so each scripted word gives one known draw
    env = EnvelopeGaussian(Fraction(16979299 * 16979298))
    j = 5
    idx = int(np.flatnonzero(env.guide == j)[0])
    off = 12345
    words = [idx | off << 16, idx | off << 16 | 1 << 63]
    source = scripted_source(words)
    out = np.empty(2, dtype=np.int64)
    assert env._fill(2, _Workspace(2), out, source) == 2
    assert out.tolist() == [j * env.w + off, -(j * env.w + off) - 1]
