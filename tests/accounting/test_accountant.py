"""The in-memory Accountant: exact check-and-record, conversions, errors, history."""

from __future__ import annotations

import math
import pickle
import threading
from datetime import UTC, datetime
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpkit import (
    ZCDP,
    Accountant,
    ApproxDP,
    BudgetExceededError,
    LedgerError,
    ParameterError,
    PureDP,
    pure_to_zcdp,
    zcdp_to_approx,
)
from dpkit.accounting import events as ev
from dpkit.accounting.loss import PrivacyLoss


def test_spend_records_and_reports() -> None:
    acct = Accountant(PureDP(1.0))
    before = datetime.now(UTC)
    s = acct.spend(PureDP(0.25), label="count")
    assert (s.index, s.label, s.cost, s.charge) == (1, "count", PureDP(0.25), PureDP(0.25))
    assert before <= s.timestamp <= datetime.now(UTC)
    acct.spend(PureDP(0.5), label="sum")
    assert acct.spent == PureDP(0.75)
    assert acct.remaining == PureDP(0.25)
    assert [h.label for h in acct.history] == ["count", "sum"]
    assert [h.index for h in acct.history] == [1, 2]
    assert acct.budget == PureDP(1.0)


def test_refusal_carries_request_and_remaining_and_records_nothing() -> None:
    acct = Accountant(PureDP(1.0))
    acct.spend(PureDP(0.75), label="a")
    with pytest.raises(BudgetExceededError) as info:
        acct.spend(PureDP(0.5), label="too much")
    err = info.value
    assert err.requested == PureDP(0.5)
    assert err.remaining == PureDP(0.25)
    assert "too much" in str(err) and "remaining PureDP(epsilon=0.25)" in str(err)
    assert len(acct.history) == 1
    assert acct.spent == PureDP(0.75)
    # the budget can still be used up exactly
    acct.spend(PureDP(0.25), label="b")
    assert acct.remaining == PureDP(0.0)
    with pytest.raises(BudgetExceededError):
        acct.spend(PureDP(1e-300), label="crumb")


def test_ten_tenths_against_one() -> None:
    # Decision (see Accountant Notes): comparisons are exact on the floats' rational values.
    # The float 0.1 exceeds 1/10 by 5.55e-18, so nine spends leave 0.0999999999999999500...
    # and the tenth PureDP(0.1) does not fit: refused rather than letting the total creep past.
    acct = Accountant(PureDP(1.0))
    for i in range(9):
        acct.spend(PureDP(0.1), label=f"q{i}")
    with pytest.raises(BudgetExceededError) as info:
        acct.spend(PureDP(0.1), label="q9")
    rest = info.value.remaining
    assert rest.epsilon < 0.1
    exact_rest = 1 - 9 * Fraction(0.1)
    assert Fraction(rest.epsilon) <= exact_rest < Fraction(math.nextafter(rest.epsilon, 1.0))
    # remaining is rounded down, so spending it always fits and leaves the exact total <= 1
    acct.spend(rest, label="rest")
    total = sum((Fraction(s.cost.epsilon) for s in acct.history), Fraction(0))
    assert total <= 1
    assert len(acct.history) == 10


def test_dyadic_budget_is_used_exactly() -> None:
    acct = Accountant(PureDP(1.0))
    for i in range(8):
        acct.spend(PureDP(0.125), label=f"q{i}")
    assert acct.spent == PureDP(1.0)
    assert acct.remaining == PureDP(0.0)


@given(st.lists(st.floats(min_value=0.0, max_value=0.5, allow_nan=False), max_size=40))
def test_exact_total_never_exceeds_budget(costs: list[float]) -> None:
    acct = Accountant(PureDP(1.0))
    accepted: list[float] = []
    for i, c in enumerate(costs):
        fits = sum((Fraction(x) for x in accepted), Fraction(c)) <= 1
        try:
            acct.spend(PureDP(c), label=f"q{i}")
        except BudgetExceededError as err:
            assert not fits
            # remaining is the largest float not above the exact remainder
            exact_rest = 1 - sum((Fraction(x) for x in accepted), Fraction(0))
            assert Fraction(err.remaining.epsilon) <= exact_rest
            assert Fraction(math.nextafter(err.remaining.epsilon, 2.0)) > exact_rest
        else:
            assert fits
            accepted.append(c)
    assert [s.cost.epsilon for s in acct.history] == accepted
    # spending what remains always succeeds
    acct.spend(acct.remaining, label="rest")
    assert sum((Fraction(s.cost.epsilon) for s in acct.history), Fraction(0)) <= 1


