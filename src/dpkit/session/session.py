"""The :class:`Session`: differentially private queries on a DataFrame, on its own engine."""

from __future__ import annotations

import copy
import dataclasses
import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import narwhals as nw

from dpkit.accounting import ZCDP, Accountant, ApproxDP, PrivacyLoss, PureDP, Spend
from dpkit.accounting.accountant import LabelledAccountant
from dpkit.errors import LedgerError, ParameterError
from dpkit.samplers import as_source
from dpkit.session import aggregates as agg
from dpkit.session._auto import auto_rows
from dpkit.session._engine import RESERVED, Guarded
from dpkit.session._handle import SessionHandle
from dpkit.session._schema import declared_casts, declared_types
from dpkit.session.engines import engine_for
from dpkit.session.query import Query
from dpkit.session.result import QueryRelease

__all__ = ["Session"]


class Session:
    """Differentially private queries on one table, with one privacy budget.

    Parameters
    ----------
    data
        A Polars DataFrame or LazyFrame, a pandas DataFrame, a PyArrow Table, a DuckDB
        relation, a PySpark DataFrame, or a path to a CSV or Parquet file (scanned lazily).
        All row-level work runs on that engine through narwhals; only aggregates come back to
        Python. Releases come back as pandas for pandas data, as a Spark DataFrame for Spark
        data, as Polars otherwise.
    privacy_unit : str, optional
        ``None`` (default) protects each row (add or remove one row). A column name protects
        each person: all rows with the same value are added or removed together.
    budget : PureDP, ApproxDP or ZCDP, optional
        Makes a fresh :class:`~dpkit.Accountant` with this total.
    accountant : Accountant, optional
        An existing accountant (with its ledger) instead of ``budget``.
    rng : None, int or BitSource
        ``None`` (default): secure randomness. An int seed makes releases reproducible
        (``secure=False``; tests and demos only).
    max_rows_per_unit : int >= 1 or "auto", optional
        With a privacy unit, the default number of rows one unit keeps (at random, freshly for
        each release); required there, by the Session or by each query. ``"auto"``: each
        release chooses it privately, as a DP ``max_rows_level``-quantile of the number of
        rows per unit (Amin, Kulesza, Munoz Medina and Vassilvitskii 2019; the engine counts
        the rows per unit and hands Python a histogram of those counts), with
        ``max_rows_share`` of the release's budget; ``explain()`` shows that cost and the
        release's plan the chosen bound (``QueryRelease.contribution``).
    max_rows_share : float in (0, 1), default 0.1
        With ``max_rows_per_unit="auto"``: the share of each release's budget spent on it.
    max_rows_level : float in (0, 1), default 0.95
        With ``max_rows_per_unit="auto"``: the quantile of rows per unit to keep.
    max_rows_cap : int, default 1000
        With ``max_rows_per_unit="auto"``: a public cap on the bound (units with more rows
        count as that many in the search).
    max_groups_per_unit : int >= 1, optional
        With a privacy unit, the default number of groups one unit appears in (default: no
        more than ``max_rows_per_unit``).
    schema : mapping of column name to type, optional
        Declared types (narwhals or Polars types, or names such as ``"int64"``,
        ``"float64"``, ``"string"``, ``"bool"``, ``"date"``, ``"datetime"``) for some or all
        columns. The data's values are converted in every release with the total cast: a
        value that does not convert is null. Needed where the data declares no type a query
        relies on: a CSV file's columns are text, a pandas column of NumPy integers is
        Float64 (see *Public* below).
    name : str, default "data"
        The table's name in SQL queries (``FROM data``; see :meth:`sql`).
    public : mapping of table name to frame, optional
        Public tables SQL queries may join to the private rows by one equality on a key
        (``JOIN regions r ON data.region = r.id``), whose columns can then be group keys
        with public values. Read into Polars here: their rows are public.

    Raises
    ------
    TypeError
        ``data`` of an unsupported type (the message lists the accepted ones), or a wrong
        ``budget`` / ``accountant`` / ``schema`` type.
    ParameterError
        Neither or both of ``budget`` and ``accountant``; an unknown ``privacy_unit`` column;
        a file that cannot be read (an empty CSV, a corrupt Parquet file), a pandas frame
        with duplicate column names; a ``schema`` naming an unknown column or a type the
        column cannot be converted to totally.
    FileNotFoundError
        A path to no file.

    Privacy
    -------
    Every release spends its cost through the accountant before any noise is drawn (one
    labelled entry, relation "unbounded": add/remove one row or one unit); a release that
    would overspend raises :class:`~dpkit.BudgetExceededError` and draws nothing. See
    :class:`~dpkit.session.Query` for the guarantee of one release.

    Whether a release succeeds, its warnings, its output's columns and types and its ledger
    entry depend only on what is public, never on one record (an exception carries no
    noise):

    * **Public**: the schema (:attr:`schema`: column names and types), the query (filters,
      keys, aggregates, bounds, bins, levels), the privacy parameters and ``rng``; nothing
      else. The schema is the data's declared one (Polars, PyArrow, DuckDB, Spark, Parquet)
      or ``schema=``; where an engine infers types from the values, a rule no record can
      flip: a CSV file's columns are text (numeric aggregates parse it; text that is not a
      plain number counts as missing); pandas' NumPy integers and ``float64`` are Float64
      (a null turns one into the other), ``object`` and ``str`` columns are text (numbers
      in an ``object`` column read as their text, other objects as null), and types that
      hold their own nulls (``Int64``, ``boolean``, ``string``, datetimes, categoricals)
      are kept. A file or pandas frame is read again (its schema only) before every spend:
      a changed schema is refused before anything is spent.
    * **Never read before the spend**: the rows. A release evaluates the data only once its
      cost is charged; ``explain()`` and the checks before the spend look at the schema
      (on pandas, an empty frame of it), never at a value.
    * **Total row operations**: filters run as total expressions (a cast that cannot
      convert, an overflowing or dividing-by-zero arithmetic, the log of a number <= 0
      give null; see :meth:`Query.filter`); what cannot be made total is refused before the
      spend, from its form alone.
    * **Any table**: an empty table releases noise alone; rows whose privacy unit is null
      (or NaN) are left out of every release, so adding or removing them changes nothing;
      sums are exact at any size (a group too large for exact float64 sums is summed by
      digits).

    A Polars LazyFrame, DuckDB relation or Spark DataFrame is a plan the Session runs as
    given: a step of it that fails on a value (a strict cast the caller wrote into the plan)
    fails the release after its spend, naming the error's type only. Build such plans from
    total operations, or give the data with ``schema=``.

    Examples
    --------
    >>> import polars as pl
    >>> import dpkit as dp
    >>> df = pl.DataFrame({"Sex": ["F", "M", "F", "M"] * 50, "Age": [30, 40, 50, 60] * 50})
    >>> s = dp.Session(df, budget=dp.PureDP(1.0), rng=7)
    >>> s.query().group_by("Sex", keys=["F", "M"]).agg(dp.count()).release(epsilon=0.5)
    shape: (2, 4)
    ┌─────┬───────┬───────────┬────────────┐
    │ Sex ┆ count ┆ count_low ┆ count_high │
    │ --- ┆ ---   ┆ ---       ┆ ---        │
    │ str ┆ i64   ┆ i64       ┆ i64        │
    ╞═════╪═══════╪═══════════╪════════════╡
    │ F   ┆ 98    ┆ 92        ┆ 104        │
    │ M   ┆ 94    ┆ 88        ┆ 100        │
    └─────┴───────┴───────────┴────────────┘
    """

    def __init__(
        self,
        data: Any,
        *,
        privacy_unit: str | None = None,
        budget: PrivacyLoss | None = None,
        accountant: Accountant | LabelledAccountant | None = None,
        rng: Any = None,
        max_rows_per_unit: int | str | None = None,
        max_groups_per_unit: int | None = None,
        max_rows_share: float = 0.1,
        max_rows_level: float = 0.95,
        max_rows_cap: int = 1000,
        schema: Any = None,
        name: str = "data",
        public: Any = None,
    ) -> None:
        from dpkit.session._sql._public import check_name, check_public

        self._sql_name = check_name(name)
        self._sql_public = check_public(public, self._sql_name)
        self._auto_rows = auto_rows("Session", max_rows_share, max_rows_level, max_rows_cap)
        self._engine = engine_for(data)
        if (budget is None) == (accountant is None):
            raise ParameterError(
                "Session: give exactly one of `budget` (for example budget=dp.PureDP(1.0), a "
                "fresh accountant) or `accountant=` (an existing dp.Accountant); got "
                + ("neither" if budget is None else "both")
            )
        if budget is not None:
            if not isinstance(budget, PureDP | ApproxDP | ZCDP):
                raise TypeError(
                    "Session: `budget` must be a PureDP, ApproxDP or ZCDP value, for example "
                    f"dp.PureDP(1.0); got {type(budget).__name__}"
                )
            accountant = Accountant(budget)
        elif not isinstance(accountant, Accountant | LabelledAccountant):
            raise TypeError(
                f"Session: `accountant` must be a dpkit Accountant; got {type(accountant).__name__}"
            )
        self.accountant = accountant
        #: the record of each release, oldest first (see records)
        self._records: list[dict[str, Any]] = []
        self._source = as_source(rng)
        self._data = data
        self._base = self._engine.to_lazy(data)
        #: the types the data's own rule gives (see Engine.public_schema), and the public
        #: schema every query is checked against: those, with the declared ones in place
        self._natural = self._engine.public_schema(self._base)
        self._declared = declared_types("Session", schema, self._natural)
        for c, t in self._declared.items():  # applied through the column's name
            self._engine.check_column("Session (schema=)", c, "value", self._natural[c])
            self._engine.check_declared("Session", c, t)
        self._schema = {**self._natural, **self._declared}
        #: text columns of a source that declares no types (CSV): parsed by numeric aggregates
        self._text = self._engine.read_as_text(data, self._base) - set(self._declared)
        #: names a query cannot refer to unambiguously (duplicates; on Spark, case variants)
        self._ambiguous = Guarded(self._engine).ambiguous_columns(self._base)
        reserved = [c for c in self._schema if c.startswith(RESERVED)]
        if reserved:
            raise ParameterError(
                f"Session: column names starting with {RESERVED!r} are reserved for dpkit's "
                f"own working columns; rename {', '.join(map(repr, reserved[:3]))}"
            )
        if privacy_unit is not None:
            if not isinstance(privacy_unit, str):
                raise TypeError(
                    f"Session: `privacy_unit` must be a column name; got {privacy_unit!r}"
                )
            if privacy_unit not in self._schema:
                raise ParameterError(
                    f"Session: unknown `privacy_unit` column {privacy_unit!r}; the data has "
                    f"{', '.join(map(repr, self._schema))}"
                )
            self._check_unambiguous("Session", privacy_unit)
        elif max_rows_per_unit is not None or max_groups_per_unit is not None:
            raise ParameterError(
                "Session: `max_rows_per_unit` and `max_groups_per_unit` need a privacy_unit "
                "column; with privacy_unit=None each row is its own unit"
            )
        self.privacy_unit = privacy_unit
        self.max_rows_per_unit = max_rows_per_unit
        self.max_groups_per_unit = max_groups_per_unit
        # column -> its (min, max) if it has no null and no NaN, else None (see table_clean);
        # kept across releases only for a snapshot of the data
        self._known_clean: dict[str, tuple[Any, Any] | None] | None = (
            {} if self._engine.snapshot(data) else None
        )
        self._frame = self._base if self._engine.changes(data) else self._table()

    @property
    def engine(self) -> str:
        """The engine the queries run on."""
        return self._engine.name

    @property
    def columns(self) -> list[str]:
        """The table's column names (the schema is public)."""
        return list(self._schema)

    @property
    def schema(self) -> dict[str, Any]:
        """The public schema every query is checked against: column name -> narwhals type
        (the data's declared types, the types the engine's rule gives for pandas and CSV
        input, and the ``schema=`` declarations)."""
        return dict(self._schema)

    def _table(self, *, rows: bool = True) -> nw.LazyFrame[Any]:
        """The working table: the data with every column in its public type (declared types
        applied by the total cast). ``rows=False``: the same with no rows on an eager engine
        (pandas), where building a query evaluates it; what checks before a spend run on.
        On pandas ``rows=True`` converts the data: a release calls it after its spend."""
        lf = self._base if rows else self._engine.without_rows(self._base)
        # the privacy unit keeps its own values (it is only grouped and hashed, never
        # released): a pandas int64 unit as Float64 would merge ids beyond 2**53
        typed = {c: t for c, t in self._schema.items() if c != self.privacy_unit}
        lf = self._engine.with_types(lf, typed)
        if not self._declared:
            return lf
        held = lf.collect_schema()  # a declared column the engine already holds is done
        todo = {c: t for c, t in self._declared.items() if held[c] != t}
        casts = declared_casts(self._natural, todo)
        return self._engine.converted(lf, casts, self._natural) if casts else lf

    def _check_unchanged(self) -> None:
        """Before a spend, on data whose schema can change (a file, a pandas frame): read
        the schema again (no row) and refuse, before anything is spent, a release on a
        changed one (a file rewritten with other columns or types, a pandas column
        reassigned): the query was checked against the schema the Session was made with."""
        if not self._engine.changes(self._data):
            return
        try:
            base = self._engine.to_lazy(self._data)
            natural = self._engine.public_schema(base)
        except (FileNotFoundError, ParameterError):
            natural = None
        if natural is None or list(natural.items()) != list(self._natural.items()):
            now = "cannot be read" if natural is None else "has other columns or types"
            raise ParameterError(
                f"Session: the data's schema changed since the Session was made (its "
                f"{self._engine.name} data now {now}); nothing was spent. Make a new Session "
                "on the data as it is now"
            )
        self._base = base

    def query(
        self,
        *,
        max_rows_per_unit: int | str | None = None,
        max_groups_per_unit: int | None = None,
        max_rows_share: float | None = None,
        max_rows_level: float | None = None,
        max_rows_cap: int | None = None,
    ) -> Query:
        """A new, empty query on this table.

        Parameters
        ----------
        max_rows_per_unit : int >= 1 or "auto", optional
            Override the Session's bounding for this query (privacy unit set only);
            ``"auto"`` chooses it privately in each release (see :class:`Session`).
        max_groups_per_unit : int >= 1, optional
            Override the Session's bounding for this query (privacy unit set only).
        max_rows_share, max_rows_level, max_rows_cap : optional
            Override the Session's settings of ``max_rows_per_unit="auto"``.

        Returns
        -------
        Query
            Build it with ``filter``, ``group_by`` and ``agg``; nothing runs until ``release``.

        Raises
        ------
        ParameterError
            A bound without a privacy unit, or a privacy unit without ``max_rows_per_unit``.
        TypeError
            A bound that is not an int.
        """
        base = self._auto_rows
        settings = auto_rows(
            "query",
            base.share if max_rows_share is None else max_rows_share,
            base.level if max_rows_level is None else max_rows_level,
            base.max_bound if max_rows_cap is None else max_rows_cap,
        )
        return Query(
            self._handle(),
            max_rows_per_unit=max_rows_per_unit,
            max_groups_per_unit=max_groups_per_unit,
            auto_rows=settings,
        )

    def _handle(self) -> SessionHandle:
        """What a query needs from this Session (:mod:`dpkit.session._handle`)."""
        return SessionHandle(
            engine=self._engine,
            privacy_unit=self.privacy_unit,
            schema=self._schema,
            text=frozenset(self._text),
            source=self._source,
            auto_rows=self._auto_rows,
            max_rows_per_unit=self.max_rows_per_unit,
            max_groups_per_unit=self.max_groups_per_unit,
            frame=self._frame,
            known_clean=self._known_clean,
            table=self._table,
            check_unchanged=self._check_unchanged,
            check_unambiguous=self._check_unambiguous,
            spend=self._spend,
            recorded=self._recorded,
        )

    def _check_unambiguous(self, owner: str, name: str) -> None:
        """Refuse a column the engine cannot tell apart from another (before any spend)."""
        if name in self._ambiguous:
            raise ParameterError(
                f"{owner}: the column name {name!r} is ambiguous on this {self._engine.name} "
                "table (it appears twice, or on Spark differs from another only by case); "
                "rename or drop the other column first"
            )

    def _spend(self, cost: PrivacyLoss, label: str, events: tuple[Any, ...] = ()) -> Spend:
        # add/remove one row or one unit: the relation every Session guarantee holds under
        return self.accountant.spend(cost, label=label, relation="unbounded", events=events)

    def _recorded(
        self, rel: QueryRelease, spend: Spend, language: str, text: str, source: Any
    ) -> QueryRelease:
        """``rel`` with its record (:mod:`dpkit.session._record`), which the Session keeps
        and the accountant stores beside the spend. A ledger that cannot keep it (a disk
        error) loses the record, not the release: a warning says so."""
        from dpkit.session._record import build

        record = build(
            rel,
            accountant=self.accountant,
            schema=self._schema,
            declared=self._declared,
            public_tables=self._sql_public,
            engine=self._engine,
            spend=spend,
            language=language,
            text=text,
            secure=source.secure,
        )
        try:
            self.accountant.attach_record(spend.index, record)
        except LedgerError as exc:
            warnings.warn(
                f"Session: the release was made, but the ledger could not keep its record "
                f"({exc}); Session.report still has it",
                RuntimeWarning,
                stacklevel=4,
            )
        self._records.append(record)
        return dataclasses.replace(rel, record=copy.deepcopy(record))

    @property
    def records(self) -> tuple[dict[str, Any], ...]:
        """The record of every release this Session made, oldest first (copies).

        Each is plain JSON data (:mod:`dpkit.session._record`): when, the query as written,
        the plan's facts, the released table, the privacy cost, its events and relation, the
        randomness. The same record is kept beside the release's spend in the ledger.
        """
        return tuple(copy.deepcopy(r) for r in self._records)

    def report(
        self, path: str | os.PathLike[str], *, audit: Any = None, title: str | None = None
    ) -> Path:
        """Write the release report of every release this Session made: one HTML file.

        Parameters
        ----------
        path : str or os.PathLike
            The file to write (an existing file is replaced).
        audit : AuditResult or sequence of them, optional
            Results of :func:`dpkit.audit.audit` to show with their verdicts.
        title : str, optional
            The report's title (default "Release report").

        Returns
        -------
        pathlib.Path
            ``path``.

        Raises
        ------
        TypeError
            ``audit`` holds something that is not an audit result, or ``title`` is not a str.
        OSError
            The file cannot be written.

        Privacy
        -------
        Post-processing: the report shows the releases' records (public parameters, plans,
        released values and their intervals, costs) and the accountant's spends, nothing
        computed from the data. A seeded release is flagged as not private.

        Notes
        -----
        Self-contained: inline CSS, charts as inline SVG, no script, nothing fetched. The
        budget summary covers the accountant's whole history (with a shared ledger, other
        users' spends too); the releases are this Session's. ``dpkit report LEDGER`` renders
        the same report from the ledger alone.
        """
        from dpkit.render.release_report import session_report

        return session_report(self, path, audit=audit, title=title)

    def sql(
        self,
        query: str,
        *,
        epsilon: float | None = None,
        delta: float = 0.0,
        rho: float | None = None,
        bounds: Any = None,
        keys: Any = None,
        alpha: float = 0.05,
        explain: bool = False,
        measure: bool = False,
        noise: str | None = None,
        rng: Any = None,
        label: str | None = None,
        max_rows_per_unit: int | str | None = None,
        max_groups_per_unit: int | None = None,
    ) -> Any:
        """Release one SQL SELECT, compiled into this Session's own query plan.

        The query is parsed (sqlglot, DuckDB's dialect) and compiled into
        ``query().with_columns(...).filter(...).group_by(..., keys=...).agg(...)``: the
        same plan, checks, engines, bounding and noise as a query written in Python. The
        SQL text is never run by an engine. The grammar, each construct's mechanism and
        the refusals are in ``docs/sql.md``.

        Parameters
        ----------
        query : str
            One ``SELECT ... FROM <name> [JOIN public ...] [WHERE ...] [GROUP BY ...]
            [HAVING ...] [ORDER BY ...] [LIMIT n]``, with optional ``WITH`` clauses of
            row-level steps; a leading ``EXPLAIN`` returns the plan and spends nothing.
        epsilon, delta, rho, alpha, noise, rng, label
            As for :meth:`Query.measure`.
        bounds : dict, optional
            ``{column or alias: (lower, upper) or "auto"}`` for sums, means, variances
            and quantiles (``CLAMP(x, lower, upper)`` in the query works too).
        keys : dict or frame, optional
            Public group keys: ``{GROUP BY column: [values, ...]}`` (every combination is
            a group) or a frame of the GROUP BY columns; otherwise a joined public table's
            values, or groups chosen privately (needs ``delta > 0``).
        explain : bool, default False
            Return the plan (a :class:`~dpkit.session._plan.Plan` whose notes say what the
            SQL compiled into, and what is post-processing); spend nothing.
        measure : bool, default False
            Return the :class:`QueryRelease` (frame, cost, plan, releases) instead of the
            frame.
        max_rows_per_unit, max_groups_per_unit : optional
            As for :meth:`query`.

        Returns
        -------
        DataFrame, QueryRelease or Plan
            The released table: the SELECT list in order, each aggregate with its
            ``_low`` / ``_high`` interval; pandas for pandas data, Spark for Spark data,
            Polars otherwise.

        Raises
        ------
        ParameterError, TypeError
            A construct with no private counterpart (``MIN``, ``SELECT *``, a window, a
            join of private tables, a bare column, an aggregate without bounds, ...),
            refused with a hint before anything is spent; the errors of
            :meth:`Query.measure`.
        BudgetExceededError
            The release would overspend: nothing is spent.

        Privacy
        -------
        That of :meth:`Query.measure` for the compiled query (one accountant entry,
        add/remove one unit). What SQL asks after the aggregates (HAVING, ORDER BY,
        LIMIT, arithmetic between released values) runs on the released table:
        post-processing, with no further cost.

        Examples
        --------
        >>> import polars as pl
        >>> import dpkit as dp
        >>> df = pl.DataFrame({"Sex": ["F", "M"] * 100, "Age": [30, 50] * 100})
        >>> s = dp.Session(df, budget=dp.PureDP(1.0), rng=7)
        >>> s.sql(
        ...     "SELECT Sex, COUNT(*) AS n FROM data GROUP BY Sex",
        ...     epsilon=0.5,
        ...     keys={"Sex": ["F", "M"]},
        ... ).columns
        ['Sex', 'n', 'n_low', 'n_high']
        """
        from dpkit.session._sql import run

        return run(
            self,
            query,
            epsilon=epsilon,
            delta=delta,
            rho=rho,
            bounds=bounds,
            keys=keys,
            alpha=alpha,
            explain=explain,
            measure=measure,
            noise=noise,
            rng=rng,
            label=label,
            max_rows_per_unit=max_rows_per_unit,
            max_groups_per_unit=max_groups_per_unit,
        )

    # -- one-statistic shortcuts -----------------------------------------------------------

    def _one(
        self,
        aggregate: agg.Aggregate,
        by: Sequence[str] | str | None,
        keys: Any,
        kw: dict[str, Any],
    ) -> Any:
        q = self.query()
        if by is not None:
            cols = (by,) if isinstance(by, str) else tuple(by)
            q = q.group_by(*cols, keys=keys)
        return q.agg(aggregate).release(**kw)

    def count(
        self, *, by: Sequence[str] | str | None = None, keys: Any = None, **release: Any
    ) -> Any:
        """Release one count (per group of ``by``): ``query().group_by(by, keys=keys)
        .agg(dp.count()).release(**release)``.

        Parameters
        ----------
        by : str or sequence of str, optional
            Key column(s); ``keys`` public keys or ``None`` (chosen privately, needs delta).
        keys : list or frame, optional
        **release
            ``epsilon``, ``delta``, ``alpha``, ``rho``, ``noise``, ``rng``, ``label``, as for
            :meth:`Query.release`.

        Returns
        -------
        DataFrame
            The released frame (pandas for pandas data, Polars otherwise).

        Raises
        ------
        ParameterError, TypeError, BudgetExceededError
            As :meth:`Query.release`.
        """
        return self._one(agg.count(), by, keys, release)

    def sum(
        self,
        column: str,
        *,
        bounds: tuple[float, float] | str | None = None,
        by: Sequence[str] | str | None = None,
        keys: Any = None,
        **release: Any,
    ) -> Any:
        """Release one ``dp.sum(column, bounds=)`` (per group of ``by``).

        Parameters
        ----------
        column : str
        bounds : (lower, upper) or "auto"
            Required: public, or ``"auto"`` (chosen privately with half of the budget).
        by, keys, **release
            As for :meth:`count`.

        Returns
        -------
        DataFrame
            The released frame.

        Raises
        ------
        ParameterError, TypeError, BudgetExceededError
            As :meth:`Query.release`; a missing bound is a ParameterError.
        """
        return self._one(agg.sum(column, bounds=bounds), by, keys, release)

    def mean(
        self,
        column: str,
        *,
        bounds: tuple[float, float] | str | None = None,
        by: Sequence[str] | str | None = None,
        keys: Any = None,
        **release: Any,
    ) -> Any:
        """Release one ``dp.mean(column, bounds=)`` (per group of ``by``).

        Parameters
        ----------
        column : str
        bounds : (lower, upper) or "auto"
            Required: public, or ``"auto"`` (chosen privately with half of the budget).
        by, keys, **release
            As for :meth:`count`.

        Returns
        -------
        DataFrame
            The released frame.

        Raises
        ------
        ParameterError, TypeError, BudgetExceededError
            As :meth:`Query.release`; a missing bound is a ParameterError.
        """
        return self._one(agg.mean(column, bounds=bounds), by, keys, release)

    def var(
        self,
        column: str,
        *,
        bounds: tuple[float, float] | str | None = None,
        by: Sequence[str] | str | None = None,
        keys: Any = None,
        **release: Any,
    ) -> Any:
        """Release one ``dp.var(column, bounds=)`` (per group of ``by``).

        Parameters
        ----------
        column : str
        bounds : (lower, upper) or "auto"
            Required: public, or ``"auto"`` (chosen privately with half of the budget).
        by, keys, **release
            As for :meth:`count`.

        Returns
        -------
        DataFrame
            The released frame.

        Raises
        ------
        ParameterError, TypeError, BudgetExceededError
            As :meth:`Query.release`; a missing bound is a ParameterError.
        """
        return self._one(agg.var(column, bounds=bounds), by, keys, release)

    def std(
        self,
        column: str,
        *,
        bounds: tuple[float, float] | str | None = None,
        by: Sequence[str] | str | None = None,
        keys: Any = None,
        **release: Any,
    ) -> Any:
        """Release one ``dp.std(column, bounds=)`` (per group of ``by``).

        Parameters
        ----------
        column : str
        bounds : (lower, upper) or "auto"
            Required: public, or ``"auto"`` (chosen privately with half of the budget).
        by, keys, **release
            As for :meth:`count`.

        Returns
        -------
        DataFrame
            The released frame.

        Raises
        ------
        ParameterError, TypeError, BudgetExceededError
            As :meth:`Query.release`; a missing bound is a ParameterError.
        """
        return self._one(agg.std(column, bounds=bounds), by, keys, release)

    def median(
        self,
        column: str,
        *,
        bounds: tuple[float, float] | None = None,
        by: Sequence[str] | str | None = None,
        keys: Any = None,
        **release: Any,
    ) -> Any:
        """Release one ``dp.median(column, bounds=)`` (per group of ``by``).

        Parameters
        ----------
        column : str
        bounds : (lower, upper)
            Required, public.
        by, keys, **release
            As for :meth:`count`.

        Returns
        -------
        DataFrame
            The released frame.

        Raises
        ------
        ParameterError, TypeError, BudgetExceededError
            As :meth:`Query.release`; a missing bound is a ParameterError.
        """
        return self._one(agg.median(column, bounds=bounds), by, keys, release)

    def quantile(
        self,
        column: str,
        q: float | Sequence[float],
        *,
        bounds: tuple[float, float] | None = None,
        by: Sequence[str] | str | None = None,
        keys: Any = None,
        **release: Any,
    ) -> Any:
        """Release ``dp.quantile(column, q, bounds=)`` (per group of ``by``).

        Parameters
        ----------
        column : str
        q : float or sequence of float
            Levels in (0, 1), sorted and distinct; all released by one mechanism.
        bounds : (lower, upper)
        by, keys, **release
            As for :meth:`count`.

        Returns
        -------
        DataFrame
            Columns ``<column>_<q>`` with their intervals.

        Raises
        ------
        ParameterError, TypeError, BudgetExceededError
            As :meth:`Query.release`.
        """
        return self._one(agg.quantile(column, q, bounds=bounds), by, keys, release)

    def histogram(
        self,
        column: str,
        *,
        bins: Sequence[Any] | None = None,
        by: Sequence[str] | str | None = None,
        keys: Any = None,
        **release: Any,
    ) -> Any:
        """Release ``dp.histogram(column, bins=)`` (per group of ``by``), in long form.

        Parameters
        ----------
        column : str
        bins : sequence
            Numeric edges or categories, public.
        by, keys, **release
            As for :meth:`count`.

        Returns
        -------
        DataFrame
            One row per (group, bin).

        Raises
        ------
        ParameterError, TypeError, BudgetExceededError
            As :meth:`Query.release`.
        """
        return self._one(agg.histogram(column, bins=bins), by, keys, release)

    def __repr__(self) -> str:
        unit = "rows" if self.privacy_unit is None else repr(self.privacy_unit)
        return (
            f"Session(engine={self.engine!r}, privacy_unit={unit}, accountant={self.accountant!r})"
        )
