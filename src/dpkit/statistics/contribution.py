"""Automatic contribution bounds: choose ``max_rows_per_unit`` privately.

When a person may own many rows, a release first keeps at most ``k`` rows per person; the
sensitivities follow from ``k``. A large ``k`` keeps every row but multiplies the noise by
``k``; a small one drops rows of the heavy contributors (bias). Amin, Kulesza, Munoz Medina and
Vassilvitskii ("Bounding User Contributions: A Bias-Variance Trade-off in Differential
Privacy", ICML 2019) choose ``k`` as a differentially private quantile of the number of rows
per person; that is what :func:`contribution_bound` does. By default
(``method="threshold"``) it searches upward from one row by AboveThreshold (Durfee's
unbounded quantile estimation, NeurIPS 2023, on the integers), which puts no mass in the
empty range between the largest row count and the public cap: with 200 persons of one row
each it returns 1, where the exponential mechanism over ``0 .. cap`` (``method="quantile"``,
integer support) has a flat score above the point mass and lands almost uniformly on
``[1, 1000]``. The Session's ``max_rows_per_unit="auto"`` uses the same default.

Privacy: the input is one number per person (their row count), so adding or removing a person
adds or removes one record of the quantile mechanism: pure ``epsilon``-DP under add/remove of
one *person* (the person-level relation a Session with ``privacy_unit`` uses). The bound is a
DP output: use it as a public parameter of the following release, whose cost adds to this one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from types import MappingProxyType
from typing import Any

import numpy as np

from dpkit._validate import check_choice, check_int, check_positive, describe
from dpkit.accounting.guard import approx_event, spend
from dpkit.accounting.loss import PureDP
from dpkit.errors import ParameterError
from dpkit.noise import DiscreteLaplaceLaw
from dpkit.samplers import MAX_NOISE_SCALE, as_source
from dpkit.statistics._input import (
    as_rational_level,
    check_count_array,
    check_level,
    check_total,
)
from dpkit.statistics.bounds import above_threshold_scales, threshold_noise_scale
from dpkit.statistics.quantile_release import quantiles_from_counts

__all__ = ["ContributionBound", "contribution_bound", "contribution_bound_from_counts"]


@dataclass(frozen=True, slots=True)
class ContributionBound:
    """A privately chosen ``max_rows_per_unit``.

    Attributes
    ----------
    bound : int
        The number of rows to keep per person (``>= 1``), a DP output.
    level : float
        The quantile of rows per person it estimates.
    privacy : PureDP
        The cost.
    relation : str
        ``"unbounded"``: add/remove one person (all of their rows).
    details : Mapping
        ``max_bound`` (the public cap) and the raw released quantile.
    """

    bound: int
    level: float
    privacy: PureDP
    relation: str = "unbounded"
    details: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "details", MappingProxyType(dict(self.details)))


def _row_counts(owner: str, name: str, value: Any) -> np.ndarray:
    """Row counts (one per person, or the distinct counts of a histogram): integers
    ``>= 1`` (:func:`~dpkit.statistics._input.check_count_array`), as int64. Row counts are
    private data: the messages never quote them."""
    return check_count_array(owner, name, value, whole_floats=True, minimum=1, what="row counts")


#: ``method=`` of the contribution bound: the exponential mechanism over 0 .. max_bound, or
#: AboveThreshold upward from 1 (no mass lands in the empty range above the largest count)
CONTRIBUTION_METHODS = ("quantile", "threshold")
#: Largest ``max_bound`` of ``method="threshold"`` (one noisy count per candidate is drawn).
MAX_THRESHOLD_BOUND = 2**20
#: Largest ``max_bound`` of ``method="quantile"``: its integer support needs a lattice
#: spacing of at most 1 over ``[0, max_bound]`` (30 bits of the width).
MAX_QUANTILE_BOUND = 2**31 - 1


def _check(
    owner: str, epsilon: Any, level: Any, max_bound: Any, method: Any = "threshold"
) -> tuple[float, float, int, str]:
    eps = check_positive(owner, "epsilon", epsilon)
    lv = check_level(owner, "level", level)
    cap = check_int(owner, "max_bound", max_bound, minimum=1)
    meth = check_choice(owner, "method", method, CONTRIBUTION_METHODS)
    if meth == "quantile" and cap > MAX_QUANTILE_BOUND:
        raise ParameterError(
            f"{owner}: `max_bound` must be at most 2**31 - 1 = {MAX_QUANTILE_BOUND:,} with "
            f"method='quantile' (its integer support needs a lattice spacing of at most 1 "
            f"over [0, max_bound]); got {describe(max_bound)}"
        )
    if meth == "threshold":
        _check_threshold(owner, eps, lv, cap)
    return eps, lv, cap, meth


def _check_threshold(owner: str, eps: float, level: float, cap: int) -> None:
    """``method="threshold"`` runs within its limits (public figures only, checked before the
    spend): ``max_bound <= 2**20`` and AboveThreshold's query noise ``4 D / epsilon`` within
    the exact sampler's range."""
    if cap > MAX_THRESHOLD_BOUND:
        raise ParameterError(
            f"{owner}: `max_bound` must be at most 2**20 = {MAX_THRESHOLD_BOUND:,} with "
            f"method='threshold' (one noisy count per candidate); got {describe(cap)}"
        )
    if threshold_noise_scale(level, Fraction(eps)) > MAX_NOISE_SCALE:
        raise ParameterError(
            f"{owner}: `epsilon` {eps:.3g} is too small for method='threshold' at level "
            f"{level!r}: its discrete Laplace noise would exceed 2**50, the exact sampler's "
            "range; raise epsilon"
        )


