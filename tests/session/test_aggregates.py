"""The aggregates' protocol is complete: declared on the base class, called without probes."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import dpkit as dp
from dpkit.session import _kinds, aggregates
from dpkit.session.aggregates import Aggregate

SESSION = Path(aggregates.__file__).parent
KINDS = vars(_kinds)

#: what the plan, the engine side, the noise side, the text and the record ask an aggregate
PROTOCOL = (
    "parts",
    "columns",
    "statistics",
    "finish",
    "interval_alpha",
    "resolve",
    "outputs",
    "check_schema",
    "bounds",
    "fill",
    "lattice",
    "auto",
    "bounds_share",
    "bounds_method",
    "lower",
    "root",
    "reads_numbers",
)


def _members(cls: type) -> set[str]:
    names = set(vars(cls)) | set(getattr(cls, "__dataclass_fields__", {}))
    return {n for n in names if not n.startswith("__")}


def test_the_base_class_declares_the_whole_protocol() -> None:
    missing = [name for name in PROTOCOL if not hasattr(Aggregate, name)]
    assert not missing
    # every attribute any aggregate offers the release is on the base too, or is the
    # kind's own (read after an isinstance check: a quantile's levels, a histogram's bins)
    own = {"levels", "single", "method", "grid", "edges", "categories", "bin_expr", "labels"}
    subclasses = [c for c in KINDS.values() if inspect.isclass(c)]
    extra = set()
    for cls in subclasses:
        if issubclass(cls, Aggregate) and cls is not Aggregate:
            extra |= {n for n in _members(cls) if not n.startswith("_")}
    assert extra - set(PROTOCOL) - own - _members(Aggregate) == set()


@pytest.mark.parametrize(
    "agg",
    [
        dp.count(),
        dp.histogram("x", bins=[0.0, 1.0]),
        dp.histogram("x", bins=["a", "b"]),
        dp.mean("x", bounds=(0.0, 1.0)),
        dp.std("x", bounds="auto"),
        dp.median("x", bounds=(0.0, 1.0)),
    ],
)
def test_every_aggregate_answers_the_bounding_facts(agg: Aggregate) -> None:
    bounded = isinstance(
        agg, aggregates.Sum | aggregates.Mean | aggregates.Var | aggregates.Quantile
    )
    assert (agg.bounds is not None) == bounded
    assert agg.reads_numbers == (bounded or getattr(agg, "edges", None) is not None)
    assert agg.interval_alpha(0.05) <= 0.05
    if agg.auto:  # the chosen bounds replace the placeholder
        assert agg.resolve((0.0, 2.0)).bounds == (0.0, 2.0)
    elif not bounded:  # nothing to choose: the aggregate itself
        assert agg.resolve((0.0, 2.0)) is agg
    assert agg.root == (type(agg).__name__ == "Var" and agg.name.endswith("std"))


def test_no_release_step_probes_an_aggregate_for_an_attribute() -> None:
    # getattr(agg, "auto", False) at a call site means the base class is incomplete
    names = set(PROTOCOL) | {"levels", "single", "edges", "categories", "column"}
    offenders = []
    for path in sorted(SESSION.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                continue
            if node.func.id not in ("getattr", "hasattr") or len(node.args) < 2:
                continue
            attr = node.args[1]
            if isinstance(attr, ast.Constant) and attr.value in names:
                offenders.append(f"{path.relative_to(SESSION)}:{node.lineno}: {attr.value}")
    assert not offenders, "probes of an aggregate's attributes:\n" + "\n".join(offenders)
