"""Shared set-up of the command-line tests."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _no_inherited_terminal_width(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tables are laid out by the terminal's width ($COLUMNS first); pytest-xdist's workers
    set COLUMNS=80, a plain run inherits the caller's. A test sees no terminal unless it sets
    $COLUMNS itself, so a layout never depends on how the suite was started."""
    monkeypatch.delenv("COLUMNS", raising=False)
