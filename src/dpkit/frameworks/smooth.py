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

Exactness of ``S`` (issue 10, item 3): for the mean and the percentiles ``A(f, x, k)`` is
computed exactly and rounded up to a float, a monotone map, so ``A(x, k) <= A(x', k + 1)``
holds for the values used; the smooth maximum's own float rounding (a relative few ``2**-53``)
is absorbed by the ``+ g`` above, since ``(e^beta - 1) g`` exceeds ``2**-40`` times the largest
possible ``S`` for every admissible beta. For the variance and the deviation ``A`` is a
certified upper bound exceeding the exact value by at most a public ``R(k)``; then ``S(x) <=
e^beta S(x') + G`` with ``G = max_k e^(-beta k) R(k)``
(:func:`dpkit.sensitivity.at_distance.certified_gap`), and adding ``G / (e^beta - 1)`` makes
the bound beta-smooth again.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from dpkit._validate import (
    check_bounds,
    check_choice,
    check_delta,
    check_finite_array,
    check_int,
    check_positive,
    check_relation,
)
from dpkit.accounting.loss import ApproxDP, PrivacyLoss, PureDP
from dpkit.errors import ParameterError
from dpkit.frameworks._common import (
    MAX_NOISE_SCALE,
    check_exact_query,
    grid_for,
    grid_release,
    on_data_lattice,
    spend,
)
from dpkit.mechanisms.release import Release
from dpkit.queries import statistic_on_grid
from dpkit.samplers import as_source
from dpkit.samplers.heavy_tailed import rounded_cauchy, rounded_laplace, rounded_student_t

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
    from dpkit.queries import resolve

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
    }


def _check_noise_range(noise: str, ratio: Fraction, spacing: float, params: str) -> None:
    """Refuse a noise scale of ``ratio`` grid steps that the samplers cannot draw from."""
    if noise == "laplace" and ratio > 2**50:  # the exact rounded-Laplace sampler's range
        raise ParameterError(
            f"{_OWNER}: {params} is too small: the Laplace noise would exceed 2**50 steps of "
            "the output grid, the exact sampler's range"
        )
    if ratio * Fraction(spacing) > MAX_NOISE_SCALE:
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
    from dpkit.queries import resolve
    from dpkit.sensitivity import at_distance, smooth

    q = resolve(query, owner=_OWNER)
    check_exact_query("smooth_upper_bound", query, q)
    if exact_k is None and _fast_percentile(q, relation):
        x, lo, hi = at_distance.prepare(_OWNER, q, data, (lower, upper))
        best, best_k = _smooth_percentile(q, x, beta, lo, hi)
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


#: Largest denominator of the percentile level (a dyadic float ``q = Qn / D``) for which
#: :func:`_smooth_percentile` is used: the median (``D = 2``), the quartiles (4), ...
_FAST_DENOMINATOR = 16
#: Up to this many distances of a block are computed one by one (as ``smooth`` does).
_FEW_DISTANCES = 3


def _fast_percentile(q: Any, relation: str) -> bool:
    """Whether :func:`_smooth_percentile` computes ``smooth`` of ``q`` (same value, faster)."""
    return (
        q.kind == "percentile"
        and relation == "unbounded"
        and q.q is not None
        and Fraction(q.q).denominator <= _FAST_DENOMINATOR
    )


def _smooth_percentile(
    q: Any, x: np.ndarray, beta: float, lower: float, upper: float
) -> tuple[float, int]:
    """:func:`dpkit.sensitivity.smooth` of a percentile, unbounded relation: the same
    ``(S, k)``, bit for bit, in ``O(K^2)`` instead of ``O(K^3)`` (``K`` the stopping distance).

    The scan over ``k``, the envelope, the stopping rule and the rounding of each ``A(f, x, k)``
    up to a float (``ceil_float(A u + slack)``) are those of ``smooth``; only ``A`` is found
    another way. ``smooth`` takes, at distance ``k``, the largest value of every group (a move,
    ``r`` removals, ``a = k - r`` additions) over the placements ``p = 0..a`` of the additions,
    ``O(a)`` candidates per group (:func:`dpkit.sensitivity.at_distance._percentile_groups`).
    Here the placements are never enumerated: for fixed ``r`` and move, the candidates of the
    group ``a`` are the positions ``i`` in the window ``[t(a) - a, t(a)]``, and ``t(a)`` (the
    floor of a position growing by ``q <= 1`` per record) grows by 0 or 1 when ``a`` grows by
    1, so the windows are nested and all contain ``c = t(a_first)``. A candidate's value at
    ``i`` is ``W0 G0(i) + W1 G1(i)`` with integer gaps ``G`` fixed by ``r`` and the split
    ``d1`` and integer weights ``W`` fixed by the group; for each of the (at most ``D``)
    weight pairs the window maximum is the larger of two running maxima outward from ``c``.
    The values are exact integers (``W <= D <= 16``, gaps below ``2**32``), so ``A`` is
    exact, as ``smooth`` computes it when ``D <= 2**60``. Where ``smooth`` prunes a distance
    (its ``floor``) its value may be lower than ``A``, but only where neither can beat the
    best value so far (both by a margin of ``2**-40``), so the maximum and its ``k`` agree;
    ``tests/frameworks/test_smooth.py`` checks the equality on many datasets.
    """
    from dpkit.sensitivity import at_distance
    from dpkit.sensitivity._common import check_sensitivity
    from dpkit.sensitivity._lattice_data import LatticeData, ceil_float

    ld = LatticeData(x, lower, upper)
    unit = Fraction(ld.unit)
    slack = ld.slack(1)
    den = Fraction(q.q).denominator
    n = x.size
    kmax = n + 3
    stable = at_distance.stable_distance(q, n, "unbounded")
    env = at_distance.upper_envelope(q, x, "unbounded", lower, upper, kmax)
    with np.errstate(over="ignore"):  # exp(-beta k) underflows to 0 for a huge beta
        weighted = np.exp(-beta * np.arange(kmax + 1)) * env
    tail = np.maximum.accumulate(weighted[::-1])[::-1]
    best, best_k = -1.0, 0
    top = 0  # the largest numerator (A in units of u / D) so far
    k0, k1 = 0, 63
    while True:
        # distances whose envelope cannot beat the best value so far need no A (smooth's
        # `floor`, with the best value at the start of the block: it only grows)
        ks = np.arange(k0, k1 + 1)
        floor = best * np.exp(np.minimum(beta * ks, 700.0)) * (1 - 2.0**-40) if best > 0 else 0.0
        needed = env[np.minimum(ks, kmax)] > floor
        wanted = np.flatnonzero(needed)
        if wanted.size > _FEW_DISTANCES:
            diag = _percentile_diagonals(ld, float(q.q), k0, k1, needed)
        else:  # a few distances: one at a time, as smooth does (its exact diagonal)
            diag = np.zeros(ks.size, dtype=np.int64)
            for j in wanted:
                value = at_distance._percentile_groups(
                    ld, float(q.q), "unbounded", int(k0 + j), -1.0
                )[1]
                assert value is not None and (value * den).denominator == 1
                diag[j] = int(value * den)
        for k in range(k0, k1 + 1):
            top = max(top, int(diag[k - k0]))
            a = ceil_float(Fraction(top, den) * unit + slack)
            val = math.exp(-beta * k) * a
            if val > best:
                best, best_k = val, k
            if k >= stable:
                return check_sensitivity("smooth", float(best)), best_k
            rest = tail[k + 1] if k + 1 <= kmax else math.exp(-beta * (k + 1)) * env[-1]
            if rest * (1 + 2.0**-40) <= best:
                return check_sensitivity("smooth", float(best)), best_k
        k0, k1 = k1 + 1, 2 * k1 + 1


def _percentile_diagonals(ld: Any, q: float, k0: int, k1: int, needed: np.ndarray) -> np.ndarray:
    """``D`` times the largest unbounded ``LS_1`` of the percentile over the datasets with
    ``r`` removals and ``a`` additions, ``r + a = k``, for ``k = k0..k1`` (lattice units;
    0 where nothing is feasible or ``k`` is not ``needed``): :func:`_smooth_percentile`."""
    from dpkit.sensitivity import _exact_diagonal
    from dpkit.sensitivity.at_distance import _exact_moves

    n = ld.n
    out = np.zeros(k1 - k0 + 1, dtype=np.int64)
    rmax = min(k1, n)
    block = max(1, (1 << 19) // (k1 + 1))
    avals = np.arange(k1 + 1, dtype=np.int64)
    # the moves depend on the size m = n - r + a only: computed once per size, exactly
    m_first = max(n - rmax, 0)
    sizes = np.arange(m_first, n + k1 + 1, dtype=np.int64)
    moves = [
        (t, w0.astype(np.int64), w1.astype(np.int64), allowed)
        for t, w0, w1, allowed in _exact_moves(q, sizes, "unbounded")
    ]
    # the padded lattice data over every index used below: i >= min(t) - k1 - 1 and
    # i + d + 2 <= max(t) + k1 + rmax + 2
    t_min = min(int(mv[0].min()) for mv in moves)
    t_max = max(int(mv[0].max()) for mv in moves)
    base = t_min - k1 - 2
    ypad = _exact_diagonal.gaps(
        ld, np.full(1, -1, np.int64), np.arange(base, t_max + k1 + rmax + 4, dtype=np.int64)
    )  # xt[idx] - lower, int64
    for r_first in range(0, rmax + 1, block):
        rs = np.arange(r_first, min(rmax, r_first + block - 1) + 1, dtype=np.int64)
        rr, aa = np.meshgrid(rs, avals, indexing="ij")
        m = n - rr + aa
        valid = (rr + aa >= k0) & (rr + aa <= k1) & (m >= 1)
        valid &= needed[np.clip(rr + aa - k0, 0, needed.size - 1)]
        if not valid.any():
            continue
        first = np.argmax(valid, axis=1)
        rows = np.arange(rs.size)
        d = rs[:, None]
        at = np.clip(m - m_first, 0, sizes.size - 1)
        for t_all, w0_all, w1_all, allowed_all in moves:
            t = t_all[at]
            ok = valid & allowed_all[at]
            if not ok.any():
                continue
            c = t[rows, first]  # in every window of its row (the windows are nested)
            sel_r, sel_a = np.nonzero(ok)
            ts = t[sel_r, sel_a]
            left_at = c[sel_r] - (ts - sel_a)  # c - (t - a) >= 0
            right_at = ts - c[sel_r]  # t - c >= 0
            reach = int(left_at.max())
            i = c[:, None] + np.arange(-reach, int(right_at.max()) + 1, dtype=np.int64)[None, :]
            sel_m = at[sel_r, sel_a]
            code = w0_all[sel_m] * (2 * _FAST_DENOMINATOR + 1) + w1_all[sel_m]
            kinds = np.unique(code)
            y0 = ypad[i - base]
            for d1 in (np.zeros_like(d), np.minimum(d, 1), np.maximum(d - 1, 0), d):
                y1 = ypad[i + d1 + 1 - base]
                g0 = y1 - y0
                g1 = ypad[i + d + 2 - base] - y1
                feas = np.where(d1 >= 1, (i + 1 >= 0) & (i + d1 <= n - 1), True)
                feas &= np.where(d1 < d, (i + d1 + 2 >= 0) & (i + d + 1 <= n - 1), True)
                for kind in kinds:
                    w0, w1 = divmod(int(kind), 2 * _FAST_DENOMINATOR + 1)
                    f = np.where(feas, w0 * g0 + w1 * g1, 0)
                    right = np.maximum.accumulate(f[:, reach:], axis=1)
                    left = np.maximum.accumulate(f[:, reach::-1], axis=1)
                    pick = code == kind
                    pr = sel_r[pick]
                    v = np.maximum(left[pr, left_at[pick]], right[pr, right_at[pick]])
                    np.maximum.at(out, rs[pr] + sel_a[pick] - k0, v)
    return out


def _noise_units(p: dict[str, Any], size: int, source: Any) -> np.ndarray:
    if p["noise"] == "laplace":
        return rounded_laplace(p["ratio"], size, source)
    if p["noise"] == "cauchy":
        return rounded_cauchy(p["ratio"], size, source)
    return rounded_student_t(p["df"], p["ratio"], size, source)


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
) -> np.ndarray:
    """``size`` independent releases (each costing the full privacy of one release).

    The vectorised core of :func:`smooth_sensitivity_release` for :mod:`dpkit.compare`;
    ``S`` is computed once. No accountant is charged.

    Examples
    --------
    >>> smooth_sensitivity_sample(np.arange(100.0), "median", epsilon=1.0, bounds=(0, 100),
    ...                           noise="cauchy", size=3, rng=0).round(2).tolist()
    [44.15, 51.04, 55.75]
    """
    p = _prepare(data, query, epsilon, delta, bounds, noise, relation, df, exact_k)
    k = _noise_units(p, size, as_source(rng))
    return grid_release(p["units"], k, p["spacing"])


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
) -> Release:
    """Release ``query(data)`` with noise scaled to its smooth sensitivity.

    Parameters
    ----------
    data : array_like
        Finite values (one per person), clipped to ``bounds``.
    query : str or Query
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

    Returns
    -------
    Release
        ``value``, ``privacy`` (``ApproxDP(epsilon, delta)`` for Laplace, ``PureDP(epsilon)``
        otherwise), ``scale`` (the noise scale ``multiplier * (S + g)``); ``details``:
        ``beta``, ``noise``, ``spacing`` and the diagnostics ``smooth_sensitivity`` (``S``),
        ``k`` (the distance attaining it) and ``exact`` (``False`` when the envelope past
        ``exact_k`` dominated, see :func:`smooth_upper_bound`), read from the data: **not
        private**.

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
    source = as_source(rng)  # a bad `rng` is refused before the spend
    spend(accountant, p["privacy"], _OWNER, relation)
    k = _noise_units(p, 1, source)
    # units + k as an exact int, rounded once to float64, scaled by a power of two
    value = float(grid_release([p["units"] + int(k[0])], 0, p["spacing"])[0])
    return Release(
        value=value,
        mechanism="smooth_sensitivity",
        privacy=p["privacy"],
        scale=None,  # the scale is 2 S / epsilon and S depends on the data: a diagnostic
        details={
            "beta": p["beta"],
            "noise": noise,
            "spacing": p["spacing"],
        },
        diagnostics={
            "smooth_sensitivity": p["S"],
            "k": p["k"],
            "exact": p["exact"],
            "scale": p["scale"],
        },
        relation=relation,
    )
