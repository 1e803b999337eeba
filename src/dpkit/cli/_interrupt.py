"""Ctrl-C on the command line: one line and exit code 130, never a traceback.

* :class:`Interrupted`, raised by a subcommand that has something to say about an interrupt
  (``dpkit query``: whether the budget was charged; ``dpkit audit``: the rows kept);
  :func:`dpkit.cli.main.main` prints it as ``dpkit COMMAND: MESSAGE`` and returns
  :data:`EXIT_INTERRUPTED`. A bare ``KeyboardInterrupt`` from any subcommand becomes
  ``dpkit COMMAND: interrupted``.
* :class:`InterruptWatch`, which notes that SIGINT arrived while it is active, whatever
  happens to the ``KeyboardInterrupt`` afterwards. Engines turn an interrupt into their own
  errors: PySpark's SIGINT handler cancels the running jobs, and the collect then fails with a
  ``Py4JJavaError`` that the Session reports as an engine failure; with the watch, the
  command line reports it as the interrupt it was. It chains to the handler in place when it
  starts (PySpark's, or Python's), so their behaviour is unchanged.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType, TracebackType
from typing import Any

__all__ = ["EXIT_INTERRUPTED", "InterruptWatch", "Interrupted"]

#: Exit code after Ctrl-C: 128 + SIGINT (2), as the shell reports for a process it stopped.
EXIT_INTERRUPTED = 130


class Interrupted(Exception):
    """A subcommand was interrupted; the message says what was kept, charged or lost."""


class InterruptWatch:
    """Context manager: ``seen`` is true once SIGINT arrived while it was active.

    Only the main thread can install signal handlers; elsewhere the watch sees nothing and
    changes nothing.
    """

    def __init__(self) -> None:
        self.seen = False
        self._previous: Any = None
        self._installed = False

    def __enter__(self) -> InterruptWatch:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.getsignal(signal.SIGINT)
            signal.signal(signal.SIGINT, self._handle)
            self._installed = True
        return self

    def _handle(self, signum: int, frame: FrameType | None) -> Any:
        self.seen = True
        previous = self._previous
        if callable(previous):
            return previous(signum, frame)
        if previous == signal.SIG_IGN:
            return None
        raise KeyboardInterrupt

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._installed:  # (None: a handler set outside Python; Python's default then)
            previous = self._previous
            signal.signal(
                signal.SIGINT, signal.default_int_handler if previous is None else previous
            )
            self._installed = False
