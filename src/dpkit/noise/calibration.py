"""Calibration: from a sensitivity and epsilon (or rho) to a noise law on a power-of-two grid.

Every noisy release is an integer statistic on a lattice of step ``g`` (a power of two,
fixed by public parameters, never by the data) plus a law of :mod:`dpkit.noise.laws`
calibrated to the statistic's sensitivity *in lattice steps*, the rounding to the lattice
charged in it. Three calibrations cover dpkit:

* :func:`laplace_law`: an integer statistic of L1 sensitivity ``s`` at ``epsilon``, no
  rounding (``t = s / epsilon``; counts and lattice sums of the statistics package, the
  geometric mechanism, selection noise), checked within the sampler's range.
* :func:`laplace_lattice`: a real value (or vector of ``d``) on the lattice
  ``g = 2**floor(log2(s / (d 2**bits)))``, ``bits`` 16 for a scalar and 12 for a vector,
  with ``t = (floor(s / g) + d) / epsilon`` (the Laplace mechanism). The discrete Gaussian's
  lattice and variance at ``(epsilon, delta)`` are :mod:`dpkit.noise.gaussian_calibration`.
* :class:`Noise`: a vector of integer group statistics with a per-person change of L1 norm
  ``l1`` (or L2 norm ``sqrt(l2_sq)``) over at most ``groups`` groups, at ``epsilon`` (pure
  DP) or ``rho`` (zCDP), coarsened to a step of a power of two only when the scale is huge
  (the Session).

Privacy of one :class:`Noise` over a vector of group statistics whose per-person change has
L1 norm at most ``l1`` (Laplace) or L2 norm at most ``sqrt(l2_sq)`` (Gaussian), touching at
most ``groups`` groups:

* Laplace: ``P[Z = z] ~ exp(-|z| / t)`` per coordinate with ``t = l1_steps / epsilon``; the
  likelihood ratio of integer shifts with L1 norm ``l1_steps`` is at most ``exp(epsilon)``
  (Ghosh, Roughgarden and Sundararajan 2009): pure ``epsilon``-DP.
* Gaussian: ``N_Z(0, sigma2)`` per coordinate with ``sigma2 = l2_steps**2 / (2 rho)``:
  ``rho``-zCDP (Canonne, Kamath and Steinke 2020, Theorem 14, the multivariate discrete
  Gaussian).

Large scales run on a coarser lattice of ``step`` units (a power of two): the statistic is
rounded to it exactly in integers and the rounding, at most one step per group a person
touches, is charged in the sensitivity.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from dpkit.errors import InternalError, ParameterError
from dpkit.noise.laws import MAX_LAPLACE_SCALE, DiscreteLaplaceLaw, Law, law
from dpkit.samplers import BitSource

__all__ = [
    "MAX_GRID",
    "MIN_GRID",
    "Noise",
    "check_laplace_scale",
    "laplace_grid",
    "laplace_lattice",
    "laplace_law",
    "lattice_grid",
    "pow2_at_most",
]

#: Finest lattice spacing a mechanism uses: a normal float, so that ``value / grid`` of an
#: ordinary value does not overflow.
MIN_GRID = 2.0**-1022
#: Coarsest lattice spacing a mechanism uses: lattice points up to ``2**63`` (value plus
#: noise, in int64) map back to finite floats, so a release is never infinite
#: (``2**63 * 2**959 < 2**1023``).
MAX_GRID = 2.0**959


def pow2_at_most(x: float) -> float:
    """The largest power of two ``<= x`` (exact: ``math.frexp`` reads the exponent).

    ``x`` must be a finite positive float (callers check their parameters first, see
    :func:`lattice_grid`).
    """
    if not (x > 0 and math.isfinite(x)):  # pragma: no cover - callers check first
        raise ParameterError(f"pow2_at_most: expected a finite positive number; got {x!r}")
    _m, e = math.frexp(x)  # x = m * 2**e with 0.5 <= m < 1
    return math.ldexp(1.0, e - 1)


def lattice_grid(owner: str, x: float, *, params: str) -> float:
    """The lattice spacing: the largest power of two ``<= x``, within [MIN_GRID, MAX_GRID].

    ``x`` is derived from public parameters (the sensitivity, the noise scale); ``params``
    names them for the message, for example ``"`sensitivity`=1e+308"``. A spacing outside
    the range would make the lattice underflow (values cannot be placed on it) or its points
    overflow (releases would be infinite), so it is refused before anything is spent.
    """
    if not (math.isfinite(x) and x >= MIN_GRID):
        raise ParameterError(
            f"{owner}: {params} is too small: the lattice this mechanism rounds to would "
            f"have a spacing of {x:.3g}, below the smallest normal float (2**-1022); rescale "
            "the values (for example to other units) so the sensitivity is not so tiny"
        )
    g = pow2_at_most(x)
    if g > MAX_GRID:
        raise ParameterError(
            f"{owner}: {params} is too large: released values (on a lattice of spacing "
            f"{g:.3g}) could overflow a float to infinity; rescale the values (for example "
            "to other units) so the sensitivity is below about 1e290"
        )
    return g


def check_laplace_scale(owner: str, t: Fraction, params: str) -> Fraction:
    """The discrete Laplace scale in lattice steps: at most ``2**50`` (the sampler's range),
    else a ParameterError naming ``params`` (the parameters that set it)."""
    if t > MAX_LAPLACE_SCALE:
        raise ParameterError(
            f"{owner}: {params} give a noise scale of about "
            f"2**{t.numerator.bit_length() - t.denominator.bit_length()} "
            "lattice steps, more than the 2**50 the exact sampler supports: epsilon is too "
            "small for this sensitivity (the noise would swamp any value)"
        )
    return t


def laplace_law(
    sensitivity: int | Fraction, epsilon: float | Fraction, *, owner: str = "", params: str = ""
) -> DiscreteLaplaceLaw:
    """Discrete Laplace noise of scale ``sensitivity / epsilon`` for an integer statistic.

    Pure ``epsilon``-DP for a statistic whose neighbours differ by at most ``sensitivity``
    in L1 (Ghosh, Roughgarden and Sundararajan 2009). ``epsilon`` is taken exactly (a float
    as its binary value). With ``owner`` the scale is checked within the sampler's range
    (:func:`check_laplace_scale`, naming ``params``); without, the caller checked it from
    public figures before its spend.
    """
    t = Fraction(sensitivity) / Fraction(epsilon)
    if owner:
        check_laplace_scale(owner, t, params)
    return DiscreteLaplaceLaw(t)


def laplace_grid(owner: str, sensitivity: float, d: int = 1) -> float:
    """The Laplace mechanism's lattice for ``d`` coordinates: ``2**floor(log2(sensitivity /
    (d 2**bits)))``, ``bits`` 16 for a scalar and 12 for a vector (:func:`lattice_grid`)."""
    bits = 16 if d == 1 else 12
    where = "" if d == 1 else f" for {d} coordinates"
    return lattice_grid(
        owner, sensitivity / (d * 2.0**bits), params=f"`sensitivity`={sensitivity!r}{where}"
    )


def laplace_steps(sensitivity: float, grid: float, d: int = 1) -> int:
    """The L1 sensitivity, in lattice steps, of ``d`` coordinates rounded to ``grid``:
    ``floor(sensitivity / grid) + d`` (rounding to nearest moves each coordinate of two
    neighbours at most one step further apart: the rounding is charged)."""
    return math.floor(sensitivity / grid) + d  # L1 lattice sensitivity, rounding charged


def laplace_lattice(
    owner: str, epsilon: float, sensitivity: float, d: int = 1
) -> tuple[float, Fraction]:
    """The lattice of a real value (``d`` coordinates) and its discrete Laplace scale.

    ``g = 2**floor(log2(sensitivity / (d 2**bits)))``, ``bits`` 16 for a scalar and 12 for a
    vector (:func:`laplace_grid`), and ``t = (floor(sensitivity / g) + d) / epsilon``:
    rounding to nearest moves two inputs at most ``floor(D / g) + 1`` steps apart per
    coordinate, so neighbours at most ``sensitivity`` apart in L1 land at most
    ``floor(sensitivity / g) + d`` steps apart. The rounding costs a relative
    ``d g / sensitivity <= 2**-16`` (scalar) or ``2**-11`` (vector) of extra noise.
    ``t`` is checked within the sampler's range (:func:`check_laplace_scale`).
    """
    g = laplace_grid(owner, sensitivity, d)
    steps = laplace_steps(sensitivity, g, d)
    t = Fraction(steps) / Fraction(epsilon)
    where = "" if d == 1 else f" and {d} coordinates"
    params = f"`epsilon`={epsilon!r}, `sensitivity`={sensitivity!r}{where}"
    return g, check_laplace_scale(owner, t, params)


#: largest Laplace scale (in steps) and Gaussian variance (in steps**2) drawn without coarsening
_MAX_T = Fraction(2**40)
_MAX_S2 = Fraction(2**36)
_MIN_S2 = Fraction(1, 4)
_MIN_T = Fraction(1, 64)


def _pow2_ceil(x: Fraction) -> int:
    """The smallest power of two ``>= x``, as an int >= 1."""
    p = 1
    while p < x:
        p *= 2
    return p


def _ceil_sqrt(x: Fraction) -> int:
    """The smallest integer ``>= sqrt(x)``."""
    c = math.ceil(x)
    r = math.isqrt(c)
    return r if r * r >= c else r + 1


@dataclass(frozen=True, slots=True)
class Noise:
    """Discrete noise for one integer statistic over groups.

    Attributes
    ----------
    kind : {"laplace", "gaussian"}
    step : int
        Lattice step in units of the statistic (a power of two; 1 unless the scale is huge).
    sensitivity : Fraction
        In steps, rounding to ``step`` charged: L1 (Laplace) or L2 (Gaussian).
    scale : Fraction
        Laplace ``t`` (steps) or Gaussian ``sigma**2`` (steps**2).
    """

    kind: str
    step: int
    sensitivity: Fraction
    scale: Fraction

    @classmethod
    def laplace(cls, epsilon: Fraction, l1: int, groups: int) -> Noise:
        """Pure ``epsilon``-DP for a per-person change of L1 norm ``l1`` over ``groups`` groups."""
        if epsilon <= 0 or l1 < 1:
            raise InternalError(f"Noise.laplace: bad epsilon {epsilon} or l1 {l1}")
        step = _pow2_ceil(Fraction(l1) / epsilon / _MAX_T)
        sens = Fraction(l1) if step == 1 else Fraction(l1 // step + groups)
        # never below 1/64: more noise keeps epsilon-DP; below it the noise is 0 but with
        # probability < 1e-27, and the exact sampler's cost grows with 1/t
        t = max(sens / epsilon, _MIN_T)
        if t > 2**50:
            raise ParameterError(
                f"Session: `epsilon` ({float(epsilon):.3g} for this aggregate) is too small to "
                "release: the noise would exceed 2**50 steps, the exact sampler's range"
            )
        return cls("laplace", step, sens, t)

    @classmethod
    def gaussian(cls, rho: Fraction, l2_sq: Fraction, groups: int) -> Noise:
        """``rho``-zCDP for a per-person change of L2 norm ``sqrt(l2_sq)`` over ``groups``."""
        if rho <= 0 or l2_sq <= 0:
            raise InternalError(f"Noise.gaussian: bad rho {rho} or l2^2 {l2_sq}")
        s2 = l2_sq / (2 * rho)
        step = 1
        while s2 / step**2 > _MAX_S2:
            step *= 2
        if step == 1:
            sens_sq = l2_sq
        else:
            sens = Fraction(_ceil_sqrt(l2_sq), step) + _ceil_sqrt(Fraction(groups))
            sens_sq = sens * sens
        # never below 1/4: more noise keeps rho-zCDP, and the sampler needs sigma**2 >= 1/4
        s2 = max(sens_sq / (2 * rho), _MIN_S2)
        if s2 > 2**40:  # pragma: no cover - the step loop keeps it near 2**36
            raise ParameterError(
                f"Session: `rho` ({float(rho):.3g} for this aggregate) is too small to release"
            )
        return cls("gaussian", step, Fraction(math.sqrt(sens_sq)), s2)

    @property
    def law(self) -> Law:
        """The noise law drawn in steps (:mod:`dpkit.noise.laws`)."""
        return law(self.kind, self.scale)

    @property
    def std(self) -> float:
        """Standard deviation of the noise, in units of the statistic."""
        return self.law.std * self.step

    def draw(self, values: np.ndarray, source: BitSource) -> np.ndarray:
        """``values`` (exact integers) rounded to the step, plus noise, in units."""
        z = self.law.draw(len(values), source)
        if self.step == 1:
            return values + z
        s = self.step
        return ((values + s // 2) // s + z) * s

    def half_width(self, alpha: float) -> int:
        """``h`` (units) with ``P[|released - true| > h] <= alpha``; exact up to discreteness.

        The noise part is the smallest ``k`` with ``2 P[Z >= k + 1] <= alpha`` (symmetric
        noise; for the discrete Gaussian ``P[Z >= j]`` is the bound of
        :func:`~dpkit.noise.laws.gaussian_tail`); the rounding to the step adds at most
        ``step / 2``.
        """
        return _half_width(self.kind, self.scale, self.step, alpha)


@functools.lru_cache(maxsize=1024)
def _half_width(kind: str, scale: Fraction, step: int, alpha: float) -> int:
    """:meth:`Noise.half_width` (public parameters only; cached: every release of a query
    asks for the same few)."""
    noise = law(kind, scale)
    # the Gaussian's tail bound needs no summation; alpha >= 1e-250, so alpha / 2 is exact
    k = noise.half_width(alpha) if kind == "laplace" else noise.tail_index(alpha / 2) - 1
    return k * step + step // 2
