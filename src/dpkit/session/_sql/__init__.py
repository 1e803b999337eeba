"""SQL on a Session: one SELECT compiled into the Session's own query, never run as SQL.

The pipeline is parse -> compile -> release -> post-process:

1. :mod:`._parse` reads the text with sqlglot (DuckDB's dialect) into a syntax tree: one
   SELECT statement (a leading ``EXPLAIN`` asks for the plan).
2. :mod:`._compile` (with :mod:`._expr` for row-level expressions) turns the tree into the
   Session's builder calls: columns computed per row (``Query.with_columns``), conditions
   (``Query.filter``), group keys (``Query.group_by``, with public keys from ``keys=`` or a
   joined public table), and dpkit aggregates (``dp.count``, ``dp.sum``, ``dp.mean``,
   ``dp.var``, ``dp.std``, ``dp.quantile``). Whatever has no private counterpart is
   refused there with a hint, from the text, the public schema and the public tables only.
3. The query is released by :meth:`dpkit.session.Query.measure`: the same plan, checks,
   spend, engines and noise as a query written in Python.
4. :func:`post_process` applies what SQL asks of the released table (the SELECT list's
   order and names, arithmetic between released values, HAVING, ORDER BY, LIMIT): functions
   of released values and public keys only, so they cost nothing.

The SQL text never reaches an engine: there is nothing to inject and no table to reach but
the Session's own and its public ones.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import narwhals as nw
import polars as pl

from dpkit.errors import ParameterError
from dpkit.session._sql._public import check_name, check_public
from dpkit.session._total import polars_type

if TYPE_CHECKING:
    from dpkit.session._sql._compile import Post, Program

__all__ = ["check_name", "check_public", "compile_query", "post_process", "run"]


def _reworded(err: Exception, clause: str) -> Exception:
    """A Session builder's error in SQL's words (the clause instead of the method)."""
    text = str(err)
    for owner in ("Query.filter: ", "Query.with_columns: ", "group_by: ", "agg: "):
        text = text.replace(owner, "")
    if "nothing was spent" not in text:
        text += " (nothing was spent)"
    from dpkit.session._sql._parse import sql_words

    return type(err)(f"Session.sql ({clause}): {sql_words(text)}")


def _build(session: Any, program: Program, rows: Any, groups: Any) -> Any:
    q = session.query(max_rows_per_unit=rows, max_groups_per_unit=groups)
    try:
        if program.derived:
            q = q._with_columns(program.derived, internal=True)
    except (ParameterError, TypeError) as err:
        raise _reworded(err, "a row-level expression") from None
    try:
        if program.filters:
            q = q.filter(*program.filters)
    except (ParameterError, TypeError) as err:
        raise _reworded(err, "WHERE or JOIN") from None
    if program.by:
        q = q.group_by(*program.by, keys=program.keys)
    return q.agg(*program.aggregates)


def _check_keys(program: Program, epsilon: Any, delta: Any, rho: Any) -> None:
    """Private group keys need delta > 0: said in SQL's words before the release does."""
    if not program.by or program.keys is not None or (epsilon is None and rho is None):
        return
    if rho is not None or not delta:
        raise ParameterError(
            "Session.sql: GROUP BY without public keys chooses the groups privately, which "
            "needs epsilon with delta > 0 (for example delta=1e-6); or give the groups: "
            "keys={column: [values, ...]}, or JOIN a public table and group by its column "
            "(nothing was spent)"
        )


def compile_query(
    session: Any,
    query: Any,
    *,
    bounds: Any = None,
    keys: Any = None,
    max_rows_per_unit: Any = None,
    max_groups_per_unit: Any = None,
) -> tuple[Any, Program, Any]:
    """The Session :class:`~dpkit.session.Query` an SQL text compiles into, with its
    post-processing and the parsed statement; nothing is spent or read. (The audit samples
    the query as it samples any Session query.)"""
    from dpkit.session._sql._compile import compile_select
    from dpkit.session._sql._parse import parse

    parsed = parse(query)
    program = compile_select(session, parsed.select, bounds, keys)
    q = _build(session, program, max_rows_per_unit, max_groups_per_unit)
    return q, program, parsed


