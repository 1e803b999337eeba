"""Selection on float scores has exactly the textbook laws.

Every float is a dyadic rational: the exponential mechanism's law ``exp(c u_i) / sum_j exp(c
u_j)``, ``c = epsilon / (2 sensitivity)``, and permute-and-flip's coins ``exp(-c (u_max -
u_i))`` are computed here in exact rational arithmetic (the exponentials to 60 digits with
:mod:`decimal`) and compared with what the mechanisms report and sample. Sub-lattice score
differences are made to matter by a large epsilon: scores ``2**-22`` apart, below the
``2**-20`` lattice the samplers split the gaps on, weigh ``e**0.5`` apart at epsilon ``2**22``,
so a sampler that rounded the scores to the lattice would be rejected at once.
"""

from __future__ import annotations

import itertools
import math
from decimal import Decimal, localcontext
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dpkit as dp
from dpkit.mechanisms.selection import _exact_gaps


def _exact_law(scores: np.ndarray, rate: Fraction) -> np.ndarray:
    """``exp(-rate (max - u_i))`` normalised, from exact rationals, as float64."""
    us = [Fraction(float(u)) for u in scores]
    top = max(us)
    with localcontext() as ctx:
        ctx.prec = 60
        w = [
            (-Decimal((rate * (top - u)).numerator) / (rate * (top - u)).denominator).exp()
            for u in us
        ]
        total = sum(w)
        return np.array([float(x / total) for x in w])


def _coins(scores: np.ndarray, rate: Fraction) -> list[float]:
    """Permute-and-flip's coin probabilities ``exp(-rate (max - u_i))``, exactly rounded."""
    us = [Fraction(float(u)) for u in scores]
    top = max(us)
    with localcontext() as ctx:
        ctx.prec = 60
        return [
            float((-Decimal((rate * (top - u)).numerator) / (rate * (top - u)).denominator).exp())
            for u in us
        ]


def _pf_law(p: list[float]) -> np.ndarray:
    """The output law of permute-and-flip with independent coins ``p``: a uniformly random
    head, summed over every set of heads (``2**n`` terms)."""
    n = len(p)
    out = np.zeros(n)
    for heads in itertools.product((0, 1), repeat=n):
        k = sum(heads)
        if k == 0:
            continue
        prob = math.prod(pi if h else 1 - pi for pi, h in zip(p, heads, strict=True))
        for i in range(n):
            if heads[i]:
                out[i] += prob / k
    return out / out.sum()  # the all-tails set has probability 0: the best coin is 1


def _chi2(picks: np.ndarray, law: np.ndarray) -> float:
    obs = np.bincount(picks, minlength=law.size)
    exp = law * picks.size
    keep = exp >= 5
    stat = ((obs[keep] - exp[keep]) ** 2 / exp[keep]).sum()
    return float(stats.chi2.sf(stat, df=int(keep.sum()) - 1))


def _marital_status_scores() -> np.ndarray:
    counts = dp.datasets.load_adult()["Marital Status"].value_counts(sort=True)
    return counts["count"].to_numpy() / 1000.0


def test_probabilities_are_the_textbook_law_on_adult_marital_status() -> None:
    scores = _marital_status_scores()  # 14.976, 10.683, 4.443, ...: not on any 2**-20 lattice
    exp = dp.Exponential(epsilon=1.0, sensitivity=1.0)
    law = _exact_law(scores, Fraction(1, 2))
    # the gaps are exact; only the final exp and the sum round: a few ulps
    assert np.max(np.abs(exp.probabilities(scores) / law - 1)) < 1e-14


def test_sampled_law_on_adult_marital_status() -> None:
    # 60,000 seeded selections, chi-square at level 1e-3 against the exact law; epsilon 10%
    # off changes the second candidate's mass from 0.105 to 0.095: chi-square p < 1e-6
    scores = _marital_status_scores()
    picks = dp.Exponential(epsilon=1.0).sample(range(scores.size), scores, 60_000, rng=3)
    assert _chi2(picks, _exact_law(scores, Fraction(1, 2))) > 1e-3
    assert _chi2(picks, _exact_law(scores, Fraction(11, 20))) < 1e-6
    assert _chi2(picks, _exact_law(scores, Fraction(9, 20))) < 1e-6


_FINE = np.array([0.0, 2.0**-22, 3 * 2.0**-23, -(2.0**-24), 5 * 2.0**-25, -(2.0**-21)])


