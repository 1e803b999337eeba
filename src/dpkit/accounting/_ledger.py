"""Where an :class:`~dpkit.accounting.Accountant` keeps its spends: in memory or in SQLite.

Both stores offer the same small interface used by the accountant:

* ``try_append(label, cost, charge, timestamp, limit, relation, events, admit=None)`` — check
  that the running totals plus ``charge`` stay within ``limit`` (or, with ``admit``, ask it:
  it reads the spends recorded after a given index through the function it is passed, inside
  the atomic step) and, in the same atomic step, record the spend (with the neighbour
  relation of ``cost`` and the privacy events the release stated); returns the new entry's
  index, or ``None`` (and the totals seen) when it does not fit;
* ``since(index)`` — the spends recorded after ``index`` (:class:`Row`: index, cost,
  relation, events), oldest first;
* ``attach(index, record)`` — keep the public record of the release a spend paid for (JSON
  text, written once, after the release);
* ``totals()``, ``entries()``, ``records()``, ``close()``.

Charges are pairs of exact rationals ``(a, b)``: ``(epsilon, 0)`` for a pure budget,
``(epsilon, delta)`` for an approximate one, ``(rho, 0)`` for zCDP.

The SQLite ledger (schema version 3)::

    dpkit_meta(key TEXT PRIMARY KEY, value TEXT)      format, version, budget (JSON), created,
                                                      relation (of the budget), composition
                                                      ("tight" or "basic"; absent: "basic")
    spends(id INTEGER PRIMARY KEY AUTOINCREMENT, label, cost (JSON of the requested loss),
           charge_a, charge_b (exact rationals "num/den"), created (ISO 8601 UTC), pid,
           relation (of the requested cost),
           events (JSON list of dpkit.accounting.events descriptors, or NULL),
           record (JSON: the public record of the release, or NULL))
    totals(id = 1, a, b (exact rationals), n)          running sums, updated with every spend

``events`` is what the release said it is, for accounting (written with the spend);
``record`` is what it released, with its plan (written once the release is made; see
:mod:`dpkit.session._record`). Released values are public, so the ledger holds nothing
private, but it holds the released tables themselves, not only their costs.

Version 1 (before neighbour relations were recorded) had no ``relation`` in either table; its
budget and spends were all add/remove ("unbounded"). Version 2 had no ``events`` and no
``record``. Opening an older ledger migrates it in place, in one ``BEGIN IMMEDIATE``
transaction (add the missing columns, ``relation`` with default 'unbounded' and the budget's
relation recorded; ``events`` and ``record`` empty; set the version to 3), so concurrent
openers migrate it once; a ledger that cannot be written (read-only file) is read at its own
version, every relation "unbounded" for version 1, no events and no records before 3.

It runs in WAL mode with ``synchronous=FULL``: a spend is on disk when ``try_append`` returns.
The check and the record happen inside one ``BEGIN IMMEDIATE`` transaction, which takes the
database's single write lock, so processes and threads sharing a ledger are serialised exactly
at the point that matters. A process killed at any moment either committed its spend (and the
release may proceed) or did not (and the caller never got to draw noise): SQLite's journal
guarantees there is no third state.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from fractions import Fraction
from pathlib import Path
from typing import Any, NamedTuple

from dpkit.accounting import events as _events
from dpkit.accounting._rational import fraction_from_text, fraction_to_text
from dpkit.accounting.loss import PrivacyLoss, event_to_dict, loss_from_dict, loss_to_dict
from dpkit.errors import LedgerError

__all__ = [
    "COMPOSITIONS",
    "Entry",
    "MemoryStore",
    "Row",
    "SQLiteStore",
    "events_from_json",
    "events_to_json",
    "loss_from_json",
    "loss_to_json",
]

FORMAT = "dpkit-ledger"
VERSION = "3"
_OLD_VERSIONS = ("1", "2")

_SCHEMA = (
    "CREATE TABLE dpkit_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE spends (id INTEGER PRIMARY KEY AUTOINCREMENT, label TEXT NOT NULL, "
    "cost TEXT NOT NULL, charge_a TEXT NOT NULL, charge_b TEXT NOT NULL, "
    "created TEXT NOT NULL, pid INTEGER NOT NULL, "
    "relation TEXT NOT NULL DEFAULT 'unbounded', events TEXT, record TEXT)",
    "CREATE TABLE totals (id INTEGER PRIMARY KEY CHECK (id = 1), a TEXT NOT NULL, "
    "b TEXT NOT NULL, n INTEGER NOT NULL)",
)

Pair = tuple[Fraction, Fraction]
_ZERO: Pair = (Fraction(0), Fraction(0))


_RELATIONS = ("unbounded", "bounded")

#: How an accountant composes its spends (stored in the ledger; a ledger without the key
#: composes them by basic composition).
COMPOSITIONS = ("tight", "basic")


def default_composition(budget: PrivacyLoss) -> str:
    """The composition a new accountant takes when none is given: ``"tight"`` wherever tight
    composition is a privacy filter under adaptive choice (a pure-DP or zCDP budget: one
    analysis, the epsilons or the rhos add), ``"basic"`` for an (epsilon, delta) budget with
    delta > 0, where the natural filter on privacy-loss distributions is invalid and the
    smallest of several analyses is not known to be a filter (see
    :class:`~dpkit.accounting.Accountant`)."""
    return "basic" if getattr(budget, "delta", 0) > 0 else "tight"


class Entry(NamedTuple):
    seq: int
    label: str
    cost: PrivacyLoss
    charge: Pair
    timestamp: datetime
    relation: str = "unbounded"
    events: tuple[_events.Event, ...] = ()


class Row(NamedTuple):
    """What a tight accountant reads of a spend: its index, requested cost, relation and
    events."""

    seq: int
    cost: PrivacyLoss
    relation: str
    events: tuple[_events.Event, ...]


#: ``admit(read_since, totals)``: whether a spend fits, given ``read_since(index)`` reading the
#: spends recorded after ``index`` and the running totals, inside the store's atomic step.
Admit = Callable[[Callable[[int], list[Row]], "Pair"], bool]


def _columns(version: str) -> str:
    """The spends' ``relation, events`` as a ledger of ``version`` holds them (an older
    ledger read without migrating it: a read-only file)."""
    relation = "'unbounded'" if version == "1" else "relation"
    events = "events" if version not in _OLD_VERSIONS else "NULL"
    return f"{relation}, {events}"


def events_to_json(events: tuple[_events.Event, ...]) -> str | None:
    """Lossless JSON of privacy events (``None`` for none): each descriptor as its type's
    name and its fields (floats round-trip exactly through ``repr``)."""
    if not events:
        return None
    return json.dumps([event_to_dict(event) for event in events])


def events_from_json(text: str | None) -> tuple[_events.Event, ...]:
    """Inverse of :func:`events_to_json`; raises ``ValueError``/``KeyError``/``TypeError``
    on anything that is not a list of known descriptors with valid parameters."""
    if text is None:
        return ()
    data = json.loads(text)
    if not isinstance(data, list):
        raise ValueError("the events are not a list")
    out = []
    for item in data:
        fields = dict(item)
        kind = fields.pop("type")
        if kind not in _events.__all__ or kind == "Event":
            raise ValueError(f"unknown event type {kind!r}")
        try:
            out.append(getattr(_events, kind)(**fields))
        except Exception as exc:  # the descriptor's own validation (ParameterError, TypeError)
            raise ValueError(f"invalid {kind} event: {exc}") from None
    return tuple(out)


def loss_to_json(loss: PrivacyLoss) -> str:
    """Lossless JSON of a loss (floats round-trip exactly through ``repr``)."""
    return json.dumps(loss_to_dict(loss))


def loss_from_json(text: str) -> PrivacyLoss:
    """Inverse of :func:`loss_to_json`; raises ``ValueError``/``KeyError`` on bad input."""
    return loss_from_dict(json.loads(text))


@contextlib.contextmanager
def _write(conn: sqlite3.Connection) -> Iterator[None]:
    """One write transaction (``BEGIN IMMEDIATE``: the write lock first), committed or
    rolled back by the block itself; an exception inside it rolls back what is open."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        if conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
        raise