def test_approx_budget_tracks_both_parameters() -> None:
    acct = Accountant(ApproxDP(1.0, 2**-20), composition="basic")
    acct.spend(ApproxDP(0.25, 2**-21), label="a")
    acct.spend(PureDP(0.25), label="pure")
    assert acct.spent == ApproxDP(0.5, 2**-21)
    assert acct.remaining == ApproxDP(0.5, 2**-21)
    with pytest.raises(BudgetExceededError) as info:
        acct.spend(ApproxDP(0.1, 2**-20), label="delta too big")
    assert info.value.remaining == ApproxDP(0.5, 2**-21)
    acct.spend(ApproxDP(0.5, 2**-21), label="rest")
    assert acct.remaining == ApproxDP(0.0, 0.0)


def test_zcdp_budget_converts_pure_spends() -> None:
    acct = Accountant(ZCDP(0.5))
    s = acct.spend(PureDP(0.5), label="count")  # 0.5^2 / 2 = 0.125 (Bun-Steinke Prop. 1.4)
    assert s.cost == PureDP(0.5) and s.charge == ZCDP(0.125)
    acct.spend(ApproxDP(0.5, 0.0), label="pure as approx")
    acct.spend(ZCDP(0.25), label="gauss")
    assert acct.remaining == ZCDP(0.0)
    with pytest.raises(BudgetExceededError) as info:
        acct.spend(PureDP(0.01), label="more")
    assert f"charged as {pure_to_zcdp(0.01)!r}" in str(info.value)


def test_approx_budget_converts_zcdp_only_when_asked() -> None:
    plain = Accountant(ApproxDP(10.0, 1e-5), composition="basic")
    with pytest.raises(TypeError, match="zcdp_delta"):
        plain.spend(ZCDP(0.5), label="gauss")
    assert plain.history == ()
    acct = Accountant(ApproxDP(10.0, 1e-5), zcdp_delta=1e-6, composition="basic")
    s = acct.spend(ZCDP(0.5), label="gauss")
    assert s.cost == ZCDP(0.5)
    assert s.charge == zcdp_to_approx(ZCDP(0.5), 1e-6)
    assert acct.spent == s.charge


@pytest.mark.parametrize(
    ("budget", "cost"),
    [
        (PureDP(1.0), ApproxDP(0.1, 1e-9)),
        (PureDP(1.0), ZCDP(0.01)),
        (ZCDP(1.0), ApproxDP(0.1, 1e-9)),
    ],
)
def test_incompatible_spends_are_refused_with_a_clear_error(budget, cost) -> None:  # type: ignore[no-untyped-def]
    acct = Accountant(budget)
    with pytest.raises(TypeError, match="cannot pay for"):
        acct.spend(cost, label="x")
    assert acct.history == ()


@pytest.mark.parametrize("bad", [-0.5, math.nan, math.inf])
def test_negative_or_nan_costs_are_rejected(bad: float) -> None:
    with pytest.raises(ParameterError):
        PureDP(bad)
    # a value forged past the constructor is re-checked by the accountant
    forged = PureDP(0.1)
    object.__setattr__(forged, "epsilon", bad)
    acct = Accountant(PureDP(1.0))
    with pytest.raises(ParameterError, match=r"Accountant.spend: `cost.epsilon`"):
        acct.spend(forged, label="forged")
    forged_delta = ApproxDP(0.1, 0.0)
    object.__setattr__(forged_delta, "delta", bad)
    with pytest.raises(ParameterError, match=r"`cost.delta`"):
        Accountant(ApproxDP(1.0, 1e-6)).spend(forged_delta, label="forged")
    assert acct.history == ()


