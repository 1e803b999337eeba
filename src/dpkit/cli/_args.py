"""Checks of command-line values that several subcommands share (the library checks the rest).

* :class:`Once`, an option that may be given at most once. argparse's default ``store`` keeps
  the last of ``--epsilon 1 --epsilon 5`` without a word; for an option that decides what is
  released (a privacy parameter, the privacy unit, an aggregate, the ledger charged) that is a
  silent surprise, so a repeat is a usage error (exit 2).
* :func:`check_delta_limit`, the largest ``--delta`` a command that releases or sets a budget
  accepts (:data:`MAX_DELTA`).
* :func:`check_figure_path`, a ``--plot`` file name: refused at once, before the command does
  any work or spends any budget, when it is a folder or has no name before its suffix.
* :func:`terminal_width`, the width a printed table must fit to be shown wide.
* :func:`note_figure`, the line saying where a figure went, after the table it belongs to.
* :func:`add_schema` and :func:`schema_of`, ``--schema COL:TYPE`` (repeatable): declared
  column types for a release's Session (a CSV file declares none: its columns are text).
"""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dpkit.errors import ParameterError

__all__ = [
    "MAX_DELTA",
    "SCHEMA_TYPES",
    "Once",
    "add_schema",
    "check_delta_limit",
    "check_figure_path",
    "memory_size",
    "note_figure",
    "once_each",
    "schema_of",
    "terminal_width",
]

#: The width assumed when the output is not a terminal (and $COLUMNS is unset).
NO_TERMINAL_WIDTH = 240

#: The largest ``--delta`` of a release or a budget on the command line. ``delta`` must stay
#: far below ``1/n`` for ``n`` people: a mechanism that publishes each person's record in the
#: clear with probability ``delta`` is ``(0, delta)``-DP (:class:`dpkit.ApproxDP`), the rule
#: ``dpkit compare`` enforces as ``delta <= 1/n`` with its public ``n``. A release cannot count
#: its people without spending privacy (and must not quote the count), so the command line
#: refuses only what breaks that rule for every table of two or more people: ``delta > 1/2``.
#: The Python API keeps ApproxDP's whole range ``[0, 1)``.
MAX_DELTA = 0.5

_GIVEN = "_options_given"  # the namespace attribute where Once records what it has seen