def _threshold_bound(
    r: np.ndarray, p: np.ndarray, eps: float, level: float, cap: int, source: Any
) -> int:
    """AboveThreshold over the candidates ``c = 1, 2, ..., cap``: the first ``c`` whose noisy
    ``Q #{persons with <= c rows} - P n`` reaches a noisy 0 (``level = P / Q``), ``cap`` if
    none does. Sensitivity ``D = max(P, Q - P)`` per person (add/remove changes the count by
    0 or 1 and ``n`` by 1); noise scales ``D / (eps / 2)`` and ``2 D / (eps / 2)`` (Lyu, Su
    and Li 2017, Algorithm 1), as Durfee's unbounded quantile estimation (NeurIPS 2023)."""
    q = as_rational_level(level)
    big_p, big_q = q.numerator, q.denominator
    d = max(big_p, big_q - big_p)
    rho_scale, nu_scale = above_threshold_scales(d, Fraction(eps))
    clipped = np.minimum(r, cap)
    below = np.cumsum(np.bincount(clipped, weights=p, minlength=cap + 1).astype(np.int64))
    n = int(p.sum())
    f = big_q * below[1 : cap + 1] - big_p * n  # candidates 1 .. cap
    rho = int(DiscreteLaplaceLaw(rho_scale).draw(1, source)[0])
    nu = DiscreteLaplaceLaw(nu_scale).draw(cap, source)
    hit = np.flatnonzero(f + nu >= rho)
    return int(hit[0]) + 1 if hit.size else cap


