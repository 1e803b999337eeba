"""Exact samplers the local-sensitivity frameworks need beyond the core ones.

* :func:`rounded_laplace`, :func:`rounded_cauchy`, :func:`rounded_student_t`: the integer
  ``K = round(X / g)`` where ``X`` is *continuous* Laplace, Cauchy or Student's t noise of
  scale ``sigma`` and ``g`` is a grid spacing; the argument is ``ratio = sigma / g``
  (rational). Releasing ``f~(x) + K g`` for a statistic ``f~`` already on the grid equals
  ``g * round((f~(x) + X) / g)``: a post-processing of the continuous mechanism
  ``f~(x) + X``, so it keeps that mechanism's guarantee exactly, whatever it is (this is
  why no new analysis of a "discrete Cauchy" is needed). ``K`` is sampled exactly by
  inversion: ``K = k`` iff ``F((k - 1/2)/ratio) <= U < F((k + 1/2)/ratio)`` for ``U``
  uniform, and each comparison of ``U`` (whose binary digits are random bits, drawn lazily)
  with a CDF value is decided on exactly computed digits of that value
  (:mod:`decimal`, correctly rounded, widened until the digits are certain). Floating point
  only proposes the candidate ``k``; a wrong proposal is moved until both comparisons hold.
* :func:`exp_weighted_choice`: an index ``i`` with probability proportional to
  ``w_i * exp(-rate * e_i)`` (``w_i >= 0`` exact rationals, ``e_i`` integers), by rejection
  from an integer-weighted proposal built in floating point and an exact acceptance test.
  This is the loss-class draw of the inverse-sensitivity mechanism.
* :func:`uniform_on_grid`: a uniform point of ``[lo, hi]`` rounded to a fixed power-of-two
  grid, sampled exactly (the last step of the continuous inverse-sensitivity mechanism).

All take ``rng`` like every sampler (see :func:`dpkit.samplers.as_source`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from decimal import ROUND_HALF_EVEN, Context, Decimal, localcontext
from fractions import Fraction
from functools import lru_cache
from typing import Any

import numpy as np

from dpkit._validate import describe
from dpkit.errors import InternalError, ParameterError
from dpkit.samplers._discrete import (
    _MAX_SCALE,
    _rational,
    _size,
    bernoulli,
    bernoulli_exp,
    geometric,
    uniform_int,
    uniform_one,
)
from dpkit.samplers._exact import (
    DecimalReal,
    ExactReal,
    ExpNegReal,
    RationalReal,
    bernoulli_one,
    bernoulli_table,
    prefixes64,
)
from dpkit.samplers._source import BitSource, as_source

__all__ = [
    "bernoulli_exp_scaled",
    "exp_weighted_choice",
    "rounded_cauchy",
    "rounded_laplace",
    "rounded_student_t",
    "student_t_cdf",
    "uniform_below",
    "uniform_on_grid",
]

_MASK64 = (1 << 64) - 1


def _ratio(owner: str, ratio: Any) -> Fraction:
    """``ratio = scale / grid``: a positive rational (a float is taken exactly)."""
    return _rational(owner, "ratio", ratio)


# ----------------------------------------------------------------------------- Laplace


def rounded_laplace(ratio: Any, size: int, rng: Any = None) -> np.ndarray:
    """``round(X / g)`` for ``X`` continuous Laplace of scale ``sigma``; ``ratio = sigma / g``.

    Parameters
    ----------
    ratio : Fraction, int or float
        ``sigma / g > 0`` (a float is taken exactly), at most ``2**40``.
    size : int
        Number of draws.
    rng
        Bit source, seed or ``None`` (secure).

    Returns
    -------
    numpy.ndarray
        int64 array ``K`` with ``P[K = 0] = 1 - exp(-h/2)`` and
        ``P[|K| = k] = exp(-(k - 1/2) h) (1 - exp(-h))`` for ``k >= 1`` (sign uniform),
        ``h = 1 / ratio``: exactly the law of ``round(X / g)``.

    Notes
    -----
    ``|K| = 0`` unless a ``Bernoulli(exp(-h/2))`` succeeds; then ``|K| = 1 + G`` with ``G``
    geometric, ``P[G = j] = (1 - e^-h) e^(-j h)``. Both draws are exact
    (:func:`~dpkit.samplers.bernoulli_exp`, :func:`~dpkit.samplers.geometric`).

    Examples
    --------
    >>> rounded_laplace(4, 8, rng=0).tolist()
    [2, 4, 8, -3, -2, 8, -1, 13]
    """
    r = _ratio("rounded_laplace", ratio)
    if r > _MAX_SCALE:
        raise ParameterError(
            f"rounded_laplace: `ratio` (scale / grid) must be at most 2**50; got {describe(ratio)}"
        )
    n = _size("rounded_laplace", size)
    source = as_source(rng)
    h = 1 / r
    nonzero = bernoulli_exp(h / 2, n, source)
    mag = 1 + geometric(h, n, source)
    sign = np.where(bernoulli(Fraction(1, 2), n, source), 1, -1)
    return np.where(nonzero, sign * mag, 0).astype(np.int64)


# ----------------------------------------------------------------------------- decimal helpers


@lru_cache(maxsize=64)
def _pi(prec: int) -> Decimal:
    """pi to ``prec`` significant digits (Machin: 16 atan(1/5) - 4 atan(1/239))."""
    with localcontext() as ctx:
        ctx.prec = prec + 10
        val = 16 * _atan_series(Decimal(1) / 5) - 4 * _atan_series(Decimal(1) / 239)
    with localcontext() as ctx:
        ctx.prec = prec
        return +val


def _atan_series(x: Decimal) -> Decimal:
    """Taylor series of atan for |x| <= 0.2, in the caller's context."""
    ctx_eps = Decimal(10) ** -(_prec() + 5)
    x2 = x * x
    term = x
    total = x
    k = 1
    while abs(term) > ctx_eps:
        term = -term * x2
        k += 2
        total += term / k
    return total


