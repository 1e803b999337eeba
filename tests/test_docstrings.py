"""Public classes and their public methods document Parameters, Returns and Raises.

The rule (NumPy style, as the class docstrings already do):

* a class whose constructor takes arguments has ``Parameters`` and ``Raises``, or, for a
  plain record of values, ``Attributes``;
* a public method that takes arguments has ``Parameters``, ``Returns`` (unless it returns
  ``None``) and ``Raises``; one without arguments has ``Returns`` unless it returns ``None``.

Properties are exempt (their one-line docstring says what they are). Exceptions are exempt.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

import pytest

MODULES = (
    "dpkit",
    "dpkit.accounting",
    "dpkit.mechanisms",
    "dpkit.samplers",
    "dpkit.sensitivity",
    "dpkit.frameworks",
    "dpkit.compare",
    "dpkit.plot",
)


def _classes() -> dict[str, type]:
    found: dict[str, type] = {}
    for name in MODULES:
        module = importlib.import_module(name)
        for attr in getattr(module, "__all__", ()):
            obj = getattr(module, attr)
            if inspect.isclass(obj) and not issubclass(obj, BaseException):
                found.setdefault(f"{obj.__module__}.{obj.__qualname__}", obj)
    return found


CLASSES = _classes()


def _params(fn: Any) -> list[str]:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # pragma: no cover - builtins
        return []
    return [p for p in sig.parameters if p not in ("self", "cls")]


def _returns_none(fn: Any) -> bool:
    return inspect.signature(fn).return_annotation in (None, "None")


def _missing_for_class(cls: type) -> list[str]:
    doc = inspect.getdoc(cls) or ""
    missing = []
    if _params(cls):
        record = "Attributes" in doc and "Parameters" not in doc  # a plain record of values
        if "Parameters" not in doc and not record:
            missing.append("Parameters")
        if not record and "Raises" not in doc:
            missing.append("Raises")
    return missing


def _missing_for_method(fn: Any) -> list[str]:
    doc = inspect.getdoc(fn) or ""
    missing = []
    params = _params(fn)
    if params and "Parameters" not in doc:
        missing.append("Parameters")
    if not _returns_none(fn) and "Returns" not in doc and "Yields" not in doc:
        missing.append("Returns")
    if params and "Raises" not in doc:
        missing.append("Raises")
    return missing


def _methods(cls: type) -> list[tuple[str, Any]]:
    out = []
    for name, attr in vars(cls).items():
        if name.startswith("_") or isinstance(attr, property):
            continue
        fn = getattr(cls, name)
        if callable(fn):
            out.append((name, fn))
    return out


def test_the_public_classes_are_found() -> None:
    names = {c.__name__ for c in CLASSES.values()}
    assert {"Laplace", "Gaussian", "Exponential", "PureDP", "ApproxDP", "Accountant"} <= names


@pytest.mark.parametrize("qualname", sorted(CLASSES))
def test_public_class_and_methods_document_their_sections(qualname: str) -> None:
    cls = CLASSES[qualname]
    problems = []
    if missing := _missing_for_class(cls):
        problems.append(f"{cls.__name__}: {', '.join(missing)}")
    for name, fn in _methods(cls):
        if missing := _missing_for_method(fn):
            problems.append(f"{cls.__name__}.{name}: {', '.join(missing)}")
    assert not problems, "missing docstring sections:\n" + "\n".join(problems)