def contribution_bound_from_counts(
    rows: Any,
    persons: Any,
    *,
    epsilon: float,
    level: float = 0.95,
    max_bound: int = 1000,
    rng: Any = None,
    accountant: Any = None,
    method: str = "threshold",
) -> ContributionBound:
    """Choose ``max_rows_per_unit`` from a histogram of rows per person.

    Parameters
    ----------
    rows : array_like of int
        Distinct row counts (``>= 1``), increasing: what an engine gets from
        ``group_by(person).len()`` then ``group_by(len).len()``.
    persons : array_like of int
        How many persons have each row count (``>= 0``, fewer than ``2**40`` in total).
    epsilon : float
        Cost, finite and > 0.
    level : float
        The quantile of rows per person to keep, in (0, 1) (Amin et al. 2019 discuss the
        trade-off: a high level keeps most rows, a low one cuts the noise).
    max_bound : int
        A public cap: persons with more rows count as ``max_bound`` (it bounds the search);
        at most ``2**20`` with ``method="threshold"``, ``2**31 - 1`` with ``"quantile"``
        (whose integer support needs a lattice spacing of at most 1).
    rng, accountant
        As everywhere (the accountant is charged before anything is drawn).
    method : {"threshold", "quantile"}
        ``"threshold"`` (default): AboveThreshold over ``1, 2, ..., max_bound`` upward
        (Durfee 2023's unbounded quantile estimation on the integers), which never puts mass
        in the empty range above the largest row count. ``"quantile"``: the exponential
        mechanism over ``0 .. max_bound`` with integer support, whose score is flat above
        the largest row count: with few persons or a loose cap it lands there (200 persons
        of one row each, epsilon 1, cap 1000: nearly uniform on ``[1, 1000]``; at 600
        persons, epsilon 0.2, above every count in most releases). The Session uses
        ``"threshold"``.

    Returns
    -------
    ContributionBound

    Privacy
    -------
    Pure ``epsilon``-DP under add/remove of one person (module docstring; the quantile
    mechanism of :func:`~dpkit.statistics.quantiles_from_counts` with integer support, or
    AboveThreshold, Dwork and Roth 2014, Theorem 3.23, on counting queries of sensitivity
    ``max(P, Q - P)`` for ``level = P / Q``).

    Examples
    --------
    >>> contribution_bound_from_counts([1, 2, 3, 10], [500, 300, 150, 50], epsilon=1.0,
    ...                                level=0.9, rng=3).bound
    3
    >>> contribution_bound_from_counts([1], [200], epsilon=1.0, rng=3).bound
    1
    """
    owner = "contribution_bound_from_counts"
    eps, lv, cap, method = _check(owner, epsilon, level, max_bound, method)
    # row counts and persons are private data: no message below quotes them
    r = _row_counts(owner, "rows", rows)
    p = check_count_array(owner, "persons", persons, whole_floats=True)
    if r.shape != p.shape:
        raise ParameterError(f"{owner}: `rows` and `persons` must have the same length")
    check_total(owner, p, "persons")
    if r.size > 1 and not np.all(r[1:] > r[:-1]):
        raise ParameterError(f"{owner}: `rows` must be sorted and distinct (strictly increasing)")
    if method == "threshold":  # its limits were checked with the parameters (_check)
        source = as_source(rng)
        # AboveThreshold (sparse vector): pure epsilon-DP, not one Laplace release of a
        # known scale, so it states its epsilon alone
        spend(accountant, PureDP(eps), owner, events=[approx_event(eps)])
        bound = _threshold_bound(r, p, eps, lv, cap, source)
        return ContributionBound(
            bound=bound,
            level=lv,
            privacy=PureDP(eps),
            details={"max_bound": cap, "method": "threshold"},
        )
    rel = quantiles_from_counts(
        r.astype(np.float64),
        p,
        lv,
        epsilon=eps,
        bounds=(0.0, float(cap)),
        support=1.0,
        intervals=False,
        rng=rng,
        accountant=accountant,
    )
    return ContributionBound(
        bound=max(1, math.ceil(rel.value)),
        level=lv,
        privacy=PureDP(eps),
        details={"max_bound": cap, "method": "quantile", "released_quantile": rel.value},
    )


def contribution_bound(
    rows_per_unit: Any,
    *,
    epsilon: float,
    level: float = 0.95,
    max_bound: int = 1000,
    rng: Any = None,
    accountant: Any = None,
    method: str = "threshold",
) -> ContributionBound:
    """Choose ``max_rows_per_unit`` from each person's row count (one entry per person).

    Parameters
    ----------
    rows_per_unit : array_like of int
        The number of rows of each person (``>= 1``).
    epsilon, level, max_bound, rng, accountant
        As for :func:`contribution_bound_from_counts`.
    method : {"threshold", "quantile"}
        As for :func:`contribution_bound_from_counts`: AboveThreshold upward from one row
        (default, as the Session), or the exponential mechanism over ``0 .. max_bound``.

    Returns
    -------
    ContributionBound

    Privacy
    -------
    Pure ``epsilon``-DP under add/remove of one person.

    Examples
    --------
    >>> rows = np.repeat([1, 2, 3, 10], [500, 300, 150, 50])
    >>> contribution_bound(rows, epsilon=1.0, level=0.9, rng=3).bound
    3
    >>> contribution_bound(np.ones(200, dtype=int), epsilon=1.0, rng=3).bound
    1
    """
    owner = "contribution_bound"
    eps, lv, cap, meth = _check(owner, epsilon, level, max_bound, method)
    arr = _row_counts(owner, "rows_per_unit", rows_per_unit)
    if arr.size == 0:
        raise ParameterError(f"{owner}: `rows_per_unit` is empty; one entry per person")
    values, counts = np.unique(arr, return_counts=True)
    return contribution_bound_from_counts(
        values,
        counts,
        epsilon=eps,
        level=lv,
        max_bound=cap,
        rng=rng,
        accountant=accountant,
        method=meth,
    )
