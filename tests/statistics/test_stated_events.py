"""Every statistic states what it is to the accountant, and never claims less than it is.

Each statistic is run once with an Accountant; the spend it records must carry events that
(a) exist, (b) compose to no more than the charged epsilon (at delta 0: the sum of the
stages' pure epsilons; at a small delta: :func:`dpkit.accounting.compose`) and no less (the
sum of the stages' epsilons is the charged epsilon: a stage stated with less loss than its
share fails), and (c) whose Laplace events have the scale of the noise the statistic drew,
read from the release's details (and the lattice of its bounds), in lattice steps.

Tolerances: the events round their parameters to floats the safe way (a scale down, an
epsilon up), an error of a few ulps; ``1e-9`` absolute on epsilons of order 1 and a relative
``1e-12`` on scales allow that and reject a wrong variant (a scale 10% off, an epsilon halved)
by many orders of magnitude.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

import dpkit.statistics as st
from dpkit.accounting import Accountant, PureDP, compose
from dpkit.accounting import events as ev
from dpkit.mechanisms.quantile_em import QuantileLattice

EPS = 1.0
DATA = np.random.default_rng(20261128).normal(50.0, 10.0, 1000)
TOL = 1e-9


def _laplace(events: tuple[ev.Event, ...]) -> list[ev.Laplace]:
    return [e for e in events if isinstance(e, ev.Laplace)]


def _kinds(events: tuple[ev.Event, ...]) -> list[str]:
    return [type(e).__name__ for e in events]


def _check_scale(event: ev.Laplace, scale: Fraction, sensitivity: int) -> None:
    """The event is the discrete Laplace of ``scale`` steps on ``sensitivity`` steps."""
    assert event.discrete
    assert event.sensitivity == sensitivity
    assert event.scale == pytest.approx(float(scale), rel=1e-12)
    assert event.scale <= scale  # rounded down: never less private than drawn


def _centred(bounds: tuple[float, float], bits: int) -> tuple[int, int]:
    """The plain and centred sums' sensitivities in lattice steps for given bounds."""
    lat = QuantileLattice.for_bounds("test", bounds[0], bounds[1], bits)
    c = (lat.lo + lat.hi) // 2
    return max(abs(lat.lo), abs(lat.hi), 1), max(lat.hi - c, c - lat.lo, 1)


def _moments_given(kind: str) -> Callable[[Any, tuple[ev.Event, ...]], None]:
    def check(rel: Any, events: tuple[ev.Event, ...]) -> None:
        bits = 16 if kind == "var" else 30  # moments' lattices (16 bits for the squares)
        plain, r = _centred((0.0, 100.0), bits)
        if kind == "sum":
            (lap,) = events
            g = QuantileLattice.for_bounds("test", 0.0, 100.0, bits).spacing
            _check_scale(lap, Fraction(plain) / Fraction(EPS), plain)
            assert lap.scale * g == pytest.approx(rel.details["sum_scale"], rel=1e-12)
            return
        parts = 2 if kind == "mean" else 3
        each = Fraction(EPS) / parts  # exactly as drawn; the details show it as a float
        assert float(each) == rel.details["epsilon_each"]
        sens = [1, r] if kind == "mean" else [1, r, r * r]
        assert _kinds(events) == ["Laplace"] * len(sens)
        for lap, s in zip(_laplace(events), sens, strict=True):
            _check_scale(lap, s / each, s)

    return check


def _moments_private(kind: str, method: str) -> Callable[[Any, tuple[ev.Event, ...]], None]:
    def check(rel: Any, events: tuple[ev.Event, ...]) -> None:
        eps_b = Fraction(rel.details["epsilon_bounds"])
        first = events[0]
        if method == "histogram":  # one record moves one bucket by one
            assert isinstance(first, ev.Laplace)
            _check_scale(first, 1 / eps_b, 1)
        else:  # AboveThreshold: its epsilon alone
            assert first == ev.Approx(epsilon=float(eps_b))
        rest = events[1:]
        if kind == "sum":  # the lattice follows the chosen bounds: epsilon alone
            assert rest == (ev.Approx(epsilon=float(Fraction(EPS) - eps_b)),)
            return
        each = (Fraction(EPS) - eps_b) / (2 if kind == "mean" else 3)
        assert float(each) == rel.details["epsilon_each"]
        assert isinstance(rest[0], ev.Laplace)
        _check_scale(rest[0], 1 / each, 1)  # the count
        assert all(isinstance(e, ev.Approx) for e in rest[1:])
        assert len(rest) == (2 if kind == "mean" else 3)

    return check


def _bounds_hist(rel: Any, events: tuple[ev.Event, ...]) -> None:
    (lap,) = events
    assert isinstance(lap, ev.Laplace)
    _check_scale(lap, 1 / Fraction(EPS), 1)


def _approx_only(rel: Any, events: tuple[ev.Event, ...]) -> None:
    assert events == (ev.Approx(epsilon=EPS),)


