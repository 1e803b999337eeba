"""The two noise laws on the integers: draws, tails, tail quantiles, half-widths, thresholds.

Every noisy figure dpkit releases is an integer (a count, a sum of lattice units, a float's
coordinate on a power-of-two lattice) plus a draw from one of two laws:

* :class:`DiscreteLaplaceLaw` of scale ``t``: ``P[Z = z] = (1 - q) / (1 + q) q**|z|`` with
  ``q = exp(-1 / t)``. Integer shifts of L1 norm at most ``s`` change the likelihood by at
  most ``exp(s / t)`` (Ghosh, Roughgarden and Sundararajan 2009): ``t = s / epsilon`` is
  pure ``epsilon``-DP.
* :class:`DiscreteGaussianLaw` of variance parameter ``s2``: ``P[Z = z]`` proportional to
  ``exp(-z**2 / (2 s2))``. Integer shifts of L2 norm at most ``s`` make it
  ``s**2 / (2 s2)``-zCDP (Canonne, Kamath and Steinke 2020, Theorem 14); its
  ``(epsilon, delta)`` calibration is :mod:`dpkit.noise.gaussian_calibration`.

This module is the one place that knows them: draws go through the exact samplers'
kernels (:mod:`dpkit.samplers`), and the tail of each law is written here once, with what
is derived from it: the tail index (the smallest ``j`` with ``P[Z >= j] <= p``), the
half-width of an interval (the smallest ``k`` with ``P[|Z| > k] <= alpha``), the
key-selection threshold, the probability of zero and the standard deviation. Callers turn
a sensitivity and a privacy parameter into a law with :mod:`dpkit.noise.calibration`.

Tails are evaluated in floats and inflated by a relative ``1e-9`` (:data:`TAIL_MARGIN`), so
that a half-width or a threshold derived from them never rests on a tail that rounding made
too small: a conservative rounding, which moves a result by one only when the exact tail
lies within ``1e-9`` of the target.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from dpkit.errors import InternalError
from dpkit.samplers import (
    BitSource,
    discrete_gaussian_blocks,
    discrete_laplace_blocks,
    draw_discrete_gaussian,
    draw_discrete_laplace,
)

__all__ = [
    "MAX_GAUSSIAN_VARIANCE",
    "MAX_LAPLACE_SCALE",
    "TAIL_MARGIN",
    "DiscreteGaussianLaw",
    "DiscreteLaplaceLaw",
    "Law",
    "below_step_note",
    "gaussian_tail",
    "laplace_tail",
    "law",
    "normal_quantile",
    "smallest_index",
    "threshold",
]

#: Largest discrete Laplace scale the exact sampler draws (``samplers.MAX_NOISE_SCALE``).
MAX_LAPLACE_SCALE = Fraction(2**50)
#: Largest discrete Gaussian variance parameter the exact sampler draws.
MAX_GAUSSIAN_VARIANCE = Fraction(2**56)
#: Float evaluations of tails are inflated by this factor so they stay upper bounds.
TAIL_MARGIN = 1 + 1e-9
_LOG_MARGIN = math.log1p(1e-9)


def laplace_tail(t: Fraction, j: int) -> float:
    """``P[Z >= j] = q**j / (1 + q)`` (``j >= 1``, ``q = e^(-1/t)``) for ``P[Z = z] ~ e^(-|z|/t)``.

    (Sum the geometric series: ``P[Z = z] = (1 - q)/(1 + q) q**|z|``.) Returned as an upper
    bound: the float value times :data:`TAIL_MARGIN`.
    """
    if j <= 0:
        return 1.0
    q = math.exp(-1 / float(t))
    return min(1.0, math.exp(-j / float(t)) / (1 + q) * TAIL_MARGIN)


def laplace_tail_index(t: Fraction, log_p: float) -> int:
    """The smallest integer ``j >= 1`` with ``laplace_tail(t, j) <= p``, ``log_p = log(p)``.

    ``q**j / (1 + q) * TAIL_MARGIN <= p`` solves to ``j >= t (log(TAIL_MARGIN) - log(p) -
    log1p(q))`` with ``log(q) = -1 / t`` exactly: written with logarithms it is finite for
    every scale in ``(0, 2**50]`` (``q`` underflowing to 0 for a tiny ``t`` drops a term
    ``<= q``) and every ``p`` down to the smallest double (callers pass ``log(p)``, never a
    ``p`` that underflowed, such as ``alpha / 2`` or ``beta / buckets``).
    """
    tf = float(t)
    q = math.exp(-1 / tf)
    return max(1, math.ceil(tf * (_LOG_MARGIN - log_p - math.log1p(q))))


def gaussian_tail(s2: Fraction, j: int) -> float:
    """An upper bound on ``P[Z >= j]`` for the discrete Gaussian ``N_Z(0, s2)``, ``j >= 1``.

    ``sum_{z >= j} e^{-z^2/2s2} <= e^{-j^2/2s2} + int_j^inf e^{-x^2/2s2} dx`` (the terms
    decrease), and the normaliser ``sum_z e^{-z^2/2s2} >= sqrt(2 pi s2)`` (Poisson summation:
    it equals ``sqrt(2 pi s2) sum_k e^{-2 pi^2 s2 k^2}``), so
    ``P[Z >= j] <= e^{-j^2/2s2} / sqrt(2 pi s2) + erfc(j / sqrt(2 s2)) / 2``, times
    :data:`TAIL_MARGIN`.
    """
    if j <= 0:
        return 1.0
    s = math.sqrt(float(s2))
    val = math.exp(-(j * j) / (2 * float(s2))) / (math.sqrt(2 * math.pi) * s)
    val += 0.5 * math.erfc(j / (math.sqrt(2.0) * s))
    return min(1.0, val * TAIL_MARGIN)


def smallest_index(pred: Callable[[int], bool], start: int) -> int:
    """The smallest integer ``j >= 1`` with ``pred(j)`` (``pred`` monotone): doubling from
    ``start``, then bisection."""
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


def normal_quantile(p: float) -> float:
    """``z`` with ``P[N(0, 1) > z] = p``, by bisection on ``erfc`` (200 halvings of
    ``[-40, 40]``: the float nearest from above)."""
    lo, hi = -40.0, 40.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if 0.5 * math.erfc(mid / math.sqrt(2.0)) > p:
            lo = mid
        else:
            hi = mid
    return hi


@dataclass(frozen=True, slots=True)
class DiscreteLaplaceLaw:
    """The discrete Laplace law ``P[Z = z]`` proportional to ``exp(-|z| / scale)``.

    Attributes
    ----------
    scale : Fraction
        ``t`` in ``(0, 2**50]`` (:data:`MAX_LAPLACE_SCALE`; checked by the calibration,
        :mod:`dpkit.noise.calibration`, before any spend).
    """

    scale: Fraction

    kind = "laplace"

    def draw(self, size: int, source: BitSource) -> np.ndarray:
        """``size`` exact draws (int64) from ``source``."""
        return draw_discrete_laplace(self.scale, size, source)

    def blocks(self, size: int, source: BitSource) -> Iterator[np.ndarray]:
        """The same draws as :meth:`draw`, block by block (:func:`dpkit.samplers.
        discrete_laplace_blocks`)."""
        return discrete_laplace_blocks(self.scale, size, source)

    def tail(self, j: int) -> float:
        """An upper bound on ``P[Z >= j]``: :func:`laplace_tail`."""
        return laplace_tail(self.scale, j)

    def tail_index(self, p: float) -> int:
        """The smallest ``j >= 1`` with ``tail(j) <= p``, ``p > 0``."""
        return laplace_tail_index(self.scale, math.log(p))

    def half_width(self, alpha: float) -> int:
        """The smallest ``k >= 0`` with ``P[|Z| > k] <= alpha``.

        ``P[|Z| > k] = 2 P[Z >= k + 1] = 2 q**(k + 1) / (1 + q)``: the tail index at
        ``alpha / 2``, less one (``log(alpha / 2)`` taken as ``log(alpha) - log(2)``, so
        every ``alpha`` in ``(0, 1)``, ``5e-324`` included, is finite).
        """
        return laplace_tail_index(self.scale, math.log(alpha) - math.log(2.0)) - 1

    def zero_probability(self) -> float:
        """``P[Z = 0] = (1 - q) / (1 + q) = tanh(1 / (2 t))``."""
        s = float(self.scale)
        return math.tanh(0.5 / s) if s > 0 else 1.0

    @property
    def std(self) -> float:
        """The standard deviation ``sqrt(2 q) / (1 - q)``."""
        q = math.exp(-1 / float(self.scale))
        return math.sqrt(2 * q) / (1 - q)


@dataclass(frozen=True, slots=True)
class DiscreteGaussianLaw:
    """The discrete Gaussian law ``P[Z = z]`` proportional to ``exp(-z**2 / (2 variance))``.

    Attributes
    ----------
    variance : Fraction
        The variance parameter ``s2`` in ``(0, 2**56]`` (:data:`MAX_GAUSSIAN_VARIANCE`;
        checked by the calibration before any spend).
    """

    variance: Fraction

    kind = "gaussian"

    def draw(self, size: int, source: BitSource) -> np.ndarray:
        """``size`` exact draws (int64) from ``source``."""
        return draw_discrete_gaussian(self.variance, size, source)

    def blocks(self, size: int, source: BitSource) -> Iterator[np.ndarray]:
        """The same draws as :meth:`draw`, block by block (:func:`dpkit.samplers.
        discrete_gaussian_blocks`)."""
        return discrete_gaussian_blocks(self.variance, size, source)

    def tail(self, j: int) -> float:
        """An upper bound on ``P[Z >= j]``: :func:`gaussian_tail`."""
        return gaussian_tail(self.variance, j)

    def tail_index(self, p: float) -> int:
        """The smallest ``j >= 1`` with ``tail(j) <= p`` (a search over the bound)."""
        return _gaussian_tail_index(self.variance, p)

    def half_width(self, alpha: float) -> int:
        """The smallest ``k >= 0`` with ``P[|Z| > k] <= alpha``, exactly.

        Summed over ``|z| <= 40 sigma + 2`` (the mass beyond is below ``1e-300``) for
        ``sigma <= 2**12``; above, ``ceil(sigma z(1 - alpha / 2))``, which the discrete tail
        meets (it is the normal tail beyond ``k + 1/2`` up to a relative ``exp(-2 pi**2
        sigma**2)``). The normal approximation alone undercovers at small sigma: at sigma 1.45
        it gives 2.84, where ``P[|Z| >= 3]`` is 0.078, not 0.05. ``alpha`` in ``(0, 1)``.
        """
        return _gaussian_half_width(float(self.variance), alpha)

    def zero_probability(self) -> float:
        """``P[Z = 0] = 1 / sum_k exp(-k**2 / (2 V))``: by Poisson summation ``1 / (sqrt(2 pi
        V) (1 + 2 exp(-2 pi**2 V) + ...))`` for ``V >= 1``, where the omitted terms are
        below ``1e-30``; summed directly below."""
        s = float(self.variance)
        if s >= 1:
            return 1 / (math.sqrt(2 * math.pi * s) * (1 + 2 * math.exp(-2 * math.pi**2 * s)))
        k = np.arange(1, 41, dtype=np.float64)
        return float(1 / (1 + 2 * np.exp(-(k * k) / (2 * s)).sum()))

    @property
    def std(self) -> float:
        """``sqrt(variance)``: the parameter, which bounds the law's standard deviation."""
        return math.sqrt(float(self.variance))


