"""The Gaussian mechanism (classic and analytic calibration) and the discrete Gaussian."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

import numpy as np

from dpkit._validate import (
    check_choice,
    check_delta,
    check_finite_result,
    check_int,
    check_nonnegative,
    check_positive,
    check_relation,
    describe,
)
from dpkit.accounting.conversions import approx_to_zcdp
from dpkit.accounting.loss import ApproxDP
from dpkit.errors import ParameterError
from dpkit.mechanisms._common import (
    as_integers,
    as_values,
    check_size,
    grid_round,
    lattice_grid,
    measured,
    restore_shape,
    spend,
)
from dpkit.mechanisms.release import Release
from dpkit.samplers import as_source
from dpkit.samplers._discrete import discrete_gaussian, discrete_gaussian_tc

__all__ = [
    "DiscreteGaussian",
    "Gaussian",
    "accuracy_to_gaussian_sigma",
    "analytic_gaussian_sigma",
    "classic_gaussian_sigma",
    "discrete_gaussian_delta",
    "gaussian_sigma_to_accuracy",
]

_NORMS = ("l1", "l2")
_CALIBRATIONS = ("classic", "analytic")


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


def gaussian_sigma_to_accuracy(sigma: float, alpha: float) -> float:
    """Half-width ``a`` with ``P[|N(0, sigma^2)| > a] = alpha``."""
    sigma = check_positive("gaussian_sigma_to_accuracy", "sigma", sigma)
    alpha = check_positive("gaussian_sigma_to_accuracy", "alpha", alpha)
    if not alpha < 1:
        raise ParameterError(
            f"gaussian_sigma_to_accuracy: `alpha` must be in (0, 1); got {alpha!r}"
        )
    return sigma * _inv_tail(alpha / 2)


def accuracy_to_gaussian_sigma(accuracy: float, alpha: float) -> float:
    """The sigma whose ``(1 - alpha)`` interval has half-width ``accuracy``."""
    accuracy = check_positive("accuracy_to_gaussian_sigma", "accuracy", accuracy)
    alpha = check_positive("accuracy_to_gaussian_sigma", "alpha", alpha)
    if not alpha < 1:
        raise ParameterError(
            f"accuracy_to_gaussian_sigma: `alpha` must be in (0, 1); got {alpha!r}"
        )
    return accuracy / _inv_tail(alpha / 2)


def _inv_tail(p: float) -> float:
    """z with P[N(0,1) > z] = p, by bisection on erfc."""
    lo, hi = -40.0, 40.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if _phi(-mid) > p:
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
    (``sigma`` above about ``2**19``; the mechanisms use it up to ``sigma = 2**16``) the
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


def _zcdp_sigma(steps: float, epsilon: float, delta: float) -> float:
    """``steps / sqrt(2 rho)``: the sigma of the zCDP route (infinite when rho underflows)."""
    rho = approx_to_zcdp(epsilon, delta).rho
    return steps / math.sqrt(2 * rho) if rho > 0 else math.inf


#: Largest variance ``t * c`` (in lattice units) the exact discrete Gaussian samplers take.
_MAX_TC = 2**56
#: Largest lattice sigma whose exact 1-D delta (CKS Theorem 7, an O(sigma) sum) is checked;
#: above it (epsilon below about 1e-4) the proven zCDP route of the vectors is used instead.
_MAX_EXACT_SIGMA = 2.0**16
#: Largest half-width ``40 sigma + 2 sensitivity`` of the sum in :func:`discrete_gaussian_delta`.
_MAX_DELTA_POINTS = 2**25


def _too_noisy(owner: str, params: str, s2: float) -> ParameterError:
    size = f"of about 2**{math.log2(s2) / 2:.1f}" if math.isfinite(s2) else "beyond any float"
    return ParameterError(
        f"{owner}: {params} give a noise sigma {size}, above the 2**28 lattice steps the "
        "exact discrete Gaussian sampler supports: epsilon or delta is too small for this "
        "sensitivity (the noise would swamp any value)"
    )


@lru_cache(maxsize=256)
def _lattice_plan(
    epsilon: float, delta: float, sens2: float, d: int, calibration: str, sigma_cont: float
) -> tuple[float, int, int, float]:
    """Grid, variance factors (t, c) and effective sigma for d coordinates (cached).

    The grid follows the sensitivity (``sens / (sqrt(d) 2**10)``), made coarser when the
    noise is so large next to it that the lattice sigma would exceed ``2**16`` (one
    coordinate: keeps the exact delta check cheap) or ``2**26`` (vectors: keeps ``t * c``
    within the sampler's ``2**56``; the extra rounding charge ``sqrt(d) g`` is then at most
    ``sqrt(d) 2**-25`` of sigma). Everything is checked here, before any spend.
    """
    root_d = math.sqrt(d)
    where = "" if d == 1 else f" for {d} coordinates"
    params = f"`sensitivity`={sens2!r}{where}"
    g = lattice_grid("Gaussian", sens2 / (root_d * 2.0**10), params=params)
    # keep the 1-D lattice sigma below 2**16 so the exact delta check stays cheap
    if d == 1 and sigma_cont / g > 2.0**16:
        g = lattice_grid("Gaussian", sigma_cont / 2.0**15, params=params)
    if d > 1 and sigma_cont / g > 2.0**26:
        g = lattice_grid("Gaussian", sigma_cont / 2.0**25, params=params)
    steps = math.floor(sens2 / g) + 1 if d == 1 else sens2 / g + root_d
    # rounding: each coordinate moves at most one extra lattice step; in L2 that is sqrt(d)
    sens_eff = steps * g
    sigma = _calibrate(epsilon, delta, sens_eff, calibration) / g
    exact_check = d == 1 and sigma <= _MAX_EXACT_SIGMA
    if not exact_check:  # vectors, or a scalar too noisy for the O(sigma) exact delta check
        sigma = max(sigma, _zcdp_sigma(steps, epsilon, delta))
    if not sigma * sigma < _MAX_TC:
        raise _too_noisy(
            "Gaussian", f"`epsilon`={epsilon!r}, `delta`={delta!r} and {params}", sigma * sigma
        )
    t = math.floor(sigma) + 1
    c = math.ceil(sigma * sigma / t)
    if exact_check:
        while discrete_gaussian_delta(float(t * c), int(steps), epsilon) > delta:
            c = math.ceil(c * (1 + 2.0**-10))
    if t * c > _MAX_TC:
        raise _too_noisy(
            "Gaussian", f"`epsilon`={epsilon!r}, `delta`={delta!r} and {params}", float(t * c)
        )
    return g, t, c, math.sqrt(t * c) * g


def _calibrate(
    epsilon: float, delta: float, sensitivity: float, calibration: str, owner: str = "Gaussian"
) -> float:
    """The continuous sigma; errors name ``owner`` (the mechanism the user built)."""
    if calibration == "classic":
        return classic_gaussian_sigma(epsilon, delta, sensitivity, owner=owner)
    return analytic_gaussian_sigma(epsilon, delta, sensitivity, owner=owner)


@dataclass(frozen=True, slots=True)
class Gaussian:
    """The Gaussian mechanism: ``value + N(0, sigma^2)`` per coordinate, on a fine lattice.

    Parameters
    ----------
    epsilon : float > 0
    delta : float in (0, 1)
    sensitivity : float > 0
        The query's sensitivity in the norm ``norm``.
    norm : {"l2", "l1"}
        Which sensitivity was given. The Gaussian mechanism needs the L2 sensitivity; an L1
        bound is also an L2 bound (``||v||_2 <= ||v||_1``), so it is used as is.
    calibration : {"analytic", "classic"}
        ``"classic"``: ``sigma = sensitivity sqrt(2 ln(1.25/delta)) / epsilon``, valid only for
        ``epsilon < 1`` (refused otherwise). ``"analytic"``: Balle and Wang's exact
        calibration, valid for every epsilon and never noisier than the classic one.
    relation : {"unbounded", "bounded"}
        The neighbour relation ``sensitivity`` was computed for: ``"unbounded"`` (default; add
        or remove one record) or ``"bounded"`` (replace one record). The guarantee holds under
        it; it is reported in :class:`Release` and passed to the accountant when spending.

    Privacy
    -------
    ``(epsilon, delta)``-DP. The value is rounded to the lattice ``grid * Z^d`` (grid a power
    of two fixed by the sensitivity and the dimension, never by the data) and exact discrete
    Gaussian noise is added (:func:`dpkit.samplers.discrete_gaussian`; the guarantee rests on
    the distribution being exactly the discrete Gaussian of Canonne, Kamath and Steinke 2020,
    whichever exact sampler draws it). Rounding moves
    neighbours at most ``floor(s/grid) + 1`` steps apart for a scalar and
    ``s/grid + sqrt(d)`` steps in L2 for ``d`` coordinates; sigma is calibrated for that
    effective sensitivity. For a scalar, the discrete Gaussian's exact delta (CKS Theorem 7)
    is then checked and sigma raised until it is at most ``delta``. For ``d > 1`` (and for a
    scalar whose lattice sigma exceeds ``2**16``, epsilon below about ``1e-4``, where that
    O(sigma) check is too costly) sigma is
    also at least ``steps / sqrt(2 rho)`` with ``rho`` the zCDP parameter that converts to
    ``(epsilon, delta)`` (Canonne, Kamath and Steinke 2020, Corollary 13), because the
    multivariate discrete Gaussian is proved ``rho``-zCDP (CKS Theorem 14) rather than
    matched to the continuous curve; this costs some extra noise for vectors (about 9% at
    epsilon 1, delta 1e-5), reported by ``noise_scale(d)``, while :attr:`sigma` stays the
    continuous calibration for the given sensitivity. The guarantee holds under ``relation``.

    Raises
    ------
    TypeError
        A numeric parameter is not a real number (a bool, a string, ...).
    ParameterError
        ``epsilon`` or ``sensitivity`` not a finite number > 0; ``delta`` outside ``(0, 1)``;
        an unknown ``norm``, ``calibration`` or ``relation``; ``calibration="classic"``
        with ``epsilon >= 1``.

    Examples
    --------
    >>> gau = Gaussian(epsilon=1.0, delta=1e-5, sensitivity=1.0)
    >>> round(gau.sigma, 4)
    3.7306
    >>> gau.release(10.0, rng=3)
    12.24609375

    References
    ----------
    B. Balle, Y.-X. Wang. Improving the Gaussian Mechanism for Differential Privacy:
    Analytical Calibration and Optimal Denoising. ICML 2018.
    C. Canonne, G. Kamath, T. Steinke. The Discrete Gaussian for Differential Privacy. 2020.
    C. Dwork, A. Roth. The Algorithmic Foundations of Differential Privacy, Appendix A. 2014.
    """

    epsilon: float
    delta: float
    sensitivity: float = 1.0
    norm: str = "l2"
    calibration: str = "analytic"
    relation: str = "unbounded"

    def __post_init__(self) -> None:
        check_relation("Gaussian", self.relation)
        object.__setattr__(self, "epsilon", check_positive("Gaussian", "epsilon", self.epsilon))
        object.__setattr__(self, "delta", check_delta("Gaussian", self.delta, allow_zero=False))
        object.__setattr__(
            self, "sensitivity", check_positive("Gaussian", "sensitivity", self.sensitivity)
        )
        check_choice("Gaussian", "norm", self.norm, _NORMS)
        check_choice("Gaussian", "calibration", self.calibration, _CALIBRATIONS)
        if self.calibration == "classic" and not self.epsilon < 1:
            raise ParameterError(
                f"Gaussian: calibration='classic' needs epsilon < 1; got {self.epsilon!r} "
                "(use calibration='analytic', valid for any epsilon)"
            )
        # fail fast: sigma and the scalar lattice are representable (cheap checks; the full
        # plan for d coordinates is made, and checked, by release before anything is spent)
        sigma = self.sigma
        params = f"`sensitivity`={self.sensitivity!r}"
        g = lattice_grid("Gaussian", self.sensitivity / 2.0**10, params=params)
        if sigma / g > 2.0**16:
            lattice_grid("Gaussian", sigma / 2.0**15, params=params)

    @property
    def privacy(self) -> ApproxDP:
        return ApproxDP(self.epsilon, self.delta)

    @property
    def sigma(self) -> float:
        """The continuous calibration's sigma for the given sensitivity."""
        return _calibrate(self.epsilon, self.delta, self.sensitivity, self.calibration)

    @property
    def scale(self) -> float:
        return self.sigma

    def _plan(self, d: int) -> tuple[float, int, int, float]:
        return _lattice_plan(
            self.epsilon, self.delta, self.sensitivity, d, self.calibration, self.sigma
        )

    def noise_scale(self, d: int = 1) -> float:
        """The standard deviation parameter actually used for ``d`` coordinates.

        Parameters
        ----------
        d : int
            Number of coordinates released together (default 1: a scalar).

        Returns
        -------
        float
            The lattice Gaussian's sigma: at least :attr:`sigma`, raised by the charged
            rounding and, for ``d > 1``, by the zCDP route (see the class notes).

        Raises
        ------
        ParameterError
            The lattice plan cannot be made for these parameters (the message says which).
        """
        return self._plan(d)[3]

    def accuracy(self, alpha: float = 0.05, d: int = 1) -> float:
        """Half-width of the ``(1 - alpha)`` interval of one coordinate's noise.

        Parameters
        ----------
        alpha : float
            The interval leaves out probability ``alpha``, ``0 < alpha < 1`` (default 0.05).
        d : int
            Number of coordinates released together (default 1: a scalar).

        Returns
        -------
        float
            ``noise_scale(d) * z(1 - alpha / 2)``, the normal approximation of the lattice
            Gaussian (accurate to far below the lattice step at these sigmas).

        Raises
        ------
        TypeError
            ``alpha`` is not a real number.
        ParameterError
            ``alpha`` outside ``(0, 1)``.
        """
        return gaussian_sigma_to_accuracy(self.noise_scale(d), alpha)

    def noise(self, size: int, *, rng: Any = None) -> np.ndarray:
        """``size`` independent draws of the noise one scalar release adds (for plots, tests).

        Spends nothing and involves no data: this is the mechanism's noise distribution.

        Parameters
        ----------
        size : int
            Number of draws, >= 0.
        rng : None, int, SeedSequence or BitSource, optional
            As for :meth:`release`.

        Returns
        -------
        numpy.ndarray
            ``size`` float64 values on the scalar lattice.

        Raises
        ------
        TypeError
            A bad ``rng``, a ``size`` that is not an int (a float, a bool).
        ParameterError
            A negative ``size``.
        """
        n = check_int("Gaussian.noise", "size", size, minimum=0)  # as sample() checks it
        g, t, c, _ = self._plan(1)
        return discrete_gaussian_tc(t, c, n, as_source(rng)).astype(np.float64) * g

    def release(self, value: Any, *, rng: Any = None, accountant: Any = None) -> Any:
        """Return ``value`` plus Gaussian noise, on a power-of-two lattice.

        Parameters
        ----------
        value : float, int, Fraction or array_like
            The true answer: a scalar, or an array (independent noise per coordinate, the
            sensitivity being the L2 sensitivity of the whole vector). Python
            ints, :class:`fractions.Fraction` values, or a sequence / object array of them
            (an exact statistic such as a rational mean) are rounded to the lattice in exact
            arithmetic, never through a float (:mod:`dpkit._lattice`).
        rng : None, int, SeedSequence or BitSource, optional
            ``None`` (default) draws from a secure source; an ``int`` seed gives
            reproducible, NOT private noise.
        accountant : Accountant, optional
            Charged :attr:`privacy` before any noise is drawn.

        Returns
        -------
        float or numpy.ndarray
            A float for a scalar ``value``, a float64 array of the same shape for an array.

        Raises
        ------
        TypeError
            ``value`` does not hold real numbers (a bool, a string, ...); ``rng`` is not
            ``None``, an ``int`` seed, a NumPy ``SeedSequence`` or a bit source (NumPy
            generators are refused: not cryptographically secure); ``accountant`` is not an
            accountant.
        ParameterError
            ``value`` holds NaN or infinity, or is too large for the lattice (the message
            names the fix: release an offset from a public centre).
        BudgetExceededError
            ``accountant`` cannot afford :attr:`privacy`; nothing was spent or drawn.
        """
        return self._draw(value, None, rng, accountant)

    def sample(self, value: Any, size: int, *, rng: Any = None) -> np.ndarray:
        """``size`` independent releases of ``value``: shape ``(size, *shape(value))``.

        The same code as :meth:`release` (each row is distributed as one release and carries
        its privacy; together they cost ``size`` times it). For audits and studies: it
        charges no accountant.

        Parameters
        ----------
        value
            As for :meth:`release`.
        size : int
            Number of independent releases, >= 1.
        rng : None, int, SeedSequence or BitSource, optional
            As for :meth:`release`.

        Returns
        -------
        numpy.ndarray
            Shape ``(size, *shape(value))``, float64: row ``i`` is one release.

        Raises
        ------
        TypeError
            ``size`` is not an int; otherwise as for :meth:`release`.
        ParameterError
            ``size < 1``; otherwise as for :meth:`release`.
        """
        return np.asarray(self._draw(value, check_size("Gaussian.sample", size), rng, None))

    def _draw(self, value: Any, size: int | None, rng: Any, accountant: Any) -> Any:
        vals = as_values("Gaussian", value)
        d = max(vals.size, 1)
        g, t, c, _ = self._plan(d)
        lattice = grid_round("Gaussian", vals, g)
        source = as_source(rng)
        spend(accountant, self.privacy, "Gaussian", self.relation)
        reps = 1 if size is None else size
        noise = discrete_gaussian_tc(t, c, reps * lattice.size, source)
        noise = noise.reshape((reps, *lattice.shape))
        noise += lattice  # in place: the sampler's fresh array, no third temporary
        if size is None:
            return restore_shape(noise[0], g, vals.scalar)
        return restore_shape(noise, g, False)

    def measure(
        self, value: Any, *, alpha: float = 0.05, rng: Any = None, accountant: Any = None
    ) -> Release:
        """Like :meth:`release`, returning a :class:`Release` with scale and interval.

        Parameters
        ----------
        value, rng, accountant
            As for :meth:`release`.
        alpha : float
            The interval leaves out probability ``alpha``, ``0 < alpha < 1`` (default 0.05).

        Returns
        -------
        Release
            ``value`` (what :meth:`release` returns), ``privacy``, ``scale`` (the noise
            scale actually used), ``interval`` (a ``1 - alpha`` interval for the true value,
            scalars only), ``alpha`` and ``details`` (the lattice ``grid``, ``calibration``,
            ``half_width``).

        Raises
        ------
        TypeError, ParameterError, BudgetExceededError
            As for :meth:`release`; also ``alpha`` outside ``(0, 1)``.
        """
        return measured(
            self,
            value,
            alpha,
            rng,
            accountant,
            lambda d: {"grid": self._plan(d)[0], "calibration": self.calibration},
        )