def _quantile_check(
    exponentials: int, approx: bool = False, intervals: bool = True
) -> Callable[[Any, tuple[ev.Event, ...]], None]:
    """``exponentials`` exponential events for the values (``approx``: then one Approx for
    the draws the tree's paths do not share), and, with intervals, the helpers' exponential
    event and the cell counts' discrete Laplace."""

    def check(rel: Any, events: tuple[ev.Event, ...]) -> None:
        d = rel.details
        points = events[: exponentials + approx]
        kinds = ["Exponential"] * exponentials + ["Approx"] * approx
        assert _kinds(points) == kinds
        total = sum(_pure(e) for e in points)
        assert total == pytest.approx(d["epsilon_quantiles"], abs=TOL)
        rest = events[len(points) :]
        if not intervals:
            assert rest == ()
            return
        helpers, counts = rest
        assert isinstance(helpers, ev.Exponential)
        assert helpers.epsilon == pytest.approx(d["epsilon_helpers"], abs=TOL)
        assert isinstance(counts, ev.Laplace)
        _check_scale(counts, 1 / Fraction(d["epsilon_counts"]), 1)

    return check


def _cdf(rel: Any, events: tuple[ev.Event, ...]) -> None:
    (lap,) = events
    assert isinstance(lap, ev.Laplace)
    _check_scale(lap, 1 / Fraction(rel.details["epsilon_histogram"]), 1)


DECILES = [i / 10 for i in range(1, 10)]
AGES = np.repeat([20, 30, 40, 50, 60], [60, 210, 460, 210, 60])
STEPS, STEP_COUNTS = np.unique(st.tail_steps(np.abs(DATA), lower=0.0), return_counts=True)
BUCKETS, BUCKET_COUNTS = np.unique(st.log2_buckets(DATA), return_counts=True)

