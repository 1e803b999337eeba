"""Neighbour relations in the accountant and the ledger."""

from __future__ import annotations

import json
import math
import sqlite3
import threading
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dpkit as dp
from dpkit import ZCDP, Accountant, ApproxDP, LedgerError, ParameterError, PureDP
from dpkit.accounting.accountant import replace_one_cost
from dpkit.cli.main import main


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "budget.sqlite"


# -- the rule -----------------------------------------------------------------------------


def test_replace_one_spend_against_add_remove_budget_is_refused() -> None:
    acct = Accountant(PureDP(1.0))
    assert acct.relation == "unbounded"
    with pytest.raises(ParameterError, match="replace-one DP does not imply add/remove DP"):
        acct.spend(PureDP(0.1), label="saa", relation="bounded")
    assert acct.history == () and acct.spent == PureDP(0.0)


@pytest.mark.parametrize(
    ("budget", "cost", "charge", "same"),
    [
        (PureDP(1.0), PureDP(0.25), PureDP(0.5), PureDP(0.25)),
        (ZCDP(1.0), ZCDP(0.125), ZCDP(0.5), ZCDP(0.125)),
        # 2 eps = 0.5, then eps^2 / 2 (Bun-Steinke); stated replace-one: 0.25^2 / 2
        (ZCDP(1.0), PureDP(0.25), ZCDP(0.125), ZCDP(0.03125)),
        (ApproxDP(1.0, 1e-5), PureDP(0.25), ApproxDP(0.5, 0.0), ApproxDP(0.25, 0.0)),
    ],
)
def test_add_remove_spend_against_replace_one_budget_is_converted(
    budget: object, cost: object, charge: object, same: object
) -> None:
    acct = Accountant(budget, relation="bounded")  # type: ignore[arg-type]
    spent = acct.spend(cost, label="lap")  # type: ignore[arg-type]
    assert spent.relation == "unbounded" and spent.cost == cost
    assert spent.charge == charge
    # the same cost stated under replace-one is charged as is
    acct = Accountant(budget, relation="bounded")  # type: ignore[arg-type]
    assert acct.spend(cost, label="x", relation="bounded").charge == same  # type: ignore[arg-type]


def test_group_privacy_factor_is_exactly_two() -> None:
    # PureDP(0.5) under add/remove costs exactly 1.0 under replace-one: it fits a budget of
    # 1.0 with nothing to spare (a factor 1.8 would leave 0.1; a factor 2.2 would not fit)
    acct = Accountant(PureDP(1.0), relation="bounded")
    acct.spend(PureDP(0.5), label="a")
    assert acct.remaining == PureDP(0.0)
    with pytest.raises(dp.BudgetExceededError):
        acct.spend(PureDP(2.0**-40), label="b")


def test_approx_conversion_delta_is_group_privacy_and_never_below_it() -> None:
    eps, delta = 0.7, 1e-6
    out = replace_one_cost(ApproxDP(eps, delta))
    assert isinstance(out, ApproxDP) and out.epsilon == 2 * eps
    exact = Fraction(delta) * (1 + Fraction(math.exp(eps)))
    assert Fraction(out.delta) >= exact
    assert out.delta == pytest.approx(float(exact), rel=1e-12)  # not 2 e^eps delta either
    acct = Accountant(ApproxDP(2.0, 1e-5), relation="bounded")
    assert acct.spend(ApproxDP(eps, delta), label="g").charge == out
    with pytest.raises(ParameterError, match="no guarantee"):
        replace_one_cost(ApproxDP(1.0, 0.5))


def test_zcdp_spend_converted_then_turned_into_epsilon_delta() -> None:
    acct = Accountant(ApproxDP(5.0, 1e-5), relation="bounded", zcdp_delta=1e-7)
    charge = acct.spend(ZCDP(0.01), label="dg").charge
    assert charge == dp.zcdp_to_approx(ZCDP(0.04), 1e-7)


def test_relation_is_validated() -> None:
    with pytest.raises(ParameterError, match="relation"):
        Accountant(PureDP(1.0), relation="replace")
    with pytest.raises(TypeError, match="relation"):
        Accountant(PureDP(1.0), relation=None)  # type: ignore[arg-type]
    acct = Accountant(PureDP(1.0))
    with pytest.raises(TypeError, match="relation"):
        acct.spend(PureDP(0.1), label="x", relation=True)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="relation"):
        acct.spend(PureDP(0.1), label="x", relation="both")
    assert acct.history == ()


def test_labelled_view_passes_the_relation_and_summary_shows_it() -> None:
    acct = Accountant(PureDP(2.0), relation="bounded")
    acct.labelled("ages").spend(PureDP(0.25), label="Laplace")
    acct.spend(PureDP(0.25), label="saa", relation="bounded")
    assert [s.relation for s in acct.history] == ["unbounded", "bounded"]
    text = acct.summary()
    assert "relation   bounded (replace one record" in text
    assert "unbounded" in text.splitlines()[4] and "PureDP(epsilon=0.5)" in text
    assert "relation='bounded'" in repr(acct)


