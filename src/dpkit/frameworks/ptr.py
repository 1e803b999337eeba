"""Propose-test-release (Dwork and Lei 2009).

The analyst proposes a bound ``b`` on the local sensitivity. The mechanism computes the
distance to high sensitivity ``D(f, x, b) = min { k : A(f, x, k) > b }`` (``A`` from
:func:`dpkit.sensitivity.local_at_distance`, exact), tests a noisy copy of it against a
threshold, and releases ``f(x)`` with Laplace noise of scale ``b / epsilon_release`` only when
the test passes; otherwise it refuses.

Theorem and threshold (the derivation the code follows)
-------------------------------------------------------
Let ``D~ = min(D, C) + X``, ``X ~ Laplace((1 + g) / epsilon_test)`` rounded to the grid ``g``,
with a cap ``C >= 1`` fixed from public parameters (``_cap``); ``min(D, C)`` still changes by
at most 1 between neighbours (``D`` does, Vadhan 2017 section 3.2), so publishing ``D~`` is
``epsilon_test``-DP. The test passes when ``D~ > T``.

1. If ``D(x) = 0`` (``x`` itself has local sensitivity above ``b``), the pass probability is
   ``P[round(X) > T] <= P[X > T - g/2] = exp(-epsilon_test (T - g/2) / (1 + g)) / 2``. With
   ``T = (1 + g) ln(1 / (2 delta)) / epsilon_test + g`` this is at most ``delta``.
2. If ``D(x) >= 1`` then ``LS(f, x) <= b``: every neighbour ``x'`` has
   ``|f(x) - f(x')| <= b``, and after rounding ``f`` to the grid, ``<= b + g``. The release
   ``f~(x) + Laplace((b + g) / epsilon_release)`` (rounded: post-processing) is
   ``epsilon_release``-DP for the pair ``(x, x')``, and the pass/refuse bit is
   ``epsilon_test``-DP, so for every output set ``S``
   ``P[M(x) in S] <= exp(epsilon_test + epsilon_release) P[M(x') in S]``.
3. In case 1, ``P[M(x) in S] <= delta + P[refuse at x] 1{refuse in S}
   <= delta + exp(epsilon_test) P[M(x') in S]``.

So the whole mechanism is ``(epsilon_test + epsilon_release, delta)``-DP (Dwork and Lei 2009;
Vadhan 2017, Proposition 3.3 and the PTR theorem in Dwork and Roth 2014, section 7.3; the
verified proof of Barthe et al. 2014), and the cost is charged whether or not it refuses.
``epsilon`` is the total; ``test_fraction`` of it goes to the test. A released value outside
the statistic's public range (:func:`dpkit.frameworks._range.public_range`) is moved to its
nearest end: post-processing, no privacy cost (``clamp=False`` keeps the draw).

References
----------
C. Dwork and J. Lei. Differential privacy and robust statistics. STOC 2009.
S. Vadhan. The complexity of differential privacy. 2017, section 3.2.
G. Barthe, M. Gaboardi, E. J. Gallego Arias, J. Hsu, C. Kunz, P.-Y. Strub. Proving
differential privacy in Hoare logic. CSF 2014.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dpkit._lattice import on_data_lattice
from dpkit._validate import (
    check_bool,
    check_bounds,
    check_delta,
    check_finite_array,
    check_int,
    check_nonnegative,
    check_positive,
    check_relation,
)
from dpkit.accounting.accountant import plain_event
from dpkit.accounting.guard import spend
from dpkit.accounting.loss import ApproxDP
from dpkit.errors import ParameterError
from dpkit.frameworks._queries import check_exact_query
from dpkit.frameworks._range import clamp_to_range, public_range
from dpkit.noise.grid import (
    grid_for,
    grid_laplace_scale,
    laplace_on_grid,
    laplace_units,
    noise_spacing,
)
from dpkit.release import Release
from dpkit.samplers import as_source
from dpkit.sensitivity.catalogue import statistic_on_grid

__all__ = [
    "distance_to_high_sensitivity",
    "propose_test_release",
    "propose_test_release_sample",
    "ptr_threshold",
]

_OWNER = "propose_test_release"


def ptr_threshold(epsilon_test: float, delta: float, spacing: float = 0.0) -> float:
    """The threshold ``T = (1 + g) ln(1 / (2 delta)) / epsilon_test + g`` (module docstring).

    ``epsilon_test`` finite and > 0, ``0 < delta < 1`` (as :func:`propose_test_release`
    takes it), the grid ``g = spacing`` finite and >= 0. For ``delta >= 1/2`` the threshold is
    at most ``g`` and can be negative: the test may then pass at distance 0 with probability
    above one half, which such a ``delta`` allows (``1 - 1 / (4 delta) <= delta``).

    Raises
    ------
    TypeError
        A parameter that is not a real number.
    ParameterError
        A parameter outside its range, or a threshold that overflows a float (an
        ``epsilon_test`` so small that the test could never pass).

    Examples
    --------
    >>> round(ptr_threshold(1.0, 1e-6), 4)
    13.1224
    """
    owner = "ptr_threshold"
    eps = check_positive(owner, "epsilon_test", epsilon_test)
    dlt = check_delta(owner, delta, allow_zero=False)
    g = check_nonnegative(owner, "spacing", spacing)
    if math.isinf(1 / (2 * dlt)):
        # propose_test_release refuses such a delta (its threshold overflows): so does this
        raise ParameterError(
            f"{owner}: `delta`={dlt!r} is so small that 1 / (2 delta) overflows a float; "
            "use delta >= 2**-1023"
        )
    threshold = _threshold(eps, dlt, g)
    if not math.isfinite(threshold):
        raise ParameterError(
            f"{owner}: the threshold overflows a float for `epsilon_test`={eps!r}, "
            f"`delta`={dlt!r} and `spacing`={g!r}: the test could never pass; raise epsilon_test"
        )
    return threshold


def _threshold(epsilon_test: float, delta: float, spacing: float) -> float:
    """:func:`ptr_threshold` of checked parameters (``inf`` where it overflows)."""
    return (1 + spacing) * math.log(1 / (2 * delta)) / epsilon_test + spacing


def _cap(threshold: float, epsilon_test: float) -> int:
    """Distances are capped at ``C``: past ``T + 60 / epsilon_test`` the test passes except
    with probability ``exp(-60) / 2``, so exploring further changes nothing visible.
    ``C`` depends on public parameters only (at most ``2**62``: any public cap is valid)."""
    top = threshold + 60 / epsilon_test
    return max(1, math.ceil(top)) if top < 2.0**62 else 2**62


def threshold_plan(epsilon_test: float, delta: float) -> tuple[float, float, int]:
    """The test's grid, threshold and cap ``(g, T, C)``, checked finite (public values).

    Raises a ParameterError naming epsilon and delta when the threshold overflows (epsilon
    so small that the test could never pass)."""
    if not epsilon_test > 0:
        raise ParameterError(
            f"{_OWNER}: the test's share of `epsilon` ({epsilon_test!r}) underflows to 0; "
            "raise epsilon or test_fraction"
        )
    cap_estimate = (2 * math.log(1 / (2 * delta)) + 62) / epsilon_test
    g_test = noise_spacing(
        _OWNER,
        1 / epsilon_test,
        extent=min(max(cap_estimate, 1.0), 2.0**62),
        params=f"`epsilon` (test share {epsilon_test!r})",
        epsilon=epsilon_test,
    )
    threshold = ptr_threshold(epsilon_test, delta, g_test)
    if not math.isfinite(threshold):
        raise ParameterError(
            f"{_OWNER}: the test threshold overflows a float for the test's share of "
            f"`epsilon` ({epsilon_test!r}) and `delta`={delta!r}: the test could never pass; "
            "raise epsilon"
        )
    return g_test, threshold, _cap(threshold, epsilon_test)


#: The query names propose-test-release takes (the distance to high sensitivity takes all
#: of :data:`~dpkit.frameworks._queries.EXACT_QUERIES`).
_PTR_QUERIES = "'count', 'sum', 'mean', 'median' or a percentile ('pNN')"


def _query(query: Any) -> Any:
    from dpkit.sensitivity.catalogue import resolve

    return resolve(query, owner=_OWNER)


def distance_to_high_sensitivity(
    query: Any,
    data: Any,
    proposed_bound: float,
    *,
    bounds: tuple[float, float],
    relation: str = "unbounded",
    cap: int | None = None,
) -> int:
    """``D(f, x, b) = min { k >= 0 : A(f, x, k) > b }``, exactly, or ``cap`` if larger.

    Parameters
    ----------
    query : str or Statistic
        ``"mean"``, ``"median"``, a percentile, ``"sum"`` or ``"count"``.
    data : array_like
        Finite values, clipped to ``bounds``.
    proposed_bound : float
        ``b > 0``.
    bounds : (float, float)
        Public ``(lower, upper)``.
    relation : {"unbounded", "bounded"}
        Neighbour relation.
    cap : int, optional
        Stop at this distance (``None``: search until ``A`` provably never exceeds ``b``).

    Returns
    -------
    int
        The distance; ``cap`` (or ``-1`` when uncapped and ``A`` never exceeds ``b``) when no
        ``k`` below it qualifies.

    Notes
    -----
    ``A(f, x, k)`` is non-decreasing in ``k``: the search stops at the first ``k`` where it
    exceeds ``b``, at ``cap``, at the stable distance
    (:func:`dpkit.sensitivity.at_distance.stable_distance`) or once the envelope shows that
    it never will. For the median and the percentiles whose level has a denominator at most
    16 it does not visit every ``k``: a galloping search finds the same first ``k`` from
    ``O(log k)`` exact values of ``A``, each ``O(k D)`` (``_percentile_first_above``), so an
    epsilon so small that the cap is far away does not cost ``O(n^3)``. Other queries scan
    ``k = 0, 1, ...`` (the mean in ``O(log k)`` per distance).

    Examples
    --------
    >>> distance_to_high_sensitivity("mean", [1.0, 2.0, 3.0, 4.0], 30.0, bounds=(0, 100))
    2
    """
    from dpkit.sensitivity import at_distance, percentile_distance

    owner = "distance_to_high_sensitivity"
    b = check_positive(owner, "proposed_bound", proposed_bound)
    lower, upper = check_bounds(owner, bounds)
    relation = check_relation(owner, relation)
    if cap is not None:
        cap = check_int(owner, "cap", cap, minimum=1)
    arr = np.clip(check_finite_array(owner, "data", data, ndim=1), lower, upper)
    q = _query(query)
    check_exact_query(owner, query, q)
    x, lo, hi = at_distance.prepare(owner, q, arr, (lower, upper))
    limit = cap if cap is not None else x.size + 4
    stable = at_distance.stable_distance(q, x.size, relation)
    env = at_distance.upper_envelope(q, x, relation, lo, hi, x.size + 3)
    if q.kind == "percentile" and q.q is not None and percentile_distance.supported(q.q):
        found = _percentile_first_above(q.q, x, relation, lo, hi, b, limit, stable, env)
        if found is not None:
            return found
        return cap if cap is not None else -1
    for k, a in enumerate(at_distance.sequence(q, x, relation, lo, hi)):
        if a > b:
            return k
        if k + 1 >= limit:
            return limit if cap is not None else -1
        if k >= stable or env[min(k + 1, env.size - 1) :].max() <= b:
            # A(k') = A(k) <= b past the stable distance, or A(k') <= B(k') <= b: never above
            return cap if cap is not None else -1
    raise AssertionError("unreachable")  # pragma: no cover


def _percentile_first_above(
    level: float,
    x: np.ndarray,
    relation: str,
    lower: float,
    upper: float,
    b: float,
    limit: int,
    stable: int,
    env: np.ndarray,
) -> int | None:
    """The scan of :func:`distance_to_high_sensitivity` for a percentile whose level has a
    denominator ``D <= 16``, without visiting every distance: the first ``k`` it would return
    for ``A(k) > b``, or ``None`` when it stops first.

    The scan stops after ``k`` at the first ``k`` with ``k + 1 >= limit``, ``k >= stable`` or
    ``max(env[k + 1:]) <= b`` (all public or data-only figures, found here in ``O(n)``), and
    returns the first ``k`` up to there where the value it reports, ``ceil_float(A(k) u +
    slack)``, exceeds ``b``. That value is non-decreasing in ``k``, so a galloping search finds
    the same ``k`` from ``O(log k)`` exact values of ``A``, each ``O(k D)``
    (:class:`dpkit.sensitivity.percentile_distance.PercentileDistances`), instead of the
    ``O(k^2)`` per distance of the scan.
    """
    from dpkit.sensitivity.lattice_data import LatticeData, ceil_float
    from dpkit.sensitivity.percentile_distance import PercentileDistances

    later = np.maximum.accumulate(env[::-1])[::-1]  # later[j] = max(env[j:])
    last = min(limit - 1, stable)  # stable <= n + 1, so k + 1 indexes env below
    quiet = np.flatnonzero(later[1 : last + 2] <= b)
    if quiet.size:
        last = min(last, int(quiet[0]))
    ld = LatticeData(x, lower, upper)
    unit, slack = Fraction(ld.unit), ld.slack(1)
    dist = PercentileDistances(ld, level, relation)
    return dist.first_above(lambda v: ceil_float(Fraction(v, dist.den) * unit + slack) > b, last)


def propose_test_release(
    data: Any,
    query: Any,
    proposed_bound: float,
    *,
    epsilon: float,
    delta: float,
    bounds: tuple[float, float],
    relation: str = "unbounded",
    test_fraction: float = 0.5,
    rng: Any = None,
    accountant: Any = None,
    clamp: bool = True,
) -> Release:
    """Release ``query(data)`` by propose-test-release, or refuse.

    Parameters
    ----------
    data : array_like
        Finite values (one per person), clipped to ``bounds``.
    query : str or Statistic
        ``"mean"``, ``"median"``, a :func:`dpkit.queries.percentile`, ``"sum"``, ``"count"``.
    proposed_bound : float
        The proposed local-sensitivity bound ``b > 0``, chosen without looking at the data.
    epsilon : float
        Total privacy parameter (test plus release), finite and > 0.
    delta : float
        In (0, 1): the probability of releasing when ``x`` is at high sensitivity.
    bounds : (float, float)
        Public ``(lower, upper)`` (the book's ``u`` is ``bounds=(0, u)``).
    relation : {"unbounded", "bounded"}
        Neighbour relation.
    test_fraction : float
        Share of ``epsilon`` spent on the test, in (0, 1).
    rng
        ``None`` (secure), an ``int`` seed or a bit source.
    accountant : optional
        Charged ``ApproxDP(epsilon, delta)`` under ``relation`` before the test, whatever its
        outcome.
    clamp : bool
        ``True`` (default): a released value outside the statistic's public range (the
        bounds for a mean or a percentile; for a count or a sum ``n``-dependent under
        ``"bounded"``, only its sign otherwise) is moved to its nearest end: post-processing,
        no privacy cost. ``False`` returns the noisy value as drawn.

    Returns
    -------
    Release
        ``refused=False`` with ``value`` and ``scale = (b + g) / epsilon_release``, or
        ``refused=True`` with ``value=None``. ``privacy = ApproxDP(epsilon, delta)`` either
        way, under ``relation`` (``Release.relation``). ``details``: ``noisy_distance`` and
        ``threshold`` (private / public), ``proposed_bound``, ``epsilon_test``,
        ``epsilon_release``, ``cap``, ``range`` (the public range,
        :func:`dpkit.frameworks._range.public_range`) and ``clamped`` (the drawn value lay
        outside it); and the diagnostic ``distance`` (``min(D, cap)``, read from the data:
        not private).

    Raises
    ------
    TypeError
        Non-numeric input.
    ParameterError
        ``proposed_bound <= 0``, ``delta`` outside (0, 1), ``epsilon <= 0``, bad bounds, NaN or
        empty data, ``test_fraction`` outside (0, 1), queries without an exact ``A``.

    Privacy
    -------
    ``(epsilon, delta)``-DP under ``relation`` (module docstring: the test and the release each
    spend their share; ``delta`` covers the test passing at high sensitivity).

    Notes
    -----
    Cost: one sort plus the exact ``A(f, x, k)`` for ``k <= min(D, C)``,
    ``C = ceil(T + 60 / epsilon_test)``; for the median and the percentiles whose level has a
    denominator at most 16, ``A`` at ``O(log min(D, C))`` distances only, ``O(k)`` each
    (:func:`distance_to_high_sensitivity`).

    Examples
    --------
    >>> ages = np.arange(20.0, 70.0).repeat(100)
    >>> rel = propose_test_release(ages, "mean", 0.05, epsilon=2.0, delta=1e-6,
    ...                            bounds=(0, 100), rng=0)
    >>> rel.refused, round(rel.value, 2), round(rel.details["threshold"], 2)
    (False, 44.47, 13.12)
    >>> propose_test_release(ages, "mean", 0.001, epsilon=2.0, delta=1e-6, bounds=(0, 100),
    ...                      rng=0).refused
    True
    """
    p = plan_release(data, query, proposed_bound, epsilon, delta, bounds, relation, test_fraction)
    check_bool(_OWNER, "clamp", clamp)
    source = as_source(rng)  # a bad `rng` is refused before the spend
    # the release's noise is calibrated to a bound that holds only when the test passes:
    # (epsilon, delta)-DP as a whole, no Laplace event of a known scale
    spend(accountant, p.cost, _OWNER, relation, [plain_event(p.cost)])
    noisy, vals = draw_release(p, 1, source, lazy=True)
    noisy_distance = float(noisy[0])
    details: dict[str, Any] = {
        "noisy_distance": noisy_distance,
        "threshold": p.threshold,
        "proposed_bound": p.b,
        "epsilon_test": p.eps_test,
        "epsilon_release": p.eps_rel,
        "cap": p.cap,
        "range": p.range,
        "clamped": False,
    }
    diagnostics = {"distance": p.distance}  # the exact (capped) distance: not private
    if vals is None:
        return Release(
            value=None,
            mechanism="propose_test_release",
            privacy=p.cost,
            refused=True,
            details=details,
            diagnostics=diagnostics,
            relation=relation,
        )
    out, moved = clamp_to_range(vals, *p.range) if clamp else (vals, vals != vals)
    details["clamped"] = bool(moved[0])
    return Release(
        value=float(out[0]),
        mechanism="propose_test_release",
        privacy=p.cost,
        scale=p.scale,
        details=details,
        diagnostics=diagnostics,
        relation=relation,
    )


@dataclass(frozen=True)
class PtrPlan:
    """Everything a PTR release fixes before drawing noise (validated, data-dependent:
    never publish it; :func:`draw_release` draws from it)."""

    b: float
    cost: ApproxDP
    eps_test: float
    eps_rel: float
    g_test: float
    threshold: float
    cap: int
    distance: int
    units: int  # the exact statistic of the lattice-mapped data, in units of g_rel
    g_rel: float
    scale: float
    range: tuple[float, float]  # the statistic's public range (public_range)


def plan_release(
    data: Any,
    query: Any,
    proposed_bound: Any,
    epsilon: Any,
    delta: Any,
    bounds: Any,
    relation: Any,
    test_fraction: Any,
) -> PtrPlan:
    """Validate a release and fix everything it draws with: the grids, the threshold, the
    distance to high sensitivity (from the data), the exact statistic (the internal API of
    :func:`propose_test_release`, which ``compare`` runs many times from one plan)."""
    b = check_positive(_OWNER, "proposed_bound", proposed_bound)
    eps = check_positive(_OWNER, "epsilon", epsilon)
    dlt = check_delta(_OWNER, delta, allow_zero=False)
    lower, upper = check_bounds(_OWNER, bounds)
    frac = check_positive(_OWNER, "test_fraction", test_fraction)
    if not frac < 1:
        raise ParameterError(f"{_OWNER}: `test_fraction` must be in (0, 1); got {test_fraction!r}")
    check_relation(_OWNER, relation)
    arr = np.clip(check_finite_array(_OWNER, "data", data, ndim=1), lower, upper)
    q = _query(query)
    check_exact_query(_OWNER, query, q, _PTR_QUERIES)
    if q.kind in ("var", "std"):
        raise ParameterError(
            f"{_OWNER}: propose-test-release needs the exact distance to high sensitivity, "
            f"which dpkit computes exactly for count, sum, mean, median and percentiles only; "
            f"for `query`={q.name!r}, A(f, x, k) is a certified upper bound (not exact), whose "
            "comparisons with the proposed bound could break the distance's sensitivity of "
            "one: use smooth_sensitivity_release"
        )
    # the released statistic is q(R(x)), R the per-record lattice map of the bounds, computed
    # exactly; its sensitivity analysis runs on R(x), which lies in the bounds (see on_data_lattice)
    lat = on_data_lattice(arr, lower, upper, owner=_OWNER)
    eps_test, eps_rel = eps * frac, eps * (1 - frac)
    g_test, threshold, cap = threshold_plan(eps_test, dlt)
    # the release's grid, checked now (never after the spend)
    g_rel = grid_for(
        b / eps_rel if eps_rel > 0 else math.inf,
        lower,
        upper,
        owner=_OWNER,
        params=f"`proposed_bound`={b!r} and `epsilon`={eps!r} (release share {eps_rel!r})",
        epsilon=eps_rel,
    )
    distance = distance_to_high_sensitivity(
        q, lat.values, b, bounds=(lower, upper), relation=relation, cap=cap
    )
    scale = float(grid_laplace_scale(b, eps_rel, g_rel))
    return PtrPlan(
        b,
        ApproxDP(eps, dlt),
        eps_test,
        eps_rel,
        g_test,
        threshold,
        cap,
        distance,
        statistic_on_grid(q, lat.units, lat.unit, g_rel),
        g_rel,
        scale,
        public_range(q.kind, lower, upper, int(arr.size), relation),
    )


def draw_release(
    p: PtrPlan, size: int, source: Any, *, lazy: bool = False
) -> tuple[np.ndarray, np.ndarray | None]:
    """``size`` noisy distances and released values (NaN where the test fails).

    ``lazy``: draw the release noise only if some test passed (``None`` otherwise), as a
    single release does.
    """
    noisy, _ = laplace_on_grid(np.full(size, float(p.distance)), 1.0, p.eps_test, p.g_test, source)
    passed = noisy > p.threshold
    if lazy and not passed.any():
        return noisy, None
    vals, _ = laplace_units(np.full(size, p.units, dtype=np.int64), p.b, p.eps_rel, p.g_rel, source)
    return noisy, np.where(passed, vals, np.nan)


def propose_test_release_sample(
    data: Any,
    query: Any,
    proposed_bound: float,
    *,
    epsilon: float,
    delta: float,
    bounds: tuple[float, float],
    relation: str = "unbounded",
    test_fraction: float = 0.5,
    size: int = 1,
    rng: Any = None,
    clamp: bool = True,
) -> np.ndarray:
    """``size`` independent PTR releases (NaN for a refusal), the same code as a release.

    The vectorised core of :func:`propose_test_release` for audits and studies (``clamp``
    as there): the distance is computed once; each draw costs the full ``(epsilon, delta)``
    and no accountant is charged.

    Examples
    --------
    >>> ages = np.arange(20.0, 70.0).repeat(100)
    >>> out = propose_test_release_sample(ages, "mean", 0.05, epsilon=2.0, delta=1e-6,
    ...                                   bounds=(0, 100), size=4, rng=0)
    >>> out.shape, bool(np.isnan(out).any())
    ((4,), False)
    """
    size = check_int(_OWNER, "size", size, minimum=1)
    p = plan_release(data, query, proposed_bound, epsilon, delta, bounds, relation, test_fraction)
    check_bool(_OWNER, "clamp", clamp)
    _noisy, vals = draw_release(p, size, as_source(rng))
    assert vals is not None
    return clamp_to_range(vals, *p.range)[0] if clamp else vals