#: A noise law: :class:`DiscreteLaplaceLaw` or :class:`DiscreteGaussianLaw`.
Law = DiscreteLaplaceLaw | DiscreteGaussianLaw


def law(kind: str, scale: Fraction) -> Law:
    """The law ``kind`` (``"laplace"``: scale ``t``; ``"gaussian"``: variance ``s2``)."""
    if kind == "laplace":
        return DiscreteLaplaceLaw(scale)
    if kind == "gaussian":
        return DiscreteGaussianLaw(scale)
    raise InternalError(f"noise: unknown law {kind!r}")


@functools.lru_cache(maxsize=1024)
def _gaussian_tail_index(s2: Fraction, p: float) -> int:
    return smallest_index(lambda j: gaussian_tail(s2, j) <= p, 16)


def _gaussian_half_width(variance: float, alpha: float) -> int:
    sigma = math.sqrt(variance)
    if sigma > 2**12:
        return math.ceil(sigma * normal_quantile(alpha / 2))
    k = math.ceil(40 * sigma) + 2
    y = np.arange(0, k + 1, dtype=np.float64)
    with np.errstate(under="ignore"):
        w = np.exp(-(y * y) / (2 * variance))
    total = w[0] + 2 * w[1:].sum()
    # above[j] = P[|Z| > j] = 2 sum_{y > j} w / total
    above = np.append(2 * np.cumsum(w[::-1])[::-1][1:] / total, 0.0)
    return int(np.argmax(above <= alpha))


