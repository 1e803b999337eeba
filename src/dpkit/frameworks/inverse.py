"""The inverse-sensitivity mechanism (Asi and Duchi 2020) for the median and percentiles.

The mechanism samples an output ``t`` with probability (or density) proportional to
``exp(-epsilon * len(x; t) / 2)``, where ``len(x; t)`` is the number of records of ``x``
that must change for the statistic to equal ``t``. It is the exponential mechanism
(McSherry and Talwar 2007) with score ``-len``, whose sensitivity is 1.

Proof sketch (docs/proofs/inverse_sensitivity.md has the long form)
-------------------------------------------------------------------
*Statistic.* A ``p``-quantile in the set-valued sense: ``t`` is one for ``x`` (``n``
records, clipped to the public bounds ``[a, b]``) when ``#{x_i < t} <= p n`` and
``#{x_i > t} <= (1 - p) n``. For ``p = 1/2`` and even ``n`` that is every point between the
two middle values (NumPy's median among them); for odd ``n`` the middle value. Clipping is a
per-record map, so neighbours stay neighbours.

*Loss.* With ``L(t) = #{x_i < t}``, ``E(t) = #{x_i <= t}``, ``q = floor(p n)`` and
``[frac] = 1`` when ``p n`` is not an integer (else 0), the fewest replaced records making
``t`` a ``p``-quantile is ``len(t) = max(0, L - q, q + [frac] - E)``: move ``L - q`` records
from below ``t`` to ``t``, or the missing ones from above ``t`` to ``t``; both deficits cannot
occur together, and one replacement fixes at most one unit (``loss_at``). On the open gap
``x_(g-1) < t < x_(g)`` (sorted, ``x_(-1) = a``, ``x_(n) = b``) ``L = E = g``, so
``len = ceil(|g - p n|)``: constant between order statistics, each loss value held by at most
two gaps (``_Classes``).

*Privacy.* Under replace-one neighbours ``len(x; t)`` and ``len(x'; t)`` differ by at most 1
(triangle inequality for the Hamming distance). Under add/remove neighbours ``L - p n`` moves
by ``1 - p`` or ``-p`` and ``p n - E`` by ``p - 1`` or ``p``, so each ceiling, hence their
maximum with 0, moves by at most 1. Either way the density ratio at every ``t`` is at most
``e^(eps/2)`` and the normalisers' ratio at most ``e^(eps/2)``: ``eps``-DP under both
relations (McSherry and Talwar 2007, Theorem 6). The sampler draws *exactly* from this law
(below), then rounds to a fixed grid: post-processing.

*Exact sampling.* First every record is rounded to the output grid
``g = 2**(floor(log2(b - a)) - 30)`` (a per-record map, like clipping), so every gap length
is an exact integer number of cells (``_units``). The loss class ``l`` is drawn with
probability proportional to ``W_l exp(-eps l / 2)``, ``W_l`` the total length of the class's
gaps, by :func:`dpkit.samplers.heavy_tailed.exp_weighted_choice` (floating point only
proposes; acceptance is an exact comparison with digits from :mod:`decimal`). Within the
class a gap is chosen with probability proportional to its length and a cell uniformly
inside it (:func:`~dpkit.samplers.heavy_tailed.uniform_below`, exact integers); the cell's
midpoint is released. That is the continuous mechanism's uniform point followed by "report
the midpoint of its cell": post-processing. No floating-point value decides a draw; the
only floats are the proposal weights, which change the speed, never the law.

References
----------
H. Asi and J. Duchi. Instance-optimality in differential privacy via approximate inverse
sensitivity mechanisms. NeurIPS 2020; and Near instance-optimality in differential privacy,
arXiv:2005.10630 (2020).
F. McSherry and K. Talwar. Mechanism design via differential privacy. FOCS 2007.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from dpkit._validate import (
    check_bounds,
    check_finite_array,
    check_int,
    check_positive,
    check_relation,
)
from dpkit.accounting import events as ev
from dpkit.accounting.guard import spend
from dpkit.accounting.loss import PureDP
from dpkit.errors import ParameterError
from dpkit.frameworks._data import as_sorted, check_grid_bounds, grid_for_bounds
from dpkit.frameworks._inverse_select import select_sample
from dpkit.frameworks._queries import quantile_of
from dpkit.mechanisms.quantile_em import Counts, Measure, QuantileLattice, cells, draw_cells
from dpkit.release import Release
from dpkit.samplers import as_source
from dpkit.samplers.heavy_tailed import exp_weighted_choice, uniform_below

__all__ = [
    "inverse_sensitivity",
    "inverse_sensitivity_finite",
    "inverse_sensitivity_sample",
    "loss_at",
    "utility_bound",
]

_OWNER = "inverse_sensitivity"


def loss_at(
    data: Any,
    points: Any,
    *,
    bounds: tuple[float, float],
    query: Any = "median",
    percentile: float | None = None,
) -> np.ndarray:
    """The inverse-sensitivity loss ``len(x; t)`` of each point ``t`` (vectorised).

    Parameters
    ----------
    data : array_like
        Finite real values; clipped to ``bounds``.
    points : array_like
        Points ``t`` inside ``bounds``.
    bounds : (float, float)
        Public ``(a, b)`` with ``a < b``.
    query : {"median", "percentile"}
        The statistic (``percentile=`` in [0, 100] for the latter).
    percentile : float, optional
        The percentile for ``query="percentile"``.

    Returns
    -------
    numpy.ndarray
        int64 ``max(0, L(t) - q, q + [frac] - E(t))``: the fewest replaced records after which
        ``t`` is a ``p``-quantile (module docstring), ``q = floor(p n)``.

    Raises
    ------
    ParameterError
        Empty data, NaN or infinite values, points outside the bounds.

    Notes
    -----
    ``O((n + m) log n)``: one sort and two binary searches per point.

    Examples
    --------
    >>> loss_at([1.0, 2.0, 3.0, 4.0, 5.0], [3.0, 3.5, 1.5, 0.0], bounds=(0, 10)).tolist()
    [0, 1, 2, 3]
    >>> loss_at([1.0, 2.0, 3.0, 4.0], [2.0, 2.5, 3.0, 3.5], bounds=(0, 10)).tolist()
    [0, 0, 0, 1]
    """
    owner = "loss_at"
    arr = check_finite_array(owner, "data", data, ndim=1)
    lower, upper = check_bounds(owner, bounds)
    _name, p = quantile_of(owner, query, percentile)
    pts = check_finite_array(owner, "points", points, allow_empty=True, ndim=1)
    if pts.size and (pts.min() < lower or pts.max() > upper):
        raise ParameterError(f"{owner}: `points` must lie inside bounds [{lower}, {upper}]")
    xs = as_sorted(arr, lower, upper)
    return _point_loss(xs, pts, p)


def _center(n: int, p: float) -> tuple[int, int]:
    """``(q, frac)``: ``q = floor(p n)`` and ``frac = 1`` if ``p n`` is not an integer."""
    pn = Fraction(p) * n
    q = math.floor(pn)
    return q, int(pn != q)


def _point_loss(xs: np.ndarray, pts: np.ndarray, p: float) -> np.ndarray:
    q, frac = _center(xs.size, p)
    lt = np.searchsorted(xs, pts, side="left")
    le = np.searchsorted(xs, pts, side="right")
    return np.maximum(0, np.maximum(lt - q, q + frac - le)).astype(np.int64)


class _Classes:
    """Gap lengths grouped by loss ``l = ceil(|g - p n|)``: gaps ``q + l`` and ``q + frac - l``.

    ``units`` are the sorted data in grid units (integers, as float64) and ``lo``/``hi`` the
    bounds in grid units, so every gap length is an exact integer. Gap ``g`` (``0 <= g <= n``)
    is ``[ext[g], ext[g + 1]]`` with ``ext = (lo, units, hi)``. For an integer ``p n``
    (``frac = 0``) class 0 is the single gap ``g = q``, counted once. Built with slices only.
    """

    def __init__(self, units: np.ndarray, p: float, lo: float, hi: float) -> None:
        n = units.size
        q, frac = _center(n, p)
        self.n, self.q, self.frac = n, q, frac
        ext = np.empty(n + 2)
        ext[0], ext[1:-1], ext[-1] = lo, units, hi
        self.ext = ext
        lengths = np.diff(ext)  # exact: integers below 2**53
        start = 1 if frac else 0
        top = max(n - q, q + frac)
        self.start = start
        self.ell = np.arange(start, top + 1)
        self.w_right = np.zeros(self.ell.size)
        self.w_left = np.zeros(self.ell.size)
        right = lengths[q + start :]  # gaps q + l for l = start .. n - q
        self.w_right[: right.size] = right
        first_left = q + frac - max(start, 1)  # class 0 has no separate left gap
        if first_left >= 0:
            left = lengths[first_left::-1]  # gaps q + frac - l, l = max(start, 1) ..
            off = max(start, 1) - start
            self.w_left[off : off + left.size] = left
        self.weights = self.w_right + self.w_left

    def right_gap(self, i: np.ndarray) -> np.ndarray:
        return self.q + self.ell[i]

    def left_gap(self, i: np.ndarray) -> np.ndarray:
        return self.q + self.frac - self.ell[i]


def _units(xs: np.ndarray, lower: float, upper: float) -> tuple[np.ndarray, float, float, float]:
    """Data and bounds in units of the output grid: integers (as float64), exactly.

    Each record is rounded to the nearest grid point and clipped to the grid points inside
    the bounds: a per-record map, so neighbours stay neighbours.
    """
    spacing = check_grid_bounds(_OWNER, lower, upper)
    lo = math.ceil(lower / spacing)  # lower / spacing is exact (power-of-two scaling)
    hi = math.floor(upper / spacing)
    units = np.rint(xs / spacing)
    np.clip(units, lo, hi, out=units)
    return units, float(lo), float(hi), spacing


def inverse_sensitivity_sample(
    data: Any,
    *,
    epsilon: float,
    bounds: tuple[float, float],
    query: Any = "median",
    percentile: float | None = None,
    grid: Any = None,
    size: int = 1,
    rng: Any = None,
    support: Any = "continuous",
    window: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``size`` independent draws of the mechanism: ``(values, losses)``.

    The vectorised core of :func:`inverse_sensitivity` (used by :mod:`dpkit.compare`); the
    same parameters, the same guarantee *per draw* (``size`` draws cost ``size * epsilon``).
    No accountant is charged here. The returned losses are diagnostics read from the data.

    ``window`` (continuous quantiles only) fixes the rank half-width of the O(n) selection
    window (:mod:`dpkit.frameworks._inverse_select`); ``None`` picks it from ``epsilon`` so
    that the exact fallback is astronomically rare. Any value gives the same law; ``0``
    forces the sort-based path. Tests use small windows to exercise the fallback.

    Examples
    --------
    >>> vals, losses = inverse_sensitivity_sample(np.arange(101.0), epsilon=1.0,
    ...                                           bounds=(0, 100), size=3, rng=1)
    >>> vals.round(3).tolist(), losses.tolist()
    ([45.871, 50.999, 48.243], [5, 1, 2])
    """
    owner = _OWNER
    arr = check_finite_array(owner, "data", data, ndim=1)
    eps = check_positive(owner, "epsilon", epsilon)
    lower, upper = check_bounds(owner, bounds)
    size = check_int(owner, "size", size, minimum=1)
    if window is not None:
        window = check_int(owner, "window", window, minimum=0)
    if _is_mean(query):
        if grid is not None:
            raise ParameterError(f"{owner}: `grid` is supported for the median and percentiles")
        return _mean_sample(arr, eps, lower, upper, size, as_source(rng))
    _name, p = quantile_of(owner, query, percentile)
    source = as_source(rng)
    rate = Fraction(eps) / 2
    if support != "continuous":
        if grid is not None:
            raise ParameterError(f"{owner}: give either `grid` or a `support`, not both")
        return _support_sample(arr, p, rate, lower, upper, support, size, source)
    if grid is not None:
        xs = as_sorted(arr, lower, upper)
        pts = _check_grid(owner, grid, lower, upper)
        losses = _point_loss(xs, pts, p)
        idx = exp_weighted_choice(np.ones(pts.size), losses, rate, size, source)
        return pts[idx].copy(), losses[idx]

    def full(k: int) -> tuple[np.ndarray, np.ndarray]:
        return _sorted_sample(arr, p, rate, lower, upper, k, source)

    if window == 0:
        return full(size)
    return select_sample(
        arr,
        p,
        eps,
        lower,
        upper,
        size,
        source,
        units=lambda xs: _units(xs, lower, upper),
        full=full,
        window=window,
    )


