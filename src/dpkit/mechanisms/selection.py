"""Selection mechanisms: the exponential mechanism, report-noisy-max, permute-and-flip.

All three quantise the utility scores to the lattice ``h * Z`` with ``h`` a power of two fixed
by the sensitivity (``h = 2**floor(log2(sensitivity)) / 2**20``), never by the data. With
``q_i = floor(u_i / h)`` (exact: division by a power of two), neighbouring score vectors differ
by at most ``ceil(sensitivity / h)`` lattice units per coordinate, because
``|floor(a) - floor(b)| <= ceil(|a - b|)``. The mechanisms run exactly on the integer scores
``q`` with that integer sensitivity, so their guarantee is the textbook one; integer scores
with an integer sensitivity are represented exactly, so for them the selection
probabilities are exactly the textbook ``exp(epsilon u / (2 sensitivity))`` weights. Every
random decision is an exact comparison of uniform bits (see :mod:`dpkit.samplers`); no float
enters a draw.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dpkit._validate import as_real_array, check_choice, check_positive
from dpkit.accounting.loss import PureDP
from dpkit.errors import ParameterError
from dpkit.mechanisms._common import MIN_GRID, pow2_at_most, spend
from dpkit.samplers import as_source, bernoulli_exp_int, uniform_int
from dpkit.samplers._discrete import _MAX_SCALE, _discrete_laplace

__all__ = ["Exponential", "PermuteAndFlip", "ReportNoisyMax"]

_MAX_UNITS = 2**62


def _candidates(owner: str, candidates: Any) -> Any:
    """The candidates as a positionally indexed sequence: ``out[i]`` is the ``i``-th one.

    Lists, tuples, ranges and 1-D arrays index by position already; anything else that is
    sized and iterable (a pandas Series or Index, a dict's ``keys()`` view, ...) is copied
    to a list in iteration order, so a Series with a shuffled index is still read by
    position, never by label. Mappings, sets, strings and scalars are refused.
    """
    if isinstance(candidates, str | bytes | Mapping | set | frozenset):
        raise TypeError(
            f"{owner}.select: `candidates` must be a sequence (list, tuple, 1-D array, "
            f"Series); got {type(candidates).__name__} (pass list(...) of what you mean)"
        )
    if isinstance(candidates, np.ndarray):
        if candidates.ndim != 1:
            shape = "a scalar (0-d array)" if candidates.ndim == 0 else f"shape {candidates.shape}"
            raise TypeError(f"{owner}.select: `candidates` must be 1-D; got {shape}")
        return candidates
    if isinstance(candidates, list | tuple | range):
        return candidates
    if not (hasattr(candidates, "__len__") and hasattr(candidates, "__iter__")):
        raise TypeError(
            f"{owner}.select: `candidates` must be a sequence with a length; got "
            f"{type(candidates).__name__}"
        )
    return list(candidates)


def _scores(owner: str, candidates: Any, scores: Any) -> tuple[Sequence[Any], np.ndarray]:
    cands = _candidates(owner, candidates)
    n = len(cands)
    if n == 0:
        raise ParameterError(f"{owner}.select: `candidates` is empty; at least one is needed")
    arr = as_real_array(f"{owner}.select", "scores", scores).astype(np.float64).ravel()
    if arr.size != n:
        raise ParameterError(
            f"{owner}.select: `scores` must have one score per candidate; got {arr.size} scores "
            f"for {n} candidates"
        )
    if not np.isfinite(arr).all():
        raise ParameterError(f"{owner}.select: `scores` must be finite; found NaN or infinity")
    return cands, arr


def _unit(owner: str, sensitivity: float) -> float:
    """The score lattice ``h = 2**floor(log2(sensitivity)) / 2**20`` (a normal float)."""
    if not sensitivity / 2.0**20 >= MIN_GRID:
        raise ParameterError(
            f"{owner}: `sensitivity`={sensitivity!r} is too small: the score lattice "
            "(sensitivity / 2**20) would be below the smallest normal float; rescale the scores"
        )
    return pow2_at_most(sensitivity) / 2.0**20


def _lattice(owner: str, sensitivity: float, scores: np.ndarray) -> tuple[np.ndarray, int]:
    """Gaps ``k_i = max(q) - q_i >= 0`` of the quantised scores, and the lattice sensitivity."""
    h = _unit(owner, sensitivity)
    q = np.floor(scores / h)
    if np.abs(q).max() >= _MAX_UNITS / 2:
        raise ParameterError(
            f"{owner}.select: |score| must be below {_MAX_UNITS / 2 * h:.3g} for sensitivity "
            f"{sensitivity!r}; rescale the scores"
        )
    qi = q.astype(np.int64)
    return qi.max() - qi, math.ceil(sensitivity / h)


def _selection_accuracy(owner: str, scale: float, alpha: float, n: int, factor: float) -> float:
    """``factor * scale * ln(n / alpha)``: with probability >= 1 - alpha the selected
    candidate's utility is within this of the best one (union bound over the candidates)."""
    alpha = check_positive(f"{owner}.accuracy", "alpha", alpha)
    if not alpha < 1:
        raise ParameterError(f"{owner}.accuracy: `alpha` must be in (0, 1); got {alpha!r}")
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or int(n) < 1:
        raise ParameterError(f"{owner}.accuracy: `n` (number of candidates) must be an int >= 1")
    return factor * scale * math.log(int(n) / alpha)


def _pick(candidates: Sequence[Any], index: int) -> Any:
    return candidates[index]


class _Selection:
    """What the three selection mechanisms share: validation, privacy and temperature."""

    __slots__ = ()
    epsilon: float
    sensitivity: float
    monotonic: bool

    def _check(self) -> None:
        owner = type(self).__name__
        object.__setattr__(self, "epsilon", check_positive(owner, "epsilon", self.epsilon))
        object.__setattr__(
            self, "sensitivity", check_positive(owner, "sensitivity", self.sensitivity)
        )
        if not isinstance(self.monotonic, bool):
            raise TypeError(f"{owner}: `monotonic` must be a bool; got {self.monotonic!r}")
        _unit(owner, self.sensitivity)

    def _lattice_sensitivity(self) -> int:
        """``ceil(sensitivity / h)``, between 2**20 and 2**21 (public: no scores involved)."""
        return math.ceil(self.sensitivity / _unit(type(self).__name__, self.sensitivity))

    @property
    def privacy(self) -> PureDP:
        return PureDP(self.epsilon)

    @property
    def _factor(self) -> int:
        return 1 if self.monotonic else 2

    @property
    def scale(self) -> float:
        """``2 sensitivity / epsilon`` (``sensitivity / epsilon`` if monotonic): the
        exponential mechanism's temperature, or report-noisy-max's Laplace scale."""
        return self._factor * self.sensitivity / self.epsilon


@dataclass(frozen=True, slots=True)
class Exponential(_Selection):
    """The exponential mechanism over a finite set of candidates.

    Selects candidate ``r`` with probability proportional to
    ``exp(epsilon u_r / (2 sensitivity))`` (or ``exp(epsilon u_r / sensitivity)`` when
    ``monotonic=True``: every utility moves in the same direction between neighbours).
    Returns the candidate, never its score.

    Privacy
    -------
    Pure ``epsilon``-DP (McSherry and Talwar 2007; Dwork and Roth 2014, Theorem 3.10), on the
    quantised scores described in :mod:`dpkit.mechanisms.selection`. Sampling is exact:
    a candidate proposed uniformly at random is accepted with probability
    ``exp(-x (max q - q_i))``, ``x = epsilon / (2 s)`` with ``s`` the lattice sensitivity,
    decided by exact Bernoulli draws (:func:`dpkit.samplers.bernoulli_exp_int`); the first
    accepted proposal has exactly the target distribution (rejection sampling).

    Examples
    --------
    >>> Exponential(epsilon=1.0).select(["a", "b", "c"], [1, 50, 2], rng=0)
    'b'
    """

    epsilon: float
    sensitivity: float = 1.0
    monotonic: bool = False

    def __post_init__(self) -> None:
        self._check()

    def accuracy(self, alpha: float = 0.05, n: int = 2) -> float:
        """Utility loss bound: with probability >= 1 - alpha the chosen candidate's score is
        within ``scale * ln(n / alpha)`` of the best of ``n`` (Dwork and Roth 2014, Thm 3.11)."""
        return _selection_accuracy("Exponential", self.scale, alpha, n, 1.0)

    def _x(self, lattice_sens: int) -> Fraction:
        return Fraction(self.epsilon) / (self._factor * lattice_sens)

    def probabilities(self, scores: Any) -> np.ndarray:
        """The selection probabilities (float64; for inspection and tests, not for sampling)."""
        _, arr = _scores("Exponential", list(range(np.size(scores))), scores)
        gaps, s = _lattice("Exponential", self.sensitivity, arr)
        w = np.exp(-float(self._x(s)) * gaps.astype(np.float64))
        return w / w.sum()

    def select(
        self,
        candidates: Sequence[Any] | np.ndarray,
        scores: Any,
        *,
        rng: Any = None,
        accountant: Any = None,
    ) -> Any:
        """Return one candidate, chosen with probability ~ exp(epsilon u / (2 sensitivity))."""
        cands, arr = _scores("Exponential", candidates, scores)
        gaps, s = _lattice("Exponential", self.sensitivity, arr)
        x = self._x(s)
        source = as_source(rng)
        spend(accountant, self.privacy, "Exponential")
        n = gaps.size
        batch = max(64, min(n, 1 << 16))
        while True:
            idx = uniform_int(n, batch, source)
            ok = np.flatnonzero(bernoulli_exp_int(x, gaps[idx], source))
            if ok.size:
                return _pick(cands, int(idx[ok[0]]))


@dataclass(frozen=True, slots=True)
class PermuteAndFlip(_Selection):
    """Permute-and-flip (McKenna and Sheldon 2020).

    Visits the candidates in a uniformly random order and stops at the first ``r`` for which
    a coin with probability ``exp(epsilon (u_r - u_max) / (2 sensitivity))`` comes up heads
    (``epsilon / sensitivity`` when ``monotonic``). Never worse in expected utility than the
    exponential mechanism at the same epsilon.

    Privacy
    -------
    Pure ``epsilon``-DP (McKenna and Sheldon 2020, Theorem 1), on the quantised scores of
    :mod:`dpkit.mechanisms.selection`. Because the coins are independent of the order, dpkit
    flips every coin at once (exact Bernoulli draws) and returns a uniformly random candidate
    among the heads: the first head in a uniformly random order is exactly that.

    Examples
    --------
    >>> PermuteAndFlip(epsilon=1.0).select(["a", "b", "c"], [1, 50, 2], rng=0)
    'b'
    """

    epsilon: float
    sensitivity: float = 1.0
    monotonic: bool = False

    def __post_init__(self) -> None:
        self._check()

    def accuracy(self, alpha: float = 0.05, n: int = 2) -> float:
        """Utility loss bound ``scale * ln(n / alpha)`` with probability >= 1 - alpha: a
        candidate ``g`` below the best is returned only if its coin, of probability
        ``exp(-g / scale)``, comes up heads (union bound over the ``n`` candidates)."""
        return _selection_accuracy("PermuteAndFlip", self.scale, alpha, n, 1.0)

    def select(
        self,
        candidates: Sequence[Any] | np.ndarray,
        scores: Any,
        *,
        rng: Any = None,
        accountant: Any = None,
    ) -> Any:
        cands, arr = _scores("PermuteAndFlip", candidates, scores)
        gaps, s = _lattice("PermuteAndFlip", self.sensitivity, arr)
        x = Fraction(self.epsilon) / (self._factor * s)
        source = as_source(rng)
        spend(accountant, self.privacy, "PermuteAndFlip")
        heads = np.flatnonzero(bernoulli_exp_int(x, gaps, source))  # never empty: a gap is 0
        return _pick(cands, int(heads[uniform_int(heads.size, 1, source)[0]]))


@dataclass(frozen=True, slots=True)
class ReportNoisyMax(_Selection):
    """Report-noisy-max: add independent noise to every score and return the arg max.

    Parameters
    ----------
    epsilon, sensitivity, monotonic
        As for :class:`Exponential`.
    noise : {"laplace", "gumbel"}
        ``"laplace"``: discrete Laplace noise of scale ``2 s / epsilon`` (``s / epsilon`` when
        monotonic) on the quantised scores, ties broken towards the first candidate.
        ``"gumbel"``: Gumbel noise, whose arg max has exactly the exponential mechanism's
        distribution; dpkit samples that distribution exactly with :class:`Exponential`.

    Privacy
    -------
    Pure ``epsilon``-DP (Dwork and Roth 2014, Claim 3.9). The proof carries over to
    discrete Laplace noise with a fixed tie-break: if ``r*`` is the smallest noise value with
    which candidate ``i`` wins on ``x``, it still wins on a neighbour with noise
    ``>= r* + 2s`` (``+ s`` when monotonic), and the discrete Laplace survival function
    satisfies ``S(r + k) >= exp(-k / scale) S(r)`` for every integer ``r`` (log-concavity).

    Examples
    --------
    >>> ReportNoisyMax(epsilon=1.0).select(["a", "b", "c"], [1, 50, 2], rng=0)
    'b'
    """

    epsilon: float
    sensitivity: float = 1.0
    monotonic: bool = False
    noise: str = "laplace"

    def __post_init__(self) -> None:
        self._check()
        check_choice("ReportNoisyMax", "noise", self.noise, ("laplace", "gumbel"))
        if self.noise == "laplace" and self._t(self._lattice_sensitivity()) > _MAX_SCALE:
            raise ParameterError(
                f"ReportNoisyMax: `epsilon`={self.epsilon!r} is too small: the Laplace noise "
                "would exceed 2**50 score-lattice steps (2**21 per unit of sensitivity), the "
                "exact sampler's range; epsilon must be at least about 4e-9"
            )

    def _t(self, lattice_sens: int) -> Fraction:
        return Fraction(self._factor * lattice_sens) / Fraction(self.epsilon)

    def accuracy(self, alpha: float = 0.05, n: int = 2) -> float:
        """Utility loss bound with probability >= 1 - alpha: ``2 scale ln(n / alpha)`` for
        Laplace noise (each of ``n`` noises exceeds ``scale ln(n / alpha)`` in magnitude with
        probability at most ``alpha / n``); the exponential mechanism's bound for Gumbel."""
        factor = 2.0 if self.noise == "laplace" else 1.0
        return _selection_accuracy("ReportNoisyMax", self.scale, alpha, n, factor)

    def select(
        self,
        candidates: Sequence[Any] | np.ndarray,
        scores: Any,
        *,
        rng: Any = None,
        accountant: Any = None,
    ) -> Any:
        if self.noise == "gumbel":
            exp = Exponential(self.epsilon, self.sensitivity, monotonic=self.monotonic)
            return exp.select(candidates, scores, rng=rng, accountant=accountant)
        cands, arr = _scores("ReportNoisyMax", candidates, scores)
        gaps, s = _lattice("ReportNoisyMax", self.sensitivity, arr)
        t = self._t(s)
        source = as_source(rng)
        spend(accountant, self.privacy, "ReportNoisyMax")
        noisy = _discrete_laplace(t, gaps.size, source) - gaps
        return _pick(cands, int(np.argmax(noisy)))
