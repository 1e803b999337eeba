"""`make mutation`: apply hand-written wrong variants of privacy-relevant code, one at a time.

Each mutant (declared in ``tests/mutation/mutants/*.toml``, format in the README next to this
file) names a source file, an exact snippet that must occur there exactly once, its wrong
replacement, and the test node ids that must reject it. For every mutant the runner writes the
mutated file into a scratch copy of ``src/dpkit`` (never the working tree), runs only the
listed tests against that copy (``PYTHONPATH`` puts it first, bytecode caching is off so no
stale ``.pyc`` can hide the change) and records whether they failed (killed) or passed
(survived). Before the mutants, the union of all listed tests runs once on the unmutated copy
and must pass: a kill only means something if the tests pass on the real code.

Usage (from the repository root; ``make mutation MUTATION_ARGS="..."`` passes arguments)::

    python tests/mutation/mutate.py                 # every mutant; exit 1 if any survives
    python tests/mutation/mutate.py --only 'laplace-*' --only ptr-threshold-low
    python tests/mutation/mutate.py --jobs 2        # two scratch copies in parallel
    python tests/mutation/mutate.py --list          # the mutants, nothing run
    python tests/mutation/mutate.py --check         # static checks only (snippets, syntax)

Exit status: 0 when every mutant is killed (mutants marked ``equivalent`` must survive),
1 when a mutant survives or errs, 2 when the mutant files are malformed or the baseline fails.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MUTANT_DIR = Path(__file__).resolve().parent / "mutants"
FIELDS = {"id", "file", "description", "original", "replacement", "tests", "equivalent", "timeout"}
REQUIRED = ("id", "file", "description", "original", "replacement", "tests")
DEFAULT_TIMEOUT = 300.0

__all__ = [
    "Mutant",
    "MutantFileError",
    "check_mutants",
    "listed_test_files",
    "load_mutants",
    "main",
    "mutated_source",
]


class MutantFileError(ValueError):
    """A mutant declaration is malformed or no longer matches the source."""


@dataclass(frozen=True)
class Mutant:
    """One wrong variant: ``original`` (exactly once in ``file``) becomes ``replacement``."""

    id: str
    file: str
    description: str
    original: str
    replacement: str
    tests: tuple[str, ...]
    origin: str
    equivalent: str | None = None
    timeout: float = DEFAULT_TIMEOUT

    @property
    def package_path(self) -> Path:
        """The file's path inside ``src/`` (``dpkit/...``)."""
        return Path(self.file).relative_to("src")


@dataclass
class Outcome:
    mutant: Mutant
    status: str  # killed | survived | timeout | error | equivalent | equivalent-killed
    seconds: float
    detail: str = ""
    failed: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status in ("killed", "timeout", "equivalent")


