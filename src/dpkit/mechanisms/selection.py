"""Selection mechanisms: the exponential mechanism, report-noisy-max, permute-and-flip.

**Exact textbook laws for float scores.** Every float is a dyadic rational, and so are
``epsilon`` and the sensitivity ``Delta``: the exponential mechanism's weight
``exp(-c (u_max - u_i))``, ``c = epsilon / (2 Delta)`` (``epsilon / Delta`` when monotonic),
has an exact rational exponent, and dpkit samples it exactly. The gap ``g_i = u_max - u_i``
is held exactly as a float ``g_hi`` plus its two-sum error ``g_lo``, then split on the lattice
``h = 2**floor(log2(Delta)) / 2**20`` (a power of two fixed by the sensitivity, never by the
data) as ``g_i = k_i h + r_i`` with an integer ``k_i`` and an exact remainder ``0 <= r_i < h``
(a float pair, :func:`_exact_gaps`). Then ``exp(-c g_i) = exp(-c h k_i) exp(-c r_i)``: the
first factor is the exact integer-digit Bernoulli of :func:`dpkit.samplers.bernoulli_exp_int`
(rate ``c h``, exact), the second, whose exponent is below ``c h`` (about ``epsilon 2**-21``),
the exact Bernoulli of float pairs (:func:`dpkit.samplers.bernoulli_exp_pairs`),
decided by one word against certified bounds except with probability about ``2**-49``. So
:class:`Exponential` and :class:`PermuteAndFlip` have exactly the laws of McSherry and Talwar
and of McKenna and Sheldon on the given scores (no rounding, no charged sensitivity), and
:meth:`Exponential.probabilities` reports that law to float precision.

:class:`ReportNoisyMax` with Laplace noise is a discrete mechanism in its own right: it adds
exact discrete Laplace noise to the scores quantised to ``q_i = floor(u_i / h)`` (exact), whose
neighbours differ by at most ``ceil(Delta / h)`` lattice units per coordinate (``|floor(a) -
floor(b)| <= ceil(|a - b|)``); that charged sensitivity sets its scale, a relative ``2**-20``
above ``Delta`` at most. Its ``"gumbel"`` form is the exponential mechanism above. Every random
decision is an exact comparison of uniform bits (see :mod:`dpkit.samplers`); no float
enters a draw undecided.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dpkit._validate import (
    as_real_array,
    check_choice,
    check_positive,
    check_relation,
    check_size,
)
from dpkit.accounting import events as ev
from dpkit.accounting.guard import spend
from dpkit.accounting.loss import PureDP
from dpkit.errors import ParameterError
from dpkit.noise import MAX_LAPLACE_SCALE, MIN_GRID, DiscreteLaplaceLaw, laplace_law, pow2_at_most
from dpkit.samplers import as_source, bernoulli_exp_int, bernoulli_exp_pairs, uniform_int
from dpkit.samplers.heavy_tailed import uniform_below

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
    if isinstance(candidates, np.ma.MaskedArray):
        raise TypeError(
            f"{owner}.select: `candidates` is a masked array; dpkit does not guess what masked "
            "entries mean: pass `.compressed()` (and the matching scores) to drop them"
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
    with np.errstate(over="ignore"):  # an overflow to infinity is refused just below
        q = np.floor(scores / h)
    if np.abs(q).max() >= _MAX_UNITS / 2:
        raise ParameterError(
            f"{owner}.select: `scores` must be below {_MAX_UNITS / 2 * h:.3g} in magnitude for "
            f"`sensitivity`={sensitivity!r}; rescale the scores"
        )
    qi = q.astype(np.int64)
    return qi.max() - qi, math.ceil(sensitivity / h)


class _Gaps:
    """The exact gaps ``g_i = max(u) - u_i = k_i h + (r_hi_i + r_lo_i)`` of float scores
    (``r_hi`` and ``r_lo`` are ``None`` when every remainder is 0: scores on the lattice)."""

    __slots__ = ("h", "k", "r_hi", "r_lo")

    def __init__(
        self, h: float, k: np.ndarray, r_hi: np.ndarray | None, r_lo: np.ndarray | None
    ) -> None:
        self.h, self.k, self.r_hi, self.r_lo = h, k, r_hi, r_lo

    def remainder_factor(self, c: Fraction, idx: np.ndarray, source: Any) -> np.ndarray:
        """Exact Bernoulli(exp(-c r_i)) for the gaps at ``idx`` (all heads when every
        remainder is 0, drawing nothing)."""
        if self.r_hi is None or self.r_lo is None or idx.size == 0:
            return np.ones(idx.size, dtype=bool)
        return bernoulli_exp_pairs(c, self.r_hi[idx], self.r_lo[idx], source)


def _exact_gaps(owner: str, sensitivity: float, scores: np.ndarray) -> _Gaps:
    """``g_i = max(u) - u_i`` split exactly as ``k_i h + r_i``, ``k_i`` int64, ``0 <= r_i < h``.

    ``g_hi = fl(m - u_i)`` and its two-sum error ``g_lo`` (Knuth's TwoSum: ``g_hi + g_lo`` is
    exactly ``m - u_i``); ``k = floor(g_hi / h)`` and ``b = g_hi - k h`` are exact (``g_hi >=
    0``, ``h`` a power of two). If ``b > 0``, then ``h`` is at least twice the unit in the last
    place of ``g_hi`` and ``|g_lo|`` is at most half of it, so ``0 < b + g_lo < h``: ``r = (b,
    g_lo)``. If ``b = 0``, ``t = floor(g_lo / h)`` moves ``k`` and ``r = (-t h, g_lo)``, which
    lies in ``[0, h)``. Scores must be below ``2**61 h`` in magnitude (the gaps then fit in
    int64 units of ``h``).
    """
    h = _unit(owner, sensitivity)
    m, low = scores.max(), scores.min()
    with np.errstate(over="ignore"):  # an overflow to infinity is refused just below
        big = max(abs(m), abs(low)) / h
        spread = m - low
    if not big < _MAX_UNITS / 2:
        raise ParameterError(
            f"{owner}.select: `scores` must be below {_MAX_UNITS / 2 * h:.3g} in magnitude for "
            f"`sensitivity`={sensitivity!r}; rescale the scores"
        )
    if not math.isfinite(spread):
        raise ParameterError(
            f"{owner}.select: `scores` are too far apart (their differences overflow a float); "
            "rescale the scores"
        )
    # few full-size temporaries (each a fresh allocation costs more than the arithmetic)
    q = np.multiply(scores, 1 / h)  # exact: 1 / h is a power of two
    if big < 2.0**52 and np.array_equal(np.floor(q), q):
        # every score on the lattice, |q| < 2**52: the gaps q_max - q are exact integers
        return _Gaps(h, (q.max() - q).astype(np.int64), None, None)
    g_hi = np.subtract(m, scores, out=q)
    bv = np.subtract(g_hi, m)
    g_lo = np.subtract(g_hi, bv)  # av
    np.subtract(m, g_lo, out=g_lo)  # m - av
    np.add(scores, bv, out=bv)  # u + bv = -(neg - bv), rounded the same way
    np.subtract(g_lo, bv, out=g_lo)  # TwoSum: g_hi + g_lo == m - u exactly
    k = np.multiply(g_hi, 1 / h, out=bv)  # exact
    np.floor(k, out=k)
    r_hi = g_hi
    r_hi -= k * h  # b = g_hi - k h, exact
    units = k.astype(np.int64)  # exact: integers below 2**62 (k itself is exact as a float)
    odd = np.flatnonzero((r_hi == 0) & (g_lo != 0))  # b = 0 with a nonzero error term
    if odd.size:  # moved in int64: k + t need not be a float (k near 2**60, t = -1)
        t = np.floor(g_lo[odd] / h)
        units[odd] += t.astype(np.int64)
        r_hi[odd] = -t * h
    return _Gaps(h, units, r_hi, g_lo)


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
    relation: str

    def _check(self) -> None:
        owner = type(self).__name__
        check_relation(owner, self.relation)
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
    def event(self) -> ev.Event:
        """What a selection is, for accounting (:mod:`dpkit.accounting.events`).

        ``Approx(epsilon)``, pure ``epsilon``-DP, here: permute-and-flip and report-noisy-max
        with Laplace noise are ``epsilon``-DP but not ``epsilon``-bounded-range (the log-ratio
        of their output probabilities between neighbours can spread over more than an
        interval of width ``epsilon``), so the exponential mechanism's tighter descriptor does
        not apply to them.
        :class:`Exponential` (and report-noisy-max with Gumbel noise, which samples it) are
        ``Exponential(epsilon)``.
        """
        return ev.Approx(epsilon=self.epsilon)

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

    Parameters
    ----------
    epsilon : float > 0
        Privacy parameter.
    sensitivity : float > 0
        Sensitivity of the utility: the largest change of any one candidate's score between
        neighbouring datasets (default 1, a count).
    monotonic : bool
        ``True`` when every score moves in the same direction between neighbours (counts
        under add/remove): the factor 2 in the exponent is then not needed.
    relation : {"unbounded", "bounded"}
        The neighbour relation ``sensitivity`` was computed for (default ``"unbounded"``,
        add or remove one record; ``"bounded"``: replace one). Passed to the accountant.

    Raises
    ------
    TypeError
        ``epsilon`` or ``sensitivity`` is not a real number; ``monotonic`` is not a bool.
    ParameterError
        ``epsilon`` or ``sensitivity`` not a finite number > 0; an unknown ``relation``.

    Privacy
    -------
    Pure ``epsilon``-DP under ``relation`` (McSherry and Talwar 2007; Dwork and Roth 2014,
    Theorem 3.10): the law is exactly the textbook one on the given scores, floats included
    (:mod:`dpkit.mechanisms.selection`). Sampling is exact: a candidate proposed uniformly at
    random is accepted with probability ``exp(-c (max u - u_i))``, ``c = epsilon / (2
    sensitivity)``, decided by exact Bernoulli draws; the first accepted proposal has
    exactly the target distribution (rejection sampling).

    Examples
    --------
    >>> Exponential(epsilon=1.0).select(["a", "b", "c"], [1, 50, 2], rng=0)
    'b'
    """

    epsilon: float
    sensitivity: float = 1.0
    monotonic: bool = False
    relation: str = "unbounded"

    def __post_init__(self) -> None:
        self._check()

    def accuracy(self, alpha: float = 0.05, n: int = 2) -> float:
        """Utility loss bound: with probability >= 1 - alpha the chosen candidate's score is
        within ``scale * ln(n / alpha)`` of the best of ``n`` (Dwork and Roth 2014, Thm 3.11).

        Parameters
        ----------
        alpha : float
            Failure probability, ``0 < alpha < 1`` (default 0.05).
        n : int
            Number of candidates, >= 1 (default 2).

        Returns
        -------
        float
            The bound on ``max score - chosen score`` that holds with probability
            ``>= 1 - alpha``.

        Raises
        ------
        TypeError
            ``alpha`` is not a real number.
        ParameterError
            ``alpha`` outside ``(0, 1)`` or ``n < 1``.
        """
        return _selection_accuracy("Exponential", self.scale, alpha, n, 1.0)

    def _rate(self) -> Fraction:
        """``c = epsilon / (2 sensitivity)`` (``epsilon / sensitivity`` if monotonic), exact."""
        return Fraction(self.epsilon) / (self._factor * Fraction(self.sensitivity))

    def probabilities(self, scores: Any) -> np.ndarray:
        """The selection probabilities (float64; for inspection and tests, not for sampling).

        Parameters
        ----------
        scores : array_like
            One finite real score per candidate.

        Returns
        -------
        numpy.ndarray
            The probability of choosing each candidate, ``exp(c u_i) / sum_j exp(c u_j)``
            with ``c = epsilon / (2 sensitivity)``: the law :meth:`select` samples, to a
            relative ``1e-15`` times the largest exponent (the gaps are exact; only the
            final ``exp`` and the sum are rounded).

        Raises
        ------
        TypeError
            ``scores`` does not hold real numbers.
        ParameterError
            No scores, a NaN or infinite score, or a score too large for the lattice.
        """
        _, arr = _scores("Exponential", list(range(np.size(scores))), scores)
        gaps = _exact_gaps("Exponential", self.sensitivity, arr)
        c = float(self._rate())
        # c g = c h k + c (r_hi + r_lo), each term within a few ulps
        with np.errstate(under="ignore", over="ignore"):
            y = (c * gaps.h) * gaps.k.astype(np.float64)
            if gaps.r_hi is not None and gaps.r_lo is not None:
                y += c * gaps.r_hi + c * gaps.r_lo
            w = np.exp(-y)
        return w / w.sum()

    def select(
        self,
        candidates: Sequence[Any] | np.ndarray,
        scores: Any,
        *,
        rng: Any = None,
        accountant: Any = None,
    ) -> Any:
        """Return one candidate, chosen with probability ~ exp(epsilon u / (2 sensitivity)).

        Parameters
        ----------
        candidates : sequence or numpy.ndarray
            The candidates; ``scores[i]`` is the score of the ``i``-th one.
        scores : array_like
            One finite real score per candidate, higher is better.
        rng : None, int, SeedSequence or BitSource, optional
            ``None`` (default) draws from a secure source; an ``int`` seed gives
            reproducible, NOT private choices.
        accountant : Accountant, optional
            Charged :attr:`privacy` before anything is drawn.

        Returns
        -------
        object
            One element of ``candidates``, never its score.

        Raises
        ------
        TypeError
            ``candidates`` is not a sequence; ``scores`` does not hold real numbers; a bad
            ``rng``; ``accountant`` is not an accountant.
        ParameterError
            No candidates; not one score per candidate; a NaN or infinite score; a score too
            large for the lattice of this sensitivity.
        BudgetExceededError
            ``accountant`` cannot afford :attr:`privacy`; nothing was spent or drawn.
        """
        cands, idx = self._draw(candidates, scores, 1, rng, accountant)
        return _pick(cands, int(idx[0]))

    def sample(
        self, candidates: Sequence[Any] | np.ndarray, scores: Any, size: int, *, rng: Any = None
    ) -> np.ndarray:
        """``size`` independent selections (positions into ``candidates``, int64).

        The code of :meth:`select`; for audits and studies, charging no accountant.

        Parameters
        ----------
        candidates, scores, rng
            As for :meth:`select`.
        size : int
            Number of independent selections, >= 1.

        Returns
        -------
        numpy.ndarray
            ``size`` int64 positions into ``candidates`` (not the candidates themselves).

        Raises
        ------
        TypeError
            ``size`` is not an int; otherwise as for :meth:`select`.
        ParameterError
            ``size < 1``; otherwise as for :meth:`select`.
        """
        return self._draw(candidates, scores, check_size("Exponential.sample", size), rng, None)[1]

    @property
    def event(self) -> ev.Event:
        """``Exponential(epsilon)``: the exponential mechanism is ``epsilon``-bounded-range
        (Durfee and Rogers 2019), which composes tighter than ``epsilon``-DP (Dong, Durfee and
        Rogers 2020); monotonic or not, the log-probability of every candidate moves within an
        interval of width ``epsilon`` between neighbours.

        Examples
        --------
        >>> Exponential(epsilon=0.5, sensitivity=1.0).event
        Exponential(epsilon=0.5)
        """
        return ev.Exponential(epsilon=self.epsilon)

    def _draw(
        self, candidates: Any, scores: Any, size: int, rng: Any, accountant: Any
    ) -> tuple[Sequence[Any], np.ndarray]:
        cands, arr = _scores("Exponential", candidates, scores)
        gaps = _exact_gaps("Exponential", self.sensitivity, arr)
        c = self._rate()
        x = c * Fraction(gaps.h)
        source = as_source(rng)
        spend(accountant, self.privacy, "Exponential", self.relation, [self.event])
        n = gaps.k.size
        out = np.empty(size, dtype=np.int64)
        filled = 0
        while filled < size:
            # iid proposals, accepted with probability exp(-c h k_i) exp(-c r_i) (two
            # independent exact draws); the accepted ones, in order, are iid draws of the law
            batch = min(max(64, min(n, 1 << 16)) * (size - filled), 1 << 22)
            idx = uniform_int(n, batch, source)
            idx = idx[bernoulli_exp_int(x, gaps.k[idx], source)]
            ok = idx[gaps.remainder_factor(c, idx, source)][: size - filled]
            out[filled : filled + ok.size] = ok
            filled += ok.size
        return cands, out


