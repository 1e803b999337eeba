"""One SELECT compiled into the Session's own query: row-level steps, groups, aggregates.

The result, :class:`Program`, holds what :meth:`dpkit.session.Query` is built from (added
columns, filters, group keys and public keys, dpkit aggregates) and what is done to the
released table afterwards (:class:`Post`). Everything here reads the query, the public
schema, the public tables and the parameters; no row of the private table.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
from dataclasses import dataclass, field
from typing import Any

import narwhals as nw
import polars as pl

from dpkit.errors import ParameterError
from dpkit.session import aggregates as dpa
from dpkit.session._engine import RESERVED
from dpkit.session._keys import public_frame
from dpkit.session._sql._aggregate import (
    Call,
    clamped,
    contains_aggregate,
    is_aggregate,
    read_call,
    unparen,
)
from dpkit.session._sql._expr import Compiler, Val, literal_number, sql_text
from dpkit.session._sql._from import Tables, refuse_shape, relation, with_clauses
from dpkit.session._sql._parse import refuse, sql_words, sqlglot_modules
from dpkit.session._total import total_expression, total_predicate

__all__ = ["Post", "Program", "compile_select"]

_, exp = sqlglot_modules()

_SAFE = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,62}")
_INTERNAL = f"{RESERVED}_sql_"

_MAKERS = {"sum": dpa.sum, "mean": dpa.mean, "var": dpa.var, "std": dpa.std}

# -- what a SELECT becomes ----------------------------------------------------------------


@dataclass
class Request:
    """One aggregate call of the query (``COUNT(*)``, ``AVG(Age)``, ...) and the released
    column(s) holding its value."""

    kind: str  # count, sum, mean, var, std, quantile
    value: Val | None
    levels: tuple[float, ...] = ()
    bounds: Any = None
    sql: str = ""
    columns: tuple[str, ...] = ()  # released value columns (one per level for quantiles)


@dataclass
class Output:
    """One column of the SQL result: ``source`` is a column of the released table
    (``interval``: with its ``_low`` and ``_high``), or ``expr`` is computed from it."""

    name: str
    source: str | None = None
    interval: bool = False
    expr: Any = None
    key: bool = False


@dataclass
class Post:
    """What is done to the released table (post-processing: no privacy cost)."""

    outputs: list[Output] = field(default_factory=list)
    having: Any = None
    order: list[tuple[Any, bool, bool]] = field(default_factory=list)  # (expr, desc, nulls_last)
    limit: int | None = None
    offset: int = 0
    notes: list[str] = field(default_factory=list)
    #: the types post-processing reads the released columns in (keys: their public types;
    #: statistics: Float64), fixed before the spend so that its expressions are checked
    #: on exactly what they later run on
    types: dict[str, Any] = field(default_factory=dict)


@dataclass
class Program:
    """The Session query a SELECT compiles into, and its post-processing."""

    derived: dict[str, Any]
    filters: list[Any]
    by: list[str]
    keys: pl.DataFrame | None
    aggregates: list[Any]
    post: Post
    notes: list[str]


# -- the compiler ---------------------------------------------------------------------------


class SelectCompiler:
    """Compiles the top-level SELECT (see :func:`compile_select`)."""

    def __init__(self, session: Any, select: Any, bounds: Any, keys: Any) -> None:
        self.s = session
        self.select = select
        self.tables = Tables(session)
        self.bounds = _check_bounds(bounds)
        self.keys_given = keys
        self.derived: dict[str, Any] = {}
        self.derived_by_key: dict[str, str] = {}
        self.notes: list[str] = []
        self.names: set[str] = set()  # the Session's output and key column names taken
        self.requests: dict[tuple[Any, ...], Request] = {}
        self.schema: dict[str, Any] = dict(session.schema)

    # -- names

    def _internal(self) -> str:
        name = f"{_INTERNAL}{len(self.derived)}"
        return name

    def _derive(self, val: Val, label: str, safe: str | None = None, dtype: Any = None) -> str:
        """A column of the query holding ``val`` (the data column itself when it is one);
        ``dtype`` is the type of ``val`` if :meth:`_dtype` already checked it."""
        if val.column is not None:
            return val.column
        if val.key in self.derived_by_key:
            return self.derived_by_key[val.key]
        if dtype is None:
            dtype = self._dtype(val, label)
        name = safe if safe and _usable(safe, self.schema) else self._internal()
        self.derived[name] = val.as_expr()
        self.derived_by_key[val.key] = name
        self.schema[name] = dtype
        shown = "" if name == safe else f" as {name}"
        self.notes.append(f"{label}{shown}: computed per row (a row-level step)")
        return name

    def _unique(self, name: str) -> str:
        out = name
        for i in itertools.count(2):
            if out not in self.names:
                break
            out = f"{name}_{i}"
        self.names.add(out)
        return out

    # -- main

    def compile(self) -> Program:
        select = self.select
        refuse_shape(select, "the query", top=True)
        with_clauses(self.tables, select)
        rel = relation(self.tables, select, "the query")
        self.scope = rel.scope
        self.compiler = Compiler(rel.scope, "SELECT")
        self.notes.extend(rel.notes)
        items = self._items()
        known = {c.lower() for src in self.scope.sources for c in src.columns}
        known |= {c.lower() for c in self.s.columns} | {a.lower() for _, a in items if a}
        unknown = [b for b in self.bounds if b.lower() not in known]
        if unknown:  # a name the query cannot mean: a typo, refused rather than ignored
            raise ParameterError(
                f"Session.sql: `bounds` names {', '.join(map(repr, sorted(unknown)))}, which is "
                "neither a column nor an alias of the query; key bounds by the aggregated "
                "column (or the aggregate's alias). Nothing was spent"
            )
        groups = self._groups(items)
        self.names.update(g.column for g in groups)
        post = Post()
        outputs: list[Output] = []
        taken: set[str] = set()
        for node, alias in items:
            for out in self._item(node, alias, groups):
                names = [out.name]
                if out.interval:
                    names += [f"{out.name}_low", f"{out.name}_high"]
                for name in names:
                    if name in taken:
                        raise refuse(
                            f"the output column {name!r}",
                            "two SELECT items (or one and another's interval) have this name",
                            "give them distinct aliases (AS name)",
                        )
                    taken.add(name)
                outputs.append(out)
        post.outputs = outputs
        alias_exprs = {o.name: o for o in outputs}
        having = select.args.get("having")
        if having is not None:
            post.having = self._post_expr(having.this, groups, "HAVING", alias_exprs)
            post.notes.append(
                f"HAVING {sql_text(having.this)}: applied to the released values "
                "(post-processing, no privacy cost)"
            )
        order = select.args.get("order")
        if order is not None:
            for ordered in order.expressions:
                post.order.append(self._order(ordered, groups, alias_exprs, outputs))
            post.notes.append(
                f"ORDER BY {', '.join(sql_text(o) for o in order.expressions)}: on the "
                "released values (post-processing)"
            )
        limit = select.args.get("limit")
        if limit is not None:
            post.limit = _count(limit.expression, "LIMIT")
            post.notes.append(f"LIMIT {post.limit}: keeps released rows (post-processing)")
        offset = select.args.get("offset")
        if offset is not None:
            post.offset = _count(offset.expression, "OFFSET")
            post.notes.append(f"OFFSET {post.offset}: skips released rows (post-processing)")
        by = [g.column for g in groups]
        keys = self._keys(groups)
        aggregates = self._aggregates()
        for o in outputs:
            if o.expr is not None:
                post.notes.append(
                    f"{o.name}: computed from released values after the release "
                    "(post-processing, no privacy cost, no interval)"
                )
        shown = {o.source for o in outputs if o.source is not None}
        for req in self.requests.values():
            if not shown & set(req.columns):
                what = req.sql if req.kind == "quantile" else f"{req.columns[0]} = {req.sql}"
                post.notes.append(
                    f"{what}: released and charged for HAVING, ORDER BY or arithmetic, "
                    "not in the output"
                )
        self._check_post(post, groups)
        return Program(self.derived, rel.filters, by, keys, aggregates, post, self.notes)

    def _check_post(self, post: Post, groups: list[Group]) -> None:
        """The post-processing expressions as total expressions of the released table's
        columns in fixed types (before the spend: a type error is refused now, and a
        value cannot make them fail later)."""
        types: dict[str, Any] = {g.column: self.schema[g.column] for g in groups}
        for req in self.requests.values():
            for col in req.columns:
                for c in (col, f"{col}_low", f"{col}_high"):
                    types[c] = nw.Float64()
        post.types = types
        owner = "Session.sql (post-processing)"
        try:
            if post.having is not None:
                post.having = total_predicate(post.having, types, owner)[0]
            post.order = [
                (total_expression(e, types, owner)[0].expr, d, n) for e, d, n in post.order
            ]
            for o in post.outputs:
                if o.expr is not None:
                    o.expr = total_expression(o.expr, types, owner)[0].expr
        except ParameterError as err:
            raise ParameterError(f"{err} (nothing was spent)") from None

    def _items(self) -> list[tuple[Any, str | None]]:
        items = []
        for node in self.select.expressions:
            alias = node.alias if isinstance(node, exp.Alias) else None
            inner = node.this if isinstance(node, exp.Alias) else node
            if isinstance(inner, exp.Star) or (
                isinstance(inner, exp.Column) and isinstance(inner.this, exp.Star)
            ):
                raise refuse(
                    "SELECT *",
                    "it would release rows; a private release is made of aggregates",
                    "name the aggregates: SELECT COUNT(*), AVG(x) ... FROM data",
                )
            if inner.find(exp.Window) is not None:
                raise refuse(
                    f"the window function {sql_text(inner.find(exp.Window))}",
                    "a window looks at other rows, so one person could change every other "
                    "row's value",
                    "aggregate with GROUP BY instead",
                )
            items.append((inner, alias))
        return items

    # -- groups

    def _groups(self, items: list[tuple[Any, str | None]]) -> list[Group]:
        group = self.select.args.get("group")
        if group is None:
            return []
        for arg in ("rollup", "cube", "grouping_sets", "totals"):
            if group.args.get(arg):
                raise refuse(
                    f"GROUP BY {arg.upper().replace('_', ' ')}",
                    "several groupings are several releases",
                    "run one query per grouping (their costs add up)",
                )
        nodes = list(group.expressions)
        for node in nodes:
            if isinstance(node, exp.Rollup | exp.Cube | exp.GroupingSets):
                raise refuse(
                    f"GROUP BY {sql_text(node)}",
                    "several groupings are several releases",
                    "run one query per grouping (their costs add up)",
                )
        if group.args.get("all"):
            nodes = [n for n, _ in items if not contains_aggregate(n)]
        aliases = {a: n for n, a in items if a}
        out: list[Group] = []
        seen: set[str] = set()
        for node in nodes:
            node = unparen(node)
            number = literal_number(node) if isinstance(node, exp.Literal) else None
            if number is not None:
                if not (isinstance(number, int) and 1 <= number <= len(items)):
                    raise refuse(
                        f"GROUP BY {number}",
                        "a number in GROUP BY names a SELECT item (from 1)",
                        f"use 1 to {len(items)}",
                    )
                node = items[number - 1][0]
            elif isinstance(node, exp.Column) and not node.table and node.name in aliases:
                try:
                    self.scope.lookup(node)
                except ParameterError:
                    node = aliases[node.name]
            if contains_aggregate(node):
                raise refuse(
                    f"GROUP BY {sql_text(node)}",
                    "a group key is a value of each row, not an aggregate",
                    "group by columns or row-level expressions",
                )
            val = Compiler(self.scope, "GROUP BY").value(node)
            if not val.reads:
                raise refuse(
                    f"GROUP BY {sql_text(node)}",
                    "a constant is one group, the same as no GROUP BY",
                    "drop it",
                )
            if val.key in seen:
                continue
            seen.add(val.key)
            alias = next((a for n, a in items if a and self._key(n) == val.key), None)
            label = f"group key {sql_text(node)}"
            column = self._derive(val, label, safe=alias)
            name = alias or (val.name if isinstance(node, exp.Column) else sql_text(node))
            out.append(Group(val, column, name))
        return out

    def _key(self, node: Any) -> str | None:
        try:
            return self.compiler.key(node)
        except ParameterError:
            return None

    def _keys(self, groups: list[Group]) -> pl.DataFrame | None:
        given = self.keys_given
        if not groups:
            if given is not None:
                raise ParameterError(
                    "Session.sql: `keys` given to a query without GROUP BY; drop them "
                    "(nothing was spent)"
                )
            return None
        if given is not None and not isinstance(given, dict):
            frame = _frame(given)
            cols = []
            for g in groups:
                src = next((c for c in (g.name, g.val.name) if c and c in frame.columns), None)
                if src is None:
                    raise ParameterError(
                        f"Session.sql: the `keys` frame lacks the GROUP BY column {g.name!r}; "
                        f"it has {', '.join(map(repr, frame.columns))} (nothing was spent)"
                    )
                cols.append(frame[src].alias(g.column))
            self.notes.append("group keys: public, from the `keys` frame")
            return pl.DataFrame(cols).unique(maintain_order=True)
        per: dict[str, list[Any]] = {}
        given = dict(given or {})
        for g in groups:
            hit = None
            for cand in (g.name, g.val.name, g.val.column):
                if cand and cand in given:
                    hit = cand
                    break
            if hit is not None:
                values = given.pop(hit)
                if isinstance(values, str) or not hasattr(values, "__iter__"):
                    raise TypeError(
                        f"Session.sql: `keys[{hit!r}]` must be a list of the key's values; "
                        f"got {type(values).__name__}"
                    )
                per[g.column] = list(values)
                self.notes.append(f"group key {g.name}: public keys given ({len(per[g.column])})")
            elif g.val.public is not None:
                per[g.column] = list(g.val.public)
                self.notes.append(
                    f"group key {g.name}: public keys from the joined public table "
                    f"({len(per[g.column])})"
                )
        if given:
            raise ParameterError(
                f"Session.sql: `keys` names {', '.join(map(repr, sorted(given)))}, which is no "
                "GROUP BY column of the query (they are "
                f"{', '.join(repr(g.name) for g in groups)}); nothing was spent"
            )
        if not per:
            self.notes.append("group keys: chosen privately (a noisy threshold; needs delta > 0)")
            return None
        missing = [g.name for g in groups if g.column not in per]
        if missing:
            raise ParameterError(
                f"Session.sql: public keys for some GROUP BY columns but not for "
                f"{', '.join(map(repr, missing))}; give keys for every GROUP BY column "
                "(keys={...} or a joined public table), or for none to choose the groups "
                "privately (nothing was spent)"
            )
        combos = list(itertools.product(*(per[g.column] for g in groups)))
        if len(combos) > 10_000_000:
            raise ParameterError(
                f"Session.sql: the public keys make {len(combos):,} groups; at most 10,000,000 "
                "(nothing was spent)"
            )
        return pl.DataFrame(combos, schema=[g.column for g in groups], orient="row", strict=False)

    # -- SELECT items

    def _item(self, node: Any, alias: str | None, groups: list[Group]) -> list[Output]:
        if is_aggregate(unparen(node)):
            return self._aggregate_item(unparen(node), alias)
        if contains_aggregate(node):
            expr = self._post_expr(node, groups, "SELECT", {})
            return [Output(alias or sql_text(node), expr=expr)]
        key = self._key(node)
        for g in groups:
            if key == g.val.key:
                return [Output(alias or g.name, source=g.column, key=True)]
        val_expr = self._post_expr(node, groups, "SELECT", {})
        return [Output(alias or sql_text(node), expr=val_expr, key=True)]

    def _aggregate_item(self, node: Any, alias: str | None) -> list[Output]:
        call = read_call(node)
        req = self._request(call, node, alias)
        if call.kind != "quantile":
            return [Output(alias or req.columns[0], source=req.columns[0], interval=True)]
        base = alias or self._base_name(call)
        outs = []
        for q in call.levels:
            col = req.columns[req.levels.index(q)]
            if call.single:
                name = alias or f"{base}_median"
            elif not call.listed and alias:
                name = alias
            else:
                name = f"{base}_{q:g}"
            outs.append(Output(name, source=col, interval=True))
        return outs

    def _base_name(self, call: Call) -> str:
        arg, _ = clamped(call.arg) if call.arg is not None else (None, None)
        if isinstance(arg, exp.Column):
            return str(arg.name)
        return sql_text(arg) if arg is not None else "count"

    def _request(self, call: Call, node: Any, alias: str | None) -> Request:
        """The Session aggregate for one call (shared by equal calls; quantiles of one
        value and bounds merged into one multi-quantile release)."""
        text = sql_text(node)
        label = f"the argument of {text}"
        if call.kind == "count":
            if call.arg is None:
                return self._register(("count",), Request("count", None, sql=text), alias, "count")
            val = self.compiler_for(node).value(call.arg)
            if not val.reads:
                return self._register(("count",), Request("count", None, sql=text), alias, "count")
            column = self._derive(val, label)
            default = f"{self._base_name(call)}_count" if isinstance(call.arg, exp.Column) else text
            return self._register(
                ("count", column), Request("count", val, sql=text), alias, default, column
            )
        arg, clamp = clamped(call.arg)
        val = self.compiler_for(node).value(arg)
        if not val.reads:
            raise refuse(
                text,
                "the aggregate reads no column",
                "aggregate a column (a constant's sum is the constant times COUNT(*))",
            )
        bounds = clamp if clamp is not None else self._bounds_for(call, arg, val, alias, node)
        dtype = self._dtype(val, label)
        if isinstance(dtype, nw.Boolean):  # SUM(x > 5): the number of true values
            val = dataclasses.replace(
                val, expr=val.as_expr().cast(nw.Int64()), column=None, key=f"int({val.key})"
            )
            dtype = None  # the cast's type: checked by _derive
        column = self._derive(val, label, dtype=dtype)
        if call.kind == "quantile":
            if bounds == "auto":
                raise refuse(
                    f"{text} with bounds 'auto'",
                    "quantile bounds are public: the mechanism chooses among the values "
                    "between them",
                    "give numeric bounds (lower, upper), or CLAMP(x, lower, upper)",
                )
            key = ("quantile", column, bounds)
            req = self.requests.get(key)
            if req is None:
                name = self._unique(self._base_name(call))
                req = Request("quantile", dataclasses.replace(val, column=column), (), bounds, name)
                self.requests[key] = req
            levels = tuple(sorted(set(req.levels) | set(call.levels)))
            req.levels = levels
            req.columns = tuple(f"{req.sql}_{q:g}" for q in levels)
            return req
        default = f"{self._base_name(call)}_{call.kind}" if isinstance(arg, exp.Column) else text
        req = Request(call.kind, dataclasses.replace(val, column=column), bounds=bounds, sql=text)
        return self._register((call.kind, column, bounds), req, alias, default, column)

    def compiler_for(self, node: Any) -> Compiler:
        return Compiler(self.scope, node)

    def _register(
        self,
        key: tuple[Any, ...],
        req: Request,
        alias: str | None,
        default: str,
        column: str | None = None,
    ) -> Request:
        found = self.requests.get(key)
        if found is not None:
            return found
        name = self._unique(alias or default)
        req.columns = (name,)
        if column is not None and req.value is not None:
            req.value = dataclasses.replace(req.value, column=column)
        self.requests[key] = req
        return req

    def _dtype(self, val: Val, label: str) -> Any:
        if val.column is not None:
            return self.schema[val.column]
        typed, _ = _total(val.as_expr(), self.schema, label)
        return typed.dtype

    def _bounds_for(self, call: Call, arg: Any, val: Val, alias: str | None, node: Any) -> Any:
        names = [alias] if alias else []
        if isinstance(arg, exp.Column):
            names.append(arg.name)
        if val.column is not None:
            names.append(val.column)
        for n in names:
            if n in self.bounds:
                return self.bounds[n]
        for n in names:  # unquoted names match ignoring case
            hits = [b for b in self.bounds if b.lower() == n.lower()]
            if len(hits) == 1:
                return self.bounds[hits[0]]
        what = names[0] if names else sql_text(arg)
        auto = f" or bounds={{{what!r}: 'auto'}} (chosen privately)"
        if call.kind == "quantile":
            auto = ""
        raise refuse(
            f"{sql_text(node)} without bounds",
            "a sum, mean, variance or quantile needs public bounds on the values (one "
            "record could otherwise move it without limit)",
            f"give bounds={{{what!r}: (lower, upper)}}{auto}, or write "
            f"CLAMP({sql_text(arg)}, lower, upper) in the query",
        )

    def _aggregates(self) -> list[Any]:
        out: list[Any] = []
        for req in self.requests.values():
            col = None if req.value is None else req.value.column
            if req.kind == "count":
                out.append(dpa.count(col, name=req.columns[0]))
            elif req.kind == "quantile":
                assert col is not None
                out.append(dpa.quantile(col, list(req.levels), bounds=req.bounds, name=req.sql))
            else:
                assert col is not None
                bounds = req.bounds
                out.append(_MAKERS[req.kind](col, bounds=bounds, name=req.columns[0]))
        return out

    # -- post-processing

    def _post_expr(
        self, node: Any, groups: list[Group], clause: str, aliases: dict[str, Output]
    ) -> Any:
        """``node`` as an expression of the released table: aggregates are their released
        columns, group keys their key columns, output aliases their outputs."""

        def hook(n: Any) -> Val | None:
            inner = unparen(n)
            if is_aggregate(inner):
                call = read_call(inner)
                if call.listed and len(call.levels) > 1:
                    raise refuse(
                        f"{sql_text(inner)} in an expression",
                        "a list of levels is several columns",
                        "give one level",
                    )
                req = self._request(call, inner, None)
                col = (
                    req.columns[req.levels.index(call.levels[0])]
                    if call.kind == "quantile"
                    else req.columns[0]
                )
                return Val(nw.col(col), f"released:{col}")
            if isinstance(inner, exp.Column) and not inner.table and inner.name in aliases:
                out = aliases[inner.name]
                expr = nw.col(out.source) if out.source is not None else out.expr
                return Val(expr, f"alias:{inner.name}")
            key = self._key(inner) if not isinstance(inner, exp.Literal) else None
            for g in groups:
                if key is not None and key == g.val.key:
                    return Val(nw.col(g.column), f"key:{g.column}")
            if isinstance(inner, exp.Column):
                raise refuse(
                    f"the column {sql_text(inner)} in {clause}",
                    "a column outside an aggregate is not released unless it is a GROUP BY key",
                    "aggregate it (COUNT, SUM, AVG, ...) or add it to GROUP BY",
                )
            return None

        compiler = Compiler(self.scope, clause, hook=hook)
        return compiler.expr(node)

    def _order(
        self, ordered: Any, groups: list[Group], aliases: dict[str, Output], outputs: list[Output]
    ) -> tuple[Any, bool, bool]:
        node = ordered.this
        desc = bool(ordered.args.get("desc"))
        nulls_first = ordered.args.get("nulls_first")
        nulls_last = not nulls_first if nulls_first is not None else True
        number = literal_number(node) if isinstance(node, exp.Literal) else None
        if number is not None:
            if not (isinstance(number, int) and 1 <= number <= len(outputs)):
                raise refuse(
                    f"ORDER BY {number}",
                    "a number in ORDER BY names an output column (from 1)",
                    f"use 1 to {len(outputs)}",
                )
            out = outputs[number - 1]
            expr = nw.col(out.source) if out.source is not None else out.expr
            return expr, desc, nulls_last
        return self._post_expr(node, groups, "ORDER BY", aliases), desc, nulls_last


@dataclass
class Group:
    """One GROUP BY key: its value, the Session's key column, its output name."""

    val: Val
    column: str
    name: str


