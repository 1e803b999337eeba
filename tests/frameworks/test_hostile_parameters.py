"""Public framework helpers refuse bad parameters by name, before any work (issue D09, D10,
D15 of the hostile-input sweep)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import dpkit
import dpkit as dp
from dpkit.errors import ParameterError
from dpkit.frameworks import (
    distance_to_high_sensitivity,
    propose_test_release,
    ptr_threshold,
    sample_and_aggregate,
    smooth_noise_parameters,
    smooth_sensitivity_release,
    smooth_upper_bound,
    utility_bound,
)

X = np.linspace(1, 99, 501)


@pytest.mark.parametrize(
    ("args", "exc", "match"),
    [
        ((0.0, 1e-6), dpkit.ParameterError, "`epsilon_test` must be a finite number > 0"),
        ((-1.0, 1e-6), dpkit.ParameterError, "`epsilon_test` must be a finite number > 0"),
        ((math.nan, 1e-6), dpkit.ParameterError, "`epsilon_test`"),
        ((math.inf, 1e-6), dpkit.ParameterError, "`epsilon_test`"),
        (("1", 1e-6), TypeError, "`epsilon_test` must be a real number"),
        ((True, 1e-6), TypeError, "`epsilon_test`"),
        ((1.0, 0.0), dpkit.ParameterError, "`delta` must be a number with 0 < delta < 1"),
        ((1.0, 1.0), dpkit.ParameterError, "`delta`"),
        ((1.0, math.nan), dpkit.ParameterError, "`delta`"),
        ((1.0, 1e-6, -1.0), dpkit.ParameterError, "`spacing` must be a finite number >= 0"),
        ((1.0, 1e-6, math.inf), dpkit.ParameterError, "`spacing`"),
        ((1e-310, 1e-6), dpkit.ParameterError, "threshold overflows a float"),
        ((1.0, 5e-324), dpkit.ParameterError, "1 / \\(2 delta\\) overflows a float"),
    ],
)
def test_ptr_threshold_refuses_bad_parameters(args: tuple, exc: type, match: str) -> None:
    with pytest.raises(exc, match=match) as info:
        ptr_threshold(*args)
    assert str(info.value).startswith("ptr_threshold: ")


def test_ptr_threshold_values_are_unchanged_and_finite() -> None:
    assert ptr_threshold(1.0, 1e-6) == math.log(1 / 2e-6)
    assert (
        ptr_threshold(0.5, 1e-6, 2.0**-20) == (1 + 2.0**-20) * math.log(1 / 2e-6) / 0.5 + 2.0**-20
    )
    assert ptr_threshold(1.0, 2.0**-1023) == pytest.approx(1023 * math.log(2) - math.log(2))
    # delta >= 1/2 is allowed (as propose_test_release allows it): the threshold is <= 0
    assert ptr_threshold(1.0, 0.9) == pytest.approx(math.log(1 / 1.8))


@pytest.mark.parametrize(
    ("args", "exc", "match"),
    [
        (("laplace", 1.0, 2.0), dpkit.ParameterError, "`delta` must be a number with 0 <= delta"),
        (("laplace", 1.0, 1.5), dpkit.ParameterError, "`delta`"),
        (("laplace", 1.0, 0.0), dpkit.ParameterError, "needs 0 < delta < 1"),
        (("laplace", 1.0, -1e-6), dpkit.ParameterError, "`delta`"),
        (("cauchy", -1.0), dpkit.ParameterError, "`epsilon` must be a finite number > 0"),
        (("cauchy", math.inf), dpkit.ParameterError, "`epsilon`"),
        (("cauchy", math.nan), dpkit.ParameterError, "`epsilon`"),
        (("cauchy", "1"), TypeError, "`epsilon` must be a real number"),
        (("cauchy", 1.0, 1e-6), dpkit.ParameterError, "pure epsilon-DP and uses no delta"),
        (("student_t", 1.0, 0.0, 0), dpkit.ParameterError, "`df` must be an int in \\[1, 64\\]"),
        (("student_t", 1.0, 0.0, 2.5), TypeError, "`df`"),
        (("gauss", 1.0), dpkit.ParameterError, "`noise` must be one of"),
        ((np.array(["laplace", "cauchy"]), 1.0, 1e-6), TypeError, "`noise` must be one of"),
        (("cauchy", 5e-324), dpkit.ParameterError, "too small"),
    ],
)
def test_smooth_noise_parameters_refuses_bad_parameters(args: tuple, exc: type, match: str) -> None:
    with pytest.raises(exc, match=match) as info:
        smooth_noise_parameters(*args)
    assert str(info.value).startswith("smooth_noise_parameters: ")


def test_smooth_noise_parameters_values_are_unchanged() -> None:
    assert smooth_noise_parameters("laplace", 1.0, 1e-6) == (1.0 / (2 * math.log(2e6)), 2.0)
    assert smooth_noise_parameters("cauchy", 1.0) == (1.0 / 6, 6.0)
    assert smooth_noise_parameters("student_t", 1.0, 0.0, 3) == (1.0 / 8, 4 / math.sqrt(3))


@pytest.mark.parametrize("grid", [None, np.linspace(0, 100, 11)])
def test_utility_bound_with_a_tiny_epsilon_is_the_widest_bound(grid: object) -> None:
    wide = utility_bound(X, epsilon=1e-310, bounds=(0.0, 100.0), grid=grid)
    assert wide == utility_bound(X, epsilon=1e-6, bounds=(0.0, 100.0), grid=grid)
    assert 50.0 <= wide <= 50.0 + 1e-6
    # ordinary epsilons: unchanged, and much tighter
    assert utility_bound(X, epsilon=1.0, bounds=(0.0, 100.0), grid=grid) < 20


CALLABLE_CASES = {
    "propose_test_release": lambda q: propose_test_release(
        X, q, 5.0, epsilon=1.0, delta=1e-6, bounds=(0.0, 100.0), rng=1
    ),
    "distance_to_high_sensitivity": lambda q: distance_to_high_sensitivity(
        q, X, 5.0, bounds=(0.0, 100.0)
    ),
    "smooth_sensitivity_release": lambda q: smooth_sensitivity_release(
        X, q, epsilon=1.0, delta=1e-6, bounds=(0.0, 100.0), rng=1
    ),
    "smooth_upper_bound": lambda q: smooth_upper_bound(q, X, 0.1, "unbounded", 0.0, 100.0),
}


@pytest.mark.parametrize("owner", sorted(CALLABLE_CASES))
@pytest.mark.parametrize("query", [np.median, np.mean, lambda v: float(np.median(v))])
def test_a_callable_query_is_named_as_a_callable_by_the_public_function(
    owner: str, query: object
) -> None:
    with pytest.raises(dpkit.ParameterError) as info:
        CALLABLE_CASES[owner](query)
    text = str(info.value)
    assert text.startswith(f"{owner}: `query` must be one of the supported query names")
    assert "a callable is not a supported query name" in text
    assert "no exact algorithm" not in text


def test_huge_chunks_is_abridged_in_the_message() -> None:
    with pytest.raises(dpkit.ParameterError, match="got an int of about 10\\*\\*400") as info:
        sample_and_aggregate(X, "mean", chunks=10**400, output_bounds=(0.0, 100.0), epsilon=1.0)
    assert len(str(info.value)) < 300
    with pytest.raises(dpkit.ParameterError, match=r"got 1000$"):
        sample_and_aggregate(X, "mean", chunks=1000, output_bounds=(0.0, 100.0), epsilon=1.0)


@pytest.mark.parametrize(
    "make_and_call",
    [
        lambda a: dp.sample_and_aggregate(
            [1.0, 2.0, 3.0, 10.0, 11.0],
            np.mean,
            chunks=3,
            output_bounds=(0, 100),
            epsilon=5e-324,
            accountant=a,
        ),
        lambda a: dp.propose_test_release(
            [1.0, 2.0, 3.0],
            "median",
            5.0,
            epsilon=0.5,
            delta=5e-324,
            bounds=(0, 100),
            accountant=a,
        ),
        lambda a: dp.smooth_sensitivity_release(
            [1.0, 2.0, 3.0, 10.0, 11.0],
            "median",
            epsilon=1e-15,
            delta=1e-6,
            bounds=(0, 100),
            accountant=a,
        ),
        lambda a: dp.inverse_sensitivity(
            [1.0, 2.0, 3.0], "median", epsilon=1.0, bounds=(0, 1e-320), accountant=a
        ),
        lambda a: dp.sample_and_aggregate(
            [1.0, 2.0, 3.0, 10.0, 11.0],
            "mean",
            chunks=3,
            output_bounds=(0, 1e-320),
            epsilon=1.0,
            accountant=a,
        ),
        lambda a: dp.propose_test_release(
            [1.0, 2.0, 3.0],
            "median",
            5.0,
            epsilon=1e-45,
            delta=1e-6,
            bounds=(0, 100),
            accountant=a,
        ),
    ],
)
def test_a_refused_framework_parameter_spends_nothing(
    make_and_call: Any, refused_or_released_once: Any
) -> None:
    # a parameter the sampler or the lattice cannot take is refused before the accountant is
    # charged; a supported one (DiscreteGaussian at epsilon 10) releases finite values, once
    refused_or_released_once(make_and_call)


def test_no_framework_release_is_infinite() -> None:
    # at an epsilon so large the noise is far below the output grid, every framework's
    # release is finite and inside the bounds
    x = [1.0, 2.0, 3.0, 10.0, 11.0]
    outs = [
        dp.propose_test_release(
            x, "median", 5.0, epsilon=1e300, delta=1e-6, bounds=(0, 100), rng=1
        ),
        dp.smooth_sensitivity_release(
            x, "median", epsilon=1e308, delta=1e-6, bounds=(0, 100), rng=1
        ),
        dp.sample_and_aggregate(x, np.mean, chunks=3, output_bounds=(0, 100), epsilon=1e308, rng=1),
        dp.inverse_sensitivity(x, "median", epsilon=1e300, bounds=(0, 100), rng=1),
    ]
    for rel in outs:
        assert rel.value is None or math.isfinite(rel.value)
        if rel.value is not None:
            assert 0 <= rel.value <= 100


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
        lambda: dp.propose_test_release(
            [1.0, 2.0, 3.0], "median", 5.0, epsilon=5e-324, delta=1e-6, bounds=(0, 100)
        ),
        lambda: dp.smooth_sensitivity_release(
            [1.0, 2.0, 3.0], "median", epsilon=1e-15, delta=1e-6, bounds=(0, 100)
        ),
    ],
)
def test_framework_messages_name_the_users_parameter_not_a_helper(call: Any) -> None:
    with pytest.raises(ParameterError) as info:
        call()
    msg = str(info.value)
    assert "`epsilon`" in msg or "`sensitivity`" in msg
    assert not any(name in msg for name in _INTERNAL), msg
