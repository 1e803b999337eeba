"""The shell commands of the documentation site run as written.

Every line of every ``sh`` block on a page under docs/ is either run here (``dpkit ...``,
``.venv/bin/dpkit ...`` and ``python -c ...``), page by page in one scratch folder holding a
copy of examples/ (a later line may use a file an earlier one wrote), or is one of the
set-up commands this test cannot run, each named below with the reason. A command that
exits non-zero fails the test.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dpkit.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
SKIP_DIRS = ("_build", "_site", "_snapshots", "_screenshots", "_ext", "_static")

#: Commands the tests do not run, by their first words, and why.
NOT_RUN = {
    "make": "the Makefile's targets install environments; CI runs them",
    "pip": "installs packages into the environment running the tests",
    "source": "changes the shell running the commands",
    "apt": "installs system packages",
    "apt-get": "installs system packages",
    "spark-submit": "needs a Spark distribution; tests/docs/test_spark_guide.py runs the script",
}
#: The tour is `make demo` (tests/report/test_demo.py runs it); the rest runs as written
#: except that comparisons and audits draw fewer samples here.
FASTER = {"--trials 1000": "--trials 20", "--samples 20000": "--samples 2000"}


def _pages() -> list[Path]:
    pages = []
    for path in sorted(DOCS.rglob("*.md")):
        if path.relative_to(DOCS).parts[0] in SKIP_DIRS:
            continue
        if re.search(r"^```sh\n", path.read_text(), flags=re.M):
            pages.append(path)
    return pages


def commands(page: Path) -> list[str]:
    """The page's shell commands: comments after two spaces dropped, ``\\`` lines joined."""
    out = []
    for block in re.findall(r"^```sh\n(.*?)^```", page.read_text(), flags=re.S | re.M):
        pending = ""
        for raw in block.splitlines():
            line = raw.split("  #", 1)[0].rstrip()
            if line.endswith("\\"):
                pending += line[:-1] + " "
                continue
            line = (pending + line).strip()
            pending = ""
            if line:
                out.append(line)
    return out


def test_some_pages_have_commands() -> None:
    assert len(_pages()) >= 3


@pytest.mark.slow
@pytest.mark.parametrize("page", _pages(), ids=lambda p: str(p.relative_to(DOCS)))
def test_page_commands_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    for line in commands(page):
        for slow, fast in FASTER.items():
            line = line.replace(slow, fast)
        argv = shlex.split(line)
        if argv[0] in NOT_RUN:
            continue
        if argv[0] == ".venv/bin/dpkit":
            argv[0] = "dpkit"
        if argv[:2] == ["dpkit", "demo"]:
            continue
        if argv[0] == "python":
            subprocess.run([sys.executable, *argv[1:]], check=True, cwd=tmp_path)
        else:
            assert argv[0] == "dpkit", f"{page.name}: a command this test cannot run: {line}"
            try:
                code = main(argv[1:])
            except SystemExit as exc:  # --help exits through argparse
                code = exc.code if isinstance(exc.code, int) else 1
            assert code == 0, f"{page.name}: {line}"
