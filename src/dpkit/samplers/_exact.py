"""Exact comparison of uniform random bits with probabilities, and inversion tables.

Every random decision in dpkit is a comparison ``U < p`` between a uniform real ``U`` in
[0, 1), whose binary digits are the bits of a :class:`~dpkit.samplers.BitSource`, and a
probability ``p`` whose binary digits we can compute exactly. The first 64 digits of ``U``
(one word) are compared with the first 64 digits of ``p`` (a precomputed ``uint64``); only
when they are equal, which happens with probability ``2**-64`` per comparison, are more digits
of ``U`` drawn and compared with more digits of ``p``. The outcome is therefore exactly
``P[U < p] = p`` given perfect bits, and no floating-point ``exp`` or ``log`` decides a draw:
the digits of irrational probabilities such as ``exp(-x)`` come from Python's
:mod:`decimal`, whose ``exp`` is correctly rounded, wrapped in an interval that is widened
until the floor of ``2**bits * p`` is certain (:class:`DecimalReal`).

:class:`SurvivalTable` turns a finite list of such probabilities into a vectorised inversion
sampler: with survival values ``S_1 > S_2 > ... > S_J`` it returns ``X = #{j : U < S_j}``,
which has ``P[X >= j] = S_j``. A 2**16-entry guide table indexed by the top 16 bits of ``U``
answers most draws with one lookup; the few whose bucket holds a boundary are finished with a
binary search and, on a 64-bit tie, with the exact deeper comparison.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Sequence
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np

from dpkit.errors import InternalError
from dpkit.samplers._source import BitSource

__all__ = [
    "DecimalReal",
    "ExactReal",
    "ExpNegReal",
    "RationalReal",
    "SurvivalTable",
    "less_than_deep",
]

_MASK64 = (1 << 64) - 1
_GUIDE_BITS = 16


class ExactReal:
    """A real number in [0, 1] whose binary digits can be computed exactly."""

    def prefix(self, bits: int) -> int:
        """Return ``floor(2**bits * value)`` exactly."""
        raise NotImplementedError

    def is_one(self) -> bool:
        return False


class RationalReal(ExactReal):
    """A rational probability; its digits come from integer division."""

    __slots__ = ("value",)

    def __init__(self, value: Fraction) -> None:
        if not 0 <= value <= 1:
            raise InternalError(f"RationalReal: value {value} outside [0, 1]")
        self.value = value

    def prefix(self, bits: int) -> int:
        return (self.value.numerator << bits) // self.value.denominator

    def is_one(self) -> bool:
        return self.value == 1

    def __repr__(self) -> str:
        return f"RationalReal({self.value})"


class DecimalReal(ExactReal):
    """An irrational probability computed by ``fn()`` in a :mod:`decimal` context.

    ``fn`` runs under a context of precision ``prec`` digits and must return a value whose
    absolute error is at most ``10**-(prec - slack)``. With correctly rounded ``exp`` and
    arithmetic this holds for the few-operation expressions used here as long as the
    cancellation in them amplifies rounding errors by less than ``10**(slack - 2)``; every
    caller states its amplification. The value is known to lie in [0, 1], so the interval is
    clipped to it. Precision doubles until ``floor(2**bits * value)`` is the same at both ends
    of the interval; for an irrational value this always terminates.
    """

    __slots__ = ("_cache", "fn", "slack")

    def __init__(self, fn: Callable[[], Decimal], *, slack: int = 25) -> None:
        self.fn = fn
        self.slack = slack
        self._cache: dict[int, int] = {}

    def prefix(self, bits: int) -> int:
        cached = self._cache.get(bits)
        if cached is not None:
            return cached
        prec = int(bits * 0.30103) + 30 + self.slack
        scale = 1 << bits
        for _ in range(12):
            with localcontext() as ctx:
                ctx.prec = prec
                ctx.Emin = -(10**9)
                v = Fraction(self.fn())
            err = Fraction(1, 10 ** (prec - self.slack))
            lo = max(v - err, Fraction(0)) * scale
            hi = min(v + err, Fraction(1)) * scale
            flo, fhi = math.floor(lo), math.floor(hi)
            if flo == fhi:
                self._cache[bits] = flo
                return flo
            prec *= 2
        raise InternalError("DecimalReal: binary digits did not settle (value rational?)")


#: A rational just above ln 2 = 0.69314718055994530941...: ``x >= bits * LN2_UP`` proves
#: ``exp(-x) <= 2**-bits`` exactly, with no transcendental function evaluated.
LN2_UP = Fraction(6931471805599454, 10**16)


class ExpNegReal(DecimalReal):
    """``exp(-x)`` for a rational ``x``, times an optional rational factor ``r > 0``.

    ``x`` is usually positive; a negative ``x`` (``r exp(-x)`` still a probability, as in
    the exact acceptance steps of :func:`dpkit.samplers.bernoulli_exp_scaled`) is allowed and
    never takes the shortcut below.

    Its binary digits come from :mod:`decimal` like any :class:`DecimalReal`, except that
    ``floor(2**bits * r exp(-x))`` is known to be 0 without computing anything when
    ``x >= (bits + log2(r)) ln 2`` (checked with :data:`LN2_UP` and an integer bound on
    ``log2(r)``, exact rational arithmetic). This keeps the cost of a huge ``x`` (a
    Bernoulli(exp(-2**31)), a geometric with ratio ``exp(-10**300)``) constant: the digits
    of ``exp(-x)`` start with about ``1.44 x`` zeros, and a comparison of uniform bits with
    them stops at the first nonzero word, so only the first few words are ever asked for.
    The value is at most ``r``.
    """

    __slots__ = ("factor_bits", "x")

    def __init__(self, x: Fraction, factor: Fraction = Fraction(1), *, slack: int = 25) -> None:
        if factor <= 0:
            raise InternalError(f"ExpNegReal: need factor > 0; got {factor}")
        num, den = x.numerator, x.denominator
        fn, fd = factor.numerator, factor.denominator
        if factor == 1:
            super().__init__(lambda: (-Decimal(num) / Decimal(den)).exp(), slack=slack)
        else:
            super().__init__(
                lambda: (-Decimal(num) / Decimal(den)).exp() * (Decimal(fn) / Decimal(fd)),
                slack=slack,
            )
        self.x = x
        # log2(factor) < factor_bits (an integer upper bound)
        self.factor_bits = fn.bit_length() - (fd.bit_length() - 1)

    def prefix(self, bits: int) -> int:
        if self.x >= (bits + max(self.factor_bits, 0)) * LN2_UP:
            return 0  # r exp(-x) < 2**factor_bits 2**-(bits + factor_bits) = 2**-bits
        return super().prefix(bits)


def exp_neg(x: Fraction, *, slack: int = 25) -> ExactReal:
    """``exp(-x)`` for a rational ``x >= 0`` as an exact real (``1`` exactly when x = 0).

    Constant cost however large ``x`` is (:class:`ExpNegReal`).
    """
    if x < 0:
        raise InternalError(f"exp_neg: x = {x} < 0")
    if x == 0:
        return RationalReal(Fraction(1))
    return ExpNegReal(x, slack=slack)


def less_than_deep(reals: Sequence[ExactReal], source: BitSource) -> np.ndarray:
    """Finish comparisons ``U < p_i`` whose first 64 bits of ``U`` equal those of ``p_i``.

    For each tied element, fresh 64-bit words of ``U`` are compared with the next 64 binary
    digits of ``p_i`` until they differ. This runs with probability ``2**-64`` per
    comparison, so the per-element Python work here is never on a hot path.
    """
    n = len(reals)
    out = np.zeros(n, dtype=bool)
    pending = list(range(n))
    level = 1
    while pending:
        words = source.words(len(pending))
        still = []
        for i, w in zip(pending, words.tolist(), strict=True):
            r = reals[i]
            if r.is_one():
                out[i] = True
                continue
            digits = r.prefix(64 * (level + 1)) & _MASK64
            if w < digits:
                out[i] = True
            elif w == digits:
                still.append(i)
        pending = still
        level += 1
    return out


def prefixes64(reals: Sequence[ExactReal]) -> tuple[np.ndarray, np.ndarray]:
    """64-bit digit prefixes of ``reals`` and a mask of those exactly equal to one."""
    one = np.array([r.is_one() for r in reals], dtype=bool)
    pre = np.array([_MASK64 if r.is_one() else r.prefix(64) for r in reals], dtype=np.uint64)
    return pre, one


def bernoulli_table(
    thresholds: np.ndarray,
    one: np.ndarray,
    reals: Sequence[ExactReal] | Callable[[int], ExactReal],
    index: np.ndarray,
    source: BitSource,
    words: np.ndarray | None = None,
) -> np.ndarray:
    """Vectorised ``U_i < p[index_i]`` for a table of exact probabilities ``p``.

    ``thresholds`` and ``one`` come from :func:`prefixes64` applied to ``reals`` (a sequence,
    or a function of the table index that builds the exact real lazily). ``words``, when
    given, are the first 64 bits of each ``U``; otherwise they are drawn here.
    """
    w = source.words(index.size) if words is None else words
    thr = thresholds[index]
    out = w < thr
    out |= one[index]
    tie = np.flatnonzero(w == thr)
    if tie.size:
        real_at = reals if callable(reals) else reals.__getitem__
        tie = tie[~one[index[tie]]]
        if tie.size:
            out[tie] = less_than_deep([real_at(int(j)) for j in index[tie]], source)
    return out


def bernoulli_one(real: ExactReal, source: BitSource) -> bool:
    """One draw of :func:`bernoulli_table` for a single exact probability (``index`` of size
    one): its digits first, then one word, the same comparison and the same deep comparison
    on a 64-bit tie, in Python integers."""
    if real.is_one():
        source.words(1)
        return True
    thr = real.prefix(64)
    w = int(source.words(1)[0])
    if w != thr:
        return w < thr
    return bool(less_than_deep([real], source)[0])


class SurvivalTable:
    """Inversion sampler for ``X = #{j in 1..J : U < S_j}``, i.e. ``P[X >= j] = S_j``.

    Parameters
    ----------
    prefixes
        ``floor(2**64 * S_j)`` for ``S_1 > S_2 > ... > S_J``, all in (0, 1), strictly
        decreasing (callers make every mass at least ``2**-60`` so this holds).
    real_at
        ``real_at(j)`` gives ``S_j`` (1-based) as an :class:`ExactReal`, for the rare
        comparisons that tie on all 64 bits; called lazily.
    """

    def __init__(self, prefixes: Sequence[int], real_at: Callable[[int], ExactReal]) -> None:
        b = list(prefixes)
        if not b:
            raise InternalError("SurvivalTable needs at least one boundary")
        if b[0] > _MASK64 or any(b[i] <= b[i + 1] for i in range(len(b) - 1)):
            raise InternalError("SurvivalTable: boundaries must be < 1 and strictly decreasing")
        self.size = len(b)
        self.real_at = real_at
        self._asc = np.array(b[::-1], dtype=np.uint64)
        # a finer guide for larger tables keeps the share of buckets holding a boundary
        # small (measured: 2**18 int16 entries are as fast as 2**16 int64 ones)
        self._bits = _GUIDE_BITS if self.size < 256 else 18
        top = (self._asc >> np.uint64(64 - self._bits)).astype(np.intp)
        hist = np.bincount(top, minlength=1 << self._bits)
        above = self.size - np.cumsum(hist)  # boundaries whose bucket lies above bucket k
        if self.size >= 1 << 15:
            raise InternalError("SurvivalTable: at most 2**15 boundaries")
        # the narrowest integer holding every count (and the -1 mark): a smaller guide stays
        # in cache (the counts are the same in any dtype)
        guide = above.astype(np.int8 if self.size < 127 else np.int16)
        guide[hist > 0] = -1  # the bucket holds a boundary: finish by search
        self._guide = guide
        self._asc_list: list[int] | None = None  # the boundaries as ints, when first needed

    @classmethod
    def from_reals(cls, reals: Sequence[ExactReal]) -> SurvivalTable:
        reals = list(reals)
        if any(r.is_one() for r in reals):
            raise InternalError("SurvivalTable: boundaries must be < 1")
        return cls([r.prefix(64) for r in reals], lambda j: reals[j - 1])

    def sample_from_words(self, u: np.ndarray, source: BitSource) -> np.ndarray:
        """Map uniform words ``u`` (the first 64 bits of each ``U``) to ``X`` (int64)."""
        # the shifted words are < 2**bits, so viewing them as int64 indexes without a copy
        out: np.ndarray = self._guide[(u >> np.uint64(64 - self._bits)).view(np.int64)]
        if out.dtype != np.int64:
            out = out.astype(np.int64)
        return self._resolve(u, out, source)

    def lookup_into(
        self, u: np.ndarray, source: BitSource, out: np.ndarray, index: np.ndarray
    ) -> np.ndarray:
        """:meth:`sample_from_words` written into ``out`` (the guide's dtype, :attr:`dtype`,
        and ``u``'s length), with ``index`` (int64, ``u``'s length) as scratch: the same
        lookups, searches and deep comparisons, without fresh arrays. Returns ``out``."""
        np.right_shift(u, np.uint64(64 - self._bits), out=index.view(np.uint64))
        np.take(self._guide, index, out=out)  # the shifted words are < 2**bits
        return self._resolve(u, out, source)

    def _resolve(self, u: np.ndarray, out: np.ndarray, source: BitSource) -> np.ndarray:
        """``out`` with its ambiguous entries (< 0: the guide could not decide from the top
        bits) replaced by the exact outcome: the boundaries ``u``'s word passes for sure,
        plus a deep comparison where it equals a boundary's prefix. Returns ``out``."""
        amb = np.flatnonzero(out < 0)
        if amb.size:
            ua = u[amb]
            left = np.searchsorted(self._asc, ua, side="left")
            right = np.searchsorted(self._asc, ua, side="right")
            count = self.size - right  # boundaries with prefix > u: surely U < S_j
            tie = np.flatnonzero(right > left)
            if tie.size:
                # u equals the prefix of S_j with j = size - left (1-based, descending order)
                js = self.size - left[tie]
                won = less_than_deep([self.real_at(int(j)) for j in js], source)
                count[tie] += won
            out[amb] = count
        return out

    @property
    def dtype(self) -> np.dtype:
        """The dtype of :meth:`lookup_into`'s output: the guide's (int8 for tables of fewer
        than 127 boundaries, int16 otherwise: the narrowest that holds the counts)."""
        return self._guide.dtype

    def sample_from_list(self, u: list[int], source: BitSource) -> list[int]:
        """:meth:`sample_from_words` for a few words given as Python ints: the same lookups,
        searches and deep comparisons (one call for the ties, in index order), without the
        array work."""
        shift, guide = 64 - self._bits, self._guide
        out = [int(guide[w >> shift]) for w in u]
        ties: list[tuple[int, int]] = []
        for i, o in enumerate(out):
            if o < 0:
                if self._asc_list is None:
                    self._asc_list = self._asc.tolist()
                left = bisect.bisect_left(self._asc_list, u[i])
                right = bisect.bisect_right(self._asc_list, u[i])
                out[i] = self.size - right
                if right > left:
                    ties.append((i, self.size - left))
        if ties:
            won = less_than_deep([self.real_at(j) for _i, j in ties], source)
            for (i, _j), w in zip(ties, won.tolist(), strict=True):
                out[i] += int(w)
        return out

    def sample(self, n: int, source: BitSource) -> np.ndarray:
        return self.sample_from_words(source.words(n), source)


_FB = 192  # fixed-point fraction bits of the table builders


def powers_prefix64(base: ExactReal, count: int) -> tuple[list[int], list[int]]:
    """Fixed-point ``base**v`` for ``v < count`` with a certified error, and 64-bit prefixes.

    ``p_v = floor(p_{v-1} * floor(base 2**192) / 2**192)`` starting from ``p_0 = 2**192``.
    Every step truncates and multiplies by a factor at most one, so ``p_v`` never exceeds
    ``base**v 2**192`` and falls short of it by at most ``2 v`` units (induction:
    ``e_v <= e_{v-1} + 2``). Returns the list of ``p_v`` and, for each ``v``,
    ``floor(2**64 base**v)`` where the interval ``[p_v, p_v + 2v]`` settles it, or -1 where
    it does not (the caller computes those few exactly).
    """
    b = base.prefix(_FB)
    shift = _FB - 64
    p = 1 << _FB
    powers, pre = [], []
    for v in range(count):
        powers.append(p)
        lo, hi = p >> shift, (p + 2 * v) >> shift
        pre.append(lo if lo == hi else -1)
        p = (p * b) >> _FB
    return powers, pre
