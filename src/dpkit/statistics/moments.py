"""Means, sums, variances and deviations of arrays, with given or privately chosen bounds.

``bounds="auto"`` spends ``bounds_share`` of ``epsilon`` on :func:`~dpkit.statistics.
private_bounds` (Google's ApproximateBounds style by default) and the rest on the statistic;
the release reports the chosen bounds and the DP clipped fraction (``None`` with
``bounds_method="tail"``). When no bucket of the noisy histogram passes its threshold (too
few records for the noise), the statistic uses the public fallback bounds of
:func:`~dpkit.statistics.bounds.default_fallback` (``(-1, 1)``, or from ``lower``) and
``details["bounds_fallback"]`` is ``True``. Explicit bounds spend everything on the
statistic.

Exactness: records are clipped to the bounds and mapped to the integer lattice
``u = clip(floor(x / g + 1/2), ceil(lower / g), floor(upper / g))`` (``g`` a power of two
fixed by the bounds: the per-record map of :mod:`dpkit._lattice`), so counts, sums and
sums of squares are exact integers, and exact discrete Laplace noise is added to them
(Ghosh, Roughgarden and Sundararajan 2009; Canonne, Kamath and Steinke 2020). The
statistics are then ratios of noisy integers (post-processing).

Intervals (``1 - alpha``): each noisy integer is within its exact discrete Laplace quantile of
the truth (a union bound over them); the interval is the range of the estimator over that
box, widened by half a lattice step. They cover the statistic of the *clipped* records;
clipping bias is not included (the clipped fraction says how much data it concerns).
"""

from __future__ import annotations

import math
import sys
from fractions import Fraction
from typing import Any

import numpy as np

from dpkit._validate import (
    check_bounds,
    check_choice,
    check_finite_array,
    check_number,
    check_positive,
)
from dpkit.accounting.events import Event
from dpkit.accounting.guard import approx_event, laplace_event, spend
from dpkit.accounting.loss import PureDP
from dpkit.errors import ParameterError
from dpkit.mechanisms.quantile_em import QuantileLattice
from dpkit.noise import DiscreteLaplaceLaw, laplace_law
from dpkit.release import Release
from dpkit.samplers import MAX_NOISE_SCALE, as_source
from dpkit.statistics._input import check_alpha, record_array
from dpkit.statistics.bounds import METHODS as BOUNDS_METHODS
from dpkit.statistics.bounds import (
    VAR_CAP,
    _from_histogram,
    _tail_bounds,
    bounds_events,
    check_bounds_noise,
    check_moments_lower,
    log2_buckets,
    representable,
)

__all__ = ["mean", "std", "sum", "var"]

#: Lattice bits for sums of squares: (2**16)**2 per record keeps 2**31 records in int64.
_VAR_BITS = 16


def _laplace_halfwidth(scale: Fraction, beta: float) -> int:
    """Smallest ``h`` with ``P[|Z| > h] <= beta`` for discrete Laplace noise of ``scale``
    (:meth:`dpkit.noise.DiscreteLaplaceLaw.half_width`)."""
    return DiscreteLaplaceLaw(scale).half_width(beta)


def _prepare(
    owner: str,
    data: Any,
    epsilon: Any,
    bounds: Any,
    bounds_share: Any,
    bounds_method: Any,
    lower: Any,
    alpha: Any,
    kind: str,
) -> tuple[np.ndarray, float, float, float]:
    arr = check_finite_array(owner, "data", record_array(owner, data))
    eps = check_positive(owner, "epsilon", epsilon)
    a = check_alpha(owner, alpha)
    share = 0.0
    if isinstance(bounds, str):
        if bounds != "auto":
            raise ParameterError(
                f"{owner}: `bounds` must be (lower, upper) or 'auto'; got {bounds!r}"
            )
        share = check_number(owner, "bounds_share", bounds_share)
        if not 0 < share < 1:
            raise ParameterError(f"{owner}: `bounds_share` must be in (0, 1); got {share!r}")
        check_choice(owner, "bounds_method", bounds_method, BOUNDS_METHODS)
        check_moments_lower(owner, lower, variance=kind in ("var", "std"))
    else:
        check_bounds(owner, bounds)
        if lower is not None:
            raise ParameterError(f"{owner}: `lower` goes with bounds='auto' only")
    return arr, eps, share, a


