"""SQL row-level expressions as narwhals expressions.

Each SQL expression is rebuilt from sqlglot's tree as the narwhals expression that means
the same thing; the Session then rebuilds that as a *total* expression
(:mod:`dpkit.session._total`: a cast that cannot convert gives NULL, as ``TRY_CAST`` does,
a division by zero gives NULL), so no value of the data can make a query fail. What has no
such expression (a function dpkit does not know, a subquery, a window, something that
depends on when or where it runs) is refused here, from the query's text alone.
"""

from __future__ import annotations

import datetime
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import narwhals as nw

from dpkit.errors import ParameterError
from dpkit.session._sql._parse import refuse, sqlglot_modules

__all__ = ["Compiler", "Scope", "Source", "Val", "literal_number", "sql_text"]

_, exp = sqlglot_modules()

#: SQL type names and the narwhals types their casts give
_TYPES: dict[str, Any] = {
    "TINYINT": nw.Int8(),
    "SMALLINT": nw.Int16(),
    "INT": nw.Int32(),
    "INTEGER": nw.Int32(),
    "BIGINT": nw.Int64(),
    "UTINYINT": nw.UInt8(),
    "USMALLINT": nw.UInt16(),
    "UINT": nw.UInt32(),
    "UBIGINT": nw.UInt64(),
    "FLOAT": nw.Float32(),
    "REAL": nw.Float32(),
    "DOUBLE": nw.Float64(),
    "VARCHAR": nw.String(),
    "CHAR": nw.String(),
    "TEXT": nw.String(),
    "STRING": nw.String(),
    "BOOLEAN": nw.Boolean(),
    "DATE": nw.Date(),
    "TIMESTAMP": nw.Datetime("us"),
    "TIMESTAMPNTZ": nw.Datetime("us"),
    "DATETIME": nw.Datetime("us"),
}

#: the row-level functions and operators, for the refusal of an unknown one
SUPPORTED = (
    "arithmetic (+ - * / // % ^), comparisons, AND/OR/NOT, IS [NOT] NULL, BETWEEN, IN (list), "
    "[I]LIKE, CASE, IIF/IF, COALESCE, NULLIF, GREATEST, LEAST, CLAMP, CAST/TRY_CAST/::, ABS, "
    "FLOOR, CEIL, ROUND, SQRT, EXP, LN, LOG, LOG10, LOG2, POWER, SIGN, MOD, UPPER, LOWER, "
    "LENGTH, TRIM/LTRIM/RTRIM, SUBSTRING, LEFT, || and CONCAT, REPLACE, STARTS_WITH, "
    "ENDS_WITH, CONTAINS, YEAR, MONTH, DAY, HOUR, MINUTE, SECOND, QUARTER, DAYOFWEEK, "
    "DAYOFYEAR, EXTRACT(field FROM x), DATE '...' and TIMESTAMP '...' literals"
)

_FIELDS = {
    "YEAR": "year",
    "MONTH": "month",
    "DAY": "day",
    "HOUR": "hour",
    "MINUTE": "minute",
    "SECOND": "second",
    "DOY": "ordinal_day",
    "DAYOFYEAR": "ordinal_day",
}


def sql_text(node: Any) -> str:
    """The node's SQL as DuckDB would print it (names in the user's own spelling)."""
    return str(node.sql(dialect="duckdb"))


def literal_number(node: Any) -> float | int | None:
    """The number a literal (or a negated literal) node holds, else None."""
    neg = False
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Neg):
        neg, node = True, node.this
    if not (isinstance(node, exp.Literal) and not node.is_string):
        return None
    value = _number(node.this)
    return -value if neg else value


def _number(text: str) -> float | int:
    if re.fullmatch(r"[0-9]+", text) and int(text) < 2**63:
        return int(text)
    value = float(text)
    if not math.isfinite(value):
        raise refuse(
            f"the number {text}",
            "it is beyond the float range",
            "write a finite number",
        )
    return value


