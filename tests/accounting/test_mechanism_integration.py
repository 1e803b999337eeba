"""Mechanisms spend through ``accountant=`` before drawing noise, and a refusal draws none."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from dpkit import Accountant, ApproxDP, BudgetExceededError, LedgerError, PureDP
from dpkit.mechanisms import Exponential, Gaussian, Laplace
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
    tight = Accountant(ApproxDP(3.0, 1e-5))
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
