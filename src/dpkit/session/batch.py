"""Many releases of one Session query at once, by the release's own code (for audits).

A release runs the engine once (bounding with a fresh secret salt, then aggregation) and draws
its noise in Python. :class:`QuerySampler` splits the two: the engine's exact per-group
figures are computed once per salt (:func:`dpkit.session._engine.aggregate`, cached) and the
noise of ``size`` releases is drawn at once by :func:`dpkit.session._draw.draw`, the function
every release calls. It validates exactly as :meth:`Query.measure` (same plan, same checks)
and spends nothing. It serves :mod:`dpkit.audit` (``audit/session_query.py``), which tests
the release's claim on neighbouring tables; ``dpkit`` does not re-export it.

Salts. A release's bounding keeps each unit's rows by a salted hash, the salt drawn fresh and
secret. The release's mechanism is the mixture, over the salt, of the mechanisms ``M_s`` that
bound with salt ``s`` and add the noise. The Session's proof (:class:`~dpkit.session.Query`)
shows every ``M_s`` is DP on its own: each unit's kept rows depend on its own rows and ``s``
only, so removing a unit changes the statistics by at most the sensitivities. A sampler with
a *pool* of salts draws each release's salt uniformly from the pool (fixed before any noise,
the same pool for every table): the draws are independent and identically distributed from
the mixture of ``M_s`` over the pool, which is DP whenever each ``M_s`` is; a pool of one
salt audits ``M_s`` alone. So an audit of the sampler tests what the proof asserts, and a
violation it finds refutes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from dpkit.accounting import PrivacyLoss
from dpkit.errors import ParameterError
from dpkit.samplers import as_source, uniform_int
from dpkit.session import _engine as ex
from dpkit.session._draw import draw
from dpkit.session._engine import Aggregated, aggregate, fresh_salt

if TYPE_CHECKING:
    from dpkit.session.query import Query

__all__ = ["QuerySampler", "salt_pool"]

Salt = tuple[int, ...]


def salt_pool(count: int, rng: Any = None) -> list[Salt]:
    """``count`` salts drawn as a release draws its salt (four uniform 63-bit words each)."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ParameterError(f"salt_pool: `count` must be an int >= 1; got {count!r}")
    source = as_source(rng)
    words = uniform_int(2**63, 4 * count, source).reshape(count, 4)
    return [tuple(int(v) for v in row) for row in words]


def _check_salt(salt: Any) -> Salt:
    ok = (
        isinstance(salt, tuple)
        and len(salt) == 4
        and all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**63 for v in salt)
    )
    if not ok:
        raise ParameterError(
            f"QuerySampler: a salt is a tuple of four ints in [0, 2**63); got {salt!r}"
        )
    return salt


class QuerySampler:
    """``size`` independent releases of one query, by the release's code, spending nothing.

    Parameters
    ----------
    query : Query
        A complete query (aggregates added).
    epsilon, delta, alpha, rho, noise
        As for :meth:`Query.release`.

    Raises
    ------
    ParameterError, TypeError
        As :meth:`Query.release` would, before drawing anything.
    """

    def __init__(
        self,
        query: Query,
        epsilon: float | None = None,
        delta: float = 0.0,
        alpha: float = 0.05,
        *,
        rho: float | None = None,
        noise: str | None = None,
    ) -> None:
        self._query = query
        self.context, self.plan = query._prepare(epsilon, delta, alpha, rho, noise)
        if self.plan.rows is not None or self.plan.bounds:
            raise ParameterError(
                "QuerySampler: a query with max_rows_per_unit='auto' or bounds='auto' chooses "
                "them inside each release, which the batched path does not run; give fixed "
                "values to sample it"
            )
        self.context = query._with_rows(self.context)  # spends nothing: the audit's path
        self._cache: dict[Salt | None, Aggregated] = {}

    @property
    def privacy(self) -> PrivacyLoss:
        """The guarantee of one release (what a release would charge), add/remove one unit."""
        assert self.plan.budget is not None
        return self.plan.budget.cost

    def aggregated(self, salt: Salt | None) -> Aggregated:
        """The engine's exact figures after bounding with ``salt`` (cached per salt)."""
        if salt not in self._cache:
            rows = ex.bounded_rows(self.context, salt)
            self._cache[salt] = aggregate(self.context, self.plan, rows)
        return self._cache[salt]

    def sample(
        self, size: int, *, rng: Any = None, salts: Sequence[Salt] | None = None
    ) -> pl.DataFrame:
        """``size`` independent releases stacked in one Polars frame with a ``draw`` column.

        Parameters
        ----------
        size : int
            Number of releases, >= 1.
        rng : None, int or BitSource
            ``None`` uses the Session's source, as a release does.
        salts : sequence of salts, optional
            With a privacy unit: each release bounds with a salt drawn uniformly from this
            pool (module docstring). ``None``: one fresh salt for all ``size`` releases, drawn
            as a release draws it (so ``size=1`` with a seed gives that seed's release).

        Returns
        -------
        polars.DataFrame
            ``draw`` (0 .. size - 1), then the columns of a release. Batched quantiles have
            NaN intervals (their values are drawn exactly as in a release).

        Raises
        ------
        TypeError, ParameterError
            Bad ``size`` or salts.
        """
        if (
            isinstance(size, bool | np.timedelta64)
            or not isinstance(size, int | np.integer)
            or size < 1
        ):
            raise TypeError(f"QuerySampler.sample: `size` must be an int >= 1; got {size!r}")
        size = int(size)
        source = self._query._source(rng)
        ctx = self.context
        if ctx.unit is None:
            return self._draw(self.aggregated(None), size, source)
        if salts is None:
            return self._draw(self.aggregated(fresh_salt(ctx, source)), size, source)
        pool = [_check_salt(s) for s in salts]
        if not pool:
            raise ParameterError("QuerySampler.sample: `salts` must hold at least one salt")
        if len(pool) == 1:
            return self._draw(self.aggregated(pool[0]), size, source)
        pick = uniform_int(len(pool), size, source)
        frames = []
        for j in np.unique(pick).tolist():
            at = np.flatnonzero(pick == j)  # the releases that use salt j
            part = self._draw(self.aggregated(pool[j]), at.size, source)
            frames.append(part.with_columns(pl.Series("draw", at[part["draw"].to_numpy()])))
        return pl.concat(frames, how="vertical_relaxed").sort("draw", maintain_order=True)

    def _draw(self, agg: Aggregated, size: int, source: Any) -> pl.DataFrame:
        frame, _releases = draw(self.context, self.plan, agg, source, size)
        return frame
