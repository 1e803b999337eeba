"""The release report (``dpkit report LEDGER``, ``Session.report``, ``QueryRelease.report``).

The renderer lives in :mod:`dpkit.render.release_report`, below the session layer, so the
Session can call it; this module keeps its public path.
"""

from __future__ import annotations

from dpkit.render.release_report import (
    ReportData,
    SpendRow,
    ledger_data,
    ledger_report,
    release_report,
    render,
    session_data,
    session_report,
    spend_events,
)

__all__ = [
    "ReportData",
    "SpendRow",
    "ledger_data",
    "ledger_report",
    "release_report",
    "render",
    "session_data",
    "session_report",
    "spend_events",
]