def _sorted_sample(
    arr: np.ndarray, p: float, rate: Fraction, lower: float, upper: float, size: int, source: Any
) -> tuple[np.ndarray, np.ndarray]:
    """The sort-based sampler of the continuous quantile mechanism (module docstring)."""
    xs = as_sorted(arr, lower, upper)
    units, lo, hi, spacing = _units(xs, lower, upper)
    cls = _Classes(units, p, lo, hi)
    chosen = exp_weighted_choice(cls.weights, cls.ell, rate, size, source)
    # the gap inside the class, with probability proportional to its (integer) length
    w_r = cls.w_right[chosen].astype(np.int64)
    w_l = cls.w_left[chosen].astype(np.int64)
    take_right = uniform_below(w_r + w_l, source) < w_r
    gap = np.where(take_right, cls.right_gap(chosen), cls.left_gap(chosen))
    start = cls.ext[gap].astype(np.int64)
    length = cls.ext[gap + 1].astype(np.int64) - start
    # a uniform point of the gap, reported as the midpoint of its grid cell
    cell = start + uniform_below(length, source)
    values = (cell + 0.5) * spacing  # exact: |cell| < 2**52 and spacing a power of two
    return values, cls.ell[chosen].astype(np.int64)


def _support_sample(
    arr: np.ndarray,
    p: float,
    rate: Fraction,
    lower: float,
    upper: float,
    support: Any,
    size: int,
    source: Any,
) -> tuple[np.ndarray, np.ndarray]:
    """The mechanism over lattice *points* with a support-aware base measure.

    Same loss ``len = max(0, L - q, q + frac - E)`` and rate ``epsilon / 2``; the candidates
    are the lattice points ``t`` (tied data values among them) with base weight ``mu(t)`` of
    :class:`~dpkit.mechanisms.quantile_em.Measure`, a data-independent measure that puts
    atoms on dyadic grids (``"auto"``) or on a resolution's grid (a power of two such as
    ``1.0``). A value held by many records is then released exactly.
    """
    lattice = QuantileLattice.for_bounds(_OWNER, lower, upper)
    try:
        measure = Measure(lattice, support)
    except (ParameterError, TypeError) as exc:
        raise type(exc)(f"{_OWNER}: {exc}") from None
    counts = Counts.from_units(lattice, lattice.units(arr))
    c = cells(counts, measure, lattice.lo, lattice.hi)
    q, frac = _center(counts.n, p)
    losses = np.maximum(0, np.maximum(c.below - q, q + frac - c.atmost)).astype(np.int64)
    points, idx = draw_cells(c, measure, losses, rate, size, source)
    return lattice.values(points), losses[idx]


