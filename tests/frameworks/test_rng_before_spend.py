"""A bad ``rng`` is refused before any of the frameworks charges its accountant."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import dpkit as dp

X = np.linspace(0, 100, 200)
DELTA = 1 / X.size**2

RELEASES: dict[str, tuple[str, Callable[[Any, Any], Any]]] = {
    "propose_test_release": (
        "unbounded",
        lambda a, rng: dp.propose_test_release(
            X, "mean", 0.5, epsilon=1.0, delta=DELTA, bounds=(0, 100), rng=rng, accountant=a
        ),
    ),
    "smooth_sensitivity_release": (
        "unbounded",
        lambda a, rng: dp.smooth_sensitivity_release(
            X, "mean", epsilon=1.0, delta=DELTA, bounds=(0, 100), rng=rng, accountant=a
        ),
    ),
    "sample_and_aggregate": (
        "bounded",
        lambda a, rng: dp.sample_and_aggregate(
            X, np.mean, chunks=10, output_bounds=(0, 100), epsilon=1.0, rng=rng, accountant=a
        ),
    ),
    "inverse_sensitivity median": (
        "unbounded",
        lambda a, rng: dp.inverse_sensitivity(
            X, "median", epsilon=1.0, bounds=(0, 100), rng=rng, accountant=a
        ),
    ),
    "inverse_sensitivity mean": (
        "bounded",
        lambda a, rng: dp.inverse_sensitivity(
            X, "mean", epsilon=1.0, bounds=(0, 100), relation="bounded", rng=rng, accountant=a
        ),
    ),
}


@pytest.mark.parametrize("name", sorted(RELEASES))
def test_a_bad_rng_is_refused_before_the_spend(name: str, bad_rng: Any) -> None:
    relation, release = RELEASES[name]
    rng, error, match = bad_rng
    acct = dp.Accountant(dp.ApproxDP(100, 0.5), relation=relation)
    with pytest.raises(error, match=match):
        release(acct, rng)
    assert len(acct.history) == 0
    release(acct, 3)  # a good seed still releases, and is charged once
    assert len(acct.history) == 1
