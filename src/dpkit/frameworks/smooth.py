"""Smooth-sensitivity release (Nissim, Raskhodnikova and Smith 2007; Bun and Steinke 2019).

Release ``f(x) + (S(x) / s) Z`` where ``S`` is the ``beta``-smooth sensitivity
``S_beta(f, x) = max_k exp(-beta k) A(f, x, k)`` (:func:`dpkit.sensitivity.smooth`, exact,
over every ``k`` that can matter) and ``Z`` is admissible noise. The three choices:

=============  ===========================  ==========================  ==================
``noise``      ``beta``                     noise                       guarantee
=============  ===========================  ==========================  ==================
``laplace``    ``eps / (2 ln(2 / delta))``  ``Laplace(2 S / eps)``      ``(eps, delta)``
``cauchy``     ``eps / 6``                  ``(6 S / eps) Cauchy``      ``eps`` (pure)
``student_t``  ``eps / (2 (d + 1))``        ``(S / s) T_d``,            ``eps`` (pure)
                                            ``s = eps sqrt(d) / (d+1)``
=============  ===========================  ==========================  ==================

Laplace and Cauchy: NRS07 Lemma 2.6 and Lemma 2.7 (with ``gamma = 2``), the admissibility of
Laplace for ``(alpha, beta) = (eps/2, eps/(2 ln(2/delta)))`` and of ``1 / (1 + z**2)`` for
``(eps/6, eps/6)``, combined by their Lemma 2.6: for neighbours, ``f(x') - f(x)`` is a shift by
at most ``S(x)`` (at most ``alpha`` in noise units) and ``S(x') / S(x)`` a dilation by at most
``e^beta``. Student's t: Bun and Steinke 2019, section 3.4: for ``Z ~ T_d``,
``D_inf(Z || e^t Z + s) <= |t| (d + 1) + |s| (d + 1) / (2 sqrt(d))``; with shift ``<= s`` (in
noise units) and ``|t| <= beta`` the two halves above add to ``eps``.

Floating point: ``f`` is rounded to the grid ``g = 2**(floor(log2((b - a) / eps)) - 30)`` (fixed
from public parameters); ``S + g`` is a ``beta``-smooth upper bound on the local sensitivity
of the rounded ``f`` (``S(x) + g <= e^beta S(x') + g <= e^beta (S(x') + g)``), and the noise
is the continuous noise rounded to the grid, sampled exactly by inversion
(:mod:`dpkit.samplers.heavy_tailed`): the release is ``g * round((f~(x) + X) / g)``, a
post-processing of the continuous mechanism, so it keeps its guarantee.

Exactness of ``S``: for the mean and the percentiles ``A(f, x, k)`` is
computed exactly and rounded up to a float, a monotone map, so ``A(x, k) <= A(x', k + 1)``
holds for the values used; the smooth maximum's own float rounding (a relative few ``2**-53``)
is absorbed by the ``+ g`` above, since ``(e^beta - 1) g`` exceeds ``2**-40`` times the largest
possible ``S`` for every admissible beta. For the variance and the deviation ``A`` is a
certified upper bound exceeding the exact value by at most a public ``R(k)``; then ``S(x) <=
e^beta S(x') + G`` with ``G = max_k e^(-beta k) R(k)``
(:func:`dpkit.sensitivity.at_distance.certified_gap`), and adding ``G / (e^beta - 1)`` makes
the bound beta-smooth again.

Range: a release outside the statistic's public range (the bounds for a mean or a
percentile, ``[0, (b - a)**2 / 4]`` for a variance; :func:`dpkit.frameworks._range.public_range`)
is moved to its nearest end, a post-processing that costs no privacy and never moves it away
from the true value (``clamp=False`` keeps the draw; ``details["clamped"]`` says which).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from dpkit._lattice import on_data_lattice
from dpkit._validate import (
    check_bool,
    check_bounds,
    check_choice,
    check_delta,
    check_finite_array,
    check_int,
    check_positive,
    check_relation,
)
from dpkit.accounting.accountant import plain_event
from dpkit.accounting.guard import spend
from dpkit.accounting.loss import ApproxDP, PrivacyLoss, PureDP
from dpkit.errors import ParameterError
from dpkit.frameworks._queries import check_exact_query
from dpkit.frameworks._range import clamp_to_range, public_range
from dpkit.noise.grid import MAX_GRID_NOISE_SCALE, grid_for, grid_release, heavy_tailed_units
from dpkit.release import Release
from dpkit.samplers import as_source
from dpkit.sensitivity.catalogue import statistic_on_grid

__all__ = [
    "smooth_noise_parameters",
    "smooth_sensitivity_release",
    "smooth_sensitivity_sample",
    "smooth_upper_bound",
]

_OWNER = "smooth_sensitivity_release"
NOISES = ("laplace", "cauchy", "student_t")


def smooth_noise_parameters(
    noise: str, epsilon: float, delta: float = 0.0, df: int = 3
) -> tuple[float, float]:
    """``(beta, multiplier)``: the smoothing parameter and the noise scale per unit of ``S``.

    The released noise is ``multiplier * S * Z`` with ``Z`` standard Laplace, Cauchy or
    Student's t (module docstring). ``epsilon`` finite and > 0; ``delta`` in (0, 1) for
    ``"laplace"`` and 0 for the pure-DP noises (as :func:`smooth_sensitivity_release` takes
    them); ``df`` an int in [1, 64] (Student's t).

    Raises
    ------
    TypeError
        A non-string ``noise``, a parameter that is not a real number, a non-integer ``df``.
    ParameterError
        An unknown noise or a parameter outside its range, or an ``epsilon`` so small that
        ``beta`` underflows to 0 or the multiplier overflows.

    Examples
    --------
    >>> beta, mult = smooth_noise_parameters("laplace", 1.0, 1e-6)
    >>> round(beta, 5), mult
    (0.03446, 2.0)
    >>> smooth_noise_parameters("cauchy", 1.0)
    (0.16666666666666666, 6.0)
    """
    owner = "smooth_noise_parameters"
    check_choice(owner, "noise", noise, NOISES)
    eps = check_positive(owner, "epsilon", epsilon)
    dlt = check_delta(owner, delta)
    if noise != "laplace" and dlt != 0:
        raise ParameterError(
            f"{owner}: `noise`={noise!r} gives pure epsilon-DP and uses no delta; pass "
            f"`delta`=0 (got {delta!r})"
        )
    dof = check_int(owner, "df", df, minimum=1, maximum=64)
    beta, mult = _noise_parameters(noise, eps, dlt, dof, owner)
    if not (beta > 0 and math.isfinite(mult)):
        raise ParameterError(
            f"{owner}: `epsilon`={eps!r} is too small: the smoothing parameter beta ({beta!r}) "
            f"or the noise multiplier ({mult!r}) is not a positive finite float"
        )
    return beta, mult


def _noise_parameters(
    noise: str, epsilon: float, delta: float, df: int, owner: str
) -> tuple[float, float]:
    """:func:`smooth_noise_parameters` of validated parameters (``owner`` names the caller)."""
    if noise == "laplace":
        if not delta > 0:
            raise ParameterError(
                f"{owner}: noise='laplace' needs 0 < delta < 1 (it gives (epsilon, delta)-DP); "
                f"got delta={delta!r}. Use noise='cauchy' or 'student_t' for pure epsilon-DP"
            )
        return epsilon / (2 * math.log(2 / delta)), 2 / epsilon
    if noise == "cauchy":
        return epsilon / 6, 6 / epsilon
    if noise == "student_t":
        return epsilon / (2 * (df + 1)), (df + 1) / (epsilon * math.sqrt(df))
    raise ParameterError(f"{owner}: `noise` must be one of {NOISES}; got {noise!r}")


def _prepare(
    data: Any,
    query: Any,
    epsilon: Any,
    delta: Any,
    bounds: Any,
    noise: Any,
    relation: Any,
    df: Any,
    exact_k: Any = None,
) -> dict[str, Any]:
    from dpkit.sensitivity.catalogue import resolve

    eps = check_positive(_OWNER, "epsilon", epsilon)
    dlt = check_delta(_OWNER, delta)
    lower, upper = check_bounds(_OWNER, bounds)
    check_choice(_OWNER, "noise", noise, NOISES)
    if noise != "laplace" and dlt != 0:
        raise ParameterError(
            f"{_OWNER}: `noise`={noise!r} gives pure epsilon-DP and uses no delta; pass "
            f"`delta`=0 (got {delta!r})"
        )
    df = check_int(_OWNER, "df", df, minimum=1, maximum=64)
    check_relation(_OWNER, relation)
    arr = np.clip(check_finite_array(_OWNER, "data", data, ndim=1), lower, upper)
    q = resolve(query, owner=_OWNER)
    check_exact_query(_OWNER, query, q)
    lat = on_data_lattice(arr, lower, upper, owner=_OWNER)
    beta, mult = _noise_parameters(noise, eps, dlt, df, _OWNER)
    params = f"`epsilon`={eps!r}" + (f", `delta`={dlt!r}" if noise == "laplace" else "")
    if not (beta > 0 and math.isfinite(mult)):
        raise ParameterError(
            f"{_OWNER}: {params} is too small: the smoothing parameter beta ({beta!r}) or the "
            f"noise multiplier ({mult!r}) is not a positive finite float"
        )
    if exact_k is not None:
        exact_k = check_int(_OWNER, "exact_k", exact_k, minimum=0)
    spacing = grid_for(
        (upper - lower) / eps,
        lower,
        upper,
        owner=_OWNER,
        params=f"{params} and `bounds`=({lower!r}, {upper!r})",
    )
    # the noise scale in grid units is at least `mult` (S + g >= g): a range the sampler
    # cannot draw from is refused from the public parameters, before the smooth scan
    _check_noise_range(noise, Fraction(mult) * (1 + Fraction(1, 2**40)), spacing, params)
    s_val, s_k, exact = smooth_upper_bound(q, lat.values, beta, relation, lower, upper, exact_k)
    if not math.isfinite(s_val):  # pragma: no cover - the sensitivity functions refuse it
        raise ParameterError(f"{_OWNER}: the smooth sensitivity overflows for `bounds`")
    stat_units = statistic_on_grid(q, lat.units, lat.unit, spacing)
    g = Fraction(spacing)
    s_star = Fraction(s_val) + g  # beta-smooth bound for the rounded statistic
    if q.kind in ("var", "std"):
        # certified (not exact) A for the moments: restore exact beta-smoothness with the
        # public correction G / (e^beta - 1) (at_distance.certified_gap; module docstring)
        from dpkit.sensitivity.at_distance import certified_gap

        gap = Fraction(certified_gap(q.kind, lower, upper, beta))
        s_star += gap / (Fraction(math.expm1(beta)) * (1 - Fraction(1, 2**50)))
    # noise scale in grid units; the float multiplier is taken exactly and rounded *up* by
    # 2**-40 relative so that float error can only add noise
    ratio = s_star * Fraction(mult) * (1 + Fraction(1, 2**40)) / g
    _check_noise_range(noise, ratio, spacing, params)
    privacy: PrivacyLoss = ApproxDP(eps, dlt) if noise == "laplace" else PureDP(eps)
    return {
        "eps": eps,
        "delta": dlt,
        "q": q,
        "units": stat_units,
        "beta": beta,
        "S": s_val,
        "k": s_k,
        "exact": exact,
        "spacing": spacing,
        "ratio": ratio,
        "scale": float(ratio * g),
        "privacy": privacy,
        "noise": noise,
        "df": df,
        "relation": relation,
        "range": public_range(q.kind, lower, upper, int(arr.size), relation),
    }


def _check_noise_range(noise: str, ratio: Fraction, spacing: float, params: str) -> None:
    """Refuse a noise scale of ``ratio`` grid steps that the samplers cannot draw from."""
    if noise == "laplace" and ratio > 2**50:  # the exact rounded-Laplace sampler's range
        raise ParameterError(
            f"{_OWNER}: {params} is too small: the Laplace noise would exceed 2**50 steps of "
            "the output grid, the exact sampler's range"
        )
    if ratio * Fraction(spacing) > MAX_GRID_NOISE_SCALE:
        raise ParameterError(
            f"{_OWNER}: {params} give a noise scale above 2**960 for this data's smooth "
            "sensitivity: epsilon is too small for the bounds (the release could overflow)"
        )


#: A suggested ``exact_k`` when the exact scan is too slow (long runs of ties, huge data).
EXACT_K = 128


def smooth_upper_bound(
    query: Any,
    data: np.ndarray,
    beta: float,
    relation: str,
    lower: float,
    upper: float,
    exact_k: int | None = None,
) -> tuple[float, int, bool]:
    """A ``beta``-smooth upper bound on the local sensitivity: ``(S, k, exact)``.

    ``S(x) = max( max_{k <= K0} e^(-beta k) A(x, k), max_{k > K0} e^(-beta k) B(x, k) )``
    with ``A`` exact (:mod:`dpkit.sensitivity`), ``B >= A`` the toolkit's envelope and the
    fixed ``K0 = exact_k``. It is a ``beta``-smooth upper bound on ``LS``: ``U = A`` up to
    ``K0`` and ``B`` beyond satisfies ``U(x, k) <= U(x', k + 1)`` for neighbours (``A`` by
    NRS07 Lemma 3.2, ``B`` because one record shifts every order statistic, and the
    percentile's position, by at most one index while ``B`` widens by two per step), and
    ``S(x) >= A(x, 0) = LS(x)``; then ``S(x) <= e^beta S(x')`` as in NRS07 Proposition 3.1.
    When the toolkit's proven stopping rule stops before ``K0`` (the usual case), ``S`` *is*
    the smooth sensitivity and ``exact`` is ``True``. ``exact_k=None`` (the default) is the
    toolkit's exact :func:`dpkit.sensitivity.smooth` over every ``k`` that can matter; a
    finite ``K0`` bounds the cost where that scan is long.
    """
    from dpkit.sensitivity import at_distance, smooth
    from dpkit.sensitivity.catalogue import resolve

    q = resolve(query, owner=_OWNER)
    check_exact_query("smooth_upper_bound", query, q)
    if exact_k is None and _fast_percentile(q, relation):
        x, lo, hi = at_distance.prepare(_OWNER, q, data, (lower, upper))
        best, best_k = _smooth_percentile(q, x, beta, lo, hi, relation)
        return best, best_k, True
    if (
        exact_k is None
        or q.kind in ("count", "sum")
        or (q.kind == "mean" and relation == "bounded")
    ):
        ss = smooth(q, data, beta=beta, relation=relation, bounds=(lower, upper))
        return float(ss.sensitivity), int(ss.k), True
    x, lo, hi = at_distance.prepare(_OWNER, q, data, (lower, upper))
    kmax = x.size + 3
    env = at_distance.upper_envelope(q, x, relation, lo, hi, kmax)
    weighted = np.exp(-beta * np.arange(kmax + 1)) * env
    tail = np.maximum.accumulate(weighted[::-1])[::-1]  # tail[k] = max_{k' >= k} e^-bk' B(k')
    best, best_k = -1.0, 0
    for k, a in enumerate(at_distance.sequence(q, x, relation, lo, hi)):
        val = math.exp(-beta * k) * a
        if val > best:
            best, best_k = val, k
        if k + 1 > kmax or tail[k + 1] * (1 + 2.0**-40) <= best:
            return float(best), best_k, True
        if k >= exact_k:
            # past K0 use the envelope: max over k' > K0 of e^-bk' B(k')
            rest = float(tail[k + 1])
            if rest > best:
                k_env = int(k + 1 + np.argmax(weighted[k + 1 :]))
                return rest, k_env, False
            return float(best), best_k, True
    raise AssertionError("unreachable")  # pragma: no cover


def _fast_percentile(q: Any, relation: str) -> bool:
    """Whether :func:`_smooth_percentile` computes ``smooth`` of ``q`` (same value, faster):
    a percentile whose level has a denominator ``D <= 16`` (the median, quartiles, ...;
    :mod:`dpkit.sensitivity.percentile_distance`), under either relation."""
    from dpkit.sensitivity.percentile_distance import supported

    return (
        q.kind == "percentile"
        and relation in ("bounded", "unbounded")
        and q.q is not None
        and supported(q.q)
    )


def _smooth_percentile(
    q: Any, x: np.ndarray, beta: float, lower: float, upper: float, relation: str = "unbounded"
) -> tuple[float, int]:
    """:func:`dpkit.sensitivity.smooth` of a percentile: the same ``(S, k)``, bit for bit,
    from ``A(f, x, k)`` at a few distances instead of every one.

    ``smooth`` scans ``k = 0, 1, ...`` and keeps the first largest ``v(k) = e(k) R(k)``, where
    ``e(k) = math.exp(-beta * k)`` and ``R(k) = ceil_float(A(k) u + slack)`` (``A`` exact, in
    lattice units ``u``), stopping at the stable distance or once the envelope's tail cannot
    beat the best value. The same maximum and its first ``k`` are found here by a
    branch-and-bound over ``k``:

    - the scan never passes ``K``, the first ``k`` where it would stop with ``v(0)`` as its
      best (its best is at least ``v(0)``), and past its actual stop no value beats its best
      (the envelope bounds them: the scan's own stopping rule), so its answer is the largest
      ``v(k)`` over ``0 <= k <= K`` with the smallest such ``k``;
    - on a range ``[lo, hi]`` of distances not visited yet, every value is at most
      ``e(k) B(k) (1 + 2**-40)`` (``B >= R`` the envelope, as in the scan's rule), and once
      ``R(hi + 1)`` is known at most ``max(e(lo..K)) R(hi + 1)`` (``R`` is non-decreasing and
      float products are monotone in each factor). A range whose bound is below the best
      value, or equal to it with the best already at some ``k < lo``, holds no new first
      maximum and is dropped; the others, highest bound first, are split at their middle
      when ``R(hi + 1)`` is known, else at ``min(hi, 2 lo)`` (galloping). The first visit is
      ``0``, the second where the envelope's bound is largest. Where ``R`` is flat across a
      range its bound is at most the value at its left, so flat stretches of ``A`` cost
      nothing;
    - ``A(k)`` at one distance is exact in ``O(k D)`` (:class:`~dpkit.sensitivity.
      percentile_distance.PercentileDistances`: two diagonals, each from ``O(D)`` candidates
      per shape instead of ``O(k)``).

    So the cost is ``O(k D)`` per distance visited, and the distances visited are ``O(log K)``
    per jump of ``A`` that can still win (a few at a tiny epsilon: ``e(k)`` is then nearly
    flat and only the last jumps compete), instead of every distance up to ``K`` (``K = n +
    1`` at a tiny epsilon: ``O(K^2)`` before). In the worst case (every jump competes) each
    distance is visited once: ``O(K^2 D)``. ``tests/frameworks/test_smooth.py`` checks the
    equality with ``smooth`` on many datasets.
    """
    import heapq

    from dpkit._validate import check_sensitivity
    from dpkit.sensitivity import at_distance
    from dpkit.sensitivity.lattice_data import LatticeData, ceil_float
    from dpkit.sensitivity.percentile_distance import PercentileDistances

    ld = LatticeData(x, lower, upper)
    unit = Fraction(ld.unit)
    slack = ld.slack(1)
    dist = PercentileDistances(ld, float(q.q), relation)
    n = x.size
    kmax = n + 3
    stable = at_distance.stable_distance(q, n, relation)
    env = at_distance.upper_envelope(q, x, relation, lower, upper, kmax)
    with np.errstate(over="ignore"):  # exp(-beta k) underflows to 0 for a huge beta
        weighted = np.exp(-beta * np.arange(kmax + 1)) * env
    tail = np.maximum.accumulate(weighted[::-1])[::-1]
    reported: dict[int, float] = {}  # k -> R(k)
    best, best_k = -1.0, 0

    def visit(k: int) -> float:
        nonlocal best, best_k
        a = ceil_float(Fraction(dist.value(k), dist.den) * unit + slack)
        reported[k] = a
        val = math.exp(-beta * k) * a  # the scan's value, the same float
        if val > best or (val == best and k < best_k):
            best, best_k = val, k
        return a

    visit(0)
    # the scan stops at the first k >= stable or with tail[k + 1] (1 + 2**-40) <= its best,
    # which is at least v(0) (stable <= n + 1, so k + 1 <= kmax)
    stops = np.flatnonzero(tail[1 : stable + 1] * (1 + 2.0**-40) <= best)
    last = int(stops[0]) if stops.size else stable
    if last == 0:
        return check_sensitivity("smooth", float(best)), best_k
    factors = np.asarray([math.exp(-beta * k) for k in range(last + 1)])
    later = np.maximum.accumulate(factors[::-1])[::-1]  # later[k] = max e(k..last)
    # e(k) B(k) >= v(k) (the envelope bounds R), raised by 2**-40 as the scan's own rule
    roof = factors * env[: last + 1] * (1 + 2.0**-40)
    ranges: list[tuple[float, int, int]] = []  # (-bound, lo, hi): k in [lo, hi] not visited

    def push(lo: int, hi: int) -> None:
        if lo <= hi:
            bound = float(roof[lo : hi + 1].max())
            if hi + 1 in reported:  # R(k) <= R(hi + 1) on the range
                bound = min(bound, float(later[lo]) * reported[hi + 1])
            heapq.heappush(ranges, (-bound, lo, hi))

    first = 1 + int(np.argmax(roof[1:]))  # where the envelope allows the most
    visit(first)
    push(1, first - 1)
    push(first + 1, last)
    while ranges:
        bound, lo, hi = heapq.heappop(ranges)
        if -bound < best or (-bound == best and best_k < lo):
            continue  # no k in [lo, hi] can be the first largest value
        # bisect (each visit halves the range's jumps of A) once R(hi + 1) bounds the range;
        # before that gallop (at most twice the distance where the envelope gives up)
        mid = (lo + hi) // 2 if hi + 1 in reported else min(hi, 2 * lo)
        visit(mid)
        push(lo, mid - 1)
        push(mid + 1, hi)
    return check_sensitivity("smooth", float(best)), best_k


def _noise_units(p: dict[str, Any], size: int, source: Any) -> np.ndarray:
    return heavy_tailed_units(p["noise"], p["ratio"], size, source, df=p["df"])


def smooth_sensitivity_sample(
    data: Any,
    query: Any,
    *,
    epsilon: float,
    delta: float = 0.0,
    bounds: tuple[float, float],
    noise: str = "laplace",
    relation: str = "unbounded",
    df: int = 3,
    exact_k: int | None = None,
    size: int = 1,
    rng: Any = None,
    clamp: bool = True,
) -> np.ndarray:
    """``size`` independent releases (each costing the full privacy of one release).

    The vectorised core of :func:`smooth_sensitivity_release` for :mod:`dpkit.compare`;
    ``S`` is computed once, ``clamp`` as there. No accountant is charged.

    Examples
    --------
    >>> smooth_sensitivity_sample(np.arange(100.0), "median", epsilon=1.0, bounds=(0, 100),
    ...                           noise="cauchy", size=3, rng=0).round(2).tolist()
    [44.15, 51.04, 55.75]
    """
    p = _prepare(data, query, epsilon, delta, bounds, noise, relation, df, exact_k)
    check_bool(_OWNER, "clamp", clamp)
    k = _noise_units(p, size, as_source(rng))
    out = grid_release(p["units"], k, p["spacing"])
    return clamp_to_range(out, *p["range"])[0] if clamp else out


def smooth_sensitivity_release(
    data: Any,
    query: Any,
    *,
    epsilon: float,
    delta: float = 0.0,
    bounds: tuple[float, float],
    noise: str = "laplace",
    relation: str = "unbounded",
    df: int = 3,
    exact_k: int | None = None,
    rng: Any = None,
    accountant: Any = None,
    clamp: bool = True,
) -> Release:
    """Release ``query(data)`` with noise scaled to its smooth sensitivity.

    Parameters
    ----------
    data : array_like
        Finite values (one per person), clipped to ``bounds``.
    query : str or Statistic
        ``"mean"``, ``"median"``, a :func:`dpkit.queries.percentile`, ``"sum"``, ``"count"``.
    epsilon : float
        Finite and > 0.
    delta : float
        In (0, 1) for ``noise="laplace"``; must be 0 for Cauchy and Student's t (pure DP).
    bounds : (float, float)
        Public ``(lower, upper)``.
    noise : {"laplace", "cauchy", "student_t"}
        The admissible noise (module docstring table).
    relation : {"unbounded", "bounded"}
        Neighbour relation.
    df : int
        Degrees of freedom for Student's t, in [1, 64] (default 3).
    exact_k : int, optional
        ``None`` (default): the exact smooth sensitivity over every ``k`` that can matter.
        An int ``K0`` computes ``A(f, x, k)`` exactly up to ``K0`` only and uses a proven
        envelope beyond (:func:`smooth_upper_bound`, still a valid smooth bound, maybe
        looser; ``details["exact"]`` says which), bounding the time on data where the exact
        scan is long. A public choice, never derived from the data.
    rng
        ``None`` (secure), an ``int`` seed or a bit source.
    accountant : optional
        Charged the release's privacy, under ``relation``, before noise is drawn.
    clamp : bool
        ``True`` (default): a value outside the statistic's public range is moved to its
        nearest end (post-processing, no privacy cost; see ``details["range"]``). ``False``
        returns the noisy value as drawn (for studying the noise itself).

    Returns
    -------
    Release
        ``value``, ``privacy`` (``ApproxDP(epsilon, delta)`` for Laplace, ``PureDP(epsilon)``
        otherwise); ``details``: ``beta``, ``noise``, ``spacing``, ``range`` (the public
        range of the statistic, :func:`dpkit.frameworks._range.public_range`: the bounds
        for a mean or a percentile, ``[0, (b - a)**2 / 4]`` for a variance, ``[0, (b - a) /
        2]`` for a deviation; for a count or a sum ``n``-dependent under ``"bounded"``, only
        its sign otherwise) and ``clamped`` (the drawn value lay outside it and was moved to
        its end); and the diagnostics ``smooth_sensitivity`` (``S``), ``k`` (the distance
        attaining it), ``exact`` (``False`` when the envelope past ``exact_k`` dominated,
        see :func:`smooth_upper_bound`) and ``scale`` (the noise scale ``multiplier * (S +
        g)``), read from the data: **not private**.

    Raises
    ------
    TypeError
        Non-numeric input.
    ParameterError
        ``delta`` outside its range for the noise, ``epsilon <= 0``, bad bounds, NaN or empty
        data, an unknown noise, queries without an exact smooth sensitivity.

    Privacy
    -------
    See the module docstring: ``(epsilon, delta)``-DP (Laplace, NRS07 Lemma 2.6) or
    ``epsilon``-DP (Cauchy, NRS07 Lemma 2.7; Student's t, Bun and Steinke 2019).

    Notes
    -----
    The smooth sensitivity is computed over every ``k`` that can matter (the toolkit's
    proven stopping rule, no fixed cut-off); with ``exact_k`` the tail past it goes through
    a proven envelope (:func:`smooth_upper_bound`; a valid smooth bound, never a
    truncation). Cost: one sort, the ``A(f, x, k)`` scan, one noise draw (Cauchy and
    Student's t: about 0.3 ms by exact inversion).

    References
    ----------
    K. Nissim, S. Raskhodnikova, A. Smith. Smooth sensitivity and sampling in private data
    analysis. STOC 2007. M. Bun and T. Steinke. Average-case averages: private algorithms for
    smooth sensitivity and mean estimation. NeurIPS 2019.

    Examples
    --------
    >>> ages = np.arange(20.0, 70.0).repeat(100)
    >>> rel = smooth_sensitivity_release(ages, "mean", epsilon=1.0, delta=1e-6,
    ...                                  bounds=(0, 100), rng=0)
    >>> round(rel.value, 2), round(rel.diagnostics["smooth_sensitivity"], 5)
    (44.51, 0.0111)
    """
    p = _prepare(data, query, epsilon, delta, bounds, noise, relation, df, exact_k)
    check_bool(_OWNER, "clamp", clamp)
    source = as_source(rng)  # a bad `rng` is refused before the spend
    # the noise scale is a multiple of the smooth sensitivity, which depends on the data:
    # no Laplace event of a known scale, only the guarantee
    privacy = p["privacy"]
    spend(accountant, privacy, _OWNER, relation, [plain_event(privacy)])
    k = _noise_units(p, 1, source)
    # units + k as an exact int, rounded once to float64, scaled by a power of two
    drawn = grid_release([p["units"] + int(k[0])], 0, p["spacing"])
    out, moved = clamp_to_range(drawn, *p["range"]) if clamp else (drawn, drawn != drawn)
    return Release(
        value=float(out[0]),
        mechanism="smooth_sensitivity",
        privacy=p["privacy"],
        scale=None,  # the scale is 2 S / epsilon and S depends on the data: a diagnostic
        details={
            "beta": p["beta"],
            "noise": noise,
            "spacing": p["spacing"],
            "range": p["range"],
            "clamped": bool(moved[0]),
        },
        diagnostics={
            "smooth_sensitivity": p["S"],
            "k": p["k"],
            "exact": p["exact"],
            "scale": p["scale"],
        },
        relation=relation,
    )
