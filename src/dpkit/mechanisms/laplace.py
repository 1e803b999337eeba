"""The Laplace mechanism on a power-of-two grid, and its integer form (geometric mechanism)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dpkit._validate import check_alpha, check_int, check_positive, check_relation, check_size
from dpkit.accounting import events as ev
from dpkit.accounting.guard import spend
from dpkit.accounting.loss import PureDP
from dpkit.mechanisms._additive import as_integers, as_values, float_down, measured
from dpkit.noise import (
    DiscreteLaplaceLaw,
    LatticeValues,
    below_step_note,
    laplace_grid,
    laplace_lattice,
    laplace_law,
    laplace_steps,
)
from dpkit.release import Release
from dpkit.samplers import as_source

__all__ = [
    "Geometric",
    "Laplace",
    "accuracy_to_laplace_scale",
    "laplace_scale_to_accuracy",
]


def laplace_scale_to_accuracy(scale: float, alpha: float) -> float:
    """Half-width ``a`` with ``P[|Lap(scale)| > a] = alpha``: ``a = scale * ln(1/alpha)``.

    Examples
    --------
    >>> round(laplace_scale_to_accuracy(1.0, 0.05), 4)
    2.9957
    """
    scale = check_positive("laplace_scale_to_accuracy", "scale", scale)
    alpha = check_alpha("laplace_scale_to_accuracy", alpha)
    return scale * math.log(1 / alpha)


def accuracy_to_laplace_scale(accuracy: float, alpha: float) -> float:
    """The Laplace scale whose ``(1 - alpha)`` interval has half-width ``accuracy``."""
    accuracy = check_positive("accuracy_to_laplace_scale", "accuracy", accuracy)
    alpha = check_alpha("accuracy_to_laplace_scale", alpha)
    return accuracy / math.log(1 / alpha)


@dataclass(frozen=True, slots=True)
class Laplace:
    """The Laplace mechanism: ``value + Lap(sensitivity / epsilon)`` per coordinate.

    Parameters
    ----------
    epsilon : float > 0
        Privacy parameter.
    sensitivity : float > 0
        L1 sensitivity of the query: the largest ``sum_i |f(x)_i - f(x')_i|`` over neighbours.
    relation : {"unbounded", "bounded"}
        The neighbour relation ``sensitivity`` was computed for: ``"unbounded"`` (default; add
        or remove one record) or ``"bounded"`` (replace one record). The guarantee holds under
        it; it is reported in :class:`Release` and passed to the accountant when spending.

    Attributes
    ----------
    scale : float
        Nominal Laplace scale ``b = sensitivity / epsilon``.
    privacy : PureDP
        ``PureDP(epsilon)``.

    Privacy
    -------
    Pure ``epsilon``-DP under ``relation`` (Dwork, McSherry, Nissim and Smith 2006; Dwork and
    Roth 2014, Theorem 3.6), in its discrete form: the value is rounded to the lattice ``grid * Z``
    (``grid`` a power of two fixed by ``sensitivity`` and the number of coordinates ``d``,
    never by the data), and exact discrete Laplace noise ``P[z] ~ exp(-|z| / t)`` is added on
    the lattice with ``t = (floor(sensitivity / grid) + d) / epsilon``. Rounding moves
    neighbouring inputs at most ``floor(sensitivity / grid) + d`` lattice steps apart in L1,
    so the discrete Laplace mechanism with that integer sensitivity is ``epsilon``-DP
    (Ghosh, Roughgarden and Sundararajan 2009; Canonne, Kamath and Steinke 2020). The output
    ``grid * (n + z)`` is a function of the noisy lattice point only, so no floating-point
    artefact of the input survives (Mironov 2012). The rounding costs a relative
    ``d * grid / sensitivity <= 2**-16`` (scalar) or ``2**-11`` (vector) of extra noise,
    reported by :meth:`noise_scale`.

    Raises
    ------
    TypeError
        ``epsilon`` or ``sensitivity`` is not a real number (a bool, a string, ...).
    ParameterError
        ``epsilon`` or ``sensitivity`` not a finite number > 0; ``relation`` not
        ``"unbounded"`` or ``"bounded"``.

    Examples
    --------
    >>> lap = Laplace(epsilon=1.0, sensitivity=1.0)
    >>> lap.scale, lap.privacy
    (1.0, PureDP(epsilon=1.0))
    >>> lap.release(100.0, rng=42)
    101.92047119140625
    >>> lap.release(np.zeros(3), rng=42)
    array([ 1.99725342,  1.12121582, -3.63171387])

    References
    ----------
    C. Dwork, A. Roth. The Algorithmic Foundations of Differential Privacy (2014).
    I. Mironov. On significance of the least significant bits for differential privacy. CCS 2012.
    C. Canonne, G. Kamath, T. Steinke. The Discrete Gaussian for Differential Privacy. 2020.
    """

    epsilon: float
    sensitivity: float = 1.0
    relation: str = "unbounded"

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_positive("Laplace", "epsilon", self.epsilon))
        check_relation("Laplace", self.relation)
        object.__setattr__(
            self, "sensitivity", check_positive("Laplace", "sensitivity", self.sensitivity)
        )
        self._lattice_scale(1)  # fail fast: the lattice and the noise scale are representable

    @property
    def scale(self) -> float:
        return self.sensitivity / self.epsilon

    @property
    def privacy(self) -> PureDP:
        return PureDP(self.epsilon)

    def grid(self, d: int = 1) -> float:
        """The lattice spacing used for ``d`` coordinates (a power of two).

        Parameters
        ----------
        d : int
            Number of coordinates released together (default 1: a scalar).

        Returns
        -------
        float
            ``2**floor(log2(sensitivity / (d 2**16)))`` for a scalar, ``2**-12`` relative for
            a vector: fixed by public parameters, never by the data.

        Raises
        ------
        TypeError
            ``d`` is not an int.
        ParameterError
            ``d < 1``, or the spacing would underflow (a sensitivity too small to represent).
        """
        d = check_int("Laplace", "d", d, minimum=1)  # the number of coordinates
        return laplace_grid("Laplace", self.sensitivity, d)

    def _lattice_scale(self, d: int) -> tuple[float, Fraction]:
        """The lattice and discrete Laplace scale for ``d`` coordinates
        (:func:`dpkit.noise.laplace_lattice`)."""
        d = check_int("Laplace", "d", d, minimum=1)  # the number of coordinates
        return laplace_lattice("Laplace", self.epsilon, self.sensitivity, d)

    def noise_scale(self, d: int = 1) -> float:
        """The Laplace scale actually used for ``d`` coordinates (>= :attr:`scale`).

        Parameters
        ----------
        d : int
            Number of coordinates released together (default 1: a scalar).

        Returns
        -------
        float
            ``t * grid(d)`` with ``t = (floor(sensitivity / grid) + d) / epsilon``: the nominal
            scale plus the charged rounding (a relative ``2**-16`` for a scalar).

        Raises
        ------
        TypeError
            ``d`` is not an int.
        ParameterError
            ``d < 1``; ``epsilon`` too small for ``d`` coordinates (the lattice scale exceeds
            ``2**50``).
        """
        g, t = self._lattice_scale(d)
        return float(t) * g

    @property
    def event(self) -> ev.Laplace:
        """What a scalar release is, for accounting (:mod:`dpkit.accounting.events`).

        The discrete Laplace the lattice draws: scale ``t`` in lattice steps (rounded down,
        so never less private than drawn) on the lattice sensitivity ``floor(sensitivity /
        grid) + 1`` steps, rounding charged; its epsilon is :attr:`epsilon`.

        Examples
        --------
        >>> Laplace(epsilon=0.5).event.epsilon
        0.5
        """
        return self._event(1)

    def _event(self, d: int) -> ev.Laplace:
        """The release of ``d`` coordinates as a discrete Laplace event (L1 lattice steps)."""
        g, t = self._lattice_scale(d)
        steps = laplace_steps(self.sensitivity, g, d)
        return ev.Laplace(scale=float_down(t), sensitivity=steps, discrete=True)

    def accuracy(self, alpha: float = 0.05, d: int = 1) -> float:
        """Half-width ``a`` with ``P[|noise| > a] <= alpha`` for one coordinate.

        Parameters
        ----------
        alpha : float
            The interval leaves out probability ``alpha``, ``0 < alpha < 1`` (default 0.05).
        d : int
            Number of coordinates released together (default 1: a scalar).

        Returns
        -------
        float
            The smallest lattice multiple ``a`` with ``P[|noise| > a] <= alpha`` (exact for
            the discrete Laplace law on the lattice).

        Raises
        ------
        TypeError
            ``alpha`` is not a real number, ``d`` not an int.
        ParameterError
            ``alpha`` outside ``(0, 1)``, ``d < 1``; ``epsilon`` too small for ``d``
            coordinates.
        """
        alpha = check_alpha("Laplace.accuracy", alpha)
        g, t = self._lattice_scale(d)
        return DiscreteLaplaceLaw(t).half_width(alpha) * g

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
            ``size`` float64 values on the lattice ``grid(1) * Z``.

        Raises
        ------
        TypeError
            A bad ``rng``, a ``size`` that is not an int (a float, a bool).
        ParameterError
            A negative ``size``.
        """
        n = check_int("Laplace.noise", "size", size, minimum=0)  # as sample() checks it
        g, t = self._lattice_scale(1)
        return DiscreteLaplaceLaw(t).draw(n, as_source(rng)).astype(np.float64) * g

    def release(self, value: Any, *, rng: Any = None, accountant: Any = None) -> Any:
        """Return ``value`` plus Laplace noise, on the lattice ``grid(d) * Z``.

        Parameters
        ----------
        value : float, int, Fraction or array_like
            The true answer: a scalar, or an array (independent noise per coordinate, the
            sensitivity being the L1 sensitivity of the whole vector). Python
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
        return np.asarray(self._draw(value, check_size("Laplace.sample", size), rng, None))

    def _draw(self, value: Any, size: int | None, rng: Any, accountant: Any) -> Any:
        vals = as_values("Laplace", value)
        d = max(vals.size, 1)
        g, t = self._lattice_scale(d)
        on_lattice = LatticeValues.of("Laplace", vals, g)  # refused here, before the spend
        source = as_source(rng)
        spend(accountant, self.privacy, "Laplace", self.relation, [self._event(d)])
        return on_lattice.plus_noise(DiscreteLaplaceLaw(t), size, source)

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
            scalars only), ``alpha`` and ``details`` (the lattice ``grid``, ``half_width``,
            and a ``note`` when the noise is below the lattice step: zero more often than
            not, at an epsilon so large the release is mostly exact).

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
                "grid": self.grid(d),
                **below_step_note("laplace", self._lattice_scale(d)[1]),
            },
        )


@dataclass(frozen=True, slots=True)
class Geometric:
    """The geometric mechanism: integer ``value + Z`` with ``P[Z = z] ~ exp(-epsilon |z| / s)``.

    Parameters
    ----------
    epsilon : float > 0
    sensitivity : int >= 1
        L1 sensitivity of an integer-valued query (a count has sensitivity 1).
    relation : {"unbounded", "bounded"}
        The neighbour relation ``sensitivity`` was computed for: ``"unbounded"`` (default; add
        or remove one record) or ``"bounded"`` (replace one record). The guarantee holds under
        it; it is reported in :class:`Release` and passed to the accountant when spending.

    Privacy
    -------
    Pure ``epsilon``-DP: the two-sided geometric (discrete Laplace) distribution with scale
    ``sensitivity / epsilon`` has likelihood ratio at most ``exp(epsilon)`` between integer
    shifts of at most ``sensitivity`` (Ghosh, Roughgarden and Sundararajan 2009). Integer
    inputs need no rounding; non-integer input is refused. The guarantee
    holds under ``relation``.

    Raises
    ------
    TypeError
        ``epsilon`` is not a real number, or ``sensitivity`` is not an int.
    ParameterError
        ``epsilon`` not a finite number > 0 (or so small the scale exceeds ``2**50``);
        ``sensitivity < 1``; ``relation`` not ``"unbounded"`` or ``"bounded"``.

    Examples
    --------
    >>> Geometric(epsilon=0.5).release(10, rng=1)
    9
    """

    epsilon: float
    sensitivity: int = 1
    relation: str = "unbounded"

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_positive("Geometric", "epsilon", self.epsilon))
        check_relation("Geometric", self.relation)
        s = check_int("Geometric", "sensitivity", self.sensitivity, minimum=1, maximum=2**62)
        object.__setattr__(self, "sensitivity", s)
        params = f"`epsilon`={self.epsilon!r} and `sensitivity`={self.sensitivity!r}"
        laplace_law(self.sensitivity, self.epsilon, owner="Geometric", params=params)

    def _law(self) -> DiscreteLaplaceLaw:
        """Discrete Laplace of scale ``sensitivity / epsilon`` (no lattice: integers)."""
        return DiscreteLaplaceLaw(Fraction(self.sensitivity) / Fraction(self.epsilon))

    @property
    def event(self) -> ev.Laplace:
        """What a release is, for accounting: the discrete Laplace of scale ``sensitivity /
        epsilon`` (rounded down) on an integer query of L1 sensitivity ``sensitivity``.

        Examples
        --------
        >>> Geometric(epsilon=0.5, sensitivity=2).event
        Laplace(scale=4.0, sensitivity=2.0, discrete=True)
        """
        scale = float_down(Fraction(self.sensitivity) / Fraction(self.epsilon))
        return ev.Laplace(scale=scale, sensitivity=self.sensitivity, discrete=True)

    @property
    def scale(self) -> float:
        return self.sensitivity / self.epsilon

    @property
    def privacy(self) -> PureDP:
        return PureDP(self.epsilon)

    def accuracy(self, alpha: float = 0.05) -> int:
        """Smallest integer ``k`` with ``P[|Z| > k] <= alpha``.

        Parameters
        ----------
        alpha : float
            The interval leaves out probability ``alpha``, ``0 < alpha < 1`` (default 0.05).

        Returns
        -------
        int
            ``k``, exact for the discrete Laplace law.

        Raises
        ------
        TypeError
            ``alpha`` is not a real number.
        ParameterError
            ``alpha`` outside ``(0, 1)``.
        """
        return self._law().half_width(check_alpha("Geometric.accuracy", alpha))

    def release(self, value: Any, *, rng: Any = None, accountant: Any = None) -> Any:
        """Return the integer ``value`` plus discrete Laplace noise.

        Parameters
        ----------
        value : int or array_like of int
            The true integer answer (integer-valued floats are accepted), or an array of them
            (independent noise per coordinate).
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
            :class:`Laplace` for real values); a bad ``rng``; ``accountant`` is not an
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
        return self._draw(value, check_size("Geometric.sample", size), rng, None)

    def _draw(self, value: Any, size: int, rng: Any, accountant: Any) -> np.ndarray:
        arr = as_integers("Geometric", value, other="Laplace")
        source = as_source(rng)
        spend(accountant, self.privacy, "Geometric", self.relation, [self.event])
        noise = self._law().draw(size * arr.size, source).reshape((size, *arr.shape))
        noise += arr  # in place: the sampler's fresh array
        return noise

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
            ``value`` (what :meth:`release` returns), ``privacy``, ``scale``, ``interval``
            (``value -+ accuracy(alpha)``, scalars only), ``alpha``, and in ``details`` a
            ``note`` when the noise is below the lattice step (zero more often than not).

        Raises
        ------
        TypeError, ParameterError, BudgetExceededError
            As for :meth:`release` and :meth:`accuracy`.
        """
        k = self.accuracy(alpha)  # validates `alpha` before anything is spent
        out = self.release(value, rng=rng, accountant=accountant)
        interval = (out - k, out + k) if np.ndim(out) == 0 else None
        return Release(
            out,
            "Geometric",
            self.privacy,
            self.scale,
            interval,
            alpha,
            details=below_step_note("laplace", self._law().scale),
            relation=self.relation,
        )
