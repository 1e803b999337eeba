"""The Gaussian mechanism (classic and analytic calibration) and the discrete Gaussian."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dpkit._validate import (
    check_alpha,
    check_choice,
    check_delta,
    check_int,
    check_positive,
    check_relation,
    check_size,
)
from dpkit.accounting import events as ev
from dpkit.accounting.guard import spend
from dpkit.accounting.loss import ApproxDP
from dpkit.errors import ParameterError
from dpkit.mechanisms._additive import as_integers, as_values, measured, sqrt_down
from dpkit.noise import DiscreteGaussianLaw, LatticeValues, below_step_note
from dpkit.noise.gaussian_calibration import (
    LatticePlan,
    analytic_gaussian_sigma,
    calibrate,
    classic_gaussian_sigma,
    discrete_gaussian_delta,
    integer_plan,
    lattice_plan,
)
from dpkit.noise.laws import normal_quantile
from dpkit.release import Release
from dpkit.samplers import as_source

__all__ = [
    "DiscreteGaussian",
    "Gaussian",
    "accuracy_to_gaussian_sigma",
    "analytic_gaussian_sigma",
    "classic_gaussian_sigma",
    "discrete_gaussian_accuracy",
    "discrete_gaussian_delta",
    "gaussian_sigma_to_accuracy",
]

_NORMS = ("l1", "l2")
_CALIBRATIONS = ("classic", "analytic")


def gaussian_sigma_to_accuracy(sigma: float, alpha: float) -> float:
    """Half-width ``a`` with ``P[|N(0, sigma^2)| > a] = alpha``."""
    sigma = check_positive("gaussian_sigma_to_accuracy", "sigma", sigma)
    alpha = check_positive("gaussian_sigma_to_accuracy", "alpha", alpha)
    if not alpha < 1:
        raise ParameterError(
            f"gaussian_sigma_to_accuracy: `alpha` must be in (0, 1); got {alpha!r}"
        )
    return sigma * normal_quantile(alpha / 2)


def accuracy_to_gaussian_sigma(accuracy: float, alpha: float) -> float:
    """The sigma whose ``(1 - alpha)`` interval has half-width ``accuracy``."""
    accuracy = check_positive("accuracy_to_gaussian_sigma", "accuracy", accuracy)
    alpha = check_positive("accuracy_to_gaussian_sigma", "alpha", alpha)
    if not alpha < 1:
        raise ParameterError(
            f"accuracy_to_gaussian_sigma: `alpha` must be in (0, 1); got {alpha!r}"
        )
    return accuracy / normal_quantile(alpha / 2)


def discrete_gaussian_accuracy(variance: float | Fraction, alpha: float) -> int:
    """Smallest integer ``k`` with ``P[|Z| > k] <= alpha`` for ``Z ~ N_Z(0, variance)``.

    Summed exactly over ``|z| <= 40 sigma + 2`` (the mass beyond is below ``1e-300``) for
    ``sigma <= 2**12``; above, ``ceil(sigma z(1 - alpha / 2))``, which the discrete tail
    meets (it is the normal tail beyond ``k + 1/2`` up to a relative ``exp(-2 pi**2
    sigma**2)``). The normal approximation alone undercovers at small sigma: at sigma 1.45
    it gives 2.84, where ``P[|Z| >= 3]`` is 0.078, not 0.05.

    ``alpha`` is checked by the caller (in ``(0, 1)``). The law's quantile:
    :meth:`dpkit.noise.DiscreteGaussianLaw.half_width`.

    Examples
    --------
    >>> discrete_gaussian_accuracy(1.45**2, 0.05), discrete_gaussian_accuracy(0.01, 0.05)
    (3, 0)
    """
    return DiscreteGaussianLaw(Fraction(variance)).half_width(alpha)


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
    ``(epsilon, delta)``-DP under ``relation`` (neighbours whose answers are at most
    ``sensitivity`` apart in L2). The value is rounded to the lattice ``grid * Z^d`` (grid a
    power of two fixed by the sensitivity and the dimension, never by the data) and exact
    discrete Gaussian noise ``N_Z(0, V)`` is added to each coordinate (the guarantee rests on
    the distribution being exactly the discrete Gaussian of Canonne, Kamath and Steinke 2020,
    whichever exact sampler draws it). Rounding moves neighbours at most ``floor(s/grid) +
    1`` lattice steps apart for a scalar and ``s/grid + sqrt(d)`` in L2 for ``d``
    coordinates; ``V`` is calibrated for that charged sensitivity
    (:mod:`dpkit.noise.gaussian_calibration` holds the proofs):

    * a scalar: the smallest ``V`` found on a grid of relative step ``2**-10`` whose exact
      delta at ``epsilon`` (CKS Theorem 7, summed by :func:`discrete_gaussian_delta`) is at
      most ``delta`` (every ``V`` used has been checked);
    * ``d`` coordinates (and a scalar whose lattice sigma exceeds ``2**12``): ``V = s'**2 +
      tau**2`` with ``s'`` the continuous calibration at ``(epsilon - d ln(A B), delta /
      A**d)``. The discrete Gaussian of variance ``V`` is, within a factor ``A = 1 + 2 eta``
      (and ``1 / B``) pointwise, the continuous ``N(0, s'**2)`` post-processed by rounding
      to a discrete Gaussian of width ``tau`` centred at the draw (Poisson summation,
      ``eta <= 2 exp(-2 pi**2 tau**2)``), so the continuous guarantee carries over with
      those factors. At this lattice's sigmas (thousands of steps) ``V`` is the continuous
      calibration to a relative ``1e-6``: a vector of ``10**7`` values draws within 0.1% of
      the analytic sigma (the rounding charge, ``2**-10``). The zCDP route (CKS Theorem 14
      and Corollary 13) is used instead where it gives less noise.

    :attr:`sigma` is the standard deviation parameter a scalar release draws with, and
    :meth:`noise_scale`, :meth:`accuracy` and :meth:`measure` report the one drawn for
    ``d`` coordinates: both at least the continuous calibration for ``sensitivity``
    (:func:`analytic_gaussian_sigma` or :func:`classic_gaussian_sigma`), by the rounding
    charge.

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
    >>> round(gau.sigma, 4)  # analytic 3.7306 for sensitivity 1, charged 1 + 2**-10
    3.7343
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
        # fail fast: the continuous sigma and the scalar lattice plan are representable
        # (the plan for d coordinates is made, and checked, by release before any spend)
        calibrate(self.epsilon, self.delta, self.sensitivity, self.calibration)
        self._plan(1)

    @property
    def privacy(self) -> ApproxDP:
        return ApproxDP(self.epsilon, self.delta)

    @property
    def sigma(self) -> float:
        """The standard deviation parameter a scalar release draws with (``noise_scale(1)``)."""
        return self._plan(1).sigma

    @property
    def scale(self) -> float:
        return self.sigma

    def _plan(self, d: int) -> LatticePlan:
        d = check_int("Gaussian", "d", d, minimum=1)  # the number of coordinates
        return lattice_plan(self.epsilon, self.delta, self.sensitivity, d, self.calibration)

    @property
    def event(self) -> ev.Event:
        """What a scalar release is, for accounting (:mod:`dpkit.accounting.events`).

        The discrete Gaussian the lattice draws: ``sigma = sqrt(V)`` in lattice steps
        (rounded down) on the lattice sensitivity ``floor(sensitivity / grid) + 1`` steps,
        rounding charged. A release of several coordinates is described by its guarantee,
        ``Approx(epsilon, delta)`` (:meth:`_event`).

        Examples
        --------
        >>> e = Gaussian(epsilon=1.0, delta=1e-6).event
        >>> e.discrete, e.sensitivity
        (True, 1025.0)
        """
        return self._event(1)

    def _event(self, d: int) -> ev.Event:
        """The release of ``d`` coordinates as an event: the scalar discrete Gaussian; for
        vectors the stated guarantee (the product of discrete Gaussians on a lattice of
        non-integer L2 sensitivity has no one-coordinate descriptor)."""
        plan = self._plan(d)
        if d > 1:
            return ev.Approx(epsilon=self.epsilon, delta=self.delta)
        steps = int(plan.steps)  # a scalar's: floor(sensitivity / grid) + 1
        return ev.Gaussian(sigma=sqrt_down(plan.variance), sensitivity=steps, discrete=True)

    def grid(self, d: int = 1) -> float:
        """The lattice spacing used for ``d`` coordinates (a power of two).

        Parameters
        ----------
        d : int
            Number of coordinates released together (default 1: a scalar).

        Returns
        -------
        float
            ``2**floor(log2(sensitivity / (sqrt(d) 2**10)))``, coarser only when the noise
            exceeds ``2**26`` steps: fixed by public parameters, never by the data.

        Raises
        ------
        TypeError
            ``d`` is not an int.
        ParameterError
            ``d < 1``, or the lattice plan cannot be made for these parameters (the message
            says which).
        """
        return self._plan(d).grid

    def noise_scale(self, d: int = 1) -> float:
        """The standard deviation parameter actually used for ``d`` coordinates.

        Parameters
        ----------
        d : int
            Number of coordinates released together (default 1: a scalar).

        Returns
        -------
        float
            ``sqrt(V) * grid``, the lattice Gaussian's sigma: at least the continuous
            calibration, raised by the charged rounding (about ``2**-10``); for ``d > 1``
            within about 0.1% of :attr:`sigma` (see the class notes).

        Raises
        ------
        TypeError
            ``d`` is not an int.
        ParameterError
            ``d < 1``, or the lattice plan cannot be made for these parameters (the message
            says which).
        """
        return self._plan(d).sigma

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
            ``k * grid(d)`` with ``k`` the smallest integer such that the lattice noise
            ``N_Z(0, V)`` exceeds ``k`` steps in magnitude with probability at most
            ``alpha`` (:func:`discrete_gaussian_accuracy`; at the usual thousands of steps,
            the normal ``noise_scale(d) * z(1 - alpha / 2)`` rounded up to the lattice).

        Raises
        ------
        TypeError
            ``alpha`` is not a real number, ``d`` not an int.
        ParameterError
            ``alpha`` outside ``(0, 1)``, ``d < 1``.
        """
        alpha = check_alpha("Gaussian.accuracy", alpha)
        plan = self._plan(d)
        return discrete_gaussian_accuracy(plan.variance, alpha) * plan.grid

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
        plan = self._plan(1)
        noise = DiscreteGaussianLaw(Fraction(plan.variance)).draw(n, as_source(rng))
        return noise * plan.grid

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
        g, v = self._plan(d)[:2]
        on_lattice = LatticeValues.of("Gaussian", vals, g)  # refused here, before the spend
        source = as_source(rng)
        spend(accountant, self.privacy, "Gaussian", self.relation, [self._event(d)])
        return on_lattice.plus_noise(DiscreteGaussianLaw(Fraction(v)), size, source)

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
            scalars only), ``alpha`` and ``details``: the lattice ``grid``,
            ``calibration``, ``analysis`` (the route that calibrated the variance:
            ``"exact"``, ``"smoothing"`` or ``"zcdp"``, see the class notes) and
            ``half_width``.

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
            lambda d: {
                "grid": self._plan(d).grid,
                "calibration": self.calibration,
                "analysis": self._plan(d).analysis,
                **below_step_note("gaussian", self._plan(d).variance),
            },
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
    ``(epsilon, delta)``-DP under ``relation`` (neighbours whose integer answers are at most
    ``sensitivity`` apart in L2). For a scalar with ``sigma <= 2**12``, and for vectors at
    ``sensitivity=1`` (an integer vector of L2 norm 1 is ``+-e_i``, so the vector's privacy
    curve is the scalar one), the variance is the smallest on a grid of relative step
    ``2**-10`` whose exact delta (Canonne, Kamath and Steinke 2020, Theorem 7) is at most
    ``delta``; it may lie below the continuous calibration. Otherwise (``d > 1``
    coordinates at a larger sensitivity, or a larger sigma) it is the smaller of the
    smoothing route (the continuous calibration plus a few steps squared, see
    :class:`Gaussian`) and the zCDP route (CKS Theorem 14 and Corollary 13); the proofs are
    in :mod:`dpkit.noise.gaussian_calibration`. :attr:`sigma` is what a scalar
    release draws with, :meth:`accuracy` reports the one drawn for ``d`` coordinates. Any
    sigma from about ``1e-3`` (epsilon up to ``1e6``) to ``2**27`` is supported; a larger
    one is refused at construction, before anything is spent.

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
        """The variance ``N_Z(0, V)`` a release of ``d`` coordinates draws with."""
        d = check_int("DiscreteGaussian", "d", d, minimum=1)  # the number of coordinates
        return integer_plan(self.epsilon, self.delta, self.sensitivity, d)[0]

    @property
    def sigma(self) -> float:
        return math.sqrt(self._s2(1))

    @property
    def event(self) -> ev.Event:
        """What a scalar release is, for accounting: the discrete Gaussian with ``sigma =
        sqrt(V)`` (rounded down) on an integer query of sensitivity ``sensitivity``.

        Examples
        --------
        >>> DiscreteGaussian(epsilon=1.0, delta=1e-6).event.discrete
        True
        """
        return self._event(1)

    def _event(self, d: int) -> ev.Event:
        """A release of ``d`` coordinates: the scalar discrete Gaussian; for vectors the stated
        guarantee (a product of discrete Gaussians has no one-coordinate descriptor)."""
        if d > 1:
            return ev.Approx(epsilon=self.epsilon, delta=self.delta)
        return ev.Gaussian(
            sigma=sqrt_down(self._s2(1)), sensitivity=self.sensitivity, discrete=True
        )

    @property
    def scale(self) -> float:
        return self.sigma

    def accuracy(self, alpha: float = 0.05, d: int = 1) -> int:
        """Half-width of the ``(1 - alpha)`` interval of one coordinate's noise.

        Parameters
        ----------
        alpha : float
            The interval leaves out probability ``alpha``, ``0 < alpha < 1`` (default 0.05).
        d : int
            Number of coordinates released together (default 1: a scalar).

        Returns
        -------
        int
            The smallest integer ``k`` with ``P[|noise| > k] <= alpha`` for the variance
            used with ``d`` coordinates (:func:`discrete_gaussian_accuracy`, exact).

        Raises
        ------
        TypeError
            ``alpha`` is not a real number, ``d`` not an int.
        ParameterError
            ``alpha`` outside ``(0, 1)``, ``d < 1``.
        """
        alpha = check_alpha("DiscreteGaussian.accuracy", alpha)
        return discrete_gaussian_accuracy(self._s2(d), alpha)

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
            ``value`` (what :meth:`release` returns), ``privacy``, ``scale`` (the sigma
            drawn for the value's size), ``interval`` (``value -+ accuracy(alpha, d)``,
            scalars only), ``alpha``; ``details``: ``variance``, ``analysis`` (the route
            that calibrated it, see the class notes), ``half_width``, and a ``note`` when
            the noise is below the lattice step (zero more often than not).

        Raises
        ------
        TypeError, ParameterError, BudgetExceededError
            As for :meth:`release` and :meth:`accuracy`.
        """
        self.accuracy(alpha)  # validates `alpha` before anything is spent
        out = self.release(value, rng=rng, accountant=accountant)
        d = max(int(np.size(out)), 1)
        s2, analysis = integer_plan(self.epsilon, self.delta, self.sensitivity, d)
        k = self.accuracy(alpha, d)
        return Release(
            value=out,
            mechanism="DiscreteGaussian",
            privacy=self.privacy,
            scale=math.sqrt(s2),
            interval=(out - k, out + k) if np.ndim(out) == 0 else None,
            alpha=alpha,
            details={
                "variance": float(s2),
                "analysis": analysis,
                "half_width": k,
                **below_step_note("gaussian", s2),
            },
            relation=self.relation,
        )

    def _draw(self, value: Any, size: int, rng: Any, accountant: Any) -> np.ndarray:
        arr = as_integers("DiscreteGaussian", value, other="Gaussian")
        s2 = self._s2(max(arr.size, 1))  # checked within the sampler's range, before spending
        source = as_source(rng)
        spend(accountant, self.privacy, "DiscreteGaussian", self.relation, [self._event(arr.size)])
        noise = DiscreteGaussianLaw(s2).draw(size * arr.size, source).reshape((size, *arr.shape))
        noise += arr  # in place: the sampler's fresh array
        return noise
