"""The shared boundary checks (dpkit._validate) as every entry point applies them."""

from __future__ import annotations

import numpy as np
import pytest

import dpkit as dp
from dpkit import sensitivity as sens


def test_masked_arrays_are_refused_by_name() -> None:
    masked = np.ma.masked_array([1.0, 1e6, 3.0], mask=[0, 1, 0])
    for call in (
        lambda: dp.Laplace(1.0).release(masked, rng=0),
        lambda: dp.Geometric(1.0).release(np.ma.masked_array([1, 5], mask=[0, 1]), rng=0),
        lambda: sens.local("median", masked, relation="bounded", bounds=(0, 1e7)),
        lambda: dp.propose_test_release(
            masked, "median", 5.0, epsilon=1.0, delta=1e-6, bounds=(0, 1e7)
        ),
        lambda: dp.Exponential(1.0).select(["a", "b", "c"], masked),
    ):
        with pytest.raises(TypeError, match=r"masked array.*compressed"):
            call()
