"""Exact inputs (contract 2): ints and Fractions are rounded to the lattice without floats."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
import pytest

import dpkit as dp
from dpkit.errors import ParameterError

LAP = dp.Laplace(epsilon=1.0, sensitivity=1.0)  # grid 2**-16
GAU = dp.Gaussian(epsilon=1.0, delta=1e-6, sensitivity=1.0)
MECHS = [LAP, GAU]


def _grid(mech: Any, d: int = 1) -> float:
    return float(mech.measure(np.zeros(d), rng=0).details["grid"])


def _lattice_point(mech: Any, value: Any, seed: int) -> Any:
    """The rounded input, read off as release(value) - release(0) with the same noise."""
    g = _grid(mech, max(int(np.size(np.asarray(value, dtype=object))), 1))
    zero = np.zeros(np.shape(np.asarray(value, dtype=object)))
    out = np.asarray(mech.release(value, rng=seed), dtype=np.float64)
    base = np.asarray(mech.release(zero if zero.ndim else 0.0, rng=seed), dtype=np.float64)
    return (out - base) / g  # exact: small lattice integers times a power of two


@pytest.mark.parametrize("mech", MECHS)
def test_fraction_just_above_a_tie_rounds_up(mech: Any) -> None:
    # v / grid = 21846.5 + 2**-64: exactly, the nearest lattice point is 21847; through a
    # float, v becomes the tie 21846.5, which rint sends to the even 21846
    g = Fraction(_grid(mech))
    v = (Fraction(43693, 2) + Fraction(1, 2**64)) * g
    assert float(v) / float(g) == 21846.5  # the float path would see the tie
    assert _lattice_point(mech, v, seed=5) == 21847
    assert _lattice_point(mech, float(v), seed=5) == 21846  # floats keep today's path


def test_big_int_is_not_rounded_through_float() -> None:
    # grid 2**24; v / grid = 2**36 + 1/2 + 2**-24 rounds to 2**36 + 1 exactly, while
    # float(v) = 2**60 + 2**23 gives the tie 2**36 + 1/2, rounded to the even 2**36
    lap = dp.Laplace(epsilon=1.0, sensitivity=2.0**40)
    assert _grid(lap) == 2.0**24
    v = 2**60 + 2**23 + 1
    assert _lattice_point(lap, v, seed=2) == 2**36 + 1
    # two coordinates: grid 2**27, the same tie one level up
    assert _grid(lap, 2) == 2.0**27
    w = 2**60 + 2**26 + 1
    assert _lattice_point(lap, np.array([w, -w]), seed=2).tolist() == [2**33 + 1, -(2**33 + 1)]
    assert _lattice_point(lap, np.array([float(w), -float(w)]), seed=2).tolist() == [
        2**33,
        -(2**33),
    ]


@pytest.mark.parametrize("mech", MECHS)
def test_sequences_and_object_arrays_of_exact_values(mech: Any) -> None:
    g = Fraction(_grid(mech, 3))
    vals = [Fraction(1, 3), 7, (Fraction(5, 2) + Fraction(1, 2**70)) * g]
    expected = [round(Fraction(1, 3) / g), round(7 / g), 3]
    for form in (vals, np.array(vals, dtype=object), tuple(vals)):
        assert _lattice_point(mech, form, seed=9).tolist() == expected
    out = mech.release(np.array(vals, dtype=object).reshape(3, 1), rng=1)
    assert isinstance(out, np.ndarray) and out.shape == (3, 1) and out.dtype == np.float64
    assert isinstance(mech.release(Fraction(1, 3), rng=1), float)
    # a float among exact values is taken at its exact (dyadic) value
    assert _lattice_point(mech, [Fraction(1, 3), 0.5, 2], seed=9).tolist() == [
        round(Fraction(1, 3) / g),
        round(Fraction(1, 2) / g),
        round(2 / g),
    ]


@pytest.mark.parametrize("mech", MECHS)
def test_exact_inputs_are_validated(mech: Any) -> None:
    with pytest.raises(TypeError, match="value"):
        mech.release([Fraction(1, 3), "2"], rng=0)
    with pytest.raises(TypeError, match="value"):
        mech.release([Fraction(1, 3), True], rng=0)
    with pytest.raises(ParameterError, match="finite"):
        mech.release([Fraction(1, 3), float("nan")], rng=0)
    with pytest.raises(ParameterError, match="below"):
        mech.release(10**400, rng=0)
    with pytest.raises(ParameterError, match="below"):
        mech.release(Fraction(10**400, 3), rng=0)


def test_exact_input_spends_only_after_validation() -> None:
    acct = dp.Accountant(dp.PureDP(1.0))
    with pytest.raises(ParameterError):
        LAP.release([Fraction(1), 10**400], rng=0, accountant=acct)
    assert acct.spent == dp.PureDP(0.0)
