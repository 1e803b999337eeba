"""A shared ledger under 8 processes and 8 threads, and a child killed with SIGKILL.

Workers are fresh interpreters (``sys.executable -c``) importing dpkit from the installed
package, so nothing is inherited through ``fork``: the same situation as separate jobs
sharing one budget file.
"""

from __future__ import annotations

import math
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from fractions import Fraction
from pathlib import Path

import pytest

from dpkit import Accountant, BudgetExceededError, PureDP

# A cost that is not a power of two, so the exact edge matters: the budget 1.0 allows exactly
# floor(1 / Fraction(0.003)) spends of the float 0.003.
COST = 0.003
ALLOWED = math.floor(Fraction(1) / Fraction(COST))
ATTEMPTS = 500
WORKERS = 8

SPEND_LOOP = r"""
import os, sys, time
from dpkit import Accountant, BudgetExceededError, PureDP
path, name, gate = sys.argv[1], sys.argv[2], sys.argv[5]
attempts, cost = int(sys.argv[3]), float(sys.argv[4])
acct = Accountant(PureDP(1.0), ledger=path)
print("ready", flush=True)
while not os.path.exists(gate):
    time.sleep(0.005)
wins = 0
for i in range(attempts):
    try:
        acct.spend(PureDP(cost), label=f"{name}-{i}")
        wins += 1
    except BudgetExceededError:
        pass
acct.close()
print(wins, flush=True)
"""

RELEASE_LOOP = r"""
import os, sys
from dpkit import Accountant, PureDP
path, released = sys.argv[1], sys.argv[2]
acct = Accountant(PureDP(1000.0), ledger=path)
with open(released, "a") as out:
    i = 0
    while True:
        acct.spend(PureDP(2.0 ** -10), label=f"r{i}")
        # the release happens only after spend() returned; record it durably
        out.write(f"r{i}\n")
        out.flush()
        os.fsync(out.fileno())
        i += 1
"""


# Kill a child *inside* the transaction of its 5th spend: after the INSERT ran, before COMMIT.
# Per spend, the ledger formats four rationals (two for the INSERT, two for the UPDATE of the
# totals, evaluated after the INSERT executed), so the 19th call is spend 5's first UPDATE
# argument. The child then announces itself and sleeps until killed.
MID_TRANSACTION = r"""
import os, sys, time
import dpkit.accounting._ledger as ledger
from dpkit import Accountant, PureDP
path, marker, released = sys.argv[1], sys.argv[2], sys.argv[3]
real = ledger.fraction_to_text
calls = 0
def stalling(x):
    global calls
    calls += 1
    if calls == 19:
        open(marker, "w").close()
        time.sleep(60)
    return real(x)
ledger.fraction_to_text = stalling
acct = Accountant(PureDP(1.0), ledger=path)
with open(released, "a") as out:
    for i in range(10):
        acct.spend(PureDP(0.125), label=f"r{i}")
        out.write(f"r{i}\n")
        out.flush()
"""


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)  # dpkit must come from the installed package
    return env


def _ledger_rows(path: Path) -> tuple[list[str], Fraction, int]:
    con = sqlite3.connect(path)
    try:
        labels = [r[0] for r in con.execute("SELECT label FROM spends ORDER BY id")]
        a, n = con.execute("SELECT a, n FROM totals").fetchone()
    finally:
        con.close()
    num, den = a.split("/")
    return labels, Fraction(int(num), int(den)), n


