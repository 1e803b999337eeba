"""Privacy-loss values: frozen, validated, addable within a family, partially ordered."""

from __future__ import annotations

import dataclasses

import pytest

from dpkit import ZCDP, ApproxDP, ParameterError, PureDP


def test_addition_is_sequential_composition() -> None:
    assert PureDP(1.0) + PureDP(0.5) == PureDP(1.5)
    assert ApproxDP(1.0, 1e-6) + ApproxDP(0.5, 2e-6) == ApproxDP(1.5, 3e-6)
    assert PureDP(0.5) + ApproxDP(1.0, 1e-6) == ApproxDP(1.5, 1e-6)
    assert ApproxDP(1.0, 1e-6) + PureDP(0.5) == ApproxDP(1.5, 1e-6)
    assert ZCDP(0.1) + ZCDP(0.2) == ZCDP(0.1 + 0.2)
    with pytest.raises(TypeError, match="convert"):
        ZCDP(0.1) + PureDP(1.0)
    with pytest.raises(ParameterError, match="delta"):
        ApproxDP(1.0, 0.6) + ApproxDP(1.0, 0.5)


def test_partial_order() -> None:
    assert ApproxDP(1, 1e-6) <= ApproxDP(2, 1e-5)
    assert not ApproxDP(1, 1e-4) <= ApproxDP(2, 1e-5)  # incomparable: neither is smaller
    assert not ApproxDP(2, 1e-5) <= ApproxDP(1, 1e-4)
    assert PureDP(1.0) <= ApproxDP(1.0, 1e-9) and PureDP(1.0) < ApproxDP(1.0, 1e-9)
    assert PureDP(2.0) > PureDP(1.0) and PureDP(1.0) >= PureDP(1.0)
    assert not PureDP(1.0) < PureDP(1.0)
    assert ZCDP(0.1) < ZCDP(0.2)
    with pytest.raises(TypeError, match="convert"):
        _ = ZCDP(0.1) <= PureDP(1.0)


@pytest.mark.parametrize(
    ("factory", "exc"),
    [
        (lambda: PureDP(-1.0), ParameterError),
        (lambda: PureDP(float("nan")), ParameterError),
        (lambda: PureDP(True), TypeError),
        (lambda: ApproxDP(1.0, 1.0), ParameterError),
        (lambda: ApproxDP(1.0, -1e-9), ParameterError),
        (lambda: ZCDP(float("inf")), ParameterError),
    ],
)
def test_validation(factory: object, exc: type[Exception]) -> None:
    with pytest.raises(exc):
        factory()  # type: ignore[operator]


def test_frozen_and_hashable() -> None:
    loss = ApproxDP(1.0, 1e-6)
    with pytest.raises(dataclasses.FrozenInstanceError):
        loss.epsilon = 2.0  # type: ignore[misc]
    assert {PureDP(1.0), PureDP(1.0)} == {PureDP(1.0)}
    assert PureDP(1.0) != ApproxDP(1.0, 0.0)  # different families stay distinct values