def _choose_bounds(
    arr: np.ndarray,
    bounds: Any,
    eps_bounds: float,
    method: str,
    lower: float | None,
    source: Any,
) -> tuple[tuple[float, float], dict[str, Any]]:
    if not isinstance(bounds, str):
        lo, hi = float(bounds[0]), float(bounds[1])
        return (lo, hi), {"bounds": (lo, hi), "bounds_source": "given"}
    if method == "histogram":
        ids, cnt = np.unique(log2_buckets(arr), return_counts=True)
        rel = _from_histogram("bounds", ids, cnt.astype(np.int64), eps_bounds, lower, 1e-6, source)
    else:
        rel = _tail_bounds(arr, eps_bounds, lower, 0.999, source)
    source_text = f"private ({rel.method})"
    if rel.fallback:
        source_text = "fallback: no bucket of the noisy histogram passed its threshold"
    return rel.bounds, {
        "bounds": rel.bounds,
        "bounds_source": source_text,
        "bounds_fallback": rel.fallback,
        "epsilon_bounds": eps_bounds,
        "clipped_fraction": rel.clipped_fraction,
    }


def check_sum_interval(owner: str, half: int, unit: float, what: str) -> None:
    """Refuse, before the spend, a sum whose ``(1 - alpha)`` interval leaves the float range
    for every table: its half-width ``half`` lattice units of ``unit`` beyond the largest
    float puts an end of every release's interval at +-inf, whatever the data, so the
    budget would be spent for nothing. ``what`` names the parameters to change. (A sum
    that leaves the range only because of many large records is released as +-inf.)"""
    if Fraction(half) * Fraction(unit) > Fraction(sys.float_info.max):
        raise ParameterError(
            f"{owner}: the sum's interval would be beyond the float range (+-inf) for every "
            f"table: its noise half-width is about {_scientific(half, unit)}, above the "
            f"largest float ({sys.float_info.max:.3g}); {what}"
        )


def _scientific(half: int, unit: float) -> str:
    """``half * unit`` in scientific notation, without forming the product (it may overflow)."""
    power = math.log10(max(half, 1)) + math.log10(unit)
    whole = math.floor(power)
    return f"{10 ** (power - whole):.2g}e{whole}"


def _bits(kind: str) -> int:
    """Bits of the statistic's lattice: :data:`_VAR_BITS` for the squares of var and std."""
    return _VAR_BITS if kind in ("var", "std") else 30


def _check_scales(owner: str, bounds: Any, kind: str, rest: Fraction) -> None:
    """Every discrete Laplace scale the release will use is within the sampler's range.

    Checked before the spend. The moments' sensitivities in lattice units: the centred
    half range ``r`` (``r**2`` for the squares) is at most ``2**bits + 1`` whatever the bounds;
    a sum's is ``max(|lo|, |hi|)``, known for given bounds (bounds chosen privately are
    checked with their lattice's centred range, the common case of bounds straddling 0).
    """
    bits = _bits(kind)
    parts = {"sum": 1, "mean": 2}.get(kind, 3)
    r: int = 2**bits + 1
    if kind == "sum" and not isinstance(bounds, str):
        r = _sum_sensitivity(
            QuantileLattice.for_bounds(owner, float(bounds[0]), float(bounds[1]), bits)
        )
    sens = r * r if kind in ("var", "std") else r
    if rest == 0 or sens * parts / rest > MAX_NOISE_SCALE:
        raise ParameterError(
            f"{owner}: `epsilon` is too small for these `bounds`: the discrete Laplace noise "
            f"of the {kind} (sensitivity {sens} lattice units, epsilon {float(rest):.3g} "
            f"shared by {parts}) would exceed 2**50, the exact sampler's range; raise epsilon"
        )


