"""The benchmark harness: a results table, a timer and the environment header.

Contract shared by every ``benchmarks/bench_*.py`` module (see benchmarks/README.md):

* a module exposes ``run(table: Table) -> None`` and adds one row per (task, implementation)
  with :meth:`Table.add`;
* :func:`timeit` returns the median wall-clock seconds of a callable;
* competitor libraries are imported lazily inside ``run``; a missing one gives a row with a
  note (:meth:`Table.missing`) instead of a crash;
* benchmarks print figures, they never assert timings.

Ratios: within a task, the row whose implementation is ``numpy`` (or starts with ``"numpy "``)
is the NumPy reference and the first row whose implementation is ``dpkit`` (or starts with
``"dpkit "``) is the dpkit reference; every row shows its time divided by each reference.
"""

from __future__ import annotations

import gc
import importlib
import importlib.metadata
import json
import math
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from types import ModuleType
from typing import Any, TextIO

__all__ = [
    "COMPETITORS",
    "Row",
    "Table",
    "environment",
    "optional_import",
    "timeit",
]

# Distribution names whose versions the environment header reports when installed.
COMPETITORS: tuple[str, ...] = (
    "dpkit",
    "opendp",
    "diffprivlib",
    "python-dp",
    "pipeline-dp",
    "scikit-learn",
    "polars",
    "scipy",
)


def timeit(fn: Callable[[], object], *, repeat: int = 5, warmup: int = 1) -> float:
    """Median wall-clock seconds of ``fn()`` over ``repeat`` timed calls.

    Parameters
    ----------
    fn
        A callable taking no arguments; its result is discarded.
    repeat
        Number of timed calls, >= 1. The median is robust to one slow outlier (a page
        fault, another process on the machine).
    warmup
        Untimed calls made first, >= 0 (imports, caches, JIT-like first-call costs).

    Returns
    -------
    float
        The median of the ``repeat`` timings, in seconds (``time.perf_counter``).

    Raises
    ------
    ValueError
        If ``repeat < 1`` or ``warmup < 0``.

    Notes
    -----
    The garbage collector is run before each call and disabled during it, so a collection
    triggered by an earlier benchmark's garbage is not charged to this one.

    Examples
    --------
    >>> timeit(lambda: sum(range(10)), repeat=3) >= 0.0
    True
    """
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise ValueError(f"timeit: `repeat` must be an int >= 1; got {repeat!r}")
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"timeit: `warmup` must be an int >= 0; got {warmup!r}")
    for _ in range(warmup):
        fn()
    times: list[float] = []
    enabled = gc.isenabled()
    try:
        for _ in range(repeat):
            gc.collect()
            gc.disable()
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
            if enabled:
                gc.enable()
    finally:
        if enabled:
            gc.enable()
    return statistics.median(times)


def optional_import(name: str) -> ModuleType | None:
    """Import module ``name`` or return ``None`` when it (or one of its imports) is missing.

    Only :class:`ImportError` is swallowed; any other failure while importing propagates.

    Examples
    --------
    >>> optional_import("json").__name__
    'json'
    >>> optional_import("no_such_module_xyz") is None
    True
    """
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def environment() -> dict[str, Any]:
    """Python, NumPy, CPU count, platform and the versions of the installed competitors."""
    try:
        import numpy

        numpy_version: str | None = numpy.__version__
    except ImportError:  # pragma: no cover - numpy is a dpkit dependency
        numpy_version = None
    return {
        "python": platform.python_version(),
        "numpy": numpy_version,
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
        "system": platform.system(),
        "libraries": {d: v for d in COMPETITORS if (v := _version(d)) is not None},
    }


def _header(env: dict[str, Any]) -> str:
    libs = " ".join(f"{k}={v}" for k, v in env["libraries"].items()) or "(no competitors found)"
    return (
        f"Python {env['python']} | NumPy {env['numpy']} | {env['cpus']} CPUs "
        f"({env['system']} {env['machine']}) | {libs}"
    )


@dataclass(frozen=True, slots=True)
class Row:
    """One measurement: median ``seconds`` (``None`` when not measured) of ``impl`` on ``task``."""

    task: str
    impl: str
    seconds: float | None
    error: float | None = None
    note: str = ""


def _is_ref(impl: str, name: str) -> bool:
    return impl == name or impl.startswith(name + " ")


