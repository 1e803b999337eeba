"""FROM, JOIN, WHERE and WITH: the private rows a query reads and the names it sees.

Every source is the Session's private table, seen through row-level steps: a WITH clause or
a subquery of projections and conditions (no aggregate), or a public table joined by one
equality on a unique key (a lookup: each private row meets at most one public row, so the
join is a row-level step and every sensitivity is unchanged). Anything else that reads a
table is refused from the query's text.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import narwhals as nw
import polars as pl

from dpkit.errors import ParameterError
from dpkit.session._sql._expr import Compiler, Scope, Source, Val, sql_text
from dpkit.session._sql._parse import refuse, sqlglot_modules

__all__ = ["Relation", "Tables", "refuse_shape", "relation", "with_clauses"]

_, exp = sqlglot_modules()


@dataclass
class Relation:
    """What a FROM clause (with its joins and WHERE) gives: the visible sources and the
    row conditions (total expressions of the private table's rows)."""

    scope: Scope
    filters: list[Any]
    notes: list[str] = field(default_factory=list)


class Tables:
    """The tables a query may read: the Session's private one, its public ones, and the
    query's own WITH clauses (each a private relation of row-level steps)."""

    def __init__(self, session: Any) -> None:
        self.s = session
        self.name: str = session._sql_name
        self.public: dict[str, pl.DataFrame] = session._sql_public
        self.ctes: dict[str, Relation] = {}

    def private_source(self, names: tuple[str, ...]) -> Source:
        cols = {c: Val(nw.col(c), f"data.{c}", column=c, name=c) for c in self.s.columns}
        return Source(names, cols)

    def find(self, table: Any) -> tuple[str, Any]:
        """("cte", relation), ("private", None) or ("public", frame) for a table node."""
        if (
            not isinstance(table.this, exp.Identifier)
            or table.args.get("db")
            or table.args.get("catalog")
        ):
            raise refuse(
                f"the table {sql_text(table)}",
                "a query reads only the Session's table and its registered public tables "
                "(no table function, file or schema)",
                f"read FROM {self.name}",
            )
        name = table.name
        quoted = bool(table.this.args.get("quoted"))
        for cte, rel in self.ctes.items():
            if _same(name, cte, quoted):
                return "cte", rel
        if _same(name, self.name, quoted):
            return "private", None
        for pub, frame in self.public.items():
            if _same(name, pub, quoted):
                return "public", (pub, frame)
        known = [self.name, *self.public, *self.ctes]
        raise refuse(
            f"the table {name!r}",
            "it is neither the Session's table nor one of its public tables",
            f"read one of {', '.join(map(repr, known))} (register public tables with "
            "dp.Session(..., public={'name': frame}))",
        )


def _same(a: str, b: str, quoted: bool) -> bool:
    return a == b or (not quoted and a.lower() == b.lower())


def _alias_names(node: Any, default: str) -> tuple[str, ...]:
    alias = node.alias if hasattr(node, "alias") else ""
    return (alias,) if alias else (default,)


def relation(tables: Tables, select: Any, where: str) -> Relation:
    """The sources of ``select`` (FROM, JOINs) and its WHERE conditions."""
    for key in ("from_", "from"):
        from_ = select.args.get(key)
        if from_ is not None:
            break
    else:
        raise refuse(
            f"a SELECT without FROM ({where})",
            "a release reads the Session's table",
            f"write SELECT ... FROM {tables.name}",
        )
    base = from_.this
    names: tuple[str, ...]
    if isinstance(base, exp.Subquery):
        inner = base.this
        if not isinstance(inner, exp.Select):
            raise refuse(f"{sql_text(base)}", "only a SELECT can stand in FROM", "use a SELECT")
        rel = row_steps(tables, inner, f"the subquery {base.alias or ''}".strip())
        names = (base.alias,) if base.alias else ()
        scope = Scope([dataclasses.replace(rel.scope.sources[0], names=names)])
        rel = Relation(scope, list(rel.filters), list(rel.notes))
    elif isinstance(base, exp.Table):
        kind, found = tables.find(base)
        if kind == "public":
            raise refuse(
                f"FROM {sql_text(base)}",
                "a query releases statistics of the Session's private table; a public table "
                "alone needs no privacy",
                f"read FROM {tables.name} and JOIN the public table to it",
            )
        if kind == "cte":
            rel = found
            names = _alias_names(base, base.name)
            scope = Scope([dataclasses.replace(rel.scope.sources[0], names=names)])
            rel = Relation(scope, list(rel.filters), list(rel.notes))
        else:
            names = tuple(dict.fromkeys([base.alias or base.name, base.name]))
            rel = Relation(Scope([tables.private_source(names)]), [])
    else:
        raise refuse(
            f"FROM {sql_text(base)}",
            "only a table name, a WITH name or a subquery can stand in FROM",
            f"read FROM {tables.name}",
        )
    for join in select.args.get("joins") or []:
        _join(tables, rel, join)
    cond = select.args.get("where")
    if cond is not None:
        val = Compiler(rel.scope, "WHERE").value(cond.this)
        rel.filters.append(val.as_expr())
        rel.notes.append(
            f"WHERE {sql_text(cond.this)}: a row condition ({where}; a row where it is NULL "
            "is dropped)"
        )
    return rel


def _join(tables: Tables, rel: Relation, join: Any) -> None:
    """A public table joined by one equality on a value of the private rows: each private
    row meets at most one public row (the public key must be unique), so the join is a
    lookup, a row-level step."""
    table = join.this
    side = str(join.args.get("side") or "").upper()
    kind = str(join.args.get("kind") or "").upper()
    if not isinstance(table, exp.Table):
        raise refuse(
            f"JOIN {sql_text(table)}",
            "a joined subquery reads the private table a second time (or before the release)",
            "JOIN a public table registered with dp.Session(..., public={...})",
        )
    where, found = tables.find(table)
    if where != "public":
        raise refuse(
            f"the JOIN of {sql_text(table)}",
            "a join of the private table with itself (or with a WITH clause on it) would "
            "pair one person's rows with others', so one person could change many rows",
            "JOIN public tables only; put row-level steps in a WITH clause",
        )
    name, frame = found
    names = _alias_names(table, table.name)
    if kind in ("CROSS",) or side in ("RIGHT", "FULL") or (kind in ("OUTER",) and not side):
        raise refuse(
            f"a {side or kind} JOIN of {name!r}",
            "only INNER, LEFT, SEMI and ANTI joins keep each private row at most once and "
            "add no row that is not one of them",
            f"JOIN {name} ON <private value> = {names[0]}.<key> (or LEFT JOIN)",
        )
    on, using = join.args.get("on"), join.args.get("using")
    if on is None and not using:
        raise refuse(
            f"the join of {name!r} without ON",
            "a join without an equality pairs every private row with every public row",
            f"JOIN {name} ON <private value> = {names[0]}.<key>",
        )
    public_cols = list(frame.columns)
    if using:
        if len(using) != 1:
            raise refuse(
                f"JOIN {name} USING ({', '.join(u.name for u in using)})",
                "the join key is one column",
                "join on one column",
            )
        pub_key = _public_column(using[0].name, public_cols, name)
        private = Compiler(rel.scope, "the join condition").value(exp.column(using[0].name))
    else:
        pub_key, private = _equality(rel, on, names, public_cols, name)
    keyed = _typed_keys(tables, frame, pub_key, private, name)
    if keyed[pub_key].is_duplicated().any():
        raise refuse(
            f"the join on {name}.{pub_key}",
            f"{pub_key!r} repeats in the public table {name!r}, so one private row would "
            "meet several public rows and count several times",
            "join on a column whose values are distinct (a key)",
        )
    old = keyed[pub_key].to_list()
    pv = private.as_expr()
    matched = pv.is_in(old)
    semi = kind in ("SEMI", "ANTI")
    if kind == "ANTI":
        rel.filters.append(~matched.fill_null(False))
    elif side != "LEFT":
        rel.filters.append(matched)
    if semi:
        return
    left = side == "LEFT"
    columns: dict[str, Val] = {}
    schema = nw.from_native(keyed).collect_schema()
    for c in public_cols:
        values = keyed[c]
        expr: Any
        if c == pub_key:
            expr = nw.when(matched).then(pv)
        else:
            expr = pv.replace_strict(old, values.to_list(), default=None, return_dtype=schema[c])
        distinct = values.unique(maintain_order=True).to_list()
        public = tuple([*distinct, None] if left and None not in distinct else distinct)
        columns[c] = Val(expr, f"{name}.{c}|{private.key}|{side}", name=c, public=public)
    if not left and private.column is not None:  # the private key takes the public values
        for src in rel.scope.sources:
            for col, val in src.columns.items():
                if val.key == private.key:
                    src.columns[col] = dataclasses.replace(val, public=tuple(old))
    rel.scope.sources.append(Source(names, columns, private=False))
    rel.notes.append(
        f"{side or 'INNER'} JOIN {name} ON {private.name or private.key} = {name}.{pub_key}: "
        f"a lookup in the public table ({len(old)} distinct keys), a row-level step"
    )


def _family(dtype: Any) -> str:
    if dtype.is_numeric():
        return "number"
    if isinstance(dtype, nw.String | nw.Categorical | nw.Enum):
        return "text"
    return str(type(dtype).__name__)


def _typed_keys(
    tables: Tables, frame: pl.DataFrame, key: str, private: Val, name: str
) -> pl.DataFrame:
    """The public rows with a key, the key in the private value's type (public values: one
    that does not convert could equal no private value, and is dropped)."""
    from dpkit.session._total import polars_type, total_expression

    owner = "Session.sql (the join condition)"
    mine = total_expression(private.as_expr(), tables.s.schema, owner)[0].dtype
    theirs = nw.from_native(frame).collect_schema()[key]
    if _family(mine) != _family(theirs):
        raise refuse(
            f"the join on {name}.{key}",
            f"it compares {mine} values of the private rows with {theirs} keys, which "
            "engines compare differently",
            "join values of one kind (CAST one side in a WITH clause)",
        )
    out = frame.filter(pl.col(key).is_not_null())
    if _family(mine) == "number" and mine != theirs:
        cast = out[key].cast(polars_type(mine), strict=False)
        same = cast.cast(out[key].dtype, strict=False) == out[key]
        out = out.with_columns(cast.alias(key)).filter(same.fill_null(False))
    return out


def _public_column(name: str, cols: list[str], table: str) -> str:
    for c in cols:
        if c == name:
            return c
    folded = [c for c in cols if c.lower() == name.lower()]
    if len(folded) == 1:
        return folded[0]
    raise refuse(
        f"the column {name!r} of {table!r}",
        "the public table has no such column",
        f"use one of {', '.join(map(repr, cols))}",
    )


def _equality(
    rel: Relation, on: Any, names: tuple[str, ...], cols: list[str], table: str
) -> tuple[str, Val]:
    """The public key and the private value of ``ON a = b``."""
    if not isinstance(on, exp.EQ):
        raise refuse(
            f"the join condition {sql_text(on)}",
            "a join is one equality between a value of the private rows and a column of "
            "the public table",
            f"JOIN {table} ON <private value> = {names[0]}.<key>",
        )
    sides = [on.this, on.expression]
    for i, s in enumerate(sides):
        if isinstance(s, exp.Column) and (
            (s.table and _same(s.table, names[0], False))
            or (not s.table and any(c.lower() == s.name.lower() for c in cols))
        ):
            other = sides[1 - i]
            try:
                private = Compiler(rel.scope, "the join condition").value(other)
            except ParameterError:
                if s.table:
                    raise
                continue
            if not private.reads:
                break
            return _public_column(s.name, cols, table), private
    raise refuse(
        f"the join condition {sql_text(on)}",
        "one side must be a column of the public table and the other a value of the private rows",
        f"JOIN {table} ON <private value> = {names[0]}.<key>",
    )


_EXACT = (
    "a subquery that aggregates before the release would compute exact statistics of the "
    "private table"
)
_ROW_LEVEL = "aggregate in the outer SELECT; a WITH clause holds row-level steps only"


def refuse_shape(select: Any, where: str, *, top: bool) -> None:
    """Refuse the clauses a row-level step (a WITH clause, a subquery) cannot have, or
    that no release has."""
    checks = [
        ("distinct", "DISTINCT", "keeps one row per value, so one person decides a row"),
        ("qualify", "QUALIFY", "filters on window functions, which look at other rows"),
        ("windows", "WINDOW", "window functions look at other rows"),
        ("laterals", "LATERAL", "a lateral join reads the table row by row"),
        ("pivots", "PIVOT", "a pivot aggregates"),
        ("sample", "TABLESAMPLE", "a sample is not part of a private release's plan"),
    ]
    if not top:
        checks += [
            ("group", "GROUP BY", _EXACT),
            ("having", "HAVING", _EXACT),
            ("order", "ORDER BY", "row order in a subquery is not kept"),
            ("limit", "LIMIT", "which rows a limit keeps depends on other rows"),
            ("offset", "OFFSET", "which rows an offset keeps depends on other rows"),
        ]
    for arg, name, why in checks:
        if select.args.get(arg):
            hint = (
                _ROW_LEVEL
                if not top
                else "see the list of supported clauses in the SQL documentation"
            )
            if arg == "distinct" and top:
                hint = "GROUP BY the columns and release COUNT(*) (groups chosen privately)"
            raise refuse(f"{name} in {where}", why, hint)


def row_steps(tables: Tables, select: Any, where: str) -> Relation:
    """A WITH clause or subquery of row-level steps: its columns (each a value of the
    private rows) and its conditions."""
    refuse_shape(select, where, top=False)
    for node in select.expressions:
        # not contains_aggregate: a FILTER on a row-level function is refused as FILTER
        if node.find(exp.AggFunc, exp.WithinGroup) is not None:
            raise refuse(f"the aggregate {sql_text(node)} in {where}", _EXACT, _ROW_LEVEL)
    rel = relation(tables, select, where)
    if not any(s.private for s in rel.scope.sources):  # pragma: no cover - FROM is private
        raise refuse(where, "it reads no private table", f"read FROM {tables.name}")
    compiler = Compiler(rel.scope, where)
    columns: dict[str, Val] = {}
    for node in select.expressions:
        if isinstance(node, exp.Star) or (
            isinstance(node, exp.Column) and isinstance(node.this, exp.Star)
        ):
            qual = node.table if isinstance(node, exp.Column) else ""
            for src in rel.scope.sources:
                if qual and not any(_same(qual, n, False) for n in src.names):
                    continue
                for c, v in src.columns.items():
                    columns.setdefault(c, v)
            continue
        val = compiler.value(node.this if isinstance(node, exp.Alias) else node)
        name = (
            node.alias
            if isinstance(node, exp.Alias)
            else (node.name if isinstance(node, exp.Column) else sql_text(node))
        )
        if name in columns:
            raise refuse(
                f"the column name {name!r} in {where}",
                "it names two columns",
                "give each column its own alias",
            )
        columns[name] = dataclasses.replace(val, name=name)
    return Relation(Scope([Source((), columns)]), rel.filters, rel.notes)


def with_clauses(tables: Tables, select: Any) -> None:
    with_ = select.args.get("with_") or select.args.get("with")
    if with_ is None:
        return
    if with_.args.get("recursive"):
        raise refuse(
            "WITH RECURSIVE",
            "a recursive query reads its own result row by row",
            "write the steps as plain WITH clauses",
        )
    for cte in with_.expressions:
        name = cte.alias
        inner = cte.this
        if not isinstance(inner, exp.Select):
            raise refuse(f"the WITH clause {name!r}", "only a SELECT can stand in WITH", "")
        rel = row_steps(tables, inner, f"the WITH clause {name!r}")
        cols = cte.args.get("alias").columns if cte.args.get("alias") is not None else []
        if cols:
            src = rel.scope.sources[0]
            if len(cols) != len(src.columns):
                raise refuse(
                    f"the column list of {name!r}",
                    f"it names {len(cols)} columns for {len(src.columns)}",
                    "name each column once",
                )
            src.columns = {
                c.name: dataclasses.replace(v, name=c.name)
                for c, v in zip(cols, src.columns.values(), strict=True)
            }
        tables.ctes[name] = rel