def _spend_in_threads(path: Path, *, shared: bool, prefix: str) -> list[int]:
    """8 threads x 500 attempts on the ledger; returns each thread's successful spends."""
    common = Accountant(PureDP(1.0), ledger=path) if shared else None
    wins = [0] * WORKERS
    errors: list[BaseException] = []
    gate = threading.Barrier(WORKERS)
    # every thread makes its first spend before any makes a second, so all of them are in
    # the race however the scheduler runs them on a loaded machine (8 first spends fit the
    # 333 slots, so at least two threads win by construction, not by luck)
    first = threading.Barrier(WORKERS)

    def work(k: int) -> None:
        acct = common or Accountant(PureDP(1.0), ledger=path)
        try:
            gate.wait()
            for i in range(ATTEMPTS):
                if i == 1:
                    first.wait()
                try:
                    acct.spend(PureDP(COST), label=f"{prefix}{k}-{i}")
                    wins[k] += 1
                except BudgetExceededError:
                    pass
        except BaseException as exc:  # surfaced below
            errors.append(exc)
        finally:
            if common is None:
                acct.close()

    threads = [threading.Thread(target=work, args=(k,)) for k in range(WORKERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if common is not None:
        common.close()
    assert errors == []
    return wins


@pytest.mark.slow  # about 2 s alone, more when the 2 cores are busy
def test_eight_processes_and_eight_threads_never_overspend(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite"
    gate = tmp_path / "go"
    Accountant.create(path, PureDP(1.0)).close()
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                SPEND_LOOP,
                str(path),
                f"p{k}",
                str(ATTEMPTS),
                str(COST),
                str(gate),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(),
        )
        for k in range(WORKERS)
    ]
    try:
        for p in procs:  # every worker has opened the ledger before any spends
            assert p.stdout is not None
            assert p.stdout.readline().strip() == "ready"
        gate.touch()
        # ... and 8 threads of this process race them at the same time
        thread_wins = _spend_in_threads(path, shared=False, prefix="t")
        proc_wins = []
        for p in procs:
            out, err = p.communicate(timeout=120)
            assert p.returncode == 0, err
            proc_wins.append(int(out.strip()))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    labels, total, n = _ledger_rows(path)
    # 8000 attempts for 333 slots: every slot was taken, none twice, and the recorded spends
    # are exactly the successful calls
    assert sum(proc_wins) + sum(thread_wins) == ALLOWED == len(labels) == n
    assert total == ALLOWED * Fraction(COST) <= 1
    assert len(set(labels)) == len(labels)
    assert all(re.fullmatch(r"[pt][0-7]-\d{1,3}", label) for label in labels)
    # the work was really shared: more than one worker got spends in
    assert sum(1 for w in proc_wins + thread_wins if w > 0) >= 2
    with Accountant.open(path) as acct:
        assert len(acct.history) == ALLOWED


@pytest.mark.parametrize("shared", [True, False], ids=["one-accountant", "one-per-thread"])
def test_eight_threads_never_overspend(tmp_path: Path, shared: bool) -> None:
    path = tmp_path / "threads.sqlite"
    Accountant.create(path, PureDP(1.0)).close()
    wins = _spend_in_threads(path, shared=shared, prefix="t")
    labels, total, n = _ledger_rows(path)
    assert sum(wins) == ALLOWED == len(labels) == n
    assert total == ALLOWED * Fraction(COST) <= 1
    assert sum(1 for w in wins if w > 0) >= 2


@pytest.mark.parametrize("delay", [0.0, 0.013, 0.031])
def test_sigkill_mid_loop_loses_no_spend(tmp_path: Path, delay: float) -> None:
    path = tmp_path / "crash.sqlite"
    released = tmp_path / "released.txt"
    released.touch()
    child = subprocess.Popen(
        [sys.executable, "-c", RELEASE_LOOP, str(path), str(released)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=_env(),
    )
    try:
        deadline = time.monotonic() + 30
        while released.read_text().count("\n") < 25:
            assert child.poll() is None, child.stderr.read() if child.stderr else ""
            assert time.monotonic() < deadline, "the child made no progress"
            time.sleep(0.005)
        time.sleep(delay)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        if child.stderr is not None:
            child.stderr.close()
    assert child.returncode == -signal.SIGKILL
    done = released.read_text().split()
    # the ledger opens (Accountant.open verifies totals against every row) ...
    with Accountant.open(path) as acct:
        history = acct.history
        spent = acct.spent
    labels = [s.label for s in history]
    # ... has no gaps, accounts for every completed release, and at most one spend whose
    # release the kill prevented (the one between spend() returning and the release)
    assert labels == [f"r{i}" for i in range(len(labels))]
    assert labels[: len(done)] == done
    assert len(labels) - len(done) in (0, 1)
    assert spent == PureDP(len(labels) * 2.0**-10)
    # and it keeps working: the next process continues from there
    with Accountant(PureDP(1000.0), ledger=path) as acct:
        acct.spend(PureDP(2.0**-10), label="after the crash")
        assert len(acct.history) == len(labels) + 1


def test_sigkill_inside_the_transaction_records_and_releases_nothing(tmp_path: Path) -> None:
    path = tmp_path / "mid.sqlite"
    marker = tmp_path / "in-transaction"
    released = tmp_path / "released.txt"
    child = subprocess.Popen(
        [sys.executable, "-c", MID_TRANSACTION, str(path), str(marker), str(released)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=_env(),
    )
    try:
        deadline = time.monotonic() + 30
        while not marker.exists():
            assert child.poll() is None, child.stderr.read() if child.stderr else ""
            assert time.monotonic() < deadline, "the child never reached the transaction"
            time.sleep(0.005)
        # the child really is inside its write transaction: the write lock is taken
        probe = sqlite3.connect(path, timeout=0.05, isolation_level=None)
        try:
            with pytest.raises(sqlite3.OperationalError, match="locked"):
                probe.execute("BEGIN IMMEDIATE")
        finally:
            probe.close()
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        if child.stderr is not None:
            child.stderr.close()
    assert released.read_text().split() == ["r0", "r1", "r2", "r3"]
    with Accountant.open(path) as acct:
        # the half-written 5th spend was rolled back by SQLite's recovery: not recorded, and
        # the child never got to release it
        assert [s.label for s in acct.history] == ["r0", "r1", "r2", "r3"]
        assert acct.spent == PureDP(0.5)
        # and the write lock the dead child held is free again
        acct.spend(PureDP(0.5), label="after")
        assert acct.remaining == PureDP(0.0)