def load_mutants(directory: Path = MUTANT_DIR) -> list[Mutant]:
    """Every mutant of every ``*.toml`` file in ``directory``, in file then declaration order."""
    out: list[Mutant] = []
    seen: dict[str, str] = {}
    files = sorted(directory.glob("*.toml"))
    if not files:
        raise MutantFileError(f"no mutant files (*.toml) in {directory}")
    for path in files:
        origin = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise MutantFileError(f"{origin}: not valid TOML: {exc}") from exc
        extra = set(data) - {"mutant"}
        if extra:
            raise MutantFileError(f"{origin}: unknown top-level keys {sorted(extra)}")
        entries = data.get("mutant", [])
        if not isinstance(entries, list):
            raise MutantFileError(f"{origin}: mutants are [[mutant]] tables")
        for i, entry in enumerate(entries):
            where = f"{origin}: mutant #{i + 1}"
            missing = [k for k in REQUIRED if k not in entry]
            if missing:
                raise MutantFileError(f"{where}: missing {missing}")
            unknown = set(entry) - FIELDS
            if unknown:
                raise MutantFileError(f"{where} ({entry['id']}): unknown keys {sorted(unknown)}")
            for key in ("id", "file", "description", "original", "replacement"):
                if not isinstance(entry[key], str) or not entry[key]:
                    raise MutantFileError(f"{where}: `{key}` must be a non-empty string")
            mid = entry["id"]
            if mid in seen:
                raise MutantFileError(f"{where}: id {mid!r} already used in {seen[mid]}")
            seen[mid] = origin
            tests = entry["tests"]
            if (
                not isinstance(tests, list)
                or not tests
                or not all(isinstance(t, str) and t for t in tests)
            ):
                raise MutantFileError(f"{where} ({mid}): `tests` must be a non-empty list of ids")
            for t in tests:
                if not t.startswith("tests/") or ".py" not in t:
                    raise MutantFileError(
                        f"{where} ({mid}): test id {t!r} must be a node id under tests/ "
                        "(tests/.../test_x.py::test_name[param]); doctests of src/ cannot run "
                        "against the scratch copy"
                    )
            if not entry["file"].startswith("src/dpkit/") or not entry["file"].endswith(".py"):
                raise MutantFileError(f"{where} ({mid}): `file` must be src/dpkit/....py")
            if entry["original"] == entry["replacement"]:
                raise MutantFileError(f"{where} ({mid}): replacement equals original")
            equivalent = entry.get("equivalent")
            if equivalent is not None and (not isinstance(equivalent, str) or not equivalent):
                raise MutantFileError(f"{where} ({mid}): `equivalent` must explain why (a string)")
            timeout = entry.get("timeout", DEFAULT_TIMEOUT)
            if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
                raise MutantFileError(f"{where} ({mid}): `timeout` must be seconds > 0")
            out.append(
                Mutant(
                    id=mid,
                    file=entry["file"],
                    description=" ".join(entry["description"].split()),
                    original=entry["original"],
                    replacement=entry["replacement"],
                    tests=tuple(tests),
                    origin=origin,
                    equivalent=equivalent,
                    timeout=float(timeout),
                )
            )
    return out


def mutated_source(mutant: Mutant, root: Path = ROOT) -> tuple[str, str]:
    """``(original text, mutated text)`` of the mutant's file; checks the snippet is unique."""
    path = root / mutant.file
    if not path.is_file():
        raise MutantFileError(f"{mutant.id}: {mutant.file} does not exist")
    text = path.read_text(encoding="utf-8")
    count = text.count(mutant.original)
    if count != 1:
        raise MutantFileError(
            f"{mutant.id} ({mutant.origin}): the original snippet occurs {count} times in "
            f"{mutant.file} (it must occur exactly once; the code moved or the snippet needs "
            f"more context):\n{mutant.original}"
        )
    new = text.replace(mutant.original, mutant.replacement)
    try:
        compile(new, mutant.file, "exec")
    except SyntaxError as exc:
        raise MutantFileError(
            f"{mutant.id}: the mutated {mutant.file} does not compile: {exc}"
        ) from exc
    return text, new


def check_mutants(mutants: Iterable[Mutant], root: Path = ROOT) -> list[str]:
    """Every static problem (snippet not exactly once, mutated file not compiling)."""
    problems = []
    for m in mutants:
        try:
            mutated_source(m, root)
        except MutantFileError as exc:
            problems.append(str(exc))
    return problems


def listed_test_files(mutants: Iterable[Mutant]) -> list[str]:
    """The test files the mutants name (for a collect-only check)."""
    return sorted({t.split("::", 1)[0] for m in mutants for t in m.tests})


def _select(mutants: Sequence[Mutant], patterns: Sequence[str]) -> list[Mutant]:
    if not patterns:
        return list(mutants)
    chosen = [m for m in mutants if any(fnmatch.fnmatchcase(m.id, p) for p in patterns)]
    if not chosen:
        raise MutantFileError(f"no mutant id matches {list(patterns)}")
    return chosen


# ----------------------------------------------------------------------------- running


class Workspace:
    """A scratch copy of ``src/dpkit`` that one worker mutates and restores."""

    def __init__(self, base: Path, index: int) -> None:
        self.path = base / f"w{index}"
        shutil.copytree(
            ROOT / "src" / "dpkit",
            self.path / "dpkit",
            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
        )

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["PYTHONPATH"] = str(self.path)
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env.pop("PYTEST_ADDOPTS", None)
        return env

    def verify_import_path(self) -> None:
        out = subprocess.run(
            [sys.executable, "-c", "import dpkit; print(dpkit.__file__)"],
            cwd=ROOT,
            env=self.env(),
            capture_output=True,
            text=True,
            check=False,
        )
        where = out.stdout.strip()
        if not where.startswith(str(self.path)):
            raise RuntimeError(
                f"the scratch copy is not what `import dpkit` loads ({where or out.stderr!r}); "
                "refusing to run mutants against the working tree"
            )


