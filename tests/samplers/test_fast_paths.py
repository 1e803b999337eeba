"""The samplers' fast paths against their general paths: the same values from the same words.

Each fast path (one draw in Python integers, a few discrete Laplace draws, the one-shot
estimate of an acceptance probability, the direct ChaCha20 context) must give exactly what
the general path gives for a seed, and leave the bit source at the same place: a seed's
output is tested behaviour, so equal laws are not enough.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from dpkit.errors import InternalError
from dpkit.samplers import SeededSource, uniform_int
from dpkit.samplers import heavy_tailed as heavy_tailed_module
from dpkit.samplers._discrete import (
    _discrete_laplace_block,
    _discrete_laplace_few,
    _geometric_sampler,
    uniform_one,
)
from dpkit.samplers._exact import (
    ExpNegReal,
    RationalReal,
    SurvivalTable,
    bernoulli_one,
    bernoulli_table,
    exp_neg,
    prefixes64,
)
from dpkit.samplers.heavy_tailed import _AcceptReal, bernoulli_exp_scaled, exp_weighted_choice


def _same_place(a: SeededSource, b: SeededSource) -> bool:
    """Both sources served the same requests so far (their next words agree too)."""
    return a._counter == b._counter and bool(np.array_equal(a.words(3), b.words(3)))


@pytest.mark.parametrize("n", [1, 2, 3, 5, 6, 7, 1000, 2**31 + 1, 2**53 - 1, 2**62 + 3, 2**63])
def test_uniform_one_is_uniform_int_of_size_one(n: int) -> None:
    for seed in range(40):
        a, b = SeededSource(seed), SeededSource(seed)
        assert [uniform_one(n, a) for _ in range(3)] == [
            int(uniform_int(n, 1, b)[0]) for _ in range(3)
        ]
        assert _same_place(a, b)


def test_uniform_one_refuses_an_empty_range() -> None:
    with pytest.raises(InternalError):
        uniform_one(0, SeededSource(0))


@pytest.mark.parametrize(
    "real",
    [
        RationalReal(Fraction(1, 3)),
        RationalReal(Fraction(1)),
        RationalReal(Fraction(0)),
        exp_neg(Fraction(5, 7)),
    ],
    ids=["third", "one", "zero", "exp"],
)
def test_bernoulli_one_is_the_table_draw_of_one(real) -> None:
    thr, one = prefixes64([real])
    for seed in range(200):
        a, b = SeededSource(seed), SeededSource(seed)
        got = bernoulli_one(real, a)
        want = bool(bernoulli_table(thr, one, [real], np.zeros(1, dtype=np.intp), b)[0])
        assert got == want
        assert _same_place(a, b)


def test_bernoulli_one_settles_a_64_bit_tie_like_the_table() -> None:
    # the first word equals the threshold: both go on to the next digits with fresh words
    word = int(SeededSource(11).words(1)[0])
    real = RationalReal(Fraction(word * 3 + 1, 3 << 64))  # digits: word, then 0101...
    thr, one = prefixes64([real])
    assert int(thr[0]) == word
    a, b = SeededSource(11), SeededSource(11)
    assert bernoulli_one(real, a) == bool(
        bernoulli_table(thr, one, [real], np.zeros(1, dtype=np.intp), b)[0]
    )
    assert _same_place(a, b)


def test_survival_table_lists_match_the_arrays_on_every_path() -> None:
    # boundaries in a few buckets (guide hits and searches) and words equal to a boundary
    # (the deep comparison), plus ordinary words
    reals = [exp_neg(Fraction(k, 3)) for k in range(1, 40)]
    table = SurvivalTable.from_reals(reals)
    boundaries = [r.prefix(64) for r in reals]
    for seed in range(60):
        rng = np.random.default_rng(seed)
        words = SeededSource(seed).words(12).tolist()
        words[3] = boundaries[int(rng.integers(len(boundaries)))]
        words[7] = boundaries[int(rng.integers(len(boundaries)))] + 1
        a, b = SeededSource(1000 + seed), SeededSource(1000 + seed)
        got = table.sample_from_list(words, a)
        want = table.sample_from_words(np.array(words, dtype=np.uint64), b)
        assert got == want.tolist()
        assert _same_place(a, b)


@pytest.mark.parametrize(
    "scale",
    [Fraction(1, 1000), Fraction(1, 3), Fraction(1), Fraction(6), Fraction(37, 3), 2**20, 2**50],
)
def test_few_discrete_laplace_draws_match_the_block_sampler(scale) -> None:
    geo = _geometric_sampler(1 / Fraction(scale))
    for seed in range(120):
        for size in (0, 1, 2, 4, 9, 16):
            a, b = SeededSource(seed), SeededSource(seed)
            got = _discrete_laplace_few(geo, size, a)
            assert got == _discrete_laplace_block(geo, size, b).tolist()
            assert _same_place(a, b)


def _accept_oracle(x: Fraction, rr: Fraction) -> tuple[bool, int | None]:
    """The acceptance real as it was: the 40-digit check, then ExpNegReal's digits."""
    from decimal import Decimal, localcontext

    inner = ExpNegReal(x, rr, slack=25)
    with localcontext() as ctx:
        ctx.prec = 40
        ctx.Emin = -(10**9)
        v = Decimal(0) if x > 200 * (1 + rr) else inner.fn()
    if v > 1 + Decimal(10) ** -30:
        return True, None
    return False, inner.prefix(64)


