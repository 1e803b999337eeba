"""Self-check of the mutation list, run by `make test` so the list cannot rot.

`make mutation` (tests/mutation/mutate.py) is slow and runs separately; these checks are fast:
every mutant file parses, every original snippet occurs exactly once in the current source and
its mutated file compiles, and every listed test node id exists.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

HERE = Path(__file__).resolve().parent


def _load_runner() -> ModuleType:
    spec = importlib.util.spec_from_file_location("dpkit_mutation_runner", HERE / "mutate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


runner = _load_runner()


@pytest.fixture(scope="module")
def mutants() -> list:
    return runner.load_mutants()


def test_mutant_files_are_well_formed(mutants: list) -> None:
    assert len(mutants) >= 1
    assert len({m.id for m in mutants}) == len(mutants)


def test_every_original_snippet_occurs_exactly_once(mutants: list) -> None:
    problems = runner.check_mutants(mutants)
    assert not problems, "\n\n".join(problems)


def _collect(files: list[str]) -> set[str]:
    """Node ids pytest collects from ``files`` (a separate ``--collect-only`` run)."""
    if not files:
        return set()
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *files],
        cwd=runner.ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return {line.strip() for line in out.stdout.splitlines() if "::" in line}


def test_every_listed_test_exists(mutants: list, request: pytest.FixtureRequest) -> None:
    files = runner.listed_test_files(mutants)
    missing_files = [f for f in files if not (runner.ROOT / f).is_file()]
    assert not missing_files, f"test files named by mutants do not exist: {missing_files}"
    # `make test` collects every test file already: use its items when nothing was
    # deselected, and collect the other files in a subprocess
    opt = request.config.option
    filtered = bool(opt.keyword or opt.markexpr or getattr(opt, "deselect", None))
    collected = set() if filtered else {item.nodeid for item in request.session.items}
    in_session = {c.split("::", 1)[0] for c in collected}
    collected |= _collect([f for f in files if f not in in_session])
    missing = []
    for m in mutants:
        for t in m.tests:
            # a node id, a prefix of parametrised ones (``file::test`` runs them all) or a file
            if t not in collected and not any(c.startswith((t + "[", t + "::")) for c in collected):
                missing.append(f"{m.id}: {t}")
    assert not missing, "listed tests that pytest does not collect:\n" + "\n".join(missing)


def test_the_checks_catch_a_moved_snippet(tmp_path: Path) -> None:
    # the self-check can fail: a snippet that is absent, or present twice, is reported
    bad = tmp_path / "bad.toml"
    bad.write_text(
        "[[mutant]]\n"
        'id = "absent"\n'
        'file = "src/dpkit/mechanisms/laplace.py"\n'
        'description = "a snippet that is not in the file"\n'
        "original = 'this text is not in laplace.py'\n"
        "replacement = 'x'\n"
        'tests = ["tests/mechanisms/test_distributions.py::test_laplace_noise_distribution"]\n'
        "[[mutant]]\n"
        'id = "twice"\n'
        'file = "src/dpkit/mechanisms/laplace.py"\n'
        'description = "a snippet present more than once"\n'
        "original = 'import'\n"
        "replacement = 'x'\n"
        'tests = ["tests/mechanisms/test_distributions.py::test_laplace_noise_distribution"]\n'
    )
    found = runner.load_mutants(tmp_path)
    problems = runner.check_mutants(found)
    assert len(problems) == 2
    assert "occurs 0 times" in problems[0] and "occurs" in problems[1]
    bad.write_text(bad.read_text().replace('id = "twice"', 'id = "absent"'))
    with pytest.raises(runner.MutantFileError, match="already used"):
        runner.load_mutants(tmp_path)