def _prec() -> int:
    from decimal import getcontext

    return getcontext().prec


def _atan(x: Decimal) -> Decimal:
    """atan(x) for any Decimal ``x``, to about the caller's precision (10 guard digits)."""
    prec = _prec()
    with localcontext() as ctx:
        ctx.prec = prec + 10
        if x == 0:
            return Decimal(0)
        sign = 1 if x > 0 else -1
        a = abs(x)
        outer = Decimal(0)
        if a > 1:
            outer = _pi(prec + 10) / 2
            a = 1 / a
        doublings = 0
        while a > Decimal("0.1"):
            a = a / (1 + (1 + a * a).sqrt())
            doublings += 1
        inner = _atan_series(a) * (2**doublings)
        val = outer - inner if outer else inner
        out = sign * val
    with localcontext() as ctx:
        ctx.prec = prec
        return +out


def _frac_dec(q: Fraction) -> Decimal:
    return Decimal(q.numerator) / Decimal(q.denominator)


def student_t_cdf(z: Fraction, df: int) -> Decimal:
    """CDF of Student's t with integer ``df >= 1`` at rational ``z``, in the current context.

    Closed forms of Abramowitz and Stegun 26.7.3-4 with ``theta = atan(z / sqrt(df))``:
    odd ``df``: ``1/2 + (theta + sin cos sum_j a_j cos^(2j)) / pi``; even ``df``:
    ``1/2 + (sin / 2) sum_j b_j cos^(2j)``. ``df = 1`` is the Cauchy CDF.
    Accurate to within a few units of the context precision (amplification below 10**4 for
    ``df <= 64``).
    """
    prec = _prec()
    with localcontext() as ctx:
        ctx.prec = prec + 10
        zd = _frac_dec(z)
        d = Decimal(df)
        root = (d + zd * zd).sqrt()
        sin = zd / root
        cos2 = d / (d + zd * zd)
        if df % 2 == 1:
            theta = _atan(zd / d.sqrt())
            total = Decimal(0)
            if df >= 3:
                coef = Decimal(1)
                powc = Decimal(1)
                total = Decimal(1)
                for j in range(1, (df - 3) // 2 + 1):
                    coef = coef * (2 * j) / (2 * j + 1)
                    powc = powc * cos2
                    total += coef * powc
                total = sin * cos2.sqrt() * total
            val = Decimal(1) / 2 + (theta + total) / _pi(prec + 10)
        else:
            coef = Decimal(1)
            powc = Decimal(1)
            total = Decimal(1)
            for j in range(1, (df - 2) // 2 + 1):
                coef = coef * (2 * j - 1) / (2 * j)
                powc = powc * cos2
                total += coef * powc
            val = Decimal(1) / 2 + sin * total / 2
    with localcontext() as ctx:
        ctx.prec = prec
        return +val


def _student_t_cdf_float(z: np.ndarray, df: int) -> np.ndarray:
    """The same closed form in float64 (only to propose candidates)."""
    with np.errstate(over="ignore", invalid="ignore"):
        theta = np.arctan(z / math.sqrt(df))
        sin, cos = np.sin(theta), np.cos(theta)
        cos2 = cos * cos
        if df % 2 == 1:
            total = np.zeros_like(z)
            if df >= 3:
                coef, powc, acc = 1.0, np.ones_like(z), np.ones_like(z)
                for j in range(1, (df - 3) // 2 + 1):
                    coef *= (2 * j) / (2 * j + 1)
                    powc = powc * cos2
                    acc = acc + coef * powc
                total = sin * cos * acc
            return 0.5 + (theta + total) / math.pi
        coef, powc, acc = 1.0, np.ones_like(z), np.ones_like(z)
        for j in range(1, (df - 2) // 2 + 1):
            coef *= (2 * j - 1) / (2 * j)
            powc = powc * cos2
            acc = acc + coef * powc
        return 0.5 + sin * acc / 2


# ----------------------------------------------------------------------------- lazy uniforms


class _LazyUniform:
    """One uniform ``U`` in [0, 1) whose 64-bit words are drawn only when needed."""

    __slots__ = ("source", "words")

    def __init__(self, first: int, source: BitSource) -> None:
        self.words = [first]
        self.source = source

    def less_than(self, p: ExactReal) -> bool:
        """Exactly ``U < p``: compares digit words until they differ."""
        if p.is_one():
            return True
        level = 0
        while True:
            if level >= len(self.words):
                self.words.append(int(self.source.words(1)[0]))
            digits = p.prefix(64 * (level + 1)) & _MASK64
            w = self.words[level]
            if w != digits:
                return w < digits
            level += 1


def _rational_sqrt(q: Fraction) -> Fraction | None:
    a, b = math.isqrt(q.numerator), math.isqrt(q.denominator)
    return Fraction(a, b) if a * a == q.numerator and b * b == q.denominator else None


def _cdf_rational(z: Fraction, df: int) -> Fraction | None:
    """The CDF value when it is rational (digits then come from integer division).

    ``z = 0`` gives 1/2; Cauchy at ``z = +-1`` gives 1/4, 3/4 (``atan(+-1) = +-pi/4``); an
    even ``df`` gives a rational value exactly when ``df + z**2`` is a rational square (the
    closed form has no ``atan`` then). Otherwise the value is irrational (``atan(z)/pi`` is
    rational for rational ``z`` only at 0 and +-1), which :class:`DecimalReal` needs to settle.
    """
    if z == 0:
        return Fraction(1, 2)
    if df == 1 and abs(z) == 1:
        return Fraction(1, 2) + (Fraction(1, 4) if z > 0 else Fraction(-1, 4))
    if df % 2 == 0:
        root = _rational_sqrt(df + z * z)
        if root is None:
            return None
        sin = z / root
        cos2 = Fraction(df) / (df + z * z)
        coef = powc = total = Fraction(1)
        for j in range(1, (df - 2) // 2 + 1):
            coef = coef * (2 * j - 1) / (2 * j)
            powc = powc * cos2
            total += coef * powc
        return Fraction(1, 2) + sin * total / 2
    return None


def _cdf_real(z: Fraction, df: int) -> ExactReal:
    exact = _cdf_rational(z, df)
    if exact is not None:
        return RationalReal(exact)
    # amplification: a handful of correctly rounded operations on values of size <= 10**3
    return DecimalReal(lambda: student_t_cdf(z, df), slack=25)


def _rounded_t(owner: str, df: int, ratio: Any, size: int, rng: Any) -> np.ndarray:
    r = _ratio(owner, ratio)
    n = _size(owner, size)
    source = as_source(rng)
    words = source.words(n)
    u = (words >> np.uint64(11)).astype(np.float64) * 2.0**-53 + 2.0**-54
    # float proposal: invert the CDF by bisection on theta in (-pi/2, pi/2)
    lo = np.full(n, -math.pi / 2)
    hi = np.full(n, math.pi / 2)
    for _ in range(64):
        mid = (lo + hi) / 2
        below = _student_t_cdf_float(np.tan(mid), df) <= u
        lo = np.where(below, mid, lo)
        hi = np.where(below, hi, mid)
    with np.errstate(over="ignore", invalid="ignore"):
        zf = np.tan((lo + hi) / 2) * float(r)
    h = 1 / r
    out = [
        _invert(df, h, _start(float(zf[i]), float(u[i])), _LazyUniform(int(words[i]), source))
        for i in range(n)
    ]
    if all(abs(k) < 2**63 for k in out):
        return np.array(out, dtype=np.int64)
    return np.array(out, dtype=object)  # pragma: no cover - |K| >= 2**63


def _start(zf: float, u: float) -> int:
    """The float proposal as an integer (clamped to +-2**62 where it overflowed)."""
    if not math.isfinite(zf) or abs(zf) >= 2.0**62:
        return int(math.copysign(2**62, u - 0.5))
    return round(zf)


def _invert(df: int, h: Fraction, k: int, lu: _LazyUniform) -> int:
    """The integer ``K`` with ``F((K - 1/2) h) <= U < F((K + 1/2) h)``, exactly.

    ``at_most(j)`` is the exact event ``K <= j``, that is ``U < F((j + 1/2) h)``; it is
    monotone in ``j``, so ``K = min {j : at_most(j)}``. Starting from the float proposal
    ``k``, galloping (steps 1, 2, 4, ...) brackets ``K`` and bisection finds it: about
    ``2 log2 |K - k| + 2`` exact comparisons, whatever ``K`` is (Python integers, no
    overflow, no iteration cap and no failure branch: the search is total). Each comparison
    draws further words of ``U`` only while its digits tie with the CDF's.
    """

    def at_most(j: int) -> bool:
        return lu.less_than(_cdf_real((j + Fraction(1, 2)) * h, df))

    if at_most(k):  # K <= k: find the largest j < k with K > j
        hi, step = k, 1
        while at_most(hi - step):
            hi, step = hi - step, 2 * step
        lo = hi - step  # K > lo, K <= hi
    else:  # K > k
        lo, step = k, 1
        while not at_most(lo + step):
            lo, step = lo + step, 2 * step
        hi = lo + step
    while hi - lo > 1:  # invariant: at_most(hi) and not at_most(lo)
        mid = (lo + hi) // 2
        if at_most(mid):
            hi = mid
        else:
            lo = mid
    return hi


def rounded_cauchy(ratio: Any, size: int, rng: Any = None) -> np.ndarray:
    """``round(X / g)`` for ``X`` continuous Cauchy of scale ``sigma``; ``ratio = sigma / g``.

    Parameters
    ----------
    ratio : Fraction, int or float
        ``sigma / g > 0`` (a float is taken exactly).
    size : int
        Number of draws.
    rng
        Bit source, seed or ``None`` (secure).

    Returns
    -------
    numpy.ndarray
        int64 array with ``P[K = k] = F((k + 1/2)/ratio) - F((k - 1/2)/ratio)``,
        ``F(z) = 1/2 + atan(z)/pi`` (an object array in the astronomically rare case of
        ``|K| >= 2**63``).

    Notes
    -----
    Exact inversion (module docstring): each draw costs two to four comparisons with
    CDF values computed in :mod:`decimal`; about 0.2 ms per draw.

    Examples
    --------
    >>> rounded_cauchy(4, 6, rng=0).tolist()
    [-3, 1, 3, 2, 1, -8]
    """
    return _rounded_t("rounded_cauchy", 1, ratio, size, rng)


def rounded_student_t(df: int, ratio: Any, size: int, rng: Any = None) -> np.ndarray:
    """``round(X / g)`` for ``X`` Student's t with ``df`` degrees of freedom, scale ``sigma``.

    Parameters
    ----------
    df : int
        Degrees of freedom, an integer in ``[1, 64]`` (``df = 1`` is Cauchy).
    ratio : Fraction, int or float
        ``sigma / g > 0``.
    size : int
        Number of draws.
    rng
        Bit source, seed or ``None`` (secure).

    Returns
    -------
    numpy.ndarray
        int64 array, ``P[K = k] = F_df((k + 1/2)/ratio) - F_df((k - 1/2)/ratio)``.

    Examples
    --------
    >>> rounded_student_t(3, 4, 6, rng=0).tolist()
    [-2, 1, 3, 1, 1, -5]
    """
    if isinstance(df, bool) or not isinstance(df, int | np.integer) or not 1 <= int(df) <= 64:
        raise ParameterError(f"rounded_student_t: `df` must be an int in [1, 64]; got {df!r}")
    return _rounded_t("rounded_student_t", int(df), ratio, size, rng)


# ----------------------------------------------------------------------------- weighted choice


#: Digits of the one-shot estimate of :class:`_AcceptReal` (its error bound is below).
_ACCEPT_DIGITS = 30
_ACCEPT_CONTEXT = Context(
    prec=_ACCEPT_DIGITS, rounding=ROUND_HALF_EVEN, Emin=-(10**9), Emax=10**9, traps=[]
)
#: ``|x|`` up to which the estimate is used (its error bound stays far below one digit).
_ACCEPT_MAX_X = 10**6


class _AcceptReal(ExactReal):
    """``exp(-x) * R`` for rational ``x`` and ``R > 0``, checked to be at most 1.

    One :mod:`decimal` estimate ``v`` at :data:`_ACCEPT_DIGITS` digits with a proven error
    bound serves both the check and the first 64 binary digits, the common requests; where
    it cannot decide (the bound straddles an integer or the limit, or ``|x|`` is huge) the
    original computations run, so the answers never change (:meth:`_estimate`).
    """

    __slots__ = ("_est", "_inner", "_pre64", "rr", "x")

    def __init__(self, x: Fraction, rr: Fraction) -> None:
        self.x = x
        self.rr = rr
        self._pre64 = -1
        if rr <= 0:
            raise InternalError(f"ExpNegReal: need factor > 0; got {rr}")
        self._inner: ExpNegReal | None = None  # built when needed (:meth:`_exact`)
        self._est = self._estimate()
        xn, xd, rn, rd = x.numerator, x.denominator, rr.numerator, rr.denominator
        if xn * rd > 200 * xd * (rd + rn):  # x > 200 (1 + R): the value is negligible
            return
        if self._est is not None:
            num, den, k = self._est
            # value <= num (D + k) / (den D) <= 1 - 1e-20: the 40-digit value below is < 1
            d = 10 ** (_ACCEPT_DIGITS - 1)
            if num * (d + k) * 10**20 <= den * d * (10**20 - 1):
                return
        with localcontext() as ctx:
            ctx.prec = 40
            ctx.Emin = -(10**9)
            v = self._exact().fn()
        if v > 1 + Decimal(10) ** -30:
            raise InternalError(f"exact acceptance probability {v} > 1")

    def _exact(self) -> ExpNegReal:
        # exp and the two divisions are correctly rounded to the context's significant digits,
        # so the relative (hence absolute, the value being <= 1) error is a few units of the
        # last digit: amplification 1. ExpNegReal skips the work when exp(-x) R is below the
        # digits asked for (a huge x: epsilon times a large loss).
        if self._inner is None:
            self._inner = ExpNegReal(self.x, self.rr, slack=25)
        return self._inner

    def _estimate(self) -> tuple[int, int, int] | None:
        """``(num, den, k)``: the value lies in ``[v (D - k) / D, v (D + k) / D]`` with
        ``v = num / den`` and ``D = 10**(P - 1)`` (``P`` digits), or ``None`` for a huge
        ``|x|``.

        ``v`` is ``exp(-xd) * rd`` with ``xd`` and ``rd`` the quotients of ``x`` and ``R``:
        four correctly rounded operations (two divisions, ``exp``, a product), each with a
        relative error ``|delta| <= u = 10**(1 - P)``. The rounding of ``x`` moves
        ``exp(-x)`` by the factor ``exp(-x delta)``, within ``1.01 |x| u`` of one for
        ``|x| u <= 1e-20``; so ``v = value (1 + eta)`` with ``|eta| <= (2 |x| + 4) u = eta0``
        and the value lies within ``2 eta0 v`` of ``v`` (``eta0 <= 1/2``): ``k = 4 |x| + 8``
        digits of the last place, ``|x|`` rounded up.
        """
        xn, xd, rr = self.x.numerator, self.x.denominator, self.rr
        if abs(xn) > _ACCEPT_MAX_X * xd:
            return None
        ctx = _ACCEPT_CONTEXT
        neg_xd = ctx.divide(Decimal(-xn), Decimal(xd))
        rd = ctx.divide(Decimal(rr.numerator), Decimal(rr.denominator))
        num, den = ctx.multiply(ctx.exp(neg_xd), rd).as_integer_ratio()
        return num, den, 4 * -(-abs(xn) // xd) + 8  # ceil(|x|)

    def prefix(self, bits: int) -> int:
        if bits == 64 and self._est is not None:
            if self._pre64 >= 0:
                return self._pre64
            num, den, k = self._est
            d = 10 ** (_ACCEPT_DIGITS - 1)
            lo = (num * (d - k) << 64) // (den * d)
            hi = (num * (d + k) << 64) // (den * d)
            if lo == hi and hi <= _MASK64:  # the floor of 2**64 * value, proven
                self._pre64 = lo
                return lo
        return self._exact().prefix(bits)


def bernoulli_exp_scaled(x: Fraction, r: Fraction, rng: Any = None) -> bool:
    """One exact draw of ``Bernoulli(exp(-x) * r)`` for rationals ``x`` and ``r > 0``.

    The probability must be at most 1: it is checked in exact-enough arithmetic and an
    :class:`~dpkit.errors.InternalError` is raised otherwise (a caller's bound was wrong; never
    a silent bias). The acceptance step of rejection samplers whose target and proposal are
    known exactly, such as JointExp in :mod:`dpkit.statistics`.

    Examples
    --------
    >>> from fractions import Fraction
    >>> bernoulli_exp_scaled(Fraction(-1), Fraction(1, 3), rng=1)  # e / 3 ~ 0.906
    True
    """
    x, r = Fraction(x), Fraction(r)
    if r <= 0:
        raise ParameterError(f"bernoulli_exp_scaled: `r` must be > 0; got {r}")
    real: ExactReal = RationalReal(r) if x == 0 else _AcceptReal(x, r)
    if x == 0 and r > 1:
        raise InternalError(f"exact acceptance probability {r} > 1")
    source = as_source(rng)
    thr, one = prefixes64([real])
    return bool(bernoulli_table(thr, one, [real], np.zeros(1, dtype=np.intp), source)[0])


#: A single draw of :func:`exp_weighted_choice` runs in Python integers (the same words and
#: decisions as the batched loop, without its array work); tests turn it off to compare.
_ONE_AT_A_TIME = True


def exp_weighted_choice(
    approx_weights: np.ndarray,
    exponents: np.ndarray,
    rate: Fraction,
    size: int,
    rng: Any = None,
    *,
    exact_weight: Callable[[int], Fraction] | None = None,
) -> np.ndarray:
    """Indices ``i`` drawn with probability proportional to ``w_i * exp(-rate * e_i)``.

    Parameters
    ----------
    approx_weights : numpy.ndarray
        float64 ``w_i >= 0``; entries that are exactly 0 are never chosen. Taken exactly
        unless ``exact_weight`` is given.
    exponents : numpy.ndarray
        Integers ``e_i >= 0`` (int64), same length.
    rate : Fraction
        ``rate >= 0``.
    size : int
        Number of independent draws.
    rng
        Bit source, seed or ``None`` (secure).
    exact_weight : callable, optional
        ``i -> w_i`` as an exact :class:`~fractions.Fraction` when the float array only
        approximates it (relative error below ``2**-40``); it must be > 0 exactly where the
        float is > 0.

    Returns
    -------
    numpy.ndarray
        int64 indices.

    Notes
    -----
    Rejection sampling. The proposal is the integer weight
    ``p_i = ceil(v_i (1 + 2**-30) 2**s / v_max) + 1`` with ``v_i`` the float value of
    ``w_i exp(-rate (e_i - e_min))``; integers are summed exactly and a uniform integer below
    the total picks a candidate (:func:`~dpkit.samplers.uniform_int`). The candidate is
    accepted with probability ``w_i exp(-rate (e_i - e_min)) 2**s / (v_max p_i)``, an exact
    comparison with digits from :mod:`decimal`. The accepted index has probability exactly
    proportional to ``w_i exp(-rate e_i)`` as long as every acceptance probability is at
    most 1, which holds when the float ``exp`` is accurate to ``2**-30`` relative (it is to
    ``2**-52``) and is *checked* exactly for every candidate (an
    :class:`~dpkit.errors.InternalError` otherwise, never a silent bias). Floating point
    therefore affects only the speed (acceptance rate about ``1 - 2**-30``), never the
    distribution. Cost: ``O(m)`` NumPy work for ``m`` weights plus ``O(size)`` draws.

    Examples
    --------
    >>> from fractions import Fraction
    >>> exp_weighted_choice(np.array([1.0, 1.0, 0.0]), np.array([0, 1, 0]), Fraction(1),
    ...                     6, rng=0).tolist()
    [0, 1, 0, 1, 1, 0]
    """
    w = np.asarray(approx_weights, dtype=np.float64)
    e = np.asarray(exponents, dtype=np.int64)
    n = _size("exp_weighted_choice", size)
    if w.ndim != 1 or w.shape != e.shape or w.size == 0:
        raise ParameterError("exp_weighted_choice: weights and exponents must be equal 1-d arrays")
    # min and max decide all three checks (a NaN fails `w_min >= 0`, an infinity the max)
    w_min, w_max = float(w.min()), float(w.max())
    e_low = int(e.min())
    if not (w_min >= 0 and math.isfinite(w_max)) or e_low < 0:
        raise ParameterError("exp_weighted_choice: weights must be finite >= 0, exponents >= 0")
    if not w_max > 0:
        raise ParameterError("exp_weighted_choice: every weight is zero")
    rate = rate if type(rate) is Fraction else Fraction(rate)
    if rate < 0:
        raise ParameterError(f"exp_weighted_choice: `rate` must be >= 0; got {rate}")
    source = as_source(rng)
    # Zero weights keep a proposal mass of 1 but their acceptance probability is exactly 0.
    if w_min > 0:  # every weight positive: e_min is the minimum, and e - e_min >= 0
        e_min = e_low
        shifted = e - e_min
    else:
        e_min = int(e[w > 0].min())
        shifted = np.maximum(e - e_min, 0)
    with np.errstate(under="ignore", over="ignore"):  # exp(-inf) = 0: weight negligible
        v = np.exp(shifted * -float(rate))
        v *= w
    v_max = float(v.max())
    m = int(w.size)
    s = 62 - m.bit_length()
    v *= (1 + 2.0**-30) * 2.0**s / v_max
    prop = np.ceil(v, out=v).astype(np.int64)
    prop += 1
    cum = np.cumsum(prop)
    total = int(cum[-1])
    if total >= 2**63:  # pragma: no cover - excluded by the choice of s
        raise InternalError("exp_weighted_choice: proposal total overflows")
    # c = v_max / 2**s has c * p_i >= w_i exp(-rate (e_i - e_min)); with v_max = vn / vd and
    # w_i = wn / wd the acceptance factor R = w_i / (c p_i) is wn vd 2**s / (wd vn p_i)
    vn, vd = v_max.as_integer_ratio()
    cache: dict[int, ExactReal] = {}

    def accept_real(j: int) -> ExactReal:
        real = cache.get(j)
        if real is None:
            if exact_weight is not None:
                wi = exact_weight(j)
                wn, wd = wi.numerator, wi.denominator
            else:
                wn, wd = float(w[j]).as_integer_ratio()
            if wn == 0 or w[j] == 0:
                real = RationalReal(Fraction(0))
                cache[j] = real
                return real
            x = rate * (int(e[j]) - e_min)
            rr = Fraction(wn * vd << s, wd * vn * int(prop[j]))
            if x == 0:  # exp(0) R is rational: exact digits by integer division
                if rr > 1:
                    raise InternalError(f"exp_weighted_choice: acceptance probability {rr} > 1")
                real = RationalReal(rr)
            else:
                real = _AcceptReal(x, rr)
            cache[j] = real
        return real

    if n == 1 and _ONE_AT_A_TIME:  # the words and decisions of the loop below, in ints
        while True:
            j = int(np.searchsorted(cum, uniform_one(total, source), side="right"))
            if bernoulli_one(accept_real(j), source):
                return np.array([j], dtype=np.int64)
    out = np.empty(n, dtype=np.int64)
    pending = np.arange(n)
    while pending.size:
        u = uniform_int(total, pending.size, source)
        cand = np.searchsorted(cum, u, side="right")
        uniq, inv = np.unique(cand, return_inverse=True)
        reals: Sequence[ExactReal] = [accept_real(int(j)) for j in uniq]
        thr, one = prefixes64(reals)
        ok = bernoulli_table(thr, one, reals, inv.astype(np.intp), source)
        out[pending[ok]] = cand[ok]
        pending = pending[~ok]
    return out


# ----------------------------------------------------------------------------- uniform


def uniform_below(n: Any, rng: Any = None) -> np.ndarray:
    """One exactly uniform integer in ``[0, n_i)`` for each entry of ``n`` (vectorised).

    Parameters
    ----------
    n : array_like
        Integers ``1 <= n_i <= 2**62``.
    rng
        Bit source, seed or ``None`` (secure).

    Returns
    -------
    numpy.ndarray
        int64 array shaped like ``n``.

    Notes
    -----
    Rejection: entry ``i`` keeps the top ``ceil(log2 n_i)`` bits of a fresh word and retries
    when they are ``>= n_i`` (probability below 1/2), so each value has probability exactly
    ``1 / n_i``.

    Examples
    --------
    >>> uniform_below([1, 2, 10, 1000], rng=0).tolist()
    [0, 0, 8, 731]
    """
    arr = np.asarray(n)
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"uniform_below: `n` must hold integers; got dtype {arr.dtype}")
    arr = arr.astype(np.int64).ravel()
    if arr.size and (arr.min() < 1 or arr.max() > 2**62):
        raise ParameterError("uniform_below: every `n` must be in [1, 2**62]")
    source = as_source(rng)
    # bit length of n - 1, vectorised: frexp's exponent of float(n - 1) is the bit length,
    # or one more when rounding to float lifts n - 1 to the next power of two (beyond 2**53);
    # any bits >= the bit length keep the draw exactly uniform (only more rejections)
    bits = np.frexp((arr - 1).astype(np.float64))[1].astype(np.uint64)
    out = np.zeros(arr.size, dtype=np.int64)
    pending = np.flatnonzero(arr > 1)
    while pending.size:
        w = source.words(pending.size)
        v = (w >> (np.uint64(64) - bits[pending])).astype(np.int64)
        ok = v < arr[pending]
        out[pending[ok]] = v[ok]
        pending = pending[~ok]
    return out.reshape(np.shape(n))


# ----------------------------------------------------------------------------- grid point


def uniform_on_grid(lo: float, hi: float, spacing: float, rng: Any = None) -> float:
    """``spacing * round(T / spacing)`` for ``T`` uniform on ``[lo, hi]``, sampled exactly.

    Parameters
    ----------
    lo, hi : float
        The interval, ``lo <= hi`` (floats taken exactly).
    spacing : float
        A power of two (the output grid), fixed without looking at data.
    rng
        Bit source, seed or ``None`` (secure).

    Returns
    -------
    float
        A grid point; the cell ``[(z - 1/2) g, (z + 1/2) g)`` of ``z`` is chosen with
        probability ``|cell ∩ [lo, hi]| / (hi - lo)`` (exact rationals).

    Examples
    --------
    >>> uniform_on_grid(0.1, 0.9, 0.25, rng=0)
    0.5
    """
    g = Fraction(spacing)

    def _pow2(v: int) -> bool:
        return v & (v - 1) == 0

    if g <= 0 or not (
        (g.numerator == 1 and _pow2(g.denominator)) or (g.denominator == 1 and _pow2(g.numerator))
    ):
        raise ParameterError(f"uniform_on_grid: `spacing` must be a power of two; got {spacing!r}")
    a, b = Fraction(lo), Fraction(hi)
    if b < a:
        raise ParameterError(f"uniform_on_grid: need lo <= hi; got ({lo!r}, {hi!r})")
    source = as_source(rng)
    z0 = math.floor(a / g + Fraction(1, 2))
    z1 = math.floor(b / g + Fraction(1, 2))
    if z0 == z1 or a == b:
        return float(z0 * g)
    left = (z0 + Fraction(1, 2)) * g - a  # part of the first cell inside [a, b]
    right = b - (z1 - Fraction(1, 2)) * g
    inner = (z1 - z0 - 1) * g
    length = b - a
    if bool(bernoulli(left / length, 1, source)[0]):
        return float(z0 * g)
    rest = length - left
    if inner == 0 or bool(bernoulli(right / rest, 1, source)[0]):
        return float(z1 * g)
    k = int(uniform_int(z1 - z0 - 1, 1, source)[0])
    return float((z0 + 1 + k) * g)
