"""Mechanisms spend through ``accountant=`` before drawing noise, and a refusal draws none."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from dpkit import Accountant, ApproxDP, BudgetExceededError, LedgerError, PureDP
from dpkit.accounting import compose
from dpkit.accounting import events as ev
from dpkit.mechanisms import (
    DiscreteGaussian,
    Exponential,
    Gaussian,
    Geometric,
    Laplace,
    PermuteAndFlip,
    ReportNoisyMax,
)
from dpkit.samplers import BitSource, SeededSource


class SpySource(BitSource):
    """A seeded source that, whenever noise is drawn, reads the ledger from another connection."""

    def __init__(self, ledger: Path) -> None:
        self.inner = SeededSource(1)
        self.ledger = ledger
        self.committed_at_draw: list[int] = []

    def words(self, n: int) -> np.ndarray:
        con = sqlite3.connect(self.ledger)
        try:
            self.committed_at_draw.append(con.execute("SELECT COUNT(*) FROM spends").fetchone()[0])
        finally:
            con.close()
        return self.inner.words(n)


def test_spend_is_committed_before_noise_is_drawn(tmp_path: Path) -> None:
    path = tmp_path / "b.sqlite"
    with Accountant(PureDP(1.0), ledger=path) as acct:
        spy = SpySource(path)
        Laplace(epsilon=0.25, sensitivity=1.0).release(10.0, rng=spy, accountant=acct)
        # every request for bits saw the spend already committed (read by another connection)
        assert spy.committed_at_draw and set(spy.committed_at_draw) == {1}
        first = len(spy.committed_at_draw)
        Laplace(epsilon=0.25, sensitivity=1.0).release(np.zeros(5), rng=spy, accountant=acct)
        assert len(spy.committed_at_draw) > first
        assert set(spy.committed_at_draw[first:]) == {2}
        assert [s.label for s in acct.history] == ["Laplace", "Laplace"]


def test_refused_release_draws_no_noise(tmp_path: Path) -> None:
    path = tmp_path / "b.sqlite"
    with Accountant(PureDP(1.0), ledger=path) as acct:
        spy = SpySource(path)
        Laplace(epsilon=0.75, sensitivity=1.0).release(1.0, rng=spy, accountant=acct)
        draws = len(spy.committed_at_draw)
        with pytest.raises(BudgetExceededError) as info:
            Laplace(epsilon=0.5, sensitivity=1.0).release(1.0, rng=spy, accountant=acct)
        assert len(spy.committed_at_draw) == draws  # no bits were requested
        assert info.value.remaining == PureDP(0.25)
        assert len(acct.history) == 1


def test_mechanisms_charge_their_privacy() -> None:
    basic = Accountant(ApproxDP(3.0, 1e-5), composition="basic")
    tight = Accountant(ApproxDP(3.0, 1e-5), composition="tight")
    lap = Laplace(epsilon=0.5, sensitivity=1.0)
    gau = Gaussian(epsilon=0.5, delta=1e-6, sensitivity=1.0)
    exp = Exponential(epsilon=0.5, sensitivity=1.0)
    for acct in (basic, tight):
        lap.release(3.0, rng=1, accountant=acct)
        gau.release(3.0, rng=2, accountant=acct)
        exp.select(["a", "b", "c"], [1.0, 2.0, 3.0], rng=3, accountant=acct)
        assert [s.cost for s in acct.history] == [lap.privacy, gau.privacy, exp.privacy]
    assert basic.spent == ApproxDP(1.5, 1e-6)
    # tight: every analysis is a valid bound and basic composition is one of them
    assert tight.spent.delta == 1e-5
    assert tight.spent.epsilon <= tight.composed().by_method["basic"]
    assert tight.spent.epsilon < 1.5


def test_labelled_view_names_the_release(tmp_path: Path) -> None:
    with Accountant(PureDP(1.0), ledger=tmp_path / "b.sqlite") as acct:
        view = acct.labelled("count of adults")
        Laplace(epsilon=0.5, sensitivity=1.0).release(32561, rng=1, accountant=view)
        assert acct.history[0].label == "count of adults: Laplace"
        assert view.remaining == PureDP(0.5)
        assert "labelled('count of adults')" in repr(view)
        with pytest.raises(BudgetExceededError):
            Laplace(epsilon=0.75, sensitivity=1.0).release(1, rng=1, accountant=view)


def test_ledger_failure_means_no_release(tmp_path: Path) -> None:
    # a crash or lock-out before the spend is recorded must release nothing
    path = tmp_path / "b.sqlite"
    Accountant.create(path, PureDP(1.0)).close()
    blocker = sqlite3.connect(path, isolation_level=None)
    try:
        blocker.execute("BEGIN IMMEDIATE")
        with Accountant(PureDP(1.0), ledger=path, busy_timeout=0.1) as acct:
            spy = SpySource(path)
            with pytest.raises(LedgerError, match="nothing was spent"):
                Laplace(epsilon=0.5, sensitivity=1.0).release(1.0, rng=spy, accountant=acct)
            assert spy.committed_at_draw == []
            blocker.execute("ROLLBACK")
            assert acct.history == ()
    finally:
        blocker.close()


# -- what each mechanism is, for accounting -----------------------------------------------


@pytest.mark.parametrize(("epsilon", "sensitivity"), [(0.5, 1.0), (0.1, 3.0), (2.0, 0.25)])
def test_laplace_event_is_the_lattice_noise_it_draws(epsilon: float, sensitivity: float) -> None:
    m = Laplace(epsilon=epsilon, sensitivity=sensitivity)
    e = m.event
    g = m.grid(1)
    assert e.discrete
    # the scale in value units is the noise scale drawn (rounded down by at most an ulp)
    assert e.scale * g == pytest.approx(m.noise_scale(1), rel=1e-15)
    # the lattice sensitivity charges the rounding: floor(sensitivity / grid) + 1 steps
    assert e.sensitivity == np.floor(sensitivity / g) + 1
    # one release costs exactly the stated epsilon (float rounding only)
    assert e.epsilon == pytest.approx(epsilon, rel=1e-15) and e.epsilon >= epsilon
    assert compose([e], delta=1e-12).by_method["basic"] == pytest.approx(epsilon, rel=1e-14)


def test_geometric_event_is_its_discrete_laplace() -> None:
    m = Geometric(epsilon=0.3, sensitivity=3)
    assert m.event == ev.Laplace(scale=10.0, sensitivity=3, discrete=True)
    assert m.event.epsilon == pytest.approx(0.3, rel=1e-15)


@pytest.mark.parametrize(("epsilon", "delta", "sensitivity"), [(1.0, 1e-6, 1.0), (0.3, 1e-7, 5.0)])
def test_gaussian_events_are_the_discrete_gaussians_they_draw(
    epsilon: float, delta: float, sensitivity: float
) -> None:
    lattice = Gaussian(epsilon=epsilon, delta=delta, sensitivity=sensitivity)
    e = lattice.event
    assert isinstance(e, ev.Gaussian) and e.discrete
    g = lattice.grid(1)
    assert e.sigma * g == pytest.approx(lattice.sigma, rel=1e-15) and e.sigma * g <= lattice.sigma
    assert e.sensitivity == np.floor(sensitivity / g) + 1
    integer = DiscreteGaussian(epsilon=epsilon, delta=delta, sensitivity=int(sensitivity))
    assert integer.event == ev.Gaussian(
        sigma=integer.event.sigma, sensitivity=int(sensitivity), discrete=True
    )
    assert integer.event.sigma == pytest.approx(integer.sigma, rel=1e-15)
    for m in (lattice, integer):
        # the variance was calibrated to (epsilon, delta): composing the one event at delta
        # gives epsilon back, up to the PLD grid (1e-3 here; a sigma 10% off moves it ~10%)
        c = compose([m.event], delta=delta)
        assert c.epsilon == pytest.approx(epsilon, rel=1e-3)
    # several coordinates: described by the stated guarantee
    assert lattice._event(3) == ev.Approx(epsilon=epsilon, delta=delta)
    assert integer._event(3) == ev.Approx(epsilon=epsilon, delta=delta)


def test_selection_events_say_which_are_bounded_range() -> None:
    assert Exponential(epsilon=0.5, sensitivity=1.0).event == ev.Exponential(epsilon=0.5)
    gumbel = ReportNoisyMax(epsilon=0.5, sensitivity=1.0, noise="gumbel")
    assert gumbel.event == ev.Exponential(epsilon=0.5)
    # epsilon-DP but not bounded-range: their guarantee alone
    assert ReportNoisyMax(epsilon=0.5, sensitivity=1.0).event == ev.Approx(epsilon=0.5)
    assert PermuteAndFlip(epsilon=0.5, sensitivity=1.0).event == ev.Approx(epsilon=0.5)
    for m in (
        Exponential(epsilon=0.5, sensitivity=1.0),
        PermuteAndFlip(epsilon=0.5, sensitivity=1.0),
    ):
        assert compose([m.event], delta=1e-9).by_method["basic"] == pytest.approx(0.5, rel=1e-14)


def test_releases_record_their_events() -> None:
    acct = Accountant(ApproxDP(50.0, 1e-5))
    lap = Laplace(epsilon=0.5, sensitivity=1.0)
    gau = Gaussian(epsilon=0.5, delta=1e-6, sensitivity=1.0)
    lap.release(3.0, rng=1, accountant=acct)
    lap.release(np.zeros(4), rng=1, accountant=acct)
    gau.release(3.0, rng=2, accountant=acct)
    Geometric(epsilon=0.5, sensitivity=1).release(3, rng=1, accountant=acct)
    DiscreteGaussian(epsilon=0.5, delta=1e-6).release(3, rng=1, accountant=acct)
    Exponential(epsilon=0.5, sensitivity=1.0).select(["a", "b"], [1.0, 2.0], rng=3, accountant=acct)
    PermuteAndFlip(epsilon=0.5, sensitivity=1.0).select(
        ["a", "b"], [1.0, 2.0], rng=3, accountant=acct
    )
    ReportNoisyMax(epsilon=0.5, sensitivity=1.0).select(
        ["a", "b"], [1.0, 2.0], rng=3, accountant=acct
    )
    got = [s.events for s in acct.history]
    assert got == [
        (lap.event,),
        (lap._event(4),),
        (gau.event,),
        (Geometric(epsilon=0.5, sensitivity=1).event,),
        (DiscreteGaussian(epsilon=0.5, delta=1e-6).event,),
        (ev.Exponential(epsilon=0.5),),
        (ev.Approx(epsilon=0.5),),
        (ev.Approx(epsilon=0.5),),
    ]
    # four coordinates: a coarser lattice, four rounding steps charged, the same epsilon
    four = lap._event(4)
    assert four.sensitivity == np.floor(1.0 / lap.grid(4)) + 4
    assert four.epsilon == pytest.approx(0.5, rel=1e-15)