def _is_mean(query: Any) -> bool:
    return query == "mean" if isinstance(query, str) else getattr(query, "kind", None) == "mean"


def _mean_sample(
    arr: np.ndarray, eps: float, lower: float, upper: float, size: int, source: Any
) -> tuple[np.ndarray, np.ndarray]:
    """The continuous inverse-sensitivity mechanism for the mean (replace-one neighbours).

    With records in grid units ``u_i`` in ``[lo, hi]``, raising the mean to ``t`` needs the
    total to grow by ``n t - sum(u)``; one replacement adds at most ``hi - u_i``. So
    ``len(t) = min{k : C+_k >= n t - sum(u)}`` with ``C+_k`` the sum of the ``k`` largest
    ``hi - u_i`` (and symmetrically below the mean): constant on intervals of
    ``s = n t - sum(u)`` of integer length ``hi - u_(i)``. Class ``k`` holds one interval each
    side; it is drawn with exact weights, then a side and a unit cell of ``s`` uniformly, and
    the cell's midpoint released (post-processing of the uniform point).
    """
    _check_mean_size(arr.size, lower, upper)
    xs = as_sorted(arr, lower, upper)
    units, lo, hi, spacing = _units(xs, lower, upper)
    n = units.size
    total = float(units.sum())
    # data sorted ascending: the room above is largest first as is, the room below reversed
    up = (hi - units).astype(np.int64)
    down = (units - lo)[::-1].astype(np.int64)
    c_up = np.concatenate(([0], np.cumsum(up)))
    c_down = np.concatenate(([0], np.cumsum(down)))
    ell = np.arange(1, n + 1)
    weights = (up + down).astype(np.float64)
    if not np.any(weights > 0):
        raise ParameterError(f"{_OWNER}: bounds leave no room around the mean")
    chosen = exp_weighted_choice(weights, ell, Fraction(eps) / 2, size, source)
    w_up, w_down = up[chosen], down[chosen]
    go_up = uniform_below(w_up + w_down, source) < w_up
    width = np.where(go_up, w_up, w_down)
    start = np.where(go_up, c_up[chosen], c_down[chosen])
    offset = start + uniform_below(width, source)
    sgn = np.where(go_up, 1.0, -1.0)
    values = (total + sgn * (offset + 0.5)) * spacing / n
    return np.clip(values, lower, upper), ell[chosen].astype(np.int64)


