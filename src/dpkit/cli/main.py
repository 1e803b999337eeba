"""Entry point of the ``dpkit`` command.

Each subcommand lives in its own module under :mod:`dpkit.cli` and exposes
``register(subparsers)``, which adds its parser and sets ``func`` to a callable taking the
parsed arguments and returning an exit code. Add a subcommand by appending its module to
``SUBCOMMANDS``.

Options several subcommands share are checked here, before the subcommand runs (so before
any work and any spend): a ``--plot`` figure file name (:func:`dpkit.cli._args.check_figure_path`).

Exit codes: 0 success; 2 a usage or parameter error (one line on stderr, no traceback);
130 (128 + SIGINT) after Ctrl-C, with one line saying what was kept and, for a release,
whether its budget was charged (:mod:`dpkit.cli._interrupt`); 141 (128 + SIGPIPE, what a
Unix tool killed by SIGPIPE reports) when the reader of the output went away, as in
``dpkit compare | head``: the command stops quietly.

A subcommand may set ``error_text`` (a function of a message) on its parsed arguments to
reword the library's errors in its own options (``dpkit query``:
:func:`dpkit.cli._errors.query_message`), and ``interrupted``, the line printed after a
Ctrl-C that it does not report itself.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from dpkit.cli._args import check_figure_path
from dpkit.cli._interrupt import EXIT_INTERRUPTED, Interrupted, settled
from dpkit.errors import DPError

__all__ = ["EXIT_BROKEN_PIPE", "EXIT_INTERRUPTED", "SUBCOMMANDS", "build_parser", "main"]

SUBCOMMANDS: tuple[str, ...] = (
    "dpkit.cli.demo",
    "dpkit.cli.budget",
    "dpkit.cli.sensitivity",
    "dpkit.cli.compare",
    "dpkit.cli.query",
    "dpkit.cli.sql",
    "dpkit.cli.audit",
    "dpkit.cli.report",
)

#: Exit code when stdout is closed early (``| head``): 128 + SIGPIPE (13), as the shell
#: reports for a process killed by SIGPIPE.
EXIT_BROKEN_PIPE = 141


def build_parser() -> argparse.ArgumentParser:
    """The ``dpkit`` argument parser with every subcommand of :data:`SUBCOMMANDS`.

    Returns
    -------
    argparse.ArgumentParser
        A parser whose parsed namespace carries ``command`` and ``func``.
    """
    parser = argparse.ArgumentParser(
        prog="dpkit",
        description="Differential privacy built around sensitivity.",
    )
    parser.add_argument("--version", action="version", version=f"dpkit {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in SUBCOMMANDS:
        importlib.import_module(name).register(sub)
    return parser


def _version() -> str:
    """The installed package's version (its metadata), or the source tree's when the package
    is run from a checkout that was never installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("dpkit")
    except PackageNotFoundError:
        return "(not installed)"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``dpkit`` command.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments after ``dpkit`` (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit code: 0 on success, 2 on a parameter or usage error (reported on stderr as
        one line), :data:`EXIT_INTERRUPTED` after Ctrl-C (one line),
        :data:`EXIT_BROKEN_PIPE` when stdout was closed by its reader.

    Raises
    ------
    SystemExit
        From argparse, for ``--help`` and malformed command lines (exit code 2).
    """
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
    except KeyboardInterrupt:  # while importing the subcommands
        print("dpkit: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    try:
        if getattr(args, "plot", None) is not None:  # every --plot names a figure file
            check_figure_path("--plot", Path(args.plot))
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe shows up here at the latest, not at exit
        return code
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except Interrupted as exc:
        message = exc.args[0] if exc.args else "interrupted"
    except KeyboardInterrupt:
        message = getattr(args, "interrupted", "interrupted")
    except (DPError, ValueError, TypeError, OSError) as exc:
        text = getattr(args, "error_text", str)(str(exc))
        print(f"dpkit {args.command}: error: {text}", file=sys.stderr)
        return 2
    # The same Ctrl-C can be raised again at any call (Polars raises it, then the
    # interpreter): absorbed, and the report tried again.
    for _ in range(10):
        with contextlib.suppress(KeyboardInterrupt):
            return _interrupted(args.command, message)
    return EXIT_INTERRUPTED


def _interrupted(command: str, message: str) -> int:
    """One line on stderr after Ctrl-C (a second Ctrl-C while writing it is ignored)."""

    def report() -> None:
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()  # what was printed before the interrupt comes first
        print(f"dpkit {command}: {message}", file=sys.stderr, flush=True)

    settled(report)  # with SIGINT ignored: the report is not cut short
    return EXIT_INTERRUPTED


def _silence_stdout() -> None:
    """Point stdout at the null device so the interpreter's final flush cannot fail again.

    Python flushes ``sys.stdout`` at exit; with the reader gone that flush would raise a second
    BrokenPipeError and print "Exception ignored ..." on stderr. Where stdout has no file
    descriptor (a test capturing it), there is nothing to redirect.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # io.UnsupportedOperation is both
        pass


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
