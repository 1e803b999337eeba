"""A query reaches its Session only through the Session's handle (``session/_handle.py``)."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import polars as pl

import dpkit as dp
from dpkit.session import query as query_module
from dpkit.session._handle import SessionHandle

SESSION = Path(query_module.__file__).parent


def test_a_query_holds_the_handle_of_its_session() -> None:
    s = dp.Session(pl.DataFrame({"x": [1.0, 2.0]}), budget=dp.PureDP(1.0), rng=1)
    handle = s.query()._s
    assert isinstance(handle, SessionHandle)
    assert handle.engine.name == s.engine and handle.schema == s.schema
    # every field is public: the handle is the interface, not a window on private state
    assert all(not f.name.startswith("_") for f in dataclasses.fields(SessionHandle))


#: the modules of a query's release and its record: what they need from the Session is the
#: handle, or the facts the Session hands them
QUERY_MODULES = ("query.py", "_pipeline.py", "_record.py")


def test_a_query_reads_no_private_attribute_of_its_session() -> None:
    # the Session's state is reached through the handle's public fields: an attribute
    # access `x._name` on the Session or its handle would bypass it
    offenders = []
    for path in (SESSION / name for name in QUERY_MODULES):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Attribute) or not node.attr.startswith("_"):
                continue
            inner = node.value
            through = isinstance(inner, ast.Attribute) and inner.attr in ("_s", "session")
            if through or (isinstance(inner, ast.Name) and inner.id in ("session", "s")):
                offenders.append(f"{path.relative_to(SESSION)}:{node.lineno}: .{node.attr}")
    assert not offenders, "private Session state read by a query:\n" + "\n".join(offenders)