@dataclass(frozen=True, slots=True)
class PermuteAndFlip(_Selection):
    """Permute-and-flip (McKenna and Sheldon 2020).

    Visits the candidates in a uniformly random order and stops at the first ``r`` for which
    a coin with probability ``exp(epsilon (u_r - u_max) / (2 sensitivity))`` comes up heads
    (``epsilon / sensitivity`` when ``monotonic``). Never worse in expected utility than the
    exponential mechanism at the same epsilon.

    Parameters
    ----------
    epsilon : float > 0
        Privacy parameter.
    sensitivity : float > 0
        Sensitivity of the utility: the largest change of any one candidate's score between
        neighbouring datasets (default 1, a count).
    monotonic : bool
        ``True`` when every score moves in the same direction between neighbours (counts
        under add/remove): the factor 2 in the exponent is then not needed.
    relation : {"unbounded", "bounded"}
        The neighbour relation ``sensitivity`` was computed for (default ``"unbounded"``,
        add or remove one record; ``"bounded"``: replace one). Passed to the accountant.

    Raises
    ------
    TypeError
        ``epsilon`` or ``sensitivity`` is not a real number; ``monotonic`` is not a bool.
    ParameterError
        ``epsilon`` or ``sensitivity`` not a finite number > 0; an unknown ``relation``.

    Privacy
    -------
    Pure ``epsilon``-DP under ``relation`` (McKenna and Sheldon 2020, Theorem 1), with the
    coins' probabilities exactly the textbook ones on the given scores, floats included
    (:mod:`dpkit.mechanisms.selection`). Because the coins are independent of the order,
    dpkit flips every coin at once (exact Bernoulli draws) and returns a uniformly random
    candidate among the heads: the first head in a uniformly random order is exactly that.

    Examples
    --------
    >>> PermuteAndFlip(epsilon=1.0).select(["a", "b", "c"], [1, 50, 2], rng=0)
    'b'
    """

    epsilon: float
    sensitivity: float = 1.0
    monotonic: bool = False
    relation: str = "unbounded"

    def __post_init__(self) -> None:
        self._check()

    def accuracy(self, alpha: float = 0.05, n: int = 2) -> float:
        """Utility loss bound ``scale * ln(n / alpha)`` with probability >= 1 - alpha: a
        candidate ``g`` below the best is returned only if its coin, of probability
        ``exp(-g / scale)``, comes up heads (union bound over the ``n`` candidates).

        Parameters
        ----------
        alpha : float
            Failure probability, ``0 < alpha < 1`` (default 0.05).
        n : int
            Number of candidates, >= 1 (default 2).

        Returns
        -------
        float
            The bound on ``max score - chosen score`` that holds with probability
            ``>= 1 - alpha``.

        Raises
        ------
        TypeError
            ``alpha`` is not a real number.
        ParameterError
            ``alpha`` outside ``(0, 1)`` or ``n < 1``.
        """
        return _selection_accuracy("PermuteAndFlip", self.scale, alpha, n, 1.0)

    def select(
        self,
        candidates: Sequence[Any] | np.ndarray,
        scores: Any,
        *,
        rng: Any = None,
        accountant: Any = None,
    ) -> Any:
        """Return one candidate: the first head of the coins, in a random order.

        Parameters
        ----------
        candidates : sequence or numpy.ndarray
            The candidates; ``scores[i]`` is the score of the ``i``-th one.
        scores : array_like
            One finite real score per candidate, higher is better.
        rng : None, int, SeedSequence or BitSource, optional
            ``None`` (default) draws from a secure source; an ``int`` seed gives
            reproducible, NOT private choices.
        accountant : Accountant, optional
            Charged :attr:`privacy` before anything is drawn.

        Returns
        -------
        object
            One element of ``candidates``, never its score.

        Raises
        ------
        TypeError
            ``candidates`` is not a sequence; ``scores`` does not hold real numbers; a bad
            ``rng``; ``accountant`` is not an accountant.
        ParameterError
            No candidates; not one score per candidate; a NaN or infinite score; a score too
            large for the lattice of this sensitivity.
        BudgetExceededError
            ``accountant`` cannot afford :attr:`privacy`; nothing was spent or drawn.
        """
        cands, idx = self._draw(candidates, scores, 1, rng, accountant)
        return _pick(cands, int(idx[0]))

    def sample(
        self, candidates: Sequence[Any] | np.ndarray, scores: Any, size: int, *, rng: Any = None
    ) -> np.ndarray:
        """``size`` independent selections (positions into ``candidates``, int64).

        The code of :meth:`select`; for audits and studies, charging no accountant.

        Parameters
        ----------
        candidates, scores, rng
            As for :meth:`select`.
        size : int
            Number of independent selections, >= 1.

        Returns
        -------
        numpy.ndarray
            ``size`` int64 positions into ``candidates`` (not the candidates themselves).

        Raises
        ------
        TypeError
            ``size`` is not an int; otherwise as for :meth:`select`.
        ParameterError
            ``size < 1``; otherwise as for :meth:`select`.
        """
        size = check_size("PermuteAndFlip.sample", size)
        return self._draw(candidates, scores, size, rng, None)[1]

    def _draw(
        self, candidates: Any, scores: Any, size: int, rng: Any, accountant: Any
    ) -> tuple[Sequence[Any], np.ndarray]:
        cands, arr = _scores("PermuteAndFlip", candidates, scores)
        gaps = _exact_gaps("PermuteAndFlip", self.sensitivity, arr)
        c = Fraction(self.epsilon) / (self._factor * Fraction(self.sensitivity))
        source = as_source(rng)
        spend(accountant, self.privacy, "PermuteAndFlip", self.relation, [self.event])
        n = gaps.k.size
        # coin i: exp(-c h k_i) exp(-c r_i), the second factor flipped where the first is heads
        heads = bernoulli_exp_int(c * Fraction(gaps.h), np.tile(gaps.k, size), source)
        up = np.flatnonzero(heads)
        heads[up] = gaps.remainder_factor(c, up % n, source)
        heads = heads.reshape(size, n)
        count = heads.sum(axis=1)  # never 0: some gap is 0
        pick = uniform_below(count, source)  # a uniformly random head of each row
        rank = np.cumsum(heads, axis=1) - 1
        return cands, np.argmax(heads & (rank == pick[:, None]), axis=1).astype(np.int64)


