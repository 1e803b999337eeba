"""The engine adapter interface and the registry that picks one for a data object."""

from __future__ import annotations

from typing import Any, Literal

import narwhals as nw
import polars as pl

from dpkit.errors import ParameterError
from dpkit.session._keys import public_frame

__all__ = ["Engine", "RankMethod", "engine_for", "register", "supported"]

RankMethod = Literal["ordinal", "dense"]


class Engine:
    """One engine's adapter. Subclasses override what differs; see the package docstring.

    Attributes
    ----------
    name : str
        Short name shown in ``explain()`` ("polars", "duckdb", ...).
    accepts : str
        What data this adapter takes, for the "unsupported data type" error.
    prunes_columns : bool
        Whether the engine's optimiser drops the columns a query never reads (then the
        Session does not project them away itself where nothing but aggregations follow).
    """

    name = "engine"
    accepts = ""
    prunes_columns = False

    def matches(self, data: Any) -> bool:  # pragma: no cover - abstract
        """Whether ``data`` belongs to this engine."""
        raise NotImplementedError

    def to_lazy(self, data: Any) -> nw.LazyFrame[Any]:  # pragma: no cover - abstract
        """The data as a lazy narwhals frame on its own engine (no rows copied)."""
        raise NotImplementedError

    def with_rank(
        self,
        frame: nw.LazyFrame[Any],
        *,
        partition: str,
        hash_columns: list[str],
        tie_columns: list[str],
        salt: tuple[int, ...],
        method: RankMethod,
        name: str,
    ) -> nw.LazyFrame[Any]:  # pragma: no cover - abstract
        """Add column ``name``: the rank (from 1) within ``partition`` of the row's position in
        the order by (salted hash of ``hash_columns``, then ``tie_columns``).

        ``method="ordinal"`` gives distinct ranks (ties, which only identical rows can have
        when ``tie_columns`` holds every column used, are broken arbitrarily);
        ``method="dense"`` gives equal rows equal ranks and consecutive ranks otherwise.
        """
        raise NotImplementedError

    def public_schema(self, frame: nw.LazyFrame[Any]) -> dict[str, Any]:
        """The types queries on ``frame`` (:meth:`to_lazy`'s) are checked against, which are
        public: by default the data's own declared types (a Polars, Arrow, DuckDB or Spark
        table declares its schema). An adapter whose types are inferred from the values
        (pandas) derives them by a rule that no single record can flip instead, and
        :meth:`with_types` then holds the columns in those types."""
        return dict(frame.collect_schema())

    def with_types(self, frame: nw.LazyFrame[Any], schema: dict[str, Any]) -> nw.LazyFrame[Any]:
        """``frame`` with its columns in the types of ``schema`` (:meth:`public_schema`'s),
        converted totally (nothing fails or warns on a value). By default it already is.
        An eager engine converts the data here: it is called on the rows only once the
        release's cost is charged."""
        return frame

    def where(
        self, frame: nw.LazyFrame[Any], conditions: list[nw.Expr], schema: dict[str, Any]
    ) -> nw.LazyFrame[Any]:
        """``frame`` restricted to the rows where every condition holds: total boolean
        expressions (:mod:`dpkit.session._total`) built for the types of ``schema``, null
        counting as false. By default narwhals' filter on the engine."""
        return frame.filter(*conditions) if conditions else frame

    def converted(
        self, frame: nw.LazyFrame[Any], columns: dict[str, nw.Expr], schema: dict[str, Any]
    ) -> nw.LazyFrame[Any]:
        """``frame`` with each column of ``columns`` replaced by the value of a total
        expression built for the types of ``schema`` (the declared types' casts). By
        default narwhals' ``with_columns`` on the engine."""
        exprs = [e.alias(c) for c, e in columns.items()]
        return frame.with_columns(*exprs) if exprs else frame

    def without_rows(self, frame: nw.LazyFrame[Any]) -> nw.LazyFrame[Any]:
        """What the checks before a spend run a query on: ``frame`` itself on a lazy engine
        (building a query evaluates nothing), the same columns with no rows on an eager
        one (pandas evaluates every step at once: on no rows, nothing can depend on a
        value)."""
        return frame

    def read_as_text(self, data: Any, frame: nw.LazyFrame[Any]) -> frozenset[str]:
        """The columns read as text only because the source declares no type for them (a
        CSV file's): numeric aggregates parse them totally (a value that is not a plain
        number counts as missing). None by default."""
        return frozenset()

    def changes(self, data: Any) -> bool:
        """Whether ``data``'s schema can change after the Session is made (a file rewritten,
        a pandas column reassigned): the Session then reads it again (:meth:`to_lazy`,
        :meth:`public_schema`; the schema only, no row) before every spend, and refuses a
        release on a changed schema before anything is spent. False unless an adapter knows."""
        return False

    def snapshot(self, data: Any) -> bool:
        """Whether :meth:`to_lazy` of ``data`` is a snapshot that no later change to the
        caller's objects, files or tables can reach (facts read from it once, such as a
        column's range, then hold for every later release). False unless an adapter knows."""
        return False

    def check_column(self, owner: str, name: str, role: str, dtype: Any = None) -> None:
        """Refuse (ParameterError, before anything is spent) a column this engine cannot
        use as ``role`` ("key", "unit" or "value") under its name or narwhals ``dtype``. By
        default: ``"*"`` and names of the form ``^...$``, which narwhals and Polars read as
        patterns selecting other columns."""
        if name == "":
            raise ParameterError(
                f"{owner}: a column with an empty name cannot be used by a query; rename it"
            )
        if name == "*" or (len(name) > 1 and name.startswith("^") and name.endswith("$")):
            raise ParameterError(
                f"{owner}: the column name {name!r} reads as a pattern of columns in "
                "expressions; rename the column"
            )

    def check_declared(self, owner: str, name: str, dtype: Any) -> None:
        """Refuse (ParameterError, before anything is spent) a type ``schema=`` declares for
        column ``name`` that this engine cannot hold. None by default."""

    def ambiguous_columns(self, frame: nw.LazyFrame[Any]) -> frozenset[str]:
        """Column names of ``frame`` that a query cannot refer to unambiguously (the Session
        refuses to use them, before anything is spent). By default the names the table
        holds more than once (a pandas frame can)."""
        names = list(frame.columns)
        return frozenset(c for c in names if names.count(c) > 1)

    def with_bins(
        self, frame: nw.LazyFrame[Any], column: str, edges: tuple[float, ...], name: str
    ) -> nw.LazyFrame[Any]:
        """Add column ``name`` (an integer): the bin of ``column`` (as Float64) among the
        sorted histogram ``edges``, that is the number of edges other than the first and the
        last at or below the value, on rows already inside ``[edges[0], edges[-1]]`` (no
        null, no NaN). By default a binary search written as nested ``when/then`` (depth
        ``log2`` of the bins; engines that evaluate branches lazily, such as DuckDB, do
        ``log2`` comparisons per row); adapters with a native search override it."""
        x = nw.col(column).cast(nw.Float64)
        return frame.with_columns(_search(x, edges[1:-1], 0, len(edges) - 2).alias(name))

    def with_categories(
        self, frame: nw.LazyFrame[Any], column: str, categories: tuple[Any, ...], name: str
    ) -> nw.LazyFrame[Any]:
        """Add column ``name`` (an integer): the index in ``categories`` (distinct; ``None``
        stands for null) of each row's value, null for a value that is none of them. By
        default a balanced sum of ``(column == c) * i`` indicators (depth ``log2`` of the
        categories, which engines plan much faster than a chain) on the rows whose value
        ``is_in`` the categories; adapters with a native lookup override it."""
        col = nw.col(column)
        named = [c for c in categories if c is not None]
        terms = [
            (col == c).cast(nw.Int64) * i for i, c in enumerate(categories) if i and c is not None
        ]
        position = balanced_sum(terms)
        inside = col.is_in(named) if named else nw.lit(False)
        if None in categories:
            null_at = nw.lit(categories.index(None), nw.Int64)
            position = nw.when(col.is_null()).then(null_at).otherwise(position)
            inside = inside | col.is_null()
        return frame.with_columns(nw.when(inside).then(position).alias(name))

    def aggregate(
        self, frame: nw.LazyFrame[Any], by: list[str], aggs: list[tuple[str, str, str | None]]
    ) -> nw.LazyFrame[Any]:
        """One row per group of ``by`` (one row in all without ``by``, even for no rows), with
        a column per ``(name, op, column)`` of ``aggs``: ``op`` ``"len"`` (rows), ``"count"``
        (non-null values of ``column``), ``"sum"`` (of ``column``; 0 or null for no value)
        or ``"n_unique"`` (distinct values of ``column``, null counting as one). Null keys
        form their own group. By default through narwhals; an adapter may build it natively
        when that is cheaper to plan (Spark)."""
        exprs = [_AGGREGATIONS[op](column).alias(name) for name, op, column in aggs]
        return frame.group_by(*by).agg(*exprs) if by else frame.select(*exprs)

    def collect(self, frame: nw.LazyFrame[Any]) -> pl.DataFrame:
        """Run an aggregated lazy frame and return it as a Polars DataFrame."""
        return frame.collect(backend="polars").to_native()

    def output(
        self,
        frame: pl.DataFrame,
        like: nw.LazyFrame[Any] | None = None,
        keys: tuple[str, ...] = (),
    ) -> Any:
        """The released frame in the caller's family (Polars unless overridden); ``like`` is
        the queried data (an engine such as Spark builds its result in the data's session),
        ``keys`` the group-key columns (which, unlike the statistics, can hold nulls). The
        output's types follow from ``frame``'s (the schema and the query), never from its
        values."""
        return frame

    def released(self, frame: Any) -> pl.DataFrame:
        """A frame :meth:`output` returned, back as Polars: its values are public, but an
        engine that would run a query to read it (Spark) returns the Polars frame it was
        built from, so that only aggregations ever reach the driver."""
        return public_frame(frame, f"released: not a frame; got {type(frame).__name__}")


