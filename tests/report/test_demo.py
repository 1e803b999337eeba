"""The demo runs every section end to end on the bundled data and writes its figures."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dpkit.report.demo import SECTIONS, run_demo


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    out = tmp_path_factory.mktemp("demo")
    lines: list[str] = []
    run_demo(out, seed=7, echo=lines.append)
    return "\n".join(lines), out


@pytest.mark.slow
def test_demo_runs_all_sections(demo: tuple[str, Path]) -> None:
    text, out = demo
    assert text.count("\n== ") == len(SECTIONS)
    assert "People aged 40 or more" in text and "true count         14,237" in text
    assert "selected:" in text
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert "laplace_vs_gaussian.png" in pngs
    assert len(pngs) >= 3
    for png in out.glob("*.png"):
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the analyst's section writes the release report of its three releases
    page = (out / "analyst-report.html").read_text()
    assert page.count('<article id="release-') == 3 and "release report (open it" in text


def _block(text: str, first: str) -> list[str]:
    """The lines of the table whose header line starts with ``first``, up to a blank line."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith(first))
    end = next((i for i in range(start, len(lines)) if not lines[i].strip()), len(lines))
    return lines[start:end]


def _right_edges(line: str) -> list[int]:
    return [m.end() for m in re.finditer(r"\S+(?: \S+)*", line)]


@pytest.mark.slow
def test_sensitivity_tables_columns_do_not_drift(demo: tuple[str, Path]) -> None:
    text, _ = demo
    toy = _block(text, "query    relation         k=1")
    rows = [line for line in toy if line.split()[0] in ("count", "sum", "mean", "median")]
    assert len(rows) == 8
    head = _right_edges(toy[0])[-3:]  # the k=1, k=2, k=3 columns end where their values end
    for row in rows:
        assert _right_edges(row)[-3:] == head, (toy[0], row)
    adult = _block(text, "query    relation          local")
    for row in adult[1:9]:
        assert _right_edges(row)[-4:] == _right_edges(adult[0])[-4:], (adult[0], row)


@pytest.mark.slow
def test_toy_figure_sits_beside_its_table(demo: tuple[str, Path]) -> None:
    text, _ = demo
    toy = _block(text, "query    relation         k=1")
    assert "figure of this table (the toy universe)" in toy[-2]
    assert text.index("figure of this table") < text.index("Adult's Age (32,561 people")


@pytest.mark.slow
def test_one_median_sensitivity_and_one_ptr_budget(demo: tuple[str, Path]) -> None:
    text, _ = demo
    # the sensitivity table: 100 replace-one, 50 add/remove; the comparison uses 50
    assert re.search(r"median   unbounded\s+0\s+50\s", text)
    assert "sensitivity 50 (the median's), Laplace scale 50" in text
    assert "the framework comparison below uses 50" in text
    # PTR: epsilon 1 in total, split in half, in its own section and in the comparison
    assert "epsilon 0.5 for the test + 0.5 for the release: total ApproxDP(epsilon=1.0" in text
    assert "epsilon 0.5 test + 0.5 release" in text
    assert "epsilon=2.0" not in text


@pytest.mark.slow
def test_true_values_are_labelled_and_releases_clamped(demo: tuple[str, Path]) -> None:
    text, _ = demo
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if re.search(r"\btrue\b", line):
            assert "non-private" in line or "non-private" in lines[i + 1], line
    assert text.count("releases clamped to [0, 100] (post-processing)") == 2
    median_table = _block(text, "Median of Age: true (non-private) value 37")
    glob = next(line for line in median_table if line.startswith("  global sensitivity     1-DP"))
    assert float(glob.split()[-4]) <= 100  # the 95% |error| of a median clamped to [0, 100]


@pytest.mark.slow
def test_exact_smooth_median_is_explained(demo: tuple[str, Path]) -> None:
    text, _ = demo
    m = re.search(r"equals the exact median 37 in ([\d,]+) of 1,000 trials", text)
    assert m is not None and int(m.group(1).replace(",", "")) > 0
    assert "step of the output lattice" in text and "never by the data" in text


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
    assert len(select_sections(None)) == len(SECTIONS)
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