def _check_mean_size(n: int, lower: float, upper: float) -> None:
    """The exact mean mechanism sums grid units in float64: ``n max(|lo|, |hi|) < 2**52``.

    Depends on ``n`` and the bounds only, so it is checked before anything is spent."""
    spacing = check_grid_bounds(_OWNER, lower, upper)
    top = max(abs(math.ceil(lower / spacing)), abs(math.floor(upper / spacing)))
    if n * top >= 2**52:
        raise ParameterError(
            f"{_OWNER}: too many records ({n}) for the exact mean mechanism with `bounds` "
            f"({lower!r}, {upper!r}): n times the bounds in grid units (2**-30 of the width) "
            "must stay below 2**52; narrow the bounds around 0 or use fewer records"
        )


def _check_grid(owner: str, grid: Any, lower: float, upper: float) -> np.ndarray:
    pts = check_finite_array(owner, "grid", grid, ndim=1)
    if pts.ndim != 1:
        raise ParameterError(f"{owner}: `grid` must be one-dimensional; got shape {pts.shape}")
    if pts.min() < lower or pts.max() > upper:
        raise ParameterError(
            f"{owner}: every `grid` point must lie inside bounds [{lower}, {upper}]; "
            f"got range [{pts.min()}, {pts.max()}]"
        )
    return np.unique(pts)


