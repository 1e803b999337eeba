"""The privacy plan of one release and its text: budget split, mechanisms, scales, threshold.

Everything here follows from the query and the public parameters only (no data): the
validated budget (``session/_budget.py``) split across the aggregates, key selection and the
automatic stages; a choice made at release time re-plans by method (:meth:`Plan.with_rows`,
:meth:`Plan.with_bounds`). ``explain()`` prints it (:func:`explain_text`) and ``release()``
executes it (``session/_pipeline.py``). See :class:`dpkit.session.Query` for the guarantee.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from dpkit.errors import ParameterError
from dpkit.noise import Noise, law, threshold
from dpkit.session._budget import Budget, epsilon_down, float_up, pure_epsilon, scaled
from dpkit.session.aggregates import Aggregate, Count, Histogram, Part, Quantile
from dpkit.statistics.bounds import default_fallback
from dpkit.statistics.quantile_release import QuantileSpend, quantile_method, quantile_stages

__all__ = [
    "CUT_DIVISOR",
    "MAX_CUT",
    "QUANTILE_INTERVAL_SHARE",
    "STAGE_MECHANISMS",
    "STAGE_NAMES",
    "BoundsPlan",
    "PartPlan",
    "Plan",
    "QuantilePlan",
    "Recipe",
    "RowsPlan",
    "SelectionPlan",
    "check_quantile",
    "default_cut",
    "explain_text",
    "plan_notes",
    "quantile_spend",
    "quantile_support",
    "reused_count",
    "selection_threshold",
    "split",
]

#: Part of each quantile aggregate's budget spent on its interval stage (the statistics
#: layer's default); method "cdf" has no interval stage and spends it on its histogram.
QUANTILE_INTERVAL_SHARE = 0.25


@dataclass(frozen=True, slots=True)
class PartPlan:
    """One noisy integer statistic: its aggregate, share of the budget, sensitivity, noise."""

    aggregate: str
    part: Part
    share: Fraction
    sensitivity: int
    noise: Noise
    alpha: float

    @property
    def half_width(self) -> int:
        return self.noise.half_width(self.alpha)


@dataclass(frozen=True, slots=True)
class QuantilePlan:
    """The quantile release of one aggregate (all its levels at once), decided before the
    spend from public facts only (the column's type, the bounds, the levels, the method
    asked for): the ``method`` the statistics layer runs (resolved, never ``"auto"``), the
    ``support``, each stage's epsilon per group (``spend``, :func:`quantile_spend`), and
    ``epsilon``, the pure epsilon per group of the whole release (the stages' sum)."""

    aggregate: str
    share: Fraction
    epsilon: float
    method: str
    support: str | float
    spend: QuantileSpend


@dataclass(frozen=True, slots=True)
class RowsPlan:
    """``max_rows_per_unit="auto"``: the settings (share, level, public cap), the pure
    epsilon of the contribution-bound stage, and (after a release) the chosen bound."""

    auto: Any
    share: Fraction
    epsilon: float
    chosen: int | None = None


@dataclass(frozen=True, slots=True)
class BoundsPlan:
    """``bounds="auto"`` of one aggregate: its share of the release's budget and the pure
    epsilon of its signed log2 histogram (per record: the histogram's noise has scale
    ``1 / epsilon``, which is ``k / (epsilon k)`` for the ``k`` rows a unit keeps)."""

    aggregate: str
    share: Fraction
    epsilon: float
    #: ``"histogram"`` (ApproximateBounds style) or ``"tail"`` (UQE, AboveThreshold)
    method: str = "histogram"
    lower: float | None = None


@dataclass(frozen=True, slots=True)
class SelectionPlan:
    """Private key selection: a noisy count of distinct units per group against ``threshold``.

    ``reuse`` names the count aggregate whose noisy value is thresholded (no extra share),
    or is ``None`` when the selection has its own count and share. ``cut`` is the
    pre-threshold: a candidate group whose exact count is below it is dropped in the engine
    and never reaches Python (1: none). ``delta`` is the selection's share of the budget's
    delta; ``delta_bound`` = ``m P[cut + Z >= threshold]`` (``m`` = ``keys_per_unit``) is
    what the selection costs (at most ``delta``), of which ``delta_cut`` =
    ``m (P[cut + Z >= threshold] - P[1 + Z >= threshold])`` is the part the cut adds (see
    :func:`selection_threshold`).
    """

    kind: str
    share: Fraction
    noise: Noise
    delta: float
    keys_per_unit: int
    threshold: int
    reuse: str | None
    cut: int = 1
    delta_bound: float = 0.0
    delta_cut: float = 0.0


#: The default pre-threshold takes this part of the threshold's margin over one unit
#: (:func:`default_cut`).
CUT_DIVISOR = 8


def default_cut(margin: int) -> int:
    """The default pre-threshold for a key threshold ``1 + margin`` (``margin``: how far a
    group of one unit stands below the threshold without a cut): ``1 + margin // 8``.

    A cut ``T`` drops in the engine every candidate with fewer than ``T`` units, which the
    selection without a cut would release with probability at most
    ``P[T - 1 + Z >= 1 + margin]``, and costs a threshold ``T - 1`` higher
    (:func:`selection_threshold`): an eighth of the margin, so that a group needs at most
    12.5 % more units than without the cut for the same chance, while no group of fewer than
    ``T`` units leaves the engine. The margin follows from the noise and the delta alone, so
    the cut is public. ``T = 1`` (no cut) while the margin is below 8 (a very large epsilon).
    """
    return max(1, 1 + margin // CUT_DIVISOR)


#: the largest pre-threshold accepted (an engine compares it with 64-bit counts)
MAX_CUT = 2**53


def selection_threshold(
    kind: str, scale: Fraction, delta_select: float, keys: int, cut: int | None
) -> tuple[int, int, float, float]:
    """The key threshold ``tau`` with pre-threshold ``cut`` (None: :func:`default_cut`),
    and its deltas ``(tau, cut, delta_bound, delta_cut)``.

    ``tau`` is the smallest integer with ``P[cut + Z >= tau] <= delta_select / keys``, ``Z``
    the selection count's noise (the exact tail for the discrete Laplace, a rigorous bound
    for the discrete Gaussian: :func:`dpkit.noise.threshold`). It is
    ``tau_1 + cut - 1``, ``tau_1`` the threshold without a cut: the cut is paid by a
    threshold ``cut - 1`` higher, never by more delta.

    Privacy
    -------
    Add/remove one unit ``u`` (``D'`` = ``D`` plus ``u``). After bounding, ``u`` holds at most
    ``keys`` groups and adds 1 to the count ``n`` of each. Every group with
    ``n >= cut`` gets independent noise and is released iff ``n + Z >= tau``; the others are
    dropped in the engine, before any noise. Let ``B`` be ``u``'s groups with
    ``n'(g) = cut`` in ``D'`` (``cut - 1`` in ``D``: never a candidate there). A group outside
    ``B`` is a candidate in ``D`` iff it is one in ``D'`` (``u``'s other groups have
    ``n' >= cut + 1``, ``n >= cut``, or are below the cut in both), so on the groups outside
    ``B`` both tables run the same mechanism on counts that differ by at most 1 in at most
    ``keys`` groups: the noise calibration makes that part ``(epsilon, delta_rest)``-DP
    (``delta_rest`` = 0 for Laplace noise, the rest of the budget's delta after the zCDP
    conversion for Gaussian noise). The groups of ``B`` are independent of that part, never
    released in ``D``, and released in ``D'`` with probability
    ``p_B <= |B| P[cut + Z >= tau] <= keys * delta_select / keys = delta_select``. For an
    output set ``S`` let ``A`` be its outcomes on the other groups with nothing of ``B``
    released. Then ``P_D'(S) <= P_D'(A) + p_B <= e^eps P_D(A) + delta_rest + p_B`` with
    ``P_D(A) = P_D(S)``; and ``P_D(S) = P_D(A) <= min(1, e^eps x + delta_rest)``,
    ``x = P_D'(A)``, while ``P_D'(S) >= (1 - p_B) x``, so
    ``P_D(S) - e^eps P_D'(S) <= max_x [min(1, e^eps x + delta_rest) - e^eps (1 - p_B) x]
    <= delta_rest + p_B``. Both directions: ``(epsilon, delta_rest + delta_select)``, within
    the budget's delta (:func:`make_budget` splits it so). With ``cut = 1`` ``B`` is the
    set of groups ``u`` holds alone, the usual thresholding argument (Korolova et al. 2009;
    Google's partition selection, whose pre-threshold shifts the count by ``cut - 1`` at the
    same delta, is the same mechanism).

    The deterministic drop alone would cost ``keys (P[cut + Z >= tau_1] - P[1 + Z >= tau_1])``
    at the threshold ``tau_1`` of no cut, which grows as ``e^((cut - 1) / t)`` for Laplace
    noise of scale ``t``: the higher threshold pays it instead. ``delta_cut`` reports that
    part at ``tau``.
    """
    delta_single = delta_select / keys  # union bound over the unit's own keys
    if delta_single == 0:
        raise ParameterError(
            f"release: `delta` is too small for private keys: split over the {keys} "
            "keys a unit may hold, it rounds to 0; raise delta or give public keys"
        )
    if cut is None:
        cut = default_cut(threshold(kind, scale, delta_single, top=1) - 1)
    tau = threshold(kind, scale, delta_single, top=cut)
    noise = law(kind, scale)
    bound = keys * noise.tail(tau - cut)
    return tau, cut, bound, max(bound - keys * noise.tail(tau - 1), 0.0)


@dataclass(frozen=True, eq=False)
class Recipe:
    """A query's public inputs that its plan is split from, besides the budget, the
    aggregates and the contribution bound: what :meth:`Plan.with_rows` and
    :meth:`Plan.with_bounds` reuse, so a release validates its budget once and re-plans
    from the validated :class:`Budget`."""

    engine: str
    privacy_unit: str | None
    by: tuple[str, ...]
    public_keys: bool
    selection_weight: float
    pre_threshold: int | None
    #: the query's public schema (derived columns included) and its text columns parsed
    #: as numbers
    schema: dict[str, Any]
    parsed: tuple[str, ...]
    #: ``max_groups_per_unit`` as given (``None``: the contribution bound)
    groups_given: int | None
    #: the ``max_rows_per_unit="auto"`` settings, or ``None``
    auto_rows: Any

    def plan(
        self,
        budget: Budget | None,
        alpha: float,
        aggregates: tuple[Aggregate, ...],
        k: int,
        m: int,
    ) -> Plan:
        """The plan of ``aggregates`` at ``k`` rows and ``m`` groups per unit under
        ``budget`` (``None``: bounding and sensitivities only)."""
        private = bool(self.by) and not self.public_keys
        base = Plan(
            self.engine,
            self.privacy_unit,
            k,
            m,
            self.by,
            self.public_keys,
            budget,
            alpha,
            aggregates,
            notes=plan_notes(self.parsed, self.privacy_unit, aggregates),
            recipe=self,
        )
        auto = self.auto_rows
        if budget is None:
            if auto is not None:
                rows = RowsPlan(auto, Fraction(auto.share), 0.0)
                base = dataclasses.replace(base, rows=rows)
            return base
        rest = budget
        if auto is not None:  # the contribution bound's share of the whole budget
            share = Fraction(auto.share)
            base = dataclasses.replace(
                base, rows=RowsPlan(auto, share, pure_epsilon(budget, share, 1))
            )
            rest = scaled(budget, 1 - share)
        parts, quants, sel, bounds = split(
            aggregates,
            rest,
            k=k,
            groups=m if self.by else 1,
            alpha=alpha,
            selection_weight=self.selection_weight,
            reuse=reused_count(aggregates, k),
            private=private,
            schema=self.schema,
            pre_threshold=self.pre_threshold,
        )
        return dataclasses.replace(
            base,
            parts=tuple(parts),
            quantiles=tuple(quants),
            selection=sel,
            bounds=tuple(bounds),
        )


def reused_count(aggregates: tuple[Aggregate, ...], k: int) -> str | None:
    """A ``dp.count()`` that can double as the selection count (one row per unit)."""
    if k != 1:
        return None
    for a in aggregates:
        if isinstance(a, Count) and a.column is None:
            return a.name
    return None


def plan_notes(
    parsed: tuple[str, ...], privacy_unit: str | None, aggregates: tuple[Aggregate, ...]
) -> tuple[str, ...]:
    """The plan's notes: text parsed as numbers, rows left out, nulls, clipping, lattices."""
    notes = [
        f"{c!r} is text with no declared type: parsed as numbers, text that is not a "
        "plain number counts as missing"
        for c in parsed
    ]
    if privacy_unit is not None:
        notes.append(f"rows whose privacy unit {privacy_unit!r} is null are left out")
    for a in aggregates:
        if a.column is None or isinstance(a, Histogram):
            continue
        fill = a.fill
        rule = "left out" if fill is None else f"replaced by {fill!r}"
        clip = (
            "the bounds the release chooses privately (bounds='auto')" if a.auto else repr(a.bounds)
        )
        notes.append(
            f"{a.name}: nulls and NaN in {a.column!r} are {rule} (after bounding); values "
            f"are clipped to {clip}"
        )
        lat = a.lattice
        if lat is not None:
            notes.append(
                f"{a.name}: exact integer sums on the lattice unit {lat.unit!r} "
                f"(rounding <= {lat.unit / 2!r} per value)"
            )
    return tuple(notes)


@dataclass(frozen=True)
class Plan:
    """Everything a release will do, computed from public parameters only."""

    engine: str
    privacy_unit: str | None
    max_rows: int
    max_groups: int
    by: tuple[str, ...]
    public_keys: bool
    budget: Budget | None
    alpha: float
    aggregates: tuple[Aggregate, ...]
    parts: tuple[PartPlan, ...] = ()
    quantiles: tuple[QuantilePlan, ...] = ()
    selection: SelectionPlan | None = None
    notes: tuple[str, ...] = field(default=())
    #: ``bounds="auto"`` stages, and (after a release) the chosen bounds per aggregate
    bounds: tuple[BoundsPlan, ...] = ()
    chosen: tuple[tuple[str, Any], ...] = ()
    rows: RowsPlan | None = None
    #: the query's public inputs the plan was split from (what re-planning reuses)
    recipe: Recipe | None = field(default=None, compare=False, repr=False)

    def with_rows(self, k: int) -> Plan:
        """The plan once ``max_rows_per_unit="auto"`` has chosen ``k``: the budget (already
        validated) split again for sensitivities at ``k`` rows per unit, the contribution
        stage kept with its choice."""
        assert self.rows is not None and self.recipe is not None
        m = min(self.recipe.groups_given or k, k)
        plan = self.recipe.plan(self.budget, self.alpha, self.aggregates, k, m)
        return dataclasses.replace(plan, rows=dataclasses.replace(self.rows, chosen=k))

    def with_bounds(
        self, aggregates: tuple[Aggregate, ...], chosen: tuple[tuple[str, Any], ...] = ()
    ) -> Plan:
        """The plan for ``aggregates`` (the query's, with the bounds ``bounds="auto"`` chose,
        ``chosen`` naming each choice's release): the same budget, rows and stages, the
        statistics split for the chosen bounds."""
        assert self.recipe is not None
        plan = self.recipe.plan(self.budget, self.alpha, aggregates, self.max_rows, self.max_groups)
        return dataclasses.replace(plan, rows=self.rows, bounds=self.bounds, chosen=chosen)

    def __str__(self) -> str:
        return explain_text(self)

    def __repr__(self) -> str:  # at a prompt, the plan's text rather than its fields
        return explain_text(self)


def split(
    aggregates: tuple[Aggregate, ...],
    budget: Budget,
    *,
    k: int,
    groups: int,
    alpha: float,
    selection_weight: float,
    reuse: str | None,
    private: bool,
    schema: Any,
    pre_threshold: int | None = None,
) -> tuple[list[PartPlan], list[QuantilePlan], SelectionPlan | None, list[BoundsPlan]]:
    """Split the budget by weight and build each part's noise (see :func:`make_budget`);
    an aggregate with ``bounds="auto"`` gives its bounds stage ``bounds_share`` of its share
    and its statistics the rest (once its bounds are chosen). ``private``: the keys are
    chosen privately, so a selection stage is always planned (never inferred from the
    delta, which can round to 0); ``pre_threshold`` is its cut (None: the default, see
    :func:`selection_threshold`). ``schema`` (public) gives each quantile aggregate its
    support and so its method (:func:`_quantile_plan`)."""
    weights = [Fraction(a.weight) for a in aggregates]
    sel_w = Fraction(selection_weight) if private and reuse is None else Fraction(0)
    total = sum(weights, Fraction(0)) + sel_w
    parts: list[PartPlan] = []
    quants: list[QuantilePlan] = []
    auto: list[BoundsPlan] = []
    for agg, w in zip(aggregates, weights, strict=True):
        share = w / total
        b_share = Fraction(agg.bounds_share)
        if agg.auto:  # bounds chosen at release time: no parts yet
            auto.append(
                BoundsPlan(
                    agg.name,
                    share * b_share,
                    pure_epsilon(budget, share * b_share, k),
                    agg.bounds_method,
                    agg.lower,
                )
            )
            continue
        share = share * (1 - b_share)  # what the bounds (if chosen privately) left
        if isinstance(agg, Quantile):
            quants.append(_quantile_plan(agg, budget, share, k, schema))
            continue
        cells = k if isinstance(agg, Histogram) else groups
        a_alpha = agg.interval_alpha(alpha)
        for part in agg.parts(budget.noise, ""):
            sens = k * part.per_row
            noise = _noise(budget, share * part.share, sens, cells)
            parts.append(PartPlan(agg.name, part, share * part.share, sens, noise, a_alpha))
    selection = None
    if private:
        keys = min(groups, k)
        if reuse is not None:
            source = next(p for p in parts if p.aggregate == reuse)
            noise, share = source.noise, source.share
        else:
            share = sel_w / total
            # one unit adds 1 to the distinct-unit count of each of its (at most) `keys` groups
            noise = _noise(budget, share, keys, keys, l2_sq=Fraction(keys))
        if noise.step != 1:
            raise ParameterError(
                "release: the budget share for key selection is too small (its noise would "
                "need a coarser lattice); raise epsilon or the selection weight"
            )
        tau, cut, bound, extra = selection_threshold(
            noise.kind, noise.scale, budget.delta_select, keys, pre_threshold
        )
        selection = SelectionPlan(
            noise.kind, share, noise, budget.delta_select, keys, tau, reuse, cut, bound, extra
        )
    return parts, quants, selection, auto


def _noise(
    budget: Budget, share: Fraction, l1: int, groups: int, l2_sq: Fraction | None = None
) -> Noise:
    if budget.noise == "laplace":
        assert budget.epsilon is not None
        return Noise.laplace(budget.epsilon * share, l1, groups)
    assert budget.rho is not None
    return Noise.gaussian(budget.rho * share, Fraction(l1) ** 2 if l2_sq is None else l2_sq, groups)


def _quantile_plan(
    agg: Quantile, budget: Budget, share: Fraction, k: int, schema: Any
) -> QuantilePlan:
    """The quantile aggregate's plan: its support from the column's type
    (:func:`quantile_support`), the method the statistics layer will
    run (:func:`dpkit.statistics.quantile_release.quantile_method`, the function the release's
    own resolution is; the release then runs this method, never resolving again) and each
    stage's epsilon (:func:`quantile_spend`)."""
    check_quantile(schema, agg)
    support = quantile_support(schema, agg)
    method = quantile_method(agg.levels, bounds=agg.bounds, method=agg.method, support=support)
    spend = quantile_spend(budget, share, k, method)
    return QuantilePlan(agg.name, share, float_up(spend.total), method, support, spend)


def quantile_support(schema: Any, agg: Quantile) -> str | float:
    """The base measure of a quantile aggregate: an integer-typed column (a public schema
    fact, never the values) puts the atoms on the integers (``support=1.0``, when the
    mechanism's lattice holds them and the bounds are at least one wide); any other column,
    or bounds too narrow or too wide for a step of 1 (``(0, 0.5)``, ``(0, 2**40)``), gets
    ``"auto"`` (atoms on every dyadic grid). The rule of the array functions
    (:func:`dpkit.statistics.quantiles` on an integer dtype), so both release the same
    values from the same records; the engine's grid has a power-of-two unit, so it moves an
    integer record to an integer (itself when the unit is 1 or less). Decided from the
    schema and the bounds alone, before anything is spent."""
    assert agg.column is not None
    if schema[agg.column].is_integer():
        from dpkit.mechanisms.quantile_em import QuantileLattice, resolution_level

        lower, upper = agg.bounds
        try:
            resolution_level(QuantileLattice.for_bounds("dp.quantile", lower, upper), 1.0)
        except ParameterError:  # the step of 1 is wider than the bounds
            return "auto"
        return 1.0
    return "auto"


def check_quantile(schema: Any, agg: Quantile) -> None:
    """Refuse, before anything is spent, a ``method`` the column cannot take: ``"cdf"``
    needs a resolution support (an integer-typed column) with a small grid."""
    if agg.method != "cdf":
        return
    from dpkit.mechanisms.quantile_em import Measure, QuantileLattice
    from dpkit.statistics.cdf import MAX_GRID, cdf_grid

    support = quantile_support(schema, agg)
    lower, upper = agg.bounds
    ok = not isinstance(support, str) and (
        cdf_grid(Measure(QuantileLattice.for_bounds("dp.quantile", lower, upper), support))
        is not None
    )
    if not ok:
        raise ParameterError(
            f"dp.quantile({agg.column!r}): method='cdf' needs an integer-typed column with at "
            f"most {MAX_GRID} integers inside the bounds {agg.bounds}; use method='auto'"
        )


def quantile_spend(
    budget: Budget,
    share: Fraction,
    k: int,
    method: str,
    interval_share: float | None = None,
) -> QuantileSpend:
    """Each stage's epsilon per group of a quantile aggregate with ``share`` of ``budget``.

    The stages (:func:`dpkit.statistics.quantile_release.quantile_stages`) are exponential
    mechanisms (the values, the interval helpers) or discrete Laplace noise (the histogram of
    ``"cdf"``, the interval cell counts). Laplace budgets: the aggregate's ``epsilon * share
    / k`` (rounded down to a float), split by the stages' shares (what the statistics layer
    does with one epsilon). zCDP budgets: each stage gets its own part ``share * s`` of rho
    and the epsilon whose zCDP fits in it, ``sqrt(d rho share s) / k``, ``d = 8`` for an
    exponential mechanism (epsilon-bounded range: epsilon**2 / 8-zCDP, Cesar and Rogers
    2021) and ``d = 2`` for discrete Laplace (pure epsilon-DP is only epsilon**2 / 2-zCDP,
    Bun and Steinke 2016, Proposition 1.4), each rounded down. The stages' rho then sum to
    at most ``rho * share`` whatever ``interval_share`` is (sequential composition). A
    unit's ``k`` rows may sit in one group, so every stage runs at ``1/k`` per row (group
    privacy: ``k`` rows move an exponential mechanism's score, or the L1 norm of a
    histogram, by at most ``k`` times one row's). ``interval_share``: the Session's
    :data:`QUANTILE_INTERVAL_SHARE` unless given.
    """
    share_i = QUANTILE_INTERVAL_SHARE if interval_share is None else interval_share
    stages = quantile_stages(method, share_i)
    if budget.noise == "laplace":
        whole = Fraction(epsilon_down(budget, share, k, 1))
        return QuantileSpend(method, stages, tuple(whole * st.share for st in stages))
    epsilons = tuple(
        Fraction(epsilon_down(budget, share * st.share, k, st.zcdp_divisor)) for st in stages
    )
    return QuantileSpend(method, stages, epsilons)


def _fmt(x: float) -> str:
    return f"{x:.4g}"


#: a quantile stage's name and mechanism as the plan's text and the release record say them
STAGE_NAMES = {
    "histogram": "noisy histogram",
    "quantiles": "values",
    "helpers": "interval helpers",
    "counts": "interval counts",
}
STAGE_MECHANISMS = {"exponential": "exponential mechanism", "laplace": "discrete Laplace"}


def _quantile_lines(plan: Plan, q: QuantilePlan, width: int) -> list[str]:
    """The rows of one quantile aggregate in ``explain()``: the per-group epsilon, then each
    stage's epsilon and kind (and, under zCDP, the rule each kind is charged by)."""
    method = "EM" if q.method == "exponential" else q.method  # one level, one draw
    lines = [
        f"{q.aggregate:<{width}}{'quantiles ' + method:<16}{float(q.share):>8.3f}"
        f"{'epsilon per group ' + _fmt(q.epsilon):>40}"
    ]
    stages = ", ".join(
        f"{STAGE_NAMES[st.name]} {_fmt(float(e))} ({STAGE_MECHANISMS[st.kind]})"
        for st, e in zip(q.spend.stages, q.spend.epsilons, strict=True)
    )
    lines.append(f"{'':17}epsilon per group and stage: {stages}")
    return lines


def explain_text(plan: Plan) -> str:
    """The plan as text (what ``Query.explain()`` prints)."""
    lines = ["dpkit Session query plan", ""]
    unit = "one row" if plan.privacy_unit is None else f"one unit ({plan.privacy_unit!r})"
    lines.append(f"engine           {plan.engine}")
    lines.append(f"neighbours       add/remove {unit}  (relation 'unbounded')")
    if plan.privacy_unit is None:
        lines.append("bounding         1 row per unit by construction")
    elif plan.rows is not None:
        r = plan.rows
        chosen = (
            "not chosen yet"
            if r.chosen is None
            else f"chosen: {r.chosen}, at most {plan.max_groups} group(s) per unit"
        )
        lines.append(
            f"bounding         max_rows_per_unit='auto' ({chosen}): a DP {r.auto.level:g}-quantile "
            f"of rows per unit (Amin et al. 2019) from an engine-side histogram of rows per "
            f"unit, capped at {r.auto.max_bound}; share {float(r.share):.3f} of the budget, "
            f"epsilon {_fmt(r.epsilon)}; then rows kept at random per unit for each release"
        )
    else:
        lines.append(
            f"bounding         at most {plan.max_rows} row(s) per unit in total and at most "
            f"{plan.max_groups} group(s) per unit, chosen at random per unit for each release "
            "(salted hash, fresh salt)"
        )
    if plan.by:
        keys = "public (given; empty groups released)" if plan.public_keys else "private"
        lines.append(f"group by         {', '.join(plan.by)}  keys: {keys}")
    for note in plan.notes:
        lines.append(f"note             {note}")
    b = plan.budget
    if b is None:
        lines.append("")
        lines.append("(give epsilon=... or rho=... to see noise scales and the budget split)")
        return "\n".join(lines)
    lines.append(f"privacy cost     {b.cost!r}  (one accountant entry)")
    lines.append(
        f"noise            {b.noise} "
        + ("(discrete Laplace, pure DP)" if b.noise == "laplace" else "(discrete Gaussian, zCDP")
        + ("" if b.noise == "laplace" else f", rho = {_fmt(float(b.rho or 0))})")
    )
    lines.append(f"intervals        {1 - plan.alpha:.3g} level, from public parameters only")
    exact = [
        p.aggregate
        for p in plan.parts
        if law(p.noise.kind, p.noise.scale).zero_probability() >= 0.5
    ]
    if exact:
        lines.append(
            f"note             noise below the lattice step for {', '.join(dict.fromkeys(exact))}: "
            "zero more often than not, so those figures are released exact (intervals of "
            "width 0) most of the time; the budget is so large the noise hides almost nothing"
        )
    lines.append("")
    w = max(
        [18, *(len(p.aggregate) + 2 for p in plan.parts)]
        + [len(q.aggregate) + 2 for q in plan.quantiles]
    )
    head = f"{'aggregate':<{w}}{'statistic':<16}{'share':>8}{'sensitivity':>14}"
    head += f"{'noise std':>12}{'+- interval':>14}"
    lines.append(head)
    for p in plan.parts:
        u = p.part.unit
        lines.append(
            f"{p.aggregate:<{w}}{p.part.label:<16}{float(p.share):>8.3f}"
            f"{_fmt(p.sensitivity * u):>14}{_fmt(p.noise.std * u):>12}"
            f"{_fmt(p.half_width * u):>14}"
        )
    for q in plan.quantiles:
        lines.extend(_quantile_lines(plan, q, w))
    if plan.quantiles and b.noise != "laplace":
        k = plan.max_rows
        rows = "" if k == 1 else f"; the epsilons are per row, a unit's {k} rows cost {k} times"
        lines.append(
            f"{'':17}quantile stages under zCDP: an exponential mechanism at epsilon costs "
            "rho = epsilon**2 / 8 (bounded range), discrete Laplace epsilon**2 / 2 (pure DP); "
            f"each stage has its own part of its aggregate's rho{rows}"
        )
    picked = dict(plan.chosen)
    for bp in plan.bounds:
        lines.append(
            f"{bp.aggregate:<{w}}{'bounds (auto)':<16}{float(bp.share):>8.3f}"
            f"{'epsilon per row ' + _fmt(bp.epsilon):>40}"
        )
        how = (
            "a private 99.9th percentile of the values (AboveThreshold over geometric "
            "candidates, Durfee 2023"
            + (")" if bp.lower is not None else "; and the 0.1th, with half each)")
            if bp.method == "tail"
            else "a noisy signed log2 histogram of the values (ApproximateBounds-style; "
            f"the public fallback {default_fallback(bp.lower)} if no bucket passes its "
            "threshold)"
        )
        low = "" if bp.lower is None else f", the lower bound fixed at {bp.lower!r}"
        lines.append(
            f"                 chosen privately at release time from {how}{low}, one choice "
            "for all groups: data-dependent but differentially private"
        )
        got = picked.get(bp.aggregate)
        if got is not None:
            frac = got.clipped_fraction
            lines.append(
                f"                 chosen bounds {got.bounds}; DP estimate of the fraction "
                "of values outside them: "
                + (
                    "n/a (the tail method clips about 0.1 % by design)"
                    if frac is None
                    else _fmt(frac)
                )
            )
            if getattr(got, "fallback", False):
                lines.append(
                    "                 no bucket of the noisy histogram passed its threshold "
                    "(too few values for the noise): these are the public fallback bounds, "
                    "not read from the data"
                )
    if plan.rows is not None and plan.rows.chosen is None:
        lines.append(
            f"                 worst case: the figures above assume max_rows_per_unit = "
            f"{plan.max_rows} (the cap of 'auto'); a release uses the bound it chooses, at "
            "most that, and its plan (release.plan) shows the figures it used"
        )
    s = plan.selection
    if s is not None:
        src = f"reuses {s.reuse!r}" if s.reuse else f"share {float(s.share):.3f}"
        lines.append("")
        lines.append(
            f"key selection    {s.kind} thresholding on a noisy count of distinct units ({src}); "
            f"a group is released if its noisy count >= {s.threshold}"
        )
        if s.cut > 1:
            lines.append(
                f"pre-threshold    a group with fewer than {s.cut} distinct units (exact count) "
                "is dropped inside the engine and never reaches Python; of the delta below, "
                f"{_fmt(s.delta_cut)} pays for this deterministic drop (the threshold is "
                f"{s.cut - 1} higher than without it)"
            )
        held = "one unit" if s.cut == 1 else f"{s.cut} units"
        lines.append(
            f"                 P[a group held by {held} appears] summed over a unit's <= "
            f"{s.keys_per_unit} group(s): {_fmt(s.delta_bound)} <= {_fmt(s.delta)}  "
            "(delta for selection)"
        )
    lines.append("")
    lines.append(
        "Intervals cover the noise only: clipping to the bounds, per-unit bounding and "
        "key selection can bias a value beyond its interval. Counts and sums: from the exact "
        "noise law (Laplace) or a rigorous tail bound (Gaussian); means, variances, "
        "deviations: conservative (union bound over their parts); quantiles: value intervals "
        "for the rank quantiles, jointly over the levels, from the statistics layer "
        "(conservative)."
    )
    return "\n".join(lines)