def test_bad_cost_types_and_labels() -> None:
    acct = Accountant(PureDP(1.0))
    with pytest.raises(TypeError, match=r"wrap a bare epsilon: dpkit.PureDP\(0.5\)"):
        acct.spend(0.5, label="x")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="`label` must be a str"):
        acct.spend(PureDP(0.1), label=3)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="`label` must be a non-empty"):
        acct.spend(PureDP(0.1), label="  ")
    with pytest.raises(TypeError):
        acct.spend(PureDP(0.1))  # type: ignore[call-arg]
    assert acct.history == ()


def test_bad_budgets() -> None:
    with pytest.raises(TypeError, match="`budget` must be a PureDP"):
        Accountant(1.0)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match=r"`budget\.epsilon` must be a finite number > 0"):
        Accountant(PureDP(0.0))
    with pytest.raises(ParameterError, match=r"`budget\.rho`"):
        Accountant(ZCDP(0.0))
    with pytest.raises(ParameterError, match="`zcdp_delta` only applies"):
        Accountant(PureDP(1.0), zcdp_delta=1e-6)
    with pytest.raises(ParameterError, match="`zcdp_delta`"):
        Accountant(ApproxDP(1.0, 1e-6), zcdp_delta=0.0)
    with pytest.raises(TypeError, match="`ledger` must be a path"):
        Accountant(PureDP(1.0), ledger=3)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="`busy_timeout`"):
        Accountant(PureDP(1.0), busy_timeout=-1)


def test_in_memory_accountant_refuses_to_be_copied_to_another_process() -> None:
    with pytest.raises(TypeError, match="second, independent budget"):
        pickle.dumps(Accountant(PureDP(1.0)))


def test_threads_sharing_an_in_memory_accountant() -> None:
    # 8 threads x 500 attempts of 2^-9 against 1.0: exactly 512 fit.
    acct = Accountant(PureDP(1.0))
    wins = [0] * 8

    def work(k: int) -> None:
        for i in range(500):
            try:
                acct.spend(PureDP(2.0**-9), label=f"t{k}-{i}")
                wins[k] += 1
            except BudgetExceededError:
                pass

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(wins) == 512 == len(acct.history)
    assert acct.spent == PureDP(1.0)
    assert sorted(s.index for s in acct.history) == list(range(1, 513))


def test_summary_and_repr() -> None:
    acct = Accountant(ZCDP(1.0))
    assert "(no spends yet)" in acct.summary()
    acct.spend(PureDP(1.0), label="count of adults")
    text = acct.summary()
    assert "count of adults" in text and "ZCDP(rho=0.5)" in text
    assert "remaining  ZCDP(rho=0.5)" in text
    assert repr(acct) == "Accountant(budget=ZCDP(rho=1.0), spent=ZCDP(rho=0.5))"


def test_refusal_names_the_conversion_even_when_numbers_coincide() -> None:
    # PureDP(2.0) converts to rho = 2^2 / 2 = 2.0: the same number, still a conversion
    acct = Accountant(ZCDP(1.0))
    with pytest.raises(BudgetExceededError, match=r"charged as ZCDP\(rho=2.0\)"):
        acct.spend(PureDP(2.0), label="big")


def test_design_sketch_keywords_and_multiline_labels() -> None:
    acct = Accountant(budget=ApproxDP(epsilon=2.0, delta=1e-6))
    acct.spend(PureDP(0.5), label="first line\nsecond line")
    assert acct.history[0].label == "first line\nsecond line"
    assert "first line second line" in acct.summary()


# -- tight composition -------------------------------------------------------------------


def _edge() -> float:
    """The tightest epsilon of 100 Laplace releases of scale 10 at delta 1e-5, as a tight
    accountant computes it (4.22 by PLD; 10 by basic composition, 4.53 by Renyi DP)."""
    from dpkit.accounting import compose
    from dpkit.accounting.accountant import ACCOUNTANT_PLD_POINTS

    lap = ev.Laplace(scale=10.0)
    return compose([(lap, 100)], delta=1e-5, pld_points=ACCOUNTANT_PLD_POINTS).epsilon


