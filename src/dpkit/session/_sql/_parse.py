"""Reading the SQL text: one SELECT statement, parsed by sqlglot (DuckDB's dialect).

The text is only ever parsed here into sqlglot's syntax tree; no engine sees it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from dpkit.errors import MissingDependencyError, ParameterError

__all__ = ["MAX_LENGTH", "Parsed", "parse", "refuse", "sql_words", "sqlglot_modules"]

#: The longest query text accepted (characters).
MAX_LENGTH = 100_000

_SAMPLE = {
    "VAR_SAMP": "VAR_POP (or VARIANCE, which dpkit reads as the population variance)",
    "VARIANCE_SAMP": "VAR_POP (or VARIANCE, which dpkit reads as the population variance)",
    "STDDEV_SAMP": "STDDEV_POP (or STDDEV, which dpkit reads as the population deviation)",
    "STDEV_SAMP": "STDDEV_POP (or STDDEV, which dpkit reads as the population deviation)",
}


def refuse(construct: str, why: str, hint: str) -> ParameterError:
    """The refusal of one SQL construct, before anything is spent: what it is, why it
    cannot be released privately as written, and what would work instead."""
    return ParameterError(f"Session.sql: {construct}: {why}; {hint} (nothing was spent)")


def sqlglot_modules() -> tuple[Any, Any]:
    """``(sqlglot, sqlglot.exp)``, or MissingDependencyError naming the package."""
    try:
        import sqlglot
        from sqlglot import exp
    except ImportError:  # pragma: no cover - sqlglot is a runtime dependency
        raise MissingDependencyError(
            "Session.sql needs the SQL parser sqlglot: pip install sqlglot"
        ) from None
    return sqlglot, exp


@contextmanager
def _quiet() -> Iterator[None]:
    """sqlglot logs (rather than raises) when it falls back to an opaque command; the
    statement is refused here anyway, so its log lines are not shown."""
    log = logging.getLogger("sqlglot")
    level = log.level
    log.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        log.setLevel(level)


@dataclass(frozen=True)
class Parsed:
    """One SELECT statement: its tree, whether it began with ``EXPLAIN``, and its text."""

    select: Any
    explain: bool
    text: str


def _tokens(text: str) -> list[Any]:
    from sqlglot.dialects.duckdb import DuckDB

    try:
        with _quiet():
            return list(DuckDB().tokenize(text))
    except Exception as err:  # sqlglot's TokenError: the user's own text, safe to quote
        raise ParameterError(
            f"Session.sql: the query cannot be read ({_first_line(err)}); check its quotes "
            "and brackets (nothing was spent)"
        ) from None


def parse(text: Any) -> Parsed:
    """``text`` as one SELECT statement; ParameterError for anything else.

    A leading ``EXPLAIN`` is taken off and recorded. ``VAR_SAMP`` and ``STDDEV_SAMP``
    are refused here, since the parser reads them as ``VARIANCE`` and ``STDDEV``, which
    dpkit takes as population figures.
    """
    sqlglot, exp = sqlglot_modules()
    if not isinstance(text, str):
        raise TypeError(f"Session.sql: `query` must be a str of SQL; got {type(text).__name__}")
    if len(text) > MAX_LENGTH:
        raise ParameterError(
            f"Session.sql: the query is {len(text):,} characters long; at most {MAX_LENGTH:,}"
        )
    tokens = _tokens(text)
    if not tokens:
        raise ParameterError("Session.sql: the query is empty; write SELECT ... FROM data")
    explain = tokens[0].token_type.name == "COMMAND" and tokens[0].text.upper() == "EXPLAIN"
    body = text[tokens[0].end + 1 :] if explain else text
    if explain:
        tokens = _tokens(body)
    for tok in tokens:
        name = tok.text.upper()
        if name in _SAMPLE:
            raise refuse(
                f"{name}(...)",
                "the sample figure is not released (dpkit's variances and deviations are "
                "population figures, ddof = 0)",
                f"use {_SAMPLE[name]}",
            )
    try:
        from sqlglot.dialects.duckdb import DuckDB

        with _quiet():  # the tokens read above, parsed (the text is not read twice)
            parsed = DuckDB().parser().parse(tokens, body)
            trees = [t for t in parsed if t is not None]
    except sqlglot.errors.ParseError as err:
        raise ParameterError(
            f"Session.sql: the query does not parse ({_first_line(err)}); dpkit reads one "
            "SELECT statement in DuckDB's SQL (nothing was spent)"
        ) from None
    except Exception as err:  # other sqlglot errors on malformed text
        raise ParameterError(
            f"Session.sql: the query does not parse ({type(err).__name__}: {_first_line(err)}) "
            "(nothing was spent)"
        ) from None
    if not trees:
        raise ParameterError("Session.sql: the query is empty; write SELECT ... FROM data")
    if len(trees) > 1:
        raise refuse(
            f"{len(trees)} statements",
            "one call releases one SELECT (one accountant entry)",
            "call Session.sql once per statement, each with its share of the budget",
        )
    tree = trees[0]
    if isinstance(tree, exp.SetOperation):
        kind = type(tree).__name__.upper()
        raise refuse(
            f"{kind} of two SELECTs",
            "each side would be a release of its own, and a set operation on released rows "
            "is not one private query",
            "run each SELECT in its own call (their costs add up)",
        )
    if isinstance(tree, exp.Subquery):
        tree = tree.unnest()
    if not isinstance(tree, exp.Select):
        kind = tree.key.upper() if isinstance(tree.key, str) else type(tree).__name__
        raise refuse(
            f"a {kind} statement",
            "only SELECT queries are released (nothing is written, created or configured)",
            "write SELECT ... FROM data",
        )
    return Parsed(tree, explain, body)


def _first_line(err: Exception) -> str:
    lines = str(err).strip().splitlines()
    return lines[0][:300] if lines else type(err).__name__


#: The Session's hints, which speak narwhals, in SQL's words
_SQL_WORDS = (
    (
        "(nw.col(...).cast(nw.Int64) gives null where it is not a number)",
        "(CAST(x AS BIGINT) gives NULL where it is not a number; or declare the column's "
        "type: schema= or --schema COL:int)",
    ),
    (
        "apply it to numbers",
        "apply it to numbers (CAST(x AS DOUBLE) gives NULL where text is not a number; or "
        "declare the column's type: schema= or --schema COL:float)",
    ),
    ("cast to nw.Float64 first", "CAST(x AS DOUBLE) first"),
    ("cast to nw.String first", "CAST(x AS VARCHAR) first"),
    ("(__add__)", "(+)"),
    ("(__sub__)", "(-)"),
    ("(__mul__)", "(*)"),
    ("(__truediv__)", "(/)"),
    ("(__floordiv__)", "(//)"),
    ("(__mod__)", "(%)"),
    ("(__pow__)", "(^)"),
)


def sql_words(message: str) -> str:
    """A Session message about a row expression, its narwhals hints said in SQL."""
    for old, new in _SQL_WORDS:
        message = message.replace(old, new)
    return message