def _check_given_bounds(owner: str, bounds: Any, kind: str) -> None:
    """Given bounds have the statistic's lattice (not too close together) and, for a
    variance, lie within ``+-2**500`` (its squares stay finite, as for chosen bounds):
    checked before the spend."""
    lo, hi = float(bounds[0]), float(bounds[1])
    if kind in ("var", "std") and max(abs(lo), abs(hi)) > VAR_CAP:
        raise ParameterError(
            f"{owner}: `bounds` {bounds!r} are out of range for a variance (squares "
            "overflow): they must lie within 2**500 (about 3e150) in magnitude; rescale the data"
        )
    QuantileLattice.for_bounds(owner, lo, hi, _bits(kind))


def _sum_sensitivity(lat: QuantileLattice) -> int:
    """A plain sum's sensitivity in lattice units: the largest ``|units|``."""
    return max(abs(lat.lo), abs(lat.hi), 1)


def _centre(lat: QuantileLattice) -> tuple[int, int]:
    """The centre ``c`` of the lattice and the centred half range ``r`` (the sensitivity of
    the centred sum, ``r**2`` that of the sum of squares), in lattice units."""
    c = (lat.lo + lat.hi) // 2
    return c, max(lat.hi - c, c - lat.lo, 1)


def _events(
    kind: str, eps_b: Fraction, rest: Fraction, lat: QuantileLattice | None, method: str
) -> list[Event]:
    """What the release is, stage by stage, for accounting (from public inputs, before the
    spend): ``eps_b`` for the bounds and ``rest`` for the draws, ``lat`` the lattice of given
    bounds (``None`` when they are chosen privately).

    The bounds stage (:func:`~dpkit.statistics.bounds.bounds_events`, when chosen
    privately), then each discrete Laplace draw of :func:`_noisy`: the count (sensitivity 1)
    and, for given bounds, the sums on their known lattice (their scale and sensitivity in
    lattice units, the rounding to the lattice inside the sensitivity). With private bounds
    the sums' lattice, hence their sensitivity in lattice steps, depends on the bounds the
    release chooses: those draws state their epsilon alone (``Approx``).
    """
    out = bounds_events(float(eps_b), method) if lat is None else []

    def draw(sens: int | None, e: Fraction) -> Event:
        return approx_event(e) if sens is None else laplace_event(sens / e, sens)

    if kind == "sum":
        return [*out, draw(None if lat is None else _sum_sensitivity(lat), rest)]
    parts = 2 if kind == "mean" else 3
    each = rest / parts
    r = None if lat is None else _centre(lat)[1]
    out += [draw(1, each), draw(r, each)]
    if kind != "mean":
        out.append(draw(None if r is None else r * r, each))
    return out


def _noisy(value: int, sens: int, eps: Fraction, source: Any) -> tuple[int, Fraction]:
    noise = laplace_law(sens, eps)
    return value + int(noise.draw(1, source)[0]), noise.scale


