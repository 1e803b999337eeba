"""Session aggregates: values describing one statistic (``dp.count()``, ``dp.mean(...)``, ...).

An aggregate is a small frozen value. It knows which integer statistics the engine must
compute for it (counts and sums of lattice units, :mod:`dpkit.session._lattice`), the
per-row contribution of each (from which the Session derives every sensitivity), how its
budget share is split between them, and how to turn their noisy values into the released
estimate and its interval. It never sees the data.

Sensitivities, for a privacy unit contributing at most ``k`` rows after bounding (add/remove
one unit; ``k = 1`` for row-level privacy), with ``w`` the largest ``|units|`` and ``h`` the
largest ``|units - centre|`` of the aggregate's lattice:

=========  ================================  =====================================
aggregate  noisy integer statistics          L1 (and L2) sensitivity, per statistic
=========  ================================  =====================================
count      rows (or non-null values)         k
sum        sum of units                      k w
mean       count, centred sum                k, k h
var / std  count, centred sum, sum squares   k, k h, k h**2
quantile   exponential mechanism per group   epsilon / k per group (group privacy)
histogram  count per (group, bin)            k
=========  ================================  =====================================

The L1 bound covers all groups at once (a unit's ``k`` rows are spread over its groups), so
disjoint groups compose in parallel without any extra charge.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from dpkit._validate import check_bounds, check_level, check_number, describe
from dpkit.errors import ParameterError
from dpkit.session._kinds import (
    AUTO_BOUNDS_SHARE,
    QUANTILE_CELLS,
    QUANTILE_MAX_BITS,
    QUANTILE_MIN_BITS,
    SUM_BITS,
    VAR_BITS,
    Aggregate,
    Count,
    Histogram,
    Mean,
    Part,
    Quantile,
    Sum,
    Var,
    check_column,
    check_fill,
    check_name,
    check_weight,
    quantile_bits,
    with_lattice,
)
from dpkit.statistics.bounds import METHODS as BOUNDS_METHODS
from dpkit.statistics.bounds import check_moments_lower
from dpkit.statistics.quantile_release import METHODS as QUANTILE_METHODS

__all__ = [
    "AUTO_BOUNDS_SHARE",
    "QUANTILE_CELLS",
    "QUANTILE_MAX_BITS",
    "QUANTILE_MIN_BITS",
    "Aggregate",
    "Count",
    "Histogram",
    "Mean",
    "Part",
    "Quantile",
    "Sum",
    "Var",
    "count",
    "histogram",
    "mean",
    "median",
    "quantile",
    "quantile_bits",
    "std",
    "sum",
    "var",
]


def count(column: str | None = None, *, name: str | None = None, weight: float = 1.0) -> Count:
    """A private count of rows, or of the non-null values of ``column``.

    Parameters
    ----------
    column : str, optional
        Count only rows where this column is not null (nor NaN).
    name : str, optional
        Output column (default ``"count"``, or ``"<column>_count"``).
    weight : float > 0, default 1.0
        Share of the release's budget, relative to the other aggregates.

    Returns
    -------
    Count

    Privacy
    -------
    Sensitivity ``k`` (the rows a privacy unit may keep), over all groups at once; the noise
    is discrete (geometric / discrete Gaussian), so the released count is an integer.

    Examples
    --------
    >>> count()
    Count(column=None, name='count', weight=1.0)
    """
    owner = "dp.count"
    if column is not None:
        column = check_column(owner, column)
    default = "count" if column is None else f"{column}_count"
    return Count(column, check_name(owner, name) or default, check_weight(owner, weight))


def _bounded(
    owner: str,
    column: Any,
    bounds: Any,
    fill: Any,
    name: Any,
    weight: Any,
    auto: bool = False,
) -> dict:
    column = check_column(owner, column)
    hint = ", or bounds='auto' to choose them privately with a share of the budget" if auto else ""
    if bounds is None:
        raise ParameterError(
            f"{owner}({column!r}): `bounds` is required: pass bounds=(lower, upper) chosen "
            "without looking at the data (for example (0, 100) for an age)"
            f"{hint}; bounds read from the data are not private"
        )
    if isinstance(bounds, str):
        if bounds != "auto" or not auto:
            allowed = "a (lower, upper) pair or 'auto'" if auto else "a (lower, upper) pair"
            raise TypeError(f"{owner}({column!r}): `bounds` must be {allowed}; got {bounds!r}")
        return {
            "column": column,
            "bounds": (0.0, 1.0),  # a placeholder until the release chooses them
            "fill": check_fill(owner, fill),
            "weight": check_weight(owner, weight),
            "name": check_name(owner, name),
            "auto": True,
        }
    lo, hi = check_bounds(f"{owner}({column!r})", bounds)
    return {
        "column": column,
        "bounds": (lo, hi),
        "fill": check_fill(owner, fill),
        "weight": check_weight(owner, weight),
        "name": check_name(owner, name),
    }


def _auto_share(
    owner: str,
    kw: dict,
    bounds_share: Any,
    bounds_method: Any = "histogram",
    lower: Any = None,
) -> dict:
    """``bounds_share`` in (0, 1), ``bounds_method`` and ``lower``, recorded only for
    ``bounds="auto"`` (``lower`` with given bounds is refused: it would be ignored)."""
    share = check_number(owner, "bounds_share", bounds_share)
    if not 0 < share < 1:
        raise ParameterError(f"{owner}: `bounds_share` must be in (0, 1); got {bounds_share!r}")
    if not isinstance(bounds_method, str) or bounds_method not in BOUNDS_METHODS:
        raise ParameterError(
            f"{owner}: `bounds_method` must be one of {BOUNDS_METHODS}; got {bounds_method!r}"
        )
    if lower is not None:
        low = check_number(owner, "lower", lower)
        if not math.isfinite(low):
            raise ParameterError(f"{owner}: `lower` must be finite; got {lower!r}")
        if not kw.get("auto"):
            raise ParameterError(f"{owner}: `lower` goes with bounds='auto' only")
        kw["lower"] = low
    if kw.get("auto"):
        kw["bounds_share"] = share
        kw["bounds_method"] = bounds_method
    return kw


def sum(
    column: str,
    *,
    bounds: tuple[float, float] | str | None = None,
    name: str | None = None,
    weight: float = 1.0,
    fill: float | None = None,
    bounds_share: float = AUTO_BOUNDS_SHARE,
    bounds_method: str = "histogram",
    lower: float | None = None,
) -> Sum:
    """A private sum of ``column``, each value clipped to ``bounds``.

    Parameters
    ----------
    column : str
    bounds : (lower, upper) or "auto"
        Required; public, chosen without looking at the data, or ``"auto"``: chosen
        privately at release time with ``bounds_share`` of this aggregate's budget.
    name : str, optional
        Output column (default ``"<column>_sum"``).
    weight : float > 0, default 1.0
    fill : float, optional
        Value used for nulls and NaN (then clipped); by default they are left out.
    bounds_share : float in (0, 1), default 0.5
        With ``bounds="auto"``: the share of this aggregate's budget spent on the bounds.
    bounds_method : {"histogram", "tail"}, default "histogram"
        With ``bounds="auto"``: ``"histogram"`` (below) or ``"tail"``, which clips at a
        private 99.9th percentile (and 0.1th, unless ``lower`` is given) by Durfee's
        unbounded quantile estimation: it fixes how many values are clipped (about 0.1 %)
        rather than where the bound falls. ``make bench`` compares both; for means of
        lognormal and Pareto columns the histogram is the more accurate.
    lower : float, optional
        With ``bounds="auto"``: a public lower bound (0 for amounts); only the upper bound
        is then chosen, and the whole bounds share goes to it.

    Privacy
    -------
    Add/remove sensitivity ``k * max(|lower|, |upper|)`` (on the value lattice, exactly). The
    sum is computed exactly as an integer number of lattice units, never as a float sum.

    Automatic bounds: ``bounds="auto"`` spends ``bounds_share`` of this aggregate's budget on
    choosing ``(lower, upper)`` privately, then releases the statistic with those bounds and
    the rest of its budget: :func:`dpkit.statistics.bounds_from_counts` on a signed log2
    histogram of the values counted in the engine (discrete Laplace noise of scale
    ``k / epsilon_bounds``, a unit's ``k`` rows move it by ``k`` in L1; a threshold after
    Google's ApproximateBounds), composed sequentially (Dwork and Roth 2014, Theorem 3.16).
    With ``bounds_method="tail"`` the engine counts each value's candidate index instead
    (:func:`dpkit.statistics.tail_steps`) and
    :func:`dpkit.statistics.tail_bounds_from_counts` runs AboveThreshold on those counts
    (Durfee 2023) at ``epsilon_bounds / k`` per row, which is ``epsilon_bounds``-DP per unit
    (group privacy); it reports no clipped fraction (it clips about 0.1 % by design).
    The bounds are global: one choice over all rows of the query after filtering and
    bounding, shared by every group. They are data-dependent but differentially private
    and come back, with a DP estimate of the fraction of values they clip, in
    ``QueryRelease.bounds`` and in the executed plan's text (``print(rel.plan)``). The same
    holds for :func:`mean`, :func:`var` and :func:`std`.

    Examples
    --------
    >>> sum("Age", bounds=(0, 100)).name
    'Age_sum'
    """
    kw = _bounded("dp.sum", column, bounds, fill, name, weight, auto=True)
    kw = _auto_share("dp.sum", kw, bounds_share, bounds_method, lower)
    check_moments_lower("dp.sum", kw.get("lower"))
    kw["name"] = kw["name"] or f"{kw['column']}_sum"
    return with_lattice(Sum(**kw), SUM_BITS)


def mean(
    column: str,
    *,
    bounds: tuple[float, float] | str | None = None,
    name: str | None = None,
    weight: float = 1.0,
    fill: float | None = None,
    bounds_share: float = AUTO_BOUNDS_SHARE,
    bounds_method: str = "histogram",
    lower: float | None = None,
) -> Mean:
    """A private mean of ``column`` clipped to ``bounds`` (see :class:`Mean` for the estimator).

    ``bounds="auto"`` chooses the bounds privately with ``bounds_share`` of the mean's budget
    (see :func:`sum`).

    Examples
    --------
    >>> mean("Age", bounds=(0, 100)).name
    'Age_mean'
    """
    kw = _bounded("dp.mean", column, bounds, fill, name, weight, auto=True)
    kw = _auto_share("dp.mean", kw, bounds_share, bounds_method, lower)
    check_moments_lower("dp.mean", kw.get("lower"))
    kw["name"] = kw["name"] or f"{kw['column']}_mean"
    return with_lattice(Mean(**kw), SUM_BITS)


def var(
    column: str,
    *,
    bounds: tuple[float, float] | str | None = None,
    name: str | None = None,
    weight: float = 1.0,
    fill: float | None = None,
    bounds_share: float = AUTO_BOUNDS_SHARE,
    bounds_method: str = "histogram",
    lower: float | None = None,
) -> Var:
    """A private population variance (ddof = 0) of ``column`` clipped to ``bounds``.

    ``bounds="auto"`` chooses the bounds privately with ``bounds_share`` of the budget (see
    :func:`sum`).

    Examples
    --------
    >>> var("Age", bounds=(0, 100)).name
    'Age_var'
    """
    kw = _bounded("dp.var", column, bounds, fill, name, weight, auto=True)
    kw = _auto_share("dp.var", kw, bounds_share, bounds_method, lower)
    check_moments_lower("dp.var", kw.get("lower"), variance=True)
    kw["name"] = kw["name"] or f"{kw['column']}_var"
    return with_lattice(Var(**kw), VAR_BITS)


def std(
    column: str,
    *,
    bounds: tuple[float, float] | str | None = None,
    name: str | None = None,
    weight: float = 1.0,
    fill: float | None = None,
    bounds_share: float = AUTO_BOUNDS_SHARE,
    bounds_method: str = "histogram",
    lower: float | None = None,
) -> Var:
    """A private population standard deviation: the square root of :func:`var`'s estimate.

    ``bounds="auto"`` chooses the bounds privately with ``bounds_share`` of the budget (see
    :func:`sum`).

    Examples
    --------
    >>> std("Age", bounds=(0, 100)).name
    'Age_std'
    """
    kw = _bounded("dp.std", column, bounds, fill, name, weight, auto=True)
    kw = _auto_share("dp.std", kw, bounds_share, bounds_method, lower)
    check_moments_lower("dp.std", kw.get("lower"), variance=True)
    kw["name"] = kw["name"] or f"{kw['column']}_std"
    return with_lattice(Var(**kw, root=True), VAR_BITS)


def _levels(owner: str, q: Any) -> tuple[tuple[float, ...], bool]:
    single = not isinstance(q, Sequence) or isinstance(q, str)
    raw = [q] if single else list(q)
    if not raw:
        raise ParameterError(f"{owner}: `q` must hold at least one level in (0, 1)")
    levels = tuple(check_level(owner, "q", v) for v in raw)
    if any(b <= a for a, b in itertools.pairwise(levels)):
        raise ParameterError(f"{owner}: levels `q` must be sorted and distinct; got {raw!r}")
    return levels, single


def _check_method(owner: str, method: Any) -> str:
    if not isinstance(method, str) or method not in QUANTILE_METHODS:
        raise ParameterError(f"{owner}: `method` must be one of {QUANTILE_METHODS}; got {method!r}")
    return method


def quantile(
    column: str,
    q: float | Sequence[float],
    *,
    bounds: tuple[float, float] | None = None,
    name: str | None = None,
    weight: float = 1.0,
    fill: float | None = None,
    method: str = "auto",
) -> Quantile:
    """Private quantiles of ``column`` at level(s) ``q``, all in one mechanism.

    Columns are ``<name>_<q>`` with ``q`` written ``f"{q:g}"`` (``name`` defaults to
    ``column``), each with ``_low`` / ``_high``; the released values are sorted. With
    probability at least ``1 - alpha``, jointly for all levels of a group, each ``_low`` /
    ``_high`` pair contains every rank quantile of the group's clipped values (the ``t``
    with ``#{x < t} <= q n <= #{x <= t}``: the order statistic ``x_(ceil(q n))``), which
    NumPy's default linear interpolation need not be (see
    :class:`dpkit.statistics.QuantileRelease`).

    Parameters
    ----------
    column : str
    q : float or sequence of float
        Levels in (0, 1), strictly increasing.
    bounds : (lower, upper)
        Required; public.
    name : str, optional
        Prefix of the output columns (default ``column``).
    weight : float > 0, default 1.0
    fill : float, optional
        Value used for nulls and NaN (by default they are left out).
    method : {"auto", "aq", "joint", "independent", "cdf"}
        Passed to :func:`dpkit.statistics.quantiles_from_counts`: ``"auto"`` is one draw for
        one level and, for several, ApproximateQuantiles (Kaplan, Schnapp and Stemmer 2022)
        or, on an integer-typed column with at most 4096 integers in the bounds, one noisy
        histogram (``"cdf"``); ``"joint"`` is JointExp (Gillenwater, Joseph and Kulesza 2021);
        ``"independent"`` one draw per level at ``epsilon / m``. ``"cdf"`` needs an
        integer-typed column (checked before anything is spent).

    Privacy
    -------
    Pure ``epsilon_q``-DP per group for the whole tuple of levels under add/remove of one
    record, with ``epsilon_q`` the aggregate's share divided by the rows a unit keeps (group
    privacy); groups are disjoint (parallel composition). See
    :func:`dpkit.statistics.quantiles_from_counts` for the theorems.

    Examples
    --------
    >>> quantile("Age", [0.1, 0.9], bounds=(0, 100)).outputs()
    ['Age_0.1', 'Age_0.9']
    """
    kw = _bounded("dp.quantile", column, bounds, fill, name, weight)
    kw["name"] = kw["name"] or kw["column"]
    levels, _single = _levels("dp.quantile", q)
    out = Quantile(**kw, levels=levels, method=_check_method("dp.quantile", method))
    return _with_grids("dp.quantile", out)


def _with_grids(owner: str, agg: Quantile) -> Quantile:
    """``agg`` once the bounds are known to carry both of its grids (refused here, before
    any release: the engine's grid and the mechanism's lattice, which a release builds after
    the spend)."""
    from dpkit.mechanisms.quantile_em import QuantileLattice

    agg.grid()
    QuantileLattice.for_bounds(owner, *agg.bounds)
    return agg


def median(
    column: str,
    *,
    bounds: tuple[float, float] | None = None,
    name: str | None = None,
    weight: float = 1.0,
    fill: float | None = None,
    method: str = "auto",
) -> Quantile:
    """A private median of ``column``: :func:`quantile` at 0.5, one column ``<column>_median``.

    ``method`` as for :func:`quantile` (``"auto"``: one exponential-mechanism draw).

    Examples
    --------
    >>> median("Age", bounds=(0, 100)).outputs()
    ['Age_median']
    """
    kw = _bounded("dp.median", column, bounds, fill, name, weight)
    kw["name"] = kw["name"] or f"{kw['column']}_median"
    out = Quantile(**kw, levels=(0.5,), single=True, method=_check_method("dp.median", method))
    return _with_grids("dp.median", out)


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def histogram(
    column: str,
    *,
    bins: Sequence[Any] | None = None,
    name: str | None = None,
    weight: float = 1.0,
) -> Histogram:
    """A private histogram of ``column``: one noisy count per (group, bin).

    Parameters
    ----------
    column : str
    bins : sequence
        Public bins, required: numeric edges (sorted, finite, at least two) or category
        values (at least one, distinct) of the column's type: ``str`` for a string or
        categorical column, ``bool``, or ``datetime`` values for a temporal one (checked
        against the schema before anything is spent); ``None`` among them counts the
        nulls. Never derived from the data.
    name : str, optional
        Output column for the counts (default ``"<column>_count"``).
    weight : float > 0, default 1.0

    Returns
    -------
    Histogram
        Released in long form: the group keys, the bin (``<column>`` for categories, or
        ``<column>_from`` / ``<column>_to`` for edges), then the count and its interval.

    Examples
    --------
    >>> histogram("Age", bins=[0, 30, 60, 100]).edges
    (0.0, 30.0, 60.0, 100.0)
    """
    owner = "dp.histogram"
    column = check_column(owner, column)
    if bins is None or isinstance(bins, str) or not isinstance(bins, Sequence) or not bins:
        raise ParameterError(
            f"{owner}({column!r}): `bins` is required: a list of numeric edges or of "
            f"categories, chosen without looking at the data; got {bins!r}"
        )
    out_name = check_name(owner, name) or f"{column}_count"
    w = check_weight(owner, weight)
    numeric = all(
        isinstance(b, int | float | np.integer | np.floating) and not isinstance(b, bool)
        for b in bins
    )
    if numeric:
        edges = tuple(check_number(owner, "bins", b) for b in bins)
        if len(edges) < 2 or any(b <= a for a, b in itertools.pairwise(edges)):
            raise ParameterError(
                f"{owner}({column!r}): numeric `bins` are edges: at least two, strictly "
                f"increasing; got {list(bins)!r}"
            )
        if not all(math.isfinite(e) for e in edges):  # pragma: no cover - check_number
            raise ParameterError(f"{owner}: `bins` must be finite")
        return Histogram(column, out_name, w, edges=edges)
    cats = tuple(bins)
    for i, c in enumerate(cats):  # a category is one value: not a list, array or mapping
        if isinstance(c, list | tuple | set | frozenset | dict | np.ndarray) or not _hashable(c):
            raise TypeError(
                f"{owner}({column!r}): `bins` must be numeric edges or category values "
                f"(strings, numbers, dates); got {type(c).__name__} {describe(c)} at position {i}"
            )
    if len(set(cats)) != len(cats):
        raise ParameterError(f"{owner}({column!r}): categories in `bins` must be distinct")
    return Histogram(column, out_name, w, categories=cats)