def test_acceptance_estimate_gives_the_exact_digits_and_the_same_check() -> None:
    rng = np.random.default_rng(2024)
    raised = checked = 0
    for _ in range(1500):
        x = Fraction(int(rng.integers(-2000, 60_000)), int(rng.integers(1, 1000)))
        gap = float(rng.choice([2.0**-30, 2.0**-52, 1e-3, 0.5, 0.0, -1e-12, -(2.0**-40)]))
        if float(x) < 700:
            rr = Fraction(math.exp(float(x)) * (1 - gap))
        else:
            rr = Fraction(int(rng.integers(1, 10**6)))
        want_raise, want = _accept_oracle(x, rr)
        if want_raise:
            with pytest.raises(InternalError):
                _AcceptReal(x, rr)
            raised += 1
            continue
        real = _AcceptReal(x, rr)
        assert real.prefix(64) == want
        assert real.prefix(128) == ExpNegReal(x, rr, slack=25).prefix(128)
        checked += 1
    assert raised > 100 and checked > 500  # both outcomes were exercised


def test_an_acceptance_probability_above_one_is_refused() -> None:
    # exp(-1/10) * 1.2 > 1: a caller's bound was wrong, never a silent bias
    with pytest.raises(InternalError):
        _AcceptReal(Fraction(1, 10), Fraction(6, 5))
    with pytest.raises(InternalError):
        bernoulli_exp_scaled(Fraction(1, 10), Fraction(6, 5), rng=0)


def test_one_draw_of_exp_weighted_choice_matches_the_batched_loop(monkeypatch) -> None:
    rng = np.random.default_rng(7)
    for case in range(150):
        m = int(rng.integers(1, 60))
        w = rng.integers(0, 2**40, m).astype(float)
        w[rng.random(m) < 0.3] = 0.0
        if not np.any(w > 0):
            w[int(rng.integers(m))] = float(rng.integers(1, 2**30))
        e = rng.integers(0, 80, m)
        rate = Fraction(int(rng.integers(0, 9)), int(rng.integers(1, 30)))
        a, b = SeededSource(case), SeededSource(case)
        got = [exp_weighted_choice(w, e, rate, 1, a) for _ in range(3)]
        monkeypatch.setattr(heavy_tailed_module, "_ONE_AT_A_TIME", False)
        want = [exp_weighted_choice(w, e, rate, 1, b) for _ in range(3)]
        monkeypatch.setattr(heavy_tailed_module, "_ONE_AT_A_TIME", True)
        assert [int(v[0]) for v in got] == [int(v[0]) for v in want]
        assert _same_place(a, b)
    assert exp_weighted_choice(np.ones(3), np.zeros(3, dtype=np.int64), Fraction(1), 0, 1).size == 0