def _moments(
    owner: str,
    data: Any,
    epsilon: Any,
    bounds: Any,
    bounds_share: Any,
    bounds_method: Any,
    lower: Any,
    alpha: Any,
    rng: Any,
    accountant: Any,
    kind: str,
) -> Release:
    arr, eps, share, a = _prepare(
        owner, data, epsilon, bounds, bounds_share, bounds_method, lower, alpha, kind
    )
    if isinstance(bounds, str):
        check_bounds_noise(owner, Fraction(eps) * Fraction(share), bounds_method, lower)
    else:
        _check_given_bounds(owner, bounds, kind)
    _check_scales(owner, bounds, kind, Fraction(eps) * (1 - Fraction(share)))
    given = (
        None
        if isinstance(bounds, str)
        else QuantileLattice.for_bounds(owner, float(bounds[0]), float(bounds[1]), _bits(kind))
    )
    if kind == "sum" and given is not None:  # as the Session's dp.sum
        scale = Fraction(_sum_sensitivity(given)) / (Fraction(eps) * (1 - Fraction(share)))
        what = "narrow the `bounds` (rescale the data) or raise `epsilon`"
        check_sum_interval(owner, _laplace_halfwidth(scale, a), given.spacing, what)
    source = as_source(rng)
    total = Fraction(eps)
    eps_b = total * Fraction(share)
    rest = total - eps_b
    events = _events(kind, eps_b, rest, given, bounds_method)
    spend(accountant, PureDP(eps), owner, events=events)
    (lo_v, hi_v), details = _choose_bounds(arr, bounds, float(eps_b), bounds_method, lower, source)
    if isinstance(bounds, str):  # chosen privately: kept where the lattice exists (post-processing)
        lo_v, hi_v = representable(
            (lo_v, hi_v), variance=kind in ("var", "std"), zero=kind == "sum"
        )
        details["bounds"] = (lo_v, hi_v)
    lat = QuantileLattice.for_bounds(owner, lo_v, hi_v, _bits(kind))
    u = lat.units(arr)
    g = lat.spacing
    half = g / 2
    if kind == "sum":
        sens = _sum_sensitivity(lat)
        s, scale = _noisy(int(u.sum()), sens, rest, source)
        h = _laplace_halfwidth(scale, a)
        value = s * g
        # covers the sum of the records rounded to the lattice (each moved by <= g / 2,
        # g = 2**-30 of the width: negligible, and the record count is private)
        interval = ((s - h) * g, (s + h) * g)
        details.update(epsilon_sum=float(rest), sum_scale=float(scale * g))
        return Release(
            value=float(value),
            mechanism="sum",
            privacy=PureDP(eps),
            scale=float(scale * g),
            interval=interval,
            alpha=a,
            details=details,
        )
    c, r = _centre(lat)
    d = u - c
    parts = 2 if kind == "mean" else 3
    each = rest / parts
    n_t, sc_n = _noisy(int(d.size), 1, each, source)
    s1, sc_1 = _noisy(int(d.sum()), r, each, source)
    beta = a / parts
    h_n = _laplace_halfwidth(sc_n, beta)
    h_1 = _laplace_halfwidth(sc_1, beta)
    n_lo, n_hi = n_t - h_n, n_t + h_n
    details.update(noisy_count=n_t, epsilon_each=float(each))
    if kind == "mean":
        value = c * g + (s1 / n_t * g if n_t >= 1 else 0.0)
        value = min(max(value, lo_v), hi_v)
        if n_lo >= 1:
            cands = [(s1 + sa) / nb for sa in (-h_1, h_1) for nb in (n_lo, n_hi)]
            iv = (c * g + min(cands) * g - half, c * g + max(cands) * g + half)
            # The mean of the clipped records lies in [lo_v, hi_v], so the interval is
            # intersected with the bounds; both ends are clamped into them (not just the
            # low end raised and the high end lowered), which keeps low <= high when the
            # noise interval lies wholly outside the bounds (its coverage event failed):
            # the interval is then the nearest bound. Clamping is monotone, and the raw
            # estimate lies in iv (s1 / n_t is within the corners of the noise box), so the
            # clamped value stays within the clamped interval.
            interval = (min(max(iv[0], lo_v), hi_v), max(min(iv[1], hi_v), lo_v))
        else:
            interval = (lo_v, hi_v)
        return Release(
            value=float(value),
            mechanism="mean",
            privacy=PureDP(eps),
            interval=interval,
            alpha=a,
            details=details,
        )
    s2, sc_2 = _noisy(int(np.dot(d, d)), r * r, each, source)
    h_2 = _laplace_halfwidth(sc_2, beta)
    top = ((hi_v - lo_v) / 2) ** 2
    v = (s2 / n_t - (s1 / n_t) ** 2) * g * g if n_t >= 1 else top / 2
    v = min(max(v, 0.0), top)
    if n_lo >= 1:
        s1_min2 = 0 if (s1 - h_1) <= 0 <= (s1 + h_1) else min(abs(s1 - h_1), abs(s1 + h_1)) ** 2
        s1_max2 = max(abs(s1 - h_1), abs(s1 + h_1)) ** 2
        up = ((s2 + h_2) / n_lo - s1_min2 / n_hi**2) * g * g
        down = ((s2 - h_2) / n_hi - s1_max2 / n_lo**2) * g * g
        # rounding each record by <= g/2 moves the deviation by <= g/2: widen in sd units
        sd_up = math.sqrt(min(max(up, 0.0), top)) + half
        sd_down = max(math.sqrt(min(max(down, 0.0), top)) - half, 0.0)
        interval = (sd_down**2, min(sd_up**2, top))
    else:
        interval = (0.0, top)
    details.update(epsilon_each=float(each))
    if kind == "std":
        return Release(
            value=math.sqrt(v),
            mechanism="std",
            privacy=PureDP(eps),
            interval=(math.sqrt(interval[0]), math.sqrt(interval[1])),
            alpha=a,
            details=details,
        )
    return Release(
        value=float(v),
        mechanism="var",
        privacy=PureDP(eps),
        interval=interval,
        alpha=a,
        details=details,
    )