def _spend_laplace(acct: Accountant, times: int) -> int:
    """Spend ``times`` Laplace releases at epsilon 0.1; how many were admitted."""
    for i in range(times):
        try:
            acct.spend(PureDP(0.1), label=f"count {i}", events=[ev.Laplace(scale=10.0)])
        except BudgetExceededError:
            return i
    return times


def test_tight_admits_the_spend_that_reaches_the_budget_and_refuses_one_beyond() -> None:
    edge = _edge()
    assert 4.2 < edge < 4.23  # the PLD figure; basic composition would stop at 42 spends
    acct = Accountant(ApproxDP(edge, 1e-5), composition="tight")
    assert acct.composition == "tight"
    assert _spend_laplace(acct, 101) == 100  # the 100th lands exactly on the budget
    assert len(acct.history) == 100  # the refused one recorded nothing
    assert acct.spent == ApproxDP(edge, 1e-5)
    assert acct.composed().method == "pld"
    # a hair less budget: the 100th spend would exceed it and is refused
    short = Accountant(ApproxDP(math.nextafter(edge, 0.0), 1e-5), composition="tight")
    assert _spend_laplace(short, 100) == 99
    with pytest.raises(BudgetExceededError, match=r"tight composition, pld") as info:
        short.spend(PureDP(0.1), label="one more", events=[ev.Laplace(scale=10.0)])
    assert info.value.requested == PureDP(0.1)
    assert len(short.history) == 99


def test_tight_past_the_pld_limit_refuses_by_the_other_analyses() -> None:
    """Past ACCOUNTANT_PLD_DISTINCT distinct events the PLD analysis is not run: a spend is
    admitted by the other analyses (or the charges' sum) or refused, never admitted for want
    of an analysis. Gaussians of distinct sigmas from 3 reach epsilon 10 at delta 1e-5 after
    44 of them by exact Gaussian composition (45 give 10.10); the charges' sum (each rho
    converted at zcdp_delta 1e-7, about 1.9 each) would stop at 5."""
    from dpkit.accounting.accountant import ACCOUNTANT_PLD_DISTINCT, compose_as_charged

    acct = Accountant(ApproxDP(10.0, 1e-5), composition="tight", zcdp_delta=1e-7)
    admitted = 0
    for i in range(60):
        sigma = 3.0 + i / 64  # distinct, exact in binary
        try:
            acct.spend(ZCDP(1 / (2 * sigma**2)), label=f"g{i}", events=[ev.Gaussian(sigma=sigma)])
        except BudgetExceededError:
            break
        admitted += 1
    assert ACCOUNTANT_PLD_DISTINCT < admitted == 44
    items = tuple((ev.Gaussian(sigma=3.0 + i / 64), 1) for i in range(admitted + 1))
    assert compose_as_charged(items, 1e-5).epsilon > 10.0  # the refused one was beyond
    assert compose_as_charged(items[:-1], 1e-5).epsilon <= 10.0


def test_the_admissions_composition_is_the_ledgers() -> None:
    """Past the PLD limit a tight admission's composition is kept as the ledger's: after each
    spend, composed() equals a fresh composition of every spend's events."""
    from dpkit.accounting.accountant import ACCOUNTANT_PLD_DISTINCT, compose_as_charged

    acct = Accountant(ApproxDP(3.0, 1e-5), composition="tight")
    spent: list[ev.Event] = []
    for i in range(ACCOUNTANT_PLD_DISTINCT + 8):
        event = ev.Laplace(scale=10.0 + i / 8)
        acct.spend(PureDP(1 / (10.0 + i / 8)), label=f"c{i}", events=[event])
        spent.append(event)
        fresh = compose_as_charged(tuple((e, 1) for e in spent), 1e-5)
        assert acct.composed().by_method == fresh.by_method
    assert sum(1 / (10.0 + i / 8) for i in range(len(spent))) > 3.0  # past the charges' sum
    assert acct.spent == ApproxDP(acct.composed().epsilon, 1e-5)  # so stood at by composing


def test_basic_composition_stops_at_the_sum_of_the_spends() -> None:
    acct = Accountant(ApproxDP(_edge(), 1e-5), composition="basic")
    assert _spend_laplace(acct, 100) == 42  # 42 * 0.1 <= 4.22 < 43 * 0.1


