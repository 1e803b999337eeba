"""``dpkit`` entry point: a closed stdout (``| head``) ends every subcommand quietly."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from dpkit.cli.main import EXIT_BROKEN_PIPE, SUBCOMMANDS, main


class _ClosedPipe:
    """A stdout whose reader went away: every write or flush raises BrokenPipeError."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self) -> None:
        raise BrokenPipeError(32, "Broken pipe")

    def fileno(self) -> int:  # like pytest's capture: no descriptor to redirect
        raise OSError("no file descriptor")


NAMES = ["demo", "budget", "sensitivity", "compare", "audit", "query", "sql", "report"]


def _argv(name: str, tmp_path: Path) -> list[str]:
    ledger = tmp_path / "b.sqlite"
    if name == "report":
        from dpkit import Accountant, PureDP

        Accountant.create(ledger, PureDP(1.0)).close()
    return {
        "demo": ["demo", "--out", str(tmp_path), "--seed", "1", "--only", "mechanisms"],
        "budget": ["budget", "init", str(ledger), "--epsilon", "1"],
        "sensitivity": ["sensitivity", "--universe", "1,2,3", "--size", "2"],
        "compare": ["compare", "--bounds", "0,100", "--trials", "5", "--methods", "global"],
        "audit": ["audit", "laplace", "--samples", "1000", "--seed", "1", "--no-progress"],
        "query": ["query", "adult", "--epsilon", "1", "--delta", "1e-6", "--count"],
        "sql": ["sql", "adult", "SELECT COUNT(*) FROM data", "--epsilon", "1"],
        "report": ["report", str(ledger), "-o", str(tmp_path / "report.html")],
    }[name]


def test_every_subcommand_is_covered() -> None:
    # a new subcommand gets its case in _argv and in the parametrisation below
    assert {s.rsplit(".", 1)[-1] for s in SUBCOMMANDS} == set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_closed_stdout_exits_quietly(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monkeypatch.setattr(sys, "stdout", _ClosedPipe())
    assert main(_argv(name, tmp_path)) == EXIT_BROKEN_PIPE
    assert capsys.readouterr().err == ""  # no "Broken pipe" error, no traceback


def test_real_pipe_closed_by_its_reader(tmp_path: Path) -> None:
    # the reader closes the pipe before dpkit writes (imports take far longer than the close):
    # the first write fails, and so would the interpreter's final flush without the fix
    args = ["sensitivity", "--universe", "1,2,3,10,11", "--size", "3", "--distance", "1..3"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "dpkit.cli.main", *args, "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    with proc.stderr:
        err = proc.stderr.read()
    assert proc.wait(timeout=60) == EXIT_BROKEN_PIPE
    assert err == b""


def test_other_errors_still_one_line(capsys: Any) -> None:
    assert main(["sensitivity", "--universe", "1,2,3"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "dpkit sensitivity: error:" in err


def test_version_comes_from_the_package_metadata(capsys: Any) -> None:
    from importlib.metadata import version

    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.strip() == f"dpkit {version('dpkit')}"