class Once(argparse.Action):
    """Store an option's value like ``store``, but refuse the option given a second time.

    ``hint`` (optional) ends the message, for example why the option cannot take two values.
    """

    def __init__(self, *args: Any, hint: str = "", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.hint = hint

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        given: set[str] = namespace.__dict__.setdefault(_GIVEN, set())
        if self.dest in given:
            raise argparse.ArgumentError(
                self,
                f"given twice ({getattr(namespace, self.dest)!r}, then {values!r}); it takes "
                "one value and would keep only the last: give it once"
                + (f"; {self.hint}" if self.hint else ""),
            )
        given.add(self.dest)
        setattr(namespace, self.dest, values)


def once_each(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Make :class:`Once` the default action of ``parser``: every option added after this
    call that takes one value (no ``action=``) refuses a repeat; flags keep theirs."""
    parser.register("action", None, Once)
    return parser


def check_delta_limit(command: str, delta: float | None) -> None:
    """Refuse a ``--delta`` in ``(MAX_DELTA, 1)``: valid for ApproxDP, meaningless for a release.

    Values outside ``[0, 1)`` (and NaN) are left to the library, whose message names the
    allowed range.

    Raises
    ------
    ParameterError
        ``MAX_DELTA < delta < 1``.
    """
    if delta is not None and MAX_DELTA < delta < 1:
        raise ParameterError(
            f"{command}: --delta {delta!r} is above 1/2, so above 1/n for every table of two "
            "or more people: publishing each person's record with probability delta is "
            "(0, delta)-DP, so such a delta protects no one. Use a delta far below 1/n for n "
            "people, for example 1e-6"
        )


def check_figure_path(flag: str, path: Path) -> Path:
    """A file name a figure can be written to: not a folder, a name before any suffix, and an
    existing folder to write it in.

    Call it before any work (and before any spend): matplotlib would otherwise write
    ``--plot .`` to a hidden file ``./.png``, after the work is done.

    Raises
    ------
    ParameterError
        ``path`` is an existing folder, has no name before its suffix (``.png``) or lies in a
        folder that does not exist.
    """
    shown = str(path)
    if path.is_dir():
        raise ParameterError(
            f"{flag}: {shown!r} is a folder; give a file name for the figure, for example "
            f"{str(path / 'figure.png')!r}"
        )
    name = path.name.lstrip(".")  # "png" for ".png"
    if not name or (name != path.name and "." not in name):
        example = path.with_name(f"figure.{name or 'png'}")
        raise ParameterError(
            f"{flag}: {shown!r} has no file name before its suffix; give one, for example "
            f"{str(example)!r}"
        )
    if not path.parent.is_dir():
        raise ParameterError(
            f"{flag}: cannot write {shown!r}: the folder {str(path.parent)!r} does not exist"
        )
    return path


def memory_size(text: str) -> int:
    """A ``--max-memory`` value: ``"4G"``, ``"512M"``, ``"100K"`` or a number of bytes -> bytes."""
    units = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
    t = text.strip().upper().removesuffix("B").removesuffix("I")
    scale = units.get(t[-1:], 1)
    try:
        value = float(t[:-1] if scale > 1 else t)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a size such as 512M or 4G; got {text!r}"
        ) from None
    if not 0 < value < 2**60:
        raise argparse.ArgumentTypeError(
            f"expected a finite size > 0, such as 512M or 4G; got {text!r}"
        )
    return int(value * scale)


def terminal_width() -> int:
    """The terminal's width ($COLUMNS first); :data:`NO_TERMINAL_WIDTH` without a terminal."""
    return shutil.get_terminal_size((NO_TERMINAL_WIDTH, 24)).columns


def note_figure(path: Path, json_output: bool) -> None:
    """Say where the figure was written: on stdout after the table, or on stderr when stdout
    holds JSON. stdout is flushed first, so that in a combined capture (``2>&1``, a pipe
    flushed in blocks) the line never lands inside the table."""
    sys.stdout.flush()
    print(f"figure written to {path}", file=sys.stderr if json_output else sys.stdout)


#: ``--schema`` type names and the Session's names for them
SCHEMA_TYPES = {
    "int": "int64",
    "float": "float64",
    "str": "string",
    "bool": "bool",
    "date": "date",
    "datetime": "datetime",
}


def add_release_options(parser: argparse.ArgumentParser, *, delta_help: str) -> None:
    """The options of one Session release (``dpkit query``, ``dpkit sql``): its privacy
    parameters, the interval level and the privacy unit with its contribution bounds."""
    parser.add_argument("--epsilon", type=float, default=None, help="epsilon of this release (> 0)")
    parser.add_argument("--delta", type=float, default=0.0, help=delta_help)
    parser.add_argument("--rho", type=float, default=None, help="a zCDP release instead of epsilon")
    parser.add_argument("--alpha", type=float, default=0.05, help="intervals at level 1 - alpha")
    parser.add_argument("--unit", default=None, help="column naming the person (privacy unit)")
    parser.add_argument(
        "--max-rows",
        default=None,
        metavar="K",
        help="rows kept per unit (an int), or 'auto' to choose it privately",
    )
    parser.add_argument("--max-groups", type=int, default=None, help="groups kept per unit")


def add_output_options(
    parser: argparse.ArgumentParser, *, layouts: Sequence[str], layout_help: str
) -> None:
    """What a Session release spends from and prints (``dpkit query``, ``dpkit sql``): the
    ledger, a seed, JSON, the plan alone, the release report and the table's layout."""
    parser.add_argument("--ledger", default=None, help="spend from this ledger (dpkit budget init)")
    parser.add_argument("--seed", type=int, default=None, help="reproducible noise (NOT private)")
    parser.add_argument(
        "--json", action="store_true", help="print JSON (a value past the float range is null)"
    )
    parser.add_argument("--explain", action="store_true", help="print the plan; spend nothing")
    parser.add_argument(
        "--report",
        default=None,
        metavar="FILE",
        help="also write the release report (one HTML file) of this release and its budget",
    )
    parser.add_argument("--layout", choices=layouts, default="auto", help=layout_help)


def add_schema(parser: argparse.ArgumentParser) -> None:
    """Add ``--schema COL:TYPE`` (repeatable) to ``parser``."""
    parser.add_argument(
        "--schema",
        action="append",
        default=[],
        metavar="COL:TYPE",
        help="declare a column's type (repeatable; TYPE one of "
        + ", ".join(SCHEMA_TYPES)
        + "): a CSV file declares none, so its columns are text until declared; a value "
        "that does not convert counts as missing",
    )


def schema_of(command: str, specs: Sequence[str]) -> dict[str, str] | None:
    """``--schema`` values as the Session's ``schema=`` (None when none is given).

    Raises
    ------
    ParameterError
        A value not of the form ``COL:TYPE`` with a known type, or a column named twice.
    """
    out: dict[str, str] = {}
    for spec in specs:
        col, _, kind = spec.rpartition(":")
        if not col or kind not in SCHEMA_TYPES:
            raise ParameterError(
                f"{command}: --schema takes COL:TYPE with TYPE one of "
                f"{', '.join(SCHEMA_TYPES)}; got {spec!r}"
            )
        if col in out:
            raise ParameterError(f"{command}: --schema declares {col!r} twice; give it once")
        out[col] = SCHEMA_TYPES[kind]
    return out or None
