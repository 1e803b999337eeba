"""Checks shared by the subcommands: a ``--plot`` file name, checked before the command runs;
an option that takes one value, given at most once."""

from __future__ import annotations

from pathlib import Path

import pytest

from dpkit.cli.main import build_parser, main

COMMANDS = {
    "compare": ["compare", "--bounds", "0,100", "--trials", "5", "--methods", "global"],
    "sensitivity": ["sensitivity", "--universe", "1,2,3", "--size", "2"],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize(
    ("plot", "message"),
    [
        (".", "'.' is a folder"),
        ("", "'.' is a folder"),
        ("figures", "'figures' is a folder"),
        (".png", "'.png' has no file name before its suffix"),
        (".pdf", "'.pdf' has no file name before its suffix; give one, for example 'figure.pdf'"),
        ("missing/errors.png", "cannot write 'missing/errors.png': the folder 'missing' does not"),
    ],
)
def test_a_plot_path_that_cannot_name_a_figure_is_refused_before_the_work(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: str,
    plot: str,
    message: str,
) -> None:
    """`--plot .` wrote the figure to a hidden file `./.png` after the whole run; now nothing
    runs and nothing is written."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "figures").mkdir()
    assert main([*COMMANDS[command], "--plot", plot]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # the command did not run: no table
    assert f"dpkit {command}: error: --plot: {message}" in captured.err
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["figures"]


def test_a_plot_file_name_without_suffix_still_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("matplotlib")
    monkeypatch.chdir(tmp_path)
    assert main([*COMMANDS["sensitivity"], "--plot", "figure"]) == 0
    assert (tmp_path / "figure.png").is_file()  # matplotlib's default format


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["compare", "--bounds", "0,100", "--epsilon", "1", "--epsilon", "5"], "--epsilon"),
        (["compare", "--bounds", "0,100", "--max-memory", "1G", "--max-memory", "4G"], None),
        (["sensitivity", "--universe", "1,2", "--universe", "3,4", "--size", "2"], None),
        (["audit", "laplace", "--epsilon", "1", "--epsilon", "2"], "--epsilon"),
        (["audit", "laplace", "--samples", "100", "--samples", "200"], "--samples"),
        (["audit", "all", "--seed", "1", "--seed", "2"], "--seed"),
        (["audit", "query", "q.py", "--confidence", "0.9", "--confidence", "0.6"], None),
    ],
)
def test_every_subcommand_refuses_an_option_given_twice(
    capsys: pytest.CaptureFixture[str], argv: list[str], option: str | None
) -> None:
    """compare, sensitivity and audit kept the last of `--epsilon 1 --epsilon 5` without a
    word, as query did (once_each): a usage error before anything runs."""
    option = option or next(a for a in argv if argv.count(a) == 2 and a.startswith("--"))
    with pytest.raises(SystemExit) as stop:
        build_parser().parse_args(argv)  # refused while parsing: nothing runs
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {option}: given twice" in err and "give it once" in err
