"""The record a Session release returns: the frame and what produced it."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from dpkit.accounting import PrivacyLoss
from dpkit.release import Release
from dpkit.session._plan import Plan

__all__ = ["QueryRelease"]


@dataclass(frozen=True)
class QueryRelease:
    """A released frame and what produced it (all of it safe to publish).

    Attributes
    ----------
    frame
        The released table: key columns, then ``<name>``, ``<name>_low``, ``<name>_high`` per
        aggregate value (pandas for pandas input, Polars otherwise).
    privacy
        The cost charged to the accountant (one entry).
    relation
        ``"unbounded"``: neighbours add or remove one privacy unit.
    privacy_unit
        ``None`` (each row) or the column naming the unit.
    label
        The accountant entry's label.
    plan
        The :class:`~dpkit.session._plan.Plan` that was executed (what ``explain()`` shows).
    releases
        Per noisy statistic, a :class:`~dpkit.mechanisms.Release` holding its per-group noisy
        values (in statistic units), mechanism, share of the cost and noise scale, keyed
        ``"<aggregate>: <statistic>"``: the parts of counts, sums, means, variances and
        deviations (``"x_mean: centred sum"``), ``"<name>: count per bin"`` for a histogram
        (its noisy counts, groups by bins), and ``"<name>: quantiles"`` for a quantile
        aggregate (mechanism ``"quantiles"``: per released group one row of values, one
        column per level, its value intervals in ``details["value_intervals"]``, and
        ``privacy`` the mechanism's pure epsilon per group for one unit). The automatic
        stages have their own records: ``bounds`` and ``contribution`` below.
    threshold
        The key-selection threshold, or ``None`` with public keys.
    bounds
        Per aggregate with ``bounds="auto"``, the :class:`~dpkit.statistics.BoundsRelease`
        of its privately chosen bounds (``.bounds``; ``.clipped_fraction``: a DP estimate
        of the fraction of its values outside them with the histogram method, ``None`` with
        ``bounds_method="tail"``; ``.fallback``: ``True`` when no bucket passed its
        threshold and the bounds are the public fallback). They are global (one choice for
        all groups) and also printed by ``print(rel.plan)``; the frame itself holds no extra
        columns.
    contribution
        With ``max_rows_per_unit="auto"``, the :class:`~dpkit.statistics.ContributionBound`
        chosen for this release (``.bound``), else ``None``.
    details
        The public figures above as one read-only mapping (``label``, ``privacy_unit``,
        ``threshold``), as every result record offers (:class:`dpkit.release.Released`).
    record
        The release record (:mod:`dpkit.session._record`): when, the query as written, the
        plan's facts, the released table, the cost, its events and the randomness, as plain
        JSON data; kept by the Session and beside the spend in the ledger. ``None`` for a
        result that was not released by a Session.
    """

    frame: Any
    privacy: PrivacyLoss
    relation: str
    privacy_unit: str | None
    label: str
    plan: Plan
    releases: dict[str, Release] = field(default_factory=dict)
    threshold: int | None = None
    bounds: dict[str, Any] = field(default_factory=dict)
    contribution: Any = None
    record: dict[str, Any] | None = field(default=None, repr=False, compare=False)

    def report(
        self, path: str | os.PathLike[str], *, audit: Any = None, title: str | None = None
    ) -> Path:
        """Write the release report of this one release: one self-contained HTML file.

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
        ParameterError
            The result has no record (it was not released by a Session).
        OSError
            The file cannot be written.

        Notes
        -----
        The budget section shows this release's cost and the budget it was charged to;
        what the whole budget has spent is in :meth:`Session.report` or ``dpkit report``.
        """
        from dpkit.render.release_report import release_report

        return release_report(self, path, audit=audit, title=title)

    @property
    def details(self) -> Mapping[str, Any]:
        """``label``, ``privacy_unit`` and ``threshold``, read-only."""
        return MappingProxyType(
            {"label": self.label, "privacy_unit": self.privacy_unit, "threshold": self.threshold}
        )
