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
    assert len(select_sections(None)) == len(SECTIONS)
    assert main(["demo", "--only", "frameworkz"]) == 2
    err = capsys.readouterr().err
    assert "no section 'frameworkz'" in err and "frameworks" in err
