"""Exact digits and the deep comparison path (reached with probability 2**-64 per draw)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from dpkit.samplers import SeededSource, bernoulli_exp, geometric
from dpkit.samplers._discrete import _geometric_sampler
from dpkit.samplers._exact import RationalReal, exp_neg, less_than_deep

MASK = (1 << 64) - 1


def _exp_neg_series_floor(x: Fraction, bits: int) -> int:
    """floor(2**bits * exp(-x)) from the alternating Taylor series with exact rationals."""
    total, term, k = Fraction(0), Fraction(1), 0
    while True:
        total += term
        k += 1
        term = term * (-x) / k
        if abs(term) * 2**bits < Fraction(1, 2**20):
            break
    lo, hi = (total - abs(term)) * 2**bits, (total + abs(term)) * 2**bits
    assert math.floor(lo) == math.floor(hi), "series not precise enough"
    return math.floor(lo)


@pytest.mark.parametrize("x", [Fraction(1), Fraction(1, 3), Fraction(7, 5), Fraction(1, 65537)])
@pytest.mark.parametrize("bits", [64, 128, 256])
def test_decimal_digits_match_an_independent_series(x: Fraction, bits: int) -> None:
    assert exp_neg(x).prefix(bits) == _exp_neg_series_floor(x, bits)


def test_rational_digits() -> None:
    r = RationalReal(Fraction(1, 3))
    assert r.prefix(64) == (1 << 64) // 3
    assert RationalReal(Fraction(1)).is_one()


def test_deep_comparison_follows_the_next_digits(scripted_source: type) -> None:
    real = exp_neg(Fraction(1))
    d1 = real.prefix(128) & MASK
    d2 = real.prefix(192) & MASK
    assert less_than_deep([real], scripted_source([d1 - 1])).tolist() == [True]
    assert less_than_deep([real], scripted_source([d1 + 1])).tolist() == [False]
    # equal again at level 1: level 2 decides
    assert less_than_deep([real], scripted_source([d1, d2 - 1])).tolist() == [True]
    assert less_than_deep([real], scripted_source([d1, d2 + 1])).tolist() == [False]


def test_bernoulli_exp_tie_goes_deep(scripted_source: type) -> None:
    real = exp_neg(Fraction(1, 2))
    p0, d1 = real.prefix(64), real.prefix(128) & MASK
    assert bernoulli_exp(0.5, 1, rng=scripted_source([p0, d1 - 5])).tolist() == [True]
    assert bernoulli_exp(0.5, 1, rng=scripted_source([p0, d1 + 5])).tolist() == [False]
    # one below / above the prefix never goes deep
    assert bernoulli_exp(0.5, 1, rng=scripted_source([p0 - 1])).tolist() == [True]
    assert bernoulli_exp(0.5, 1, rng=scripted_source([p0 + 1])).tolist() == [False]


def test_geometric_inversion_tie_goes_deep(scripted_source: type) -> None:
    # x = 2: no low digits, the high table has S_h = exp(-2h). A first word equal to the
    # prefix of S_1 is a tie: the next word decides whether G >= 1; the table then ends.
    sampler = _geometric_sampler(Fraction(2))
    assert sampler.m == 0
    s1 = exp_neg(Fraction(2))
    p0, d1 = s1.prefix(64), s1.prefix(128) & MASK
    below = geometric(2, 1, rng=scripted_source([p0, d1 - 1]))  # U < S_1: G >= 1
    above = geometric(2, 1, rng=scripted_source([p0, d1 + 1]))  # U > S_1: G = 0
    assert below[0] >= 1
    assert above.tolist() == [0]


def test_geometric_boundaries_are_exact_survival_values() -> None:
    # the high table's k-th boundary is exp(-x M k): compare with the series digits
    sampler = _geometric_sampler(Fraction(1, 3))
    m = sampler.m
    for k in range(1, 6):
        real = sampler.high.real_at(k)
        assert real.prefix(64) == _exp_neg_series_floor(Fraction(1, 3) * (1 << m) * k, 64)
    assert np.all(np.diff(sampler.high._asc.astype(np.float64)) > 0)


@pytest.mark.parametrize("x", [Fraction(1, 2), Fraction(1, 1000), Fraction(3, 7)])
def test_survival_table_matches_brute_force_count(x: Fraction) -> None:
    # Oracle for the guide-table inversion: X = #{j : U < S_j}, and a first word w decides
    # U < S_j exactly when w != P_j = floor(2**64 S_j) (w < P_j: yes, w > P_j: no). Probe
    # words at every boundary (P_j - 1 and P_j + 1, the cases a guide bucket must search)
    # and uniform random words, in every table of the geometric sampler.
    sampler = _geometric_sampler(x)
    tables = [sampler.high] + [table for _, table in sampler.chunks]
    gen = np.random.default_rng(0)
    for table in tables:
        prefixes = table._asc[::-1].astype(object)  # P_1 > P_2 > ... as Python ints
        probes = [int(p) + d for p in prefixes for d in (-1, 1) if 0 <= int(p) + d < 2**64]
        probes += [int(v) for v in gen.integers(0, 2**64, 2000, dtype=np.uint64)]
        w = np.array(probes, dtype=np.uint64)
        got = table.sample_from_words(w, SeededSource(0))
        want = np.array([sum(1 for p in prefixes if v < p) for v in probes])
        assert np.array_equal(got, want)
