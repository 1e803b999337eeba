"""Session queries as audit functions, and the Session's worst-case audit cases.

:class:`SessionQuery` turns a query builder (``frame -> Query``) into the batched audit
function ``func(frame, size, rng)``: it draws ``size`` releases at once through
:class:`dpkit.session.batch.QuerySampler`, which computes the engine's aggregates once per
bounding salt and draws the noise of many releases with the code every release runs.

What the audit then tests, precisely. With a privacy unit, a release bounds each unit's rows
by a salted hash with a fresh secret salt, so its mechanism is a mixture over salts of
mechanisms ``M_s``. The Session's proof shows each ``M_s`` is DP by itself (a unit's kept
rows depend on its own rows and the salt only). The adapter draws a pool of ``salts`` salts
once (from the audit's random source, before any noise) and gives each release a salt drawn
uniformly from the pool, the same pool for both tables: the draws are independent and
identically distributed from the mixture of ``M_s`` over the pool, which is DP whenever every
``M_s`` is. A violation found this way refutes the proof's claim; a pass says nothing about
salts outside the pool (the worst-case tables below make every salt a worst case for the
removed person: all their rows carry the extreme value).

:func:`session_cases` builds the Session's audit cases on :func:`worst_case_table`
(``dpkit audit session_count``, ``session_sum``, ``session_mean``, ``session_quantile``,
``session_group_by``). :func:`zcdp_cases` builds the cases of releases under a zCDP budget
(``rho``) or under ``(epsilon, delta)`` with Gaussian noise (``session_gaussian``,
``session_quantile_cdf``, ``session_quantile_em``, ``session_several``), on
:func:`worst_case_table` and :func:`integer_table`.

Why the zCDP cases are tested at a large delta. A zCDP claim is tested as the
``(epsilon, delta)`` it implies (Canonne, Kamath and Steinke 2020). A stage charged by the
wrong zCDP rule (a discrete-Laplace histogram, pure epsilon-DP and so only
``epsilon**2 / 2``-zCDP, charged ``epsilon**2 / 8`` as an exponential mechanism) runs at twice
the epsilon its share allows: its output is then like randomized response at
``epsilon = sqrt(8 rho)``, which stays inside the claim at small ``delta`` (there the claimed
epsilon is about ``2 sqrt(rho log(1 / delta))``) but not where the zCDP curve is tightest, at a
large ``delta``: at ``rho = 0.5`` and ``delta = 0.3`` the claim is epsilon 0.82 and such a
release shows 1.58 (the correct charge: 0.47).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl

from dpkit.accounting.loss import PrivacyLoss
from dpkit.audit.neighbours import NeighbourPair, unit_pairs
from dpkit.errors import ParameterError
from dpkit.session.batch import QuerySampler, salt_pool

__all__ = [
    "ENGINES",
    "ZCDP_KINDS",
    "SessionQuery",
    "integer_table",
    "session_cases",
    "worst_case_table",
    "zcdp_cases",
]

_OWNER = "SessionQuery"


class SessionQuery:
    """A Session query as a batched audit function ``func(frame, size, rng)``.

    Parameters
    ----------
    build : callable
        ``build(frame) -> Query``: the query on one table, for example
        ``lambda f: dp.Session(f, privacy_unit="id", max_rows_per_unit=2,
        budget=dp.PureDP(1.0)).query().agg(dp.count())`` (the budget is never charged).
    epsilon, delta, rho, noise, alpha
        The release's parameters, as for :meth:`dpkit.session.Query.release`.
    salts : int >= 1
        Bounding salts in the pool (module docstring); ignored without a privacy unit.

    Raises
    ------
    TypeError
        ``build`` not callable, or not returning a Query.
    ParameterError
        A bad ``salts``; the release's own checks (when first called).

    Examples
    --------
    >>> import polars as pl
    >>> import dpkit as dp
    >>> df = pl.DataFrame({"id": [1, 1, 1, 2, 3], "x": [5.0, 6.0, 7.0, 1.0, 2.0]})
    >>> q = SessionQuery(lambda f: dp.Session(f, privacy_unit="id", max_rows_per_unit=2,
    ...                  budget=dp.PureDP(1.0)).query().agg(dp.count()), epsilon=1.0)
    >>> q(df, 3, 7)["count"].to_list()
    [-3, 5, 4]
    >>> q.claim(df)
    PureDP(epsilon=1.0)
    """

    def __init__(
        self,
        build: Callable[[Any], Any],
        *,
        epsilon: float | None = None,
        delta: float = 0.0,
        rho: float | None = None,
        noise: str | None = None,
        alpha: float = 0.05,
        salts: int = 16,
    ) -> None:
        if not callable(build):
            raise TypeError(f"{_OWNER}: `build` must be callable (frame -> Query)")
        if isinstance(salts, bool) or not isinstance(salts, int) or salts < 1:
            raise ParameterError(f"{_OWNER}: `salts` must be an int >= 1; got {salts!r}")
        self._build = build
        self._epsilon, self._delta, self._alpha = epsilon, delta, alpha
        self._rho, self._noise = rho, noise
        self.salts = salts
        self._pool: list[tuple[int, ...]] | None = None
        self._samplers: list[tuple[Any, Any]] = []

    def sampler(self, frame: Any) -> QuerySampler:
        """The :class:`~dpkit.session.batch.QuerySampler` of the query on ``frame`` (one per
        frame object, so the engine runs once per frame and salt)."""
        for known, smp in self._samplers:
            if known is frame:
                return smp
        from dpkit.session import Query

        query = self._build(frame)
        if not isinstance(query, Query):
            raise TypeError(
                f"{_OWNER}: `build(frame)` must return a dpkit Session query "
                f"(s.query()...agg(...)); got {type(query).__name__}"
            )
        smp = QuerySampler(
            query, self._epsilon, self._delta, self._alpha, rho=self._rho, noise=self._noise
        )
        self._samplers.append((frame, smp))
        return smp

    def claim(self, frame: Any) -> PrivacyLoss:
        """The guarantee one release claims (what it would charge)."""
        return self.sampler(frame).privacy

    def __call__(self, frame: Any, size: int, rng: Any) -> pl.DataFrame:
        """``size`` releases on ``frame``, stacked with a ``draw`` column."""
        smp = self.sampler(frame)
        if smp.context.unit is None:
            return smp.sample(size, rng=rng)
        if self._pool is None:
            self._pool = salt_pool(self.salts, rng)
        return smp.sample(size, rng=rng, salts=self._pool)


# ----------------------------------------------------------------------------- the cases


def worst_case_table(crowd: int = 0) -> pl.DataFrame:
    """A small table of persons (``id``) in cities, stressing bounding and key selection.

    Person 1 has the most rows (6, two in each of cities a, b and c, every ``x`` and ``y`` at
    the upper bound 100): whichever rows and groups bounding keeps, removing them moves a count
    by ``max_rows_per_unit`` and a sum by that many times 100. Person 5 is alone in city z
    (``x`` 100). The others have one or two rows, ``x`` at 0 and ``y`` spread over (0, 100),
    so a quantile of ``y`` moves when person 1 goes. ``crowd`` more persons (one row each) join
    cities a and b: with private keys, a crowd near the selection threshold makes a key's
    presence uncertain, where removing person 1 moves it most.

    Examples
    --------
    >>> worst_case_table().group_by("id").len().sort("len", descending=True).row(0)
    (1, 6)
    """
    ids = [1, 1, 1, 1, 1, 1, 2, 2, 3, 4, 5, 6, 7, 8, 9, 10]
    city = ["a", "a", "b", "b", "c", "c", "a", "a", "b", "a", "z", "b", "a", "b", "a", "b"]
    x = [100.0] * 6 + [0.0] * 4 + [100.0] + [0.0] * 5
    y = [100.0] * 6 + [10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0]
    extra = list(range(11, 11 + 2 * crowd))
    return pl.DataFrame(
        {
            "id": ids + extra,
            "city": city + ["a", "b"] * crowd,
            "x": x + [0.0] * len(extra),
            "y": y + [50.0] * len(extra),
        }
    )


def _duckdb(frame: pl.DataFrame) -> Any:
    import duckdb

    return duckdb.connect().from_arrow(frame.to_arrow())


#: How a Polars table is handed to each engine the Session cases can run on.
ENGINES: dict[str, Callable[[pl.DataFrame], Any]] = {
    "polars": lambda f: f,
    "pandas": lambda f: f.to_pandas(),
    "duckdb": _duckdb,
}

_KINDS = ("count", "sum", "mean", "quantile", "group_by")


def session_cases(kind: str, p: dict[str, Any]) -> list[tuple[str, SessionQuery, NeighbourPair]]:
    """The audit cases of one Session query kind on :func:`worst_case_table`.

    ``p`` holds ``epsilon``, ``delta``, ``noise``, ``max_rows``, ``max_groups``, ``salts`` and
    ``engine``. Kinds: ``count`` (whole table), ``sum`` (of ``x`` per city, public keys
    a, b, c, z), ``mean`` (of ``x``), ``quantile`` (median of ``y``), ``group_by`` (count per
    city with private keys, needs ``delta > 0``). Returns ``(name, function, pair)`` triples:
    the pairs remove the person with the most rows and, for per-city queries, the person
    alone in a city (:func:`dpkit.audit.neighbours.unit_pairs`).
    """
    import dpkit as dp

    if kind not in _KINDS:
        raise ParameterError(f"session_cases: `kind` must be one of {_KINDS}; got {kind!r}")
    if p["engine"] not in ENGINES:
        raise ParameterError(f"audit session: `engine` must be one of {sorted(ENGINES)}")
    to_engine = ENGINES[p["engine"]]
    by = "city" if kind in ("sum", "group_by") else None
    aggregate = {
        "count": dp.count(),
        "sum": dp.sum("x", bounds=(0, 100)),
        "mean": dp.mean("x", bounds=(0, 100)),
        "quantile": dp.median("y", bounds=(0, 100)),
        "group_by": dp.count(),
    }[kind]

    def build(frame: Any) -> Any:
        s = dp.Session(
            frame,
            privacy_unit="id",
            max_rows_per_unit=p["max_rows"],
            max_groups_per_unit=p["max_groups"],
            budget=dp.ApproxDP(1.0, 0.5),  # never charged: the sampler spends nothing
        )
        q = s.query()
        if by is not None:
            q = q.group_by(by, keys=["a", "b", "c", "z"] if kind == "sum" else None)
        return q.agg(aggregate)

    delta = p["delta"] if kind == "group_by" or p["noise"] == "gaussian" else 0.0
    func = SessionQuery(
        build, epsilon=p["epsilon"], delta=delta, noise=p["noise"], salts=p["salts"]
    )
    crowd = 0
    if kind == "group_by":  # cities a and b (5 persons each) brought to the threshold
        selection = func.sampler(worst_case_table()).plan.selection
        assert selection is not None  # private keys
        crowd = max(selection.threshold - 5, 0)
    table = worst_case_table(crowd)
    out = []
    for pair in unit_pairs(table, "id", group_by=by):
        x0, x1 = to_engine(pair.x0), to_engine(pair.x1)
        moved = NeighbourPair(x0, x1, pair.relation, pair.description)
        label = f"session {kind} ({p['noise']}, {p['engine']}) [{pair.description}]"
        out.append((label, func, moved))
    return out


# ------------------------------------------------------------------- zCDP and delta > 0


def integer_table(crowd: int = 100) -> pl.DataFrame:
    """A table for quantiles of an integer column on a two-point grid (bounds (0, 1)).

    Person 1 has two rows at ``a = 1`` (``x`` and ``y`` at the upper bound 100); ``crowd``
    persons have one row each at ``a = 0`` (``x`` 0, ``y`` spread over (5, 95)). With
    ``crowd`` = 100 the 0.999-quantile of ``a`` (method ``"cdf"``) is 1 exactly when the
    noisy count at 1 is at least 1 (``0.001 / 0.999`` times the noisy count at 0 stays in
    (0, 1)), so each release shows the histogram's whole privacy loss for person 1, as
    randomized response would.

    Examples
    --------
    >>> integer_table(3).group_by("a").len().sort("a").rows()
    [(0, 3), (1, 2)]
    """
    ids = [1, 1, *range(2, crowd + 2)]
    return pl.DataFrame(
        {
            "id": ids,
            "a": pl.Series([1, 1] + [0] * crowd, dtype=pl.Int64),
            "x": [100.0, 100.0] + [0.0] * crowd,
            "y": [100.0, 100.0, *np.linspace(5.0, 95.0, crowd).tolist()],
        }
    )


#: The kinds of :func:`zcdp_cases`.
ZCDP_KINDS = ("gaussian", "quantile_cdf", "quantile_em", "several")


def zcdp_cases(
    kind: str, p: dict[str, Any]
) -> list[tuple[str, SessionQuery, NeighbourPair, float]]:
    """The audit cases of Session releases under zCDP, or under ``(epsilon, delta)`` with
    Gaussian noise: ``(name, function, pair, delta)``, ``delta`` being where a zCDP claim is
    tested (0 for an ``(epsilon, delta)`` claim, which carries its own).

    ``p`` holds ``rho``, ``epsilon``, ``delta``, ``max_rows``, ``salts`` and ``engine`` (and
    ``max_groups`` for ``gaussian``). Kinds:

    * ``gaussian``: count, sum per city and mean (:func:`session_cases` with Gaussian noise)
      at ``(epsilon, delta)``;
    * ``quantile_cdf``: the levels 0.5 and 0.999 of the integer column ``a`` of
      :func:`integer_table` on bounds (0, 1), which the noisy-histogram method releases,
      under ``rho`` (tested at ``delta``) and under ``(epsilon, delta)``;
    * ``quantile_em``: the median, and the quartiles, of the float column ``y`` of
      :func:`worst_case_table` (exponential mechanisms) under ``rho``;
    * ``several``: a count, a sum and a mean of ``x``, the histogram quantiles of ``a`` and a
      median of ``y`` in one release of :func:`integer_table` under ``rho``; the histogram
      holds two thirds of the budget (weight 8 of 12), so its stage's charge shows.

    The pair removes the person with the most rows (:func:`~dpkit.audit.neighbours.unit_pairs`).
    """
    import dpkit as dp

    if kind not in ZCDP_KINDS:
        raise ParameterError(f"zcdp_cases: `kind` must be one of {ZCDP_KINDS}; got {kind!r}")
    if p["engine"] not in ENGINES:
        raise ParameterError(f"audit session: `engine` must be one of {sorted(ENGINES)}")
    if kind == "gaussian":
        q = {**p, "noise": "gaussian"}
        return [
            (name, func, pair, 0.0)
            for sub in ("count", "sum", "mean")
            for name, func, pair in session_cases(sub, q)
        ]
    to_engine = ENGINES[p["engine"]]
    cdf = dp.quantile("a", [0.5, 0.999], bounds=(0, 1), name="a_q")
    by_kind: dict[str, list[tuple[Any, ...]]] = {
        "quantile_cdf": [(cdf,)],
        "quantile_em": [
            (dp.median("y", bounds=(0, 100)),),
            (dp.quantile("y", [0.25, 0.5, 0.75], bounds=(0, 100), name="y_q"),),
        ],
        "several": [
            (
                dp.count(),
                dp.sum("x", bounds=(0, 100)),
                dp.mean("x", bounds=(0, 100)),
                dp.quantile("a", [0.5, 0.999], bounds=(0, 1), name="a_q", weight=8),
                dp.median("y", bounds=(0, 100)),
            )
        ],
    }
    releases = by_kind[kind]
    table = worst_case_table() if kind == "quantile_em" else integer_table()

    def builder(aggs: tuple[Any, ...]) -> Callable[[Any], Any]:
        def build(frame: Any) -> Any:
            s = dp.Session(
                frame,
                privacy_unit="id",
                max_rows_per_unit=p["max_rows"],
                budget=dp.ZCDP(1e6),  # never charged: the sampler spends nothing
            )
            return s.query().agg(*aggs)

        return build

    budgets: list[tuple[str, dict[str, Any], float]] = [
        (f"zCDP rho={p['rho']:g}", {"rho": p["rho"]}, p["delta"])
    ]
    if kind == "quantile_cdf":
        kw = {"epsilon": p["epsilon"], "delta": p["delta"]}
        budgets.append((f"epsilon={p['epsilon']:g}, delta={p['delta']:g}", kw, 0.0))
    pair = unit_pairs(table, "id")[0]  # the person with the most rows
    moved = NeighbourPair(to_engine(pair.x0), to_engine(pair.x1), pair.relation, pair.description)
    label = kind.replace("_", " ")
    out = []
    for what, kw, at in budgets:
        for aggs in releases:
            func = SessionQuery(builder(aggs), salts=p["salts"], **kw)
            which = f" {aggs[0].name}" if len(releases) > 1 else ""
            name = f"session {label}{which} ({what}, {p['engine']}) [{pair.description}]"
            out.append((name, func, moved, at))
    return out
