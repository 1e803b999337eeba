"""Special functions of the accounting analyses against SciPy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special

from dpkit.accounting._special import (
    erfcx,
    gdp_delta,
    gdp_delta_upper,
    gdp_epsilon,
    gdp_epsilon_upper,
    ndtr,
    ndtr_diff,
)


def test_ndtr_and_its_differences_keep_relative_accuracy_in_both_tails() -> None:
    x = np.concatenate([-np.geomspace(1e-3, 30, 200), np.geomspace(1e-3, 8, 200)])
    assert np.allclose(ndtr(x), special.ndtr(x), rtol=1e-12, atol=0)
    x1 = np.linspace(-30, 30, 301)
    x2 = x1 + 1e-3
    diff, err = ndtr_diff(x1, x2)
    # reference: the smaller tails' difference, in SciPy's log-space
    ref = np.where(
        x1 >= 0,
        special.ndtr(-x1) - special.ndtr(-x2),
        special.ndtr(x2) - special.ndtr(x1),
    )
    assert np.all(np.abs(diff - ref) <= err + 1e-14 * ref)


@pytest.mark.parametrize("x", [0.0, 0.3, 5.0, 24.9, 25.1, 100.0, 1e4])
def test_erfcx_matches_scipy(x: float) -> None:
    assert erfcx(x) == pytest.approx(special.erfcx(x), rel=1e-13)


@pytest.mark.parametrize("mu", [0.05, 0.6, 1.0, 3.0, 20.0])
def test_gdp_delta_bounds_hold_the_closed_form(mu: float) -> None:
    for eps in np.linspace(0.0, mu * mu / 2 + 6 * mu, 25):
        a = -eps / mu + mu / 2
        exact = math.exp(special.log_ndtr(a)) - math.exp(eps + special.log_ndtr(a - mu))
        low, high = gdp_delta(mu, float(eps))
        assert low <= exact * (1 + 1e-12) + 1e-300
        assert high >= exact * (1 - 1e-12)
        assert high == pytest.approx(float(gdp_delta_upper(np.array(mu), np.array(eps))))


def test_gdp_epsilon_brackets_and_the_vector_version_agrees() -> None:
    mus = np.array([0.02, 0.5, 1.0, 2.5])
    up = gdp_epsilon_upper(mus, 1e-6)
    for mu, u in zip(mus.tolist(), up.tolist(), strict=True):
        hi, lo = gdp_epsilon(mu, 1e-6)
        assert lo <= hi <= u * (1 + 1e-14) and u == pytest.approx(hi, rel=1e-12)
        assert gdp_delta(mu, u)[1] <= 1e-6
