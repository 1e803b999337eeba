"""Audit a query written in a small Python file (``dpkit audit query FILE``).

The file is a Python module defining:

``query(frame, rng)`` (required)
    One release on ``frame``: returns the released frame, value, or a ``Release``-like
    record. A batched ``query(frame, size, rng)`` returning ``size`` outputs (an array, or
    one frame with an integer ``draw`` column) is used when defined with three parameters.
    ``rng`` is a dpkit bit source: pass it on (``rng=rng``) to the releases.

the claim (required): ``CLAIM``
    A ``dpkit.PureDP``, ``dpkit.ApproxDP`` or ``dpkit.ZCDP``; or ``EPSILON`` (and
    optionally ``DELTA``).

the neighbouring inputs (one of):
    ``neighbours()`` returning a list of pairs ``(x0, x1)`` (or
    :class:`~dpkit.audit.neighbours.NeighbourPair`); or ``DATA`` (a CSV or Parquet path,
    relative to the file, or a frame) with ``PRIVACY_UNIT`` (a column) and optionally
    ``GROUP_BY`` (a column or list), from which :func:`dpkit.audit.neighbours.unit_pairs`
    removes the person with most rows and a person alone in a group.

Example file::

    import dpkit as dp
    import polars as pl

    DATA = "people.csv"
    PRIVACY_UNIT = "id"
    GROUP_BY = "city"
    EPSILON = 1.0
    DELTA = 1e-6

    def query(frame, rng):
        s = dp.Session(frame, privacy_unit="id", rng=rng)
        return s.query().group_by("city").agg(dp.count()).release(epsilon=1.0, delta=1e-6)

An exception raised by the file's own code (when it runs, in ``neighbours()``, in ``query``,
or reading ``DATA``) becomes a :class:`~dpkit.errors.ParameterError` naming the file, the line
and the exception, with the first line of its message (not for a ``DATA`` parse error, whose
message can quote the data); ``dpkit audit query`` prints it as one line, no traceback.
"""

from __future__ import annotations

import importlib.util
import traceback
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from dpkit.accounting.loss import ZCDP, ApproxDP, PrivacyLoss, PureDP
from dpkit.audit.neighbours import NeighbourPair, unit_pairs
from dpkit.audit.targets import AuditCase
from dpkit.errors import ParameterError

__all__ = ["load_query_file"]


def _module(path: Path) -> ModuleType:
    if not path.is_file():
        raise ParameterError(f"audit query: no such file {str(path)!r}")
    spec = importlib.util.spec_from_file_location(f"dpkit_audit_query_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise ParameterError(f"audit query: cannot import {str(path)!r} as a Python module")
    mod = importlib.util.module_from_spec(spec)
    _guard(path, "running the file", spec.loader.exec_module)(mod)
    return mod


def _failure(path: Path, what: str, exc: Exception, *, data: bool) -> ParameterError:
    """The file's own code raised ``exc``: say where (its last line in the file) and what.

    Reading ``data``, only an OSError's message is shown: a parse error's can quote the data.
    """
    lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if _same(f.filename, path)]
    if isinstance(exc, SyntaxError) and exc.filename and _same(exc.filename, path):
        lines.append(exc.lineno)
    where = f" line {lines[-1]}" if lines and lines[-1] is not None else ""
    text = str(exc).strip().splitlines() if not data or isinstance(exc, OSError) else []
    message = f": {text[0]}{' ...' if len(text) > 1 else ''}" if text else ""
    return ParameterError(
        f"audit query: {path.name}{where}: {what} raised {type(exc).__name__}{message}"
    )


def _same(filename: str, path: Path) -> bool:
    try:
        return Path(filename).resolve() == path.resolve()
    except (OSError, ValueError):  # pragma: no cover - a frame of no real file
        return False


def _guard(
    path: Path, what: str, call: Callable[..., Any], *, data: bool = False
) -> Callable[..., Any]:
    """``call``, with any exception of the user's code re-raised by :func:`_failure`."""

    def guarded(*args: Any, **kwargs: Any) -> Any:
        try:
            return call(*args, **kwargs)
        except Exception as exc:
            raise _failure(path, what, exc, data=data) from exc

    return guarded


def _claim(mod: ModuleType, path: Path) -> PrivacyLoss:
    claim = getattr(mod, "CLAIM", None)
    if isinstance(claim, PureDP | ApproxDP | ZCDP):
        return claim
    eps = getattr(mod, "EPSILON", None)
    if eps is None:
        raise ParameterError(
            f"audit query: {path.name} must define CLAIM (a PureDP, ApproxDP or ZCDP) or "
            "EPSILON (and DELTA)"
        )
    delta = float(getattr(mod, "DELTA", 0.0))
    return ApproxDP(float(eps), delta) if delta > 0 else PureDP(float(eps))


def _read(data: Any, base: Path) -> Any:
    if not isinstance(data, str | Path):
        return data
    import polars as pl

    p = Path(data)
    p = p if p.is_absolute() else base / p
    if p.suffix.lower() == ".parquet":
        return pl.read_parquet(p)
    return pl.read_csv(p)


def load_query_file(path: str | Path) -> list[AuditCase]:
    """The audit cases a query file defines (module docstring: the file format)."""
    path = Path(path)
    mod = _module(path)
    func = getattr(mod, "query", None)
    if not callable(func):
        raise ParameterError(f"audit query: {path.name} must define query(frame, rng)")
    claim = _claim(mod, path)
    pairs: list[NeighbourPair] = []
    if callable(getattr(mod, "neighbours", None)):
        listed = _guard(path, "neighbours()", lambda: list(mod.neighbours()))()
        for i, pr in enumerate(listed):
            if isinstance(pr, NeighbourPair):
                pairs.append(pr)
            else:
                x0, x1 = pr
                pairs.append(NeighbourPair(x0, x1, "unbounded", f"pair {i}"))
    elif getattr(mod, "DATA", None) is not None and getattr(mod, "PRIVACY_UNIT", None):
        read = _guard(path, f"reading DATA {mod.DATA!r}", _read, data=True)
        frame = read(mod.DATA, path.parent)
        pairs = unit_pairs(frame, mod.PRIVACY_UNIT, group_by=getattr(mod, "GROUP_BY", None))
    else:
        raise ParameterError(
            f"audit query: {path.name} must define neighbours() or DATA with PRIVACY_UNIT"
        )
    from dpkit.audit.core import calling_form, per_call

    form = calling_form(func)
    if not form.uses_rng:
        raise ParameterError(
            f"audit query: {path.name}: query() must take the bit source: define "
            "query(frame, rng) and pass rng=rng to the releases (a query drawing its own "
            "randomness cannot be seeded or audited reproducibly)"
        )
    wrapped = per_call(_guard(path, "query()", func), form)
    return [AuditCase(f"{path.stem} [{pr.description}]", wrapped, pr, claim) for pr in pairs]
