"""The shared lattice (contract 2): the per-record map, exact sums and exact rounding."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from dpkit._lattice import (
    check_unit,
    exact_mean,
    exact_sum,
    parse_values,
    round_values,
    unit_for,
    units,
)
from dpkit.errors import ParameterError


def _units_oracle(x: float, unit: float, lower: float, upper: float) -> int:
    """The documented formula, one record at a time in exact arithmetic, except the float
    addition ``v + 0.5``, which the contract defines as IEEE float64 (``v`` is exact)."""
    c = min(max(x, lower), upper)
    v = Fraction(c) / Fraction(unit)
    assert Fraction(float(v)) == v  # division by a power of two is exact
    t = math.floor(float(v) + 0.5)
    return min(max(t, math.ceil(Fraction(lower) / Fraction(unit))), math.floor(upper / unit))


def test_units_match_the_documented_formula() -> None:
    rng = np.random.default_rng(0)
    for lower, upper, unit in [(0.0, 100.0, 2.0**-24), (-3.3, 7.1, 0.25), (1e15, 1e15 + 1, 0.25)]:
        x = np.concatenate(
            [
                rng.uniform(lower - 1, upper + 1, 500),
                (np.arange(-4, 60) + 0.5) * unit + lower,  # exact halves
                np.nextafter((np.arange(-4, 60) + 0.5) * unit + lower, -np.inf),
                [lower, upper, -1e300, 1e300],
            ]
        )
        got = units(x, unit, lower, upper)
        assert got.dtype == np.int64
        assert got.tolist() == [_units_oracle(float(v), unit, lower, upper) for v in x]
        # always a lattice point inside the bounds, at most one unit from the clipped record
        assert np.all(got * unit >= lower) and np.all(got * unit <= upper)
        assert np.all(np.abs(np.clip(x, lower, upper) - got * unit) <= unit)


def test_units_float_addition_is_part_of_the_definition() -> None:
    # v = 0.49999999999999994: exactly floor(v + 1/2) = 0, but the float sum rounds to 1.0;
    # engines evaluating the formula in float64 all give 1, and so does dpkit
    v = np.nextafter(0.5, 0.0)
    assert units(np.array([v]), 1.0, 0.0, 10.0).tolist() == [1]


def test_check_unit_and_unit_for() -> None:
    assert check_unit("t", 0.25, -1.1, 2.0) == (-4, 8)
    for bad in (0.3, 0.0, -0.5, float("inf")):
        with pytest.raises(ParameterError, match="power of two"):
            check_unit("t", bad, 0.0, 1.0)
    with pytest.raises(TypeError, match="unit"):
        check_unit("t", True, 0.0, 1.0)
    with pytest.raises(ParameterError, match="2\\*\\*52"):
        check_unit("t", 2.0**-40, 0.0, 1e4)
    with pytest.raises(ParameterError, match="no multiple"):
        check_unit("t", 1.0, 0.2, 0.7)
    for lower, upper in [(0.0, 100.0), (-1e-9, 1e-9), (1e15, 1e15 + 1), (-1e300, 1e300)]:
        u = unit_for(lower, upper)
        first, last = check_unit("t", u, lower, upper)  # always a valid unit
        assert last - first >= 1
    assert unit_for(0.0, 100.0) == 2.0**-24  # 2**(6 - 30)
    assert unit_for(1e15, 1e15 + 1) == 0.25  # coarse: 1e15 / 0.125 is above 2**52


def test_exact_sum_does_not_overflow() -> None:
    rng = np.random.default_rng(1)
    big = rng.integers(-(2**52) + 1, 2**52, size=20_000, dtype=np.int64)
    assert exact_sum(big) == sum(int(v) for v in big)
    assert exact_sum(np.full(10_000, 2**52 - 1, dtype=np.int64)) == 10_000 * (2**52 - 1)
    assert exact_sum(np.zeros(0, dtype=np.int64)) == 0
    assert exact_mean(np.array([1, 2, 2]), 0.5) == Fraction(5, 6)
    with pytest.raises(ParameterError):
        exact_mean(np.zeros(0, dtype=np.int64), 0.5)


def test_round_values_floats_and_exact_agree_on_floats() -> None:
    rng = np.random.default_rng(2)
    x = np.concatenate([rng.normal(0, 1e3, 300), (np.arange(-20, 20) + 0.5) * 2.0**-8])
    via_float = round_values("t", parse_values("t", x), 2.0**-8)
    via_exact = round_values("t", parse_values("t", [Fraction(v) for v in x]), 2.0**-8)
    assert via_float.tolist() == via_exact.tolist()
    assert parse_values("t", 5).floats is not None  # small ints take the float path
    assert parse_values("t", 2**60 + 1).exact == (Fraction(2**60 + 1),)
    with pytest.raises(ParameterError, match="below"):
        round_values("t", parse_values("t", 2.0**70), 1.0)
