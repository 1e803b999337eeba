"""Ctrl-C on the command line: one line and exit code 130, never a traceback.

* :class:`Interrupted`, raised by a subcommand that has something to say about an interrupt
  (``dpkit query``: whether the budget was charged; ``dpkit audit``: the rows kept);
  :func:`dpkit.cli.main.main` prints it as ``dpkit COMMAND: MESSAGE`` and returns
  :data:`EXIT_INTERRUPTED`. A bare ``KeyboardInterrupt`` from any subcommand becomes
  ``dpkit COMMAND: interrupted``.
* :class:`InterruptWatch`, which notes that SIGINT arrived while it is active, whatever
  becomes of the ``KeyboardInterrupt``. Engines turn an interrupt into their own errors:
  PySpark's SIGINT handler cancels the running jobs, and the collect then fails with a
  ``Py4JJavaError`` that the Session reports as an engine failure; with the watch, the
  command line reports it as the interrupt it was. It listens on Python's signal wakeup file
  descriptor (:func:`signal.set_wakeup_fd`), written by the interpreter's own low-level
  handler: no handler is replaced, so Polars' and PySpark's own reactions to Ctrl-C (Polars
  aborts its query at once) are unchanged.
* :func:`quiet_interrupts` and :func:`settled`, which ignore further SIGINTs while an
  interrupt is reported. Polars raises ``KeyboardInterrupt`` from its own handler and the
  interpreter then raises a second one for the same signal at its next check, which would
  otherwise land in the middle of the report (the "lost sys.stderr" of an interrupted
  ``dpkit query``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import TypeVar

_T = TypeVar("_T")

__all__ = ["EXIT_INTERRUPTED", "InterruptWatch", "Interrupted", "quiet_interrupts", "settled"]

#: Exit code after Ctrl-C: 128 + SIGINT (2), as the shell reports for a process it stopped.
EXIT_INTERRUPTED = 130


class Interrupted(Exception):
    """A subcommand was interrupted; the message says what was kept, charged or lost."""


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


class InterruptWatch:
    """Context manager: :attr:`seen` is true once SIGINT arrived while it was active.

    Only the main thread can set the wakeup descriptor; elsewhere (and where another wakeup
    descriptor is in use, as under an asyncio loop) the watch sees nothing and changes
    nothing.
    """

    def __init__(self) -> None:
        self._seen = False
        self._read: int | None = None
        self._write: int | None = None
        self._previous = -1

    def __enter__(self) -> InterruptWatch:
        if not _main_thread():
            return self
        read, write = os.pipe()
        os.set_blocking(read, False)
        os.set_blocking(write, False)
        try:
            previous = signal.set_wakeup_fd(write, warn_on_full_buffer=False)
        except ValueError:  # not the main interpreter
            os.close(read)
            os.close(write)
            return self
        if previous != -1:  # someone else's: leave it in place
            signal.set_wakeup_fd(previous)
            os.close(read)
            os.close(write)
            return self
        self._read, self._write, self._previous = read, write, previous
        return self

    @property
    def seen(self) -> bool:
        """Whether SIGINT arrived since the watch started."""
        if not self._seen and self._read is not None:
            with contextlib.suppress(BlockingIOError):
                while chunk := os.read(self._read, 512):
                    if signal.SIGINT in chunk:
                        self._seen = True
        return self._seen

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._read is None or self._write is None:
            return
        _ = self.seen  # read what arrived before closing
        signal.set_wakeup_fd(self._previous)
        os.close(self._read)
        os.close(self._write)
        self._read = self._write = None


@contextlib.contextmanager
def quiet_interrupts() -> Iterator[None]:
    """Ignore SIGINT within the block (a pending one is dropped), then restore the handler.

    Outside the main thread, or where the handler cannot be read back, it does nothing."""
    if not _main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous is None:  # set outside Python: cannot be restored
        yield
        return
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def settled(func: Callable[[], _T]) -> _T:
    """``func()`` with SIGINT ignored (:func:`quiet_interrupts`). A ``KeyboardInterrupt``
    already pending from the same Ctrl-C can still be raised before the ignore takes effect:
    it is absorbed and ``func`` run again (a few times at most)."""
    for _ in range(4):
        try:
            with quiet_interrupts():
                return func()
        except KeyboardInterrupt:
            continue
    return func()