def mean(
    data: Any,
    *,
    epsilon: float,
    bounds: Any = "auto",
    bounds_share: float = 0.5,
    bounds_method: str = "histogram",
    lower: float | None = None,
    alpha: float = 0.05,
    rng: Any = None,
    accountant: Any = None,
) -> Release:
    """The mean of the clipped records: a noisy centred sum over a noisy count.

    Parameters
    ----------
    data : array_like
        Finite real values, one per record (empty, NaN, infinite, bool or masked refused).
    epsilon : float
        Total cost, finite and > 0.
    bounds : (float, float) or "auto"
        Public clipping bounds, or ``"auto"`` to choose them privately with
        ``bounds_share * epsilon`` (reported in ``details``: the bounds, the DP clipped
        fraction of the histogram method, and ``bounds_fallback``: ``True`` when no bucket
        passed its threshold and the public fallback bounds were used). Given bounds must
        leave room for the lattice (not too close together) and, for :func:`var` and
        :func:`std`, lie within ``2**500`` in magnitude; like every parameter (and ``rng``)
        they are checked before the accountant is charged.
    bounds_share : float
        Share of ``epsilon`` spent on the bounds with ``"auto"``, in (0, 1).
    bounds_method : {"histogram", "tail"}
        :func:`~dpkit.statistics.private_bounds` method for ``"auto"``.
    lower : float, optional
        A public lower bound for ``"auto"`` (0 for amounts).
    alpha : float
        The interval's error probability.
    rng, accountant
        As everywhere (the accountant is charged ``PureDP(epsilon)`` before any noise).

    Returns
    -------
    Release
        ``value``, ``interval`` (noise only, for the clipped records), ``details`` (bounds,
        budget split, noisy count).

    Privacy
    -------
    Pure ``epsilon``-DP under add/remove of one record: the bounds (if ``"auto"``), then the
    count (sensitivity 1) and the sum of ``u - c`` (``c`` the lattice midpoint, sensitivity
    ``max(hi - c, c - lo)``) with discrete Laplace noise, half the remaining budget each;
    sequential composition.

    Examples
    --------
    >>> x = np.random.default_rng(0).normal(50, 10, 10_000)  # made-up data
    >>> rel = mean(x, epsilon=1.0, bounds=(0, 100), rng=1)
    >>> round(rel.value, 1), rel.privacy
    (50.1, PureDP(epsilon=1.0))
    """
    return _moments(
        "mean",
        data,
        epsilon,
        bounds,
        bounds_share,
        bounds_method,
        lower,
        alpha,
        rng,
        accountant,
        "mean",
    )