@dataclass(frozen=True)
class Val:
    """A compiled SQL value.

    ``expr`` is a narwhals expression, or the Python value of a literal when ``literal``.
    ``column`` is the data column it is when it is one as is (aggregates then read that
    column directly); ``key`` identifies the value (equal keys, equal values on every row);
    ``name`` is the name it was referred to by (default output names); ``public`` the
    public values a group key on it takes (a public table's column, or a private column
    joined to one), when known; ``reads`` whether it reads any column.
    """

    expr: Any
    key: str
    literal: bool = False
    column: str | None = None
    name: str = ""
    public: tuple[Any, ...] | None = None
    reads: bool = True

    def as_expr(self) -> nw.Expr:
        if self.literal:
            return nw.lit(self.expr)
        assert isinstance(self.expr, nw.Expr)
        return self.expr

    def arg(self) -> Any:
        """What to hand an operator: the Python value of a literal, else the expression."""
        return self.expr


@dataclass
class Source:
    """One relation visible in FROM: its names (table name or alias) and its columns."""

    names: tuple[str, ...]
    columns: dict[str, Val]
    private: bool = True


@dataclass
class Scope:
    """The names an expression can refer to: the sources of one SELECT."""

    sources: list[Source] = field(default_factory=list)

    def lookup(self, node: Any) -> Val:
        name = node.name
        quoted = (
            bool(node.this.args.get("quoted")) if isinstance(node.this, exp.Identifier) else False
        )
        table = node.table
        sources = self.sources
        if table:
            sources = [s for s in self.sources if _match(table, s.names, quoted=False)]
            if not sources:
                names = sorted({n for s in self.sources for n in s.names})
                raise refuse(
                    f"the table name {table!r} in {sql_text(node)}",
                    "no table of this query is called so",
                    f"use one of {', '.join(names) or 'the table in FROM'}",
                )
        found: list[Val] = []
        for s in sources:
            hit = _pick(name, s.columns, quoted)
            if hit is not None:
                found.append(hit)
        if len(found) == 1:
            return found[0]
        if not found:
            cols = sorted({c for s in sources for c in s.columns}, key=str.lower)
            shown = ", ".join(repr(c) for c in cols[:20]) + (" ..." if len(cols) > 20 else "")
            raise refuse(
                f"the column {name!r}",
                "no table of the query has it",
                f'use one of {shown} (quote names with spaces or capitals: "Hours per week")',
            )
        raise refuse(
            f"the column {name!r}",
            "more than one table of the query has it",
            "qualify it with its table's name or alias (d.x)",
        )


def _match(name: str, names: tuple[str, ...], *, quoted: bool) -> bool:
    if name in names:
        return True
    return not quoted and sum(n.lower() == name.lower() for n in names) == 1


def _pick(name: str, columns: dict[str, Val], quoted: bool) -> Val | None:
    """A column by name: the exact name, else (unquoted) the one name equal ignoring case."""
    if name in columns:
        return columns[name]
    if quoted:
        return None
    folded = [c for c in columns if c.lower() == name.lower()]
    return columns[folded[0]] if len(folded) == 1 else None


Hook = Callable[[Any], "Val | None"]