# -- mechanisms and frameworks report and pass their relation -------------------------------


def test_mechanisms_report_their_relation() -> None:
    assert dp.Laplace(1.0).measure(1.0, rng=0).relation == "unbounded"
    rel = dp.Gaussian(1.0, 1e-6, relation="bounded").measure(1.0, rng=0)
    assert rel.relation == "bounded"
    assert dp.Geometric(1.0, relation="bounded").measure(3, rng=0).relation == "bounded"
    with pytest.raises(ParameterError, match="relation"):
        dp.Laplace(1.0, relation="add")
    with pytest.raises(TypeError, match="relation"):
        dp.Exponential(1.0, relation=2)  # type: ignore[arg-type]
    acct = Accountant(PureDP(1.0))
    with pytest.raises(ParameterError, match="replace-one"):
        dp.Laplace(0.5, relation="bounded").release(1.0, rng=0, accountant=acct)
    assert acct.spent == PureDP(0.0)


def test_frameworks_report_and_spend_their_relation() -> None:
    x = np.arange(20.0, 70.0).repeat(4)
    acct = Accountant(PureDP(10.0), relation="bounded")
    ptr = dp.propose_test_release(
        x, "median", 5.0, epsilon=1.0, delta=1e-6, bounds=(0, 100), relation="bounded", rng=0
    )
    assert ptr.relation == "bounded"
    smooth = dp.smooth_sensitivity_release(
        x, "median", epsilon=1.0, bounds=(0, 100), noise="cauchy", rng=0, accountant=acct
    )
    assert smooth.relation == "unbounded"
    saa = dp.sample_and_aggregate(
        x, "mean", chunks=10, output_bounds=(0, 100), epsilon=1.0, rng=0, accountant=acct
    )
    assert saa.relation == "bounded"
    inv = dp.inverse_sensitivity(x, "median", epsilon=1.0, bounds=(0, 100), rng=0)
    assert inv.relation == "unbounded"
    assert [s.relation for s in acct.history] == ["unbounded", "bounded"]
    assert [s.charge for s in acct.history] == [PureDP(2.0), PureDP(1.0)]
    # sample-and-aggregate is replace-one only: an add/remove budget refuses it
    with pytest.raises(ParameterError, match="replace-one"):
        dp.sample_and_aggregate(
            x,
            "mean",
            chunks=10,
            output_bounds=(0, 100),
            epsilon=1.0,
            accountant=Accountant(PureDP(1.0)),
        )


# -- the ledger -----------------------------------------------------------------------------


def test_ledger_keeps_relations(path: Path) -> None:
    with Accountant(PureDP(1.0), relation="bounded", ledger=path) as acct:
        acct.spend(PureDP(0.25), label="lap")
        acct.spend(PureDP(0.25), label="saa", relation="bounded")
    with Accountant.open(path) as acct:
        assert acct.relation == "bounded"
        assert [(s.relation, s.charge) for s in acct.history] == [
            ("unbounded", PureDP(0.5)),
            ("bounded", PureDP(0.25)),
        ]
    with pytest.raises(LedgerError, match="relation='bounded'"):
        Accountant(PureDP(1.0), ledger=path)  # default relation: unbounded, a mismatch
    with Accountant(PureDP(1.0), relation="bounded", ledger=path) as acct:
        assert acct.remaining == PureDP(0.25)


def _v1_ledger(path: Path) -> None:
    """A ledger as dpkit wrote it before relations were recorded (schema version 1)."""
    con = sqlite3.connect(path)
    con.executescript(
        "CREATE TABLE dpkit_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
        "CREATE TABLE spends (id INTEGER PRIMARY KEY AUTOINCREMENT, label TEXT NOT NULL, "
        "cost TEXT NOT NULL, charge_a TEXT NOT NULL, charge_b TEXT NOT NULL, "
        "created TEXT NOT NULL, pid INTEGER NOT NULL);"
        "CREATE TABLE totals (id INTEGER PRIMARY KEY CHECK (id = 1), a TEXT NOT NULL, "
        "b TEXT NOT NULL, n INTEGER NOT NULL);"
    )
    meta = {
        "format": "dpkit-ledger",
        "version": "1",
        "budget": json.dumps({"type": "PureDP", "epsilon": 1.0}),
        "created": "2026-01-01T00:00:00+00:00",
    }
    con.executemany("INSERT INTO dpkit_meta VALUES (?, ?)", meta.items())
    con.execute(
        "INSERT INTO spends (label, cost, charge_a, charge_b, created, pid) VALUES "
        "('old count', ?, '1/4', '0/1', '2026-01-01T00:00:01+00:00', 1)",
        (json.dumps({"type": "PureDP", "epsilon": 0.25}),),
    )
    con.execute("INSERT INTO totals VALUES (1, '1/4', '0/1', 1)")
    con.commit()
    con.close()