def sum(  # dpkit.statistics.sum: shadows the builtin inside this module on purpose
    data: Any,
    *,
    epsilon: float,
    bounds: Any = "auto",
    bounds_share: float = 0.5,
    bounds_method: str = "histogram",
    lower: float | None = None,
    alpha: float = 0.05,
    rng: Any = None,
    accountant: Any = None,
) -> Release:
    """The sum of the clipped records with discrete Laplace noise.

    Parameters and returns as for :func:`mean`.

    The sum and its interval are exact integers of lattice units rounded once to float64,
    as the Session's ``dp.sum``: given ``bounds`` whose noise interval alone is beyond the
    float range (``+-inf`` for every table) are refused before the spend; a sum beyond it
    because of many large records is released as ``-inf`` or ``inf``.

    Privacy
    -------
    Pure ``epsilon``-DP under add/remove of one record: the lattice sum has sensitivity
    ``max(|lo|, |hi|)`` grid steps.

    Examples
    --------
    >>> rel = sum(np.full(1000, 2.0), epsilon=1.0, bounds=(0, 10), rng=1)
    >>> round(rel.value), rel.mechanism
    (1999, 'sum')
    """
    return _moments(
        "sum",
        data,
        epsilon,
        bounds,
        bounds_share,
        bounds_method,
        lower,
        alpha,
        rng,
        accountant,
        "sum",
    )


def var(
    data: Any,
    *,
    epsilon: float,
    bounds: Any = "auto",
    bounds_share: float = 0.5,
    bounds_method: str = "histogram",
    lower: float | None = None,
    alpha: float = 0.05,
    rng: Any = None,
    accountant: Any = None,
) -> Release:
    """The population variance (ddof=0) of the clipped records.

    Parameters and returns as for :func:`mean`.

    Noisy count, centred sum and centred sum of squares (a third of the remaining budget
    each), on a coarser lattice (``2**-16`` of the width) so the squares sum exactly in int64.

    Privacy
    -------
    Pure ``epsilon``-DP under add/remove of one record (sensitivities 1, ``r`` and ``r**2``,
    ``r`` the largest centred value).

    Examples
    --------
    >>> x = np.random.default_rng(0).normal(50, 10, 10_000)  # made-up data
    >>> round(var(x, epsilon=1.0, bounds=(0, 100), rng=1).value)
    100
    """
    return _moments(
        "var",
        data,
        epsilon,
        bounds,
        bounds_share,
        bounds_method,
        lower,
        alpha,
        rng,
        accountant,
        "var",
    )


def std(
    data: Any,
    *,
    epsilon: float,
    bounds: Any = "auto",
    bounds_share: float = 0.5,
    bounds_method: str = "histogram",
    lower: float | None = None,
    alpha: float = 0.05,
    rng: Any = None,
    accountant: Any = None,
) -> Release:
    """The population standard deviation of the clipped records (square root of :func:`var`).

    Parameters and returns as for :func:`mean`.

    Privacy
    -------
    Pure ``epsilon``-DP under add/remove of one record (as :func:`var`; the root is
    post-processing).

    Examples
    --------
    >>> x = np.random.default_rng(0).normal(50, 10, 10_000)  # made-up data
    >>> round(std(x, epsilon=1.0, bounds=(0, 100), rng=1).value, 1)
    10.0
    """
    return _moments(
        "std",
        data,
        epsilon,
        bounds,
        bounds_share,
        bounds_method,
        lower,
        alpha,
        rng,
        accountant,
        "std",
    )