def test_exponential_samples_differences_below_the_lattice_exactly() -> None:
    # epsilon 2**22, sensitivity 1: c = 2**21, so the scores above (all within one 2**-20
    # lattice cell of each other) have weights e**(c u) spread over a factor e**3; 30,000
    # selections, chi-square at 1e-3; the lattice-rounded law (uniform over the cell) and
    # the law at epsilon 10% high are both rejected (p < 1e-6)
    eps = 2.0**22
    mech = dp.Exponential(epsilon=eps, sensitivity=1.0)
    picks = mech.sample(range(_FINE.size), _FINE, 30_000, rng=5)
    law = _exact_law(_FINE, Fraction(eps) / 2)
    assert np.max(np.abs(mech.probabilities(_FINE) / law - 1)) < 1e-14
    assert _chi2(picks, law) > 1e-3
    assert _chi2(picks, np.full(_FINE.size, 1 / _FINE.size)) < 1e-6
    assert _chi2(picks, _exact_law(_FINE, Fraction(eps) * Fraction(11, 20))) < 1e-6


def test_permute_and_flip_samples_differences_below_the_lattice_exactly() -> None:
    eps = 2.0**22
    mech = dp.PermuteAndFlip(epsilon=eps, sensitivity=1.0)
    picks = mech.sample(range(_FINE.size), _FINE, 30_000, rng=6)
    law = _pf_law(_coins(_FINE, Fraction(eps) / 2))
    assert _chi2(picks, law) > 1e-3
    assert _chi2(picks, _pf_law(_coins(_FINE, Fraction(eps) * Fraction(11, 20)))) < 1e-6
    assert _chi2(picks, np.full(_FINE.size, 1 / _FINE.size)) < 1e-6


def _adversarial_scores() -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    tiny = [2.0**-1074, -(2.0**-1074), 2.0**-1022, 1e-300, -1e-300, 2.0**-30, -(2.0**-30)]
    return [
        np.array([2.0**38, 2.0**-30, -(2.0**-30), 0.0]),  # two-sum errors of both signs
        np.array([1.0, -(2.0**-60), 1.0 - 2.0**-53, 0.5]),
        np.array([2.0**38, *tiny]),
        np.array([-5.0, *tiny]),
        np.array([0.0, *tiny]),
        rng.normal(0, 1, 200) * 10.0 ** rng.integers(-30, 12, 200),
        rng.integers(-(10**6), 10**6, 200).astype(np.float64),
        np.round(rng.uniform(0, 50, 200), 3),
    ]


@pytest.mark.parametrize("sensitivity", [1.0, 0.3, 7.0])
@pytest.mark.parametrize("case", range(8))
def test_exact_gaps_split_every_gap_exactly(sensitivity: float, case: int) -> None:
    # k h + r_hi + r_lo == max(u) - u_i in exact rationals, with k >= 0 and 0 <= r < h
    scores = _adversarial_scores()[case]
    gaps = _exact_gaps("test", sensitivity, scores)
    h = Fraction(gaps.h)
    top = max(Fraction(float(u)) for u in scores)
    for i, u in enumerate(scores):
        r = Fraction(0)
        if gaps.r_hi is not None and gaps.r_lo is not None:
            r = Fraction(float(gaps.r_hi[i])) + Fraction(float(gaps.r_lo[i]))
        assert int(gaps.k[i]) * h + r == top - Fraction(float(u)), (case, i)
        assert gaps.k[i] >= 0 and 0 <= r < h


def test_scores_on_the_lattice_take_the_integer_path() -> None:
    gaps = _exact_gaps("test", 1.0, np.array([3.0, 0.5, -2.0, 2.0**-20]))
    assert gaps.r_hi is None and gaps.k.tolist() == [0, 5 * 2**19, 5 * 2**20, 3 * 2**20 - 1]


@pytest.mark.parametrize(
    "mech", [dp.Exponential(1.0), dp.ReportNoisyMax(1.0), dp.PermuteAndFlip(1.0)]
)
def test_selection_reads_candidates_by_position(mech: Any) -> None:
    # a Series with a shuffled index used to be read by label: 'c' (label 1) every time
    cands = pd.Series(["a", "b", "c"], index=[2, 0, 1])
    # exp(-500) odds against the others: the best (position 1) is returned every time
    assert {mech.select(cands, [0.0, 1000.0, 0.0], rng=i) for i in range(20)} == {"b"}
    with pytest.raises(TypeError, match="`candidates`"):
        mech.select({"a": 1, "b": 2, "c": 3}, [1.0, 50.0, 2.0])
    with pytest.raises(TypeError, match="`candidates` must be 1-D"):
        mech.select(np.array(5.0), [1.0])
