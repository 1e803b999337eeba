"""The release record: what a Session release says it is, for accounting and for the report,
kept by the Session and beside its spend in the ledger."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import dpkit as dp
from dpkit.accounting import compose
from dpkit.accounting import events as ev
from dpkit.errors import LedgerError
from dpkit.render._html import exact


def _people(rare: bool = True) -> pl.DataFrame:
    """400 people in 4 common towns, and (``rare``) one person alone in "ZZZ-rare"."""
    towns = ["Ash", "Birch", "Cedar", "Dale"]
    rows = {
        "pid": list(range(400)),
        "town": [towns[i % 4] for i in range(400)],
        "age": [20 + i % 60 for i in range(400)],
    }
    if rare:
        rows["pid"].append(400)
        rows["town"].append("ZZZ-rare")
        rows["age"].append(99)
    return pl.DataFrame(rows)


def test_a_laplace_release_is_its_pure_epsilon_plus_its_key_selection() -> None:
    s = dp.Session(_people(), budget=dp.ApproxDP(2.0, 1e-6), rng=3)
    public = s.query().group_by("town", keys=["Ash", "Birch"]).agg(dp.count())
    rel = public.measure(epsilon=0.5)
    assert rel.record is not None
    assert s.accountant.history[-1].events == (ev.Approx(epsilon=0.5),)
    assert rel.record["privacy"]["events"] == [{"type": "Approx", "epsilon": 0.5, "delta": 0.0}]
    private = s.query().group_by("town").agg(dp.count())
    rel = private.measure(epsilon=0.5, delta=1e-7, noise="laplace")
    plan = rel.plan
    assert plan.budget is not None and plan.selection is not None
    # key selection is charged the delta its threshold was set for, never less
    assert s.accountant.history[-1].events == (
        ev.Approx(epsilon=0.5),
        ev.KeySelection(delta=plan.budget.delta_select),
    )
    assert plan.selection.delta_bound <= plan.budget.delta_select == 1e-7


def test_a_gaussian_release_is_its_rho_rounded_up_plus_its_key_selection() -> None:
    s = dp.Session(_people(), budget=dp.ApproxDP(2.0, 1e-6), rng=3)
    rel = s.query().group_by("town").agg(dp.count(), dp.mean("age", bounds=(0, 100)))
    out = rel.measure(epsilon=0.5, delta=1e-7)
    budget = out.plan.budget
    assert budget is not None and budget.rho is not None
    zcdp, select = s.accountant.history[-1].events
    assert isinstance(zcdp, ev.Zcdp) and isinstance(select, ev.KeySelection)
    # never below the rho the noise was calibrated to (an event that under-reports would let
    # a tight analysis spend more than was spent), and the nearest float above it
    assert Fraction(zcdp.rho) >= budget.rho
    assert Fraction(math.nextafter(zcdp.rho, 0.0)) < budget.rho
    assert select.delta == budget.delta_select == 5e-8
    # and consistent with the cost: composed at the release's delta, at most its epsilon
    composed = compose([zcdp, select], delta=1e-7)
    assert composed.epsilon <= 0.5 * (1 + 1e-9)


def test_a_zcdp_release_with_public_keys_is_its_rho_alone() -> None:
    s = dp.Session(_people(), budget=dp.ZCDP(1.0), rng=3)
    rel = s.query().group_by("town", keys=["Ash"]).agg(dp.count()).measure(rho=0.125)
    assert s.accountant.history[-1].events == (ev.Zcdp(rho=0.125),)
    assert rel.record is not None and rel.record["plan"]["rho"] == 0.125


def test_the_record_is_json_and_holds_the_released_table_exactly() -> None:
    s = dp.Session(_people(), budget=dp.PureDP(2.0), rng=3)
    q = (
        s.query()
        .group_by("town", keys=["Ash", "Birch", "Nowhere"])
        .agg(
            dp.count(), dp.mean("age", bounds=(0, 100)), dp.quantile("age", [0.5], bounds=(0, 100))
        )
    )
    rel = q.measure(epsilon=1.0)
    record = rel.record
    assert record is not None
    assert json.loads(json.dumps(record, allow_nan=False)) == record
    assert record["table"]["rows"] == [list(r) for r in rel.frame.iter_rows()]
    assert [c["name"] for c in record["table"]["columns"]] == rel.frame.columns
    assert record["query"] == {"language": "python", "text": q.text()}
    assert record["plan"]["text"] == str(rel.plan)
    assert record["randomness"] == {"secure": False}
    assert record["spend"] == s.accountant.history[-1].index
    assert record["time"] == s.accountant.history[-1].timestamp.isoformat()
    # the Session keeps it; what it hands out are copies
    (kept,) = s.records
    assert kept == record
    kept["label"] = "changed"
    assert s.records[0]["label"] == rel.label


def test_randomness_is_secure_unless_seeded() -> None:
    s = dp.Session(_people(), budget=dp.PureDP(2.0))
    q = s.query().group_by("town", keys=["Ash"]).agg(dp.count())
    assert q.measure(epsilon=0.5).record["randomness"] == {"secure": True}  # type: ignore[index]
    assert q.measure(epsilon=0.5, rng=1).record["randomness"] == {"secure": False}  # type: ignore[index]


def test_the_record_never_holds_a_key_that_was_not_released() -> None:
    s = dp.Session(
        _people(), privacy_unit="pid", max_rows_per_unit=1, budget=dp.ApproxDP(2.0, 1e-6), rng=3
    )
    rel = s.query().group_by("town").agg(dp.count()).measure(epsilon=1.0, delta=1e-6)
    assert "ZZZ-rare" not in rel.frame["town"].to_list()  # left out by key selection
    text = json.dumps(rel.record)
    assert "ZZZ-rare" not in text
    selection = rel.record["plan"]["selection"]  # type: ignore[index]
    assert set(selection) == {
        "mechanism",
        "threshold",
        "pre_threshold",
        "delta",
        "delta_bound",
        "delta_pre_threshold",
        "keys_per_unit",
        "share",
        "reuses",
        "std",
    }


def test_privately_chosen_bounds_are_recorded_with_their_clipped_fraction() -> None:
    s = dp.Session(_people(), budget=dp.PureDP(2.0), rng=3)
    rel = s.query().agg(dp.mean("age", bounds="auto")).measure(epsilon=1.0)
    (agg,) = rel.record["plan"]["aggregates"]  # type: ignore[index]
    chosen = rel.bounds["age_mean"]
    assert agg["bounds"]["source"] == "private"
    assert agg["bounds"]["value"] == list(chosen.bounds)
    assert agg["bounds"]["clipped_fraction"] == chosen.clipped_fraction


def test_an_sql_release_records_its_sql_and_its_post_processed_table() -> None:
    s = dp.Session(_people(), budget=dp.PureDP(2.0), rng=3)
    sql = "SELECT town, COUNT(*) AS n FROM data GROUP BY town ORDER BY n DESC LIMIT 2"
    rel = s.sql(sql, epsilon=1.0, keys={"town": ["Ash", "Birch", "Cedar"]}, measure=True)
    assert rel.record["query"] == {"language": "sql", "text": sql}
    assert rel.record["table"]["rows"] == [list(r) for r in rel.frame.iter_rows()]
    assert len(rel.record["table"]["rows"]) == 2
    assert rel.record["label"] == "Session.sql: " + sql


def test_the_ledger_keeps_the_record_the_release_returns(tmp_path: Path) -> None:
    ledger = tmp_path / "b.sqlite"
    acct = dp.Accountant(dp.PureDP(2.0), ledger=ledger)
    s = dp.Session(_people(), accountant=acct, rng=3)
    rel = s.query().group_by("town", keys=["Ash"]).agg(dp.count()).measure(epsilon=0.5)
    acct.close()
    with dp.Accountant.open(ledger) as again:
        assert again.records() == {1: rel.record}
        assert again.history[0].events == (ev.Approx(epsilon=0.5),)


def test_a_ledger_that_cannot_keep_the_record_loses_the_record_not_the_release(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    s = dp.Session(_people(), budget=dp.PureDP(2.0), rng=3)

    def broken(self: Any, index: int, record: Any) -> None:
        raise LedgerError("ledger 'x': disk I/O error")

    monkeypatch.setattr(dp.Accountant, "attach_record", broken)
    with pytest.warns(RuntimeWarning, match="could not keep its record"):
        rel = s.query().group_by("town", keys=["Ash"]).agg(dp.count()).measure(epsilon=0.5)
    assert rel.frame.height == 1 and s.records[0] == rel.record


def test_released_values_read_exactly() -> None:
    assert exact(0.1) == "0.1" and exact(1 / 3) == repr(1 / 3) and exact(12) == "12"
    assert exact(None) == "null" and exact(True) == "true" and exact("Ash") == "Ash"


def test_pandas_and_date_keys_are_recorded_as_released() -> None:
    import datetime

    import pandas as pd

    s = dp.Session(_people().to_pandas(), budget=dp.PureDP(2.0), rng=3)
    rel = s.query().group_by("town", keys=["Ash", "Dale"]).agg(dp.count()).measure(epsilon=1)
    assert isinstance(rel.frame, pd.DataFrame)
    rows = rel.record["table"]["rows"]  # type: ignore[index]
    assert rows == [list(r) for r in rel.frame.itertuples(index=False)]
    days = [datetime.date(2024, 1, 1 + i % 3) for i in range(90)]
    s = dp.Session(pl.DataFrame({"day": days}), budget=dp.PureDP(2.0), rng=3)
    rel = s.query().group_by("day", keys=days[:2]).agg(dp.count()).measure(epsilon=1)
    rows = rel.record["table"]["rows"]  # type: ignore[index]
    assert [r[0] for r in rows] == ["2024-01-01", "2024-01-02"]
    assert json.loads(json.dumps(rel.record, allow_nan=False)) == rel.record
