"""Sequential, parallel and advanced composition against worked values."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpkit import ZCDP, ApproxDP, ParameterError, PureDP
from dpkit.accounting import (
    advanced_composition,
    parallel_composition,
    sequential_composition,
)

small = st.floats(min_value=0.0, max_value=10.0, allow_nan=False)


def test_sequential_worked_values() -> None:
    assert sequential_composition([PureDP(0.5), PureDP(0.25), PureDP(0.25)]) == PureDP(1.0)
    assert sequential_composition([ApproxDP(1.0, 1e-6), PureDP(0.5)]) == ApproxDP(1.5, 1e-6)
    assert sequential_composition([ApproxDP(0.5, 2**-20)] * 4) == ApproxDP(2.0, 2**-18)
    assert sequential_composition([ZCDP(0.125), ZCDP(0.375)]) == ZCDP(0.5)
    assert sequential_composition(iter([PureDP(1.0)])) == PureDP(1.0)


def test_sequential_ten_tenths_exceed_one() -> None:
    # The float 0.1 is 0.1000000000000000055511151231257827...; ten of them are exactly
    # 1.000000000000000055511151231257827..., above 1. Rounded up, that is the float after 1.0.
    total = sequential_composition([PureDP(0.1)] * 10)
    assert total.epsilon == math.nextafter(1.0, 2.0)
    # while naive float summation gives 0.9999999999999999: an undercount of the true total
    assert sum([0.1] * 10) < 1.0


@given(st.lists(small, min_size=1, max_size=20))
def test_sequential_pure_is_exact_sum_rounded_up(eps: list[float]) -> None:
    out = sequential_composition([PureDP(e) for e in eps])
    exact = sum((Fraction(e) for e in eps), Fraction(0))
    assert Fraction(out.epsilon) >= exact
    assert Fraction(math.nextafter(out.epsilon, -1.0)) < exact or out.epsilon == 0


@given(
    st.lists(
        st.tuples(small, st.floats(min_value=0, max_value=1e-3, allow_nan=False)),
        min_size=1,
        max_size=20,
    )
)
def test_sequential_approx_matches_pairwise_addition(pairs: list[tuple[float, float]]) -> None:
    out = sequential_composition([ApproxDP(e, d) for e, d in pairs])
    assert isinstance(out, ApproxDP)
    assert out.epsilon == pytest.approx(sum(e for e, _ in pairs), rel=1e-12, abs=1e-300)
    assert out.delta == pytest.approx(sum(d for _, d in pairs), rel=1e-12, abs=1e-300)
    assert Fraction(out.delta) >= sum((Fraction(d) for _, d in pairs), Fraction(0))


def test_sequential_refuses_mixed_zcdp() -> None:
    with pytest.raises(TypeError, match="cannot mix ZCDP"):
        sequential_composition([PureDP(1.0), ZCDP(0.5)])
    with pytest.raises(TypeError, match="cannot mix ZCDP"):
        parallel_composition([ZCDP(0.5), ApproxDP(1.0, 1e-6)])


def test_sequential_bad_input() -> None:
    with pytest.raises(ParameterError, match="empty"):
        sequential_composition([])
    with pytest.raises(TypeError, match=r"losses\[1\]"):
        sequential_composition([PureDP(1.0), 0.5])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="iterable"):
        sequential_composition(PureDP(1.0))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="iterable"):
        sequential_composition(3)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match=">= 1"):
        sequential_composition([ApproxDP(1.0, 0.6), ApproxDP(1.0, 0.5)])


def test_parallel_worked_values() -> None:
    assert parallel_composition([PureDP(0.5), PureDP(1.0), PureDP(0.25)]) == PureDP(1.0)
    assert parallel_composition([ApproxDP(1.0, 1e-8), ApproxDP(0.5, 1e-6)]) == ApproxDP(1.0, 1e-6)
    assert parallel_composition([ZCDP(0.1), ZCDP(0.3)]) == ZCDP(0.3)
    assert parallel_composition([PureDP(2.0), ApproxDP(1.0, 1e-9)]) == ApproxDP(2.0, 1e-9)


@given(st.lists(small, min_size=1, max_size=20))
def test_parallel_never_exceeds_sequential(eps: list[float]) -> None:
    losses = [PureDP(e) for e in eps]
    par = parallel_composition(losses)
    seq = sequential_composition(losses)
    assert par <= seq
    assert par == PureDP(max(eps))


def _drv(eps: float, delta: float, k: int, delta_prime: float) -> tuple[float, float]:
    # Dwork-Rothblum-Vadhan 2010, Theorem III.3, written out independently (exp, not expm1)
    return (
        math.sqrt(2 * k * math.log(1 / delta_prime)) * eps + k * eps * (math.exp(eps) - 1),
        k * delta + delta_prime,
    )


@pytest.mark.parametrize(
    ("eps", "delta", "k", "delta_prime"),
    [(0.1, 0.0, 100, 1e-6), (0.01, 1e-9, 1000, 1e-6), (0.5, 1e-7, 20, 1e-5), (1.0, 0.0, 1, 0.5)],
)
def test_advanced_composition_formula(eps: float, delta: float, k: int, delta_prime: float) -> None:
    loss = PureDP(eps) if delta == 0 else ApproxDP(eps, delta)
    out = advanced_composition(loss, k, delta_prime=delta_prime)
    want_eps, want_delta = _drv(eps, delta, k, delta_prime)
    assert out.epsilon == pytest.approx(want_eps, rel=1e-12)
    assert out.delta == pytest.approx(want_delta, rel=1e-12)


def test_advanced_composition_worked_example() -> None:
    # eps = 0.1, k = 100, delta' = 1e-6: sqrt(200 ln 1e6) * 0.1 = 5.2565..., plus
    # 100 * 0.1 * (e^0.1 - 1) = 1.0517...: 6.3082, well below the basic 10.
    out = advanced_composition(PureDP(0.1), 100, delta_prime=1e-6)
    assert out.epsilon == pytest.approx(6.30823095051341, rel=1e-12)
    assert out.epsilon < sequential_composition([PureDP(0.1)] * 100).epsilon
    assert out.delta == 1e-6


def test_advanced_composition_bad_input() -> None:
    with pytest.raises(TypeError, match="`k` must be an int"):
        advanced_composition(PureDP(0.1), 10.0, delta_prime=1e-6)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="`k` must be an int"):
        advanced_composition(PureDP(0.1), True, delta_prime=1e-6)
    with pytest.raises(ParameterError, match="`k` must be an int >= 1; got 0"):
        advanced_composition(PureDP(0.1), 0, delta_prime=1e-6)
    with pytest.raises(ParameterError, match="`delta_prime`"):
        advanced_composition(PureDP(0.1), 10, delta_prime=0.0)
    with pytest.raises(TypeError, match="zCDP composes exactly"):
        advanced_composition(ZCDP(0.1), 10, delta_prime=1e-6)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match=">= 1"):
        advanced_composition(ApproxDP(0.1, 0.01), 100, delta_prime=1e-6)
