"""The immutable query builder: ``s.query().filter(...).group_by(...).agg(...)``."""

from __future__ import annotations

import dataclasses
import numbers
from typing import TYPE_CHECKING, Any

import narwhals as nw
import polars as pl

from dpkit._validate import MIN_ALPHA, check_alpha, check_int, check_positive
from dpkit.errors import ParameterError
from dpkit.samplers import as_source
from dpkit.session import _engine as ex
from dpkit.session import _keys as keys_mod
from dpkit.session import _pipeline as pipeline
from dpkit.session._auto import (
    AutoRows,
)
from dpkit.session._budget import make_budget
from dpkit.session._casts import parse_number
from dpkit.session._plan import MAX_CUT, Plan, Recipe
from dpkit.session._text import expr_text, query_text, value_text
from dpkit.session._total import total_expression, total_predicate
from dpkit.session.aggregates import Aggregate, Histogram
from dpkit.session.result import QueryRelease

if TYPE_CHECKING:
    from dpkit.session._handle import SessionHandle

__all__ = ["Query"]


def _check_bound(owner: str, name: str, value: Any) -> int:
    """A contribution bound: an int in [1, 2**31] (so products of two stay within int64)."""
    return check_int(owner, name, value, minimum=1, maximum=2**31)


def _check_filter(expr: Any, schema: Any) -> nw.Expr:
    """``expr`` as a total row condition on the public ``schema`` (see
    :mod:`dpkit.session._total`): a TypeError for what is not a narwhals expression, a
    ParameterError for what is not row-by-row, not boolean or not total; from the
    expression's form and the schema alone, before anything is spent."""
    if not isinstance(expr, nw.Expr):
        hint = ""
        if type(expr).__module__.startswith("polars"):
            hint = (
                "; Polars expressions are not accepted (they cannot run on the other engines): "
                'write the same filter with narwhals, e.g. nw.col("Age") >= 18'
            )
        raise TypeError(
            f"Query.filter: expected a narwhals expression (import narwhals as nw); got "
            f"{type(expr).__module__}.{type(expr).__name__}{hint}"
        )
    cond, read = total_predicate(expr, schema, "Query.filter")
    if read:
        return cond
    # a condition on no column (nw.lit(1) == 1) holds on every row or on none: decided now
    # from the expression alone (no data), and kept as a row-by-row condition, since engines
    # refuse a filter by a single value
    one = nw.from_native(pl.DataFrame({"__dpkit_one": [0]}))
    holds = bool(one.select(cond.alias("__dpkit_holds")).to_native()["__dpkit_holds"][0])
    anchor = nw.col(next(iter(schema)))
    return anchor.is_null() | ~anchor.is_null() if holds else anchor.is_null() & ~anchor.is_null()


def _checked(lf: nw.LazyFrame[Any]) -> nw.LazyFrame[Any]:
    """``lf`` once its schema resolves on the engine (DuckDB and Spark bind the query here,
    evaluating nothing; pandas ran it on no rows), or a ParameterError before anything is
    spent. The engine's message is not shown, nor the original error chained."""
    failed = None
    try:
        lf.collect_schema()
    except Exception as err:  # the engine's own error types
        failed = type(err).__name__
    else:
        return lf
    raise ParameterError(
        f"Query: a filter or added column cannot run on this data's schema ({failed}); the "
        "engine's message is not shown. Check the columns they name and their types"
    )


def _none_or_one(value: Any) -> bool:
    """``None`` or the number 1 (what a bound means without a privacy unit); an array or
    any other value is not (compared without NumPy's elementwise ``in``)."""
    return value is None or (
        isinstance(value, numbers.Real) and not isinstance(value, bool) and value == 1
    )


