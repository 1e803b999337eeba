"""Automatic contribution bound: a DP quantile of rows per person."""

from __future__ import annotations

import math

import numpy as np
import pytest

import dpkit
from dpkit.statistics import contribution_bound, contribution_bound_from_counts


def test_bound_is_near_the_quantile_of_rows_per_person() -> None:
    rng = np.random.default_rng(0)
    rows = rng.geometric(0.2, 20_000)  # 1, 2, ... rows per person
    truth = int(np.quantile(rows, 0.9, method="inverted_cdf"))
    got = [contribution_bound(rows, epsilon=0.5, level=0.9, rng=s).bound for s in range(20)]
    assert np.median(got) == truth
    assert all(abs(g - truth) <= 1 for g in got)


@pytest.mark.parametrize("method", ["threshold", "quantile"])
def test_counts_form_equals_array_form_and_spends_once(method: str) -> None:
    rows = np.repeat([1, 2, 5, 40], [100, 60, 30, 10])
    acct = dpkit.Accountant(dpkit.PureDP(1.0))
    a = contribution_bound(rows, epsilon=1.0, rng=7, accountant=acct, method=method)
    b = contribution_bound_from_counts(
        [1, 2, 5, 40], [100, 60, 30, 10], epsilon=1.0, rng=7, method=method
    )
    assert a == b and a.relation == "unbounded" and a.privacy == dpkit.PureDP(1.0)
    assert a.details["method"] == method
    assert acct.spent == dpkit.PureDP(1.0)
    assert 1 <= a.bound <= 1000


def test_one_row_per_person_gives_one_by_default_on_both_forms() -> None:
    """200 persons with one row each, epsilon 1, level 0.95 = 19 / 20, cap 1000.

    AboveThreshold (the default, as the Session) stops at candidate 1 when its noisy count
    Q #{<= 1} - P n = 20 * 200 - 19 * 200 = 200 plus query noise (discrete Laplace, scale
    4 * 19 / 1 = 76) reaches the threshold noise (scale 38): probability 0.953 (exact
    convolution); past 1 every candidate has the same count, so it stops within a few more.
    Of 50 releases at least 42 give 1 (the Binomial(50, 0.953) 1e-3 quantile), all within 30.
    The exponential mechanism over 0 .. 1000 (``method="quantile"``, kept under its name)
    scores every candidate above the point mass alike, so beyond its (modest) mass on the
    point mass itself it lands almost uniformly on [1, 1000]: above 10 in 43 of these 50
    releases (measured; the check asks 35, to show the failure mode, not to pin it)."""
    ones = np.ones(200, dtype=int)
    for got in (
        [contribution_bound(ones, epsilon=1.0, rng=s).bound for s in range(50)],
        [contribution_bound_from_counts([1], [200], epsilon=1.0, rng=s).bound for s in range(50)],
    ):
        assert got.count(1) >= 42 and max(got) <= 30, got
    spread = [
        contribution_bound(ones, epsilon=1.0, rng=s, method="quantile").bound for s in range(50)
    ]
    assert sum(b > 10 for b in spread) >= 35, spread


def test_the_cap_bounds_the_answer() -> None:
    rows = np.full(1000, 5000)
    assert contribution_bound(rows, epsilon=1.0, max_bound=100, rng=0).bound <= 100


@pytest.mark.parametrize(
    ("call", "exc", "match"),
    [
        (lambda: contribution_bound([], epsilon=1.0), dpkit.ParameterError, "empty"),
        (lambda: contribution_bound([0, 1], epsilon=1.0), dpkit.ParameterError, ">= 1"),
        (lambda: contribution_bound([1.5], epsilon=1.0), dpkit.ParameterError, "whole"),
        (lambda: contribution_bound([True], epsilon=1.0), TypeError, "integers"),
        (lambda: contribution_bound([1], epsilon=0), dpkit.ParameterError, "epsilon"),
        (lambda: contribution_bound([1], epsilon=1, level=1), dpkit.ParameterError, "level"),
        (
            lambda: contribution_bound([1], epsilon=1, level=1e-9),
            dpkit.ParameterError,
            "`level` 1e-09 is too close to 0",
        ),
        (lambda: contribution_bound([1], epsilon=1, max_bound=0), dpkit.ParameterError, "max"),
        (lambda: contribution_bound([1], epsilon=1, max_bound=2.5), TypeError, "max_bound"),
        (
            lambda: contribution_bound_from_counts([1, 2], [3], epsilon=1.0),
            dpkit.ParameterError,
            "same length",
        ),
    ],
)
def test_errors(call, exc, match) -> None:
    with pytest.raises(exc, match=match):
        call()


def _dlap_pmf(scale: float, z: np.ndarray) -> np.ndarray:
    a = math.exp(-1 / scale)
    return (1 - a) / (1 + a) * a ** np.abs(z)


