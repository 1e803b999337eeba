"""Private quantiles: one level or many in one mechanism, from arrays or compact summaries.

:func:`quantiles_from_counts` is the per-group entry point the Session calls (engines hand it
``points`` and ``counts``); :func:`quantiles`, :func:`quantile` and :func:`median` take arrays.
All return a :class:`QuantileRelease`: the released values (sorted, one per level), value and
rank intervals at ``1 - alpha``, the method, the privacy cost and the neighbour relation.

The mechanism, in three stages composed sequentially (one ``epsilon`` in total):

1. **Quantiles** (``(1 - interval_share) epsilon``): the exponential mechanism over a
   power-of-two lattice with a support-aware base measure (:mod:`dpkit.mechanisms.quantile_em`:
   ``support="auto"`` releases tied values, such as integer ages, exactly; with a resolution
   support such as ``1.0``, every method's points are then moved onto that grid by
   :func:`on_support`, post-processing, so an integer column comes back on the integers). One
   level: one
   draw with the tie-aware rank distance ``d`` and sensitivity ``max(q, 1 - q)``. Several
   levels: ApproximateQuantiles (``method="aq"``, Kaplan, Schnapp and Stemmer 2022; some of
   its nodes release two levels by one tie-aware draw with a JointExp-style score whose
   record count is a free total, so its sensitivity is 1 whatever the levels, which shortens
   the tree: :mod:`dpkit.statistics._approximate`) by default,
   JointExp (``method="joint"``, Gillenwater, Joseph and Kulesza 2021, sampled exactly by
   :mod:`dpkit.statistics._joint`) or independent draws at ``epsilon / m`` each
   (``method="independent"``).
2. **Helpers** and 3. **noisy cell counts** (``interval_share * epsilon``): see
   :mod:`dpkit.statistics._intervals`; they certify the intervals by post-processing.

``method="cdf"`` is one stage instead: a discrete-Laplace histogram on a small public grid
(:mod:`dpkit.statistics.cdf`), every quantile and interval read from it.

Which method runs is decided from public inputs only (:func:`quantile_method`: the levels,
the bounds, the support and the requested method), and what each stage is, by
:func:`quantile_stages`: the quantile values and the helpers are exponential mechanisms
(epsilon-bounded range, so ``epsilon**2 / 8``-zCDP: Cesar and Rogers 2021), the histogram of
``"cdf"`` and the interval stage's cell counts are discrete Laplace noise (pure epsilon-DP,
only ``epsilon**2 / 2``-zCDP: Bun and Steinke 2016). A caller accounting under zCDP (the
Session) gives each stage its own epsilon by that rule and passes a :class:`QuantileSpend`.

Privacy: pure ``epsilon``-DP under add/remove of one record (``relation="unbounded"``); since
replacing a record is a removal and an addition, ``2 epsilon`` under replace-one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from types import MappingProxyType
from typing import Any

import numpy as np

from dpkit._validate import check_bounds, check_choice, check_number, check_positive, is_real
from dpkit.accounting.events import Event
from dpkit.accounting.guard import approx_event, exponential_event, laplace_event, spend
from dpkit.accounting.loss import PureDP
from dpkit.errors import ParameterError
from dpkit.mechanisms.quantile_em import SUPPORTS, Counts, Measure, QuantileLattice
from dpkit.mechanisms.quantile_view import draw_view_many, root_view
from dpkit.samplers import MAX_NOISE_SCALE, BitSource, as_source
from dpkit.statistics._approximate import (
    approximate_quantiles,
    draw_target,
    independent_quantiles,
    path_epsilons,
    tree_height,
)
from dpkit.statistics._input import (
    as_rational_level,
    check_alpha,
    check_levels,
    counts_from_data,
    counts_from_summary,
    record_array,
    series_like,
)
from dpkit.statistics._intervals import helper_offset, interval_stage
from dpkit.statistics._joint import joint_exp, joint_exp_samples
from dpkit.statistics.cdf import MAX_GRID, cdf_grid, cdf_quantiles

__all__ = [
    "METHODS",
    "RESOLVED_METHODS",
    "QuantileRelease",
    "QuantileSpend",
    "QuantileStage",
    "median",
    "quantile",
    "quantile_events",
    "quantile_method",
    "quantile_samples",
    "quantile_stages",
    "quantiles",
    "quantiles_from_counts",
    "quantiles_samples",
]

METHODS = ("auto", "aq", "joint", "independent", "cdf")
#: What a release runs once ``"auto"`` is resolved (``"exponential"``: one level, one draw).
RESOLVED_METHODS = ("exponential", "aq", "joint", "independent", "cdf")
#: Part of the interval budget spent on helpers (the rest on the noisy cell counts).
HELPER_SHARE = Fraction(1, 3)
#: Stage kinds: exponential mechanisms (bounded range) and discrete Laplace noise (pure DP).
EXPONENTIAL = "exponential"
LAPLACE = "laplace"


def _is_integer_typed(data: Any, arr: np.ndarray) -> bool:
    """Whether the column's *type* is integer (schema, public), not whether its values are:
    ``data`` has a dtype (an ndarray, a pandas or polars Series; a list has none) and its
    NumPy form ``arr`` (:func:`record_array`) has an integer one (polars' and pandas'
    own integer types read as NumPy's int64)."""
    return getattr(data, "dtype", None) is not None and arr.dtype.kind in "iu"


def on_support(measure: Measure, points: Any) -> np.ndarray:
    """Released lattice points moved to the nearest point of a resolution support's grid
    inside the bounds (halves up; int64, same shape), unchanged for ``"auto"`` and
    ``"continuous"``.

    Post-processing of the mechanism's output, so free. It never worsens the tie-aware rank
    error on data that lies on the grid: between two neighbouring grid points ``a < b`` no
    record lies strictly inside, so a point ``t`` in ``(a, b)`` has ``#{x < t} = #{x <= a}
    = #{x < b}``, which lies in the tie-aware rank ranges ``[#{x < a}, #{x <= a}]`` of ``a``
    and ``[#{x < b}, #{x <= b}]`` of ``b``. It makes every method (JointExp's
    tie-unaware score included, whose gap points carry half the mass) release an integer
    column on the integers."""
    arr = np.asarray(points, dtype=np.int64)
    if isinstance(measure.support, str) or not measure.levels:
        return arr
    step = 1 << measure.levels[0][0]
    lat = measure.lattice
    first = -((-lat.lo) // step) * step  # the grid points inside the bounds
    last = (lat.hi // step) * step
    if first > last:
        return arr
    return np.clip(np.floor_divide(arr + step // 2, step) * step, first, last)


def _frozen(arr: np.ndarray) -> np.ndarray:
    out = np.array(arr, dtype=np.float64)
    out.setflags(write=False)
    return out


@dataclass(frozen=True, slots=True)
class QuantileRelease:
    """Privately released quantiles with their intervals.

    Attributes
    ----------
    levels : tuple of float
        The levels asked for, increasing, in (0, 1).
    values : numpy.ndarray
        The released quantiles, one per level, sorted (read-only float64).
    value_intervals : numpy.ndarray or None
        Shape ``(m, 2)``: ``[low, high]`` per level. With probability at least ``1 - alpha``,
        *simultaneously for every level* (and jointly with ``rank_intervals``), each interval
        contains every rank quantile of level ``q`` of the records ``x`` clipped to the bounds:
        every ``t`` with ``#{x < t} <= q n <= #{x <= t}``, that is ``x_(ceil(q n))`` (the
        order statistic; NumPy's ``method="inverted_cdf"``), or the segment
        ``[x_(k), x_(k + 1)]`` when ``q n = k`` is an integer. NumPy's default
        ``"linear"`` value can lie outside (in an empty gap between two records: see
        :mod:`dpkit.statistics._intervals`). Conservative (valid for every data set and
        method); clipping bias is not included. ``None`` when ``intervals=False``.
    rank_intervals : numpy.ndarray or None
        Shape ``(m, 2)``: bounds on the fraction of records strictly below each released value,
        ``#{x < value} / n``. One union bound covers the statements behind both kinds of
        interval, so value and rank intervals all hold together with probability at least
        ``1 - alpha``.
    method : str
        ``"exponential"`` (one level), ``"aq"``, ``"joint"``, ``"independent"`` or ``"cdf"``.
    privacy : PureDP
        The cost of the whole release (``PureDP(epsilon)``).
    relation : str
        ``"unbounded"``: the guarantee is for adding or removing one record.
    alpha : float
        The intervals' error probability.
    support : str or float
        The base measure used: ``"auto"`` (dyadic atoms), ``"continuous"``, or a resolution
        (``1.0`` on an integer-typed column when ``"auto"`` was asked for).
    details : Mapping
        Public figures: the budget split, the lattice spacing, the helper offset, the released
        helper values, the noisy record count and noisy cell counts (all DP outputs or public
        parameters; read-only).
    """

    levels: tuple[float, ...]
    values: np.ndarray
    value_intervals: np.ndarray | None
    rank_intervals: np.ndarray | None
    method: str
    privacy: PureDP
    relation: str = "unbounded"
    alpha: float = 0.05
    support: str = "auto"
    details: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "values", _frozen(self.values))
        for name in ("value_intervals", "rank_intervals"):
            arr = getattr(self, name)
            if arr is not None:
                object.__setattr__(self, name, _frozen(arr))
        object.__setattr__(self, "details", MappingProxyType(dict(self.details)))

    @property
    def value(self) -> float:
        """The released value of a single-level release."""
        if len(self.levels) != 1:
            raise ParameterError(
                f"QuantileRelease.value: {len(self.levels)} levels were released; use `values`"
            )
        return float(self.values[0])

    def __repr__(self) -> str:
        vals = ", ".join(f"{v:.6g}" for v in self.values)
        return (
            f"QuantileRelease(levels={self.levels}, values=[{vals}], method={self.method!r}, "
            f"privacy={self.privacy!r}, relation={self.relation!r})"
        )


@dataclass(frozen=True, slots=True)
class QuantileStage:
    """One stage of a quantile release and what kind of mechanism it is.

    Attributes
    ----------
    name : str
        ``"histogram"`` (``method="cdf"``: the noisy histogram), ``"quantiles"`` (the values,
        by exponential mechanisms), ``"helpers"`` (the interval stage's helper order
        statistics) or ``"counts"`` (the interval stage's noisy cell counts).
    share : Fraction
        Its share of the release's ``epsilon`` under pure accounting (the shares sum to 1).
    kind : str
        ``"exponential"``: exponential mechanisms, composed (ApproximateQuantiles' tree,
        independent draws, the helpers of disjoint cells); at ``epsilon`` in total they are
        ``epsilon``-bounded range, hence ``epsilon**2 / 8``-zCDP (Cesar and Rogers 2021,
        :func:`dpkit.accounting.bounded_range_to_zcdp`). ``"laplace"``: discrete Laplace
        noise on counts of L1 sensitivity 1: pure ``epsilon``-DP, which is only
        ``epsilon**2 / 2``-zCDP (Bun and Steinke 2016, Proposition 1.4).
    """

    name: str
    share: Fraction
    kind: str

    @property
    def zcdp_divisor(self) -> int:
        """``d`` in ``rho = epsilon**2 / d``: the zCDP of this stage at ``epsilon``."""
        return 8 if self.kind == EXPONENTIAL else 2


def quantile_stages(method: str, interval_share: float = 0.25) -> tuple[QuantileStage, ...]:
    """The stages a release by ``method`` runs, with their shares and kinds.

    Parameters
    ----------
    method : str
        A resolved method (:data:`RESOLVED_METHODS`; see :func:`quantile_method`).
    interval_share : float
        In ``[0, 1)``: the share of epsilon spent on intervals (``0``: no interval stage).
        Ignored by ``"cdf"``, whose intervals come from its histogram.

    Returns
    -------
    tuple of QuantileStage
        ``("histogram",)`` for ``"cdf"``; ``("quantiles",)`` without an interval share;
        ``("quantiles", "helpers", "counts")`` with shares ``1 - s``, ``s / 3`` and
        ``2 s / 3``.

    Raises
    ------
    ParameterError
        An unknown method or an interval share outside ``[0, 1)``.

    Examples
    --------
    >>> for st in quantile_stages("aq", 0.25):
    ...     print(st.name, st.share, st.kind)
    quantiles 3/4 exponential
    helpers 1/12 exponential
    counts 1/6 laplace
    >>> [(st.name, st.kind) for st in quantile_stages("cdf")]
    [('histogram', 'laplace')]
    """
    owner = "quantile_stages"
    method = check_choice(owner, "method", method, RESOLVED_METHODS)
    share = Fraction(check_number(owner, "interval_share", interval_share))
    if not 0 <= share < 1:
        raise ParameterError(f"{owner}: `interval_share` must be in [0, 1); got {interval_share!r}")
    if method == "cdf":
        return (QuantileStage("histogram", Fraction(1), LAPLACE),)
    values = QuantileStage("quantiles", 1 - share, EXPONENTIAL)
    if share == 0:
        return (values,)
    return (
        values,
        QuantileStage("helpers", share * HELPER_SHARE, EXPONENTIAL),
        QuantileStage("counts", share * (1 - HELPER_SHARE), LAPLACE),
    )


@dataclass(frozen=True, slots=True)
class QuantileSpend:
    """What one quantile release runs and spends, stage by stage (public figures only).

    Attributes
    ----------
    method : str
        The resolved method (:data:`RESOLVED_METHODS`).
    stages : tuple of QuantileStage
        :func:`quantile_stages` of ``method``.
    epsilons : tuple of Fraction
        Each stage's epsilon per record, in the order of ``stages``, each ``> 0``.
    """

    method: str
    stages: tuple[QuantileStage, ...]
    epsilons: tuple[Fraction, ...]

    def epsilon(self, name: str) -> Fraction:
        """The epsilon of stage ``name`` (0 when the release has no such stage).

        Parameters
        ----------
        name : str
            A stage name (:class:`QuantileStage`).

        Returns
        -------
        Fraction

        Raises
        ------
        Nothing.
        """
        for st, eps in zip(self.stages, self.epsilons, strict=True):
            if st.name == name:
                return eps
        return Fraction(0)

    @property
    def total(self) -> Fraction:
        """The pure epsilon of the whole release (sequential composition of the stages)."""
        return sum(self.epsilons, Fraction(0))


def quantile_events(spend: QuantileSpend, levels: int) -> list[Event]:
    """What a release of ``levels`` levels by ``spend`` is, stage by stage, for accounting.

    * ``"cdf"``'s histogram, the interval stage's cell counts: discrete Laplace noise of
      scale ``1 / epsilon`` on counts one record moves by one (sensitivity 1 step).
    * One level, ``"joint"``: one exponential mechanism of a sensitivity-bounded score.
    * ``"independent"``: ``levels`` exponential mechanisms at ``epsilon / levels``.
    * ``"aq"``: the exponential mechanisms on one record's path through the tree
      (:func:`~dpkit.statistics._approximate.path_epsilons`); where paths differ, the draws
      they share, then ``Approx`` of the rest: no one sequence describes every path.
    * The helpers: in each cell (disjoint records) one exponential mechanism, or two drawn
      independently at half the stage's epsilon, whose losses lie in intervals of width
      ``epsilon / 2`` each: together ``epsilon``-bounded range, one exponential event.

    Examples
    --------
    >>> [type(e).__name__ for e in quantile_events(pure_spend("aq", 1.0, 0.25), 3)]
    ['Exponential', 'Exponential', 'Exponential', 'Laplace']
    """
    out: list[Event] = []
    for st, eps in zip(spend.stages, spend.epsilons, strict=True):
        if eps == 0:
            continue
        if st.kind == LAPLACE:
            out.append(laplace_event(1 / eps, 1))
        elif st.name == "helpers" or spend.method == "joint":
            out.append(exponential_event(eps))
        elif spend.method == "independent":
            out.extend(exponential_event(eps / levels) for _ in range(levels))
        else:
            path, rest = path_epsilons(levels, eps)
            out.extend(exponential_event(e) for e in path)
            if rest > 0:  # branches spend the rest in different draws: pure DP alone
                out.append(approx_event(rest))
    return out


def pure_spend(method: str, epsilon: float, interval_share: float) -> QuantileSpend:
    """The stages of ``method`` at ``epsilon`` in total under pure accounting: each stage
    gets its share of ``epsilon``, exactly (``Fraction(epsilon) * share``)."""
    stages = quantile_stages(method, interval_share)
    return QuantileSpend(method, stages, tuple(Fraction(epsilon) * st.share for st in stages))


def resolve_method(method: str, levels: int, measure: Measure) -> str:
    """The method a release of ``levels`` levels runs (public inputs only): ``"auto"`` is
    one draw for one level, else ``"cdf"`` when the support is a resolution with a small
    grid (:func:`~dpkit.statistics.cdf.cdf_grid`), else ``"aq"``; one level turns ``"aq"``
    and ``"independent"`` into one draw. Resolved names map to themselves."""
    if method == "auto":
        if levels > 1:
            return "cdf" if cdf_grid(measure) is not None else "aq"
        return "exponential"
    if levels == 1 and method not in ("joint", "cdf"):
        return "exponential"
    return method


def quantile_method(
    levels: Any,
    *,
    bounds: tuple[float, float],
    method: str = "auto",
    support: str | float = "auto",
    integer_dtype: bool = False,
) -> str:
    """The method :func:`quantiles_from_counts` (or :func:`quantiles`) runs, from public inputs.

    The one rule both the release and any caller that must account for it before the spend
    (the Session's plan) use, so they cannot disagree.

    Parameters
    ----------
    levels, bounds, method, support
        As for :func:`quantiles_from_counts`.
    integer_dtype : bool
        The column's *type* is integer (a schema fact): ``support="auto"`` then means
        resolution 1, as :func:`quantiles` reads an integer dtype.

    Returns
    -------
    str
        One of :data:`RESOLVED_METHODS`.

    Raises
    ------
    TypeError, ParameterError
        Bad levels, bounds, method or support; ``method="cdf"`` without a small grid.

    Examples
    --------
    >>> quantile_method([0.25, 0.5, 0.75], bounds=(0, 100), support=1.0)
    'cdf'
    >>> quantile_method([0.25, 0.5, 0.75], bounds=(0, 100))
    'aq'
    >>> quantile_method(0.5, bounds=(0, 100), support=1.0)
    'exponential'
    """
    owner = "quantile_method"
    lv, _scalar = check_levels(owner, levels)
    lower, upper = check_bounds(owner, bounds)
    meth = check_choice(owner, "method", method, METHODS)
    _check_support(owner, support)
    if not isinstance(integer_dtype, bool):
        raise TypeError(f"{owner}: `integer_dtype` must be True or False; got {integer_dtype!r}")
    measure = _measure(
        owner, QuantileLattice.for_bounds(owner, lower, upper), support, integer_dtype, meth
    )
    return resolve_method(meth, len(lv), measure)


def check_spend(owner: str, spend: Any, levels: int, measure: Measure) -> None:
    """Refuse, before anything is spent, a :class:`QuantileSpend` that this release cannot
    run as given: a method that is not what :func:`resolve_method` makes of itself for
    ``levels`` levels (or ``"cdf"`` without a small grid), stages other than
    :func:`quantile_stages`' (with or without the interval stage), an epsilon that is not
    ``> 0``, or discrete Laplace noise beyond the exact sampler's range (``2**50``)."""
    if not isinstance(spend, QuantileSpend):
        raise TypeError(f"{owner}: `spend` must be a QuantileSpend; got {type(spend).__name__}")
    method = spend.method
    if (
        method not in RESOLVED_METHODS
        or resolve_method(method, levels, measure) != method
        or (method == "exponential" and levels > 1)
    ):
        raise ParameterError(f"{owner}: method {method!r} does not run {levels} level(s)")
    if method == "cdf" and cdf_grid(measure) is None:
        raise ParameterError(
            f"{owner}: method='cdf' needs a power-of-two resolution `support` (such as 1.0) "
            f"with at most {MAX_GRID} grid points inside the bounds"
        )
    names = tuple(st.name for st in spend.stages)
    allowed = {tuple(st.name for st in quantile_stages(method, s)) for s in (0.0, 0.5)}
    if names not in allowed or len(spend.epsilons) != len(names):
        raise ParameterError(f"{owner}: stages {names} are not those of method {method!r}")
    for st, eps in zip(spend.stages, spend.epsilons, strict=True):
        if not isinstance(eps, Fraction) or not 0 < eps < float("inf"):
            raise ParameterError(
                f"{owner}: `epsilon` is too small: the {st.name!r} stage's share of it "
                f"rounds to {float(eps):.3g}; raise epsilon"
            )
        if st.kind == LAPLACE and 1 / eps > MAX_NOISE_SCALE:
            raise ParameterError(
                f"{owner}: `epsilon` is too small ({float(eps):.3g} for the {st.name!r} "
                "stage): its discrete Laplace noise would exceed 2**50, the exact sampler's "
                "range; raise epsilon"
            )


def _check_support(owner: str, support: Any) -> None:
    if isinstance(support, str):
        if support not in SUPPORTS:
            raise ParameterError(
                f"{owner}: `support` must be one of {SUPPORTS} or a power-of-two resolution "
                f"such as 1.0; got {support!r}"
            )
    elif not is_real(support):  # bool, complex and time deltas are not resolutions
        raise TypeError(
            f"{owner}: `support` must be 'auto', 'continuous' or a resolution such as 1.0; "
            f"got {type(support).__name__}"
        )


def _measure(
    owner: str, lattice: QuantileLattice, support: Any, integer_dtype: bool, method: str = "auto"
) -> Measure:
    """The base measure; ``"auto"`` on an integer-typed column means resolution 1.

    ``method="cdf"`` without a small public grid is refused here, before any spend."""
    width = lattice.upper - lattice.lower
    if support == "auto" and integer_dtype and lattice.spacing <= 1 <= width:
        support = 1.0
    try:
        measure = Measure(lattice, support)
    except (ParameterError, TypeError) as exc:
        raise type(exc)(f"{owner}: {exc}") from None
    if method == "cdf" and cdf_grid(measure) is None:
        raise ParameterError(
            f"{owner}: method='cdf' needs a power-of-two resolution `support` (such as 1.0) "
            f"with at most {MAX_GRID} grid points inside the bounds"
        )
    return measure


def _check_common(
    owner: str,
    levels: Any,
    epsilon: Any,
    bounds: Any,
    method: Any,
    support: Any,
    alpha: Any,
    intervals: Any,
    interval_share: Any,
) -> tuple[tuple[float, ...], float, tuple[float, float], str, float, float]:
    lv, _scalar = check_levels(owner, levels)
    eps = check_positive(owner, "epsilon", epsilon)
    lower, upper = check_bounds(owner, bounds)
    method = check_choice(owner, "method", method, METHODS)
    _check_support(owner, support)
    a = check_alpha(owner, alpha)
    if not isinstance(intervals, bool):
        raise TypeError(f"{owner}: `intervals` must be True or False; got {intervals!r}")
    share = check_number(owner, "interval_share", interval_share)
    if intervals and not 0 < share < 1:
        raise ParameterError(f"{owner}: `interval_share` must be in (0, 1); got {share!r}")
    check_noise_range(owner, eps, share if intervals else 0.0)
    return lv, eps, (lower, upper), method, a, share if intervals else 0.0


def check_noise_range(owner: str, epsilon: float, interval_share: float) -> None:
    """The discrete Laplace noise of the histogram (method 'cdf', scale ``1 / epsilon``) and
    of the interval stage's counts (scale ``1 / (epsilon share (1 - HELPER_SHARE))``) are
    within the exact sampler's range: a ParameterError naming epsilon otherwise. Callers
    (the Session too) check it before anything is spent."""
    share = Fraction(interval_share)
    smallest = Fraction(epsilon) * (share * (1 - HELPER_SHARE) if share > 0 else 1)
    if smallest == 0 or 1 / smallest > MAX_NOISE_SCALE:
        what = "`epsilon` times `interval_share`" if share > 0 else "`epsilon`"
        raise ParameterError(
            f"{owner}: {what} is too small ({float(smallest):.3g} for the noisy counts): "
            "their discrete Laplace noise would exceed 2**50, the exact sampler's range; "
            "raise epsilon (or interval_share, or pass intervals=False)"
        )


def _release(
    owner: str,
    counts: Counts,
    measure: Measure,
    levels: tuple[float, ...],
    spend: QuantileSpend,
    alpha: float,
    source: Any,
    snap: bool = True,
) -> QuantileRelease:
    """Stages 1-3 (module docstring) on validated inputs and a bit source (callers normalise
    ``rng`` with :func:`dpkit.samplers.as_source` before the spend); the budget is spent.
    ``spend`` says which method runs (resolved, :func:`resolve_method`) and each stage's
    epsilon; without a ``"counts"`` stage no interval is released. ``snap=False`` keeps the
    mechanism's own points (no :func:`on_support`): the raw draws the batched samplers
    return for law tests."""
    rational = [as_rational_level(q) for q in levels]
    m = len(levels)
    method = spend.method
    if method == "cdf":
        return _cdf_release(counts, measure, levels, spend, alpha, source)
    eps_points = spend.epsilon("quantiles")
    eps_helpers, eps_counts = spend.epsilon("helpers"), spend.epsilon("counts")
    if method == "independent":
        points = independent_quantiles(counts, measure, rational, eps_points, source)
        depth = m
    elif method == "joint":
        points = joint_exp(counts, measure, rational, eps_points, source)
        depth = 1
    else:
        points = approximate_quantiles(counts, measure, rational, eps_points, source)
        depth = tree_height(m)
    if snap:
        points = on_support(measure, points).tolist()
    lat = counts.lattice
    details: dict[str, Any] = {
        "epsilon_quantiles": float(eps_points),
        "spacing": lat.spacing,
        "depth": depth,
    }
    value_iv = rank_iv = None
    if eps_counts > 0:
        offset = helper_offset(
            float(eps_points), float(eps_helpers), float(eps_counts), m, depth, alpha
        )
        stage = interval_stage(
            counts,
            measure,
            points,
            levels,
            offset=offset,
            epsilon_helpers=eps_helpers,
            epsilon_counts=eps_counts,
            alpha=alpha,
            source=source,
        )
        value_iv = np.column_stack((stage.low, stage.high))
        rank_iv = np.column_stack((stage.rank_low, stage.rank_high))
        details.update(
            epsilon_helpers=float(eps_helpers),
            epsilon_counts=float(eps_counts),
            helper_offset=offset,
            released_points=tuple(lat.values(stage.released).tolist()),
            noisy_cell_counts=tuple(int(c) for c in stage.noisy_cells),
            noisy_n=stage.noisy_n,
        )
    return QuantileRelease(
        levels=levels,
        values=lat.values(np.array(points, dtype=np.int64)),
        value_intervals=value_iv,
        rank_intervals=rank_iv,
        method=method,
        privacy=PureDP(_float_up(spend.total)),
        relation="unbounded",
        alpha=alpha,
        support=measure.support,
        details=details,
    )


def _float_up(x: Fraction) -> float:
    """The smallest float ``>= x`` (a reported epsilon is never below the true one)."""
    out = float(x)
    return math.nextafter(out, math.inf) if Fraction(out) < x else out


def _cdf_release(
    counts: Counts,
    measure: Measure,
    levels: tuple[float, ...],
    spend: QuantileSpend,
    alpha: float,
    source: Any,
) -> QuantileRelease:
    """The noisy-histogram method (:mod:`dpkit.statistics.cdf`): intervals come free
    (the grid was checked before the spend)."""
    eps = spend.epsilon("histogram")
    rel = cdf_quantiles(counts, measure, levels, eps, alpha, source)
    lat = counts.lattice
    return QuantileRelease(
        levels=levels,
        values=lat.values(np.array(rel.points, dtype=np.int64)),
        value_intervals=np.column_stack((rel.low, rel.high)),
        rank_intervals=np.column_stack((rel.rank_low, rel.rank_high)),
        method="cdf",
        privacy=PureDP(_float_up(spend.total)),
        relation="unbounded",
        alpha=alpha,
        support=measure.support,
        details={
            "epsilon_histogram": float(eps),
            "grid": (
                float(lat.values(np.array([rel.grid[0]]))[0]),
                rel.grid[1] * lat.spacing,
                rel.grid[2],
            ),
            "noisy_histogram": tuple(int(v) for v in rel.noisy),
        },
    )


def quantiles_from_counts(
    points: Any,
    counts: Any,
    levels: Any,
    *,
    epsilon: float,
    bounds: tuple[float, float],
    method: str = "auto",
    alpha: float = 0.05,
    rng: Any = None,
    support: str | float = "auto",
    intervals: bool = True,
    interval_share: float = 0.25,
    accountant: Any = None,
) -> QuantileRelease:
    """Release quantiles of a compact summary ``(points, counts)`` in one mechanism.

    Parameters
    ----------
    points : array_like
        Sorted distinct finite values (for example the lattice points an engine grouped the
        records on); values outside ``bounds`` count at the nearer bound.
    counts : array_like of int
        Multiplicities ``>= 0`` of ``points`` (same shape). An all-zero summary is released
        like any other: an empty group's output is noise, and no error reveals it.
    levels : float or sequence of float
        One level or several, each in (0, 1), strictly increasing (0.5 is the median).
    epsilon : float
        Privacy cost of the whole call, finite and > 0.
    bounds : (float, float)
        Public ``(lower, upper)`` chosen without looking at the data.
    method : {"auto", "aq", "joint", "independent", "cdf"}
        ``"auto"``: one draw for one level; for several, ``"cdf"`` when ``support`` is a
        resolution with at most 4096 grid points in the bounds (an integer column), else
        ApproximateQuantiles (Kaplan, Schnapp and Stemmer 2022, with two-level nodes where
        they shorten the tree). ``"cdf"``: one noisy
        histogram on the grid, every quantile and its interval read from it (ties cost
        nothing; intervals come free, ``interval_share`` is not spent). ``"joint"``: JointExp
        (Gillenwater, Joseph and Kulesza 2021), one exponential mechanism over all outputs,
        sampled exactly (a little more accurate than ``"aq"`` on continuous data, 10-100
        times slower; not tie-aware; it runs at ``min(epsilon, 1e4)``, exact to within
        ``exp(-2500)`` per rank there, so any larger epsilon works and is charged as given).
        ``"independent"``: one draw per level at ``epsilon / m`` each.
    alpha : float
        Error probability of the intervals, in (0, 1).
    rng
        ``None`` (secure), an ``int`` seed or a bit source.
    support : "auto", "continuous" or float
        The base measure of the exponential mechanism (never read from the data):
        ``"auto"`` puts atoms on every dyadic grid so tied values (integers, halves, ...) can
        be released exactly; a power-of-two resolution such as ``1.0`` (the column is known
        to hold integers, for example from its type) puts strong atoms on that grid only,
        and the released values of every method are moved to the nearest grid point inside
        the bounds (post-processing; on data on the grid this never worsens the tie-aware
        rank error);
        ``"continuous"`` is the lattice version of Smith's interval mechanism. The array
        functions read an integer *dtype* as resolution 1 under ``"auto"`` (a schema fact).
    intervals : bool
        Spend ``interval_share`` of ``epsilon`` on the interval stage (default). With
        ``False`` every bit of ``epsilon`` goes to the quantiles and no interval is given.
    interval_share : float
        The share in (0, 1) spent on intervals (a third on helpers, two thirds on counts).
    accountant : optional
        Charged ``PureDP(epsilon)`` before anything is drawn.

    Returns
    -------
    QuantileRelease

    Raises
    ------
    TypeError
        Non-numeric points, counts, levels or parameters; bool values; masked arrays.
    ParameterError
        Levels outside (0, 1), unsorted or repeated; unsorted or repeated points; negative or
        fractional counts, or 2**40 records or more in total (counts are private: no message
        quotes them); bad epsilon, bounds, method, support or alpha (below ``1e-250`` too);
        ``method="cdf"`` without a small power-of-two grid. Every error is
        raised before the accountant is charged (``rng`` is checked first too).

    Privacy
    -------
    Pure ``epsilon``-DP under add/remove of one record (``relation="unbounded"``): the three
    stages are exponential mechanisms with sensitivity-bounded scores (McSherry and Talwar
    2007, Theorem 6; a two-level node is one such mechanism with a JointExp-style score
    whose total is free, sensitivity 1),
    ApproximateQuantiles' parallel split (Kaplan, Schnapp and Stemmer 2022, Theorem 3.3)
    and a histogram with discrete Laplace noise (Ghosh, Roughgarden and
    Sundararajan 2009), composed sequentially (Dwork and Roth 2014, Theorem 3.16). Each
    record's value enters only through the per-record lattice map, so neighbouring inputs
    stay neighbouring summaries.

    Examples
    --------
    Ages counted by an engine (integers, so ``support=1.0``): the median is the tied 30.

    >>> rel = quantiles_from_counts([18.0, 30.0, 45.0, 60.0], [10, 45, 30, 15], 0.5,
    ...                             epsilon=1.0, bounds=(0, 100), support=1.0, rng=7)
    >>> rel.value, rel.method, rel.privacy, rel.relation
    (30.0, 'exponential', PureDP(epsilon=1.0), 'unbounded')
    """
    owner = "quantiles_from_counts"
    lv, eps, (lower, upper), method, a, share = _check_common(
        owner, levels, epsilon, bounds, method, support, alpha, intervals, interval_share
    )
    lattice = QuantileLattice.for_bounds(owner, lower, upper)
    summary = counts_from_summary(owner, points, counts, lattice)
    measure = _measure(owner, lattice, support, integer_dtype=False, method=method)
    plan = pure_spend(resolve_method(method, len(lv), measure), eps, share)
    source = as_source(rng)
    spend(accountant, PureDP(eps), owner, events=quantile_events(plan, len(lv)))
    return _release(owner, summary, measure, lv, plan, a, source)


def counts_releaser(
    levels: Any,
    *,
    epsilon: float,
    bounds: tuple[float, float],
    method: str = "auto",
    alpha: float = 0.05,
    support: str | float = "auto",
    intervals: bool = True,
    interval_share: float = 0.25,
) -> Callable[[Any, Any, BitSource], QuantileRelease]:
    """:func:`quantiles_from_counts` for many summaries with the same parameters (the
    Session's groups): the parameters are checked and the lattice and base measure built
    once; ``release(points, counts, source)`` then checks its summary and releases it
    exactly as ``quantiles_from_counts(points, counts, levels, ..., rng=source)`` does (the
    same checks and messages, the same draws from ``source``; nothing is charged)."""
    owner = "quantiles_from_counts"
    lv, eps, (lower, upper), meth, a, share = _check_common(
        owner, levels, epsilon, bounds, method, support, alpha, intervals, interval_share
    )
    lattice = QuantileLattice.for_bounds(owner, lower, upper)
    measure = _measure(owner, lattice, support, integer_dtype=False, method=meth)
    plan = pure_spend(resolve_method(meth, len(lv), measure), eps, share)

    def release(points: Any, counts: Any, source: BitSource) -> QuantileRelease:
        summary = counts_from_summary(owner, points, counts, lattice)
        return _release(owner, summary, measure, lv, plan, a, source)

    return release


def spend_inputs(
    owner: str, levels: Any, spend: Any, bounds: Any, support: Any
) -> tuple[tuple[float, ...], QuantileLattice, Measure]:
    """The checked levels, lattice and base measure of a release by a given
    :class:`QuantileSpend` (:func:`check_spend` included): everything that can be refused
    before the spend."""
    lv, _scalar = check_levels(owner, levels)
    lower, upper = check_bounds(owner, bounds)
    _check_support(owner, support)
    lattice = QuantileLattice.for_bounds(owner, lower, upper)
    measure = _measure(owner, lattice, support, integer_dtype=False)
    check_spend(owner, spend, len(lv), measure)
    return lv, lattice, measure


def spend_releaser(
    levels: Any,
    spend: QuantileSpend,
    *,
    bounds: tuple[float, float],
    alpha: float = 0.05,
    support: str | float = "auto",
    owner: str = "quantiles_from_counts",
) -> Callable[[Any, Any, BitSource], QuantileRelease]:
    """:func:`counts_releaser` for a caller that accounts for each stage itself (the Session
    under zCDP): the method and every stage's epsilon come in ``spend``, decided before
    the spend from public inputs (:func:`quantile_method`, :func:`quantile_stages`). Every
    check is made here, before anything is drawn; ``release(points, counts, source)`` then
    runs exactly the stages of ``spend`` (nothing is charged). ``owner`` names the caller
    in error messages."""
    lv, lattice, measure = spend_inputs(owner, levels, spend, bounds, support)
    a = check_alpha(owner, alpha)

    def release(points: Any, counts: Any, source: BitSource) -> QuantileRelease:
        summary = counts_from_summary(owner, points, counts, lattice)
        return _release(owner, summary, measure, lv, spend, a, source)

    return release


def quantiles(
    data: Any,
    levels: Any,
    *,
    epsilon: float,
    bounds: tuple[float, float],
    method: str = "auto",
    alpha: float = 0.05,
    rng: Any = None,
    support: str | float = "auto",
    intervals: bool = True,
    interval_share: float = 0.25,
    accountant: Any = None,
) -> QuantileRelease:
    """Release quantiles of an array in one mechanism (see :func:`quantiles_from_counts`).

    Parameters
    ----------
    data : array_like
        Finite real values, one per record; clipped to ``bounds``. Empty data, NaN,
        infinities, masked arrays and bools are refused.
    levels, epsilon, bounds, method, alpha, rng, support, intervals, interval_share, accountant
        As for :func:`quantiles_from_counts`.

    Returns
    -------
    QuantileRelease

    Privacy
    -------
    Pure ``epsilon``-DP under add/remove of one record (see :func:`quantiles_from_counts`).

    Examples
    --------
    >>> ages = np.repeat([20, 30, 40, 50, 60], [60, 210, 460, 210, 60])  # int dtype
    >>> quantiles(ages, [0.25, 0.5, 0.75], epsilon=1.0, bounds=(0, 100), rng=2).values
    array([30., 40., 50.])
    """
    owner = "quantiles"
    lv, eps, (lower, upper), method, a, share = _check_common(
        owner, levels, epsilon, bounds, method, support, alpha, intervals, interval_share
    )
    lattice = QuantileLattice.for_bounds(owner, lower, upper)
    arr = record_array(owner, data)
    summary = counts_from_data(owner, arr, lattice)
    measure = _measure(owner, lattice, support, _is_integer_typed(data, arr), method)
    plan = pure_spend(resolve_method(method, len(lv), measure), eps, share)
    source = as_source(rng)
    spend(accountant, PureDP(eps), owner, events=quantile_events(plan, len(lv)))
    return _release(owner, summary, measure, lv, plan, a, source)


def quantile(
    data: Any,
    q: float,
    *,
    epsilon: float,
    bounds: tuple[float, float],
    alpha: float = 0.05,
    rng: Any = None,
    support: str | float = "auto",
    intervals: bool = True,
    interval_share: float = 0.25,
    accountant: Any = None,
) -> QuantileRelease:
    """Release one quantile of an array (``q`` in (0, 1)); see :func:`quantiles`.

    Privacy
    -------
    Pure ``epsilon``-DP under add/remove of one record.

    Examples
    --------
    >>> round(quantile(np.arange(1.0, 100.0), 0.9, epsilon=1.0, bounds=(0, 100), rng=2).value, 2)
    90.81
    """
    if isinstance(q, list | tuple | np.ndarray) or series_like(q):
        raise TypeError("quantile: `q` must be one level; use quantiles() for several")
    return quantiles(
        data,
        q,
        epsilon=epsilon,
        bounds=bounds,
        alpha=alpha,
        rng=rng,
        support=support,
        intervals=intervals,
        interval_share=interval_share,
        accountant=accountant,
    )


def median(
    data: Any,
    *,
    epsilon: float,
    bounds: tuple[float, float],
    alpha: float = 0.05,
    rng: Any = None,
    support: str | float = "auto",
    intervals: bool = True,
    interval_share: float = 0.25,
    accountant: Any = None,
) -> QuantileRelease:
    """Release the median of an array; see :func:`quantiles`.

    Privacy
    -------
    Pure ``epsilon``-DP under add/remove of one record.

    Examples
    --------
    >>> median(np.repeat([1.0, 2.0, 3.0], [30, 41, 30]), epsilon=1.0, bounds=(0, 10),
    ...        rng=0).value
    2.0
    """
    return quantiles(
        data,
        0.5,
        epsilon=epsilon,
        bounds=bounds,
        alpha=alpha,
        rng=rng,
        support=support,
        intervals=intervals,
        interval_share=interval_share,
        accountant=accountant,
    )


def quantile_samples(
    data: Any,
    q: float,
    *,
    epsilon: float,
    bounds: tuple[float, float],
    size: int,
    support: str | float = "auto",
    rng: Any = None,
    window: int | None = None,
) -> np.ndarray:
    """``size`` independent draws of the single-quantile mechanism (no intervals, no spend).

    The batched core of :func:`quantile` with ``intervals=False``, for audits and studies:
    each draw is ``epsilon``-DP, so ``size`` draws cost ``size * epsilon``; nothing is charged.
    These are the mechanism's own lattice points: a release then moves them onto a
    resolution support's grid (:func:`on_support`, post-processing).

    Parameters
    ----------
    data, q, epsilon, bounds, support, rng
        As for :func:`quantile`.
    size : int
        Number of draws, >= 1.
    window : int, optional
        Draw through the windowed sampler of :mod:`dpkit.mechanisms.quantile_view` with this
        rank half-width (one draw at a time; the releases use it with an automatic width).
        Any width gives the same law; small ones exercise its exact envelope and fallback.

    Returns
    -------
    numpy.ndarray
        float64 draws (lattice points).

    Privacy
    -------
    Each draw is pure ``epsilon``-DP under add/remove of one record.

    Examples
    --------
    >>> x = np.repeat([1.0, 2.0, 3.0], [30, 41, 30])
    >>> quantile_samples(x, 0.5, epsilon=1.0, bounds=(0, 4), support=1.0, size=4,
    ...                  rng=0).tolist()
    [2.0, 2.0, 2.0, 2.0]
    """
    owner = "quantile_samples"
    (level,), _scalar = check_levels(owner, q)
    if not _scalar:
        raise TypeError(f"{owner}: `q` must be one level; got {q!r}")
    eps = check_positive(owner, "epsilon", epsilon)
    lower, upper = check_bounds(owner, bounds)
    if (
        isinstance(size, bool | np.timedelta64)
        or not isinstance(size, int | np.integer)
        or size < 1
    ):
        raise TypeError(f"{owner}: `size` must be an int >= 1; got {size!r}")
    _check_support(owner, support)
    if window is not None and (
        isinstance(window, bool | np.timedelta64)
        or not isinstance(window, int | np.integer)
        or window < 0
    ):
        raise TypeError(f"{owner}: `window` must be None or an int >= 0; got {window!r}")
    lattice = QuantileLattice.for_bounds(owner, lower, upper)
    arr = record_array(owner, data)
    summary = counts_from_data(owner, arr, lattice)
    measure = _measure(owner, lattice, support, _is_integer_typed(data, arr))
    if window is not None:
        source = as_source(rng)
        view = root_view(summary, measure)
        level_r = as_rational_level(level)
        drawn = draw_view_many(
            view, measure, level_r, Fraction(0), Fraction(eps), source, int(size), int(window)
        )
        return lattice.values(drawn)
    pts = draw_target(
        summary,
        measure,
        lattice.lo,
        lattice.hi,
        as_rational_level(level),
        Fraction(0),
        Fraction(eps),
        as_source(rng),
        size=int(size),
    )
    return lattice.values(pts)


def quantiles_samples(
    data: Any,
    levels: Any,
    *,
    epsilon: float,
    bounds: tuple[float, float],
    size: int,
    method: str = "auto",
    support: str | float = "auto",
    rng: Any = None,
) -> np.ndarray:
    """``size`` independent draws of the multi-quantile mechanism (no intervals, no spend).

    The batched core of :func:`quantiles` with ``intervals=False``, for audits and studies
    (JointExp shares its dynamic programme across the draws): each row is ``epsilon``-DP, so
    ``size`` rows cost ``size * epsilon``; nothing is charged. These are the mechanism's own
    lattice points, before a release moves them onto a resolution support's grid
    (:func:`on_support`, post-processing).

    Returns
    -------
    numpy.ndarray
        Shape ``(size, m)``, each row sorted.

    Privacy
    -------
    Each row is pure ``epsilon``-DP under add/remove of one record.

    Examples
    --------
    >>> x = np.repeat([1, 2, 3, 4], [25, 25, 25, 25])
    >>> quantiles_samples(x, [0.125, 0.875], epsilon=2.0, bounds=(0, 5), size=3,
    ...                   rng=0).tolist()
    [[1.0, 4.0], [1.0, 4.0], [1.0, 4.0]]
    """
    owner = "quantiles_samples"
    lv, eps, (lower, upper), meth, _a, _share = _check_common(
        owner, levels, epsilon, bounds, method, support, 0.05, False, 0.5
    )
    if (
        isinstance(size, bool | np.timedelta64)
        or not isinstance(size, int | np.integer)
        or size < 1
    ):
        raise TypeError(f"{owner}: `size` must be an int >= 1; got {size!r}")
    lattice = QuantileLattice.for_bounds(owner, lower, upper)
    arr = record_array(owner, data)
    summary = counts_from_data(owner, arr, lattice)
    measure = _measure(owner, lattice, support, _is_integer_typed(data, arr), meth)
    source = as_source(rng)
    rational = [as_rational_level(q) for q in lv]
    if meth == "joint":
        rows = joint_exp_samples(summary, measure, rational, Fraction(eps), source, int(size))
    else:
        plan = pure_spend(resolve_method(meth, len(lv), measure), eps, 0.0)
        rows = [
            _release(owner, summary, measure, lv, plan, 0.05, source, snap=False).values.tolist()
            for _ in range(int(size))
        ]
        return np.array(rows, dtype=np.float64)
    return lattice.values(np.array(rows, dtype=np.int64))