@pytest.mark.parametrize(
    "scale",
    [Fraction(1, 64), Fraction(1, 3), Fraction(7, 2), Fraction(1000), Fraction(2**36 + 10**7)],
)
@pytest.mark.parametrize("size", [1, 17, 4096, 65536])
def test_discrete_laplace_in_a_workspace_is_the_fresh_block(scale: Fraction, size: int) -> None:
    # the workspace path (buffers reused, guides looked up with take) against the block that
    # allocates its arrays: the same values from the same words, the source left alike
    from dpkit.samplers._discrete import _discrete_laplace_into, _LaplaceWorkspace

    geo = _geometric_sampler(1 / scale)
    ws = _LaplaceWorkspace(size)
    for seed in range(3):
        a, b = SeededSource(seed), SeededSource(seed)
        first = _discrete_laplace_into(geo, size, a, ws).copy()
        assert np.array_equal(first, _discrete_laplace_block(geo, size, b))
        again = _discrete_laplace_into(geo, size, a, ws)  # the buffers reused
        assert np.array_equal(again, _discrete_laplace_block(geo, size, b))
        assert _same_place(a, b)


@pytest.mark.parametrize("boundaries", [3, 41, 126, 127, 511, 1023])
def test_a_table_lookup_into_a_buffer_is_the_lookup_of_fresh_arrays(boundaries: int) -> None:
    # boundaries on either side of the guide's dtype change (int8 below 127): the counts and
    # the ambiguous buckets' searches are those of sample_from_words, ties included
    rng = np.random.default_rng(boundaries)
    prefixes = np.unique(rng.integers(1, 2**63, size=boundaries, dtype=np.uint64))[::-1]
    table = SurvivalTable([int(p) for p in prefixes], lambda j: RationalReal(Fraction(1, 2)))
    words = SeededSource(1).words(50_000)
    words[: min(20, prefixes.size)] = prefixes[:20]  # exact ties: decided by the deep comparison
    out = np.empty(words.size, dtype=table.dtype)
    index = np.empty(words.size, dtype=np.int64)
    a, b = SeededSource(2), SeededSource(2)
    got = table.lookup_into(words, a, out, index)
    assert np.array_equal(got.astype(np.int64), table.sample_from_words(words, b))
    assert _same_place(a, b)


class _ZerosFirst(SeededSource):
    """A seeded source whose first request is all zero words: every table lookup of it lands
    past the table's last boundary (U below every survival probability)."""

    def __init__(self, seed: int) -> None:
        super().__init__(seed)
        self._first = True

    def words(self, n: int) -> np.ndarray:
        if self._first:
            self._first = False
            return np.zeros(n, dtype=np.uint64)
        return super().words(n)


def test_discrete_laplace_in_a_workspace_extends_the_high_digit_past_its_table() -> None:
    # the high digit's table stops where its survival falls below 2**-60; zero words select
    # that end for every draw, and memorylessness adds a fresh high digit (as the fresh block)
    from dpkit.samplers._discrete import _discrete_laplace_into, _LaplaceWorkspace

    geo = _geometric_sampler(1 / Fraction(1000))
    ws = _LaplaceWorkspace(64)
    got = _discrete_laplace_into(geo, 64, _ZerosFirst(5), ws)
    want = _discrete_laplace_block(geo, 64, _ZerosFirst(5))
    assert np.array_equal(got, want)
    assert np.all(np.abs(want) >= geo.high.size << geo.m)  # every draw went past the table
