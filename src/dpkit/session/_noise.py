"""Discrete noise on exact integer statistics, its intervals and the key-selection thresholds.

Every noisy Session figure is an exact integer statistic (a count, or a sum of lattice
units) plus noise drawn by dpkit's exact samplers: the discrete Laplace (two-sided geometric)
distribution for pure DP, the discrete Gaussian for zCDP. Large scales are run on a coarser
lattice of ``step`` units (a power of two): the statistic is rounded to it exactly in integers
and the rounding, at most one step per group a person touches, is charged in the sensitivity.

Privacy of one :class:`Noise` over a vector of group statistics whose per-person change has
L1 norm at most ``l1`` (Laplace) or L2 norm at most ``sqrt(l2_sq)`` (Gaussian), touching at most
``groups`` groups:

* Laplace: ``P[Z = z] ~ exp(-|z| / t)`` per coordinate with ``t = l1_steps / epsilon``; the
  likelihood ratio of integer shifts with L1 norm ``l1_steps`` is at most ``exp(epsilon)``
  (Ghosh, Roughgarden and Sundararajan 2009): pure ``epsilon``-DP.
* Gaussian: ``N_Z(0, sigma2)`` per coordinate with ``sigma2 = l2_steps**2 / (2 rho)``:
  ``rho``-zCDP (Canonne, Kamath and Steinke 2020, Theorem 14, the multivariate discrete
  Gaussian).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dpkit.errors import InternalError, ParameterError
from dpkit.samplers import BitSource, discrete_gaussian, discrete_laplace

__all__ = [
    "Noise",
    "gaussian_tail",
    "laplace_tail",
    "threshold",
]

#: largest Laplace scale (in steps) and Gaussian variance (in steps**2) drawn without coarsening
_MAX_T = Fraction(2**40)
_MAX_S2 = Fraction(2**36)
_MIN_S2 = Fraction(1, 4)
_MIN_T = Fraction(1, 64)
#: float evaluations of tails are inflated by this relative margin so they stay upper bounds
_MARGIN = 1 + 1e-9


def laplace_tail(t: Fraction, j: int) -> float:
    """``P[Z >= j] = q**j / (1 + q)`` (``j >= 1``, ``q = e^(-1/t)``) for ``P[Z = z] ~ e^(-|z|/t)``.

    (Sum the geometric series: ``P[Z = z] = (1 - q)/(1 + q) q**|z|``.) Returned as an upper
    bound: the float value times ``1 + 1e-9``.
    """
    if j <= 0:
        return 1.0
    q = math.exp(-1 / float(t))
    return min(1.0, math.exp(-j / float(t)) / (1 + q) * _MARGIN)


def gaussian_tail(s2: Fraction, j: int) -> float:
    """An upper bound on ``P[Z >= j]`` for the discrete Gaussian ``N_Z(0, s2)``, ``j >= 1``.

    ``sum_{z >= j} e^{-z^2/2s2} <= e^{-j^2/2s2} + int_j^inf e^{-x^2/2s2} dx`` (the terms
    decrease), and the normaliser ``sum_z e^{-z^2/2s2} >= sqrt(2 pi s2)`` (Poisson summation:
    it equals ``sqrt(2 pi s2) sum_k e^{-2 pi^2 s2 k^2}``), so
    ``P[Z >= j] <= e^{-j^2/2s2} / sqrt(2 pi s2) + erfc(j / sqrt(2 s2)) / 2``, times ``1 + 1e-9``.
    """
    if j <= 0:
        return 1.0
    s = math.sqrt(float(s2))
    val = math.exp(-(j * j) / (2 * float(s2))) / (math.sqrt(2 * math.pi) * s)
    val += 0.5 * math.erfc(j / (math.sqrt(2.0) * s))
    return min(1.0, val * _MARGIN)


def _smallest(pred: Any, start: int) -> int:
    """The smallest integer ``j >= 1`` with ``pred(j)`` (``pred`` monotone)."""
    lo, hi = 0, max(start, 1)
    while not pred(hi):
        lo, hi = hi, 2 * hi
    while hi - lo > 1:  # invariant: not pred(lo) (or lo == 0), pred(hi)
        mid = (lo + hi) // 2
        if pred(mid):
            hi = mid
        else:
            lo = mid
    return hi


def threshold(kind: str, scale: Fraction, delta_single: float, top: int = 1) -> int:
    """The smallest integer ``tau`` with ``P[top + Z >= tau] <= delta_single``.

    ``top`` is the largest true count a key held by a single person can have (1 for a count of
    distinct persons). ``Z`` is the discrete Laplace with scale ``scale`` (``kind="laplace"``)
    or the discrete Gaussian with variance ``scale`` (``"gaussian"``); the tails are the exact
    (Laplace) or rigorously bounded (Gaussian) ones of :func:`laplace_tail` and
    :func:`gaussian_tail`.
    """
    if not 0 < delta_single < 1:
        raise InternalError(f"threshold: delta_single must be in (0, 1); got {delta_single!r}")
    tail = laplace_tail if kind == "laplace" else gaussian_tail
    j = _smallest(lambda j: tail(scale, j) <= delta_single, 16)
    return top + j


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
    def std(self) -> float:
        """Standard deviation of the noise, in units of the statistic."""
        if self.kind == "laplace":
            q = math.exp(-1 / float(self.scale))
            return math.sqrt(2 * q) / (1 - q) * self.step
        return math.sqrt(float(self.scale)) * self.step

    def draw(self, values: np.ndarray, source: BitSource) -> np.ndarray:
        """``values`` (exact integers) rounded to the step, plus noise, in units."""
        n = len(values)
        if self.kind == "laplace":
            z = discrete_laplace(self.scale, n, source)
        else:
            z = discrete_gaussian(0, n, source, sigma2=self.scale)
        if self.step == 1:
            return values + z
        s = self.step
        return ((values + s // 2) // s + z) * s

    def half_width(self, alpha: float) -> int:
        """``h`` (units) with ``P[|released - true| > h] <= alpha``; exact up to discreteness.

        The noise part is the smallest ``k`` with ``2 P[Z >= k + 1] <= alpha`` (symmetric
        noise); the rounding to the step adds at most ``step / 2``.
        """
        return _half_width(self.kind, self.scale, self.step, alpha)


@functools.lru_cache(maxsize=1024)
def _half_width(kind: str, scale: Fraction, step: int, alpha: float) -> int:
    """:meth:`Noise.half_width` (a search over tail bounds, public parameters only; cached:
    every release of a query asks for the same few)."""
    tail = laplace_tail if kind == "laplace" else gaussian_tail
    k = _smallest(lambda j: 2 * tail(scale, j) <= alpha, 8) - 1
    return k * step + step // 2