def test_version_1_ledger_is_migrated_as_add_remove(path: Path) -> None:
    _v1_ledger(path)
    with Accountant.open(path) as acct:
        assert acct.relation == "unbounded" and acct.budget == PureDP(1.0)
        (old,) = acct.history
        assert (old.label, old.relation, old.charge) == ("old count", "unbounded", PureDP(0.25))
        acct.spend(PureDP(0.25), label="new")
        with pytest.raises(ParameterError, match="replace-one"):
            acct.spend(PureDP(0.25), label="saa", relation="bounded")
    con = sqlite3.connect(path)
    meta = dict(con.execute("SELECT key, value FROM dpkit_meta").fetchall())
    rels = [r[0] for r in con.execute("SELECT relation FROM spends ORDER BY id")]
    con.close()
    assert (meta["version"], meta["relation"], rels) == ("3", "unbounded", ["unbounded"] * 2)
    with Accountant(PureDP(1.0), ledger=path) as acct:
        assert acct.remaining == PureDP(0.5)


def test_version_1_ledger_migrates_once_under_concurrent_openers(path: Path) -> None:
    _v1_ledger(path)
    errors: list[BaseException] = []
    barrier = threading.Barrier(8)

    def open_and_spend() -> None:
        try:
            barrier.wait()
            with Accountant.open(path) as acct:
                acct.spend(PureDP(0.0625), label="t")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=open_and_spend) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with Accountant.open(path) as acct:
        assert len(acct.history) == 9 and acct.remaining == PureDP(0.25)


class _BusySwitch:
    """A connection whose first ``failures`` switches to WAL say "database is locked".

    That is what SQLite answers, at once and without its busy handler, when several openers
    of an old ledger race (seen as a flaky failure of the concurrent-openers test above, about
    one run in ten): the switch needs the database to itself.
    """

    def __init__(self, conn: sqlite3.Connection, failures: float) -> None:
        self._conn = conn
        self.failures = failures
        self.attempts = 0

    def execute(self, sql: str, *args: object) -> sqlite3.Cursor:
        if sql.replace(" ", "").upper() == "PRAGMAJOURNAL_MODE=WAL":
            self.attempts += 1
            if self.attempts <= self.failures:
                raise sqlite3.OperationalError("database is locked")
        return self._conn.execute(sql, *args)

    def __getattr__(self, name: str) -> object:
        return getattr(self._conn, name)


def _busy_connections(monkeypatch: pytest.MonkeyPatch, failures: float) -> list[_BusySwitch]:
    from dpkit.accounting import _ledger

    made: list[_BusySwitch] = []
    real = _ledger._connect

    def connect(path: Path, timeout: float, *, must_exist: bool) -> Any:
        made.append(_BusySwitch(real(path, timeout, must_exist=must_exist), failures))
        return made[-1]

    monkeypatch.setattr(_ledger, "_connect", connect)
    return made


def test_version_1_ledger_waits_out_a_busy_switch_to_wal(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # contention, not corruption: retried within the busy timeout, then the ledger opens
    _v1_ledger(path)
    made = _busy_connections(monkeypatch, failures=3)
    with Accountant.open(path) as acct:
        acct.spend(PureDP(0.0625), label="t")
        assert acct.relation == "unbounded" and len(acct.history) == 2
    assert made[0].attempts == 4
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    con.close()


def test_version_1_ledger_busy_past_the_timeout_is_a_ledger_error(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _v1_ledger(path)
    made = _busy_connections(monkeypatch, failures=math.inf)
    with pytest.raises(LedgerError, match="locked"):
        Accountant.open(path, busy_timeout=0.2)
    assert made[0].attempts > 1


def test_read_only_version_1_ledger_is_read_as_add_remove(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a ledger that cannot be written stays at version 1: read it, every relation unbounded
    from dpkit.accounting import _ledger

    _v1_ledger(path)

    def cannot_write(self: _ledger.SQLiteStore, conn: sqlite3.Connection) -> None:
        self._legacy = True

    monkeypatch.setattr(_ledger.SQLiteStore, "_migrate", cannot_write)
    with Accountant.open(path) as acct:
        assert acct.relation == "unbounded"
        assert [s.relation for s in acct.history] == ["unbounded"]
        assert "old count" in acct.summary()


def test_corrupt_relation_is_a_ledger_error(path: Path) -> None:
    Accountant(PureDP(1.0), ledger=path).close()
    con = sqlite3.connect(path)
    con.execute("UPDATE dpkit_meta SET value = 'sideways' WHERE key = 'relation'")
    con.commit()
    con.close()
    with pytest.raises(LedgerError, match="relation"):
        Accountant.open(path)


def test_cli_budget_relation(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["budget", "init", str(path), "--epsilon", "1", "--relation", "bounded"]) == 0
    assert "relation 'bounded'" in capsys.readouterr().out
    with Accountant.open(path) as acct:
        acct.spend(PureDP(0.25), label="count")
    assert main(["budget", "show", str(path)]) == 0
    out = capsys.readouterr().out
    assert "relation   bounded" in out and "unbounded" in out and "PureDP(epsilon=0.5)" in out
    assert main(["budget", "show", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["relation"] == "bounded"
    assert data["spends"][0]["relation"] == "unbounded"
    assert data["spends"][0]["charge"] == {"type": "PureDP", "epsilon": 0.5}
