"""The accounting descriptors: validation at construction, values, grouping of a ledger."""

from __future__ import annotations

import dataclasses
import math

import pytest

from dpkit import ParameterError
from dpkit.accounting import compose
from dpkit.accounting import events as ev
from dpkit.accounting.events import collect

GOOD = [
    ev.Laplace(scale=2.0),
    ev.Laplace(scale=3.0, sensitivity=2, discrete=True),
    ev.Gaussian(sigma=2.0, sensitivity=0.5),
    ev.Gaussian(sigma=4.0, discrete=True),
    ev.Exponential(epsilon=0.5),
    ev.SubsampledGaussian(sigma=1.1, rate=0.01),
    ev.SubsampledLaplace(scale=1.0, rate=0.5),
    ev.RandomizedResponse(epsilon=1.0, categories=3),
    ev.KeySelection(delta=1e-8),
    ev.Approx(epsilon=0.3, delta=1e-9),
    ev.Zcdp(rho=0.01),
]


@pytest.mark.parametrize("event", GOOD, ids=lambda e: type(e).__name__)
def test_events_are_frozen_hashable_values(event: ev.Event) -> None:
    assert event == dataclasses.replace(event)
    assert hash(event) == hash(dataclasses.replace(event))
    field = dataclasses.fields(event)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(event, field, 1.0)
    assert type(event).__name__ in repr(event)


def test_numbers_are_normalised_so_equal_releases_group() -> None:
    assert ev.Laplace(scale=2) == ev.Laplace(scale=2.0, sensitivity=1.0)
    assert ev.Laplace(scale=2).scale == 2.0 and isinstance(ev.Laplace(scale=2).scale, float)
    assert ev.Laplace(scale=2.0) != ev.Laplace(scale=2.0, discrete=True)


def test_derived_parameters() -> None:
    assert ev.Laplace(scale=4.0, sensitivity=2.0).epsilon == 0.5
    assert ev.Gaussian(sigma=4.0, sensitivity=2.0).mu == 0.5
    sub = ev.SubsampledLaplace(scale=1.0, rate=0.1)
    assert sub.epsilon == pytest.approx(math.log1p(0.1 * math.expm1(1.0)), rel=1e-15)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: ev.Laplace(scale=0.0), "Laplace: `scale` must be a finite number > 0; got 0.0"),
        (lambda: ev.Laplace(scale=-1), "`scale` must be a finite number > 0"),
        (lambda: ev.Laplace(scale=math.nan), "`scale`"),
        (lambda: ev.Laplace(scale=1.0, sensitivity=math.inf), "`sensitivity`"),
        (lambda: ev.Laplace(scale=1.0, sensitivity=1.5, discrete=True), "whole number"),
        (lambda: ev.Laplace(scale=1e-300, sensitivity=1e300), "overflows"),
        (lambda: ev.Gaussian(sigma=0), "Gaussian: `sigma`"),
        (lambda: ev.Gaussian(sigma=1.0, sensitivity=0.5, discrete=True), "whole number"),
        (lambda: ev.Exponential(epsilon=0.0), "Exponential: `epsilon`"),
        (lambda: ev.SubsampledGaussian(sigma=1.0, rate=0.0), "`rate` must be a number in (0, 1]"),
        (lambda: ev.SubsampledGaussian(sigma=1.0, rate=1.5), "`rate`"),
        (lambda: ev.SubsampledLaplace(scale=1.0, rate=-0.1), "SubsampledLaplace: `rate`"),
        (lambda: ev.RandomizedResponse(epsilon=1.0, categories=1), "`categories`"),
        (lambda: ev.KeySelection(delta=0.0), "KeySelection: `delta`"),
        (lambda: ev.KeySelection(delta=1.0), "`delta`"),
        (lambda: ev.Approx(epsilon=-1.0), "Approx: `epsilon`"),
        (lambda: ev.Approx(epsilon=1.0, delta=1.0), "`delta`"),
        (lambda: ev.Zcdp(rho=-0.1), "Zcdp: `rho`"),
    ],
)
def test_bad_values_are_refused_by_name(make: object, message: str) -> None:
    with pytest.raises(ParameterError) as info:
        make()  # type: ignore[operator]
    assert message in str(info.value)


@pytest.mark.parametrize(
    "make",
    [
        lambda: ev.Laplace(scale="1"),
        lambda: ev.Laplace(scale=True),
        lambda: ev.Laplace(scale=1.0, discrete=1),
        lambda: ev.Gaussian(sigma=None),
        lambda: ev.RandomizedResponse(epsilon=1.0, categories=2.0),
        lambda: ev.Zcdp(rho=[0.1]),
    ],
)
def test_bad_types_are_type_errors(make: object) -> None:
    with pytest.raises(TypeError):
        make()  # type: ignore[operator]


class _Mechanism:
    """Stands for a mechanism object that describes itself."""

    event = ev.Laplace(scale=5.0)


def test_collect_groups_equal_events_and_counts() -> None:
    lap = ev.Laplace(scale=5.0)
    items = collect("f", [lap, (lap, 3), _Mechanism(), (_Mechanism(), 2), (ev.Zcdp(0.1), 0)])
    assert items == ((lap, 7),)


@pytest.mark.parametrize(
    ("events", "error"),
    [
        (ev.Laplace(scale=1.0), TypeError),
        (_Mechanism(), TypeError),
        ("Laplace", TypeError),
        (42, TypeError),
        ([1.0], TypeError),
        ([(ev.Laplace(scale=1.0), 1, 2)], TypeError),
        ([(ev.Laplace(scale=1.0), 1.5)], TypeError),
        ([(ev.Laplace(scale=1.0), -1)], ParameterError),
    ],
)
def test_collect_refuses_what_is_not_a_ledger(events: object, error: type) -> None:
    with pytest.raises(error) as info:
        compose(events, delta=1e-5)  # type: ignore[arg-type]
    assert "compose: `events" in str(info.value)
