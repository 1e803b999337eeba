"""``dpkit report``: the release report of a ledger, from the ledger alone.

Examples::

    dpkit report budget.sqlite -o report.html
    dpkit report budget.sqlite -o report.html --title "Q3 statistics" --audit audit.json

The ledger keeps each Session release's record beside its spend (what it released, its
plan, its cost), so the report is the one ``Session.report`` writes (see
:mod:`dpkit.report.release_report`). ``--audit FILE`` adds the verdicts of a JSON file
written by ``dpkit audit ... --json``. ``dpkit query`` and ``dpkit sql`` write the report of
their release with ``--report FILE``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from dpkit.cli._args import once_each
from dpkit.errors import ParameterError

__all__ = ["check_output", "register"]


def register(sub: Any) -> None:
    """Add the ``report`` subcommand."""
    p = sub.add_parser(
        "report",
        help="write the release report (HTML) of a ledger",
        description="Write one self-contained HTML file for a privacy officer: the budget "
        "spent and remaining, every release in the ledger with its query, plan, released "
        "table and charts, what is not protected, and reproducibility.",
    )
    once_each(p)
    p.add_argument("ledger", metavar="LEDGER", help="a ledger file (dpkit budget init)")
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="the HTML file to write")
    p.add_argument("--title", default=None, help="the report's title")
    p.add_argument(
        "--audit",
        default=None,
        metavar="FILE",
        help="a JSON file of audit results (dpkit audit ... --json) to show their verdicts",
    )
    p.set_defaults(func=run)


def check_output(option: str, text: str) -> Path:
    """The report file named by ``option``: its folder must exist, and it must not be a
    folder (checked before anything is spent)."""
    path = Path(text)
    if path.is_dir():
        raise ParameterError(f"{option} {text!r} is a folder; give a file name (report.html)")
    if not path.parent.is_dir():
        raise ParameterError(f"{option} {text!r}: the folder {str(path.parent)!r} does not exist")
    return path


def _audit(text: str | None) -> Any:
    if text is None:
        return None
    path = Path(text)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ParameterError(f"report: no such --audit file {text!r}") from None
    except (OSError, ValueError) as exc:
        raise ParameterError(
            f"report: cannot read the --audit file {text!r} as JSON: {exc}"
        ) from None
    items = data if isinstance(data, list) else [data]
    if not all(isinstance(a, dict) and "verdict" in a for a in items):
        raise ParameterError(
            f"report: the --audit file {text!r} holds no audit results (write one with "
            "`dpkit audit ... --json`)"
        )
    return items


def run(args: argparse.Namespace) -> int:
    from dpkit.report.release_report import ledger_report

    if not Path(args.ledger).exists():
        raise ParameterError(f"report: no ledger {args.ledger!r}")
    out = check_output("report: -o", args.output)
    ledger_report(args.ledger, out, audit=_audit(args.audit), title=args.title)
    print(f"report written to {out}")
    return 0