def test_tight_is_never_stricter_than_the_charges_sum() -> None:
    """Events slightly weaker than the stated guarantees (a rounded-up description) still fit
    wherever the guarantees' sum does: that sum is one of the valid bounds."""
    acct = Accountant(ApproxDP(1.0, 1e-6), composition="tight")
    weaker = [ev.Approx(epsilon=0.2500001, delta=2.5e-7)]
    for _ in range(4):
        acct.spend(ApproxDP(0.25, 2.5e-7), label="g", events=weaker)
    assert acct.composed().epsilon > 1.0  # the events alone would refuse the fourth
    assert acct.spent == ApproxDP(1.0, 1e-6)
    assert acct.remaining == ApproxDP(0.0, 0.0)


def test_tight_under_a_pure_budget_is_the_sum_of_epsilons() -> None:
    tight = Accountant(PureDP(1.0), composition="tight")
    basic = Accountant(PureDP(1.0), composition="basic")
    assert [_spend_laplace(a, 20) for a in (tight, basic)] == [9, 9]  # 10 floats 0.1 > 1
    assert tight.spent == basic.spent


def test_tight_under_a_zcdp_budget_charges_the_events_rho() -> None:
    tight = Accountant(ZCDP(1.0), composition="tight")
    basic = Accountant(ZCDP(1.0), composition="basic")
    em = [ev.Exponential(epsilon=0.5)]  # bounded range: rho = epsilon**2 / 8
    rho = tight.spend(PureDP(0.5), label="em", events=em).charge.rho  # type: ignore[union-attr]
    assert 0.5**2 / 8 <= rho <= 0.5**2 / 8 * (1 + 1e-12)  # rounded up, never down
    assert basic.spend(PureDP(0.5), label="em", events=em).charge == ZCDP(0.5**2 / 2)
    # an event with a delta has no rho: the guarantee's own charge
    ks = [ev.Exponential(epsilon=0.5), ev.KeySelection(delta=1e-9)]
    assert tight.spend(PureDP(0.5), label="keys", events=ks).charge == ZCDP(0.125)


def test_tight_shared_ledger_counts_every_users_spends(tmp_path: Path) -> None:
    """Two accountants on one ledger, spending in turn: each composes the other's spends."""
    edge = _edge()
    path = tmp_path / "team.sqlite"
    with (
        Accountant(ApproxDP(edge, 1e-5), ledger=path, composition="tight") as alice,
        Accountant(ApproxDP(edge, 1e-5), ledger=path, composition="tight") as bob,
    ):
        for _ in range(50):
            assert _spend_laplace(alice, 1) == 1
            assert _spend_laplace(bob, 1) == 1
        assert _spend_laplace(alice, 1) == 0
        assert _spend_laplace(bob, 1) == 0
        assert alice.spent == bob.spent == ApproxDP(edge, 1e-5)


def test_composition_is_stored_in_the_ledger(tmp_path: Path) -> None:
    path = tmp_path / "b.sqlite"
    Accountant.create(path, ApproxDP(1.0, 1e-6), composition="tight").close()
    with Accountant(ApproxDP(1.0, 1e-6), ledger=path) as again:
        assert again.composition == "tight"
    with pytest.raises(LedgerError, match="composition='tight', not 'basic'"):
        Accountant(ApproxDP(1.0, 1e-6), ledger=path, composition="basic")
    with Accountant.open(path) as opened:
        assert opened.composition == "tight"
        restored = pickle.loads(pickle.dumps(opened))
        assert restored.composition == "tight"
        restored.close()
    new = tmp_path / "new.sqlite"
    with Accountant(ApproxDP(1.0, 1e-6), ledger=new) as fresh:
        assert fresh.composition == "basic"