CASES: dict[str, tuple[Callable[..., Any], Callable[[Any, tuple[ev.Event, ...]], None]]] = {
    **{
        f"{k}-given": (
            lambda acct, k=k: getattr(st, k)(
                DATA, epsilon=EPS, bounds=(0, 100), rng=1, accountant=acct
            ),
            _moments_given(k),
        )
        for k in ("sum", "mean", "var")
    },
    **{
        f"{k}-{m}": (
            lambda acct, k=k, m=m: getattr(st, k)(
                DATA, epsilon=EPS, bounds="auto", bounds_method=m, rng=1, accountant=acct
            ),
            _moments_private(k, m),
        )
        for k in ("sum", "mean", "std")
        for m in ("histogram", "tail")
    },
    "private-bounds-histogram": (
        lambda acct: st.private_bounds(DATA, epsilon=EPS, rng=1, accountant=acct),
        _bounds_hist,
    ),
    "private-bounds-tail": (
        lambda acct: st.private_bounds(DATA, epsilon=EPS, method="tail", rng=1, accountant=acct),
        _approx_only,
    ),
    "bounds-from-counts": (
        lambda acct: st.bounds_from_counts(
            BUCKETS, BUCKET_COUNTS, epsilon=EPS, rng=1, accountant=acct
        ),
        _bounds_hist,
    ),
    "tail-bounds-from-counts": (
        lambda acct: st.tail_bounds_from_counts(
            STEPS, STEP_COUNTS, epsilon=EPS, lower=0.0, rng=1, accountant=acct
        ),
        _approx_only,
    ),
    "contribution-threshold": (
        lambda acct: st.contribution_bound(AGES // 10, epsilon=EPS, rng=3, accountant=acct),
        _approx_only,
    ),
    "quantile-one-level": (
        lambda acct: st.quantiles(DATA, 0.5, epsilon=EPS, bounds=(0, 100), rng=1, accountant=acct),
        _quantile_check(1),
    ),
    "quantiles-aq-three": (
        lambda acct: st.quantiles(
            DATA, [0.25, 0.5, 0.75], epsilon=EPS, bounds=(0, 100), rng=1, accountant=acct
        ),
        _quantile_check(2),
    ),
    "quantiles-aq-deciles": (  # the root's draw, then paths that differ: Approx
        lambda acct: st.quantiles(
            DATA, DECILES, epsilon=EPS, bounds=(0, 100), rng=1, accountant=acct
        ),
        _quantile_check(1, approx=True),
    ),
    "quantiles-aq-no-intervals": (
        lambda acct: st.quantiles(
            DATA,
            DECILES[:7],
            epsilon=EPS,
            bounds=(0, 100),
            rng=1,
            intervals=False,
            accountant=acct,
        ),
        _quantile_check(3, intervals=False),
    ),
    "quantiles-joint": (
        lambda acct: st.quantiles(
            DATA,
            [0.25, 0.75],
            epsilon=EPS,
            bounds=(0, 100),
            method="joint",
            rng=1,
            accountant=acct,
        ),
        _quantile_check(1),
    ),
    "quantiles-independent": (
        lambda acct: st.quantiles(
            DATA,
            [0.1, 0.5, 0.9],
            epsilon=EPS,
            bounds=(0, 100),
            method="independent",
            rng=1,
            accountant=acct,
        ),
        _quantile_check(3),
    ),
    "quantiles-cdf": (
        lambda acct: st.quantiles(
            AGES, [0.25, 0.5, 0.75], epsilon=EPS, bounds=(0, 100), rng=2, accountant=acct
        ),
        _cdf,
    ),
    "quantiles-from-counts": (
        lambda acct: st.quantiles_from_counts(
            [18.0, 30.0, 45.0, 60.0],
            [10, 45, 30, 15],
            0.5,
            epsilon=EPS,
            bounds=(0, 100),
            support=1.0,
            rng=7,
            accountant=acct,
        ),
        _quantile_check(1),
    ),
}


def _pure(event: ev.Event) -> float:
    """The pure epsilon an event claims (each stated event of a statistic is pure DP)."""
    assert isinstance(event, ev.Laplace | ev.Exponential | ev.Approx), event
    if isinstance(event, ev.Approx):
        assert event.delta == 0
    return float(event.epsilon)


@pytest.mark.parametrize("name", list(CASES))
def test_each_statistic_states_events_that_compose_to_its_charge(name: str) -> None:
    run, check = CASES[name]
    acct = Accountant(PureDP(100.0))
    rel = run(acct)
    (spent,) = acct.history
    events = spent.events
    assert events, f"{name}: the spend states no events"
    charged = spent.cost.epsilon
    assert charged == EPS
    # (b) at delta 0 the stages' pure epsilons add up to the charge: no more (never a stage
    # charged twice) and no less (no stage claims less loss than its share)
    assert sum(_pure(e) for e in events) == pytest.approx(charged, abs=TOL)
    # ... and composed at a small delta they cost no more than the charge
    assert compose(events, delta=1e-9).epsilon <= charged + TOL
    # (c) the Laplace events are the noise drawn, the exponential ones their stage
    check(rel, events)


def test_contribution_quantile_method_states_the_quantile_release() -> None:
    acct = Accountant(PureDP(10.0))
    st.contribution_bound(AGES // 10, epsilon=EPS, method="quantile", rng=3, accountant=acct)
    (spent,) = acct.history
    assert spent.events == (ev.Exponential(epsilon=EPS),)  # one level, no intervals


def test_a_tight_accountant_fits_more_means_than_their_plain_guarantees() -> None:
    from dpkit.accounting import ApproxDP
    from dpkit.errors import BudgetExceededError

    acct = Accountant(ApproxDP(2.0, 1e-6), composition="tight")
    n = 0
    with pytest.raises(BudgetExceededError):
        while n < 100:  # 42 fit (PLD of the stated discrete Laplace stages)
            st.mean(DATA, epsilon=0.1, bounds=(0, 100), rng=n, accountant=acct)
            n += 1
    # the same releases charged as plain Approx(0.1) compose past the budget (2.86 at 42;
    # basic composition fits 20)
    assert compose([(ev.Approx(epsilon=0.1), n)], delta=1e-6).epsilon > 2.0
    assert acct.composed().epsilon <= 2.0


@pytest.mark.parametrize("m", [3, 7, 9, 10, 21, 29])
def test_aq_path_events_describe_the_draws_each_record_meets(
    m: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every record's draws, as ApproximateQuantiles spends them, are the stated ones: the
    shared draws first, then at most the stated rest (or a prefix of the shared draws)."""
    import dpkit.statistics._approximate as aq
    from dpkit.samplers import as_source
    from dpkit.statistics._input import counts_from_data
    from dpkit.statistics.quantile_release import _measure

    calls: list[tuple[Fraction, int, int]] = []
    inside = [False]
    draw_view, draw_pair = aq.draw_view, aq.draw_pair

    def view_spy(view: Any, measure: Any, a: Any, b: Any, eps: Fraction, source: Any) -> Any:
        if not inside[0]:
            calls.append((eps, view.a, view.b))
        return draw_view(view, measure, a, b, eps, source)

    def pair_spy(view: Any, measure: Any, a1: Any, a2: Any, eps: Fraction, source: Any) -> Any:
        calls.append((eps, view.a, view.b))
        inside[0] = True
        try:
            return draw_pair(view, measure, a1, a2, eps, source)
        finally:
            inside[0] = False

    monkeypatch.setattr(aq, "draw_view", view_spy)
    monkeypatch.setattr(aq, "draw_pair", pair_spy)
    lattice = QuantileLattice.for_bounds("test", 0.0, 100.0)
    counts = counts_from_data("test", DATA, lattice)  # distinct values: no ties to split
    assert counts.values.size == DATA.size
    measure = _measure("test", lattice, "auto", False)
    levels = [Fraction(i + 1, m + 1) for i in range(m)]
    eps = Fraction(1)
    points = aq.approximate_quantiles(counts, measure, levels, eps, as_source(5))
    head, rest = aq.path_epsilons(m, eps)
    released = set(points)
    seen = set()
    for i, v in enumerate(counts.values.tolist()):
        if v in released:  # a record at a split goes one way by a coin: skip it
            continue
        path = tuple(e for e, a, b in calls if a <= i < b)
        seen.add(path)
        if rest == 0:
            assert path == head[: len(path)], (i, path, head)
        else:
            assert path[: len(head)] == head, (i, path, head)
            assert sum(path[len(head) :], Fraction(0)) <= rest
    assert max(seen, key=len)[: len(head)] == head  # some record meets every shared draw
