"""Hostile input to the array-level statistics: refused before the spend with a message that
quotes no private value, or released validly (finite bounds, ordered intervals)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import dpkit
import dpkit as dp
from dpkit.errors import ParameterError
from dpkit.statistics import (
    bounds_from_counts,
    bucket_edges,
    contribution_bound,
    contribution_bound_from_counts,
    log2_buckets,
    mean,
    median,
    private_bounds,
    quantile,
    quantile_samples,
    quantiles,
    quantiles_from_counts,
    tail_bounds_from_counts,
    tail_steps,
    var,
)

MAX = sys.float_info.max
X = np.linspace(1.0, 99.0, 501)


def _refused(call: Callable[[Any], object], exc: type, match: str) -> str:
    """``call(accountant)`` raises ``exc`` matching ``match`` with nothing spent; the message."""
    acct = dpkit.Accountant(dpkit.PureDP(10.0))
    with pytest.raises(exc, match=match) as info:
        call(acct)
    assert len(acct.history) == 0 and acct.spent == dpkit.PureDP(0.0)
    return str(info.value)


# ------------------------------------------------------------- D05: no private value quoted


@pytest.mark.parametrize(
    ("call", "match", "secrets"),
    [
        (
            lambda a: quantiles_from_counts(
                [1.0, 2.0], [123456.789, 3.0], 0.5, epsilon=1.0, bounds=(0, 10), accountant=a
            ),
            "whole numbers",
            ["123456", "1.23456789e+05", "3."],
        ),
        (
            lambda a: quantiles_from_counts(
                [1.0, 2.0], [-987654, 3], 0.5, epsilon=1.0, bounds=(0, 10), accountant=a
            ),
            ">= 0",
            ["987654"],
        ),
        (
            lambda a: quantiles_from_counts(
                [1.0, 2.0], [2**40 + 4242, 3], 0.5, epsilon=1.0, bounds=(0, 10), accountant=a
            ),
            "2\\*\\*40 records",
            ["1099511632", "4242"],
        ),
        (
            lambda a: contribution_bound(np.array([-987654, 3, 4]), epsilon=1.0, accountant=a),
            ">= 1",
            ["987654"],
        ),
        (
            lambda a: contribution_bound(np.array([0, 3, 4]), epsilon=1.0, accountant=a),
            ">= 1",
            ["got 0", "; got"],
        ),
        (
            lambda a: contribution_bound_from_counts([1, 2], [-4242, 3], epsilon=1.0, accountant=a),
            ">= 0",
            ["4242"],
        ),
        (
            lambda a: contribution_bound_from_counts(
                [1, 2], [2**40 + 4242, 3], epsilon=1.0, accountant=a
            ),
            "2\\*\\*40 persons",
            ["1099511632", "4242"],
        ),
        (
            lambda a: contribution_bound_from_counts(
                [-31337, 2], [1, 3], epsilon=1.0, method="threshold", accountant=a
            ),
            ">= 1",
            ["31337"],
        ),
        (
            lambda a: bounds_from_counts([1076, 1077], [-31337, 3], epsilon=1.0, accountant=a),
            ">= 0",
            ["31337"],
        ),
    ],
)
def test_count_errors_quote_no_private_value(call, match: str, secrets: list[str]) -> None:  # type: ignore[no-untyped-def]
    """Counts and row counts are private data: an error about them says what is wrong
    without quoting them (nor their total), before anything is spent."""
    msg = _refused(call, dpkit.ParameterError, match)
    for secret in secrets:
        assert secret not in msg, msg


# ---------------------------------------------------- D03: the mean's interval is ordered


def test_mean_interval_is_ordered_and_holds_the_value() -> None:
    """With one record and a huge epsilon the noise interval can lie wholly outside the
    chosen bounds: both ends are clamped into them, so low <= value <= high always (these
    seeds gave (0.0, -0.0002) before)."""
    for data, seed in (([-0.0], 279570272), ([0.0], 70)):
        rel = mean(np.array(data), epsilon=10000.0, rng=seed)
        lo, hi = rel.interval
        assert lo <= rel.value <= hi, (rel.value, rel.interval)
    for seed in range(300):
        rel = mean(np.array([0.0, 1.0]), epsilon=5000.0, rng=seed)
        lo, hi = rel.interval
        b_lo, b_hi = rel.details["bounds"]
        assert b_lo <= lo <= rel.value <= hi <= b_hi, (seed, rel.value, rel.interval)


# -------------------------------------------------------- D02: bounds at the top of floats


def test_bounds_above_a_huge_lower_stay_finite() -> None:
    """A public lower bound near the largest double gives a finite upper bound above it;
    the largest double itself (no finite bound above it) is refused before the spend."""
    for rel in (
        private_bounds(X, epsilon=1.0, lower=1e308, rng=1),
        private_bounds(X, epsilon=1.0, method="tail", lower=1e308, rng=1),
        bounds_from_counts([1076], [50], epsilon=1.0, lower=1e308, rng=1),
        tail_bounds_from_counts([1, 2], [10, 10], epsilon=1.0, lower=1e308, rng=1),
    ):
        lo, hi = rel.bounds
        assert lo == 1e308 and lo < hi <= MAX, rel.bounds
    for call in (
        lambda a: private_bounds(X, epsilon=1.0, lower=MAX, accountant=a),
        lambda a: private_bounds(X, epsilon=1.0, method="tail", lower=MAX, accountant=a),
        lambda a: bounds_from_counts([1076], [50], epsilon=1.0, lower=MAX, accountant=a),
        lambda a: tail_bounds_from_counts([1, 2], [10, 10], epsilon=1.0, lower=MAX, accountant=a),
    ):
        _refused(call, dpkit.ParameterError, "`lower` must be below the largest float")


def test_moments_never_fall_below_a_huge_lower() -> None:
    """The chosen bounds of a mean are kept within 2**1020; a `lower` too close to that cap
    for bounds starting at it is refused before the spend (it was moved below `lower`);
    just under it, the release starts at `lower`."""
    for low in (1e308, MAX, 2.0**1020):
        _refused(
            lambda a, low=low: mean(X, epsilon=1.0, lower=low, accountant=a),
            dpkit.ParameterError,
            "`lower`",
        )
    _refused(
        lambda a: var(X, epsilon=1.0, lower=2.0**500, accountant=a),
        dpkit.ParameterError,
        "`lower`",
    )
    for fn, low in ((mean, 2.0**1020 * (1 - 2.0**-30)), (var, 2.0**500 * (1 - 2.0**-30))):
        for method in ("histogram", "tail"):
            rel = fn(X, epsilon=1.0, lower=low, bounds_method=method, rng=1)
            lo, hi = rel.details["bounds"]
            assert lo == low < hi, (fn, method, rel.details["bounds"])
            if fn is mean:
                assert rel.value >= low and rel.interval[0] >= low


# ------------------------------------------------------- D06: counts that do not fit int64


@pytest.mark.parametrize(
    "call",
    [
        lambda a: bounds_from_counts(
            [1076], np.array([2**64 - 1], dtype=np.uint64), epsilon=1.0, accountant=a
        ),
        lambda a: bounds_from_counts([1076, 1077], [2**62, 2**62], epsilon=1.0, accountant=a),
        lambda a: tail_bounds_from_counts(
            [1, 2], [2**62, 2**62], epsilon=1.0, lower=0.0, accountant=a
        ),
        lambda a: tail_bounds_from_counts(
            [1], np.array([2**63], dtype=np.uint64), epsilon=1.0, accountant=a
        ),
        lambda a: quantiles_from_counts(
            [1.0, 2.0],
            np.array([2**63, 1], dtype=np.uint64),
            0.5,
            epsilon=1.0,
            bounds=(0, 10),
            accountant=a,
        ),
        lambda a: contribution_bound_from_counts(
            [1, 2], np.array([2**64 - 1, 1], dtype=np.uint64), epsilon=1.0, accountant=a
        ),
        lambda a: contribution_bound(
            np.array([2**64 - 1, 1], dtype=np.uint64), epsilon=1.0, accountant=a
        ),
    ],
)
def test_counts_beyond_int64_are_refused_before_the_spend(call) -> None:  # type: ignore[no-untyped-def]
    """A uint64 count past 2**63 wrapped to a negative one, a total past 2**63 wrapped
    the noisy total: refused (and not quoted, wrapped or not)."""
    msg = _refused(call, dpkit.ParameterError, "2\\*\\*(40|63|53)")
    assert "-92233" not in msg and "18446744" not in msg and "-1" not in msg, msg


# --------------------------------------------------------- D07: time deltas are not integers


@pytest.mark.parametrize(
    "call",
    [
        lambda a: contribution_bound(
            np.array([1, 2, 3], dtype="timedelta64[s]"), epsilon=1.0, accountant=a
        ),
        lambda a: contribution_bound(
            np.arange(1, 100), epsilon=1.0, max_bound=np.timedelta64(5), accountant=a
        ),
        lambda a: contribution_bound_from_counts(
            np.array([1, 2], dtype="timedelta64[s]"), [3, 4], epsilon=1.0, accountant=a
        ),
        lambda a: contribution_bound_from_counts(
            [1, 2], np.array([3, 4], dtype="timedelta64[s]"), epsilon=1.0, accountant=a
        ),
        lambda a: bounds_from_counts(
            np.array([1076], dtype="timedelta64[s]"), [10], epsilon=1.0, accountant=a
        ),
        lambda a: bounds_from_counts(
            [1076], np.array([10], dtype="timedelta64[s]"), epsilon=1.0, accountant=a
        ),
        lambda a: tail_bounds_from_counts(
            np.array([5], dtype="timedelta64[s]"), [10], epsilon=1.0, accountant=a
        ),
        lambda a: quantiles_from_counts(
            [1.0],
            np.array([3], dtype="timedelta64[s]"),
            0.5,
            epsilon=1.0,
            bounds=(0, 10),
            accountant=a,
        ),
    ],
)
def test_time_deltas_are_not_integers(call) -> None:  # type: ignore[no-untyped-def]
    _refused(call, TypeError, "int|integers")


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (
            lambda a: quantiles(
                X, [0.5], epsilon=1.0, bounds=(0, 100), support=np.timedelta64(1, "D"), accountant=a
            ),
            "support",
        ),
        (
            lambda a: quantile_samples(
                X, 0.5, epsilon=1.0, bounds=(0, 100), size=np.timedelta64(3, "s")
            ),
            "size",
        ),
        (lambda a: contribution_bound([1.0, [2.0]], epsilon=1.0, accountant=a), "rows_per_unit"),
        (
            lambda a: contribution_bound_from_counts([1, [2]], [3, 4], epsilon=1.0, accountant=a),
            "rows",
        ),
    ],
)
def test_time_deltas_and_ragged_rows_are_type_errors_naming_the_parameter(call, name: str) -> None:  # type: ignore[no-untyped-def]
    """A time delta is no resolution or size, and a ragged list is no array of row counts:
    TypeErrors naming the parameter (not NumPy's inhomogeneous-shape ValueError, not a
    float() message), with nothing spent."""
    assert f"`{name}" in _refused(call, TypeError, "must be")


@pytest.mark.parametrize(
    ("bounds", "epsilon"), [((-1e308, -1e307), 1.0), ((0, 1e308), 1.0), ((0, 1e303), 1e-5)]
)
def test_a_sum_whose_interval_is_infinite_for_every_table_is_refused(
    bounds: tuple[float, float], epsilon: float
) -> None:
    """The noise interval alone beyond the float range would put +-inf in every release,
    whatever the data: refused before the spend (the Session's dp.sum applies the same
    rule). Just inside it, the sum releases with finite interval ends."""
    from dpkit.statistics import sum as dp_sum

    msg = _refused(
        lambda a: dp_sum(np.arange(100.0), epsilon=epsilon, bounds=bounds, accountant=a),
        dpkit.ParameterError,
        "beyond the float range",
    )
    assert "`bounds`" in msg and "`epsilon`" in msg
    rel = dp_sum(np.arange(100.0), epsilon=1.0, bounds=(0, 1e305), rng=1)
    assert all(np.isfinite(rel.interval))


# ------------------------------------------------------ D08: choices given as arrays


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (
            lambda a, m: private_bounds(X, epsilon=1.0, method=m, accountant=a),
            "method",
        ),
        (lambda a, m: mean(X, epsilon=1.0, bounds_method=m, accountant=a), "bounds_method"),
        (
            lambda a, m: contribution_bound_from_counts(
                [1, 2], [3, 4], epsilon=1.0, method=m, accountant=a
            ),
            "method",
        ),
        (
            lambda a, m: quantiles(X, [0.25, 0.75], epsilon=1.0, bounds=(0, 100), method=m),
            "method",
        ),
    ],
)
@pytest.mark.parametrize("value", [np.array(["tail", "histogram"]), np.array(["tail"])])
def test_choice_parameters_given_as_arrays_are_refused(call, name: str, value) -> None:  # type: ignore[no-untyped-def]
    """Never NumPy's ambiguous truth value, never a one-element array taken as its string."""
    _refused(lambda a: call(a, value), TypeError, f"`{name}` must be")


