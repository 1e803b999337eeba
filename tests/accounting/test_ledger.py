"""The durable SQLite ledger: persistence, budget mismatch, corrupt files, locking errors."""

from __future__ import annotations

import os
import pickle
import random
import sqlite3
import tempfile
import threading
import warnings
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpkit as dp
from dpkit import (
    ZCDP,
    Accountant,
    ApproxDP,
    BudgetExceededError,
    LedgerError,
    ParameterError,
    PureDP,
    sequential_composition,
    zcdp_to_approx,
)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "budget.sqlite"


def test_spends_survive_reopening(path: Path) -> None:
    with Accountant(ApproxDP(1.0, 1e-6), ledger=path, zcdp_delta=1e-7, composition="basic") as acct:
        acct.spend(PureDP(0.1), label="count")
        acct.spend(ApproxDP(0.2, 1e-7), label="gauss")
        acct.spend(ZCDP(0.001), label="discrete gauss")
        first = acct.history
    assert path.exists()
    with Accountant(ApproxDP(1.0, 1e-6), ledger=path) as again:
        hist = again.history
        assert [(s.index, s.label, s.cost, s.charge) for s in hist] == [
            (s.index, s.label, s.cost, s.charge) for s in first
        ]
        assert [s.timestamp for s in hist] == [s.timestamp for s in first]
        assert hist[2].charge == zcdp_to_approx(ZCDP(0.001), 1e-7)
        assert again.spent == sequential_composition([s.charge for s in hist])
    with Accountant.open(path) as opened:
        assert opened.budget == ApproxDP(1.0, 1e-6)
        assert len(opened.history) == 3


def test_exact_totals_persist_across_processes_of_opening(path: Path) -> None:
    # the ten-tenths edge holds through the ledger too: totals are stored as exact rationals
    for i in range(9):
        with Accountant(PureDP(1.0), ledger=path) as acct:
            acct.spend(PureDP(0.1), label=f"q{i}")
    with Accountant(PureDP(1.0), ledger=path) as acct:
        with pytest.raises(BudgetExceededError):
            acct.spend(PureDP(0.1), label="q9")
        acct.spend(acct.remaining, label="rest")
        assert acct.remaining == PureDP(0.0)
    con = sqlite3.connect(path)
    try:
        a, n = con.execute("SELECT a, n FROM totals").fetchone()
    finally:
        con.close()
    assert n == 10
    num, den = map(int, a.split("/"))
    assert num <= den  # exact total <= 1


def test_open_never_creates(path: Path) -> None:
    with pytest.raises(LedgerError, match="no ledger at"):
        Accountant.open(path)
    assert not path.exists()


def test_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(LedgerError, match="does not exist"):
        Accountant(PureDP(1.0), ledger=tmp_path / "nope" / "b.sqlite")


def test_create_refuses_existing(path: Path) -> None:
    Accountant.create(path, PureDP(1.0)).close()
    with pytest.raises(LedgerError, match="already exists"):
        Accountant.create(path, PureDP(1.0))


@pytest.mark.parametrize("other", [PureDP(2.0), ApproxDP(1.0, 0.0), ZCDP(1.0)])
def test_budget_mismatch_is_an_error_not_a_reset(path: Path, other: object) -> None:
    with Accountant(PureDP(1.0), ledger=path) as acct:
        acct.spend(PureDP(0.5), label="first")
    before = path.read_bytes()
    with pytest.raises(LedgerError, match=r"was created with budget PureDP\(epsilon=1.0\)"):
        Accountant(other, ledger=path)  # type: ignore[arg-type]
    with Accountant.open(path) as acct:
        assert acct.spent == PureDP(0.5)
        assert len(acct.history) == 1
    assert path.read_bytes()[:100] == before[:100]


def test_garbage_file_is_refused_and_left_alone(path: Path) -> None:
    junk = b"this is not a database " * 200
    path.write_bytes(junk)
    with pytest.raises(LedgerError, match="corrupt"):
        Accountant(PureDP(1.0), ledger=path)
    assert path.read_bytes() == junk


def test_empty_file_is_not_silently_initialised(path: Path) -> None:
    path.write_bytes(b"")
    with pytest.raises(LedgerError, match="not a dpkit ledger"):
        Accountant(PureDP(1.0), ledger=path)
    assert path.read_bytes() == b""


