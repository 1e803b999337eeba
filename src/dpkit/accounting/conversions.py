"""Explicit conversions between privacy-loss types.

Every conversion loses something, so dpkit never converts silently inside arithmetic: these
functions are the only bridges between pure DP, zCDP and (epsilon, delta).

* :func:`pure_to_zcdp` — epsilon-DP implies (epsilon^2 / 2)-zCDP (Bun and Steinke 2016,
  Proposition 1.4).
* :func:`bounded_range_to_zcdp` — an epsilon-bounded-range mechanism (the exponential
  mechanism with privacy parameter epsilon) is (epsilon^2 / 8)-zCDP (Cesar and Rogers 2021,
  Lemma 3.2), four times better than the generic conversion.
* :func:`zcdp_to_approx` — rho-zCDP implies (epsilon, delta)-DP, either with the standard
  bound epsilon = rho + 2 sqrt(rho log(1/delta)) (Bun and Steinke 2016, Proposition 1.3) or
  with the tighter bound of Canonne, Kamath and Steinke (2020, Corollary 13).
* :func:`approx_to_zcdp` — the other way for a budget: the largest rho whose zCDP
  :func:`zcdp_to_approx` converts to within a given (epsilon, delta).

All results are rounded *up* (a few units in the last place) so floating-point error can
only make a guarantee weaker-looking, never stronger than the truth.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache
from typing import Any, Literal

from dpkit._validate import check_choice, check_delta, check_nonnegative, check_positive
from dpkit.accounting._rational import finite_up, round_up
from dpkit.accounting.loss import ZCDP, ApproxDP, PureDP
from dpkit.errors import ParameterError

__all__ = ["approx_to_zcdp", "bounded_range_to_zcdp", "pure_to_zcdp", "zcdp_to_approx"]


def _epsilon_of(owner: str, value: Any) -> float:
    """The epsilon of a PureDP value (or of an ApproxDP with delta 0), or a bare number >= 0."""
    if isinstance(value, PureDP):
        return value.epsilon
    if isinstance(value, ApproxDP):
        if value.delta != 0:
            raise ParameterError(
                f"{owner}: needs a pure epsilon-DP guarantee; got {value!r} with delta > 0, "
                "which implies no zCDP bound"
            )
        return value.epsilon
    if isinstance(value, ZCDP):
        raise TypeError(f"{owner}: needs a pure epsilon-DP guarantee; got {value!r}")
    return check_nonnegative(owner, "epsilon", value)


def _rho_of(owner: str, value: Any) -> float:
    if isinstance(value, ZCDP):
        return value.rho
    if isinstance(value, PureDP | ApproxDP):
        raise TypeError(
            f"{owner}: needs a zCDP guarantee; got {value!r} (convert it first with "
            "pure_to_zcdp or bounded_range_to_zcdp)"
        )
    return check_nonnegative(owner, "rho", value)


def pure_to_zcdp(epsilon: PureDP | float) -> ZCDP:
    """Convert pure epsilon-DP to zCDP: rho = epsilon^2 / 2.

    Parameters
    ----------
    epsilon : PureDP or float
        The pure guarantee, as a :class:`PureDP` value (or an :class:`ApproxDP` with
        ``delta == 0``) or a bare ``epsilon >= 0``.

    Returns
    -------
    ZCDP
        ``ZCDP(epsilon**2 / 2)``, computed exactly and rounded up to the next float.

    Raises
    ------
    TypeError
        If ``epsilon`` is a :class:`ZCDP` value or not a number.
    ParameterError
        If ``epsilon`` is negative, NaN or infinite, or an :class:`ApproxDP` with ``delta > 0``.

    Privacy
    -------
    Every epsilon-DP mechanism is (epsilon^2 / 2)-zCDP (Bun and Steinke 2016, Proposition 1.4).

    Notes
    -----
    The bound is tight in general (randomised response attains it as epsilon -> 0). For the
    exponential mechanism use :func:`bounded_range_to_zcdp`, which is four times smaller.
    O(1).

    References
    ----------
    M. Bun and T. Steinke, "Concentrated Differential Privacy: Simplifications, Extensions, and
    Lower Bounds", TCC 2016, arXiv:1605.02065.

    Examples
    --------
    >>> pure_to_zcdp(PureDP(1.0))
    ZCDP(rho=0.5)
    >>> pure_to_zcdp(0.1).rho
    0.005000000000000001
    """
    eps = _epsilon_of("pure_to_zcdp", epsilon)
    what = f"rho = epsilon**2 / 2 for `epsilon`={eps!r}"
    return ZCDP(finite_up("pure_to_zcdp", Fraction(eps) ** 2 / 2, what))


def bounded_range_to_zcdp(epsilon: PureDP | float) -> ZCDP:
    """zCDP of an epsilon-bounded-range mechanism (the exponential mechanism): epsilon^2 / 8.

    Parameters
    ----------
    epsilon : PureDP or float
        The bounded-range parameter: for the exponential mechanism with utility sensitivity
        ``Delta`` and sampling weights ``exp(epsilon * u / (2 * Delta))`` this is its privacy
        parameter epsilon.

    Returns
    -------
    ZCDP
        ``ZCDP(epsilon**2 / 8)``, computed exactly and rounded up.

    Raises
    ------
    TypeError, ParameterError
        As :func:`pure_to_zcdp`.

    Privacy
    -------
    An epsilon-bounded-range mechanism is (epsilon^2 / 8)-zCDP (Cesar and Rogers 2021,
    Lemma 3.2, building on Durfee and Rogers 2019). The exponential mechanism is
    epsilon-bounded-range, as the inverse sensitivity mechanism's seed paper notes.

    Notes
    -----
    Only valid for bounded-range mechanisms (exponential mechanism, report-noisy-max with
    Gumbel noise, inverse sensitivity); for a generic epsilon-DP mechanism use
    :func:`pure_to_zcdp`. O(1).

    References
    ----------
    M. Cesar and R. Rogers, "Bounding, Concentrating, and Truncating: Unifying Privacy Loss
    Composition for Data Analytics", ALT 2021, arXiv:2004.07223.
    D. Durfee and R. Rogers, "Practical Differentially Private Top-k Selection with
    Pay-what-you-get Composition", NeurIPS 2019.

    Examples
    --------
    >>> bounded_range_to_zcdp(1.0)
    ZCDP(rho=0.125)
    """
    eps = _epsilon_of("bounded_range_to_zcdp", epsilon)
    what = f"rho = epsilon**2 / 8 for `epsilon`={eps!r}"
    return ZCDP(finite_up("bounded_range_to_zcdp", Fraction(eps) ** 2 / 8, what))


def _cks_terms(alpha: float, rho: float, log_inv_delta: float) -> tuple[float, float]:
    """Canonne-Kamath-Steinke epsilon at one Renyi order ``alpha > 1`` (valid for every one),
    and the sum of the absolute values of its terms (to bound the floating-point error)."""
    am1 = alpha - 1.0
    terms = (
        alpha * rho,
        log_inv_delta / am1,
        alpha * math.log1p(-1.0 / alpha) / am1,
        -math.log(am1) / am1,
    )
    return math.fsum(terms), math.fsum(abs(x) for x in terms)


#: Relative error allowed per term of :func:`_cks_terms`: each is at most four correctly
#: rounded operations (<= 4 ulps with libm's log/log1p within 1 ulp), fsum adds < 1 ulp.
_CKS_REL_ERROR = 16 * 2.0**-52


def _cks_epsilon(rho: float, log_inv_delta: float) -> float:
    """Minimise the CKS epsilon over alpha = 1 + e^t and return a certified upper bound.

    A coarse grid over t locates the basin, golden-section search refines it. Any alpha gives
    a valid bound, so an imperfect search can only cost tightness, never soundness. The value
    at the chosen alpha is raised by a margin covering the rounding error of every term, which
    matters when terms of opposite sign nearly cancel (delta close to 1).
    """

    def f(t: float) -> float:
        return _cks_terms(1.0 + math.exp(t), rho, log_inv_delta)[0]

    lo_t, hi_t, steps = -30.0, 60.0, 360
    grid = [lo_t + (hi_t - lo_t) * i / steps for i in range(steps + 1)]
    values = [f(t) for t in grid]
    best = min(range(len(grid)), key=values.__getitem__)
    a = grid[max(best - 1, 0)]
    b = grid[min(best + 1, steps)]
    inv_phi = (math.sqrt(5.0) - 1.0) / 2.0
    c, d = b - inv_phi * (b - a), a + inv_phi * (b - a)
    fc, fd = f(c), f(d)
    for _ in range(80):
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - inv_phi * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + inv_phi * (b - a)
            fd = f(d)
    t_best = min((values[best], grid[best]), (fc, c), (fd, d))[1]
    value, magnitude = _cks_terms(1.0 + math.exp(t_best), rho, log_inv_delta)
    return value + _CKS_REL_ERROR * magnitude


def zcdp_to_approx(
    rho: ZCDP | float, delta: float, *, method: Literal["cks", "standard"] = "cks"
) -> ApproxDP:
    """Convert rho-zCDP to (epsilon, delta)-DP for a chosen ``delta``.

    Parameters
    ----------
    rho : ZCDP or float
        The zCDP guarantee, as a :class:`ZCDP` value or a bare ``rho >= 0``.
    delta : float
        The failure probability to pay, ``0 < delta < 1``.
    method : {"cks", "standard"}, default "cks"
        ``"standard"``: epsilon = rho + 2 sqrt(rho log(1/delta)).
        ``"cks"``: the tighter bound of Canonne, Kamath and Steinke, never larger than the
        standard one (the smaller of the two is returned).

    Returns
    -------
    ApproxDP
        ``ApproxDP(epsilon, delta)`` with epsilon rounded up.

    Raises
    ------
    TypeError
        If ``rho`` is a PureDP/ApproxDP value or not a number, or ``method`` is not a string.
    ParameterError
        If ``rho`` is negative or not finite, ``delta`` is not in (0, 1), or ``method`` is
        unknown.

    Privacy
    -------
    Standard: Bun and Steinke (2016), Proposition 1.3. CKS: Canonne, Kamath and Steinke (2020),
    Corollary 13: rho-zCDP implies (epsilon, delta)-DP whenever for some alpha > 1

    .. math:: \\delta = \\frac{\\exp((\\alpha-1)(\\alpha\\rho-\\varepsilon))}{\\alpha-1}
              \\left(1-\\frac{1}{\\alpha}\\right)^{\\alpha}.

    Notes
    -----
    Solving the CKS condition for epsilon at a fixed order alpha gives

    .. math:: \\varepsilon(\\alpha) = \\alpha\\rho + \\frac{\\log(1/\\delta)
              + \\alpha\\log(1-1/\\alpha) - \\log(\\alpha-1)}{\\alpha-1},

    valid for every alpha > 1; dpkit minimises it over alpha = 1 + e^t with a 361-point grid
    over t in [-30, 60] and 80 golden-section steps (O(1), about 0.5 ms), then adds a margin of
    16 ulps of the sum of the absolute values of the terms at the chosen alpha, so rounding
    cannot push epsilon below the true bound even when terms cancel. The standard bound is
    the value of the plain Renyi bound ``alpha rho + log(1/delta)/(alpha - 1)`` at its optimum
    alpha = 1 + sqrt(log(1/delta)/rho); the CKS bound is below it at every alpha.

    References
    ----------
    M. Bun and T. Steinke, "Concentrated Differential Privacy: Simplifications, Extensions, and
    Lower Bounds", TCC 2016, arXiv:1605.02065.
    C. Canonne, G. Kamath and T. Steinke, "The Discrete Gaussian for Differential Privacy",
    NeurIPS 2020, arXiv:2004.00010.

    Examples
    --------
    >>> zcdp_to_approx(ZCDP(0.5), 1e-6, method="standard").epsilon  # 0.5 + 2 sqrt(0.5 ln 1e6)
    5.756521769756939
    >>> round(zcdp_to_approx(ZCDP(0.5), 1e-6).epsilon, 4)
    5.2215
    """
    owner = "zcdp_to_approx"
    r = _rho_of(owner, rho)
    d = check_delta(owner, delta, allow_zero=False)
    check_choice(owner, "method", method, ("cks", "standard"))
    eps = _converted_epsilon(r, d, method)
    if not math.isfinite(eps):
        raise ParameterError(
            f"{owner}: the converted epsilon overflows a float for `rho`={r!r} and "
            f"`delta`={d!r}; a rho this large gives no useful (epsilon, delta) guarantee"
        )
    return ApproxDP(eps, d)


def _converted_epsilon(r: float, d: float, method: str) -> float:
    """:func:`zcdp_to_approx`'s epsilon for checked ``rho`` and ``delta`` (``inf`` when it
    overflows a float)."""
    if r == 0:
        return 0.0
    log_inv_delta = -math.log(d)
    standard = r + 2.0 * math.sqrt(r * log_inv_delta)
    eps = standard if method == "standard" else min(standard, _cks_epsilon(r, log_inv_delta))
    return round_up(max(eps, 0.0))


def approx_to_zcdp(epsilon: float, delta: float) -> ZCDP:
    """The largest rho whose rho-zCDP converts to (epsilon, delta)-DP: a budget for zCDP.

    Parameters
    ----------
    epsilon : float
        The epsilon to stay within, a finite number > 0.
    delta : float
        The delta paid by the conversion, ``0 < delta < 1``.

    Returns
    -------
    ZCDP
        ``ZCDP(rho)`` with ``zcdp_to_approx(rho, delta).epsilon <= epsilon`` (checked, with
        :func:`zcdp_to_approx`'s certified margin), rho within a relative ``1e-9`` of the
        largest such value; ``rho = 0`` when epsilon is so small that the largest rho
        underflows the float range.

    Raises
    ------
    TypeError
        If ``epsilon`` or ``delta`` is not a number.
    ParameterError
        If ``epsilon`` is not a finite number > 0 or ``delta`` is not in (0, 1).

    Privacy
    -------
    A mechanism that is rho-zCDP for the returned rho is (epsilon, delta)-DP, by
    :func:`zcdp_to_approx` (Canonne, Kamath and Steinke 2020, Corollary 13, or Bun and
    Steinke 2016, Proposition 1.3, whichever is smaller).

    Notes
    -----
    The search starts from the standard bound solved for rho,
    ``rho = (sqrt(log(1/delta) + epsilon) - sqrt(log(1/delta)))**2``, which the CKS bound
    can only improve on, and bisects on ``log rho`` (about 30 conversions, cached). Past
    ``rho = 1e300`` (epsilon near the top of the float range) the standard bound is returned.

    Examples
    --------
    >>> rho = approx_to_zcdp(1.0, 1e-6).rho
    >>> zcdp_to_approx(rho, 1e-6).epsilon <= 1.0
    True
    >>> round(rho, 4)
    0.0244
    """
    owner = "approx_to_zcdp"
    eps = check_positive(owner, "epsilon", epsilon)
    d = check_delta(owner, delta, allow_zero=False)
    return ZCDP(_largest_rho(eps, d))


@lru_cache(maxsize=256)
def _largest_rho(epsilon: float, delta: float) -> float:
    """:func:`approx_to_zcdp` on checked floats (cached: releases ask for the same budget)."""
    lg = -math.log(delta)
    lo = (math.sqrt(lg + epsilon) - math.sqrt(lg)) ** 2
    # the standard bound is exact at lo up to rounding: step down until the check passes
    # (_converted_epsilon is zcdp_to_approx's epsilon, infinite where that overflows)
    while lo > 0 and _converted_epsilon(lo, delta, "cks") > epsilon:
        lo *= 1 - 2.0**-20
    if lo <= 0 or lo > 1e300:
        return max(lo, 0.0)
    hi = 4 * lo
    while _converted_epsilon(hi, delta, "cks") <= epsilon:
        lo, hi = hi, 2 * hi
        if hi > 1e300:
            return lo
    while hi / lo > 1 + 1e-9:
        mid = math.sqrt(lo) * math.sqrt(hi)  # lo * hi may overflow
        if _converted_epsilon(mid, delta, "cks") <= epsilon:
            lo = mid
        else:
            hi = mid
    return lo