# ------------------------------------------- D12: engine helpers refuse non-finite input


@pytest.mark.parametrize(
    ("call", "exc", "match"),
    [
        (lambda: log2_buckets([float("nan"), 1.0]), dpkit.ParameterError, "finite"),
        (lambda: log2_buckets([float("inf")]), dpkit.ParameterError, "finite"),
        (
            lambda: log2_buckets(np.array([float("nan"), None], dtype=object)),
            TypeError,
            "real numbers",
        ),
        (lambda: log2_buckets([True, False]), TypeError, "bool"),
        (lambda: log2_buckets("1,2,3"), TypeError, "numeric"),
        (lambda: tail_steps([float("nan"), 1.0]), dpkit.ParameterError, "finite"),
        (lambda: tail_steps([float("nan"), 1.0], lower=0.0), dpkit.ParameterError, "finite"),
        (lambda: tail_steps([5.0], lower=float("nan")), dpkit.ParameterError, "`lower`"),
        (lambda: tail_steps([5.0], lower="0"), TypeError, "`lower`"),
        (lambda: tail_steps([None]), TypeError, "real numbers"),
        (lambda: bucket_edges([10**6]), dpkit.ParameterError, "lie in"),
        (lambda: bucket_edges([float("nan")]), TypeError, "integers"),
        (lambda: bucket_edges([True]), TypeError, "integers"),
    ],
)
def test_engine_helpers_refuse_non_finite_and_non_numeric(call, exc: type, match: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(exc, match=match):
        call()


def test_engine_helpers_keep_their_maps() -> None:
    x = np.array([0.0, 1.0, 3.0, -0.75])
    assert log2_buckets(x).tolist() == [0, 1076, 1077, -1075]
    assert log2_buckets([]).tolist() == []
    assert tail_steps(x, 0).tolist() == tail_steps(x, 0.0).tolist()
    lo, hi = bucket_edges(np.array([0, 2099, -2099], dtype=np.int32))
    assert lo.tolist() == [0.0, 2.0**1023, -MAX] and hi.tolist() == [0.0, MAX, -(2.0**1023)]


# ---------------------------------------------------- D13: data must be a 1-D array


@pytest.mark.parametrize(
    "call",
    [
        lambda a: median(42.0, epsilon=1.0, bounds=(0.0, 100.0), accountant=a),
        lambda a: mean(np.array(42.0), epsilon=1.0, bounds=(0.0, 100.0), accountant=a),
        lambda a: var(np.ones((3, 2)), epsilon=1.0, accountant=a),
        lambda a: contribution_bound(7, epsilon=1.0, accountant=a),
        lambda a: contribution_bound(np.ones((3, 2), dtype=int), epsilon=1.0, accountant=a),
        lambda a: contribution_bound_from_counts([[1, 2]], [[3, 4]], epsilon=1.0, accountant=a),
        lambda a: quantiles(
            np.arange(40.0).reshape(20, 2), [0.5], epsilon=1.0, bounds=(0.0, 100.0), accountant=a
        ),
        lambda a: private_bounds([[[1.0]], [[2.0]]], epsilon=1.0, accountant=a),
        lambda a: quantile_samples(np.ones((4, 2)), 0.5, epsilon=1.0, bounds=(0.0, 2.0), size=2),
    ],
)
def test_non_1d_data_is_refused_like_the_frameworks(call) -> None:  # type: ignore[no-untyped-def]
    _refused(call, dpkit.ParameterError, "must be a 1-D array")


# ---------------------------------------------- D14: pandas and polars Series are accepted


def test_polars_and_pandas_series_are_read_as_their_arrays() -> None:
    """Same release (same seed) as the NumPy array, including the integer support of an
    integer-typed Series; levels given as a Series work like an ndarray."""
    pl = pytest.importorskip("polars")
    pd = pytest.importorskip("pandas")
    kw: dict[str, Any] = {"epsilon": 1.0, "bounds": (0.0, 100.0), "rng": 3}
    floats = np.repeat([1.5, 2.5, 3.5, 40.25], 50)
    ints = np.repeat([1, 2, 3, 40], 50)
    for arr in (floats, ints):
        want = median(arr, **kw)
        for series in (pl.Series(arr), pd.Series(arr)):
            got = median(series, **kw)
            assert got.values.tolist() == want.values.tolist() and got.support == want.support
            assert (
                quantile(series, 0.9, **kw).values.tolist()
                == quantile(arr, 0.9, **kw).values.tolist()
            )
            q = quantile_samples(series, 0.5, epsilon=1.0, bounds=(0.0, 100.0), size=3, rng=1)
            assert (
                q.tolist()
                == quantile_samples(
                    arr, 0.5, epsilon=1.0, bounds=(0.0, 100.0), size=3, rng=1
                ).tolist()
            )
    assert median(pl.Series(ints), **kw).support == 1.0  # an integer type: resolution 1
    want = quantiles(floats, [0.25, 0.75], **kw)
    for levels in (pd.Series([0.25, 0.75]), pl.Series([0.25, 0.75])):
        got = quantiles(floats, levels, **kw)
        assert got.levels == (0.25, 0.75) and got.values.tolist() == want.values.tolist()
    with pytest.raises(TypeError, match="one level"):
        quantile(floats, pd.Series([0.5]), **kw)


# ------------------------------------------------------------ D15: the messages' real cause


def test_levels_that_round_together_name_the_rounding() -> None:
    msg = _refused(
        lambda a: quantiles(X, [0.5, 0.5 + 1e-7], epsilon=1.0, bounds=(0.0, 100.0), accountant=a),
        dpkit.ParameterError,
        "denominator at most 2\\*\\*20",
    )
    assert "2**-40" not in msg


@pytest.mark.parametrize("method", ["quantile", "threshold"])
def test_unsorted_rows_are_refused_by_both_methods(method: str) -> None:
    for rows in ([3, 1, 2], [1, 1, 2]):
        msg = _refused(
            lambda a, rows=rows: contribution_bound_from_counts(
                rows, [1, 2, 3], epsilon=1.0, method=method, accountant=a
            ),
            dpkit.ParameterError,
            "`rows` must be sorted and distinct",
        )
        assert msg.startswith("contribution_bound_from_counts:"), msg


# ---------------------------------------------- D10: extreme valid parameters


def test_cdf_quantiles_at_the_largest_epsilon_release() -> None:
    rel = quantiles(
        np.arange(100), [0.25, 0.75], epsilon=MAX, bounds=(0.0, 100.0), method="cdf", rng=1
    )
    iv = rel.value_intervals
    assert iv is not None and np.all(np.isfinite(iv)) and np.all(iv[:, 0] <= iv[:, 1])
    assert np.all((iv[:, 0] <= rel.values) & (rel.values <= iv[:, 1]))


@pytest.mark.parametrize(
    "call",
    [
        lambda a: quantiles(
            X, [0.25, 0.75], epsilon=1.0, bounds=(0.0, 100.0), alpha=5e-324, accountant=a
        ),
        lambda a: median(X, epsilon=1.0, bounds=(0.0, 100.0), alpha=1e-300, accountant=a),
        lambda a: mean(X, epsilon=1.0, bounds=(0.0, 100.0), alpha=5e-324, accountant=a),
        lambda a: var(X, epsilon=1.0, alpha=1e-300, accountant=a),
    ],
)
def test_an_alpha_that_underflows_is_refused_before_the_spend(call) -> None:  # type: ignore[no-untyped-def]
    _refused(call, dpkit.ParameterError, "`alpha` must be at least")


def test_tiny_alpha_and_beta_still_release() -> None:
    rel = quantiles(X, [0.25, 0.75], epsilon=1.0, bounds=(0.0, 100.0), alpha=1e-250, rng=1)
    assert rel.value_intervals is not None and np.all(np.isfinite(rel.value_intervals))
    for beta in (5e-324, 1e-310):
        b = private_bounds(X, epsilon=1.0, beta=beta, rng=1)
        assert all(np.isfinite(b.bounds)) and b.bounds[0] < b.bounds[1]
    # the threshold still keeps 4199 * P[Z >= T] <= beta (scale 1: P[Z >= T] = a**T / (1 + a))
    from dpkit.statistics.bounds import _threshold

    t = _threshold(__import__("fractions").Fraction(1), 4199, 5e-324)
    assert 4199 * np.exp(-t) / (1 + np.exp(-1)) <= 5e-324 and t < 800


@pytest.mark.parametrize("cap", [2**31, 10**18, 10**400], ids=["2**31", "10**18", "10**400"])
@pytest.mark.parametrize(
    ("method", "limit"),
    [("quantile", "2\\*\\*31 - 1"), ("threshold", "2\\*\\*20")],
)
def test_a_contribution_cap_without_a_lattice_is_refused_by_its_own_name(
    cap: int, method: str, limit: str
) -> None:
    for call, owner in (
        (
            lambda a: contribution_bound(
                np.arange(1, 100), epsilon=1.0, max_bound=cap, accountant=a, method=method
            ),
            "contribution_bound:",
        ),
        (
            lambda a: contribution_bound_from_counts(
                [1, 2], [3, 4], epsilon=1.0, max_bound=cap, accountant=a, method=method
            ),
            "contribution_bound_from_counts:",
        ),
    ):
        msg = _refused(call, dpkit.ParameterError, f"`max_bound` must be at most {limit}")
        assert msg.startswith(owner), msg
        assert len(msg) < 400, msg  # a huge cap is described, not printed in full
    rel = contribution_bound(
        np.arange(1, 100), epsilon=1.0, max_bound=2**31 - 1, rng=1, method="quantile"
    )
    assert rel.bound >= 1


@pytest.mark.parametrize(
    "make_and_call",
    [
        lambda a: dp.statistics.mean([1.0, 2.0, 3.0], epsilon=1e-6, bounds=(0, 100), accountant=a),
        lambda a: dp.statistics.quantiles(
            [1.0, 2.0, 3.0], 0.5, epsilon=1e-16, bounds=(0, 100), accountant=a
        ),
    ],
)
def test_a_refused_statistics_parameter_spends_nothing(
    make_and_call: Any, refused_or_released_once: Any
) -> None:
    # a parameter the sampler or the lattice cannot take is refused before the accountant is
    # charged; a supported one (DiscreteGaussian at epsilon 10) releases finite values, once
    refused_or_released_once(make_and_call)


@pytest.mark.parametrize("epsilon", [1e-10, 1e-5, 1e6, 1e20])
@pytest.mark.parametrize("which", ["quantiles", "mean", "var"])
def test_statistics_release_or_refuse_at_extreme_epsilon(which: str, epsilon: float) -> None:
    # at a tiny epsilon a noise scale past the sampler's range is refused before the spend;
    # at a huge one the intervals' logarithms and Chernoff bounds stay finite (no log(0),
    # no log1p(-1)): a finite release, charged once
    acct = dp.Accountant(dp.PureDP(1e30))
    x = [1.0, 2.0, 3.0, 10.0, 11.0]
    fn = getattr(dp.statistics, which)
    args = (x, [0.25, 0.5, 0.75]) if which == "quantiles" else (x,)
    try:
        rel = fn(*args, epsilon=epsilon, bounds=(0, 100), rng=1, accountant=acct)
    except ParameterError as exc:
        assert "`epsilon`" in str(exc)
        assert acct.history == ()
    else:
        vals = np.atleast_1d(np.asarray(rel.values if which == "quantiles" else rel.value))
        assert np.all(np.isfinite(vals)) and np.all((vals >= 0) & (vals <= 100**2))
        assert len(acct.history) == 1