def inverse_sensitivity(
    data: Any,
    query: Any = "median",
    *,
    epsilon: float,
    bounds: tuple[float, float],
    grid: Any = None,
    percentile: float | None = None,
    relation: str = "unbounded",
    rng: Any = None,
    accountant: Any = None,
    support: Any = "continuous",
) -> Release:
    """Release a median or percentile with the inverse-sensitivity mechanism.

    Parameters
    ----------
    data : array_like
        Finite real values (one per person); clipped to ``bounds``.
    query : {"median", "percentile", "mean"}
        The statistic: a ``p``-quantile in the set-valued sense (module docstring; for the
        median, any point between the two middle values when ``n`` is even);
        ``percentile=`` gives ``p`` in [0, 100]. ``"mean"`` runs the continuous mechanism for
        the mean (``_mean_sample``; no ``grid``), private under replace-one neighbours only.
    epsilon : float
        Privacy parameter, finite and > 0.
    bounds : (float, float)
        Public ``(lower, upper)``, chosen without looking at the data.
    grid : array_like, optional
        A finite, data-independent set of candidate outputs inside the bounds. Without it
        the exact continuous mechanism runs (data and output on a grid of ``2**-30`` times
        the width).
    percentile : float, optional
        For ``query="percentile"``.
    relation : {"unbounded", "bounded"}
        The neighbour relation to report and spend under. Quantiles are ``epsilon``-DP under
        both, so either is honest (pick the accountant's); the mean only under ``"bounded"``
        (replace one record, ``n`` public): ``"unbounded"`` is refused for it.
    rng
        ``None`` (secure), an ``int`` seed or a bit source.
    accountant : optional
        Charged ``PureDP(epsilon)`` under ``relation`` before sampling.
    support : {"continuous", "auto"} or float
        The candidates' base measure (quantiles only). ``"continuous"`` (default): uniform on
        the bounds, as above; the output is a cell midpoint, so a value held by many records
        (integer ages) is never returned itself, only a point beside it. ``"auto"``: lattice
        points with atoms on every dyadic grid (integers, halves, ...), so tied values can be
        released exactly; a power-of-two resolution such as ``1.0`` (data known to be
        integers) makes those atoms much heavier. Data-independent in every case (see
        :mod:`dpkit.mechanisms.quantile_em`); same loss, same ``epsilon``.

    Returns
    -------
    Release
        ``value``, always within ``bounds`` (the candidates are); ``privacy =
        PureDP(epsilon)``; ``details``: ``statistic``, ``percentile``, ``spacing`` or
        ``grid_size``, ``range`` (the bounds: the public range of the statistic, as the other
        frameworks report it); the diagnostic ``loss`` (the sampled loss ``len(x; value)``),
        computed from the data: only ``value`` is private.

    Raises
    ------
    TypeError
        Non-numeric data or parameters.
    ParameterError
        ``epsilon <= 0`` or not finite, missing or inverted bounds, NaN/infinite or empty
        data, grid points outside the bounds, ``query="mean"`` with ``relation="unbounded"``.

    Privacy
    -------
    ``epsilon``-DP under both replace-one and add/remove neighbours for quantiles (module
    docstring; Asi and Duchi 2020 Proposition 2.1, McSherry and Talwar 2007 Theorem 6); for
    the mean under replace-one neighbours (``n`` public), where ``len`` is exactly the
    Hamming distance to the datasets of mean ``t``.

    Notes
    -----
    Continuous version: ``P[t in gap] ∝ length(gap) exp(-epsilon len / 2)`` then a uniform
    point of the gap, in ``O(n)``: selection (``numpy.partition``) on a window of order
    statistics around the target rank, and an exact envelope for the gaps outside it
    (:mod:`dpkit.frameworks._inverse_select`; the same law as sorting). Grid
    version: ``P[t] ∝ exp(-epsilon len(t) / 2)`` over the grid, ``O((n + m) log n)``.
    :func:`utility_bound` gives the high-probability error.

    References
    ----------
    H. Asi and J. Duchi. Instance-optimality in differential privacy via approximate inverse
    sensitivity mechanisms. NeurIPS 2020.

    Examples
    --------
    >>> rel = inverse_sensitivity(np.arange(101.0), "median", epsilon=1.0, bounds=(0, 100),
    ...                           rng=3)
    >>> round(rel.value, 3), rel.diagnostics["loss"], rel.privacy
    (50.377, 1, PureDP(epsilon=1.0))
    >>> inverse_sensitivity(np.arange(101.0), epsilon=1.0, bounds=(0, 100),
    ...                     grid=np.arange(0, 101, 5.0), rng=1).value
    55.0
    """
    eps = check_positive(_OWNER, "epsilon", epsilon)
    name, p = ("mean", 0.5) if _is_mean(query) else quantile_of(_OWNER, query, percentile)
    rel = check_relation(_OWNER, relation)
    if name == "mean" and rel != "bounded":
        raise ParameterError(
            f"{_OWNER}: `relation`={rel!r}: the inverse-sensitivity mean is private under "
            "replace-one neighbours "
            "only (the number of records public); pass relation='bounded' (and spend from an "
            "Accountant(..., relation='bounded'))"
        )
    lower, upper = check_bounds(_OWNER, bounds)
    arr = check_finite_array(_OWNER, "data", data, ndim=1)
    if grid is not None:
        _check_grid(_OWNER, grid, lower, upper)
    if support != "continuous":
        if name == "mean":
            raise ParameterError(f"{_OWNER}: `support` applies to the median and percentiles")
        if grid is not None:
            raise ParameterError(f"{_OWNER}: give either `grid` or a `support`, not both")
        try:
            Measure(QuantileLattice.for_bounds(_OWNER, lower, upper), support)
        except (ParameterError, TypeError) as exc:
            raise type(exc)(f"{_OWNER}: {exc}") from None
    elif grid is None:  # the exact continuous mechanism's grid: refused now, never after the spend
        check_grid_bounds(_OWNER, lower, upper)
        if name == "mean":
            _check_mean_size(arr.size, lower, upper)
    cost = PureDP(eps)
    source = as_source(rng)  # a bad `rng` is refused before the spend
    # the exponential mechanism with a score of sensitivity 1 at exp(-eps len / 2): each
    # output's log-probability moves within [-eps/2, eps/2] plus a common shift, so it is
    # eps-bounded-range (Durfee and Rogers 2019), which composes tighter than eps-DP
    spend(accountant, cost, _OWNER, rel, [ev.Exponential(epsilon=eps)])
    values, losses = inverse_sensitivity_sample(
        data,
        epsilon=eps,
        bounds=(lower, upper),
        query=name,
        percentile=p * 100 if name == "percentile" else None,
        grid=grid,
        size=1,
        rng=source,
        support=support,
    )
    details: dict[str, Any] = {"statistic": name, "range": (lower, upper)}
    if name != "mean":
        details["percentile"] = p * 100
    if support != "continuous":
        details["support"] = support
    if grid is None:
        details["spacing"] = grid_for_bounds(lower, upper)
    else:
        details["grid_size"] = int(np.unique(np.asarray(grid, dtype=float)).size)
    return Release(
        value=float(values[0]),
        mechanism="inverse_sensitivity",
        privacy=cost,
        details=details,
        # how many records separate the data from one whose statistic is the output: it
        # depends on the data beyond the (private) output, so it is not private
        diagnostics={"loss": int(losses[0])},
        relation=rel,
    )


