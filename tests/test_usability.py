"""Error messages a user meets first: each names the object, the parameter, what is allowed
and what was received. Known-confusing messages stay here as strict xfails until fixed."""

from __future__ import annotations

import numpy as np
import pytest

import dpkit as dp


def _message(exc_type: type[Exception], fn: object) -> str:
    with pytest.raises(exc_type) as info:
        fn()  # type: ignore[operator]
    return str(info.value)


def test_negative_epsilon_message() -> None:
    msg = _message(ValueError, lambda: dp.Laplace(epsilon=-1.0))
    assert msg == "Laplace: `epsilon` must be a finite number > 0; got -1.0"


def test_bool_is_not_a_number() -> None:
    msg = _message(TypeError, lambda: dp.Laplace(epsilon=True))
    assert "Laplace" in msg and "`epsilon`" in msg and "bool" in msg


def test_classic_gaussian_points_to_analytic() -> None:
    msg = _message(ValueError, lambda: dp.Gaussian(epsilon=2.0, delta=1e-6, calibration="classic"))
    assert "epsilon < 1" in msg and "calibration='analytic'" in msg


def test_numpy_generator_is_refused_with_a_reason() -> None:
    msg = _message(TypeError, lambda: dp.Laplace(1.0).release(1.0, rng=np.random.default_rng()))
    assert "not cryptographically secure" in msg and "int seed" in msg


def test_nan_value_says_what_to_do() -> None:
    msg = _message(ValueError, lambda: dp.Laplace(1.0).release(float("nan")))
    assert "NaN" in msg and "clip or impute" in msg


def test_scores_length_mismatch_counts_both() -> None:
    msg = _message(ValueError, lambda: dp.Exponential(1.0).select(["a", "b", "c"], [1, 2]))
    assert "2 scores for 3 candidates" in msg


def test_value_too_large_suggests_the_fix() -> None:
    msg = _message(ValueError, lambda: dp.Laplace(1.0).release(1e30))
    assert "sensitivity" in msg and "offset" in msg and "Laplace.release" in msg
    msg = _message(ValueError, lambda: dp.Gaussian(0.5, 1e-6).release([0.0, -1e30]))
    assert "sensitivity" in msg and "Gaussian.release" in msg
