"""Special functions for the accounting analyses, with certified error margins.

* :func:`ndtr` — the standard normal CDF on arrays (libm's ``erfc``, accurate in both tails).
* :func:`gdp_delta` — the exact privacy profile of ``mu``-Gaussian DP (Balle and Wang 2018;
  Dong, Roth and Su 2022), as a pair of certified lower and upper bounds.
* :func:`gdp_epsilon` — the smallest epsilon whose certified ``delta`` is at most a target,
  and the largest one it certifies to lie below the exact answer; vectorised over ``mu``.

NumPy has no ``erfc``, and SciPy is not a runtime dependency, so :func:`ndtr` maps
``math.erfc`` (glibc: within a few units in the last place) over the array.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "erfcx",
    "gdp_delta",
    "gdp_delta_upper",
    "gdp_epsilon",
    "gdp_epsilon_upper",
    "ndtr",
    "ndtr_diff",
]

_SQRT2 = math.sqrt(2.0)
_U = 2.0**-53
_SQRT_PI = math.sqrt(math.pi)


def ndtr(x: np.ndarray) -> np.ndarray:
    """``Phi(x)`` elementwise: ``erfc(-x / sqrt 2) / 2``, relative error a few ulps times
    ``1 + x**2`` (the argument's rounding), in both tails."""
    flat = np.asarray(x, dtype=np.float64).ravel()
    out = np.fromiter(map(math.erfc, (-flat / _SQRT2).tolist()), np.float64, count=flat.size)
    return (0.5 * out).reshape(np.shape(x))


def ndtr_diff(x1: np.ndarray, x2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``Phi(x2) - Phi(x1)`` for ``x1 <= x2``, from the smaller tail of each side, with a bound
    on its absolute error.

    Left of 0 it subtracts lower tails, right of 0 upper tails, so a cell far in either tail
    keeps its relative accuracy; a cell straddling 0 takes ``1 - Phi(x1) - Phi(-x2)``. The
    error bound is ``16 u (1 + x**2)`` times the tails subtracted (``erfc`` within a few ulps,
    the argument ``x / sqrt 2`` rounded, magnified by ``x**2`` in ``erfc``).
    """
    x1 = np.asarray(x1, dtype=np.float64)
    x2 = np.asarray(x2, dtype=np.float64)
    right = x1 >= 0
    left = x2 <= 0
    mid = ~(right | left)
    shape = np.broadcast(x1, x2).shape
    t1 = np.empty(shape)
    t2 = np.empty(shape)
    if right.any():
        t1[right] = ndtr(-x1[right])
        t2[right] = ndtr(-x2[right])
    if left.any():
        t1[left] = ndtr(x2[left])
        t2[left] = ndtr(x1[left])
    if mid.any():
        t1[mid] = ndtr(x1[mid])
        t2[mid] = ndtr(-x2[mid])
    out = np.where(mid, 1.0 - (t1 + t2), t1 - t2)
    with np.errstate(invalid="ignore"):
        big = np.nan_to_num(np.maximum(x1 * x1, x2 * x2), nan=0.0, posinf=0.0)
    err = 16.0 * _U * (1.0 + big) * (t1 + t2) + np.where(mid, 4.0 * _U, 0.0)
    return np.maximum(out, 0.0), err


def erfcx(x: float) -> float:
    """``exp(x**2) erfc(x)`` for ``x >= 0``: directly below 25, a continued fraction above
    (converged to well under an ulp there: 40 terms at ``x >= 25``)."""
    if x < 25.0:
        return math.exp(x * x) * math.erfc(x)
    # erfc(x) e^{x^2} sqrt(pi) = 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + ...)))), Lentz-free
    # backward evaluation with a fixed depth
    frac = x
    for k in range(40, 0, -1):
        frac = x + (k / 2.0) / frac
    return 1.0 / (_SQRT_PI * frac)


def _gdp_terms(mu: float, eps: float) -> tuple[float, float, float]:
    """``delta(eps) = T1 - T2`` for ``mu``-GDP, as ``(T1 - T2, T1, T2)`` computed stably.

    ``T1 = Phi(-eps/mu + mu/2)`` and ``T2 = e^eps Phi(-eps/mu - mu/2)``; with ``a`` and
    ``b = a - mu`` the two arguments, ``e^eps phi(b) = phi(a)``, so both are
    ``exp(-a**2 / 2) erfcx(-./sqrt 2) / 2`` and their difference keeps its relative accuracy
    when both are tiny (Balle and Wang 2018, Section 5).
    """
    a = -eps / mu + mu / 2.0
    b = a - mu
    if a > 0:
        t1 = 1.0 - 0.5 * math.erfc(a / _SQRT2)
        t2 = 0.5 * math.exp(-a * a / 2.0) * erfcx(-b / _SQRT2)
        return t1 - t2, t1, t2
    front = 0.5 * math.exp(-a * a / 2.0)
    e1 = erfcx(-a / _SQRT2)
    e2 = erfcx(-b / _SQRT2)
    return front * (e1 - e2), front * e1, front * e2


def gdp_delta(mu: float, eps: float) -> tuple[float, float]:
    """Certified ``(lower, upper)`` bounds on ``delta(eps)`` of ``mu``-Gaussian DP.

    Each of the two terms is a handful of correctly rounded operations on libm results
    within a few ulps, and ``exp(x**2)`` magnifies the rounding of ``x**2`` by ``x**2``;
    the margin ``(64 + 8 max(a**2, b**2)) u (T1 + T2)`` covers all of it.
    """
    d, t1, t2 = _gdp_terms(mu, eps)
    a = -eps / mu + mu / 2.0
    b = a - mu
    margin = (64.0 + 8.0 * max(a * a, b * b)) * _U * (t1 + t2)
    return max(d - margin, 0.0), min(d + margin, 1.0)


def _erfcx_array(x: np.ndarray) -> np.ndarray:
    """:func:`erfcx` elementwise for ``x >= 0``."""
    x = np.asarray(x, dtype=np.float64)
    out = np.empty_like(x)
    small = x < 25.0
    if small.any():
        xs = x[small]
        erfc = np.fromiter(map(math.erfc, xs.tolist()), np.float64, count=xs.size)
        out[small] = np.exp(xs * xs) * erfc
    if (~small).any():
        xl = x[~small]
        frac = xl.copy()
        for k in range(40, 0, -1):
            frac = xl + (k / 2.0) / frac
        out[~small] = 1.0 / (_SQRT_PI * frac)
    return out


def gdp_delta_upper(mu: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """:func:`gdp_delta`'s upper bound elementwise (the same terms and margin)."""
    mu = np.asarray(mu, dtype=np.float64)
    eps = np.asarray(eps, dtype=np.float64)
    a = -eps / mu + mu / 2.0
    b = a - mu
    t1 = np.empty_like(a)
    t2 = np.empty_like(a)
    pos = a > 0
    if pos.any():
        ap = a[pos]
        erfc = np.fromiter(map(math.erfc, (ap / _SQRT2).tolist()), np.float64, count=ap.size)
        t1[pos] = 1.0 - 0.5 * erfc
        t2[pos] = 0.5 * np.exp(-ap * ap / 2.0) * _erfcx_array(-b[pos] / _SQRT2)
    neg = ~pos
    if neg.any():
        an = a[neg]
        front = 0.5 * np.exp(-an * an / 2.0)
        t1[neg] = front * _erfcx_array(-an / _SQRT2)
        t2[neg] = front * _erfcx_array(-b[neg] / _SQRT2)
    margin = (64.0 + 8.0 * np.maximum(a * a, b * b)) * _U * (t1 + t2)
    return np.minimum(t1 - t2 + margin, 1.0)


def gdp_epsilon_upper(mu: np.ndarray, delta: float) -> np.ndarray:
    """For each ``mu``, an epsilon whose certified ``delta`` is at most ``delta``, within a
    relative ``2**-60`` of the smallest one (parallel bisection, 64 steps)."""
    mus = np.atleast_1d(np.asarray(mu, dtype=np.float64))
    hi = mus * mus / 2.0 + mus * math.sqrt(2.0 * math.log(1.0 / delta)) + 1.0
    for _ in range(64):
        bad = gdp_delta_upper(mus, hi) > delta
        if not bad.any():
            break
        hi = np.where(bad, hi * 2.0, hi)
    bad = gdp_delta_upper(mus, hi) > delta
    hi[bad] = np.inf
    lo = np.zeros_like(mus)
    zero = gdp_delta_upper(mus, lo) <= delta
    for _ in range(64):
        mid = 0.5 * (lo + hi)
        ok = gdp_delta_upper(mus, np.where(np.isfinite(mid), mid, 0.0)) <= delta
        ok &= np.isfinite(mid)
        hi = np.where(ok, mid, hi)
        lo = np.where(ok, lo, mid)
    return np.where(zero, 0.0, hi)


def gdp_epsilon(mu: float, delta: float) -> tuple[float, float]:
    """``(upper, lower)`` epsilon of ``mu``-GDP at ``delta``.

    ``upper`` is the smallest float found with certified ``delta(upper) <= delta`` (a valid
    epsilon); ``lower`` the largest with certified ``delta(lower) > delta`` (the exact
    epsilon is above it), or 0. Bisection to adjacent floats from a bracket whose top is the
    classic bound ``mu**2/2 + mu sqrt(2 log(1/delta)) + 1`` (doubled until it holds).
    """
    if gdp_delta(mu, 0.0)[1] <= delta:
        return 0.0, 0.0
    hi = mu * mu / 2.0 + mu * math.sqrt(2.0 * math.log(1.0 / delta)) + 1.0
    while gdp_delta(mu, hi)[1] > delta:
        hi *= 2.0
        if not math.isfinite(hi):
            return math.inf, 0.0
    lo_u, hi_u = 0.0, hi  # upper: smallest e with certified-upper delta <= target
    lo_l, hi_l = 0.0, hi  # lower: largest e with certified-lower delta > target
    for _ in range(2000):
        mid = 0.5 * (lo_u + hi_u)
        if mid in (lo_u, hi_u):
            break
        if gdp_delta(mu, mid)[1] <= delta:
            hi_u = mid
        else:
            lo_u = mid
    for _ in range(2000):
        mid = 0.5 * (lo_l + hi_l)
        if mid in (lo_l, hi_l):
            break
        if gdp_delta(mu, mid)[0] > delta:
            lo_l = mid
        else:
            hi_l = mid
    if gdp_delta(mu, lo_l)[0] <= delta:
        lo_l = 0.0
    return hi_u, lo_l