def _modulus(xs: np.ndarray, p: float, k: int, lower: float, upper: float) -> float:
    """Largest distance from NumPy's percentile to a point of loss ``<= k``.

    Points of loss ``<= k`` lie in gaps ``q + frac - k .. q + k``, that is in
    ``[ext[q + frac - k], ext[q + k + 1]]`` (clamped to the data range and the bounds).
    """
    n = xs.size
    q, frac = _center(n, p)
    ext = np.concatenate(([lower], xs, [upper]))
    lo = float(ext[min(max(q + frac - k, 0), n + 1)])
    hi = float(ext[min(max(q + k + 1, 0), n + 1)])
    center = float(np.quantile(xs, p))
    return max(hi - center, center - lo, 0.0)


def _ceil_at_most(value: float, cap: int) -> int:
    """``min(ceil(value), cap)``, also for an infinite or NaN ``value`` (a tiny epsilon).

    :func:`_modulus` is the same for every loss level ``k >= n + 1`` (both ends clamp to
    the bounds), so capping at ``n + 2`` changes no bound and keeps ``ceil`` finite."""
    return math.ceil(value) if value < cap else cap


def utility_bound(
    data: Any,
    query: Any = "median",
    *,
    epsilon: float,
    bounds: tuple[float, float],
    beta: float = 0.05,
    grid: Any = None,
    percentile: float | None = None,
) -> float:
    """High-probability error bound of :func:`inverse_sensitivity` on this data.

    With probability at least ``1 - beta``, ``|release - f(x)| <= utility_bound(...)``.
    It reads the data: an analysis tool, **not** a private statistic.

    Parameters
    ----------
    data, query, epsilon, bounds, grid, percentile
        As for :func:`inverse_sensitivity`.
    beta : float
        Failure probability in (0, 1).

    Returns
    -------
    float
        The bound ``omega(K)``: the largest distance from NumPy's percentile of the clipped
        data to a point of loss at most ``K`` (a point ``k`` replacements away from being a
        quantile; beyond the data the bounds stand in), where ``K`` is the loss level
        exceeded with probability at most ``beta``.

    Notes
    -----
    *Finite grid of m points* (Asi and Duchi 2020, the finite-range utility theorem):
    ``P[len >= l_min + K'] <= m exp(-epsilon K' / 2)``, so with
    ``K = l_min + ceil((2/epsilon) log(m / beta)) - 1`` the loss is at most ``K``
    with probability ``1 - beta``.

    *Continuous version* (their continuous lemma): with ``q = exp(-epsilon/2)`` and
    ``Z = sum_l W_l q**l``, ``P[len >= K] <= (b - a) q**K / Z``; the smallest ``K`` with
    this below ``beta`` gives loss ``<= K - 1``. Any point of loss ``<= k`` lies in
    ``[x_(q+frac-k-1), x_(q+k)]``, whence the bound (plus half the output grid spacing).

    Examples
    --------
    >>> b = utility_bound(np.arange(101.0), epsilon=1.0, bounds=(0, 100), beta=0.05)
    >>> 0 < b < 20
    True
    """
    owner = "utility_bound"
    arr = check_finite_array(owner, "data", data, ndim=1)
    eps = check_positive(owner, "epsilon", epsilon)
    lower, upper = check_bounds(owner, bounds)
    _name, p = quantile_of(owner, query, percentile)
    b = check_positive(owner, "beta", beta)
    if b >= 1:
        raise ParameterError(f"{owner}: `beta` must be in (0, 1); got {beta!r}")
    xs = as_sorted(arr, lower, upper)
    if grid is not None:
        pts = _check_grid(owner, grid, lower, upper)
        losses = _point_loss(xs, pts, p)
        k = int(losses.min()) + _ceil_at_most(2 / eps * math.log(pts.size / b), xs.size + 2) - 1
        # the released grid point has loss <= k: within omega(k) of the percentile
        return _modulus(xs, p, max(k, 0), lower, upper)
    units, lo, hi, spacing = _units(xs, lower, upper)
    cls = _Classes(units, p, lo, hi)
    w = cls.weights * spacing
    ell = cls.ell.astype(np.float64)
    live = w > 0
    logz_terms = np.log(w[live]) - eps / 2 * ell[live]
    m = logz_terms.max()
    log_z = m + math.log(float(np.exp(logz_terms - m).sum()))
    big_k = _ceil_at_most(2 / eps * (math.log(upper - lower) - math.log(b) - log_z), xs.size + 2)
    k = max(big_k - 1, 0)
    # data rounded to the grid move the quantile by <= g/2; the cell midpoint by <= g/2
    return _modulus(xs, p, k, lower, upper) + spacing