@dataclass(frozen=True, slots=True)
class DiscreteGaussian:
    """The discrete Gaussian mechanism on integers: ``value + N_Z(0, sigma^2)``.

    Parameters
    ----------
    epsilon : float > 0
    delta : float in (0, 1)
    sensitivity : int >= 1
        L2 sensitivity of an integer-valued query.
    relation : {"unbounded", "bounded"}
        The neighbour relation ``sensitivity`` was computed for: ``"unbounded"`` (default; add
        or remove one record) or ``"bounded"`` (replace one record). The guarantee holds under
        it; it is reported in :class:`Release` and passed to the accountant when spending.

    Privacy
    -------
    ``(epsilon, delta)``-DP with sigma the smallest value (on a grid of relative step
    2**-10 above the analytic continuous calibration) whose exact discrete delta (Canonne,
    Kamath and Steinke 2020, Theorem 7) is at most ``delta`` for a scalar with
    ``sigma <= 2**12``; for larger sigma and for ``d > 1`` integer coordinates sigma also
    satisfies the zCDP route of :class:`Gaussian` (CKS Theorem 14 and Corollary 13). Any
    sigma from about ``1e-3`` (epsilon up to ``1e6``) to ``2**28`` is supported; a larger one
    is refused at construction, before anything is spent. The guarantee holds under
    ``relation``.

    Raises
    ------
    TypeError
        ``epsilon`` or ``delta`` is not a real number, or ``sensitivity`` is not an int.
    ParameterError
        ``epsilon`` not a finite number > 0; ``delta`` outside ``(0, 1)``;
        ``sensitivity < 1``; ``relation`` not ``"unbounded"`` or ``"bounded"``; a noise
        sigma outside the exact sampler's range.

    Examples
    --------
    >>> DiscreteGaussian(epsilon=1.0, delta=1e-5).release(10, rng=3)
    8
    """

    epsilon: float
    delta: float
    sensitivity: int = 1
    relation: str = "unbounded"

    def __post_init__(self) -> None:
        check_relation("DiscreteGaussian", self.relation)
        object.__setattr__(
            self, "epsilon", check_positive("DiscreteGaussian", "epsilon", self.epsilon)
        )
        object.__setattr__(
            self, "delta", check_delta("DiscreteGaussian", self.delta, allow_zero=False)
        )
        s = check_int("DiscreteGaussian", "sensitivity", self.sensitivity, minimum=1, maximum=2**62)
        object.__setattr__(self, "sensitivity", s)
        self._s2(1)  # fail fast: the noise is within the exact sampler's range

    @property
    def privacy(self) -> ApproxDP:
        return ApproxDP(self.epsilon, self.delta)

    def _s2(self, d: int) -> Fraction:
        return _integer_plan(self.epsilon, self.delta, self.sensitivity, d)

    @property
    def sigma(self) -> float:
        return math.sqrt(self._s2(1))

    @property
    def scale(self) -> float:
        return self.sigma

    def accuracy(self, alpha: float = 0.05, d: int = 1) -> float:
        """Half-width of the ``(1 - alpha)`` interval of one coordinate's noise.

        Parameters
        ----------
        alpha : float
            The interval leaves out probability ``alpha``, ``0 < alpha < 1`` (default 0.05).
        d : int
            Number of coordinates released together (default 1: a scalar).

        Returns
        -------
        float
            ``sigma * z(1 - alpha / 2)`` for the sigma used with ``d`` coordinates (normal
            approximation).

        Raises
        ------
        TypeError
            ``alpha`` is not a real number.
        ParameterError
            ``alpha`` outside ``(0, 1)``.
        """
        return gaussian_sigma_to_accuracy(math.sqrt(self._s2(d)), alpha)

    def release(self, value: Any, *, rng: Any = None, accountant: Any = None) -> Any:
        """Return the integer ``value`` plus discrete Gaussian noise.

        Parameters
        ----------
        value : int or array_like of int
            The true integer answer (integer-valued floats are accepted), or an array of them
            (independent noise per coordinate; ``sensitivity`` is the L2 sensitivity of the
            whole vector).
        rng : None, int, SeedSequence or BitSource, optional
            ``None`` (default) draws from a secure source; an ``int`` seed gives
            reproducible, NOT private noise.
        accountant : Accountant, optional
            Charged :attr:`privacy` before any noise is drawn.

        Returns
        -------
        int or numpy.ndarray
            An ``int`` for a scalar, an int64 array of the same shape for an array.

        Raises
        ------
        TypeError
            ``value`` is not integer-valued (floats with a fraction, bools, strings: use
            :class:`Gaussian` for real values); a bad ``rng``; ``accountant`` is not an
            accountant.
        ParameterError
            ``|value| >= 2**62`` (would overflow int64 with the noise).
        BudgetExceededError
            ``accountant`` cannot afford :attr:`privacy`; nothing was spent or drawn.
        """
        out = self._draw(value, 1, rng, accountant)[0]
        return int(out) if out.ndim == 0 else out

    def sample(self, value: Any, size: int, *, rng: Any = None) -> np.ndarray:
        """``size`` independent releases of ``value`` (int64, shape ``(size, *shape)``).

        The code of :meth:`release`; for audits and studies, charging no accountant.

        Parameters
        ----------
        value
            As for :meth:`release`.
        size : int
            Number of independent releases, >= 1.
        rng : None, int, SeedSequence or BitSource, optional
            As for :meth:`release`.

        Returns
        -------
        numpy.ndarray
            Shape ``(size, *shape(value))``, int64: row ``i`` is one release.

        Raises
        ------
        TypeError
            ``size`` is not an int; otherwise as for :meth:`release`.
        ParameterError
            ``size < 1``; otherwise as for :meth:`release`.
        """
        return self._draw(value, check_size("DiscreteGaussian.sample", size), rng, None)

    def _draw(self, value: Any, size: int, rng: Any, accountant: Any) -> np.ndarray:
        arr = as_integers("DiscreteGaussian", value, other="Gaussian")
        s2 = self._s2(max(arr.size, 1))  # checked within the sampler's range, before spending
        source = as_source(rng)
        spend(accountant, self.privacy, "DiscreteGaussian", self.relation)
        m = size * arr.size
        if s2 <= 2**24:
            noise = discrete_gaussian(0, m, source, sigma2=s2)
        else:  # large sigma: round the variance up to t * c (relative excess < 1/sigma)
            t, c = _tc(s2)
            noise = discrete_gaussian_tc(t, c, m, source)
        return arr + noise.reshape((size, *arr.shape))


