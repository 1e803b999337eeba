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
