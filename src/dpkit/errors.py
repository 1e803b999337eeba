"""Exceptions raised by dpkit.

The tree::

    DPError                       base of everything dpkit raises on purpose
    ├── ParameterError(ValueError)    a privacy parameter, bound or data value is not allowed
    ├── BudgetExceededError           an accountant refused a spend that would overspend
    ├── UnsafeReleaseError            the request would release something that breaks the guarantee
    ├── LedgerError                   a budget ledger is unreadable, corrupt or does not match
    ├── MissingDependencyError(ImportError)  an optional extra is not installed; names it
    └── InternalError(AssertionError) "this is a bug": an invariant of dpkit itself failed

Wrong *types* raise the built-in :class:`TypeError`; wrong *values* raise a
:class:`ParameterError` (a :class:`ValueError`), so ``except ValueError`` keeps working.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "BudgetExceededError",
    "DPError",
    "InternalError",
    "LedgerError",
    "MissingDependencyError",
    "ParameterError",
    "UnsafeReleaseError",
]


class DPError(Exception):
    """Base class of every exception dpkit raises on purpose."""


class ParameterError(DPError, ValueError):
    """A parameter or data value is outside what is allowed; the message names it."""


class BudgetExceededError(DPError):
    """A spend was refused because it would exceed the budget.

    Attributes
    ----------
    requested
        The privacy cost that was asked for.
    remaining
        What the budget still allows, in the budget's own type.
    """

    def __init__(self, message: str, *, requested: Any = None, remaining: Any = None) -> None:
        super().__init__(message)
        self.requested = requested
        self.remaining = remaining


class UnsafeReleaseError(DPError):
    """The request would release something that breaks the privacy guarantee."""


class LedgerError(DPError):
    """A budget ledger file is unreadable, corrupt, or was opened with a different budget."""


class MissingDependencyError(DPError, ImportError):
    """An optional dependency is not installed; the message names the extra that provides it.

    For example ``the demo draws figures with matplotlib, which is not installed: pip install
    'dpkit[plot]'``. It is an :class:`ImportError`, so ``except ImportError`` keeps working.
    """


class InternalError(DPError, AssertionError):
    """An internal invariant failed. This is a bug in dpkit: please report it."""