def _pytest(
    ws: Workspace, tests: Sequence[str], timeout: float, *, stop_first: bool
) -> tuple[str, int | None, str]:
    """Run pytest on ``tests`` against the workspace: (status, returncode, output tail)."""
    # the hypothesis plugin costs a second of start-up per run; @given tests work without it
    cmd = [sys.executable, "-m", "pytest", "-q", "--no-header", "-p", "no:cacheprovider"]
    cmd += ["-p", "no:hypothesispytest"]
    cmd += ["-x"] if stop_first else []
    cmd += list(tests)
    proc = subprocess.Popen(
        cmd,
        cwd=ROOT,
        env=ws.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the pytest process we started and its children
        output, _ = proc.communicate()
        return "timeout", None, output
    return ("passed" if proc.returncode == 0 else "failed"), proc.returncode, output


def _failed_ids(output: str) -> list[str]:
    return [
        line.split()[1]
        for line in output.splitlines()
        if line.startswith(("FAILED ", "ERROR ")) and len(line.split()) > 1
    ]


def run_mutant(ws: Workspace, mutant: Mutant) -> Outcome:
    original, mutated = mutated_source(mutant)
    target = ws.path / mutant.package_path
    start = time.monotonic()
    target.write_text(mutated, encoding="utf-8")
    try:
        status, code, output = _pytest(ws, mutant.tests, mutant.timeout, stop_first=True)
    finally:
        target.write_text(original, encoding="utf-8")
    seconds = time.monotonic() - start
    failed = _failed_ids(output)
    if status == "timeout":
        result = "timeout"
        detail = f"tests did not finish in {mutant.timeout:.0f} s (counted as killed)"
    elif status == "passed":
        result = "equivalent" if mutant.equivalent else "survived"
        detail = mutant.equivalent or "every listed test passed on the mutated code"
    elif code == 1 and any("::" not in f for f in failed):
        # a test file failed to import: the mutant broke the module, which proves nothing
        result = "error"
        detail = "collection error (the mutated module does not import): " + ", ".join(failed)
    elif code == 1:
        result = "equivalent-killed" if mutant.equivalent else "killed"
        detail = ", ".join(failed)
    else:  # 2 interrupted/collection error, 3 internal, 4 usage, 5 nothing collected
        result = "error"
        detail = f"pytest exit code {code}: " + " | ".join(output.strip().splitlines()[-3:])
    return Outcome(mutant, result, seconds, detail, failed)


def _baseline(ws: Workspace, mutants: Sequence[Mutant]) -> tuple[bool, float, str]:
    tests = sorted({t for m in mutants for t in m.tests})
    start = time.monotonic()
    timeout = max(DEFAULT_TIMEOUT, sum(m.timeout for m in mutants))
    status, _, output = _pytest(ws, tests, timeout, stop_first=False)
    return status == "passed", time.monotonic() - start, output


def _table(outcomes: Sequence[Outcome], width: int = 60) -> str:
    rows = [("mutant", "file", "what it changes", "result", "time")]
    for o in outcomes:
        desc = o.mutant.description
        if len(desc) > width:
            desc = desc[: width - 3] + "..."
        rows.append(
            (
                o.mutant.id,
                o.mutant.file.removeprefix("src/dpkit/"),
                desc,
                o.status,
                f"{o.seconds:5.1f}s",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(line.rstrip() for line in lines)


def _summary(outcomes: Sequence[Outcome]) -> dict[str, int]:
    counts = {
        "mutants": len(outcomes),
        "killed": sum(o.status in ("killed", "timeout") for o in outcomes),
        "survived": sum(o.status == "survived" for o in outcomes),
        "equivalent": sum(o.status == "equivalent" for o in outcomes),
        "errors": sum(o.status in ("error", "equivalent-killed") for o in outcomes),
    }
    return counts


def run(mutants: Sequence[Mutant], *, jobs: int, baseline: bool, json_path: Path | None) -> int:
    problems = check_mutants(mutants)
    if problems:
        print("mutant files do not match the source:\n" + "\n".join(problems), file=sys.stderr)
        return 2
    base = Path(tempfile.mkdtemp(prefix="dpkit-mutation-"))
    try:
        workers = [Workspace(base, i) for i in range(max(1, min(jobs, len(mutants))))]
        workers[0].verify_import_path()
        if baseline:
            ok, secs, output = _baseline(workers[0], mutants)
            if not ok:
                print(output[-4000:], file=sys.stderr)
                print(
                    "\nbaseline: the listed tests do not all pass on the unmutated code; "
                    "fix them before measuring mutants",
                    file=sys.stderr,
                )
                return 2
            print(f"baseline: the listed tests pass on the unmutated code ({secs:.0f} s)")
        free = list(workers)
        lock = threading.Lock()
        done: list[Outcome] = []

        def task(m: Mutant) -> Outcome:
            with lock:
                ws = free.pop()
            try:
                out = run_mutant(ws, m)
            finally:
                with lock:
                    free.append(ws)
            with lock:
                done.append(out)
                print(
                    f"[{len(done)}/{len(mutants)}] {m.id}: {out.status} ({out.seconds:.1f} s)",
                    flush=True,
                )
            return out

        with ThreadPoolExecutor(max_workers=len(workers)) as pool:
            outcomes = list(pool.map(task, mutants))
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print()
    print(_table(outcomes))
    bad = [o for o in outcomes if not o.ok]
    for o in bad:
        print(f"\n{o.status.upper()}: {o.mutant.id} ({o.mutant.origin})\n  {o.detail}")
    counts = _summary(outcomes)
    print(
        f"\n{counts['mutants']} mutants: {counts['killed']} killed, {counts['survived']} "
        f"survived, {counts['equivalent']} equivalent (expected to survive), "
        f"{counts['errors']} errors; {sum(o.seconds for o in outcomes):.0f} s of test time"
    )
    if json_path is not None:
        json_path.write_text(
            json.dumps(
                {
                    "summary": counts,
                    "mutants": [
                        {
                            "id": o.mutant.id,
                            "file": o.mutant.file,
                            "status": o.status,
                            "seconds": round(o.seconds, 2),
                            "failed_tests": o.failed,
                            "detail": o.detail,
                        }
                        for o in outcomes
                    ],
                },
                indent=2,
            )
            + "\n",
            encoding="utf-8",
        )
    return 1 if bad else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="mutate.py",
        description="Apply each mutant to a scratch copy of src/dpkit and run its tests.",
    )
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="GLOB",
        help="run only mutants whose id matches (repeatable)",
    )
    parser.add_argument(
        "--jobs",
        "-j",
        type=int,
        default=int(os.environ.get("MUTATION_JOBS", 1)),
        help="scratch copies run in parallel (default 1; $MUTATION_JOBS)",
    )
    parser.add_argument(
        "--no-baseline",
        action="store_true",
        help="skip the run of the listed tests on the unmutated code",
    )
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    parser.add_argument(
        "--check",
        action="store_true",
        help="only check that every snippet occurs once and compiles",
    )
    parser.add_argument("--json", type=Path, help="also write the results as JSON here")
    parser.add_argument("--dir", type=Path, default=MUTANT_DIR, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        mutants = _select(load_mutants(args.dir), args.only)
    except MutantFileError as exc:
        print(exc, file=sys.stderr)
        return 2
    if args.list:
        for m in mutants:
            mark = " (equivalent)" if m.equivalent else ""
            print(f"{m.id}{mark}\n  {m.file}: {m.description}\n  tests: {', '.join(m.tests)}")
        print(f"{len(mutants)} mutants")
        return 0
    if args.check:
        problems = check_mutants(mutants)
        print("\n".join(problems) if problems else f"{len(mutants)} mutants match the source")
        return 2 if problems else 0
    if args.jobs < 1:
        parser.error("--jobs must be >= 1")
    return run(mutants, jobs=args.jobs, baseline=not args.no_baseline, json_path=args.json)


if __name__ == "__main__":
    sys.exit(main())
