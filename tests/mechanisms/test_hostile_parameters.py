"""Mechanism helpers refuse bad parameters by name (hostile-input sweep, D09 and D10)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import dpkit
import dpkit as dp
from dpkit.errors import ParameterError
from dpkit.mechanisms import Gaussian, Laplace, discrete_gaussian_delta


@pytest.mark.parametrize(
    ("args", "exc", "match"),
    [
        ((1.0, 1, -1.0), dpkit.ParameterError, "`epsilon` must be a finite number >= 0"),
        ((1.0, 1, math.nan), dpkit.ParameterError, "`epsilon`"),
        ((1.0, 1, math.inf), dpkit.ParameterError, "`epsilon`"),
        ((1.0, 0, 1.0), dpkit.ParameterError, "`sensitivity` must be an int >= 1"),
        ((1.0, -3, 1.0), dpkit.ParameterError, "`sensitivity`"),
        ((1.0, 1.5, 1.0), TypeError, "`sensitivity` must be an int"),
        ((1.0, True, 1.0), TypeError, "`sensitivity`"),
        ((-1.0, 1, 1.0), dpkit.ParameterError, "`sigma2` must be a finite number > 0"),
        ((0.0, 1, 1.0), dpkit.ParameterError, "`sigma2`"),
        ((math.nan, 1, 1.0), dpkit.ParameterError, "`sigma2`"),
        (("1", 1, 1.0), TypeError, "`sigma2` must be a real number"),
        ((2.0**63, 1, 1.0), dpkit.ParameterError, "more than 2\\*\\*26 points"),
        ((1.0, 10**30, 1.0), dpkit.ParameterError, "an int of about 10\\*\\*30"),
    ],
)
def test_discrete_gaussian_delta_refuses_bad_parameters(args: tuple, exc: type, match: str) -> None:
    with pytest.raises(exc, match=match) as info:
        discrete_gaussian_delta(*args)
    assert str(info.value).startswith("discrete_gaussian_delta: ")


def test_discrete_gaussian_delta_edge_values() -> None:
    # epsilon = 0 is allowed: delta is then the total variation distance
    assert 0.0 < discrete_gaussian_delta(1.0, 1, 0.0) < 1.0
    # epsilon sigma2 / D overflows: both tails are empty
    assert discrete_gaussian_delta(2.0**30, 1, 1e300) == 0.0
    # the largest sums the mechanisms need (sigma up to 2**16) are still evaluated
    assert discrete_gaussian_delta(2.0**32, 1, 1.0) == 0.0
    assert discrete_gaussian_delta(2.0**32, 2**15, 1e-5) > 0.0


@pytest.mark.parametrize("mech", [Laplace(epsilon=1.0), Gaussian(epsilon=1.0, delta=1e-6)])
def test_noise_checks_size_like_sample(mech: object) -> None:
    owner = type(mech).__name__ + ".noise"
    with pytest.raises(dpkit.ParameterError, match=f"^{owner}: `size` must be an int >= 0"):
        mech.noise(-1, rng=1)  # type: ignore[attr-defined]
    for bad in (2.0, True, "3", np.float64(2.0)):
        with pytest.raises(TypeError, match=f"^{owner}: `size`"):
            mech.noise(bad, rng=1)  # type: ignore[attr-defined]
        with pytest.raises(TypeError):
            mech.sample(1.0, bad, rng=1)  # type: ignore[attr-defined]
    assert mech.noise(0, rng=1).shape == (0,)  # type: ignore[attr-defined]
    assert mech.noise(np.int64(3), rng=1).shape == (3,)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("call", "owner"),
    [
        (lambda d: Laplace(1.0, 1.0).noise_scale(d), "Laplace"),
        (lambda d: Laplace(1.0, 1.0).accuracy(0.05, d), "Laplace"),
        (lambda d: Gaussian(1.0, 1e-5, 1.0).grid(d), "Gaussian"),
        (lambda d: Gaussian(1.0, 1e-5, 1.0).noise_scale(d), "Gaussian"),
        (lambda d: dpkit.DiscreteGaussian(1.0, 1e-5).accuracy(0.05, d), "DiscreteGaussian"),
    ],
)
def test_the_number_of_coordinates_is_validated(call: Any, owner: str) -> None:
    # a count of coordinates below 1, or not an int, is refused by name (it divided by zero
    # or took a square root of a negative number)
    with pytest.raises(dpkit.ParameterError, match=rf"^{owner}: `d` must be"):
        call(0)
    with pytest.raises(dpkit.ParameterError, match=rf"^{owner}: `d` must be"):
        call(-3)
    with pytest.raises(TypeError, match=rf"^{owner}: `d`"):
        call(1.5)


@pytest.mark.parametrize(
    "make_and_call",
    [
        lambda a: dp.ReportNoisyMax(epsilon=1e-10).select(["a", "b"], [1.0, 2.0], accountant=a),
        lambda a: dp.DiscreteGaussian(epsilon=3, delta=1e-5, sensitivity=2**62).release(
            10, accountant=a
        ),
        lambda a: dp.DiscreteGaussian(epsilon=10.0, delta=1e-5).release(
            np.zeros(2, dtype=np.int64), accountant=a, rng=1
        ),
        lambda a: dp.Laplace(epsilon=1.0).measure(3.0, alpha=2.0, accountant=a),
        lambda a: dp.Geometric(epsilon=1.0).measure(3, alpha=2.0, accountant=a),
    ],
)
def test_a_refused_mechanism_parameter_spends_nothing(
    make_and_call: Any, refused_or_released_once: Any
) -> None:
    # a parameter the sampler or the lattice cannot take is refused before the accountant is
    # charged; a supported one (DiscreteGaussian at epsilon 10) releases finite values, once
    refused_or_released_once(make_and_call)


def test_no_mechanism_release_is_infinite() -> None:
    # a lattice whose points could overflow a float is refused; the largest one accepted
    # releases finite values and intervals
    with pytest.raises(ParameterError, match="`sensitivity`=1e\\+308 is too large"):
        dp.Laplace(epsilon=1.0, sensitivity=1e308)
    m = dp.Laplace(epsilon=1.0, sensitivity=1e290).measure(3.0, rng=1)
    assert math.isfinite(m.value) and all(map(math.isfinite, m.interval))


#: Helpers whose names must never be the subject of a message to the user.
_INTERNAL = (
    "grid:",
    "discrete_gaussian_tc",
    "distance_to_high_sensitivity",
    "geometric: `x`",
    "analytic_gaussian_sigma",
    "_exp_decimal",
    "pow2_at_most",
    "rounded_laplace",
)


@pytest.mark.parametrize(
    "call",
    [
        lambda: dp.Laplace(epsilon=1.0, sensitivity=5e-324).release(3.0),
        lambda: dp.DiscreteGaussian(epsilon=3, delta=1e-5, sensitivity=2**62).release(10),
        lambda: dp.Gaussian(epsilon=1.0, delta=1e-5, sensitivity=1e308),
    ],
)
def test_mechanism_messages_name_the_users_parameter_not_a_helper(call: Any) -> None:
    with pytest.raises(ParameterError) as info:
        call()
    msg = str(info.value)
    assert "`epsilon`" in msg or "`sensitivity`" in msg
    assert not any(name in msg for name in _INTERNAL), msg
