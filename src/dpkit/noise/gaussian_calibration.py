"""Calibration of the Gaussian mechanisms: the continuous sigma, the exact discrete delta,
and the lattice variance a release draws with.

A Gaussian release adds ``N_Z(0, V)^d``, the discrete Gaussian of variance parameter ``V``
(``P[Y = y]`` proportional to ``exp(-y**2 / (2 V))``, Canonne, Kamath and Steinke 2020)
independently to each of ``d`` lattice coordinates. Two neighbouring inputs land on lattice
points ``mu`` apart with ``||mu||_2 <= D``, ``D`` the sensitivity in lattice steps with the
rounding charged (the neighbour relation is the mechanism's ``relation``: add/remove or
replace one record, whichever the sensitivity was computed for). ``V`` is the smallest
value one of three proved analyses allows, each giving ``(epsilon, delta)``-DP for every
such ``mu``:

1. **Exact, one coordinate** (or integer vectors with ``D = 1``). The privacy curve of
   ``N_Z(0, V)`` shifted by an integer ``D`` is ``delta(eps) = P[Y > eps V / D - D / 2] -
   exp(eps) P[Y > eps V / D + D / 2]`` exactly (CKS Theorem 7), summed here in
   :func:`discrete_gaussian_delta`. ``V`` is searched on a relative grid of step ``2**-10``
   (below the continuous calibration too: the discrete curve can lie under the continuous
   one) and every candidate returned has been checked. An integer vector of L2 norm at most
   1 is ``0`` or ``+-e_i``: neighbours then differ in one coordinate, the others' noise has
   the same law under both, and the vector's curve is exactly the one-coordinate curve.
2. **Smoothing** (vectors, and very noisy scalars). *Lemma.* Let ``V = s'**2 + tau**2`` and
   ``eta = sum_{k >= 1} exp(-2 pi**2 tau**2 k**2)``. Let ``K`` map a real ``z`` to
   ``N_Z(z, tau**2)`` (the integer ``k`` with probability proportional to
   ``exp(-(k - z)**2 / (2 tau**2))``). For every integer ``m`` and ``k``, ``Q_m =
   K(N(m, s'**2))`` and ``P_m = N_Z(m, V)`` satisfy ``(1 - 2 eta) / (1 + 2 eta) <=
   P_m(k) / Q_m(k) <= 1 + 2 eta``. *Proof.* By Poisson summation, ``sum_j exp(-(j - z)**2 /
   (2 tau**2)) = sqrt(2 pi) tau theta(z)`` with ``theta(z) = 1 + 2 sum_{k >= 1} exp(-2 pi**2
   tau**2 k**2) cos(2 pi k z)`` in ``[1 - 2 eta, 1 + 2 eta]``. So ``Q_m(k) = integral
   phi_s'(z - m) phi_tau(k - z) / theta(z) dz`` lies within ``[1 / (1 + 2 eta), 1 / (1 - 2
   eta)]`` times ``integral phi_s'(z - m) phi_tau(k - z) dz = phi_sqrt(V)(k - m)`` (the
   normal densities convolve), while ``P_m(k) = phi_sqrt(V)(k - m) / theta_V`` with
   ``theta_V = 1 + 2 sum_{k >= 1} exp(-2 pi**2 V k**2)`` in ``[1, 1 + 2 eta]`` (``V >=
   tau**2``). *Theorem.* With ``A = 1 + 2 eta`` and ``B = (1 + 2 eta) / (1 - 2 eta)``, if
   ``N(0, s'**2)`` per coordinate is ``(eps', delta')``-DP for L2 shifts up to ``D`` (Balle
   and Wang 2018, Theorem 8, or Dwork and Roth 2014, Theorem A.1), then ``N_Z(0, V)^d`` is
   ``(eps' + d ln(A B), A**d delta')``-DP for integer shifts ``||mu||_2 <= D``. *Proof.* For
   every set ``S`` of lattice points, ``P_mu(S) <= A**d Q_mu(S) <= A**d (exp(eps') Q_0(S) +
   delta') <= exp(eps' + d ln(A B)) P_0(S) + A**d delta'``; the middle step is
   post-processing (``K`` applied to each coordinate of the continuous Gaussian mechanism's
   output). So ``eps' = eps - d ln(A B)`` and ``delta' = delta / A**d`` are calibrated
   continuously, ``tau`` is chosen from a fixed grid to make ``V`` smallest, and ``eta <=
   exp(-a) / (1 - exp(-3 a))``, ``a = 2 pi**2 tau**2`` (as ``k**2 >= 1 + 3 (k - 1)``). At
   the lattice sigmas of :class:`~dpkit.mechanisms.Gaussian` (thousands of steps and more)
   ``V`` exceeds the continuous calibration by ``tau**2`` steps squared, a relative ``1e-6``
   or less, and ``d ln(A B)`` is below ``1e-60``.
3. **zCDP**: the multivariate discrete Gaussian is ``D**2 / (2 V)``-zCDP (CKS Theorem 14),
   converted to ``(epsilon, delta)`` by CKS Corollary 13; it wins only at lattice sigmas of
   a few steps, where ``tau**2`` is not small against ``V``.

The continuous calibrations (:func:`classic_gaussian_sigma`, :func:`analytic_gaussian_sigma`)
and the exact one-coordinate delta are public through :mod:`dpkit.mechanisms`.

References
----------
B. Balle, Y.-X. Wang. Improving the Gaussian Mechanism for Differential Privacy: Analytical
Calibration and Optimal Denoising. ICML 2018.
C. Canonne, G. Kamath, T. Steinke. The Discrete Gaussian for Differential Privacy. NeurIPS
2020 (arXiv:2004.00010).
C. Dwork, A. Roth. The Algorithmic Foundations of Differential Privacy, Appendix A. 2014.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from functools import lru_cache
from typing import NamedTuple

import numpy as np

from dpkit._validate import (
    check_delta,
    check_finite_result,
    check_int,
    check_nonnegative,
    check_positive,
    describe,
)
from dpkit.accounting.conversions import approx_to_zcdp
from dpkit.errors import ParameterError
from dpkit.noise.calibration import lattice_grid

__all__ = [
    "LatticePlan",
    "analytic_gaussian_sigma",
    "calibrate",
    "classic_gaussian_sigma",
    "discrete_gaussian_delta",
    "integer_plan",
    "lattice_plan",
]


def _phi(x: float) -> float:
    """Standard normal CDF via the complementary error function (accurate in the tails)."""
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def classic_gaussian_sigma(
    epsilon: float, delta: float, sensitivity: float, *, owner: str = "classic_gaussian_sigma"
) -> float:
    """``sigma = sensitivity * sqrt(2 ln(1.25 / delta)) / epsilon`` (Dwork and Roth 2014, Thm A.1).

    Valid only for ``0 < epsilon < 1``.

    Examples
    --------
    >>> round(classic_gaussian_sigma(0.5, 1e-5, 1.0), 6)
    9.689611
    """
    epsilon = check_positive(owner, "epsilon", epsilon)
    delta = check_delta(owner, delta, allow_zero=False)
    sensitivity = check_positive(owner, "sensitivity", sensitivity)
    if not epsilon < 1:
        raise ParameterError(
            f"{owner}: the classic calibration needs epsilon < 1; got {epsilon!r} "
            "(use calibration='analytic', valid for any epsilon)"
        )
    sigma = sensitivity * (math.sqrt(2 * math.log(1.25 / delta)) / epsilon)
    return _check_sigma(owner, sigma, epsilon, delta, sensitivity)


def _check_sigma(owner: str, sigma: float, epsilon: float, delta: float, sens: float) -> float:
    """A calibrated sigma must be a finite positive float (it scales the noise)."""
    return check_finite_result(
        owner,
        "the noise sigma",
        sigma,
        cause=(
            f"`epsilon`={epsilon!r}, `delta`={delta!r} and `sensitivity`={sens!r} are too "
            "extreme together; rescale the sensitivity (other units) or choose epsilon "
            "closer to 1"
        ),
    )


_SQRT2 = math.sqrt(2.0)
_SQRT_PI = math.sqrt(math.pi)


def _erfcx(x: float) -> float:
    """The scaled complementary error function ``exp(x**2) erfc(x)`` for ``x >= 0``.

    Directly below 25 (``exp(625)`` and ``erfc(25)`` are both normal floats); above, the
    asymptotic series ``(1 - z + 3 z**2 - 15 z**3 + 105 z**4) / (x sqrt(pi))`` with
    ``z = 1 / (2 x**2)``, whose truncation error is below the next term, ``945 z**5``
    (relative ``3e-13`` at ``x = 25``).
    """
    if x < 25.0:
        return math.exp(x * x) * math.erfc(x)
    z = 1.0 / (2.0 * x * x)
    return (1.0 - z * (1.0 - z * (3.0 - z * (15.0 - 105.0 * z)))) / (x * _SQRT_PI)


def _analytic_delta_unit(u: float, epsilon: float) -> float:
    """Balle and Wang (2018), Theorem 8: the delta of ``N(0, sigma**2)`` at ``epsilon``,
    as a function of ``u = sigma / sensitivity`` (it depends on nothing else).

    ``delta = Phi(A) - exp(eps) Phi(B)``, ``A = 1/(2u) - eps u``, ``B = -1/(2u) - eps u``.
    Since ``eps - B**2 / 2 = -A**2 / 2``, ``exp(eps) Phi(B) = exp(-A**2/2) erfcx(-B/sqrt 2)
    / 2``: no ``exp(eps)`` is ever formed (it overflows past eps = 709.8), and for ``A < 0``
    ``Phi(A) = exp(-A**2/2) erfcx(-A/sqrt 2) / 2`` too, so the difference of two tiny tails
    is taken on the scaled values (no underflow to 0 - 0).
    """
    a = 0.5 / u - epsilon * u
    b = -0.5 / u - epsilon * u
    front = math.exp(-0.5 * a * a)  # may underflow to 0: then delta is 0 to float precision
    if front == 0.0:
        return 0.0 if a < 0 else 1.0
    tail_b = front * _erfcx(-b / _SQRT2) / 2
    if a >= 0:
        return (1.0 - math.erfc(a / _SQRT2) / 2) - tail_b
    return front * (_erfcx(-a / _SQRT2) - _erfcx(-b / _SQRT2)) / 2


def analytic_gaussian_sigma(
    epsilon: float, delta: float, sensitivity: float, *, owner: str = "analytic_gaussian_sigma"
) -> float:
    """The smallest sigma with Balle and Wang's exact condition (2018, Theorem 8).

    ``Phi(D/(2s) - eps s/D) - exp(eps) Phi(-D/(2s) - eps s/D) <= delta``. The condition
    depends on ``sigma`` and ``D`` only through ``u = sigma / D``, so ``u`` is found once for
    ``(epsilon, delta)`` and ``sigma = D u`` (no overflow or underflow for any sensitivity
    whose sigma is a float). ``u`` is bracketed by doubling or halving from 1 and then
    bisected on ``log u`` to a relative precision of 1e-12 (at most a few thousand
    evaluations even at the extremes of the float range); the upper end of the final bracket
    is returned, so the condition holds at the returned value. Valid for every epsilon > 0.

    Raises
    ------
    ParameterError
        Bad parameters, or a sigma that overflows or underflows a float (the message names
        the parameters).

    Examples
    --------
    >>> round(analytic_gaussian_sigma(1.0, 1e-5, 1.0), 4)
    3.7306
    """
    epsilon = check_positive(owner, "epsilon", epsilon)
    delta = check_delta(owner, delta, allow_zero=False)
    sensitivity = check_positive(owner, "sensitivity", sensitivity)
    u = _analytic_unit(epsilon, delta)
    if u is None:
        raise ParameterError(
            f"{owner}: `epsilon`={epsilon!r} is too small for `delta`={delta!r}: sigma would "
            "exceed 1e300 times the sensitivity"
        )
    return _check_sigma(owner, sensitivity * u, epsilon, delta, sensitivity)


@lru_cache(maxsize=256)
def _analytic_unit(epsilon: float, delta: float) -> float | None:
    """``u = sigma / sensitivity`` of the analytic calibration (``None`` past 1e300)."""
    lo = hi = 1.0
    if _analytic_delta_unit(hi, epsilon) > delta:
        while _analytic_delta_unit(hi, epsilon) > delta:
            lo, hi = hi, hi * 2
            if hi > 1e300:
                return None
    else:
        while lo > 1e-300 and _analytic_delta_unit(lo, epsilon) <= delta:
            hi, lo = lo, lo / 2
    while hi / lo > 1 + 1e-12:
        mid = math.sqrt(lo) * math.sqrt(hi)
        if not lo < mid < hi:  # adjacent floats
            break
        if _analytic_delta_unit(mid, epsilon) > delta:
            lo = mid
        else:
            hi = mid
    return hi


def discrete_gaussian_delta(sigma2: float, sensitivity: int, epsilon: float) -> float:
    """Exact delta of the 1-D discrete Gaussian N_Z(0, sigma2) with integer sensitivity.

    Canonne, Kamath and Steinke (2020), Theorem 7:
    ``delta = P[Y > eps sigma2/D - D/2] - exp(eps) P[Y > eps sigma2/D + D/2]``,
    ``Y ~ N_Z(0, sigma2)``. Evaluated by summing the pmf over ``|y| <= 40 sigma`` in float64
    (the mass beyond is below 1e-300); a calibration aid, not a sampler.

    ``sigma2`` finite and > 0, ``sensitivity`` an int >= 1, ``epsilon`` finite and >= 0. The
    sum runs over ``2 (40 sigma + 2 sensitivity) + 1`` points: beyond ``2**25`` of them
    (``sigma`` above about ``2**19``; the mechanisms use it up to ``sigma = 2**12``) the
    call is refused rather than allocating gigabytes.

    Raises
    ------
    TypeError
        A parameter that is not a real number, a non-integer ``sensitivity``.
    ParameterError
        A parameter outside its range, or a sum too large to evaluate.
    """
    owner = "discrete_gaussian_delta"
    sigma2 = check_positive(owner, "sigma2", sigma2)
    sensitivity = check_int(owner, "sensitivity", sensitivity, minimum=1)
    epsilon = check_nonnegative(owner, "epsilon", epsilon)
    sigma = math.sqrt(sigma2)
    if 40 * sigma + 2 * sensitivity + 3 > _MAX_DELTA_POINTS:
        raise ParameterError(
            f"{owner}: `sigma2`={sigma2!r} and `sensitivity`={describe(sensitivity)} need a sum "
            "over more than 2**26 points (40 sigma + 2 sensitivity above 2**25), too many for "
            "this exact calibration aid; it supports sigma up to about 2**19"
        )
    k = math.ceil(40 * sigma) + 2 * sensitivity + 2
    y = np.arange(-k, k + 1, dtype=np.float64)
    with np.errstate(over="ignore", under="ignore"):  # a tiny sigma2: the weights are 1 and 0
        w = np.exp(-(y * y) / (2 * sigma2))
    z = w.sum()
    # suffix sums: tail[j] = P[Y >= y_j]
    tail = np.cumsum(w[::-1])[::-1] / z

    def p_greater(a: float) -> float:
        if not math.isfinite(a):  # epsilon sigma2 / D overflows: beyond the support
            return 0.0
        first = math.floor(a) + 1  # smallest integer > a
        idx = first + k
        if idx <= 0:
            return 1.0
        if idx > 2 * k:
            return 0.0
        return float(tail[idx])

    d = sensitivity
    a = epsilon * sigma2 / d
    first, tail = p_greater(a - d / 2), p_greater(a + d / 2)
    # exp(eps) tail, capped where it exceeds 1 >= first (the result is then 0 either way):
    # exp(eps) alone overflows past eps = 709.8
    second = 0.0 if tail == 0 else math.exp(min(epsilon + math.log(tail), 709.0))
    return max(0.0, first - second)


def calibrate(
    epsilon: float, delta: float, sensitivity: float, calibration: str, owner: str = "Gaussian"
) -> float:
    """The continuous sigma of ``calibration``; errors name ``owner`` (the mechanism built)."""
    if calibration == "classic":
        return classic_gaussian_sigma(epsilon, delta, sensitivity, owner=owner)
    return analytic_gaussian_sigma(epsilon, delta, sensitivity, owner=owner)


def _zcdp_sigma(steps: float, epsilon: float, delta: float) -> float:
    """``steps / sqrt(2 rho)``: the sigma of the zCDP route (infinite when rho underflows)."""
    rho = approx_to_zcdp(epsilon, delta).rho
    return steps / math.sqrt(2 * rho) if rho > 0 else math.inf


#: Largest lattice variance (steps squared) the exact discrete Gaussian samplers take.
MAX_VARIANCE = 2**56
#: Largest half-width ``40 sigma + 2 sensitivity`` of the sum in :func:`discrete_gaussian_delta`.
_MAX_DELTA_POINTS = 2**25
#: Largest lattice sigma whose exact 1-D delta (an O(sigma) sum, about 10 ms here) is
#: searched; above it the smoothing route, within a relative 1e-7 of the continuous
#: calibration there, is used.
_MAX_EXACT_SIGMA = 2.0**12
#: Relative step of the exact route's variance grid.
_GROW = 1 + 2.0**-10
#: The smoothing widths ``tau`` tried by the smoothing route (module docstring, route 2).
_TAUS = (0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.15, 1.3, 1.5, 1.75, 2.0, 2.5, 3.0, 4.0, 5.0)


def smoothing_losses(tau: float, d: int) -> tuple[float, float]:
    """``(d ln(A B), d ln A)`` of the smoothing theorem for width ``tau`` and ``d`` coordinates.

    ``eta <= exp(-a) / (1 - exp(-3 a))`` with ``a = 2 pi**2 tau**2``, ``A = 1 + 2 eta``,
    ``B = (1 + 2 eta) / (1 - 2 eta)`` (module docstring); both figures are raised by a
    relative ``2**-40``, far above the rounding of these few float operations.

    Examples
    --------
    >>> loss, _ = smoothing_losses(3.0, 10**7)
    >>> 0 < loss < 1e-60
    True
    """
    a = 2 * math.pi**2 * tau * tau
    eta = math.exp(-a) / -math.expm1(-3 * a)
    ln_a = math.log1p(2 * eta)
    ln_b = ln_a - math.log1p(-2 * eta)
    up = 1 + 2.0**-40
    return d * (ln_a + ln_b) * up, d * ln_a * up


def smoothed_variance(
    epsilon: float, delta: float, steps: float, d: int, calibration: str
) -> float:
    """Route 2: the smallest ``s'**2 + tau**2`` over the widths (``inf`` if none serves).

    ``s'`` is the continuous calibration at ``eps' = eps - d ln(A B)`` and ``delta' =
    delta / A**d`` (each rounded down once more), for L2 sensitivity ``steps`` (lattice
    units): by the smoothing theorem of the module docstring, ``N_Z(0, V)^d`` with ``V`` at
    least the returned value is ``(epsilon, delta)``-DP for integer shifts of L2 norm up to
    ``steps``.
    """
    best = math.inf
    for tau in _TAUS:
        eps_loss, ln_a_d = smoothing_losses(tau, d)
        eps2 = math.nextafter(epsilon - eps_loss, 0.0)
        del2 = math.nextafter(delta * math.exp(-ln_a_d), 0.0)
        if not (eps2 > 0 and del2 > 0):
            continue  # this width loses the whole budget to the lemma's factors
        try:
            s_cont = calibrate(eps2, del2, steps, calibration)
        except ParameterError:  # sigma beyond 1e300 steps: refused by the callers anyway
            continue
        best = min(best, s_cont * s_cont + tau * tau)
    return best


def exact_variance(
    start: float,
    steps: int,
    epsilon: float,
    delta: float,
    quantise: Callable[[float], int | Fraction],
    *,
    below: bool,
) -> int | Fraction:
    """Route 1: a variance on the grid ``quantise(start * _GROW**k)`` whose exact delta
    (CKS Theorem 7, :func:`discrete_gaussian_delta`) at integer sensitivity ``steps`` is at
    most ``delta``; the returned value has been checked.

    From ``k = 0`` upwards to the first that passes; with ``below``, then bisected down to
    ``start * max(1/64, 1 - 4 / sqrt(start))`` (the discrete curve lies under the continuous
    one for small sigma: up to 18% less variance at epsilon 10). The curve need not be
    monotone in the variance, so the bisection may miss a smaller passing value, never
    return a failing one.
    """

    def at(k: int) -> int | Fraction:
        return quantise(start * _GROW**k)

    def passes(k: int) -> bool:
        return discrete_gaussian_delta(float(at(k)), steps, epsilon) <= delta

    hi = 0
    while not passes(hi):
        hi += 1
    if below:
        lo = math.floor(math.log(max(1 / 64, 1 - 4 / math.sqrt(start))) / math.log(_GROW))
        if lo < hi and passes(lo):
            hi = lo
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if passes(mid):
                hi = mid
            else:
                lo = mid
    return at(hi)


def _ceil_int(x: float) -> int:
    """The smallest integer ``>= x`` and ``>= 1`` (a lattice variance)."""
    return max(1, math.ceil(math.nextafter(x, math.inf)))


def _too_noisy(owner: str, params: str, s2: float) -> ParameterError:
    size = f"of about 2**{math.log2(s2) / 2:.1f}" if math.isfinite(s2) else "beyond any float"
    return ParameterError(
        f"{owner}: {params} give a noise sigma {size}, above the 2**28 lattice steps the "
        "exact discrete Gaussian sampler supports: epsilon or delta is too small for this "
        "sensitivity (the noise would swamp any value)"
    )


def _exact_affordable(sigma: float, steps: int) -> bool:
    """The exact route's O(sigma) sum is cheap and within :func:`discrete_gaussian_delta`."""
    return sigma <= _MAX_EXACT_SIGMA and 40 * sigma + 2 * steps + 3 <= _MAX_DELTA_POINTS


