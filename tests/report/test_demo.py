"""The demo runs every section end to end on the bundled data and writes its figures."""

from __future__ import annotations

from pathlib import Path

import pytest

from dpkit.report.demo import SECTIONS, run_demo


@pytest.mark.slow
def test_demo_runs_all_sections(tmp_path: Path) -> None:
    lines: list[str] = []
    run_demo(tmp_path, seed=7, echo=lines.append)
    text = "\n".join(lines)
    assert text.count("\n== ") == len(SECTIONS)
    assert "People aged 40 or more" in text and "true count         14,237" in text
    assert "selected:" in text
    pngs = sorted(p.name for p in tmp_path.glob("*.png"))
    assert "laplace_vs_gaussian.png" in pngs
    assert len(pngs) >= 3
    for png in tmp_path.glob("*.png"):
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_demo_cli_only_one_section(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from dpkit.cli.main import main

    assert main(["demo", "--out", str(tmp_path), "--seed", "1", "--only", "demo_mechanisms"]) == 0
    out = capsys.readouterr().out
    assert "== Mechanisms" in out and "== Privacy budgets" not in out
    assert (tmp_path / "laplace_vs_gaussian.png").exists()


def test_only_picks_sections_by_exact_name(capsys: pytest.CaptureFixture[str]) -> None:
    from dpkit.cli.main import main
    from dpkit.report.demo import select_sections

    # "sensitivity" is also a word of the frameworks title; only its own section runs
    assert select_sections(["sensitivity"]) == ["dpkit.report.demo_sensitivity"]
    assert select_sections(["Demo_Budget", "mechanisms"]) == [
        "dpkit.report.demo_mechanisms",
        "dpkit.report.demo_budget",
    ]
    assert len(select_sections(None)) == 4
    assert main(["demo", "--only", "frameworkz"]) == 2
    err = capsys.readouterr().err
    assert "no section 'frameworkz'" in err and "frameworks" in err


_HIDE_MATPLOTLIB = """
import sys

class HideMatplotlib:  # a plain `pip install dpkit`: no matplotlib anywhere
    def find_spec(self, name, path=None, target=None):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, HideMatplotlib())
from dpkit.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def test_demo_without_matplotlib_names_the_extra_before_starting(tmp_path: Path) -> None:
    import subprocess
    import sys

    out = tmp_path / "figs"
    proc = subprocess.run(
        [sys.executable, "-c", _HIDE_MATPLOTLIB, "demo", "--out", str(out), "--seed", "1"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""  # not one section printed first
    assert proc.stderr == (
        "dpkit demo: error: the demo needs matplotlib to draw figures, and it is not "
        "installed: pip install 'dpkit[plot]'\n"
    )
    assert not out.exists()


def test_run_demo_checks_matplotlib_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from dpkit.errors import MissingDependencyError

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    lines: list[str] = []
    with pytest.raises(MissingDependencyError, match=r"pip install 'dpkit\[plot\]'"):
        run_demo(tmp_path / "figs", seed=1, echo=lines.append)
    assert lines == []
    with pytest.raises(ImportError):  # still an ImportError for callers catching that
        run_demo(tmp_path / "figs", seed=1, echo=lines.append)