@pytest.mark.parametrize(
    ("budget", "expected"),
    [
        (PureDP(1.0), "tight"),
        (ZCDP(0.5), "tight"),
        (ApproxDP(1.0, 0.0), "tight"),
        (ApproxDP(1.0, 1e-6), "basic"),
    ],
)
def test_the_default_composition_is_tight_wherever_it_is_a_filter(
    tmp_path: Path, budget: PrivacyLoss, expected: str
) -> None:
    """Tight is the default where it holds whatever order the releases are chosen in (pure
    and zCDP budgets: one analysis); basic for (epsilon, delta) budgets, where the natural
    PLD filter is invalid. The same for a new ledger and for Accountant.create
    (`dpkit budget init`: tests/cli/test_budget_cli.py)."""
    assert Accountant(budget).composition == expected
    with Accountant(budget, ledger=tmp_path / "a.sqlite") as acct:
        assert acct.composition == expected
    with Accountant.create(tmp_path / "b.sqlite", budget) as acct:
        assert acct.composition == expected
    with Accountant.open(tmp_path / "b.sqlite") as acct:
        assert acct.composition == expected


def test_a_zcdp_budget_charges_the_exponential_mechanism_as_bounded_range_by_default() -> None:
    """By default a zCDP budget composes tightly: an exponential-mechanism spend of epsilon 1
    costs its bounded-range rho 1/8 (Cesar and Rogers 2021), a quarter of the 1/2 that pure
    DP's conversion charges (which a Laplace spend still pays)."""
    acct = Accountant(ZCDP(1.0))
    em = acct.spend(PureDP(1.0), label="em", events=[ev.Exponential(epsilon=1.0)])
    lap = acct.spend(PureDP(1.0), label="lap", events=[ev.Laplace(scale=1.0)])
    assert 0.125 <= em.charge.rho <= 0.125 * (1 + 1e-12)
    assert lap.charge.rho == 0.5
    basic = Accountant(ZCDP(1.0), composition="basic")
    assert (
        basic.spend(PureDP(1.0), label="em", events=[ev.Exponential(epsilon=1.0)]).charge.rho == 0.5
    )


@pytest.mark.parametrize("bad", ["fast", "", None, 1])
def test_composition_must_be_tight_or_basic(bad: object) -> None:
    if bad is None:  # None adopts a ledger's, or the budget's default
        assert Accountant(PureDP(1.0), composition=None).composition == "tight"
        return
    with pytest.raises(ParameterError, match=r"`composition` must be one of \('tight', 'basic'\)"):
        Accountant(PureDP(1.0), composition=bad)  # type: ignore[arg-type]


def test_composed_needs_a_delta_without_an_approximate_budget() -> None:
    acct = Accountant(PureDP(1.0))
    _spend_laplace(acct, 3)
    with pytest.raises(ParameterError, match="has no delta"):
        acct.composed()
    c = acct.composed(delta=1e-6)
    assert c.epsilon <= c.by_method["basic"]
    assert c.by_method["basic"] >= 0.3


def test_tight_composes_many_distinct_events_without_pld() -> None:
    from dpkit.accounting.accountant import ACCOUNTANT_PLD_DISTINCT

    acct = Accountant(ApproxDP(10.0, 1e-6), composition="tight")
    for i in range(ACCOUNTANT_PLD_DISTINCT + 1):
        scale = 20.0 + i  # each release a different Laplace
        acct.spend(PureDP(1 / scale), label=f"q{i}", events=[ev.Laplace(scale=scale)])
        assert ("pld" in acct.composed().by_method) == (i < ACCOUNTANT_PLD_DISTINCT)
    c = acct.composed()
    assert c.method == "rdp" and c.epsilon < c.by_method["basic"]


def test_tight_composes_zcdp_spends_against_an_approximate_budget() -> None:
    acct = Accountant(
        ApproxDP(10.0, 1e-5), composition="tight"
    )  # no zcdp_delta: nothing to convert
    s = acct.spend(ZCDP(0.5), label="gauss")
    assert s.charge == zcdp_to_approx(ZCDP(0.5), 1e-5)  # shown at the budget's delta
    c = acct.composed()
    assert c.method in ("rdp", "zcdp")
    # the smaller of the two valid bounds: the events' composition and the charge's sum
    assert acct.spent.epsilon == min(c.epsilon, s.charge.epsilon)  # type: ignore[union-attr]