def threshold(kind: str, scale: Fraction, delta_single: float, top: int = 1) -> int:
    """The smallest integer ``tau`` with ``P[top + Z >= tau] <= delta_single``.

    ``top`` is the largest true count a key held by a single person can have (1 for a count of
    distinct persons). ``Z`` is the discrete Laplace with scale ``scale`` (``kind="laplace"``)
    or the discrete Gaussian with variance ``scale`` (``"gaussian"``); the tails are the exact
    (Laplace) or rigorously bounded (Gaussian) ones of :func:`laplace_tail` and
    :func:`gaussian_tail`, both inflated by :data:`TAIL_MARGIN`.
    """
    if not 0 < delta_single < 1:
        raise InternalError(f"threshold: delta_single must be in (0, 1); got {delta_single!r}")
    return top + law(kind, scale).tail_index(delta_single)


def below_step_note(kind: str, scale: float | Fraction) -> dict[str, str]:
    """``{"note": ...}`` when lattice noise of law ``kind`` and ``scale`` is below the lattice
    step (zero at least half the time), else ``{}``: such a release is, more often than not,
    the exact (lattice-rounded) value, and its interval can have width 0; epsilon is so large
    that the noise hides almost nothing (a valid guarantee, a weak one)."""
    p = law(kind, Fraction(scale)).zero_probability()
    if p < 0.5:
        return {}
    return {
        "note": (
            f"noise below the lattice step: it is zero with probability {p:.6g}, so the "
            "release is the exact (lattice-rounded) value that often and its interval can "
            "have width 0; the privacy parameter is so large that the noise hides almost "
            "nothing"
        )
    }