def test_other_sqlite_database_is_refused(path: Path) -> None:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE customers (name TEXT)")
    con.commit()
    con.close()
    with pytest.raises(LedgerError, match="not a dpkit ledger"):
        Accountant(PureDP(1.0), ledger=path)


def test_truncated_ledger_is_refused(path: Path) -> None:
    with Accountant(PureDP(100.0), ledger=path) as acct:
        for i in range(40):  # long labels: enough data to span several pages
            acct.spend(PureDP(0.01), label=f"a long label number {i:05d} " * 40)
    data = path.read_bytes()
    assert len(data) > 3 * 4096
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(LedgerError, match="corrupt"):
        Accountant.open(path)


def test_tampered_totals_are_detected(path: Path) -> None:
    with Accountant(PureDP(1.0), ledger=path) as acct:
        acct.spend(PureDP(0.5), label="a")
    con = sqlite3.connect(path)
    con.execute("UPDATE totals SET a = '0/1'")  # someone tries to refund the budget
    con.commit()
    con.close()
    with pytest.raises(LedgerError, match="inconsistent"):
        Accountant.open(path)


def test_tampered_charge_is_detected(path: Path) -> None:
    with Accountant(PureDP(1.0), ledger=path) as acct:
        acct.spend(PureDP(0.5), label="a")
    con = sqlite3.connect(path)
    con.execute("UPDATE spends SET charge_a = 'half'")
    con.commit()
    con.close()
    with pytest.raises(LedgerError, match="corrupt: not an exact rational"):
        Accountant.open(path)


def test_wrong_format_version(path: Path) -> None:
    Accountant.create(path, PureDP(1.0)).close()
    con = sqlite3.connect(path)
    con.execute("UPDATE dpkit_meta SET value = '99' WHERE key = 'version'")
    con.commit()
    con.close()
    with pytest.raises(LedgerError, match="version '99'"):
        Accountant.open(path)


_AS_ROOT = os.name != "posix" or os.geteuid() == 0


@pytest.mark.skipif(_AS_ROOT, reason="root reads anything")
def test_unreadable_file(path: Path) -> None:
    """A healthy ledger the user may not read is said to be so, never called corrupt."""
    Accountant.create(path, PureDP(1.0)).close()
    path.chmod(0)
    try:
        with pytest.raises(LedgerError, match="cannot be read: permission denied") as err:
            Accountant.open(path)
        assert "corrupt" not in str(err.value)
    finally:
        path.chmod(0o600)


@pytest.mark.skipif(_AS_ROOT, reason="root writes anything")
def test_ledger_in_a_read_only_folder(tmp_path: Path) -> None:
    """SQLite needs the ledger's folder writable even to read it (its -wal and -shm files):
    the error says so, never "corrupt"."""
    folder = tmp_path / "ro"
    folder.mkdir()
    path = folder / "budget.sqlite"
    with Accountant(PureDP(1.0), ledger=path) as acct:
        acct.spend(PureDP(0.25), label="before")
    folder.chmod(0o555)
    try:
        with pytest.raises(LedgerError, match="is in a read-only folder") as err:
            Accountant.open(path)
        assert "corrupt" not in str(err.value)
    finally:
        folder.chmod(0o755)
    with Accountant.open(path) as acct:  # the ledger was healthy all along
        assert acct.spent == PureDP(0.25)


@pytest.mark.skipif(_AS_ROOT, reason="root writes anything")
def test_read_only_ledger_file_refuses_the_spend_saying_why(path: Path) -> None:
    with Accountant(PureDP(1.0), ledger=path) as acct:
        acct.spend(PureDP(0.25), label="before")
    path.chmod(0o444)
    try:
        with Accountant.open(path) as acct:  # reading works: the folder is writable
            assert acct.spent == PureDP(0.25)
            with pytest.raises(LedgerError, match=r"read-only.*nothing was spent") as err:
                acct.spend(PureDP(0.25), label="refused")
        assert "corrupt" not in str(err.value)
    finally:
        path.chmod(0o644)
    with Accountant.open(path) as acct:
        assert [s.label for s in acct.history] == ["before"]


def _sqlite_error(name: str) -> sqlite3.OperationalError:
    """An error as SQLite raises it, with its result code (``sqlite_errorcode``)."""
    exc = sqlite3.OperationalError(f"SQLite says {name}")
    exc.sqlite_errorcode = getattr(sqlite3, name)  # type: ignore[attr-defined]
    exc.sqlite_errorname = name  # type: ignore[attr-defined]
    return exc