class LatticePlan(NamedTuple):
    """What a :class:`~dpkit.mechanisms.Gaussian` release of ``d`` coordinates draws."""

    grid: float  # the lattice spacing, a power of two
    variance: int  # V: N_Z(0, V) per coordinate, in lattice steps squared
    sigma: float  # sqrt(V) * grid: the standard deviation parameter drawn
    analysis: str  # the route that calibrated V: "exact", "smoothing" or "zcdp"
    steps: float  # the L2 sensitivity in lattice steps V is calibrated for, rounding charged


@lru_cache(maxsize=256)
def lattice_plan(
    epsilon: float, delta: float, sens2: float, d: int, calibration: str
) -> LatticePlan:
    """The lattice, variance and route of a Gaussian release of ``d`` coordinates (cached).

    The grid follows the sensitivity (``sens / (sqrt(d) 2**10)``), made coarser when the
    noise is so large next to it that the lattice sigma would exceed ``2**26`` (keeps ``V``
    within the sampler's ``2**56``; the rounding charge, ``grid / sens``, is then about
    ``sigma / (2**25 sens)``: below 1% while the continuous sigma is under ``2**18``
    sensitivities, epsilon above about ``1e-5``). Rounding moves neighbours at most
    ``floor(s/g) + 1`` steps apart for a scalar and ``s/g + sqrt(d)`` in L2 for ``d``
    coordinates (each coordinate one extra step): ``V`` is calibrated for that charged
    sensitivity by the smallest route of the module docstring (the exact one for a scalar
    whose lattice sigma is at most ``2**12``). Everything is checked here, before any spend.
    """
    root_d = math.sqrt(d)
    where = "" if d == 1 else f" for {d} coordinates"
    params = f"`sensitivity`={sens2!r}{where}"
    sigma_cont = calibrate(epsilon, delta, sens2, calibration)
    g = lattice_grid("Gaussian", sens2 / (root_d * 2.0**10), params=params)
    if sigma_cont / g > 2.0**26:
        g = lattice_grid("Gaussian", sigma_cont / 2.0**25, params=params)
    steps = math.floor(sens2 / g) + 1 if d == 1 else sens2 / g + root_d
    sigma = calibrate(epsilon, delta, steps, calibration)  # lattice units
    if d == 1 and _exact_affordable(sigma, int(steps)):
        below = calibration == "analytic"  # "classic" keeps its formula as a floor
        v = int(exact_variance(sigma * sigma, int(steps), epsilon, delta, _ceil_int, below=below))
        analysis = "exact"
    else:
        smooth = smoothed_variance(epsilon, delta, steps, d, calibration)
        zcdp = max(sigma, _zcdp_sigma(steps, epsilon, delta)) ** 2
        best, analysis = (smooth, "smoothing") if smooth <= zcdp else (zcdp, "zcdp")
        if not best < MAX_VARIANCE:
            raise _too_noisy(
                "Gaussian", f"`epsilon`={epsilon!r}, `delta`={delta!r} and {params}", best
            )
        v = _ceil_int(best)
    if v > MAX_VARIANCE:
        raise _too_noisy(
            "Gaussian", f"`epsilon`={epsilon!r}, `delta`={delta!r} and {params}", float(v)
        )
    return LatticePlan(g, v, math.sqrt(v) * g, analysis, steps)