def fits(totals: Pair, charge: Pair, limit: Pair) -> bool:
    return totals[0] + charge[0] <= limit[0] and totals[1] + charge[1] <= limit[1]


class MemoryStore:
    """Spends kept in this process only, guarded by a lock (thread-safe, not durable)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: list[Entry] = []
        self._records: dict[int, str] = {}
        self._totals: Pair = _ZERO

    def try_append(
        self,
        label: str,
        cost: PrivacyLoss,
        charge: Pair,
        timestamp: datetime,
        limit: Pair,
        relation: str = "unbounded",
        events: tuple[_events.Event, ...] = (),
        admit: Admit | None = None,
    ) -> tuple[int | None, Pair]:
        with self._lock:
            if admit is not None:
                if not admit(self._since, self._totals):
                    return None, self._totals
            elif not fits(self._totals, charge, limit):
                return None, self._totals
            index = len(self._entries) + 1
            self._entries.append(Entry(index, label, cost, charge, timestamp, relation, events))
            self._totals = (self._totals[0] + charge[0], self._totals[1] + charge[1])
            return index, self._totals

    def attach(self, index: int, record: str) -> bool:
        """Keep ``record`` beside spend ``index``; ``False`` if it has one already."""
        with self._lock:
            if not 1 <= index <= len(self._entries):
                raise LedgerError(f"in-memory ledger: no spend #{index}")
            if index in self._records:
                return False
            self._records[index] = record
            return True

    def _since(self, index: int) -> list[Row]:
        return [Row(e.seq, e.cost, e.relation, e.events) for e in self._entries[max(index, 0) :]]

    def since(self, index: int) -> list[Row]:
        with self._lock:
            return self._since(index)

    def totals(self) -> Pair:
        with self._lock:
            return self._totals

    def entries(self) -> list[Entry]:
        with self._lock:
            return list(self._entries)

    def records(self) -> dict[int, str]:
        with self._lock:
            return dict(self._records)

    def close(self) -> None:
        """Nothing to release."""


_tmp_counter = itertools.count()


def _close_quietly(conn: sqlite3.Connection) -> None:
    with contextlib.suppress(sqlite3.Error):
        conn.close()


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):  # not every platform can open a directory
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


#: What reading a damaged ledger can raise besides LedgerError: SQLite's own errors, and
#: the decoding of what it returns (text that is not UTF-8, a number where text should be,
#: a missing row). Every one of them becomes a LedgerError naming the file.
_CORRUPT = (sqlite3.Error, ValueError, TypeError, KeyError, IndexError, OverflowError)

#: SQLite's primary result codes (the low byte of ``sqlite_errorcode``) that say the file could
#: not be opened for a reason outside its content (permissions): such a ledger may be healthy.
_NO_ACCESS = (sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM, sqlite3.SQLITE_AUTH)
_DAMAGED = (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)


def _failure(where: str, path: Path, exc: BaseException) -> str:
    """``where`` and what went wrong using the ledger file, its access or its content.

    SQLite's result code decides, never its message: a read-only file or folder
    (``SQLITE_READONLY`` and its extended codes) and a file that cannot be opened
    (``SQLITE_CANTOPEN``, ``SQLITE_PERM``, ``SQLITE_AUTH``; "permission denied" when the
    operating system refuses to read the file) are said as such, as is a lock held by another
    connection. Only damaged content (``SQLITE_CORRUPT``, ``SQLITE_NOTADB``, or a value that
    fails to decode, which is not a :class:`sqlite3.Error`) is "corrupt"; any other SQLite
    error is quoted as it is.
    """
    if not isinstance(exc, sqlite3.Error):
        return f"{where} is corrupt: {exc}"
    code = getattr(exc, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    if code == sqlite3.SQLITE_READONLY_DIRECTORY:
        return (
            f"{where} is in a read-only folder ({exc}): a ledger's folder must be writable, "
            f"even to read it, since SQLite keeps {path.name}-wal and -shm beside it"
        )
    if primary == sqlite3.SQLITE_READONLY:
        return f"{where} is read-only here: the file or its folder cannot be written ({exc})"
    if primary in _NO_ACCESS:
        try:
            os.close(os.open(path, os.O_RDONLY))
        except PermissionError:
            return f"{where} cannot be read: permission denied"
        except OSError:
            pass
        return (
            f"{where} cannot be opened ({exc}); check the permissions of the file, of its "
            f"folder and of {path.name}-wal and -shm beside it"
        )
    if primary in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        return f"{where} is busy: another connection holds it ({exc})"
    if primary in _DAMAGED:
        return f"{where} is corrupt: {exc}"
    return f"{where}: {exc}"


def _switch_to_wal(conn: sqlite3.Connection, timeout: float) -> None:
    """Put a (version 1, rollback-journal) ledger into WAL mode, waiting out other openers.

    The switch needs the database to itself, and SQLite reports "database is locked" at once,
    without its busy handler, while another connection still reads the file in rollback mode
    (several processes opening an old ledger together). That is contention, not corruption:
    retry with short, growing sleeps (1 ms, 2 ms, ... up to 20 ms) until ``timeout`` seconds
    have passed, then let the error propagate.
    """
    deadline = time.monotonic() + timeout
    attempt = 0
    while True:
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
        if str(mode).lower() == "wal":
            return
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            locked = "locked" in str(exc) or "busy" in str(exc)
            if not locked or time.monotonic() >= deadline:
                raise
        attempt += 1
        time.sleep(min(0.001 * attempt, 0.02))


def _connect(path: Path, timeout: float, *, must_exist: bool) -> sqlite3.Connection:
    target = f"{path.absolute().as_uri()}?mode={'rw' if must_exist else 'rwc'}"
    conn = sqlite3.connect(
        target, uri=True, timeout=timeout, isolation_level=None, check_same_thread=False
    )
    try:
        conn.execute("PRAGMA synchronous=FULL")
    except BaseException:
        conn.close()
        raise
    return conn


class SQLiteStore:
    """A durable ledger in one SQLite file, shared safely by threads and processes.

    Parameters
    ----------
    path
        The ledger file.
    budget
        The budget to create the ledger with if ``path`` does not exist; ``None`` to require an
        existing ledger (and adopt its budget).
    relation
        The budget's neighbour relation (for a new ledger, and checked against an existing
        one); ``None`` adopts the ledger's.
    composition
        ``"tight"`` or ``"basic"``: recorded in a new ledger, checked against an existing one;
        ``None`` adopts the ledger's (a new ledger's is :func:`default_composition`).
    timeout
        Seconds to wait for another writer before giving up with a :class:`LedgerError`.
    exclusive
        Refuse to open a ledger that already exists (``dpkit budget init``).
    """

    def __init__(
        self,
        path: Path,
        budget: PrivacyLoss | None,
        relation: str | None = None,
        *,
        timeout: float,
        exclusive: bool = False,
        composition: str | None = None,
    ) -> None:
        self.path = path
        self.timeout = timeout
        self._lock = threading.Lock()
        self._closed = False
        self._legacy = False  # an older ledger that could not be migrated (read-only)
        self._version = VERSION  # the version of the file as read (older when legacy)
        if path.is_dir():
            raise LedgerError(f"ledger {str(path)!r} is a directory, not a ledger file")
        if not path.exists():
            if budget is None:
                raise LedgerError(
                    f"no ledger at {str(path)!r}; create one by passing a budget, for example "
                    "Accountant(PureDP(1.0), ledger=...) or `dpkit budget init`"
                )
            if not path.parent.is_dir():
                raise LedgerError(
                    f"cannot create ledger {str(path)!r}: folder {str(path.parent)!r} does not "
                    "exist"
                )
            created = self._create(
                budget, relation or "unbounded", composition or default_composition(budget)
            )
            if exclusive and not created:
                raise LedgerError(f"ledger {str(path)!r} already exists; refusing to overwrite it")
        elif exclusive:
            raise LedgerError(f"ledger {str(path)!r} already exists; refusing to overwrite it")
        self.budget, self.relation, self.composition = self._open_and_verify(
            budget, relation, composition
        )

    # -- creation and verification -------------------------------------------------------

    def _create(self, budget: PrivacyLoss, relation: str, composition: str) -> bool:
        """Build a complete ledger in a private file, then link it into place atomically.

        ``os.link`` fails if the name exists, so when several processes race to create the
        same ledger exactly one wins and the others open the winner's file; nobody ever sees
        a half-initialised ledger. Returns whether this call created it.
        """
        tmp = self.path.with_name(
            f".{self.path.name}.{os.getpid()}.{threading.get_ident()}.{next(_tmp_counter)}.tmp"
        )
        try:
            conn = _connect(tmp, self.timeout, must_exist=False)
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("BEGIN IMMEDIATE")
                for statement in _SCHEMA:
                    conn.execute(statement)
                meta = {
                    "format": FORMAT,
                    "version": VERSION,
                    "budget": loss_to_json(budget),
                    "created": datetime.now(UTC).isoformat(),
                    "relation": relation,
                    "composition": composition,
                }
                conn.executemany("INSERT INTO dpkit_meta VALUES (?, ?)", meta.items())
                conn.execute("INSERT INTO totals VALUES (1, '0/1', '0/1', 0)")
                conn.execute("COMMIT")
            finally:
                conn.close()  # checkpoints the WAL into the main file and removes it
            try:
                os.link(tmp, self.path)
            except FileExistsError:
                return False
            _fsync_dir(self.path.parent)
            return True
        except sqlite3.Error as exc:
            raise LedgerError(f"cannot create ledger {str(self.path)!r}: {exc}") from exc
        except OSError as exc:
            raise LedgerError(f"cannot create ledger {str(self.path)!r}: {exc}") from exc
        finally:
            for suffix in ("", "-wal", "-shm", "-journal"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(f"{tmp}{suffix}")

    def _open_and_verify(
        self, budget: PrivacyLoss | None, relation: str | None, composition: str | None
    ) -> tuple[PrivacyLoss, str, str]:
        where = f"ledger {str(self.path)!r}"
        try:
            conn = _connect(self.path, self.timeout, must_exist=True)
        except _CORRUPT as exc:
            raise LedgerError(_failure(where, self.path, exc)) from exc
        try:
            self._check_file(conn, where)
            if self._version_of(conn) in _OLD_VERSIONS:
                self._migrate(conn)
            if self._legacy:
                self._version = self._version_of(conn) or VERSION
            stored, stored_relation, stored_composition = self._verify(conn, where, self._version)
            if budget is not None and (type(stored) is not type(budget) or stored != budget):
                raise LedgerError(
                    f"{where} was created with budget {stored!r}, not {budget!r}; a ledger's "
                    "budget never changes: open it with its own budget (Accountant.open) or "
                    "start a new ledger file"
                )
            if relation is not None and relation != stored_relation:
                raise LedgerError(
                    f"{where} protects relation={stored_relation!r}, not {relation!r}; a "
                    "ledger's neighbour relation never changes: open it with its own "
                    "(Accountant.open) or start a new ledger file"
                )
            if composition is not None and composition != stored_composition:
                raise LedgerError(
                    f"{where} composes its spends by composition={stored_composition!r}, not "
                    f"{composition!r}; a ledger's composition never changes: open it with its "
                    "own (Accountant.open, or composition=None) or start a new ledger file"
                )
            _switch_to_wal(conn, self.timeout)
        except _CORRUPT as exc:
            _close_quietly(conn)
            raise LedgerError(_failure(where, self.path, exc)) from exc
        except BaseException:
            _close_quietly(conn)
            raise
        self._install(conn)
        return stored, stored_relation, stored_composition

    @staticmethod
    def _check_file(conn: sqlite3.Connection, where: str) -> None:
        """An intact SQLite file holding the ledger's three tables."""
        check = conn.execute("PRAGMA quick_check").fetchone()
        if check is None or check[0] != "ok":
            raise LedgerError(f"{where} is corrupt: SQLite integrity check says {check!r}")
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not {"dpkit_meta", "spends", "totals"} <= tables:
            raise LedgerError(
                f"{where} is not a dpkit ledger (an SQLite file without the ledger tables); "
                "refusing to use or overwrite it"
            )

    @staticmethod
    def _version_of(conn: sqlite3.Connection) -> str | None:
        row = conn.execute("SELECT value FROM dpkit_meta WHERE key = 'version'").fetchone()
        return None if row is None else str(row[0])

    def _migrate(self, conn: sqlite3.Connection) -> None:
        """Version 1 or 2 to 3, once, atomically (module docstring); read-only files stay as
        they are."""
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if "readonly" in str(exc) or "read-only" in str(exc):
                self._legacy = True
                return
            raise
        try:
            meta = dict(conn.execute("SELECT key, value FROM dpkit_meta").fetchall())
            if meta.get("format") == FORMAT and meta.get("version") in _OLD_VERSIONS:
                if meta["version"] == "1":
                    conn.execute(
                        "ALTER TABLE spends ADD COLUMN relation TEXT NOT NULL DEFAULT 'unbounded'"
                    )
                    conn.execute(
                        "INSERT OR REPLACE INTO dpkit_meta VALUES ('relation', 'unbounded')"
                    )
                conn.execute("ALTER TABLE spends ADD COLUMN events TEXT")
                conn.execute("ALTER TABLE spends ADD COLUMN record TEXT")
                conn.execute("UPDATE dpkit_meta SET value = ? WHERE key = 'version'", (VERSION,))
            conn.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            if "readonly" in str(exc) or "read-only" in str(exc):
                self._legacy = True
                return
            raise
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            raise

    @staticmethod
    def _verify(conn: sqlite3.Connection, where: str, version: str) -> tuple[PrivacyLoss, str, str]:
        """Check format, version and that the running totals equal the recorded spends (and
        that their events decode); ``version`` is the file's when it is read unmigrated."""
        conn.execute("BEGIN")  # one consistent snapshot for the whole check
        try:
            meta = dict(conn.execute("SELECT key, value FROM dpkit_meta").fetchall())
            if meta.get("format") != FORMAT or meta.get("version") != version:
                raise LedgerError(
                    f"{where} has format {meta.get('format')!r} version {meta.get('version')!r}; "
                    f"this dpkit reads {FORMAT!r} version {VERSION!r}"
                )
            relation = meta.get("relation", "unbounded") if version == "1" else meta.get("relation")
            if relation not in _RELATIONS:
                raise LedgerError(f"{where} is corrupt: unknown budget relation {relation!r}")
            composition = meta.get("composition", "basic")
            if composition not in COMPOSITIONS:
                raise LedgerError(f"{where} is corrupt: unknown composition {composition!r}")
            try:
                budget = loss_from_json(meta["budget"])
                row = conn.execute("SELECT a, b, n FROM totals WHERE id = 1").fetchone()
                if row is None:
                    raise ValueError("the totals row is missing")
                totals = (fraction_from_text(row[0]), fraction_from_text(row[1]))
                count = 0
                sums = [Fraction(0), Fraction(0)]
                for label, cost, ca, cb, rel, events in conn.execute(
                    f"SELECT label, cost, charge_a, charge_b, {_columns(version)} FROM spends"
                ):
                    loss_from_json(cost)
                    events_from_json(events)
                    a, b = fraction_from_text(ca), fraction_from_text(cb)
                    if a < 0 or b < 0 or not isinstance(label, str):
                        raise ValueError("a spend has a negative charge or no label")
                    if rel not in _RELATIONS:
                        raise ValueError(f"a spend has an unknown relation {rel!r}")
                    sums[0] += a
                    sums[1] += b
                    count += 1
            except LedgerError:
                raise
            except (ValueError, KeyError, TypeError) as exc:
                raise LedgerError(f"{where} is corrupt: {exc}") from exc
        finally:
            conn.execute("COMMIT")
        if (sums[0], sums[1]) != totals or count != row[2]:
            raise LedgerError(
                f"{where} is inconsistent: the totals row says {row[2]} spends totalling "
                f"({float(totals[0])!r}, {float(totals[1])!r}) but the spends table has {count} "
                f"totalling ({float(sums[0])!r}, {float(sums[1])!r})"
            )
        return budget, str(relation), str(composition)

    # -- connection management -----------------------------------------------------------

    def _install(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._pid = os.getpid()
        self._finalizer = weakref.finalize(self, _close_quietly, conn)

    def _connection(self) -> sqlite3.Connection:
        """This process's connection (called with ``self._lock`` held)."""
        if self._closed:
            raise LedgerError(f"ledger {str(self.path)!r}: the accountant was closed")
        if self._pid != os.getpid():
            # A forked child must not use (or close) its parent's connection: SQLite forbids
            # carrying a connection across fork. Abandon it without closing and open our own.
            self._finalizer.detach()
            _ORPHANS.append(self._conn)
            try:
                self._install(_connect(self.path, self.timeout, must_exist=True))
            except _CORRUPT as exc:
                raise LedgerError(_failure(f"ledger {str(self.path)!r}", self.path, exc)) from exc
        return self._conn

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                if self._pid == os.getpid():
                    self._finalizer()
                else:
                    self._finalizer.detach()

    # -- the store interface -------------------------------------------------------------

    def _read_totals(self, conn: sqlite3.Connection) -> Pair:
        row = conn.execute("SELECT a, b FROM totals WHERE id = 1").fetchone()
        return fraction_from_text(row[0]), fraction_from_text(row[1])

    def _error(self, exc: BaseException) -> LedgerError:
        if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
            return LedgerError(
                f"ledger {str(self.path)!r} is busy: another writer held it for more than "
                f"{self.timeout} s; nothing was spent, so nothing may be released"
            )
        where = f"ledger {str(self.path)!r}"
        return LedgerError(f"{_failure(where, self.path, exc)}; nothing was spent")

    def try_append(
        self,
        label: str,
        cost: PrivacyLoss,
        charge: Pair,
        timestamp: datetime,
        limit: Pair,
        relation: str = "unbounded",
        events: tuple[_events.Event, ...] = (),
        admit: Admit | None = None,
    ) -> tuple[int | None, Pair]:
        events_text = events_to_json(events)
        with self._lock:
            conn = self._connection()
            try:
                # Totals only grow, so a spend that does not fit now never will: refuse it from
                # a plain snapshot read, without queueing for the write lock.
                seen = self._read_totals(conn)
                if admit is None and not fits(seen, charge, limit):
                    return None, seen
                with _write(conn):
                    totals = self._read_totals(conn)
                    admitted = (
                        admit(lambda index: self._since(conn, index), totals)
                        if admit is not None
                        else fits(totals, charge, limit)
                    )
                    if not admitted:
                        conn.execute("ROLLBACK")
                        return None, totals
                    cur = conn.execute(
                        "INSERT INTO spends (label, cost, charge_a, charge_b, created, pid, "
                        "relation, events) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        (
                            label,
                            loss_to_json(cost),
                            fraction_to_text(charge[0]),
                            fraction_to_text(charge[1]),
                            timestamp.isoformat(),
                            os.getpid(),
                            relation,
                            events_text,
                        ),
                    )
                    new = (totals[0] + charge[0], totals[1] + charge[1])
                    conn.execute(
                        "UPDATE totals SET a = ?, b = ?, n = n + 1 WHERE id = 1",
                        (fraction_to_text(new[0]), fraction_to_text(new[1])),
                    )
                    conn.execute("COMMIT")
            except _CORRUPT as exc:
                raise self._error(exc) from exc
            index = cur.lastrowid
            assert index is not None
            return index, new

    def attach(self, index: int, record: str) -> bool:
        """Keep ``record`` beside spend ``index`` (committed when this returns); ``False`` if
        the spend has a record already (records are written once)."""
        with self._lock:
            conn = self._connection()
            if self._version != VERSION:
                raise LedgerError(
                    f"ledger {str(self.path)!r} is read-only at version {self._version}: it "
                    "cannot keep a release's record"
                )
            try:
                with _write(conn):
                    found = conn.execute(
                        "SELECT record IS NULL FROM spends WHERE id = ?", (index,)
                    ).fetchone()
                    if found is None:
                        raise LedgerError(f"ledger {str(self.path)!r} has no spend #{index}")
                    if not found[0]:
                        conn.execute("ROLLBACK")
                        return False
                    conn.execute("UPDATE spends SET record = ? WHERE id = ?", (record, index))
                    conn.execute("COMMIT")
            except _CORRUPT as exc:
                raise self._error(exc) from exc
            return True

    def _since(self, conn: sqlite3.Connection, index: int) -> list[Row]:
        rows = conn.execute(
            f"SELECT id, cost, {_columns(self._version)} FROM spends WHERE id > ? ORDER BY id",
            (index,),
        ).fetchall()
        return [
            Row(int(i), loss_from_json(cost), str(rel), events_from_json(events))
            for i, cost, rel, events in rows
        ]

    def since(self, index: int) -> list[Row]:
        """The spends recorded after spend ``index``, oldest first."""
        with self._lock:
            try:
                return self._since(self._connection(), index)
            except _CORRUPT as exc:
                raise self._error(exc) from exc

    def totals(self) -> Pair:
        with self._lock:
            try:
                return self._read_totals(self._connection())
            except _CORRUPT as exc:
                raise self._error(exc) from exc

    def entries(self) -> list[Entry]:
        with self._lock:
            try:
                rows = (
                    self._connection()
                    .execute(
                        "SELECT id, label, cost, charge_a, charge_b, created, "
                        f"{_columns(self._version)} FROM spends ORDER BY id"
                    )
                    .fetchall()
                )
            except _CORRUPT as exc:
                raise self._error(exc) from exc
        try:
            return [
                Entry(
                    int(i),
                    str(label),
                    loss_from_json(cost),
                    (fraction_from_text(ca), fraction_from_text(cb)),
                    datetime.fromisoformat(created),
                    str(rel),
                    events_from_json(events),
                )
                for i, label, cost, ca, cb, created, rel, events in rows
            ]
        except _CORRUPT as exc:
            raise self._error(exc) from exc

    def records(self) -> dict[int, str]:
        """Spend index -> the release record kept beside it (JSON text)."""
        if self._version != VERSION:
            return {}
        with self._lock:
            try:
                rows = (
                    self._connection()
                    .execute("SELECT id, record FROM spends WHERE record IS NOT NULL ORDER BY id")
                    .fetchall()
                )
            except _CORRUPT as exc:
                raise self._error(exc) from exc
        try:
            return {int(i): str(text) for i, text in rows}
        except _CORRUPT as exc:
            raise self._error(exc) from exc


#: Connections inherited across ``fork``: kept alive so they are never closed in the child.
_ORPHANS: list[Any] = []