def _fmt_time(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds >= 100:
        return f"{seconds:.0f} s"
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    if seconds >= 1e-6:
        return f"{seconds * 1e6:.2f} us"
    return f"{seconds * 1e9:.0f} ns"


def _fmt_ratio(num: float | None, den: float | None) -> str:
    if num is None or den is None or den <= 0:
        return "-"
    r = num / den
    if r >= 100:
        return f"{r:.0f}x"
    if r >= 10:
        return f"{r:.1f}x"
    return f"{r:.2f}x" if r >= 0.01 else f"{r:.2g}x"


def _fmt_error(error: float | None) -> str:
    return "-" if error is None else f"{error:.3g}"


class Table:
    """Benchmark results, grouped by task in the order tasks were first added.

    Parameters
    ----------
    echo
        Optional text stream; each row is printed to it as it is added (progress for long
        runs). ``None`` (the default) stays silent.

    Examples
    --------
    >>> t = Table()
    >>> t.add("sum 1e3", "numpy", 0.25)
    >>> t.add("sum 1e3", "dpkit", 0.625, error=0.0, note="exact")
    >>> t.ratio(t.rows[1], "numpy")
    2.5
    """

    def __init__(self, *, echo: TextIO | None = None) -> None:
        self._rows: list[Row] = []
        self._echo = echo

    @property
    def rows(self) -> tuple[Row, ...]:
        """The rows in the order they were added."""
        return tuple(self._rows)

    def add(
        self,
        task: str,
        impl: str,
        seconds: float | None,
        *,
        error: float | None = None,
        note: str = "",
    ) -> None:
        """Add one measurement.

        Parameters
        ----------
        task
            What was measured, short and with its size, for example ``"laplace 1e7"``.
        impl
            Who did it: ``"numpy"`` (the baseline), ``"dpkit"`` (or ``"dpkit <variant>"``),
            ``"opendp"``, ``"diffprivlib"``, ...
        seconds
            Median wall seconds (from :func:`timeit`), finite and >= 0; ``None`` or NaN when
            the implementation could not be measured (say why in ``note``).
        error
            An accuracy figure for the task (say which in the module or README), or ``None``.
        note
            Free text: scaling from a smaller size, a missing library, a caveat.

        Raises
        ------
        TypeError
            If ``task`` or ``impl`` is not a non-empty string.
        ValueError
            If ``seconds`` is negative or infinite.
        """
        if not isinstance(task, str) or not task:
            raise TypeError(f"Table.add: `task` must be a non-empty str; got {task!r}")
        if not isinstance(impl, str) or not impl:
            raise TypeError(f"Table.add: `impl` must be a non-empty str; got {impl!r}")
        if seconds is not None:
            seconds = float(seconds)
            if math.isnan(seconds):
                seconds = None
            elif not (math.isfinite(seconds) and seconds >= 0):
                raise ValueError(
                    f"Table.add: `seconds` must be finite and >= 0 (or None); got {seconds!r}"
                )
        if error is not None:
            error = float(error)
        row = Row(task, impl, seconds, error, str(note))
        self._rows.append(row)
        if self._echo is not None:
            print(
                f"  {task} | {impl} | {_fmt_time(seconds)} | {_fmt_error(error)} | {note}",
                file=self._echo,
                flush=True,
            )

    def missing(self, task: str, impl: str, exc: BaseException | str) -> None:
        """Add an unmeasured row for ``impl`` saying why (a missing library, a failure)."""
        if isinstance(exc, BaseException):
            first = (str(exc).splitlines() or [""])[0][:120]
            reason = f"{type(exc).__name__}: {first}"
        else:
            reason = exc
        self.add(task, impl, None, note=f"not measured: {reason}")

    def tasks(self) -> list[str]:
        """Task names in the order they first appeared."""
        return list(dict.fromkeys(r.task for r in self._rows))

    def reference(self, task: str, name: str) -> Row | None:
        """The first measured row of ``task`` whose implementation is ``name`` or
        ``name + " ..."`` (``name`` is ``"numpy"`` or ``"dpkit"``)."""
        for r in self._rows:
            if r.task == task and r.seconds is not None and _is_ref(r.impl, name):
                return r
        return None

    def ratio(self, row: Row, name: str) -> float | None:
        """``row.seconds`` divided by the ``name`` reference of its task, or ``None``."""
        ref = self.reference(row.task, name)
        if ref is None or row.seconds is None or ref.seconds is None or ref.seconds <= 0:
            return None
        return row.seconds / ref.seconds

    def render(self, env: dict[str, Any] | None = None) -> str:
        """The table as fixed-width text, preceded by a one-line environment header."""
        env = environment() if env is None else env
        head = ("task", "implementation", "median", "/numpy", "/dpkit", "error", "note")
        lines: list[tuple[str, ...]] = []
        for task in self.tasks():
            numpy_ref = self.reference(task, "numpy")
            dpkit_ref = self.reference(task, "dpkit")
            for r in (r for r in self._rows if r.task == task):
                lines.append(
                    (
                        r.task,
                        r.impl,
                        _fmt_time(r.seconds),
                        _fmt_ratio(r.seconds, numpy_ref.seconds if numpy_ref else None),
                        _fmt_ratio(r.seconds, dpkit_ref.seconds if dpkit_ref else None),
                        _fmt_error(r.error),
                        r.note,
                    )
                )
        widths = [max(len(c) for c in col) for col in zip(head, *lines, strict=False)]
        right = {2, 3, 4, 5}  # numbers are right-aligned

        def fmt(cells: Iterable[str]) -> str:
            out = []
            for i, (c, w) in enumerate(zip(cells, widths, strict=True)):
                out.append(c.rjust(w) if i in right else c.ljust(w))
            return "  ".join(out).rstrip()

        rule = "  ".join("-" * w for w in widths)
        body: list[str] = [_header(env), "", fmt(head), rule]
        previous = None
        for cells in lines:
            if previous is not None and cells[0] != previous:
                body.append("")
            body.append(fmt(cells))
            previous = cells[0]
        return "\n".join(body)

    def to_json(self, env: dict[str, Any] | None = None) -> dict[str, Any]:
        """Rows (with their ratios) and the environment, ready for :func:`json.dump`."""
        env = environment() if env is None else env
        rows = []
        for r in self._rows:
            d = asdict(r)
            d["ratio_numpy"] = self.ratio(r, "numpy")
            d["ratio_dpkit"] = self.ratio(r, "dpkit")
            rows.append(d)
        return {"environment": env, "rows": rows}

    def save_json(self, path: str | os.PathLike[str], env: dict[str, Any] | None = None) -> None:
        """Write :meth:`to_json` to ``path``."""
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(self.to_json(env), fh, indent=2)
            fh.write("\n")


if __name__ == "__main__":  # pragma: no cover
    print(_header(environment()), file=sys.stdout)
