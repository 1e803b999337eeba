"""Ctrl-C on the command line: one line, exit code 130, and for a release whether its budget
was charged; engines that turn the interrupt into their own error are reported as
interrupted; ``dpkit audit all`` keeps the rows that finished."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from dpkit import Accountant, PureDP
from dpkit.cli._interrupt import EXIT_INTERRUPTED, InterruptWatch
from dpkit.cli.main import SUBCOMMANDS, main


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "people.csv"
    pl.DataFrame({"g": ["a", "b"] * 50, "x": [float(i % 10) for i in range(100)]}).write_csv(path)
    return path


@pytest.fixture
def ledger(tmp_path: Path) -> Path:
    path = tmp_path / "b.sqlite"
    Accountant.create(path, PureDP(10.0)).close()
    return path


def _spent(ledger: Path) -> int:
    with Accountant.open(ledger) as acct:
        return len(acct.history)


def _release(data: Path, ledger: Path) -> list[str]:
    return ["query", str(data), "--epsilon", "1", "--count", "--ledger", str(ledger)]


def _one_line(err: str) -> str:
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


def _interrupt(*args: Any, **kwargs: Any) -> Any:
    raise KeyboardInterrupt


@pytest.mark.parametrize("module", SUBCOMMANDS)
def test_every_subcommand_stops_with_one_line_and_130(
    module: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import dpkit.cli.main as entry

    name = module.rsplit(".", 1)[-1]
    real = entry.build_parser

    def build() -> Any:  # the subcommand, parsed as usual, is interrupted when it runs
        parser = real()
        parse = parser.parse_args
        parser.parse_args = lambda argv=None: _with_func(parse(argv))  # type: ignore[method-assign]
        return parser

    monkeypatch.setattr(entry, "build_parser", build)
    argv = {
        "demo": ["demo"],
        "budget": ["budget", "show", "x.sqlite"],
        "sensitivity": ["sensitivity"],
        "compare": ["compare"],
        "query": ["query", "adult"],
        "sql": ["sql", "adult", "SELECT COUNT(*) FROM data"],
        "audit": ["audit", "laplace"],
        "report": ["report", "x.sqlite", "-o", "r.html"],
    }[name]
    assert main(argv) == EXIT_INTERRUPTED
    err = _one_line(capsys.readouterr().err)
    assert err.startswith(f"dpkit {name}: interrupted")


def _with_func(args: Any) -> Any:
    args.func = _interrupt
    return args


def test_an_interrupt_before_the_spend_charges_nothing(
    data: Path, ledger: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from dpkit.session import query

    monkeypatch.setattr(query.Query, "_prepare", _interrupt)  # checks before the spend
    assert main(_release(data, ledger)) == EXIT_INTERRUPTED
    captured = capsys.readouterr()
    err = _one_line(captured.err)
    assert "interrupted before the spend: nothing was charged or released" in err
    assert captured.out == "" and _spent(ledger) == 0


def test_an_interrupt_after_the_spend_says_the_budget_was_charged(
    data: Path, ledger: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from dpkit.session import _pipeline

    monkeypatch.setattr(_pipeline, "execute", _interrupt)  # the engine's work after the spend
    assert main(_release(data, ledger)) == EXIT_INTERRUPTED
    captured = capsys.readouterr()
    err = _one_line(captured.err)
    assert "interrupted after the spend: the budget was charged PureDP(epsilon=1.0)" in err
    assert "nothing was released" in err and str(ledger) in err
    assert captured.out == "" and _spent(ledger) == 1


def test_an_sql_interrupt_after_the_spend_says_the_budget_was_charged(
    data: Path, ledger: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from dpkit.session import _pipeline

    monkeypatch.setattr(_pipeline, "execute", _interrupt)
    argv = ["sql", str(data), "SELECT COUNT(*) FROM data", "--epsilon", "1"]
    assert main([*argv, "--ledger", str(ledger)]) == EXIT_INTERRUPTED
    captured = capsys.readouterr()
    err = _one_line(captured.err)
    assert "interrupted after the spend: the budget was charged PureDP(epsilon=1.0)" in err
    assert captured.out == "" and _spent(ledger) == 1


def test_an_engine_error_caused_by_ctrl_c_is_reported_as_the_interrupt(
    data: Path, ledger: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Spark's SIGINT handler cancels its jobs and the collect fails (Py4JJavaError), which
    the Session reports as an engine failure "check the query's filters": a real SIGINT
    under a handler that does not raise, then an engine error, is the interrupt."""
    from dpkit.session import _pipeline

    def cancelled(*args: Any, **kwargs: Any) -> Any:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)  # the signal is delivered
        raise RuntimeError("Job 3 cancelled because SparkContext was shut down")

    monkeypatch.setattr(_pipeline, "execute", cancelled)
    previous = signal.signal(signal.SIGINT, lambda signum, frame: None)  # PySpark-like
    try:
        assert main(_release(data, ledger)) == EXIT_INTERRUPTED
    finally:
        signal.signal(signal.SIGINT, previous)
    err = _one_line(capsys.readouterr().err)
    assert "interrupted after the spend: the budget was charged" in err
    assert "engine failed" not in err and "filters" not in err
    # the same engine error without a Ctrl-C is the usual one-line error
    monkeypatch.setattr(_pipeline, "execute", _raise_runtime)
    assert main(_release(data, ledger)) == 2
    assert "the release failed after its spend (RuntimeError)" in capsys.readouterr().err