def inverse_sensitivity_finite(
    data: Sequence[Any],
    func: Callable[[tuple[Any, ...]], Any],
    outputs: Sequence[Any],
    universe: Sequence[Any],
    *,
    epsilon: float,
    relation: str = "bounded",
    max_loss: int | None = None,
    max_datasets: int = 2_000_000,
    rng: Any = None,
) -> Release:
    """The inverse-sensitivity mechanism by brute force, for any function on tiny universes.

    The loss of an output ``t`` is the distance from ``data`` to the preimage
    ``{y : func(y) == t}`` in the neighbour graph of ``relation``, capped at ``max_loss``:
    ``len(x; t) = min(dist(x, func^-1(t)), C)``. It is found by enumerating the datasets drawn
    from ``universe`` (multisets of the same size for ``relation="bounded"``; for
    ``"unbounded"``, every non-empty multiset within distance ``C - 1`` of ``data``, of any
    size), nearest first. Then ``t`` is drawn from ``outputs`` with probability
    ``∝ exp(-epsilon len / 2)``. An oracle for tests and teaching: exponential cost.

    Parameters
    ----------
    data : sequence
        The dataset (its records must belong to ``universe``).
    func : callable
        Maps a sorted tuple of records to an output (compared with ``==``).
    outputs : sequence
        The finite output space, chosen without looking at the data.
    universe : sequence
        The possible records (at most 12 distinct).
    epsilon : float
        Finite and > 0.
    relation : {"bounded", "unbounded"}
        Replace-one (the size ``n`` public) or add/remove neighbours (the distance used for
        ``len``).
    max_loss : int >= 1, optional
        The public cap ``C``. Required for ``"unbounded"``, where datasets of every size count
        and the exact distance to some preimages is unbounded or far beyond any search; with
        ``"bounded"``, ``None`` (default) means no cap (every distance is at most ``n``).
    max_datasets : int
        Refuse, before any work, when the search would evaluate ``func`` on more datasets.
    rng
        ``None`` (secure), an ``int`` seed or a bit source.

    Returns
    -------
    Release
        ``value`` (one of ``outputs``); ``details``: ``relation`` and ``max_loss``;
        ``diagnostics["losses"]`` the tuple of ``len`` per output (``-1`` for an output no
        dataset of size ``n`` reaches, bounded and uncapped only) and ``diagnostics["loss"]``
        the sampled one (not private).

    Raises
    ------
    ParameterError
        Empty outputs, records outside the universe, more than 12 universe values, no
        reachable output (bounded, uncapped), bad epsilon, relation or max_loss, a missing
        ``max_loss`` with ``"unbounded"``, or a search larger than ``max_datasets``.

    Privacy
    -------
    ``epsilon``-DP under ``relation`` (Asi and Duchi 2020; McSherry and Talwar 2007,
    Theorem 6): the distance from ``x`` to a fixed set of datasets changes by at most one
    between neighbours (triangle inequality), and so does its minimum with a public constant
    ``C``; the loss is defined over every dataset of the relation's graph (every size for
    add/remove), never over a search range that depends on the data, so every output has the
    same support for neighbouring inputs: under add/remove every output has a loss of at most
    ``C``; under replace-one the outputs reachable by datasets of the public size ``n`` are
    the same for every input of that size.

    Examples
    --------
    >>> rel = inverse_sensitivity_finite([1, 2, 2], lambda x: x[len(x) // 2], [1, 2, 3],
    ...                                  [1, 2, 3], epsilon=1.0, rng=0)
    >>> rel.diagnostics["losses"]
    (1, 0, 2)
    >>> rel = inverse_sensitivity_finite([0], lambda x: sum(x) / len(x), [0, 1 / 3, 1],
    ...                                  [0, 1], epsilon=1.0, relation="unbounded",
    ...                                  max_loss=4, rng=0)
    >>> rel.diagnostics["losses"]
    (0, 2, 2)
    """
    owner = "inverse_sensitivity_finite"
    eps = check_positive(owner, "epsilon", epsilon)
    rel = check_relation(owner, relation)
    cap = _check_cap(owner, max_loss, rel)
    max_datasets = check_int(owner, "max_datasets", max_datasets, minimum=1)
    uni = sorted(set(universe))
    if not 1 <= len(uni) <= 12:
        raise ParameterError(f"{owner}: `universe` must hold 1 to 12 distinct values")
    outs = list(outputs)
    if not outs:
        raise ParameterError(f"{owner}: `outputs` is empty")
    x = sorted(data)
    if not x or any(v not in uni for v in x):
        raise ParameterError(f"{owner}: `data` must be non-empty with records from `universe`")
    if rel == "bounded":
        best = _bounded_losses(x, uni, func, outs, max_datasets, owner)
    else:
        best = _unbounded_losses(x, uni, func, outs, cap - 1, max_datasets, owner)
    if cap is not None:
        best = {j: min(best.get(j, cap), cap) for j in range(len(outs))}
    if not best:
        raise ParameterError(f"{owner}: no dataset from the universe reaches any output")
    losses = tuple(best.get(j, -1) for j in range(len(outs)))
    weights = np.array([1.0 if v >= 0 else 0.0 for v in losses])
    expo = np.array([max(v, 0) for v in losses], dtype=np.int64)
    idx = int(exp_weighted_choice(weights, expo, Fraction(eps) / 2, 1, as_source(rng))[0])
    return Release(
        value=outs[idx],
        mechanism="inverse_sensitivity_finite",
        privacy=PureDP(eps),
        details={"relation": rel, "max_loss": cap},
        diagnostics={"losses": losses, "loss": losses[idx]},
        relation=rel,
    )


