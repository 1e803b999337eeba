"""Empirical privacy audits: test a mechanism, framework or query on neighbouring inputs.

:func:`audit` draws outputs of a randomized function on two neighbouring inputs, picks an
event on half of the draws and measures it on the other half, and reports a high-confidence
lower bound on epsilon with a verdict against the claimed guarantee, plus a floating-point
lattice check. :mod:`dpkit.audit.neighbours` builds worst-case neighbouring inputs;
:class:`SessionQuery` turns a Session query into a batched audit function
(:mod:`dpkit.audit.session_query`); :mod:`dpkit.audit.targets` audits every dpkit mechanism,
framework and Session query kind by name (as ``dpkit audit NAME`` does).
"""

from dpkit.audit.core import (
    DEFAULT_MAX_SAMPLES,
    MAX_MEMORY,
    MIN_CONFIDENCE,
    AuditResult,
    LatticeCheck,
    audit,
    format_table,
)
from dpkit.audit.session_query import SessionQuery

__all__ = [
    "DEFAULT_MAX_SAMPLES",
    "MAX_MEMORY",
    "MIN_CONFIDENCE",
    "AuditResult",
    "LatticeCheck",
    "SessionQuery",
    "audit",
    "format_table",
]
