"""What a query needs from its Session: one explicit handle, made by the Session.

A :class:`~dpkit.session.Query` reads the table, the public schema and the bounding settings
through :class:`SessionHandle`, checks the data before a spend, charges the Session's
accountant and hands back the release for its record, and touches nothing else of the
Session. The handle holds the Session's fixed facts (the engine, the privacy unit, the public
schema, the text columns, the bit source) and the Session's own methods for what changes
(the table as it is read now, the spend, the record).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import narwhals as nw

from dpkit.accounting import PrivacyLoss, Spend
from dpkit.session.engines import Engine

__all__ = ["SessionHandle"]


@dataclass(frozen=True, eq=False)
class SessionHandle:
    """A Session's side of its queries (see the module docstring)."""

    engine: Engine
    privacy_unit: str | None
    #: the public schema every query is checked against (column -> narwhals type)
    schema: dict[str, Any]
    #: text columns with no declared type (parsed as numbers by numeric aggregates)
    text: frozenset[str]
    #: the Session's bit source (``rng=None`` of a release)
    source: Any
    #: the ``max_rows_per_unit="auto"`` settings of the Session
    auto_rows: Any
    max_rows_per_unit: int | str | None
    max_groups_per_unit: int | None
    #: the working table kept across releases, and its columns known to hold no null or
    #: NaN (``None``: the data can change, nothing is kept)
    frame: nw.LazyFrame[Any]
    known_clean: dict[str, tuple[Any, Any] | None] | None
    #: the working table (``rows=False``: without rows on an eager engine)
    table: Callable[..., nw.LazyFrame[Any]]
    #: refuse, before a spend, data whose schema changed since the Session was made
    check_unchanged: Callable[[], None]
    #: refuse a column the engine cannot tell apart from another: ``(owner, name)``
    check_unambiguous: Callable[[str, str], None]
    #: charge the accountant: ``(cost, label, events) -> Spend``
    spend: Callable[[PrivacyLoss, str, tuple[Any, ...]], Spend]
    #: the release with its record kept: ``(release, spend, language, text, source)``
    recorded: Callable[..., Any]
