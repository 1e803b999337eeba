"""Automatic contribution bound: a DP quantile of rows per person."""

from __future__ import annotations

import numpy as np
import pytest

import dpkit
from dpkit.statistics import contribution_bound, contribution_bound_from_counts


def test_bound_is_near_the_quantile_of_rows_per_person() -> None:
    rng = np.random.default_rng(0)
    rows = rng.geometric(0.2, 20_000)  # 1, 2, ... rows per person
    truth = int(np.quantile(rows, 0.9, method="inverted_cdf"))
    got = [contribution_bound(rows, epsilon=0.5, level=0.9, rng=s).bound for s in range(20)]
    assert np.median(got) == truth
    assert all(abs(g - truth) <= 1 for g in got)


def test_counts_form_equals_array_form_and_spends_once() -> None:
    rows = np.repeat([1, 2, 5, 40], [100, 60, 30, 10])
    acct = dpkit.Accountant(dpkit.PureDP(1.0))
    a = contribution_bound(rows, epsilon=1.0, rng=7, accountant=acct)
    b = contribution_bound_from_counts([1, 2, 5, 40], [100, 60, 30, 10], epsilon=1.0, rng=7)
    assert a == b and a.relation == "unbounded" and a.privacy == dpkit.PureDP(1.0)
    assert acct.spent == dpkit.PureDP(1.0)
    assert 1 <= a.bound <= 1000


def test_the_cap_bounds_the_answer() -> None:
    rows = np.full(1000, 5000)
    assert contribution_bound(rows, epsilon=1.0, max_bound=100, rng=0).bound <= 100


@pytest.mark.parametrize(
    ("call", "exc", "match"),
    [
        (lambda: contribution_bound([], epsilon=1.0), dpkit.ParameterError, "empty"),
        (lambda: contribution_bound([0, 1], epsilon=1.0), dpkit.ParameterError, ">= 1"),
        (lambda: contribution_bound([1.5], epsilon=1.0), dpkit.ParameterError, "whole"),
        (lambda: contribution_bound([True], epsilon=1.0), TypeError, "integers"),
        (lambda: contribution_bound([1], epsilon=0), dpkit.ParameterError, "epsilon"),
        (lambda: contribution_bound([1], epsilon=1, level=1), dpkit.ParameterError, "level"),
        (lambda: contribution_bound([1], epsilon=1, max_bound=0), dpkit.ParameterError, "max"),
        (lambda: contribution_bound([1], epsilon=1, max_bound=2.5), TypeError, "max_bound"),
        (
            lambda: contribution_bound_from_counts([1, 2], [3], epsilon=1.0),
            dpkit.ParameterError,
            "same length",
        ),
    ],
)
def test_errors(call, exc, match) -> None:
    with pytest.raises(exc, match=match):
        call()