def _tc(s2: Fraction) -> tuple[int, int]:
    """Integers ``t = floor(sigma) + 1`` and ``c = ceil(s2 / t)``: ``t c >= s2``, relative
    excess below ``1 / sigma``."""
    t = math.isqrt(s2.numerator // s2.denominator) + 1
    return t, math.ceil(s2 / t)


def _dyadic_up(x: float | Fraction, bits: int = 20) -> Fraction:
    """The smallest ``m / 2**k >= x`` with ``m`` of ``bits`` significant bits (exact).

    Keeps the variance a short dyadic rational at every scale: a tiny sigma (epsilon 1e6)
    keeps its 20 significant bits instead of collapsing to a fixed ``2**-20`` grid.
    """
    q = Fraction(x)
    k = bits - (q.numerator.bit_length() - q.denominator.bit_length())
    scale = Fraction(2) ** k
    return Fraction(math.ceil(q * scale)) / scale


@lru_cache(maxsize=256)
def _integer_plan(epsilon: float, delta: float, sens: int, d: int) -> Fraction:
    """Variance: the analytic sigma (and the zCDP bound for d > 1), raised in steps of
    2**-10 until the exact 1-D discrete delta (CKS Theorem 7) is at most delta.

    Raises a ParameterError (before any spend) when sigma exceeds the ``2**28`` the exact
    samplers support."""
    sigma = analytic_gaussian_sigma(epsilon, delta, float(sens), owner="DiscreteGaussian")
    if d > 1 or sigma * sigma > 2**24:  # no exact O(sigma) delta check: the zCDP route
        sigma = max(sigma, _zcdp_sigma(sens, epsilon, delta))
    where = "" if d == 1 else f" for {d} coordinates"
    params = f"`epsilon`={epsilon!r}, `delta`={delta!r} and `sensitivity`={sens!r}{where}"
    if not sigma * sigma < _MAX_TC / 2:
        raise _too_noisy("DiscreteGaussian", params, sigma * sigma)
    s2 = _dyadic_up(sigma * sigma)
    if d == 1 and s2 <= 2**24:
        while discrete_gaussian_delta(float(s2), sens, epsilon) > delta:
            s2 = _dyadic_up(s2 * Fraction(1025, 1024))
    t, c = _tc(s2)
    if s2 > 2**24 and t * c > _MAX_TC:  # pragma: no cover - excluded by the check above
        raise _too_noisy("DiscreteGaussian", params, float(t * c))
    return s2