@pytest.mark.parametrize(
    ("name", "words"),
    [
        # what an unprivileged user meets: a read-only folder, a read-only file, a file
        # SQLite cannot open (the last with an extended code, classified by its low byte)
        ("SQLITE_READONLY_DIRECTORY", "is in a read-only folder"),
        ("SQLITE_READONLY", "is read-only here"),
        ("SQLITE_READONLY_CANTLOCK", "is read-only here"),
        ("SQLITE_CANTOPEN", "cannot be opened"),
        ("SQLITE_PERM", "cannot be opened"),
        ("SQLITE_CANTOPEN_ISDIR", "cannot be opened"),
        ("SQLITE_BUSY", "is busy"),
        ("SQLITE_IOERR", "SQLite says SQLITE_IOERR"),
    ],
)
def test_access_errors_are_never_called_corruption(
    path: Path, monkeypatch: pytest.MonkeyPatch, name: str, words: str
) -> None:
    """The classification runs as root too: SQLite refusing to open a healthy ledger (as an
    unprivileged user meets it, see the tests above) is said as what it is."""
    Accountant.create(path, PureDP(1.0)).close()

    def refuse(*args: object, **kwargs: object) -> None:
        raise _sqlite_error(name)

    monkeypatch.setattr(sqlite3, "connect", refuse)
    with pytest.raises(LedgerError, match=words) as err:
        Accountant.open(path)
    assert "corrupt" not in str(err.value) and str(path) in str(err.value)


@pytest.mark.parametrize("name", ["SQLITE_CORRUPT", "SQLITE_NOTADB"])
def test_damaged_content_is_corruption(
    path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    Accountant.create(path, PureDP(1.0)).close()

    def refuse(*args: object, **kwargs: object) -> None:
        raise _sqlite_error(name)

    monkeypatch.setattr(sqlite3, "connect", refuse)
    with pytest.raises(LedgerError, match="is corrupt"):
        Accountant.open(path)


def test_directory_is_not_a_ledger(tmp_path: Path) -> None:
    with pytest.raises(LedgerError, match="is a directory"):
        Accountant(PureDP(1.0), ledger=tmp_path)


def test_busy_ledger_fails_without_spending(path: Path) -> None:
    Accountant.create(path, PureDP(1.0)).close()
    blocker = sqlite3.connect(path, isolation_level=None)
    try:
        blocker.execute("BEGIN IMMEDIATE")  # another writer holds the lock
        with Accountant(PureDP(1.0), ledger=path, busy_timeout=0.2) as acct:
            with pytest.raises(LedgerError, match="busy"):
                acct.spend(PureDP(0.1), label="blocked")
            blocker.execute("ROLLBACK")
            assert acct.history == ()
            acct.spend(PureDP(0.1), label="now")
            assert len(acct.history) == 1
    finally:
        blocker.close()


def test_closed_accountant_refuses_to_spend(path: Path) -> None:
    acct = Accountant(PureDP(1.0), ledger=path)
    acct.close()
    with pytest.raises(LedgerError, match="closed"):
        acct.spend(PureDP(0.1), label="late")
    acct.close()  # idempotent


def test_pickled_accountant_shares_the_ledger(path: Path) -> None:
    with Accountant(PureDP(1.0), ledger=path) as acct:
        copy = pickle.loads(pickle.dumps(acct))
        try:
            copy.spend(PureDP(0.75), label="from the copy")
            with pytest.raises(BudgetExceededError):
                acct.spend(PureDP(0.5), label="from the original")
            assert acct.spent == PureDP(0.75)
        finally:
            copy.close()


def test_racing_creators_agree_on_one_ledger(tmp_path: Path) -> None:
    path = tmp_path / "race.sqlite"
    budgets = [PureDP(1.0)] * 4 + [PureDP(2.0)] * 4
    outcome: list[object] = [None] * 8
    gate = threading.Barrier(8)

    def create(k: int) -> None:
        gate.wait()
        try:
            acct = Accountant(budgets[k], ledger=path)
        except LedgerError as err:
            outcome[k] = err
        else:
            outcome[k] = acct.budget
            acct.close()

    threads = [threading.Thread(target=create, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with Accountant.open(path) as acct:
        winner = acct.budget
    for k in range(8):
        if budgets[k] == winner:
            assert outcome[k] == winner
        else:
            assert isinstance(outcome[k], LedgerError)
    # no temporary files are left behind
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(("-wal", "-shm"))) == [
        "race.sqlite"
    ]


@settings(max_examples=15, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.floats(min_value=0.0, max_value=0.6, allow_nan=False),
            st.sampled_from([0.0, 1e-7, 3e-7]),
        ),
        max_size=12,
    )
)
def test_ledger_decides_exactly_like_memory(costs: list[tuple[float, float]]) -> None:
    budget = ApproxDP(1.0, 1e-6)
    memory = Accountant(budget)
    with (
        tempfile.TemporaryDirectory() as tmp,
        Accountant(budget, ledger=Path(tmp) / "b.sqlite") as ledger,
    ):
        for i, (eps, delta) in enumerate(costs):
            cost = ApproxDP(eps, delta)
            outcomes = []
            for acct in (memory, ledger):
                try:
                    acct.spend(cost, label=f"q{i}")
                    outcomes.append(True)
                except BudgetExceededError as err:
                    outcomes.append(err.remaining)
            assert outcomes[0] == outcomes[1]
        assert ledger.spent == memory.spent
        assert ledger.remaining == memory.remaining
        assert [(s.label, s.cost) for s in ledger.history] == [
            (s.label, s.cost) for s in memory.history
        ]


