"""Smooth sensitivity: exact maximum over every k, smoothness, and the stopping rule."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpkit import ParameterError
from dpkit import sensitivity as sens

L, U = 0.0, 20.0


def _by_scan(query: str, x: list[float], beta: float, relation: str) -> tuple[float, int]:
    # Independent of the stopping rule: scan k until exp(-beta k) cap, a bound on every later
    # term since A <= U - L for these queries (A <= (U - L)**2 for the variance: every change
    # of a variance of values in [L, U] is at most its range's square), drops below the best.
    cap = (U - L) ** 2 if query == "var" else U - L
    best, best_k, k = -1.0, 0, 0
    while math.exp(-beta * k) * cap > best or k <= x.__len__() + 3:
        a = sens.local_at_distance(query, x, k, relation=relation, bounds=(L, U))
        val = math.exp(-beta * k) * a
        if val > best * (1 + 1e-12):
            best, best_k = val, k
        k += 1
    return best, best_k


@settings(max_examples=60, deadline=None)
@given(
    x=st.lists(st.integers(0, 20), min_size=1, max_size=7).map(lambda v: [float(i) for i in v]),
    beta=st.sampled_from([0.3, 0.7, 1.5]),
    relation=st.sampled_from(["bounded", "unbounded"]),
    query=st.sampled_from(["count", "sum", "mean", "median", "p10", "p90", "var", "std"]),
)
def test_equals_full_scan(x: list[float], beta: float, relation: str, query: str) -> None:
    got = sens.smooth(query, x, beta=beta, relation=relation, bounds=(L, U))
    best, best_k = _by_scan(query, x, beta, relation)
    assert got.sensitivity == pytest.approx(best, rel=1e-9, abs=1e-15)
    assert got.k == best_k
    assert got.beta == beta


@pytest.mark.parametrize("relation", ["bounded", "unbounded"])
@pytest.mark.parametrize("query", ["mean", "median", "var", "std"])
def test_smooth_upper_bound_on_local_and_beta_smooth(relation: str, query: str) -> None:
    # Definition 2.1 of NRS07: S(x) >= LS_1(x) and S(x) <= exp(beta) S(y) for neighbours.
    rng = np.random.default_rng(5)
    beta = 0.2
    for _ in range(30):
        x = rng.integers(0, 21, size=int(rng.integers(2, 15))).astype(float)
        y = x.copy()
        if relation == "bounded":
            y[rng.integers(y.size)] = rng.integers(0, 21)
        else:
            y = np.append(y, rng.integers(0, 21))
        sx = sens.smooth(query, x, beta=beta, relation=relation, bounds=(L, U)).sensitivity
        sy = sens.smooth(query, y, beta=beta, relation=relation, bounds=(L, U)).sensitivity
        assert sx >= sens.local(query, x, relation=relation, bounds=(L, U)) - 1e-12
        assert sx <= math.exp(beta) * sy * (1 + 1e-12)
        assert sy <= math.exp(beta) * sx * (1 + 1e-12)


def test_median_ties_need_large_k() -> None:
    # 201 equal values: LS_1 = 0 until k reaches about half the data; a fixed cut-off would
    # report 0 and the stopping rule must not.
    x = np.full(201, 5.0)
    got = sens.smooth("median", x, beta=0.05, relation="bounded", bounds=(L, U))
    assert got.k == 100
    assert got.sensitivity == pytest.approx(math.exp(-0.05 * 100) * 15.0)


def test_large_input_is_fast_enough_to_run() -> None:
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 100, size=200_000)
    got = sens.smooth("median", x, beta=0.05, relation="unbounded", bounds=(0, 100))
    assert 0 < got.sensitivity < 1


def test_bad_beta_and_query() -> None:
    with pytest.raises(ParameterError, match="smooth: `beta` must be a finite number > 0"):
        sens.smooth("median", [1.0], beta=0.0, relation="bounded", bounds=(0, 1))
    with pytest.raises(ParameterError, match="no exact algorithm for 'ptp'"):
        sens.smooth(np.ptp, [1.0], beta=1.0, relation="bounded", bounds=(0, 1))
    with pytest.raises(ParameterError, match="outside"):
        sens.smooth("median", [2.0], beta=1.0, relation="bounded", bounds=(0, 1))


def test_envelope_bounds_every_distance() -> None:
    # The stopping rule is only as sound as its envelope B(k) >= A(f, x, k).
    from dpkit.queries import resolve
    from dpkit.sensitivity import at_distance

    rng = np.random.default_rng(8)
    names = ("median", "p10", "p75", "p0", "p100", "mean", "sum", "count")
    for i in range(50):
        n = int(rng.integers(1, 15))
        x = np.sort(rng.integers(0, 11, n).astype(float))
        for rel in ("bounded", "unbounded"):
            for name in names + (("var", "std") if i % 3 == 0 else ()):
                q = resolve(name)
                env = at_distance.upper_envelope(q, x, rel, 0.0, 10.0, n + 3)
                seq = at_distance.sequence(q, x, rel, 0.0, 10.0)
                for k, a in zip(range(n + 4), seq, strict=False):
                    assert a <= env[k] + 1e-12


def test_long_ties_are_fast() -> None:
    # Adult-like ages: the middle value repeats ~900 times, so the maximum sits near
    # k = 800 (unbounded); the envelope lets the scan skip the distances that cannot matter.
    rng = np.random.default_rng(9)
    ages = rng.integers(17, 91, size=32_561).astype(float)
    got = sens.smooth("median", ages, beta=0.1, relation="unbounded", bounds=(0, 100))
    assert got.k > 100
    assert got.sensitivity == pytest.approx(
        math.exp(-0.1 * got.k)
        * sens.local_at_distance("median", ages, got.k, relation="unbounded", bounds=(0, 100))
    )


@pytest.mark.parametrize("relation", ["bounded", "unbounded"])
def test_moments_over_bounds_near_the_float_limit_are_finite_or_refused(relation: str) -> None:
    """Bounds near 1e308: the deviation's smooth sensitivity and A(f, x, k) are finite
    floats, the variance's (beyond the float range) a ParameterError, never an
    OverflowError or a warning."""
    x = [1.0, 2.0, 3.0, 1e100]
    s = sens.smooth("std", x, beta=0.1, relation=relation, bounds=(0, 1e308))
    assert math.isfinite(s.sensitivity) and s.sensitivity > 1e307
    assert math.isfinite(sens.local_at_distance("std", x, 2, relation=relation, bounds=(0, 1e308)))
    with pytest.raises(ParameterError, match="overflows a float"):
        sens.smooth("var", x, beta=0.1, relation=relation, bounds=(0, 1e308))
    with pytest.raises(ParameterError, match="overflows a float"):
        sens.local_at_distance("var", x, 2, relation=relation, bounds=(0, 1e308))


def test_smooth_sensitivity_at_tiny_beta_equals_the_full_scan() -> None:
    # beta = 1e-6 on 5 values: the answer is max_k exp(-beta k) A(k) over k <= K*, which
    # the scan computes exactly (and quickly: it stops at K*)
    x = [1.0, 2.0, 3.0, 10.0, 11.0]
    for relation in ("bounded", "unbounded"):
        t0 = time.perf_counter()
        got = sens.smooth("median", x, beta=1e-6, relation=relation, bounds=(0, 100))
        assert time.perf_counter() - t0 < 5
        full = max(
            math.exp(-1e-6 * k)
            * sens.local_at_distance("median", x, k, relation=relation, bounds=(0, 100))
            for k in range(12)
        )
        assert got.sensitivity == full