def _threshold_law(rows, persons, eps: float, level: float, cap: int) -> np.ndarray:
    """The exact law of the threshold method's output c in 1..cap by enumeration over the
    threshold noise rho: P[c] = sum_rho P[rho] prod_{j < c} P[f_j + nu_j < rho]
    P[f_c + nu_c >= rho] (cap gets the rest), f_c = Q #{<= c} - P n, D = max(P, Q - P)."""
    from fractions import Fraction

    q = Fraction(level).limit_denominator(2**20)
    big_p, big_q = q.numerator, q.denominator
    d = max(big_p, big_q - big_p)
    s_rho, s_nu = d / (eps / 2), 2 * d / (eps / 2)
    rows, persons = np.asarray(rows), np.asarray(persons)
    n = persons.sum()
    f = np.array([big_q * persons[rows <= c].sum() - big_p * n for c in range(1, cap + 1)])
    zs = np.arange(-4000, 4001)
    p_nu = _dlap_pmf(s_nu, zs)
    cdf_nu = np.cumsum(p_nu)  # P[nu <= z]
    law = np.zeros(cap)
    for rho, pr in zip(zs, _dlap_pmf(s_rho, zs), strict=True):
        # P[f + nu >= rho] = P[nu >= rho - f] = 1 - P[nu <= rho - f - 1]
        idx = np.clip(rho - f - 1 - zs[0], -1, zs.size - 1)
        below = np.where(idx < 0, 0.0, cdf_nu[np.maximum(idx, 0)])
        hit = 1 - below
        miss = np.concatenate(([1.0], np.cumprod(1 - hit)[:-1]))
        law += pr * miss * hit
    law[-1] += 1 - law.sum()  # nobody passes: the cap
    return law


def test_threshold_method_follows_its_exact_law(chi2_pvalue) -> None:
    """6,000 draws of the threshold method on 10 persons (cap 6, epsilon 2, level 0.8)
    against the enumerated law: chi-square p > 0.001. A query noise scale 10% off moves the
    law enough to fail (checked by the mutation guard)."""
    rows, persons = [1, 2, 3, 5], [3, 3, 2, 2]
    law = _threshold_law(rows, persons, 2.0, 0.8, 6)
    src = dpkit.samplers.as_source(3)
    draws = np.array(
        [
            contribution_bound_from_counts(
                rows, persons, epsilon=2.0, level=0.8, max_bound=6, rng=src, method="threshold"
            ).bound
            for _ in range(6000)
        ]
    )
    assert chi2_pvalue(draws, np.arange(1, 7), law) > 1e-3


def test_threshold_method_is_private_on_neighbours() -> None:
    """The exact laws on a table and on it without the person with 5 rows: every output's
    probability ratio within exp(epsilon)."""
    eps = 1.0
    a = _threshold_law([1, 2, 3, 5], [3, 3, 2, 1], eps, 0.8, 6)
    b = _threshold_law([1, 2, 3], [3, 3, 2], eps, 0.8, 6)
    assert np.all(a <= math.exp(eps) * b * (1 + 1e-9)) and np.all(
        b <= math.exp(eps) * a * (1 + 1e-9)
    )


# ---------------------------------------------------------------- nothing fails after the spend


@pytest.mark.parametrize(
    "release",
    [
        lambda rng, a: contribution_bound([1, 2, 3], epsilon=1.0, rng=rng, accountant=a),
        lambda rng, a: contribution_bound_from_counts(
            [1, 2], [3, 4], epsilon=1.0, rng=rng, accountant=a
        ),
        lambda rng, a: contribution_bound_from_counts(
            [1, 2], [3, 4], epsilon=1.0, method="threshold", rng=rng, accountant=a
        ),
    ],
)
def test_a_bad_rng_is_refused_before_the_spend(refused_before_the_spend, release, bad_rng) -> None:
    rng, exc, match = bad_rng
    refused_before_the_spend(lambda a: release(rng, a), exc, match)


@pytest.mark.parametrize("method", ["quantile", "threshold"])
@pytest.mark.parametrize(
    ("rows", "persons"), [([1, 2], [2**62, 2**62]), ([1], [2**62]), ([1, 2], [2**39, 2**39])]
)
def test_more_than_2_40_persons_are_refused_before_the_spend(
    refused_before_the_spend, rows, persons, method
) -> None:
    # an int64 sum of the counts wraps (2**62 + 2**62 = -2**63): the cap sees the true total
    refused_before_the_spend(
        lambda a: contribution_bound_from_counts(
            rows, persons, epsilon=1.0, method=method, accountant=a
        ),
        dpkit.ParameterError,
        "2\\*\\*40 persons",
    )


@pytest.mark.parametrize("cap", [2**20 + 1, 2**40, 2**63 - 1])
def test_a_threshold_cap_beyond_2_20_is_refused_before_the_spend(
    refused_before_the_spend, cap: int
) -> None:
    refused_before_the_spend(
        lambda a: contribution_bound_from_counts(
            [1, 2, 3], [5, 3, 1], epsilon=1.0, max_bound=cap, method="threshold", accountant=a
        ),
        dpkit.ParameterError,
        "max_bound",
    )


def test_the_largest_threshold_cap_releases() -> None:
    acct = dpkit.Accountant(dpkit.PureDP(10.0))
    rel = contribution_bound_from_counts(
        [1, 2, 3],
        [500, 300, 100],
        epsilon=1.0,
        max_bound=2**20,
        method="threshold",
        rng=0,
        accountant=acct,
    )
    assert 1 <= rel.bound <= 2**20 and acct.spent == dpkit.PureDP(1.0)


@pytest.mark.parametrize(("eps", "level"), [(1e-14, 0.95), (1e-9, 0.999999)])
def test_a_threshold_beyond_the_sampler_is_refused_before_the_spend(
    refused_before_the_spend, eps, level
) -> None:
    refused_before_the_spend(
        lambda a: contribution_bound_from_counts(
            [1, 2], [3, 4], epsilon=eps, level=level, method="threshold", accountant=a
        ),
        dpkit.ParameterError,
        "2\\*\\*50",
    )