def test_bad_options_never_create_a_file(path: Path) -> None:
    with pytest.raises(ParameterError, match="`zcdp_delta` only applies"):
        Accountant.create(path, PureDP(1.0), zcdp_delta=1e-6)
    with pytest.raises(ParameterError, match="`zcdp_delta`"):
        Accountant(ApproxDP(1.0, 1e-6), ledger=path, zcdp_delta=2.0)
    assert not path.exists()
    Accountant.create(path, ZCDP(1.0)).close()
    with pytest.raises(ParameterError, match="`zcdp_delta` only applies"):
        Accountant.open(path, zcdp_delta=1e-6)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_forked_child_opens_its_own_connection(path: Path) -> None:
    acct = Accountant(PureDP(1.0), ledger=path)
    try:
        acct.spend(PureDP(0.25), label="parent before")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # 3.12+: fork with threads
            pid = os.fork()
        if pid == 0:  # child: spend through the inherited object, then leave without cleanup
            code = 1
            try:
                acct.spend(PureDP(0.25), label="child")
                code = 0 if len(acct.history) == 2 else 3
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        # the parent's connection was left alone by the child and still works
        acct.spend(PureDP(0.25), label="parent after")
        assert [s.label for s in acct.history] == ["parent before", "child", "parent after"]
    finally:
        acct.close()


def _corrupt_copies(src: Path, count: int) -> list[Path]:
    raw = src.read_bytes()
    out = []
    for seed in range(count):
        rnd = random.Random(seed)  # test data, fixed seed
        data = bytearray(raw)
        for _ in range(rnd.randint(1, 8)):
            data[rnd.randrange(len(data))] = rnd.randrange(256)
        path = src.with_name(f"c{seed}.sqlite")
        path.write_bytes(bytes(data))
        out.append(path)
    return out


def test_every_ledger_failure_is_a_ledger_error(tmp_path: Path) -> None:
    # random byte corruptions of a ledger (a label, a timestamp, a PRAGMA's answer): every
    # failure to read or write it is a LedgerError, never a raw UnicodeDecodeError or ValueError
    src = tmp_path / "src.sqlite"
    acct = dp.Accountant.create(src, dp.ApproxDP(5.0, 1e-5))
    for i in range(5):
        acct.spend(dp.PureDP(0.1), label=f"q{i}é")
    acct.close()
    raw_errors = []
    for path in _corrupt_copies(src, 400):
        try:
            a = dp.Accountant.open(path)
            a.spend(dp.PureDP(0.1), label="x")
            _ = (a.history, a.remaining, a.summary())
            a.close()
        except (LedgerError, BudgetExceededError):
            pass
        except Exception as exc:
            raw_errors.append(f"{type(exc).__name__}: {exc}")
        for suffix in ("", "-wal", "-shm", "-journal"):
            p = Path(f"{path}{suffix}")
            if p.exists():
                os.unlink(p)
    assert raw_errors == []
