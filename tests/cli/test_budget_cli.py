"""``dpkit budget init`` and ``dpkit budget show``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from dpkit import ZCDP, Accountant, ApproxDP, PureDP, approx_to_zcdp
from dpkit.cli.main import main


def test_init_creates_a_ledger_with_the_budget(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "b.sqlite"
    assert main(["budget", "init", str(path), "--epsilon", "1", "--delta", "1e-6"]) == 0
    assert "ApproxDP(epsilon=1.0, delta=1e-06)" in capsys.readouterr().out
    with Accountant.open(path) as acct:
        assert acct.budget == ApproxDP(1.0, 1e-6)
        assert acct.history == ()


@pytest.mark.parametrize(
    ("args", "budget"),
    [(["--epsilon", "2"], PureDP(2.0)), (["--rho", "0.5"], ZCDP(0.5))],
)
def test_init_budget_types(tmp_path: Path, args: list[str], budget: object) -> None:
    path = tmp_path / "b.sqlite"
    assert main(["budget", "init", str(path), *args]) == 0
    with Accountant.open(path) as acct:
        assert acct.budget == budget


@pytest.mark.parametrize(
    ("args", "composition"),
    [
        (["--epsilon", "2"], "tight"),
        (["--rho", "0.5"], "tight"),
        (["--epsilon", "2", "--delta", "0"], "tight"),
        (["--epsilon", "2", "--delta", "1e-6"], "basic"),
    ],
)
def test_init_composition_defaults_to_tight_where_it_is_a_filter(
    tmp_path: Path, args: list[str], composition: str
) -> None:
    path = tmp_path / "b.sqlite"
    assert main(["budget", "init", str(path), *args]) == 0
    with Accountant.open(path) as acct:
        assert acct.composition == composition


def test_init_refuses_to_overwrite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "b.sqlite"
    with Accountant(PureDP(1.0), ledger=path) as acct:
        acct.spend(PureDP(0.5), label="kept")
    assert main(["budget", "init", str(path), "--epsilon", "5"]) == 2
    assert "already exists; refusing to overwrite" in capsys.readouterr().err
    with Accountant.open(path) as acct:
        assert acct.budget == PureDP(1.0)
        assert [s.label for s in acct.history] == ["kept"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "a budget is required"),
        (["--delta", "1e-6"], "a budget is required"),
        (["--epsilon", "1", "--rho", "1"], "not both"),
        (["--epsilon", "0"], "`budget.epsilon` must be a finite number > 0"),
        (["--epsilon", "nan"], "`epsilon` must be a finite number"),
        (["--epsilon", "1", "--delta", "1.5"], "`delta`"),
        (["--epsilon", "1", "--delta", "0.9"], "--delta 0.9 is above 1/2"),
        (["--epsilon", "1", "--delta", "0.5000001"], "protects no one"),
    ],
)
def test_init_bad_budgets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    path = tmp_path / "b.sqlite"
    assert main(["budget", "init", str(path), *args]) == 2
    assert message in capsys.readouterr().err
    assert not path.exists()


def test_init_delta_of_one_half_is_the_largest_accepted(tmp_path: Path) -> None:
    path = tmp_path / "b.sqlite"
    assert main(["budget", "init", str(path), "--epsilon", "1", "--delta", "0.5"]) == 0
    with Accountant.open(path) as acct:
        assert acct.budget == ApproxDP(1.0, 0.5)


@pytest.mark.parametrize(
    "args",
    [
        ["--epsilon", "1", "--epsilon", "10"],
        ["--epsilon", "1", "--delta", "1e-6", "--delta", "1e-3"],
        ["--rho", "1", "--rho", "2"],
        ["--epsilon", "1", "--relation", "bounded", "--relation", "unbounded"],
    ],
)
def test_init_option_given_twice_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    """argparse kept the last value without a word: --epsilon 1 --epsilon 10 made budget 10."""
    path = tmp_path / "b.sqlite"
    with pytest.raises(SystemExit) as exit_:
        main(["budget", "init", str(path), *args])
    assert exit_.value.code == 2
    assert f"argument {args[-2]}: given twice" in capsys.readouterr().err
    assert not path.exists()


def test_show_prints_spends_and_remaining(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "b.sqlite"
    init = ["budget", "init", str(path), "--epsilon", "1", "--delta", "1e-6"]
    assert main([*init, "--composition", "basic"]) == 0
    with Accountant.open(path) as acct:
        acct.spend(PureDP(0.25), label="count of adults")
        acct.spend(ApproxDP(0.5, 5e-7), label="mean age")
    capsys.readouterr()
    assert main(["budget", "show", str(path)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == "budget     ApproxDP(epsilon=1.0, delta=1e-06)"
    header = next(i for i, line in enumerate(lines) if line.startswith("#"))
    assert "label" in lines[header] and "cost" in lines[header]
    assert lines[header + 1].split()[0] == "1" and "count of adults" in lines[header + 1]
    assert lines[header + 2].split()[0] == "2" and "mean age" in lines[header + 2]
    assert "spent      ApproxDP(epsilon=0.75, delta=5e-07)  (2 spends)" in out
    assert "remaining  ApproxDP(epsilon=0.25, delta=5e-07)" in out


def test_show_missing_or_corrupt(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "missing.sqlite"
    assert main(["budget", "show", str(missing)]) == 2
    assert "no ledger at" in capsys.readouterr().err
    assert not missing.exists()
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"\x00garbage" * 100)
    assert main(["budget", "show", str(bad)]) == 2
    assert "corrupt" in capsys.readouterr().err


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads anything")
def test_show_says_what_stops_it_never_corrupt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A healthy ledger in a read-only folder, or one the user may not read, used to be
    reported as "cannot be opened or is corrupt"."""
    folder = tmp_path / "shared"
    folder.mkdir()
    path = folder / "b.sqlite"
    with Accountant(PureDP(1.0), ledger=path) as acct:
        acct.spend(PureDP(0.5), label="count")
    folder.chmod(0o555)
    try:
        assert main(["budget", "show", str(path)]) == 2
        err = capsys.readouterr().err
        assert "is in a read-only folder" in err and "corrupt" not in err
    finally:
        folder.chmod(0o755)
    path.chmod(0)
    try:
        assert main(["budget", "show", str(path)]) == 2
        err = capsys.readouterr().err
        assert "cannot be read: permission denied" in err and "corrupt" not in err
    finally:
        path.chmod(0o644)
    assert main(["budget", "show", str(path)]) == 0