#: narwhals' aggregation for each ``op`` of :meth:`Engine.aggregate`
_AGGREGATIONS: dict[str, Any] = {
    "len": lambda column: nw.len(),
    "count": lambda column: nw.col(column).count(),
    "sum": lambda column: nw.col(column).sum(),
    "n_unique": lambda column: nw.col(column).n_unique(),
}


def balanced_sum(terms: list[nw.Expr]) -> nw.Expr:
    """The sum of Int64 ``terms`` (0 for none) as a balanced tree of additions: depth
    ``log2(len)`` rather than ``len``, which engines plan in time linear in the number of
    terms (a chain of 3,000 additions took Polars about 35 s, the tree 0.7 s)."""
    if not terms:
        return nw.lit(0, nw.Int64)
    while len(terms) > 1:
        pairs = [terms[i] + terms[i + 1] for i in range(0, len(terms) - 1, 2)]
        terms = pairs + terms[len(terms) - len(terms) % 2 :]
    return terms[0]


def _search(x: nw.Expr, inner: tuple[float, ...], lo: int, hi: int) -> nw.Expr:
    """The number of ``inner`` edges at or below ``x``, given that ``inner[:lo]`` are and
    ``inner[hi:]`` are not: a balanced tree of ``when/then`` on the middle edge."""
    if hi == lo:
        return nw.lit(lo, nw.Int64)
    mid = (lo + hi) // 2
    return (
        nw.when(x >= inner[mid])
        .then(_search(x, inner, mid + 1, hi))
        .otherwise(_search(x, inner, lo, mid))
    )


_REGISTRY: list[Engine] = []


def register(engine: Engine) -> None:
    """Add an adapter; adapters registered later are tried first."""
    _REGISTRY.insert(0, engine)


def supported() -> str:
    """The accepted data types, for error messages."""
    return ", ".join(e.accepts for e in reversed(_REGISTRY))


def engine_for(data: Any) -> Engine:
    """The adapter for ``data``; a TypeError naming what is accepted otherwise."""
    for engine in _REGISTRY:
        if engine.matches(data):
            return engine
    raise TypeError(
        f"Session: `data` must be one of: {supported()}; got {type(data).__module__}."
        f"{type(data).__name__}"
    )