def _usable(name: str, schema: dict[str, Any]) -> bool:
    """A name a query column can take on every engine (no dots, no case clash)."""
    if not _SAFE.fullmatch(name) or name.startswith(RESERVED):
        return False
    return all(c.lower() != name.lower() for c in schema)


def _total(expr: Any, schema: dict[str, Any], label: str) -> Any:
    try:
        return total_expression(expr, schema, f"Session.sql ({label})")
    except ParameterError as err:
        raise ParameterError(f"{sql_words(str(err))} (nothing was spent)") from None


def _count(node: Any, what: str) -> int:
    n = literal_number(node)
    if not isinstance(n, int) or n < 0:
        raise refuse(f"{what} {sql_text(node)}", "it takes a whole number literal", f"{what} 10")
    return n


def _frame(keys: Any) -> pl.DataFrame:
    return public_frame(
        keys,
        "Session.sql: `keys` must be a dict of GROUP BY column -> list of values, or a "
        f"frame of the GROUP BY columns; got {type(keys).__name__}",
    )


def _check_bounds(bounds: Any) -> dict[str, Any]:
    if bounds is None:
        return {}
    if not isinstance(bounds, dict):
        raise TypeError(
            "Session.sql: `bounds` must be a dict of column -> (lower, upper) or 'auto'; "
            f"got {type(bounds).__name__}"
        )
    out: dict[str, Any] = {}
    for k, v in bounds.items():
        if not isinstance(k, str):
            raise TypeError(f"Session.sql: `bounds` keys are column names; got {k!r}")
        if isinstance(v, str):
            if v != "auto":
                raise ParameterError(
                    f"Session.sql: bounds[{k!r}] must be (lower, upper) or 'auto'; got {v!r}"
                )
            out[k] = "auto"
            continue
        try:
            lo, hi = v
            pair = (float(lo), float(hi))
        except (TypeError, ValueError):
            raise TypeError(
                f"Session.sql: bounds[{k!r}] must be (lower, upper) or 'auto'; got {v!r}"
            ) from None
        if not all(math.isfinite(x) for x in pair) or pair[0] >= pair[1]:
            raise ParameterError(
                f"Session.sql: bounds[{k!r}] must be finite with lower < upper; got {v!r}"
            )
        out[k] = pair
    return out


def compile_select(session: Any, select: Any, bounds: Any, keys: Any) -> Program:
    """The Session query and post-processing of one SELECT (see the module docstring)."""
    return SelectCompiler(session, select, bounds, keys).compile()
