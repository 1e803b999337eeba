"""The `accountant=` keyword: an Accountant (or None) is charged; anything else is refused."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import dpkit as dp


@pytest.mark.parametrize(
    "bad", [7, "acct", 1e-300, dp.PureDP(1.0), object(), np.array([True, False])]
)
def test_accountant_must_be_an_accountant(bad: Any) -> None:
    calls = (
        lambda: dp.Laplace(1.0).release(3.0, accountant=bad),
        lambda: dp.Geometric(1.0).release(3, accountant=bad),
        lambda: dp.Exponential(1.0).select(["a", "b"], [1.0, 2.0], accountant=bad),
        lambda: dp.inverse_sensitivity([1.0, 2.0], epsilon=1.0, bounds=(0, 10), accountant=bad),
        lambda: dp.sample_and_aggregate(
            [1.0, 2.0, 3.0], "mean", chunks=3, output_bounds=(0, 10), epsilon=1.0, accountant=bad
        ),
    )
    for call in calls:
        with pytest.raises(TypeError, match=r"`accountant` must be a dpkit\.Accountant"):
            call()


def test_event_builders_round_towards_more_loss() -> None:
    import sys
    from fractions import Fraction

    from dpkit.accounting import events as ev
    from dpkit.accounting.guard import approx_event, exponential_event, laplace_event

    # 10/3 is not a float: the scale is rounded down, epsilons up, never the other way
    lap = laplace_event(Fraction(10, 3), 1)
    assert isinstance(lap, ev.Laplace) and lap.discrete
    assert Fraction(lap.scale) <= Fraction(10, 3) < Fraction(lap.scale) + Fraction(1, 2**50)
    assert Fraction(exponential_event(Fraction(1, 3)).epsilon) >= Fraction(1, 3)
    assert Fraction(approx_event(Fraction(1, 3)).epsilon) >= Fraction(1, 3)
    cont = laplace_event(Fraction(10, 3), Fraction(1, 3), discrete=False)
    assert isinstance(cont, ev.Laplace) and Fraction(cont.sensitivity) >= Fraction(1, 3)
    # an epsilon near the largest float: the rounded-down scale would overflow the
    # Laplace event's epsilon, so the stage states its epsilon alone
    top = sys.float_info.max
    assert laplace_event(1 / Fraction(top), 1) == ev.Approx(epsilon=top)