class Query:
    """A differentially private query on a :class:`~dpkit.session.Session`: immutable.

    Build with :meth:`filter`, :meth:`group_by` and :meth:`agg` (each returns a new query),
    inspect with :meth:`explain` (spends nothing), run with :meth:`release` or :meth:`measure`.

    Parameters
    ----------
    session : Session
        Made by :meth:`Session.query`, which also passes the bounding.
    max_rows_per_unit, max_groups_per_unit : int >= 1, optional
        Override the Session's bounding (privacy unit set only).

    Raises
    ------
    ParameterError
        A bound without a privacy unit, or a privacy unit without ``max_rows_per_unit``.
    TypeError
        A bound that is not an int.

    Notes
    -----
    Intervals: counts and sums use the exact noise law (Laplace: coverage at least
    ``1 - alpha``, exactly up to discreteness) or a rigorous tail bound (Gaussian);
    means, variances and deviations combine their parts' intervals by a union bound
    (conservative); quantiles get the statistics layer's value intervals, which contain
    every rank quantile (``#{x < t} <= q n <= #{x <= t}``) of each level jointly with
    probability ``>= 1 - alpha`` (conservative). None includes clipping or bounding bias;
    ``explain()`` says so.
    Nulls and NaN in an aggregated column are left out of that aggregate (after bounding,
    so they still use up a unit's rows) unless the aggregate has ``fill=``; a count of
    rows counts every row.

    Privacy
    -------
    One release is ``epsilon``-DP (Laplace noise, public keys), ``(epsilon, delta)``-DP
    (Gaussian noise under zCDP converted with Canonne, Kamath and Steinke 2020, or private keys)
    or ``rho``-zCDP, under add/remove of one privacy unit (one row, or all rows of one person)
    — relation ``"unbounded"``. Proof sketch: filtering is row-by-row and bounding keeps each
    unit's rows as a function of that unit's rows and a secret salt, so removing a unit
    changes each group statistic only through its at most ``max_rows_per_unit`` kept rows, in
    at most ``max_groups_per_unit`` groups; each noisy statistic's noise is calibrated to that
    L1 (Laplace) or L2 (Gaussian) change over all groups at once (parallel composition), the
    parts compose sequentially within the budget split, and the noise is exact discrete
    noise on exact integer statistics (see :mod:`dpkit.noise.calibration`). A quantile
    aggregate's method is decided before the spend from public facts
    (:func:`dpkit.statistics.quantile_method`) and each of its stages is charged by what it
    is (:func:`dpkit.statistics.quantile_stages`): under zCDP an exponential mechanism at
    ``epsilon`` costs ``epsilon**2 / 8`` (bounded range; Cesar and Rogers 2021), discrete
    Laplace noise ``epsilon**2 / 2`` (pure DP), each from its own part of the aggregate's rho.

    Private keys (``keys=None``): a group whose exact count of distinct units is below the
    pre-threshold ``T`` (``group_by(pre_threshold=...)``) is dropped inside the engine; any
    other is released only if its noisy count reaches a threshold ``tau``, the smallest
    integer with ``P[T + Z >= tau] <= delta_select / m`` for the count's discrete Laplace or
    discrete Gaussian noise ``Z`` (``m`` groups per unit; exact tail for the Laplace, a
    rigorous bound for the Gaussian). One unit decides whether a group is a candidate only
    for its groups of exactly ``T`` units, each released with probability at most
    ``delta_select / m``; the rest of the output is ``epsilon``-close, so the selection adds
    ``delta_select`` (proof: :func:`dpkit.session._plan.selection_threshold`; Korolova,
    Kenthapadi, Mishra and Ntoulas 2009, Laplace thresholding; Wilson et al. 2020 and
    Google's partition selection, Gaussian thresholding and the pre-threshold; Desfontaines,
    Voss, Gipson and Mandayam 2022 for the analysis).
    """

    __slots__ = (
        "_aggs",
        "_auto_rows",
        "_by",
        "_derived",
        "_filters",
        "_groups_given",
        "_keys",
        "_max_groups",
        "_max_rows",
        "_pre",
        "_s",
        "_sel_w",
        "_steps",
    )

    def __init__(
        self,
        session: SessionHandle,
        *,
        max_rows_per_unit: int | str | None = None,
        max_groups_per_unit: int | None = None,
        auto_rows: AutoRows | None = None,
    ) -> None:
        self._s = session
        self._filters: tuple[nw.Expr, ...] = ()
        #: the with_columns and filter calls as the analyst wrote them (see _text)
        self._steps: tuple[str, ...] = ()
        #: row-level columns, one group per with_columns call: ((name, total expr, type), ...)
        self._derived: tuple[tuple[tuple[str, nw.Expr, Any], ...], ...] = ()
        self._by: tuple[str, ...] = ()
        self._keys: Any = None
        self._aggs: tuple[Aggregate, ...] = ()
        self._sel_w = 1.0
        self._pre: int | None = None
        self._auto_rows: AutoRows | None = None
        self._groups_given: int | None = None
        k = session.max_rows_per_unit if max_rows_per_unit is None else max_rows_per_unit
        m = session.max_groups_per_unit if max_groups_per_unit is None else max_groups_per_unit
        if session.privacy_unit is None:
            if not (_none_or_one(max_rows_per_unit) and _none_or_one(max_groups_per_unit)):
                raise ParameterError(
                    "query: `max_rows_per_unit` and `max_groups_per_unit` apply only with a "
                    "privacy_unit column; with privacy_unit=None each row is its own unit"
                )
            k, m = 1, 1
        else:
            if k is None:
                raise ParameterError(
                    f"query: privacy_unit={session.privacy_unit!r} needs `max_rows_per_unit` "
                    "(the most rows one unit may contribute; its rows beyond that are dropped "
                    "at random), given to dp.Session(...) or to s.query(...), or "
                    "max_rows_per_unit='auto' to choose it privately"
                )
            if isinstance(k, str):
                if k != "auto":
                    raise ParameterError(
                        f"query: `max_rows_per_unit` must be an int >= 1 or 'auto'; got {k!r}"
                    )
                self._auto_rows = auto_rows or session.auto_rows
                k = self._auto_rows.max_bound  # the worst case, until a release chooses it
            k = _check_bound("query", "max_rows_per_unit", k)
            if m is not None:
                m = _check_bound("query", "max_groups_per_unit", m)
                self._groups_given = m
            m = k if m is None else m
        self._max_rows, self._max_groups = k, min(m, k)

    def _copy(self, **changes: Any) -> Query:
        new = object.__new__(Query)
        for name in Query.__slots__:
            object.__setattr__(new, name, changes.get(name, getattr(self, name)))
        return new

    # -- building ------------------------------------------------------------------------

    def filter(self, *predicates: nw.Expr) -> Query:
        """Keep rows where every predicate holds.

        Parameters
        ----------
        *predicates : narwhals.Expr
            Row-by-row conditions (``nw.col("Age") >= 18``). Polars expressions are refused:
            they would not run on the other engines. Aggregations, windows and ``over()``
            are refused: a filter looking at other rows is not stable under adding or
            removing a person.

        Returns
        -------
        Query
            A new query.

        Raises
        ------
        TypeError
            Not a narwhals expression.
        ParameterError
            Not row-by-row, not a boolean condition on the public schema (a text column
            compared with a number, say), or not total: here, from the expression and the
            schema alone, before anything is spent.

        Notes
        -----
        Every predicate is rebuilt as a *total* expression (:mod:`dpkit.session._total`):
        no value can make it fail or warn, on any engine. A cast that cannot convert a value
        gives null (``nw.col("code").cast(nw.Int64)`` is null for ``"x9"``), integer
        arithmetic that overflows, a division by zero, the log of a number <= 0 and the
        square root of a negative number give null, and a row whose condition is null is
        dropped. Operations that cannot be made total (a Python function, a date format
        other than ISO, windows) are refused with a hint. The filter runs on the data only
        in a release, after its cost is charged; ``explain()`` never evaluates it.
        """
        schema = self._schema()
        checked = tuple(_check_filter(p, schema) for p in predicates)
        step = f".filter({', '.join(expr_text(p) for p in predicates)})"
        return self._copy(_filters=self._filters + checked, _steps=(*self._steps, step))

    def with_columns(self, **columns: nw.Expr) -> Query:
        """Add columns computed from each row's own values, for :meth:`filter`,
        :meth:`group_by` and the aggregates to use by name.

        Parameters
        ----------
        **columns : narwhals.Expr
            ``name=expression``: row-by-row expressions on the table's columns and on
            columns added before (``decade=(nw.col("Age") / 10).floor() * 10``). The
            expressions of one call see the table as it was before the call.

        Returns
        -------
        Query
            A new query.

        Raises
        ------
        TypeError
            Not a narwhals expression.
        ParameterError
            A name the table (or an earlier ``with_columns``) already has, a name starting
            with dpkit's reserved prefix, an expression that reads no column, has no type,
            looks at other rows or is not total (as for :meth:`filter`); from the
            expressions and the schema alone, before anything is spent.

        Notes
        -----
        Each expression is rebuilt as a total expression (:mod:`dpkit.session._total`): a
        cast that cannot convert a value, a division by zero or an overflowing integer
        operation gives null, never an error. The columns are computed in the engine, in
        every release, before the filters and the bounding.

        Privacy
        -------
        A column computed from each row alone is a row-by-row (1-stable) transformation:
        adding or removing a unit adds or removes the same rows with their new columns, so
        every sensitivity of the query is unchanged.
        """
        return self._with_columns(columns, internal=False)

    def _with_columns(self, columns: dict[str, Any], *, internal: bool) -> Query:
        """:meth:`with_columns`; ``internal=True`` lets dpkit's own front ends (SQL) name
        their working columns with the reserved prefix, which no data column can have."""
        owner = "Query.with_columns"
        schema = self._schema()
        group: list[tuple[str, nw.Expr, Any]] = []
        for name, expr in columns.items():
            if name in schema:
                raise ParameterError(
                    f"{owner}: the table already has a column {name!r}; give the new column "
                    "another name"
                )
            if name.startswith(ex.RESERVED) and not internal:
                raise ParameterError(
                    f"{owner}: names starting with {ex.RESERVED!r} are reserved for dpkit's "
                    f"working columns; rename {name!r}"
                )
            if not isinstance(expr, nw.Expr):
                raise TypeError(
                    f"{owner}: {name}= must be a narwhals expression (import narwhals as nw); "
                    f"got {type(expr).__module__}.{type(expr).__name__}"
                )
            typed, read = total_expression(expr, schema, owner)
            if not read:
                raise ParameterError(
                    f"{owner}: {name}= reads no column; a constant is the same on every row "
                    "(use it in the aggregate's parameters instead)"
                )
            if isinstance(typed.dtype, nw.Unknown):
                raise ParameterError(
                    f"{owner}: {name}= has no type (a bare null); cast it, for example "
                    "nw.lit(None).cast(nw.Float64)"
                )
            group.append((name, typed.expr, typed.dtype))
        if not group:
            return self
        step = ", ".join(f"{name}={expr_text(expr)}" for name, expr in columns.items())
        return self._copy(
            _derived=(*self._derived, tuple(group)), _steps=(*self._steps, f".with_columns({step})")
        )

    def _schema(self) -> dict[str, Any]:
        """The public schema the query's steps see: the table's, then the added columns."""
        schema = dict(self._s.schema)
        for group in self._derived:
            schema.update((name, dtype) for name, _, dtype in group)
        return schema

    def group_by(
        self,
        *columns: str,
        keys: Any = None,
        selection_weight: float = 1.0,
        pre_threshold: int | None = None,
    ) -> Query:
        """Group by ``columns``.

        Parameters
        ----------
        *columns : str
            Key columns.
        keys : list, frame or None
            Public keys: a list of values (one column) or of tuples, or a frame holding the
            key columns; exactly those groups are released, empty ones included with their
            own noise. ``None``: groups are chosen privately (needs ``delta > 0``).
        selection_weight : float > 0, default 1.0
            Budget weight of private key selection relative to the aggregates' weights (not
            used with public keys, or when a ``dp.count()`` of one row per unit doubles as
            the selection count).
        pre_threshold : int >= 1, optional
            Private keys only: a group with fewer distinct units than this (its exact count)
            is dropped inside the engine, never reaching Python, and the key threshold is
            ``pre_threshold - 1`` higher to pay for it at the same delta. Default: chosen
            from the public parameters, an eighth of the threshold's margin over one unit
            (``explain()`` shows it); 1 turns it off.

        Returns
        -------
        Query
            A new query.

        Raises
        ------
        ParameterError
            No columns, duplicate keys, keys of the wrong width or missing key columns;
            at release (and :meth:`explain`), before anything is spent: keys that do not
            fit their column's type, or non-integral keys of an integer column.
        TypeError
            Non-str columns or keys of an unsupported type; at release (and
            :meth:`explain`): a key column of nested type (list, struct, array) or of
            untyped objects.
        """
        if not columns:
            raise ParameterError("group_by: give at least one column")
        for c in columns:
            if not isinstance(c, str):
                raise TypeError(f"group_by: columns must be str; got {c!r}")
        if len(set(columns)) != len(columns):
            raise ParameterError(f"group_by: a column appears twice; got {list(columns)!r}")
        w = check_positive("group_by", "selection_weight", selection_weight)
        pre = None
        if pre_threshold is not None:
            if keys is not None:
                raise ParameterError(
                    "group_by: `pre_threshold` applies to privately chosen keys only; with "
                    "public `keys` every given group is released"
                )
            pre = check_int("group_by", "pre_threshold", pre_threshold, minimum=1, maximum=MAX_CUT)
        kf = None if keys is None else keys_mod.public_keys(tuple(columns), keys)
        return self._copy(_by=tuple(columns), _keys=kf, _sel_w=w, _pre=pre)

    def agg(self, *aggregates: Aggregate) -> Query:
        """Add aggregates.

        Parameters
        ----------
        *aggregates : Aggregate
            ``dp.count()``, ``dp.mean("Age", bounds=(0, 100))``, ...; a histogram must be
            alone in its query (it gives one row per group and bin).

        Returns
        -------
        Query
            A new query.

        Raises
        ------
        TypeError
            Something that is not a dpkit aggregate.
        ParameterError
            A histogram beside other aggregates.
        """
        for a in aggregates:
            if not isinstance(a, Aggregate):
                raise TypeError(
                    f"agg: expected dpkit aggregates such as dp.count() or "
                    f"dp.mean('Age', bounds=(0, 100)); got {type(a).__name__}"
                )
        aggs = self._aggs + tuple(aggregates)
        if any(isinstance(a, Histogram) for a in aggs) and len(aggs) > 1:
            raise ParameterError(
                "agg: a histogram gives one row per (group, bin); release it in a query of its own"
            )
        return self._copy(_aggs=aggs)

    # -- planning ------------------------------------------------------------------------

    def _context(self) -> ex.Context:
        """The validated query, on the table without its rows where building a query
        evaluates it (pandas): every check before a spend. :meth:`_with_rows` gives the
        same query on the data, once the spend is made."""
        s = self._s
        if not self._aggs:
            raise ParameterError("query: nothing to release; add aggregates with .agg(...)")
        s.check_unchanged()
        lf = s.table(rows=False)
        schema = self._schema()
        parsed = self._parsed()
        for c in parsed:
            if c in self._by or c == s.privacy_unit:
                raise ParameterError(
                    f"query: column {c!r} is text (no type declared): it cannot be both a "
                    "number for an aggregate and a group key or the privacy unit; declare "
                    f"its type with Session(..., schema={{{c!r}: 'float64'}})"
                )
        for c in [*self._by, *([s.privacy_unit] if s.privacy_unit else [])]:
            if c not in schema:
                raise ParameterError(
                    f"query: unknown column {c!r}; the data has {', '.join(map(repr, schema))}"
                )
        keys = keys_mod.check_key_types(schema, self._by, self._keys, s.privacy_unit)
        engine = s.engine
        for c in self._by:
            s.check_unambiguous("group_by", c)
            engine.check_column("group_by", c, "key", schema[c])
        if s.privacy_unit is not None:
            unit = s.privacy_unit
            engine.check_column("Session", unit, "unit", schema[unit])
        for a in self._aggs:
            if a.column is not None and a.column in schema:
                owner = f"dp.{type(a).__name__.lower()}"
                s.check_unambiguous(owner, a.column)
                engine.check_column(owner, a.column, "value", schema[a.column])
        names: list[str] = list(self._by)
        schema = {**schema, **{c: nw.Float64() for c in parsed}}  # what the aggregates see
        for a in self._aggs:
            a.check_schema(schema)
            if isinstance(a, Histogram):  # the bin columns sit beside the keys
                assert a.column is not None
                bins = (
                    [a.column] if a.edges is None else [f"{a.column}_{e}" for e in ("from", "to")]
                )
                for col in bins:
                    if col in names:
                        raise ParameterError(
                            f"dp.histogram({a.column!r}): its bin column {col!r} would replace "
                            "a group key of that name; rename the key column first"
                        )
                    names.append(col)
            for out in a.outputs():
                for col in (out, f"{out}_low", f"{out}_high"):
                    if col in names:
                        raise ParameterError(
                            f"agg: output column {col!r} appears twice; give the aggregates "
                            "distinct name=..."
                        )
                    names.append(col)
        # the table-wide facts of table_clean hold for the table's own columns only
        added = {name for group in self._derived for name, _, _ in group}
        shared = not any(a.column in added for a in self._aggs)
        return ex.Context(
            ex.Guarded(s.engine),  # engine errors quote no data
            _checked(self._rows_of(lf)) if self._filters or added else self._rows_of(lf),
            schema,
            s.privacy_unit,
            self._max_rows,
            self._max_groups,
            self._by,
            keys,
            self._aggs,
            table=s.frame if s.known_clean is not None and shared else None,
            known_clean=s.known_clean if shared else None,
        )

    def _rows_of(self, table: nw.LazyFrame[Any]) -> nw.LazyFrame[Any]:
        """The rows of ``table`` a release reads: the filters' (total conditions: a null one
        drops the row), and with a privacy unit only rows that name one.

        A row whose unit is null (or NaN) belongs to no one the Session can bound, so it is
        left out of every release. Adding or removing such a row then changes nothing at all,
        and every sensitivity stays that of the named units (each keeps at most
        ``max_rows_per_unit`` rows): the release is the same function of the named units'
        rows whatever the unnamed rows are."""
        s = self._s
        schema = dict(s.schema)
        for group in self._derived:  # each call's columns, from the columns before it
            table = s.engine.converted(table, {n: e for n, e, _ in group}, schema)
            schema.update((n, t) for n, _, t in group)
        conds = list(self._filters)
        if s.privacy_unit is not None:
            unit = nw.col(s.privacy_unit)
            named = ~unit.is_null()
            public_float = s.schema[s.privacy_unit].is_float()
            if public_float and table.collect_schema()[s.privacy_unit].is_float():
                named = named & ~unit.is_nan()  # a pandas unit keeps its own (int) type
            conds.append(named.fill_null(False))
        rows = s.engine.where(table, conds, schema)
        parsed = self._parsed()
        if parsed:  # text with no declared type, as numbers for the aggregates (total parse)
            numbers = {c: parse_number(nw.col(c)) for c in parsed}
            rows = s.engine.converted(rows, numbers, s.schema)
        return rows

    def _parsed(self) -> list[str]:
        """The text columns with no declared type (a CSV file's; a pandas ``str`` or
        ``object`` column's) that an aggregate uses as numbers: a sum, mean, variance or
        quantile, or a histogram with numeric edges."""
        text = self._s.text
        out: list[str] = []
        for a in self._aggs:
            if a.reads_numbers and a.column in text and a.column not in out:
                out.append(a.column)
        return out

    def _with_rows(self, ctx: ex.Context) -> ex.Context:
        """``ctx`` on the data itself: a release calls it once its cost is charged (on
        pandas this converts the data and runs the filters)."""
        s = self._s
        table = s.table()
        return dataclasses.replace(ctx, frame=self._rows_of(table))

    def _plan(
        self, epsilon: Any, delta: Any, rho: Any, noise: Any, alpha: Any, required: bool = False
    ) -> Plan:
        """The plan from the release's raw parameters: ``alpha`` and the budget validated
        here, once (a release then re-plans by method: :meth:`Plan.with_rows`,
        :meth:`Plan.with_bounds`). Without ``epsilon`` or ``rho`` and not ``required``, the
        bounding and sensitivities only."""
        a = check_alpha("release", alpha, smallest=MIN_ALPHA)
        private = bool(self._by) and self._keys is None
        need = required or epsilon is not None or rho is not None
        budget = make_budget(epsilon, delta, rho, noise, private) if need else None
        recipe = Recipe(
            self._s.engine.name,
            self._s.privacy_unit,
            self._by,
            self._keys is not None,
            self._sel_w,
            self._pre,
            self._schema(),
            tuple(self._parsed()),
            self._groups_given,
            self._auto_rows,
        )
        return recipe.plan(budget, a, self._aggs, self._max_rows, self._max_groups)

    def explain(
        self,
        epsilon: float | None = None,
        delta: float = 0.0,
        alpha: float = 0.05,
        *,
        rho: float | None = None,
        noise: str | None = None,
    ) -> Plan:
        """The plan: bounding, sensitivities, mechanisms, noise, split, threshold, accuracy.

        Parameters
        ----------
        epsilon, delta, alpha, rho, noise
            As for :meth:`measure`; without ``epsilon`` or ``rho`` the plan shows the
            bounding and sensitivities only.

        Returns
        -------
        Plan
            ``print()`` it; its fields hold every figure.

        Raises
        ------
        ParameterError, TypeError
            As :meth:`measure`, for what can be checked without the data.

        Notes
        -----
        Looks only at the schema and the public parameters; spends nothing.
        """
        self._context()
        return self._plan(epsilon, delta, rho, noise, alpha)

    # -- releasing -----------------------------------------------------------------------

    def release(
        self,
        epsilon: float | None = None,
        delta: float = 0.0,
        alpha: float = 0.05,
        *,
        rho: float | None = None,
        noise: str | None = None,
        rng: Any = None,
        label: str | None = None,
    ) -> Any:
        """Release the query: the frame of :meth:`measure`.

        Parameters
        ----------
        epsilon, delta, alpha, rho, noise, rng, label
            As for :meth:`measure`.

        Returns
        -------
        DataFrame
            Key columns (sorted), then ``<name>``, ``<name>_low``, ``<name>_high`` per value:
            pandas for pandas data, Polars otherwise.

        Raises
        ------
        ParameterError, TypeError, BudgetExceededError
            As for :meth:`measure`.
        """
        return self.measure(epsilon, delta, alpha, rho=rho, noise=noise, rng=rng, label=label).frame

    def measure(
        self,
        epsilon: float | None = None,
        delta: float = 0.0,
        alpha: float = 0.05,
        *,
        rho: float | None = None,
        noise: str | None = None,
        rng: Any = None,
        label: str | None = None,
    ) -> QueryRelease:
        """Release the query and return the frame with its metadata (:class:`QueryRelease`).

        Parameters
        ----------
        epsilon : float > 0
            Required unless ``rho`` is given.
        delta : float in [0, 1), default 0
            ``0``: pure DP, Laplace-type noise, public keys only. ``> 0``: Gaussian-type noise
            (or ``noise="laplace"``) and private keys allowed.
        alpha : float in (0, 1), default 0.05
            Intervals are at level ``1 - alpha``.
        rho : float > 0, optional
            A zCDP release (Gaussian noise) instead of ``epsilon``.
        noise : {"laplace", "gaussian"}, optional
            Override the noise family chosen from ``delta``.
        rng : None, int or BitSource
            ``None`` (default) uses the Session's source (secure unless seeded).
        label : str, optional
            The accountant entry's label.

        Returns
        -------
        QueryRelease
            The frame, the cost, the relation, the unit, the threshold and a ``Release`` per
            noisy statistic.

        Raises
        ------
        ParameterError, TypeError
            Bad parameters or data (nothing spent).
        BudgetExceededError
            The release would overspend: nothing is spent, nothing is drawn.

        Notes
        -----
        The release's record (:attr:`QueryRelease.record`: what it released and how) is kept
        by the Session for :meth:`Session.report` and beside its spend in the accountant's
        ledger.
        """
        return self._measure(epsilon, delta, alpha, rho, noise, rng, label)

    def _measure(
        self,
        epsilon: Any,
        delta: Any,
        alpha: Any,
        rho: Any,
        noise: Any,
        rng: Any,
        label: Any,
        finish: Any = None,
    ) -> QueryRelease:
        """:meth:`measure`, through the release's steps (``session/_pipeline.py``);
        ``finish`` (SQL's) turns the release into what the caller returns and says how the
        query was written: ``finish(rel) -> (rel, language, text)``."""
        ctx, plan = self._prepare(epsilon, delta, alpha, rho, noise)
        return pipeline.measure(
            self._s,
            ctx,
            plan,
            source=lambda: self._source(rng),
            label=label,
            default_label=self._label(),
            on_data=self._with_rows,
            text=self.text,
            finish=finish,
        )

    def text(self) -> str:
        """The query as the builder calls that make it, one per line (for reports).

        Returns
        -------
        str
            ``s.query(...)``, then each ``with_columns`` and ``filter`` as written, the
            ``group_by`` and the ``agg``: public facts only (the analyst's own inputs).
        """
        s = self._s
        head = "s.query()"
        if s.privacy_unit is not None:
            rows: Any = "auto" if self._auto_rows is not None else self._max_rows
            opts = [f"max_rows_per_unit={value_text(rows)}"]
            if self._auto_rows is None:
                opts.append(f"max_groups_per_unit={self._max_groups}")
            head = f"s.query({', '.join(opts)})"
        options = []
        if self._by and self._keys is None:
            if self._sel_w != 1.0:
                options.append(f"selection_weight={value_text(self._sel_w)}")
            if self._pre is not None:
                options.append(f"pre_threshold={self._pre}")
        return query_text(head, self._steps, self._by, self._keys, self._aggs, options)

    def _prepare(
        self, epsilon: Any, delta: Any, alpha: Any, rho: Any, noise: Any
    ) -> tuple[ex.Context, Plan]:
        """Every check of a release that comes before spending: the query, the plan, the
        schema (read again where it can change). Shared with the audit's sampler. Nothing
        here reads a value of the data: an empty table and rows without a unit release like
        any other (see :meth:`_rows_of`)."""
        ctx = self._context()
        plan = self._plan(epsilon, delta, rho, noise, alpha, required=True)
        pipeline.check_before_spend(ctx, plan)
        return ctx, plan

    def _source(self, rng: Any) -> Any:
        """``rng``, or the Session's own source when it is ``None``."""
        return self._s.source if rng is None else as_source(rng)

    def _label(self) -> str:
        names = ", ".join(a.name for a in self._aggs)
        by = f" by {', '.join(self._by)}" if self._by else ""
        return f"Session query: {names}{by}"

    def __repr__(self) -> str:
        aggs = ", ".join(a.name for a in self._aggs)
        return f"Query(by={list(self._by)}, aggregates=[{aggs}], filters={len(self._filters)})"