def run(
    session: Any,
    query: Any,
    *,
    epsilon: Any = None,
    delta: Any = 0.0,
    rho: Any = None,
    bounds: Any = None,
    keys: Any = None,
    alpha: Any = 0.05,
    explain: bool = False,
    measure: bool = False,
    noise: Any = None,
    rng: Any = None,
    label: Any = None,
    max_rows_per_unit: Any = None,
    max_groups_per_unit: Any = None,
) -> Any:
    """:meth:`dpkit.session.Session.sql` (see there)."""
    q, program, parsed = compile_query(
        session,
        query,
        bounds=bounds,
        keys=keys,
        max_rows_per_unit=max_rows_per_unit,
        max_groups_per_unit=max_groups_per_unit,
    )
    notes = tuple(f"SQL: {n}" for n in [*program.notes, *program.post.notes])
    _check_keys(program, epsilon, delta, rho)
    if explain or parsed.explain:
        plan = q.explain(epsilon, 0.0 if delta is None else delta, alpha, rho=rho, noise=noise)
        return dataclasses.replace(plan, notes=plan.notes + notes)
    if label is None:
        label = "Session.sql: " + " ".join(parsed.text.split())[:200]

    def finish(rel: Any) -> tuple[Any, str, str]:
        frame = post_process(session, rel.frame, program.post)
        plan = dataclasses.replace(rel.plan, notes=rel.plan.notes + notes)
        return dataclasses.replace(rel, frame=frame, plan=plan), "sql", parsed.text

    out = q._measure(
        epsilon, 0.0 if delta is None else delta, alpha, rho, noise, rng, label, finish
    )
    return out if measure else out.frame


def post_process(session: Any, released: Any, post: Post) -> Any:
    """The SQL result from the released table: the SELECT list (with intervals), HAVING,
    ORDER BY, LIMIT and OFFSET, computed on released values and public keys only, back in
    the Session's output type.

    The expressions were made total before the spend on the columns in ``post.types``
    (keys in their public types, statistics as Float64); they run on exactly those here,
    so no released value can make them fail (a division by zero gives NULL)."""
    frame = session._engine.released(released)
    anchor = "__dpkit_sql_row"  # a column, so that a literal has one value per row
    native = {c: polars_type(t) for c, t in post.types.items() if c in frame.columns}
    typed = frame.with_row_index(anchor).select(
        anchor,
        *(pl.col(c) if frame.schema[c] == n else _cast(c, n) for c, n in native.items()),
    )
    computed: list[nw.Expr] = []
    if post.having is not None:
        computed.append(post.having.alias("__dpkit_sql_having"))
    order_cols = []
    for i, (expr, _, _) in enumerate(post.order):
        order_cols.append(f"__dpkit_sql_order{i}")
        computed.append(expr.alias(order_cols[-1]))
    final: list[str] = []
    names: list[str] = []
    sources: list[pl.Expr] = []
    keys: list[str] = []
    for i, o in enumerate(post.outputs):
        if o.source is not None:
            pairs = [(o.source, o.name)]
            if o.interval:
                pairs += [(f"{o.source}_{e}", f"{o.name}_{e}") for e in ("low", "high")]
            for src, dst in pairs:
                sources.append(pl.col(src).alias(f"__dpkit_sql_out{len(sources)}"))
                final.append(sources[-1].meta.output_name())
                names.append(dst)
        else:
            computed.append(o.expr.alias(f"__dpkit_sql_value{i}"))
            final.append(f"__dpkit_sql_value{i}")
            names.append(o.name)
        if o.key or o.expr is not None:
            keys.append(o.name)
    values = nw.from_native(typed).select(nw.col(anchor), *computed).to_native()
    out = pl.concat([frame.select(sources), values.drop(anchor)], how="horizontal")
    if post.having is not None:
        out = out.filter(pl.col("__dpkit_sql_having"))
    if post.order:
        out = out.sort(
            order_cols,
            descending=[d for _, d, _ in post.order],
            nulls_last=[n for _, _, n in post.order],
            maintain_order=True,
        )
    if post.offset or post.limit is not None:
        out = out.slice(post.offset, post.limit)
    result = out.select(final).rename(dict(zip(final, names, strict=True)))
    return session._engine.output(result, like=session._base, keys=tuple(keys))


def _cast(column: str, native: Any) -> pl.Expr:
    """A released column in the (Polars) type its post-processing was checked on (public
    values: a value that does not convert is null)."""
    return pl.col(column).cast(native, strict=False)
