"""Budget: one entry per release, spent before any noise; overspending draws nothing."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import dpkit as dp
from dpkit.samplers import SeededSource


def _df() -> pl.DataFrame:
    return pl.DataFrame({"g": ["a", "b", "c"] * 20, "x": np.arange(60.0)})


class CountingSource(SeededSource):
    """A seeded source that counts the words drawn from it."""

    def __init__(self, seed: int) -> None:
        super().__init__(seed)
        self.drawn = 0

    def words(self, n: int) -> np.ndarray:
        self.drawn += int(n)
        return super().words(n)


def test_overspend_raises_before_any_noise() -> None:
    src = CountingSource(1)
    s = dp.Session(_df(), budget=dp.PureDP(1.0), rng=src)
    q = s.query().group_by("g", keys=["a", "b", "c"]).agg(dp.count(), dp.mean("x", bounds=(0, 100)))
    q.release(epsilon=0.75)
    before = src.drawn
    assert before > 0
    with pytest.raises(dp.BudgetExceededError):
        q.release(epsilon=0.5)
    assert src.drawn == before  # nothing was drawn for the refused release
    assert len(s.accountant.history) == 1


def test_per_person_overspend_draws_no_salt() -> None:
    src = CountingSource(2)
    df = _df().with_columns(pid=pl.int_range(60) % 7)
    s = dp.Session(df, privacy_unit="pid", max_rows_per_unit=3, budget=dp.PureDP(0.5), rng=src)
    with pytest.raises(dp.BudgetExceededError):
        s.query().agg(dp.count()).release(epsilon=1.0)
    assert src.drawn == 0


def test_disjoint_groups_are_charged_once() -> None:
    """Ten groups or one, a release is one entry costing exactly epsilon (parallel
    composition over disjoint groups is in the sensitivity, not in the charge)."""
    s = dp.Session(_df(), budget=dp.PureDP(1.0), rng=3)
    rel = (
        s.query()
        .group_by("g", keys=list("abcdefghij"))
        .agg(dp.count(), dp.sum("x", bounds=(0, 100)))
        .measure(epsilon=0.5)
    )
    assert rel.privacy == dp.PureDP(0.5)
    (entry,) = s.accountant.history
    assert entry.cost == dp.PureDP(0.5) and entry.label == "Session query: count, x_sum by g"
    # the parts' own guarantees add up to the release's cost (sequential composition)
    total = sum(r.privacy.epsilon for r in rel.releases.values())
    assert total == pytest.approx(0.5, rel=1e-12)
    assert rel.relation == "unbounded" and rel.privacy_unit is None
    assert entry.relation == "unbounded"
    assert all(r.relation == "unbounded" for r in rel.releases.values())


def test_every_noisy_statistic_has_a_release_record() -> None:
    """QueryRelease.releases holds a record per noisy statistic, quantiles and histograms
    included: the records' pure epsilons add up to the release's cost (sequential
    composition; a quantile aggregate's record is its whole mechanism per group, for one
    unit of 2 rows here), and each record's values are the frame's."""
    df = _df().with_columns(pid=pl.int_range(60) // 2)
    s = dp.Session(df, privacy_unit="pid", max_rows_per_unit=2, budget=dp.PureDP(5.0), rng=3)
    rel = (
        s.query()
        .group_by("g", keys=["a", "b", "c"])
        .agg(
            dp.count(),
            dp.quantile("x", [0.25, 0.75], bounds=(0, 64)),
            dp.median("x", bounds=(0, 64), name="m"),
        )
        .measure(epsilon=1.5)
    )
    assert set(rel.releases) == {"count: count", "x: quantiles", "m: quantiles"}
    total = sum(r.privacy.epsilon for r in rel.releases.values())
    assert total == pytest.approx(1.5, rel=1e-12)
    q = rel.releases["x: quantiles"]
    assert q.mechanism == "quantiles" and q.relation == "unbounded" and q.alpha == 0.05
    assert q.privacy == dp.PureDP(0.5) and q.details["levels"] == (0.25, 0.75)
    np.testing.assert_array_equal(q.value, rel.frame.select("x_0.25", "x_0.75").to_numpy())
    iv = q.details["value_intervals"]
    assert iv.shape == (3, 2, 2)
    np.testing.assert_array_equal(iv[:, 0, 0], rel.frame["x_0.25_low"].to_numpy())
    np.testing.assert_array_equal(iv[:, 1, 1], rel.frame["x_0.75_high"].to_numpy())
    np.testing.assert_array_equal(rel.releases["m: quantiles"].value[:, 0], rel.frame["m"])
    hist = (
        s.query()
        .group_by("g", keys=["a", "b", "c"])
        .agg(dp.histogram("x", bins=[0, 20, 40, 60]))
        .measure(epsilon=0.5)
    )
    (key,) = hist.releases
    assert key == "x_count: count per bin"
    assert hist.releases[key].privacy == dp.PureDP(0.5)
    np.testing.assert_array_equal(hist.releases[key].value, hist.frame["x_count"].to_numpy())


def test_replace_one_budget_is_charged_by_group_privacy() -> None:
    """Against a replace-one (bounded) budget an add/remove release costs 2 epsilon."""
    acct = dp.Accountant(dp.PureDP(1.0), relation="bounded")
    s = dp.Session(_df(), accountant=acct, rng=6)
    s.count(epsilon=0.25)
    assert acct.history[0].charge == dp.PureDP(0.5)


def test_weights_split_the_budget() -> None:
    s = dp.Session(_df(), budget=dp.PureDP(1.0))
    plan = s.query().agg(dp.count(weight=3), dp.sum("x", bounds=(0, 10))).explain(epsilon=1.0)
    shares = {p.aggregate: float(p.share) for p in plan.parts}
    assert shares == {"count": 0.75, "x_sum": 0.25}


def test_explain_spends_nothing_and_shows_every_figure() -> None:
    s = dp.Session(_df(), budget=dp.ApproxDP(1.0, 1e-6))
    q = s.query().group_by("g").agg(dp.count(), dp.mean("x", bounds=(0, 100)))
    text = str(q.explain(epsilon=1.0, delta=1e-6))
    for needle in (
        "add/remove one row",
        "privacy cost",
        "sensitivity",
        "noise std",
        "+- interval",
        "key selection",
        "threshold" if False else ">=",
        "share",
        "clipping",
    ):
        assert needle in text
    assert s.accountant.history == ()
    assert "give epsilon" in str(q.explain())


def test_a_plan_at_a_prompt_shows_its_text_and_keeps_its_fields() -> None:
    s = dp.Session(_df(), budget=dp.PureDP(1.0))
    plan = s.query().group_by("g", keys=["a", "b"]).agg(dp.count()).explain(epsilon=1.0)
    assert repr(plan) == str(plan)  # what a prompt echoes: the plan, not a field dump
    assert repr(plan).startswith("dpkit Session query plan")
    assert "Plan(" not in repr(plan) and "PartPlan(" not in repr(plan)
    assert plan.by == ("g",) and plan.public_keys and plan.parts[0].aggregate == "count"


def test_zcdp_budget_and_rho_release() -> None:
    s = dp.Session(_df(), budget=dp.ZCDP(0.5), rng=4)
    rel = s.query().group_by("g", keys=["a", "b", "c"]).agg(dp.count()).measure(rho=0.25)
    assert rel.privacy == dp.ZCDP(0.25)
    assert rel.releases["count: count"].mechanism == "DiscreteGaussian"
    with pytest.raises(dp.ParameterError, match="zCDP"):
        s.query().group_by("g").agg(dp.count()).release(rho=0.1)


def test_existing_accountant_with_ledger(tmp_path) -> None:
    acct = dp.Accountant(dp.PureDP(1.0), ledger=tmp_path / "b.sqlite")
    s = dp.Session(_df(), accountant=acct, rng=5)
    s.count(epsilon=0.25)
    acct.close()
    again = dp.Accountant.open(tmp_path / "b.sqlite")
    assert [e.label for e in again.history] == ["Session query: count"]
    again.close()


def test_approximate_budget_at_the_extremes_of_epsilon() -> None:
    # epsilon near the float range converts to a finite rho and releases; one too small for
    # its delta is refused before the spend, naming epsilon (not the conversion's rho)
    s = dp.Session(_df(), budget=dp.ApproxDP(1e301, 0.9), rng=4)
    out = s.query().agg(dp.count()).release(epsilon=1e300, delta=0.5)
    assert out["count"][0] == _df().height
    assert s.accountant.history[0].charge == dp.ApproxDP(1e300, 0.5)
    assert s.accountant.spent.epsilon <= 1e300  # tight: no analysis exceeds the charge
    with pytest.raises(dp.ParameterError, match="`epsilon` 1e-300 is too small for `delta`"):
        s.query().agg(dp.count()).release(epsilon=1e-300, delta=0.1)
    assert len(s.accountant.history) == 1