class Compiler:
    """Compiles one SQL expression tree against a :class:`Scope`.

    ``clause`` names where the expression stands (for refusals). ``hook``, when given, is
    asked first about every node (post-processing: an aggregate or a group key becomes a
    column of the released table); ``aggregates`` says what an aggregate function means
    where it is met without a hook (a refusal by default).
    """

    def __init__(self, scope: Scope, clause: str | Any, hook: Hook | None = None) -> None:
        self.scope = scope
        self._clause = clause
        self.hook = hook
        self._keys: dict[int, tuple[Any, str]] = {}

    @property
    def clause(self) -> str:
        """Where the expression stands (for refusals): given as text, or as the aggregate
        node whose argument it is (its text made only when a refusal needs it)."""
        if isinstance(self._clause, str):
            return self._clause
        return f"the argument of {sql_text(self._clause)}"

    # -- entry

    def value(self, node: Any) -> Val:
        if self.hook is not None:
            got = self.hook(node)
            if got is not None:
                return got
        method = getattr(self, f"_{type(node).__name__.lower()}", None)
        if method is not None:
            out: Val = method(node)
            return out
        return self._other(node)

    def expr(self, node: Any) -> nw.Expr:
        return self.value(node).as_expr()

    def key(self, node: Any) -> str:
        """The identity of ``node``'s value: its SQL with each column replaced by the
        identity of what it resolves to (so ``d.Age`` and ``Age`` are one value)."""
        while isinstance(node, exp.Paren):
            node = node.this
        if isinstance(node, exp.Column):
            return self.scope.lookup(node).key
        seen = self._keys.get(id(node))
        if seen is not None and seen[0] is node:
            return seen[1]
        parts = []
        for name, arg in node.args.items():
            if isinstance(arg, list):
                shown = ",".join(self._part(a) for a in arg)
                parts.append(f"{name}=[{shown}]")
            elif arg is not None and arg is not False:
                parts.append(f"{name}={self._part(arg)}")
        out = f"{type(node).__name__}({';'.join(parts)})"
        self._keys[id(node)] = (node, out)
        return out

    def _part(self, arg: Any) -> str:
        if isinstance(arg, exp.Expression):
            return self.key(arg)
        return repr(arg)

    # -- helpers

    def _made(self, expr: nw.Expr, node: Any, *parts: Val) -> Val:
        reads = any(p.reads for p in parts)
        return Val(expr, self.key(node), reads=reads)

    def _lit(self, value: Any, node: Any) -> Val:
        return Val(value, self.key(node), literal=True, reads=False)

    def _args(self, node: Any) -> list[Val]:
        return [self.value(a) for a in node.expressions]

    def _refuse_here(self, node: Any, why: str, hint: str) -> ParameterError:
        return refuse(f"{sql_text(node)} in {self.clause}", why, hint)

    # -- leaves

    def _column(self, node: Any) -> Val:
        if isinstance(node.this, exp.Star):
            raise self._refuse_here(
                node,
                "a star selects every column; a release is made of aggregates",
                "name the aggregates: SELECT COUNT(*), AVG(x) ... FROM data",
            )
        return self.scope.lookup(node)

    def _literal(self, node: Any) -> Val:
        if node.is_string:
            return self._lit(str(node.this), node)
        return self._lit(_number(node.this), node)

    def _boolean(self, node: Any) -> Val:
        return self._lit(bool(node.this), node)

    def _null(self, node: Any) -> Val:
        return self._lit(None, node)

    def _paren(self, node: Any) -> Val:
        return self.value(node.this)

    def _star(self, node: Any) -> Val:
        raise self._refuse_here(
            node,
            "SELECT * would release rows; a release is made of aggregates",
            "name the aggregates: SELECT COUNT(*), AVG(x) ... FROM data",
        )

    def _placeholder(self, node: Any) -> Val:
        raise self._refuse_here(
            node, "query parameters are not bound by dpkit", "write the value in the query"
        )

    # -- operators

    def _binary(self, node: Any, op: str) -> Val:
        left, right = self.value(node.this), self.value(node.expression)
        out = getattr(left.as_expr(), op)(right.arg())
        return self._made(out, node, left, right)

    def _add(self, node: Any) -> Val:
        return self._binary(node, "__add__")

    def _sub(self, node: Any) -> Val:
        return self._binary(node, "__sub__")

    def _mul(self, node: Any) -> Val:
        return self._binary(node, "__mul__")

    def _div(self, node: Any) -> Val:
        return self._binary(node, "__truediv__")

    def _intdiv(self, node: Any) -> Val:
        return self._binary(node, "__floordiv__")

    def _mod(self, node: Any) -> Val:
        return self._binary(node, "__mod__")

    def _pow(self, node: Any) -> Val:
        return self._binary(node, "__pow__")

    def _neg(self, node: Any) -> Val:
        number = literal_number(node)
        if number is not None:
            return self._lit(number, node)
        inner = self.value(node.this)
        return self._made(-inner.as_expr(), node, inner)

    def _eq(self, node: Any) -> Val:
        return self._binary(node, "__eq__")

    def _neq(self, node: Any) -> Val:
        return self._binary(node, "__ne__")

    def _gt(self, node: Any) -> Val:
        return self._binary(node, "__gt__")

    def _gte(self, node: Any) -> Val:
        return self._binary(node, "__ge__")

    def _lt(self, node: Any) -> Val:
        return self._binary(node, "__lt__")

    def _lte(self, node: Any) -> Val:
        return self._binary(node, "__le__")

    def _nullsafeeq(self, node: Any) -> Val:
        left, right = self.value(node.this), self.value(node.expression)
        a, b = left.as_expr(), right.as_expr()
        same = (a == b).fill_null(False) | (a.is_null() & b.is_null())
        return self._made(same, node, left, right)

    def _nullsafeneq(self, node: Any) -> Val:
        inner = self._nullsafeeq(node)
        return self._made(~inner.as_expr(), node, inner)

    def _and(self, node: Any) -> Val:
        return self._binary(node, "__and__")

    def _or(self, node: Any) -> Val:
        return self._binary(node, "__or__")

    def _xor(self, node: Any) -> Val:
        return self._binary(node, "__xor__")

    def _not(self, node: Any) -> Val:
        inner = self.value(node.this)
        return self._made(~inner.as_expr(), node, inner)

    def _is(self, node: Any) -> Val:
        inner = self.value(node.this)
        what = node.expression
        if isinstance(what, exp.Null):
            return self._made(inner.as_expr().is_null(), node, inner)
        if isinstance(what, exp.Boolean):
            test = (inner.as_expr() == bool(what.this)).fill_null(False)
            return self._made(test, node, inner)
        raise self._refuse_here(node, "only IS [NOT] NULL, TRUE or FALSE", "use = for values")

    def _between(self, node: Any) -> Val:
        x, lo, hi = (
            self.value(node.this),
            self.value(node.args["low"]),
            self.value(node.args["high"]),
        )
        e = x.as_expr()
        out = (e >= lo.arg()) & (e <= hi.arg())
        if node.args.get("symmetric"):
            raise self._refuse_here(node, "BETWEEN SYMMETRIC is not supported", "order the ends")
        return self._made(out, node, x, lo, hi)

    def _in(self, node: Any) -> Val:
        if node.args.get("query") is not None or node.args.get("unnest") is not None:
            raise self._refuse_here(
                node,
                "a subquery in IN reads another table (or the private one before its release)",
                "list the values (x IN ('a', 'b')), or JOIN a public table registered with "
                "dp.Session(..., public={...})",
            )
        x = self.value(node.this)
        items = self._args(node)
        if all(v.literal for v in items):
            values = [v.expr for v in items if v.expr is not None]
            out = x.as_expr().is_in(values)
            if len(values) < len(items):  # NULL in the list: never equal, NULL when not found
                out = nw.when(out).then(nw.lit(True))
            return self._made(out, node, x, *items)
        acc: nw.Expr | None = None
        for v in items:
            eq = x.as_expr() == v.arg()
            acc = eq if acc is None else acc | eq
        assert acc is not None
        return self._made(acc, node, x, *items)

    def _like(self, node: Any, insensitive: bool = False) -> Val:
        x = self.value(node.this)
        pattern_node = node.expression
        escape = None
        if isinstance(pattern_node, exp.Escape):
            escape_val = self.value(pattern_node.expression)
            escape = escape_val.expr if escape_val.literal else None
            pattern_node = pattern_node.this
        pattern = self.value(pattern_node)
        if not (pattern.literal and isinstance(pattern.expr, str)):
            raise self._refuse_here(
                node, "the pattern must be a string literal", "write it in quotes"
            )
        regex = like_regex(pattern.expr, escape if isinstance(escape, str) else None)
        flags = "(?s)" + ("(?i)" if insensitive else "")
        out = x.as_expr().str.contains(flags + regex)
        if node.args.get("negate"):
            out = ~out
        return self._made(out, node, x)

    def _ilike(self, node: Any) -> Val:
        return self._like(node, insensitive=True)

    def _escape(self, node: Any) -> Val:
        raise self._refuse_here(node, "ESCAPE goes with LIKE", "write x LIKE 'a!%' ESCAPE '!'")

    # -- conditionals

    def _case(self, node: Any) -> Val:
        subject = self.value(node.this) if node.this is not None else None
        parts: list[Val] = [] if subject is None else [subject]
        default = node.args.get("default")
        acc = self.value(default) if default is not None else None
        if acc is not None:
            parts.append(acc)
        out: Any = None if acc is None else acc.as_expr()
        for branch in reversed(node.args.get("ifs") or []):
            cond_v = self.value(branch.this)
            then_v = self.value(branch.args["true"])
            parts += [cond_v, then_v]
            cond = cond_v.as_expr() if subject is None else subject.as_expr() == cond_v.arg()
            step = nw.when(cond).then(then_v.as_expr())
            out = step if out is None else step.otherwise(out)
        return self._made(out, node, *parts)

    def _if(self, node: Any) -> Val:
        cond = self.value(node.this)
        then = self.value(node.args["true"])
        out: Any = nw.when(cond.as_expr()).then(then.as_expr())
        parts = [cond, then]
        if node.args.get("false") is not None:
            other = self.value(node.args["false"])
            out = out.otherwise(other.as_expr())
            parts.append(other)
        return self._made(out, node, *parts)

    def _coalesce(self, node: Any) -> Val:
        items = [self.value(node.this), *self._args(node)]
        return self._made(nw.coalesce(*(v.as_expr() for v in items)), node, *items)

    def _nullif(self, node: Any) -> Val:
        a, b = self.value(node.this), self.value(node.expression)
        if b.literal and b.expr is None:
            return a
        same = (a.as_expr() == b.arg()).fill_null(False)
        return self._made(nw.when(~same).then(a.as_expr()), node, a, b)

    def _greatest(self, node: Any) -> Val:
        items = [self.value(node.this), *self._args(node)]
        return self._made(nw.max_horizontal(*(v.as_expr() for v in items)), node, *items)

    def _least(self, node: Any) -> Val:
        items = [self.value(node.this), *self._args(node)]
        return self._made(nw.min_horizontal(*(v.as_expr() for v in items)), node, *items)

    # -- numbers

    def _unary(self, node: Any, method: str, **kw: Any) -> Val:
        x = self.value(node.this)
        return self._made(getattr(x.as_expr(), method)(**kw), node, x)

    def _abs(self, node: Any) -> Val:
        return self._unary(node, "abs")

    def _floor(self, node: Any) -> Val:
        if node.args.get("decimals") is not None:
            raise self._refuse_here(node, "FLOOR takes one argument here", "use ROUND(x, d)")
        return self._unary(node, "floor")

    def _ceil(self, node: Any) -> Val:
        if node.args.get("decimals") is not None:
            raise self._refuse_here(node, "CEIL takes one argument here", "use ROUND(x, d)")
        return self._unary(node, "ceil")

    def _round(self, node: Any) -> Val:
        digits = node.args.get("decimals")
        d = 0 if digits is None else literal_number(digits)
        if not isinstance(d, int) or isinstance(d, bool):
            raise self._refuse_here(
                node, "ROUND's digits must be an integer literal", "ROUND(x, 2)"
            )
        return self._unary(node, "round", decimals=d)

    def _sqrt(self, node: Any) -> Val:
        return self._unary(node, "sqrt")

    def _exp(self, node: Any) -> Val:
        return self._unary(node, "exp")

    def _ln(self, node: Any) -> Val:
        return self._unary(node, "log")

    def _log(self, node: Any) -> Val:
        # LOG(x) is the base-10 logarithm (DuckDB's reading); LOG(b, x) the base-b one
        if node.expression is None:
            base: Any = 10
            x = self.value(node.this)
        else:
            base = literal_number(node.this)
            x = self.value(node.expression)
        if base is None:
            raise self._refuse_here(node, "the base must be a number literal", "LOG(2, x)")
        return self._made(x.as_expr().log(base=float(base)), node, x)

    def _sign(self, node: Any) -> Val:
        x = self.value(node.this)
        e = x.as_expr()
        out = (
            nw.when(e > 0)
            .then(nw.lit(1))
            .otherwise(nw.when(e < 0).then(nw.lit(-1)).otherwise(nw.when(e == 0).then(nw.lit(0))))
        )
        return self._made(out, node, x)

    def _anonymous(self, node: Any) -> Val:
        name = str(node.this).upper()
        args = node.expressions
        if name == "CLAMP" and len(args) == 3:
            x, lo, hi = (self.value(a) for a in args)
            if not (lo.literal and hi.literal):
                raise self._refuse_here(node, "CLAMP's bounds must be literals", "CLAMP(x, 0, 100)")
            return self._made(x.as_expr().clip(lo.expr, hi.expr), node, x)
        if name in ("PREFIX", "SUFFIX") and len(args) == 2:
            x, s = self.value(args[0]), self.value(args[1])
            method = "starts_with" if name == "PREFIX" else "ends_with"
            return self._made(getattr(x.as_expr().str, method)(s.arg()), node, x, s)
        return self._other(node)

    # -- text

    def _upper(self, node: Any) -> Val:
        x = self.value(node.this)
        return self._made(x.as_expr().str.to_uppercase(), node, x)

    def _lower(self, node: Any) -> Val:
        x = self.value(node.this)
        return self._made(x.as_expr().str.to_lowercase(), node, x)

    def _length(self, node: Any) -> Val:
        x = self.value(node.this)
        return self._made(x.as_expr().str.len_chars(), node, x)

    def _trim(self, node: Any) -> Val:
        x = self.value(node.this)
        chars = None
        if node.expression is not None:
            c = self.value(node.expression)
            if not (c.literal and isinstance(c.expr, str)):
                raise self._refuse_here(node, "the characters must be a literal", "TRIM(s, ' ')")
            chars = c.expr
        position = str(node.args.get("position") or "BOTH").upper()
        method = {"LEADING": "strip_chars_start", "TRAILING": "strip_chars_end"}.get(
            position, "strip_chars"
        )
        return self._made(getattr(x.as_expr().str, method)(chars), node, x)

    def _substring(self, node: Any) -> Val:
        x = self.value(node.this)
        start = literal_number(node.args["start"]) if node.args.get("start") else 1
        length_node = node.args.get("length")
        length = None if length_node is None else literal_number(length_node)
        ok = isinstance(start, int) and start >= 1
        ok = ok and (length_node is None or (isinstance(length, int) and length >= 0))
        if not ok:
            raise self._refuse_here(
                node,
                "the start (from 1) and length must be integer literals",
                "SUBSTRING(s, 1, 3)",
            )
        assert isinstance(start, int)
        out = x.as_expr().str.slice(start - 1, None if length is None else int(length))
        return self._made(out, node, x)

    def _left(self, node: Any) -> Val:
        x = self.value(node.this)
        n = literal_number(node.expression)
        if not (isinstance(n, int) and n >= 0):
            raise self._refuse_here(node, "the length must be an integer literal", "LEFT(s, 2)")
        return self._made(x.as_expr().str.slice(0, n), node, x)

    def _text_args(self, items: list[Val]) -> list[nw.Expr]:
        """Arguments of a concatenation as text (numbers cast, as SQL does)."""
        out = []
        for v in items:
            if v.literal:
                out.append(nw.lit(None if v.expr is None else _as_text(v.expr), nw.String()))
            else:
                out.append(v.as_expr().cast(nw.String()))
        return out

    def _dpipe(self, node: Any) -> Val:
        items = [self.value(node.this), self.value(node.expression)]
        out = nw.concat_str(self._text_args(items), ignore_nulls=False)
        return self._made(out, node, *items)

    def _concat(self, node: Any) -> Val:
        items = self._args(node)
        if not items:
            raise self._refuse_here(node, "CONCAT needs arguments", "CONCAT(a, b)")
        # DuckDB's CONCAT skips NULL arguments
        out = nw.concat_str(self._text_args(items), ignore_nulls=True)
        return self._made(out, node, *items)

    def _replace(self, node: Any) -> Val:
        x = self.value(node.this)
        old, new = self.value(node.expression), self.value(node.args["replacement"])
        if not (old.literal and new.literal):
            raise self._refuse_here(node, "the texts must be literals", "REPLACE(s, 'a', 'b')")
        out = x.as_expr().str.replace_all(old.expr, new.expr, literal=True)
        return self._made(out, node, x)

    def _startswith(self, node: Any) -> Val:
        x, s = self.value(node.this), self.value(node.expression)
        return self._made(x.as_expr().str.starts_with(s.arg()), node, x, s)

    def _endswith(self, node: Any) -> Val:
        x, s = self.value(node.this), self.value(node.expression)
        return self._made(x.as_expr().str.ends_with(s.arg()), node, x, s)

    def _contains(self, node: Any) -> Val:
        x, s = self.value(node.this), self.value(node.expression)
        if not (s.literal and isinstance(s.expr, str)):
            raise self._refuse_here(node, "the text must be a literal", "CONTAINS(s, 'ab')")
        return self._made(x.as_expr().str.contains(s.expr, literal=True), node, x)

    # -- dates

    def _field(self, node: Any, name: str) -> Val:
        x = self.value(node.this)
        return self._made(getattr(x.as_expr().dt, name)(), node, x)

    def _year(self, node: Any) -> Val:
        return self._field(node, "year")

    def _month(self, node: Any) -> Val:
        return self._field(node, "month")

    def _day(self, node: Any) -> Val:
        return self._field(node, "day")

    def _dayofmonth(self, node: Any) -> Val:
        return self._field(node, "day")

    def _hour(self, node: Any) -> Val:
        return self._field(node, "hour")

    def _minute(self, node: Any) -> Val:
        return self._field(node, "minute")

    def _second(self, node: Any) -> Val:
        return self._field(node, "second")

    def _dayofyear(self, node: Any) -> Val:
        return self._field(node, "ordinal_day")

    def _dayofweek(self, node: Any) -> Val:
        x = self.value(node.this)  # Sunday 0 ... Saturday 6, as DuckDB's DAYOFWEEK
        return self._made(x.as_expr().dt.weekday() % 7, node, x)

    def _quarter(self, node: Any) -> Val:
        x = self.value(node.this)
        return self._made((x.as_expr().dt.month() - 1) // 3 + 1, node, x)

    def _extract(self, node: Any) -> Val:
        part = str(node.this.name if hasattr(node.this, "name") else node.this).upper()
        x = self.value(node.expression)
        if part in _FIELDS:
            return self._made(getattr(x.as_expr().dt, _FIELDS[part])(), node, x)
        if part in ("DOW", "DAYOFWEEK"):
            return self._made(x.as_expr().dt.weekday() % 7, node, x)
        if part == "QUARTER":
            return self._made((x.as_expr().dt.month() - 1) // 3 + 1, node, x)
        raise self._refuse_here(
            node,
            f"EXTRACT of {part} is not supported",
            "extract YEAR, QUARTER, MONTH, DAY, DOW, DOY, HOUR, MINUTE or SECOND",
        )

    # -- casts

    def _cast(self, node: Any) -> Val:
        to = node.args["to"]
        type_name = to.this.name if hasattr(to.this, "name") else str(to.this)
        target = _TYPES.get(str(type_name).upper())
        inner = node.this
        if target is None:
            hint = (
                "cast to DOUBLE"
                if str(type_name).upper() == "DECIMAL"
                else ("cast to one of " + ", ".join(sorted(_TYPES)))
            )
            raise self._refuse_here(
                node, f"the type {sql_text(to)} is not one every engine holds alike", hint
            )
        if (
            isinstance(inner, exp.Literal)
            and inner.is_string
            and target
            in (
                nw.Date(),
                nw.Datetime("us"),
            )
        ):
            return self._lit(_temporal_literal(node, inner.this, target), node)
        x = self.value(inner)
        return self._made(x.as_expr().cast(target), node, x)

    def _trycast(self, node: Any) -> Val:
        return self._cast(node)

    # -- what is refused

    def _window(self, node: Any) -> Val:
        raise self._refuse_here(
            node,
            "a window function looks at other rows, so one person could change every other "
            "row's value",
            "aggregate with GROUP BY instead",
        )

    def _subquery(self, node: Any) -> Val:
        raise self._refuse_here(
            node,
            "a subquery inside an expression reads a table (the private one before its "
            "release, or another) row by row",
            "JOIN a public table registered with dp.Session(..., public={...}), or put "
            "row-level steps in a WITH clause",
        )

    def _exists(self, node: Any) -> Val:
        return self._subquery(node)

    def _select(self, node: Any) -> Val:
        return self._subquery(node)

    def _other(self, node: Any) -> Val:
        if isinstance(node, exp.AggFunc):
            raise self._refuse_here(
                node,
                f"an aggregate cannot stand in {self.clause}",
                "aggregates go in SELECT (and HAVING or ORDER BY, on released values)",
            )
        if isinstance(node, exp.CurrentDate | exp.CurrentTimestamp | exp.Rand) or (
            isinstance(node, exp.Anonymous) and str(node.this).upper() in ("NOW", "RANDOM")
        ):
            raise self._refuse_here(
                node,
                "its value depends on when or where the query runs",
                "write the date or number as a literal",
            )
        name = str(node.this).upper() if isinstance(node, exp.Anonymous) else node.key.upper()
        raise self._refuse_here(
            node,
            f"{name} is not a function dpkit compiles to every engine",
            f"use {SUPPORTED}",
        )


def _as_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _temporal_literal(node: Any, text: str, target: Any) -> Any:
    try:
        if isinstance(target, nw.Date):
            return datetime.date.fromisoformat(text.strip())
        return datetime.datetime.fromisoformat(text.strip())
    except ValueError:
        raise refuse(
            f"the literal {sql_text(node)}",
            "it is not an ISO date or timestamp",
            "write DATE 'YYYY-MM-DD' or TIMESTAMP 'YYYY-MM-DD HH:MM:SS'",
        ) from None


def like_regex(pattern: str, escape: str | None = None) -> str:
    """A LIKE pattern as an anchored regular expression (``%`` any text, ``_`` any one
    character, ``escape`` before either makes it literal)."""
    out = ["^"]
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if escape is not None and ch == escape and i + 1 < len(pattern):
            out.append(_escape(pattern[i + 1]))
            i += 2
            continue
        out.append(".*" if ch == "%" else "." if ch == "_" else _escape(ch))
        i += 1
    out.append("$")
    return "".join(out)


_META = set("\\.+*?()|[]{}^$")


def _escape(ch: str) -> str:
    """``ch`` literal in a regular expression every engine reads alike (Python, Rust,
    RE2 and Java escape the same meta characters; other escapes differ between them)."""
    return "\\" + ch if ch in _META else ch