def _raise_runtime(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("boom")


def test_a_ctrl_c_raised_twice_is_reported_once(
    data: Path, ledger: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Polars raises KeyboardInterrupt from its own handler and the interpreter raises a
    second one for the same signal at its next check, which can be the first call of the
    report (the big-file run showed it at the call that reads the ledger, then while
    printing): each such second KeyboardInterrupt is absorbed and the report completed."""
    import dpkit.cli.main as entry
    from dpkit.cli import query as cli_query
    from dpkit.session import _pipeline

    monkeypatch.setattr(_pipeline, "execute", _interrupt)
    for name, module in (("settled", cli_query), ("_interrupted", entry)):
        real = getattr(module, name)
        calls: list[int] = []

        def again(*args: Any, _real: Any = real, _calls: list[int] = calls) -> Any:
            _calls.append(1)
            if len(_calls) == 1:
                raise KeyboardInterrupt  # the same Ctrl-C, at the call
            return _real(*args)

        monkeypatch.setattr(module, name, again)
    assert main(_release(data, ledger)) == EXIT_INTERRUPTED
    err = _one_line(capsys.readouterr().err)
    assert "interrupted after the spend: the budget was charged" in err
    assert _spent(ledger) == 1


def test_the_watch_sees_a_sigint_and_restores_the_wakeup_descriptor() -> None:
    previous = signal.signal(signal.SIGINT, lambda signum, frame: None)
    try:
        with InterruptWatch() as watch:
            assert not watch.seen
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)
            assert watch.seen
        assert signal.set_wakeup_fd(-1) == -1  # nothing left installed
        with InterruptWatch() as quiet:
            pass
        assert not quiet.seen
    finally:
        signal.signal(signal.SIGINT, previous)


def test_audit_all_prints_each_row_as_it_finishes_and_keeps_them_on_interrupt(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from dpkit.audit.targets import AuditCase

    real = AuditCase.run
    done: list[str] = []
    printed: list[str] = []

    def run(self: AuditCase, **kwargs: Any) -> Any:
        if len(done) == 2:  # what stdout holds when the third audit is interrupted
            printed.append(capsys.readouterr().out)
            raise KeyboardInterrupt
        done.append(self.name)
        return real(self, **{**kwargs, "samples": 200, "time_budget": 5})

    monkeypatch.setattr(AuditCase, "run", run)
    argv = ["audit", "all", "--seed", "1", "--no-progress"]
    assert main(argv) == EXIT_INTERRUPTED
    lines = printed[0].splitlines()  # the header and the two finished rows, as they finished
    assert len(lines) == 2 + 2 and lines[2].startswith(done[0]) and lines[3].startswith(done[1])
    err = _one_line(capsys.readouterr().err)
    assert "interrupted after 2 of" in err and "finished rows are printed above" in err
    done.clear()
    assert main([*argv, "--json"]) == EXIT_INTERRUPTED
    captured = capsys.readouterr()
    rows = json.loads(printed[1] + captured.out)
    assert [r["name"] for r in rows] == done and len(rows) == 2
    assert "printed as JSON" in _one_line(captured.err)


@pytest.mark.slow
def test_a_real_sigint_after_the_spend(data: Path, ledger: Path, tmp_path: Path) -> None:
    """One real Ctrl-C to a dpkit process whose release is running a Polars query after its
    spend: Polars aborts it and raises KeyboardInterrupt, the interpreter raises a second
    one for the same signal; one line on stderr, exit code 130, the ledger charged once, no
    traceback (it was "lost sys.stderr" and an object dump)."""
    script = tmp_path / "slow_release.py"
    script.write_text(  # the engine's work: a Polars query that runs until interrupted
        "import sys\n"
        "import polars as pl\n"
        "from dpkit.session import _pipeline\n"
        "def slow(*args, **kwargs):\n"
        "    lf = pl.LazyFrame({'a': range(20_000)}).join(\n"
        "        pl.LazyFrame({'b': range(20_000)}), how='cross').select(\n"
        "        (pl.col('a') * pl.col('b')).sort().sum())\n"
        "    print('released? not yet', file=sys.stderr, flush=True)\n"
        "    for _ in range(1000):\n"
        "        lf.collect(engine='streaming')\n"
        "_pipeline.execute = slow\n"
        "from dpkit.cli.main import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    proc = subprocess.Popen(
        [sys.executable, str(script), *_release(data, ledger)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert proc.stderr is not None
        assert proc.stderr.readline().strip() == "released? not yet"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == EXIT_INTERRUPTED
    assert out == ""
    assert _one_line(err).startswith("dpkit query: interrupted after the spend")
    assert _spent(ledger) == 1
