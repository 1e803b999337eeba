"""Conversions and composition at the edges of the float range (hostile-input sweep, D10):
a refusal names the function and the parameters the caller passed, never an intermediate."""

from __future__ import annotations

import math
import sys

import pytest

import dpkit
from dpkit.accounting import (
    PureDP,
    advanced_composition,
    approx_to_zcdp,
    zcdp_to_approx,
)

MAXFLOAT = sys.float_info.max


def test_zcdp_to_approx_overflow_names_its_own_parameters() -> None:
    with pytest.raises(dpkit.ParameterError) as info:
        zcdp_to_approx(MAXFLOAT, 1e-6)
    text = str(info.value)
    assert text.startswith("zcdp_to_approx: the converted epsilon overflows a float")
    assert "ApproxDP" not in text and "got inf" not in text
    with pytest.raises(dpkit.ParameterError, match=r"^zcdp_to_approx: the converted epsilon"):
        zcdp_to_approx(MAXFLOAT, 1e-6, method="standard")


def test_approx_to_zcdp_at_the_largest_epsilon() -> None:
    rho = approx_to_zcdp(MAXFLOAT, 1e-6).rho
    assert 0 < rho < MAXFLOAT
    assert zcdp_to_approx(rho, 1e-6).epsilon <= MAXFLOAT
    # unchanged for ordinary values
    small = approx_to_zcdp(1.0, 1e-6).rho
    assert zcdp_to_approx(small, 1e-6).epsilon <= 1.0
    assert round(small, 4) == 0.0244


def test_advanced_composition_with_a_subnormal_delta_prime() -> None:
    out = advanced_composition(PureDP(1.0), 2, delta_prime=5e-324)
    want = math.sqrt(2 * 2 * -math.log(5e-324)) + 2 * math.expm1(1.0)
    assert out.epsilon == pytest.approx(want, rel=1e-12)
    assert out.epsilon < 60
    # a normal delta_prime: the value computed as before, log(1 / delta')
    ref = advanced_composition(PureDP(0.1), 10, delta_prime=1e-6)
    assert ref.epsilon >= math.sqrt(2 * 10 * math.log(1 / 1e-6)) * 0.1 + 10 * 0.1 * math.expm1(0.1)