def _check_cap(owner: str, max_loss: Any, relation: str) -> Any:
    if max_loss is None:
        if relation == "unbounded":
            raise ParameterError(
                f"{owner}: relation='unbounded' needs a public cap `max_loss` (an int >= 1): "
                "under add/remove, datasets of every size count, so the distance to an "
                "output's preimage can be arbitrarily large; the loss is min(distance, max_loss)"
            )
        return None
    if isinstance(max_loss, bool) or not isinstance(max_loss, int) or max_loss < 1:
        raise ParameterError(f"{owner}: `max_loss` must be an int >= 1; got {max_loss!r}")
    return int(max_loss)


def _record(best: dict[int, int], val: Any, outs: list[Any], dist: int) -> None:
    for j, t in enumerate(outs):
        if val == t and dist < best.get(j, 1 << 62):
            best[j] = dist


def _bounded_losses(
    x: list[Any], uni: list[Any], func: Any, outs: list[Any], limit: int, owner: str
) -> dict[int, int]:
    """Distances to every reached output over all multisets of size ``n`` (replace-one)."""
    n = len(x)
    total = math.comb(len(uni) + n - 1, n)
    if total > limit:
        raise ParameterError(
            f"{owner}: the search covers {total} datasets, more than max_datasets={limit}"
        )
    counts = {v: x.count(v) for v in uni}
    best: dict[int, int] = {}
    for cand in itertools.combinations_with_replacement(uni, n):
        common = sum(min(counts[v], cand.count(v)) for v in uni)
        _record(best, func(cand), outs, n - common)
    return best


def _sub_multisets(counts: list[int], size: int) -> Iterator[tuple[int, ...]]:
    """Every vector ``r`` with ``0 <= r[i] <= counts[i]`` summing to ``size``."""
    if not counts:
        if size == 0:
            yield ()
        return
    head, rest = counts[0], counts[1:]
    for take in range(min(head, size) + 1):
        for tail in _sub_multisets(rest, size - take):
            yield (take, *tail)


def _unbounded_losses(
    x: list[Any],
    uni: list[Any],
    func: Any,
    outs: list[Any],
    radius: int,
    limit: int,
    owner: str,
) -> dict[int, int]:
    """Exact distances up to ``radius`` (add/remove), nearest datasets first.

    Every dataset within ``radius`` of ``x`` is ``x`` minus a sub-multiset ``R`` plus a
    multiset ``A`` with no value in both (a common value would cancel), at distance
    ``|R| + |A|``; the empty dataset is no dataset.
    """
    n = len(x)
    counts = [x.count(v) for v in uni]
    # how many sub-multisets of each size: coefficients of prod_v (1 + z + ... + z^c_v)
    subs = [1]
    for c in counts:
        subs = [
            sum(subs[i - t] for t in range(c + 1) if 0 <= i - t < len(subs))
            for i in range(len(subs) + c)
        ]
    total = sum(
        subs[r] * math.comb(len(uni) + k - r - 1, k - r)
        for k in range(radius + 1)
        for r in range(min(k, n) + 1)
    )
    if total > limit:
        raise ParameterError(
            f"{owner}: the search within distance max_loss - 1 = {radius} covers up to {total} "
            f"datasets, more than max_datasets={limit}; lower max_loss or the universe"
        )
    best: dict[int, int] = {}
    for k in range(radius + 1):
        for r in range(min(k, n) + 1):
            for rem in _sub_multisets(counts, r):
                kept = [c - t for c, t in zip(counts, rem, strict=True)]
                for add in itertools.combinations_with_replacement(range(len(uni)), k - r):
                    if any(rem[i] for i in add):
                        continue  # removing and adding the same value: a shorter path exists
                    new = list(kept)
                    for i in add:
                        new[i] += 1
                    if not any(new):
                        continue
                    cand = tuple(v for v, c in zip(uni, new, strict=True) for _ in range(c))
                    _record(best, func(cand), outs, k)
        if len(best) == len(outs):
            break  # every output found at its exact distance
    return best