def test_console_script_entry_point(tmp_path: Path) -> None:
    path = tmp_path / "b.sqlite"
    cmd = [sys.executable, "-m", "dpkit.cli.main", "budget"]
    init = subprocess.run(
        [*cmd, "init", str(path), "--epsilon", "1"], capture_output=True, text=True, check=False
    )
    assert init.returncode == 0, init.stderr
    show = subprocess.run([*cmd, "show", str(path)], capture_output=True, text=True, check=False)
    assert show.returncode == 0, show.stderr
    assert "remaining  PureDP(epsilon=1.0)" in show.stdout


def test_demo_section_spends_and_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["demo", "--only", "demo_budget", "--seed", "3", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "refused: BudgetExceededError, remaining PureDP(epsilon=0.25)" in out
    assert "9 accepted, 1 refused" in out
    # one budget, Laplace counts at 1/128: 128 by basic composition; under tight accounting
    # the largest k whose composed events stay within epsilon 1 at delta 1e-6
    from dpkit.accounting import compose
    from dpkit.accounting.accountant import ACCOUNTANT_PLD_POINTS
    from dpkit.mechanisms import Laplace

    event = Laplace(epsilon=2.0**-7, sensitivity=1.0).event

    def fits(k: int) -> bool:
        c = compose([(event, k)], delta=1e-6, pld_points=ACCOUNTANT_PLD_POINTS)
        return c.epsilon <= 1.0

    lo, hi = 128, 4096  # fits(lo), not fits(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    assert lo > 5 * 128
    assert "composition='basic' (epsilons add)   fits 128 releases" in out
    assert f"composition='tight' (fixed workload) fits {lo} releases" in out
    # as a zCDP budget: the largest rho within (1, 1e-6), each count charged (1/128)^2 / 2
    rho = approx_to_zcdp(1.0, 1e-6).rho
    k = int(Fraction(rho) / (Fraction(2.0**-7) ** 2 / 2))
    assert 128 < k < lo
    assert f"the same as a zCDP budget, ZCDP(rho={rho!r}) (rhos add), fits {k} releases" in out
    with Accountant.open(tmp_path / "budget-demo.sqlite") as acct:
        assert [s.label for s in acct.history] == [
            "count of adults: Laplace",
            "sum of ages in [0, 100]: Laplace",
            "age histogram: Laplace",
            "count aged 40+: Laplace",
        ]
        assert acct.remaining == PureDP(0.0)
    # a second run starts from a fresh ledger of its own
    assert main(["demo", "--only", "demo_budget", "--seed", "3", "--out", str(tmp_path)]) == 0
    with Accountant.open(tmp_path / "budget-demo.sqlite") as acct:
        assert len(acct.history) == 4


def test_show_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "b.sqlite"
    with Accountant(ZCDP(0.5), ledger=path) as acct:
        acct.spend(PureDP(0.5), label="count")
    assert main(["budget", "show", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["budget"] == {"type": "ZCDP", "rho": 0.5}
    assert data["spent"] == {"type": "ZCDP", "rho": 0.125}
    assert data["remaining"] == {"type": "ZCDP", "rho": 0.375}
    [spend] = data["spends"]
    assert spend["label"] == "count" and spend["index"] == 1
    assert spend["cost"] == {"type": "PureDP", "epsilon": 0.5}
    assert spend["charge"] == {"type": "ZCDP", "rho": 0.125}


# -- epsilon under each analysis -----------------------------------------------------------


def _laplace_ledger(path: Path, budget: object, spends: int) -> None:
    from dpkit.accounting import events as ev

    with Accountant(budget, ledger=path, composition="tight") as acct:  # type: ignore[arg-type]
        for i in range(spends):
            acct.spend(PureDP(0.1), label=f"count {i}", events=[ev.Laplace(scale=10.0)])


def test_show_prints_epsilon_under_each_analysis_and_the_tightest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "b.sqlite"
    _laplace_ledger(path, ApproxDP(5.0, 1e-5), 60)  # 60 x 0.1 fit 5 under tight composition
    assert main(["budget", "show", str(path)]) == 0
    out = capsys.readouterr().out
    assert "the 60 spends composed at delta 1e-05, by analysis:" in out
    assert "  pld       epsilon 3.11962  <- tightest" in out
    assert "  basic     epsilon 6\n" in out
    assert "tightest   epsilon 3.11962" in out and "(pld)" in out
    assert "spent      ApproxDP(epsilon=3.11962" in out
    assert main(["budget", "show", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["composition"] == "tight"
    assert data["analyses"]["method"] == "pld"
    assert set(data["analyses"]["by_method"]) == {"pld", "rdp", "zcdp", "advanced", "basic"}
    assert data["analyses"]["lower"] <= data["analyses"]["epsilon"]


def test_show_of_a_pure_budget_composes_at_a_given_delta(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "b.sqlite"
    _laplace_ledger(path, PureDP(5.0), 20)
    assert main(["budget", "show", str(path)]) == 0
    assert "give --delta to compose" in capsys.readouterr().out
    assert main(["budget", "show", str(path), "--delta", "1e-5"]) == 0
    out = capsys.readouterr().out
    assert "the 20 spends composed at delta 1e-05" in out and "<- tightest" in out
    assert main(["budget", "show", str(path), "--delta", "0.9"]) == 2
    assert "--delta 0.9 is above 1/2" in capsys.readouterr().err


def test_compose_answers_what_k_runs_cost(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["budget", "compose", "--laplace-scale", "10", "--count", "100", "--delta", "1e-5"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    # 100 Laplace releases at epsilon 0.1, delta 1e-5: 4.22 by PLD, 10 by basic composition
    assert "  pld       epsilon 4.22035  <- tightest" in out
    assert "  rdp       epsilon 4.53294" in out
    assert "  basic     epsilon 10\n" in out
    assert main([*argv, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["method"] == "pld" and abs(data["epsilon"] - 4.22035) < 1e-5
    assert data["events"] == [
        {"event": "Laplace(scale=10.0, sensitivity=1.0, discrete=False)", "count": 100}
    ]
    # several mechanisms compose together; Gaussians alone by their exact composition
    gauss = ["budget", "compose", "--gaussian-sigma", "30", "--count", "1000", "--delta", "1e-5"]
    assert main(gauss) == 0
    assert "  gaussian  epsilon 4.65298  <- tightest" in capsys.readouterr().out
    argv = ["budget", "compose", "--laplace-scale", "10", "--exponential-epsilon", "0.1"]
    assert main([*argv, "--count", "10", "--delta", "1e-6"]) == 0
    assert "10 x Laplace(scale=10.0" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--delta", "1e-5"], "give at least one mechanism"),
        (["--laplace-scale", "-1", "--delta", "1e-5"], "Laplace: `scale` must be"),
        (["--gaussian-sigma", "nan", "--delta", "1e-5"], "Gaussian: `sigma` must be"),
        (["--laplace-scale", "1", "--delta", "2"], "--delta must be in (0, 1)"),
        (["--laplace-scale", "1", "--count", "0", "--delta", "0.1"], "--count must be >= 1"),
    ],
)
def test_compose_refuses_bad_flags_with_a_clear_error(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["budget", "compose", *args]) == 2
    assert message in capsys.readouterr().err


def test_compose_requires_a_delta(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["budget", "compose", "--laplace-scale", "10"])
    assert exit_.value.code == 2
    assert "--delta" in capsys.readouterr().err
