"""Library errors reworded for the command line: the options a user types, not Python.

The Session's messages name its Python parameters (``group_by(..., keys=[...])``,
``delta=1e-6``, ``privacy_unit=None``, ``dp.sum('x')``), which mean nothing to someone who
typed ``dpkit query ... --sum x:0:10``. :func:`query_message` rewrites each such phrase as
the ``dpkit query`` option that sets it (``--keys FILE``, ``--delta 1e-6``, no ``--unit``,
``--sum x``) and drops the library's owner prefixes (``release:``, ``Session:``), which
``dpkit query: error:`` replaces. Phrases it does not know pass unchanged; the test of the
command line checks that no Python remains in the messages users can reach.
"""

from __future__ import annotations

import re

__all__ = ["query_message"]

_AGGREGATES = "sum|mean|var|std|median|quantile|histogram|count"

#: (pattern, replacement), applied in order: the specific phrases before the general ones.
_QUERY_RULES: tuple[tuple[str, str], ...] = (
    # dpkit sql: the Session.sql parameters as its options
    (r"bounds=\{'([^']*)': \(lower, upper\)\}", r"--bounds \1:LOWER:UPPER"),
    (r"bounds=\{'([^']*)': 'auto'\}", r"--bounds \1:auto"),
    (r"keys=\{[^}]*\}", "--keys FILE"),
    (r"dp\.Session\(\.\.\., public=\{[^}]*\}\)", "--public NAME=FILE"),
    (r"^Session\.sql( \([^)]*\))?: ", ""),
    # a text column where a number is needed: a CSV file declares no types
    (
        r"(must be numeric \(integer, float or decimal\); got String)",
        r"\1 (declare its type with --schema COLUMN:float)",
    ),
    (r"group_by\(\.\.\., keys=(\[\.\.\.\]|\.\.\.)\)", "--keys FILE"),
    (r"\bwith delta = 0\b", "without --delta"),
    (r"\bdelta > 0\b", "--delta > 0"),
    (r"\b(epsilon|delta|rho)=(\.\.\.|[0-9][0-9.e+-]*)", r"--\1 \2"),
    (r"\bwith privacy_unit=None\b", "without --unit"),
    (r"\bprivacy_unit=None\b", "no --unit"),
    (r"\bprivacy_unit=('[^']*')", r"--unit \1"),
    (r"`privacy_unit`( column)?", "--unit column"),
    (r"\ba privacy_unit column\b", "a --unit column"),
    (r"\bmax_rows_per_unit='auto'", "--max-rows auto"),
    (r"`max_rows_per_unit`|\bmax_rows_per_unit\b", "--max-rows"),
    (r"`max_groups_per_unit`|\bmax_groups_per_unit\b", "--max-groups"),
    (r", given to dp\.Session\(\.\.\.\) or to s\.query\(\.\.\.\)", ""),
    (r"the public `keys`", "the --keys file"),
    (r"\bpublic `keys`", "the keys of the --keys file"),
    (r"`keys`", "--keys"),
    (r"`(epsilon|delta|rho|alpha)`", r"--\1"),
    (r"\braise (epsilon|delta|rho)\b", r"raise --\1"),
    (r"\(or rho\)", "(or --rho)"),
    (rf"\bdp\.({_AGGREGATES})\('([^']*)'\)", r"--\1 \2"),
    (rf"\bdp\.({_AGGREGATES})\b", r"--\1"),
    (r"\blevels `q`", "levels"),
    (r"`q`", "a level"),
    (r"numeric `bins` are edges", "the bin edges"),
    (r"`bins`", "the bins"),
    (r"`bounds`", "bounds"),
    (r"^(?:release|query|Session|agg): ", ""),
    (r"^group_by: ", "--group-by: "),
    (r"^Session \(([^)]*)\): ", r"\1: "),
)
_COMPILED = tuple((re.compile(p), r) for p, r in _QUERY_RULES)


def query_message(text: str) -> str:
    """A library error's message as ``dpkit query``'s options would say it (one line)."""
    out = " ".join(text.split())
    for pattern, replacement in _COMPILED:
        out = pattern.sub(replacement, out)
    return out
