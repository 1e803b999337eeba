"""The frameworks state what they are to the accountant, and never claim less than it.

Each framework runs once with an Accountant; its spend's events must exist, compose to no
more than the charged epsilon (at delta 0 for pure releases; at twice the charged delta for
``(epsilon, delta)`` ones) and no less (the events' epsilons add up to the charge), and a
Laplace event must carry the scale of the noise drawn (the release's ``scale``).

Tolerances: events round a scale down and an epsilon up to floats, a few ulps; ``1e-9`` on
epsilons of order 1 and a relative ``1e-12`` on the scale reject a scale 10% off.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from dpkit.accounting import Accountant, ApproxDP, PureDP, compose
from dpkit.accounting import events as ev
from dpkit.frameworks import (
    propose_test_release,
    sample_and_aggregate,
    smooth_sensitivity_release,
)

AGES = np.arange(20.0, 70.0).repeat(100)
TOL = 1e-9


def _spent(acct: Accountant) -> tuple[Any, tuple[ev.Event, ...]]:
    (row,) = acct.history
    assert row.events, f"{row.label}: the spend states no events"
    return row.cost, row.events


def test_sample_and_aggregate_mean_states_the_laplace_noise_it_draws() -> None:
    acct = Accountant(PureDP(10.0), relation="bounded")
    rel = sample_and_aggregate(
        AGES, np.mean, chunks=60, output_bounds=(20, 80), epsilon=1.0, rng=0, accountant=acct
    )
    cost, events = _spent(acct)
    (lap,) = events
    assert isinstance(lap, ev.Laplace) and not lap.discrete
    # continuous Laplace of the release's scale, rounded to the grid (post-processing)
    assert lap.scale == pytest.approx(rel.scale, rel=1e-12)
    assert lap.scale <= rel.scale
    assert lap.epsilon == pytest.approx(cost.epsilon, abs=TOL)
    assert compose(events, delta=1e-9).epsilon <= cost.epsilon + TOL


def test_sample_and_aggregate_median_states_an_exponential_mechanism() -> None:
    acct = Accountant(PureDP(10.0), relation="bounded")
    sample_and_aggregate(
        AGES,
        np.mean,
        chunks=60,
        output_bounds=(20, 80),
        epsilon=1.0,
        aggregator="median",
        rng=0,
        accountant=acct,
    )
    cost, events = _spent(acct)
    assert events == (ev.Exponential(epsilon=cost.epsilon),)


@pytest.mark.parametrize(
    ("run", "delta"),
    [
        (
            lambda a: propose_test_release(
                AGES, "mean", 0.05, epsilon=2.0, delta=1e-6, bounds=(0, 100), rng=0, accountant=a
            ),
            1e-6,
        ),
        (
            lambda a: smooth_sensitivity_release(
                AGES, "mean", epsilon=1.0, delta=1e-6, bounds=(0, 100), rng=0, accountant=a
            ),
            1e-6,
        ),
        (
            lambda a: smooth_sensitivity_release(
                AGES, "mean", epsilon=1.0, bounds=(0, 100), noise="cauchy", rng=0, accountant=a
            ),
            0.0,
        ),
    ],
    ids=["ptr", "smooth-laplace", "smooth-cauchy"],
)
def test_ptr_and_smooth_sensitivity_state_their_guarantee(run: Any, delta: float) -> None:
    # a noise calibrated to a data-dependent bound: no Laplace event of a known scale
    acct = Accountant(ApproxDP(10.0, 1e-3))
    run(acct)
    cost, events = _spent(acct)
    assert events == (ev.Approx(epsilon=cost.epsilon, delta=delta),)
    assert compose(events, delta=max(2 * delta, 1e-9)).epsilon <= cost.epsilon + TOL