def dyadic_up(x: float | Fraction, bits: int = 20) -> Fraction:
    """The smallest ``m / 2**k >= x`` with ``m`` of ``bits`` significant bits (exact).

    Keeps the variance a short dyadic rational at every scale: a tiny sigma (epsilon 1e6)
    keeps its 20 significant bits instead of collapsing to a fixed ``2**-20`` grid.
    """
    q = Fraction(x)
    k = bits - (q.numerator.bit_length() - q.denominator.bit_length())
    scale = Fraction(2) ** k
    return Fraction(math.ceil(q * scale)) / scale


@lru_cache(maxsize=256)
def integer_plan(epsilon: float, delta: float, sens: int, d: int) -> tuple[Fraction, str]:
    """Variance and route of a :class:`~dpkit.mechanisms.DiscreteGaussian` release.

    One coordinate, or any number of them at sensitivity 1 (an integer vector of L2 norm 1
    is ``+-e_i``): the exact route. Otherwise the smaller of the smoothing and zCDP routes.
    The variance is a 20-bit dyadic rational (an integer above ``2**20``). Raises a
    ParameterError (before any spend) when sigma exceeds the ``2**28`` the samplers take.
    """
    sigma = analytic_gaussian_sigma(epsilon, delta, float(sens), owner="DiscreteGaussian")
    where = "" if d == 1 else f" for {d} coordinates"
    params = f"`epsilon`={epsilon!r}, `delta`={delta!r} and `sensitivity`={sens!r}{where}"
    if (d == 1 or sens == 1) and _exact_affordable(sigma, sens):
        s2 = exact_variance(sigma * sigma, sens, epsilon, delta, dyadic_up, below=True)
        return Fraction(s2), "exact"
    smooth = smoothed_variance(epsilon, delta, float(sens), d, "analytic")
    zcdp = max(sigma, _zcdp_sigma(sens, epsilon, delta)) ** 2
    best, analysis = (smooth, "smoothing") if smooth <= zcdp else (zcdp, "zcdp")
    if not best < MAX_VARIANCE / 2:
        raise _too_noisy("DiscreteGaussian", params, best)
    return dyadic_up(math.nextafter(best, math.inf)), analysis
