"""The common battery every mechanism passes: validation, immutability, repr, reproducibility,
shapes, and spending before noise."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import dpkit as dp
from dpkit.errors import BudgetExceededError, ParameterError

# (factory from keyword overrides, defaults, kind)
FACTORIES: dict[str, tuple[Callable[..., Any], dict[str, Any], str]] = {
    "Laplace": (dp.Laplace, {"epsilon": 1.0, "sensitivity": 1.0}, "real"),
    "Gaussian-analytic": (
        dp.Gaussian,
        {"epsilon": 1.0, "delta": 1e-5, "sensitivity": 1.0, "calibration": "analytic"},
        "real",
    ),
    "Gaussian-classic": (
        dp.Gaussian,
        {"epsilon": 0.5, "delta": 1e-5, "sensitivity": 1.0, "calibration": "classic"},
        "real",
    ),
    "Geometric": (dp.Geometric, {"epsilon": 1.0, "sensitivity": 1}, "int"),
    "DiscreteGaussian": (
        dp.DiscreteGaussian,
        {"epsilon": 1.0, "delta": 1e-5, "sensitivity": 1},
        "int",
    ),
    "Exponential": (dp.Exponential, {"epsilon": 1.0, "sensitivity": 1.0}, "select"),
    "ReportNoisyMax": (dp.ReportNoisyMax, {"epsilon": 1.0, "sensitivity": 1.0}, "select"),
    "PermuteAndFlip": (dp.PermuteAndFlip, {"epsilon": 1.0, "sensitivity": 1.0}, "select"),
}
NAMES = list(FACTORIES)

BAD_NUMBERS = [
    (float("nan"), ParameterError),
    (float("inf"), ParameterError),
    (0.0, ParameterError),
    (-1.0, ParameterError),
    (True, TypeError),
    ("1", TypeError),
    (None, TypeError),
]


def make(name: str, **overrides: Any) -> Any:
    factory, defaults, _ = FACTORIES[name]
    return factory(**{**defaults, **overrides})


def run(mech: Any, name: str, rng: Any, value: Any = None) -> Any:
    kind = FACTORIES[name][2]
    if kind == "select":
        return mech.select(["a", "b", "c", "d"], [1.0, 4.0, 2.0, 3.5], rng=rng)
    if value is None:
        value = 10 if kind == "int" else 10.0
    return mech.release(value, rng=rng)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(("bad", "exc"), BAD_NUMBERS)
def test_bad_epsilon(name: str, bad: Any, exc: type[Exception]) -> None:
    with pytest.raises(exc, match="epsilon"):
        make(name, epsilon=bad)


@pytest.mark.parametrize("name", [n for n in NAMES if FACTORIES[n][2] != "int"])
@pytest.mark.parametrize(("bad", "exc"), BAD_NUMBERS)
def test_bad_sensitivity(name: str, bad: Any, exc: type[Exception]) -> None:
    with pytest.raises(exc, match="sensitivity"):
        make(name, sensitivity=bad)


@pytest.mark.parametrize("name", ["Geometric", "DiscreteGaussian"])
@pytest.mark.parametrize(
    ("bad", "exc"), [(0, ParameterError), (-2, ParameterError), (1.5, TypeError), (True, TypeError)]
)
def test_bad_integer_sensitivity(name: str, bad: Any, exc: type[Exception]) -> None:
    with pytest.raises(exc, match="sensitivity"):
        make(name, sensitivity=bad)


@pytest.mark.parametrize("name", ["Gaussian-analytic", "DiscreteGaussian"])
@pytest.mark.parametrize(
    ("bad", "exc"),
    [
        (0.0, ParameterError),
        (1.0, ParameterError),
        (-1e-9, ParameterError),
        (1.5, ParameterError),
        (float("nan"), ParameterError),
        (True, TypeError),
        ("x", TypeError),
    ],
)
def test_bad_delta(name: str, bad: Any, exc: type[Exception]) -> None:
    with pytest.raises(exc, match="delta"):
        make(name, delta=bad)


def test_classic_gaussian_refuses_large_epsilon() -> None:
    with pytest.raises(ParameterError, match="analytic"):
        dp.Gaussian(epsilon=1.0, delta=1e-5, sensitivity=1.0, calibration="classic")


def test_gaussian_bad_options() -> None:
    with pytest.raises(ParameterError, match="norm"):
        dp.Gaussian(epsilon=1.0, delta=1e-5, norm="linf")
    with pytest.raises(ParameterError, match="calibration"):
        dp.Gaussian(epsilon=1.0, delta=1e-5, calibration="magic")


@pytest.mark.parametrize("name", NAMES)
def test_immutable(name: str) -> None:
    mech = make(name)
    with pytest.raises(dataclasses.FrozenInstanceError):
        mech.epsilon = 2.0  # type: ignore[misc]
    before = mech.epsilon
    changed = dataclasses.replace(mech, epsilon=before / 2)
    assert changed.epsilon == before / 2 and mech.epsilon == before
    with pytest.raises(ParameterError):  # copies are validated too
        dataclasses.replace(mech, epsilon=-1.0)


@pytest.mark.parametrize("name", NAMES)
def test_repr_names_class_and_parameters(name: str) -> None:
    text = repr(make(name))
    assert type(make(name)).__name__ in text and "epsilon=" in text


@pytest.mark.parametrize("name", NAMES)
def test_privacy_is_a_loss_value(name: str) -> None:
    mech = make(name)
    assert isinstance(mech.privacy, dp.PureDP | dp.ApproxDP)
    assert mech.privacy.epsilon == mech.epsilon


@pytest.mark.parametrize("name", NAMES)
def test_seeded_reproducibility(name: str) -> None:
    mech = make(name)
    assert run(mech, name, 123) == run(mech, name, 123)
    outs = {run(mech, name, seed) for seed in range(20)}
    if FACTORIES[name][2] != "select":
        assert len(outs) > 1


@pytest.mark.parametrize("name", [n for n in NAMES if FACTORIES[n][2] != "select"])
def test_shapes_kept(name: str) -> None:
    mech = make(name)
    kind = FACTORIES[name][2]
    scalar = run(mech, name, 1)
    assert isinstance(scalar, int if kind == "int" else float)
    arr = np.zeros((3, 2), dtype=np.int64 if kind == "int" else np.float64)
    out = mech.release(arr, rng=1)
    assert isinstance(out, np.ndarray) and out.shape == (3, 2)
    assert len(set(out.ravel().tolist())) > 1  # independent noise per coordinate


@pytest.mark.parametrize("name", ["Laplace", "Gaussian-analytic"])
@pytest.mark.parametrize("value", [float("nan"), float("inf"), [1.0, float("nan")]])
def test_non_finite_values_refused(name: str, value: Any) -> None:
    with pytest.raises(ParameterError, match="finite"):
        make(name).release(value, rng=0)


@pytest.mark.parametrize("name", ["Laplace", "Gaussian-analytic", "Geometric", "DiscreteGaussian"])
def test_wrong_value_types(name: str) -> None:
    with pytest.raises(TypeError):
        make(name).release("12", rng=0)
    with pytest.raises(TypeError):
        make(name).release(True, rng=0)


@pytest.mark.parametrize("name", ["Geometric", "DiscreteGaussian"])
def test_integer_mechanisms_take_integers_only(name: str) -> None:
    mech = make(name)
    # integer-valued floats are integers; a fraction, NaN or an object is not
    assert isinstance(mech.release(7.0, rng=0), int)
    assert mech.release(np.array([1.0, -2.0]), rng=0).dtype == np.int64
    for bad in (2.5, float("nan"), [1.0, float("inf")], [object()]):
        with pytest.raises(TypeError, match="integers"):
            mech.release(bad, rng=0)
    # beyond int64's comfortable range: refused, never wrapped around
    for big in (1e30, 2**62, -(2**63), 10**30, [0, 2**62]):
        with pytest.raises(ParameterError, match="2\\*\\*62"):
            mech.release(big, rng=0)
    assert mech.release(2**61, rng=0) > 2**60  # large but representable values work


@pytest.mark.parametrize("name", ["Exponential", "ReportNoisyMax", "PermuteAndFlip"])
def test_selection_input_checks(name: str) -> None:
    mech = make(name)
    with pytest.raises(ParameterError, match="empty"):
        mech.select([], [], rng=0)
    with pytest.raises(ParameterError, match="one score per candidate"):
        mech.select(["a", "b"], [1.0], rng=0)
    with pytest.raises(ParameterError, match="finite"):
        mech.select(["a", "b"], [1.0, float("nan")], rng=0)


class _Recorder(dp.Accountant):
    """A real Accountant (mechanisms accept nothing else) that records or refuses spends."""

    def __init__(self, *, refuse: bool = False) -> None:
        super().__init__(dp.ApproxDP(100.0, 0.5), relation="bounded")  # takes both kinds
        self.spends: list[tuple[Any, str]] = []
        self.relations: list[str] = []
        self.refuse = refuse

    def spend(
        self, cost: Any, *, label: str, relation: str = "unbounded", events: Any = None
    ) -> Any:
        if self.refuse:
            raise BudgetExceededError("refused", requested=cost)
        self.spends.append((cost, label))
        self.relations.append(relation)
        return super().spend(cost, label=label, relation=relation, events=events)


class _CountingSource(dp.samplers.SeededSource):
    def __init__(self) -> None:
        super().__init__(0)
        self.drawn = 0

    def words(self, n: int) -> np.ndarray:
        self.drawn += n
        return super().words(n)


def _call(mech: Any, name: str, rng: Any, accountant: Any) -> Any:
    if FACTORIES[name][2] == "select":
        return mech.select(["a", "b"], [1.0, 2.0], rng=rng, accountant=accountant)
    value = 5 if FACTORIES[name][2] == "int" else 5.0
    return mech.release(value, rng=rng, accountant=accountant)


@pytest.mark.parametrize("name", NAMES)
def test_spends_before_noise(name: str) -> None:
    mech = make(name)
    rec = _Recorder()
    _call(mech, name, 0, rec)
    assert rec.spends == [(mech.privacy, rec.spends[0][1])]
    assert rec.relations == ["unbounded"]
    bounded = _Recorder()
    _call(make(name, relation="bounded"), name, 0, bounded)
    assert bounded.relations == ["bounded"]  # the mechanism passes its own relation
    source = _CountingSource()
    with pytest.raises(BudgetExceededError):
        _call(mech, name, source, _Recorder(refuse=True))
    assert source.drawn == 0  # refused before a single random word was drawn


def test_real_accountant_refuses_overspend() -> None:
    acct = dp.Accountant(dp.PureDP(1.0))
    lap = dp.Laplace(epsilon=0.6)
    lap.release(1.0, rng=0, accountant=acct)
    with pytest.raises(BudgetExceededError):
        lap.release(1.0, rng=0, accountant=acct)
