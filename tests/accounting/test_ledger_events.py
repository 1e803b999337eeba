"""What the ledger keeps beside each spend: the release's privacy events and its record; and
older ledgers (a copy of one written at schema version 2, tests/accounting/data) opening and
reading as before."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from dpkit import Accountant, ApproxDP, LedgerError, ParameterError, PureDP
from dpkit.accounting import _ledger
from dpkit.accounting import events as ev

DATA = Path(__file__).parent / "data"
#: a ledger written by dpkit at schema version 2: budget ApproxDP(1, 1e-6), three spends
#: (a Session count by Sex, a Session count by Education with private keys, a Laplace)
V2 = DATA / "ledger-v2.sqlite"

EVENTS = (
    ev.Laplace(scale=4.0, sensitivity=2.0, discrete=True),
    ev.Gaussian(sigma=3.5),
    ev.Exponential(epsilon=0.25),
    ev.SubsampledGaussian(sigma=1.1, rate=0.01),
    ev.SubsampledLaplace(scale=2.0, rate=0.5),
    ev.RandomizedResponse(epsilon=1.0, categories=3),
    ev.KeySelection(delta=1e-9),
    ev.Approx(epsilon=0.1, delta=1e-8),
    ev.Zcdp(rho=0.0625),
)


@pytest.fixture(params=["memory", "ledger"])
def acct(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    ledger = None if request.param == "memory" else tmp_path / "b.sqlite"
    with Accountant(ApproxDP(4.0, 1e-5), ledger=ledger) as a:
        yield a


def _v2_copy(tmp_path: Path) -> Path:
    path = tmp_path / "old.sqlite"
    shutil.copyfile(V2, path)
    return path


def _meta(path: Path) -> dict[str, str]:
    con = sqlite3.connect(path)
    try:
        return dict(con.execute("SELECT key, value FROM dpkit_meta").fetchall())
    finally:
        con.close()


def test_every_event_kind_is_kept_with_its_spend(acct: Any) -> None:
    spend = acct.spend(PureDP(0.5), label="described", events=EVENTS)
    plain = acct.spend(PureDP(0.25), label="undescribed")
    assert spend.events == EVENTS and plain.events == ()
    assert [s.events for s in acct.history] == [EVENTS, ()]
    if acct.ledger is not None:  # and read back from the file, by a new accountant
        with Accountant.open(acct.ledger) as again:
            assert [s.events for s in again.history] == [EVENTS, ()]


def test_events_must_be_descriptors(acct: Any) -> None:
    with pytest.raises(TypeError, match=r"events\[1\]"):
        acct.spend(PureDP(0.5), label="x", events=[ev.Zcdp(rho=0.1), PureDP(0.5)])
    with pytest.raises(TypeError, match="list of"):
        acct.spend(PureDP(0.5), label="x", events=ev.Zcdp(rho=0.1))
    assert acct.history == ()  # nothing was spent


def test_a_record_is_kept_once_beside_its_spend(acct: Any) -> None:
    first = acct.spend(PureDP(0.5), label="a")
    second = acct.spend(PureDP(0.5), label="b")
    record = {"label": "a", "table": {"rows": [[1, 2.5, "x", None]]}}
    acct.attach_record(first.index, record)
    assert acct.records() == {first.index: record}
    with pytest.raises(ParameterError, match="written once"):
        acct.attach_record(first.index, {"other": 1})
    with pytest.raises(LedgerError, match="no spend"):
        acct.attach_record(second.index + 5, record)
    with pytest.raises(TypeError, match="not JSON"):
        acct.attach_record(second.index, {"x": float("nan")})
    with pytest.raises(TypeError, match="mapping"):
        acct.attach_record(second.index, [1, 2])  # type: ignore[arg-type]
    assert acct.records() == {first.index: record}
    if acct.ledger is not None:
        with Accountant.open(acct.ledger) as again:
            assert again.records() == {first.index: record}


def test_a_labelled_view_passes_events_on(acct: Any) -> None:
    spend = acct.labelled("team").spend(PureDP(0.5), label="q", events=[ev.Zcdp(rho=0.1)])
    assert spend.label == "team: q" and spend.events == (ev.Zcdp(rho=0.1),)


def test_version_2_ledger_opens_reads_as_before_and_migrates(tmp_path: Path) -> None:
    path = _v2_copy(tmp_path)
    assert _meta(path)["version"] == "2"
    with Accountant.open(path) as acct:
        assert acct.budget == ApproxDP(1.0, 1e-6) and acct.relation == "unbounded"
        assert acct.composition == "basic"  # a ledger that stored none adds its spends
        old = acct.history
        assert [(s.index, s.label, s.cost) for s in old] == [
            (1, "Session query: count by Sex", PureDP(0.25)),
            (2, "Session query: count by Education", ApproxDP(0.25, 1e-7)),
            (3, "Laplace", PureDP(0.125)),
        ]
        assert [s.events for s in old] == [(), (), ()]
        assert acct.records() == {}
        assert acct.spent == ApproxDP(0.625, 1e-7)
        # the migrated ledger takes new spends with their events and records
        new = acct.spend(PureDP(0.125), label="new", events=[ev.Approx(epsilon=0.125)])
        acct.attach_record(new.index, {"label": "new"})
    assert _meta(path)["version"] == _ledger.VERSION == "3"
    with Accountant.open(path) as acct:
        assert acct.composition == "basic"
        assert [s.label for s in acct.history][:3] == [s.label for s in old]
        assert acct.history[-1].events == (ev.Approx(epsilon=0.125),)
        assert acct.records() == {4: {"label": "new"}}


def test_version_2_ledger_migrates_once_under_concurrent_openers(tmp_path: Path) -> None:
    import threading

    path = _v2_copy(tmp_path)
    errors: list[BaseException] = []
    barrier = threading.Barrier(6)

    def open_and_spend() -> None:
        try:
            barrier.wait()
            with Accountant.open(path) as acct:
                acct.spend(PureDP(0.0625), label="t", events=[ev.Approx(epsilon=0.0625)])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=open_and_spend) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with Accountant.open(path) as acct:
        assert len(acct.history) == 9
        assert sum(1 for s in acct.history if s.events) == 6


def test_read_only_version_2_ledger_is_read_as_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _v2_copy(tmp_path)

    def cannot_write(self: _ledger.SQLiteStore, conn: sqlite3.Connection) -> None:
        self._legacy = True

    monkeypatch.setattr(_ledger.SQLiteStore, "_migrate", cannot_write)
    with Accountant.open(path) as acct:
        assert [s.label for s in acct.history][-1] == "Laplace"
        assert [s.events for s in acct.history] == [(), (), ()]
        assert acct.records() == {}
        with pytest.raises(LedgerError, match="read-only at version 2"):
            acct.attach_record(1, {"x": 1})
    assert _meta(path)["version"] == "2"


def test_corrupt_events_are_a_ledger_error(tmp_path: Path) -> None:
    path = tmp_path / "b.sqlite"
    with Accountant(PureDP(1.0), ledger=path) as acct:
        acct.spend(PureDP(0.5), label="a", events=[ev.Approx(epsilon=0.5)])
    for bad in ("not json", json.dumps([{"type": "Nope"}]), json.dumps([{"type": "Zcdp"}])):
        con = sqlite3.connect(path)
        con.execute("UPDATE spends SET events = ?", (bad,))
        con.commit()
        con.close()
        with pytest.raises(LedgerError, match="corrupt"):
            Accountant.open(path)


def test_corrupt_record_is_a_ledger_error(tmp_path: Path) -> None:
    path = tmp_path / "b.sqlite"
    with Accountant(PureDP(1.0), ledger=path) as acct:
        acct.spend(PureDP(0.5), label="a")
    con = sqlite3.connect(path)
    con.execute("UPDATE spends SET record = '{broken'")
    con.commit()
    con.close()
    with Accountant.open(path) as acct, pytest.raises(LedgerError, match="record of spend #1"):
        acct.records()