@dataclass(frozen=True, slots=True)
class ReportNoisyMax(_Selection):
    """Report-noisy-max: add independent noise to every score and return the arg max.

    Parameters
    ----------
    epsilon, sensitivity, monotonic, relation
        As for :class:`Exponential`.
    noise : {"laplace", "gumbel"}
        ``"laplace"``: discrete Laplace noise of scale ``2 s / epsilon`` (``s / epsilon`` when
        monotonic) on the quantised scores, ties broken towards the first candidate.
        ``"gumbel"``: Gumbel noise, whose arg max has exactly the exponential mechanism's
        distribution; dpkit samples that distribution exactly with :class:`Exponential`.

    Privacy
    -------
    Pure ``epsilon``-DP under ``relation`` (Dwork and Roth 2014, Claim 3.9). The proof
    carries over to
    discrete Laplace noise with a fixed tie-break: if ``r*`` is the smallest noise value with
    which candidate ``i`` wins on ``x``, it still wins on a neighbour with noise
    ``>= r* + 2s`` (``+ s`` when monotonic), and the discrete Laplace survival function
    satisfies ``S(r + k) >= exp(-k / scale) S(r)`` for every integer ``r`` (log-concavity).

    Raises
    ------
    TypeError
        ``epsilon`` or ``sensitivity`` is not a real number; ``monotonic`` is not a bool.
    ParameterError
        ``epsilon`` or ``sensitivity`` not a finite number > 0; an unknown ``noise`` or
        ``relation``.

    Examples
    --------
    >>> ReportNoisyMax(epsilon=1.0).select(["a", "b", "c"], [1, 50, 2], rng=0)
    'b'
    """

    epsilon: float
    sensitivity: float = 1.0
    monotonic: bool = False
    noise: str = "laplace"
    relation: str = "unbounded"

    def __post_init__(self) -> None:
        self._check()
        check_choice("ReportNoisyMax", "noise", self.noise, ("laplace", "gumbel"))
        if self.noise == "laplace" and self._t(self._lattice_sensitivity()) > MAX_LAPLACE_SCALE:
            raise ParameterError(
                f"ReportNoisyMax: `epsilon`={self.epsilon!r} is too small: the Laplace noise "
                "would exceed 2**50 score-lattice steps (2**21 per unit of sensitivity), the "
                "exact sampler's range; epsilon must be at least about 4e-9"
            )

    def _t(self, lattice_sens: int) -> Fraction:
        """The discrete Laplace scale of the noise on the score lattice (the noise core's
        calibration of ``factor * lattice_sens`` at ``epsilon``)."""
        return laplace_law(self._factor * lattice_sens, self.epsilon).scale

    def accuracy(self, alpha: float = 0.05, n: int = 2) -> float:
        """Utility loss bound with probability >= 1 - alpha: ``2 scale ln(n / alpha)`` for
        Laplace noise (each of ``n`` noises exceeds ``scale ln(n / alpha)`` in magnitude with
        probability at most ``alpha / n``); the exponential mechanism's bound for Gumbel.

        Parameters
        ----------
        alpha : float
            Failure probability, ``0 < alpha < 1`` (default 0.05).
        n : int
            Number of candidates, >= 1 (default 2).

        Returns
        -------
        float
            The bound on ``max score - chosen score`` that holds with probability
            ``>= 1 - alpha``.

        Raises
        ------
        TypeError
            ``alpha`` is not a real number.
        ParameterError
            ``alpha`` outside ``(0, 1)`` or ``n < 1``.
        """
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
        """Return the candidate with the largest noisy score.

        Parameters
        ----------
        candidates : sequence or numpy.ndarray
            The candidates; ``scores[i]`` is the score of the ``i``-th one.
        scores : array_like
            One finite real score per candidate, higher is better.
        rng : None, int, SeedSequence or BitSource, optional
            ``None`` (default) draws from a secure source; an ``int`` seed gives
            reproducible, NOT private choices.
        accountant : Accountant, optional
            Charged :attr:`privacy` before anything is drawn.

        Returns
        -------
        object
            One element of ``candidates``, never its score.

        Raises
        ------
        TypeError
            ``candidates`` is not a sequence; ``scores`` does not hold real numbers; a bad
            ``rng``; ``accountant`` is not an accountant.
        ParameterError
            No candidates; not one score per candidate; a NaN or infinite score; a score too
            large for the lattice of this sensitivity.
        BudgetExceededError
            ``accountant`` cannot afford :attr:`privacy`; nothing was spent or drawn.
        """
        cands, idx = self._draw(candidates, scores, 1, rng, accountant)
        return _pick(cands, int(idx[0]))

    def sample(
        self, candidates: Sequence[Any] | np.ndarray, scores: Any, size: int, *, rng: Any = None
    ) -> np.ndarray:
        """``size`` independent selections (positions into ``candidates``, int64).

        The code of :meth:`select`; for audits and studies, charging no accountant.

        Parameters
        ----------
        candidates, scores, rng
            As for :meth:`select`.
        size : int
            Number of independent selections, >= 1.

        Returns
        -------
        numpy.ndarray
            ``size`` int64 positions into ``candidates`` (not the candidates themselves).

        Raises
        ------
        TypeError
            ``size`` is not an int; otherwise as for :meth:`select`.
        ParameterError
            ``size < 1``; otherwise as for :meth:`select`.
        """
        size = check_size("ReportNoisyMax.sample", size)
        return self._draw(candidates, scores, size, rng, None)[1]

    @property
    def event(self) -> ev.Event:
        """``Exponential(epsilon)`` with Gumbel noise (it samples the exponential mechanism);
        ``Approx(epsilon)`` with Laplace noise, which is not bounded-range.

        Examples
        --------
        >>> ReportNoisyMax(epsilon=0.5, sensitivity=1.0, noise="gumbel").event
        Exponential(epsilon=0.5)
        """
        if self.noise == "gumbel":
            return ev.Exponential(epsilon=self.epsilon)
        return ev.Approx(epsilon=self.epsilon)

    def _draw(
        self, candidates: Any, scores: Any, size: int, rng: Any, accountant: Any
    ) -> tuple[Sequence[Any], np.ndarray]:
        if self.noise == "gumbel":
            exp = Exponential(
                self.epsilon, self.sensitivity, monotonic=self.monotonic, relation=self.relation
            )
            return exp._draw(candidates, scores, size, rng, accountant)
        cands, arr = _scores("ReportNoisyMax", candidates, scores)
        gaps, s = _lattice("ReportNoisyMax", self.sensitivity, arr)
        t = self._t(s)
        source = as_source(rng)
        spend(accountant, self.privacy, "ReportNoisyMax", self.relation, [self.event])
        noisy = DiscreteLaplaceLaw(t).draw(size * gaps.size, source).reshape(size, gaps.size) - gaps
        return cands, np.argmax(noisy, axis=1).astype(np.int64)
