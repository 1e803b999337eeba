"""Exact, vectorised samplers of discrete distributions.

"Exact" means that, given perfect random bits, every output has exactly the ideal
probability: decisions are comparisons of uniform bits with exactly known binary digits
(:mod:`dpkit.samplers._exact`), never floating-point ``exp``/``log``. "Vectorised" means a
batch of ``N`` draws costs a fixed number of NumPy operations over the batch, plus rejection
rounds over the (geometrically shrinking) set of still-pending entries; no Python loop runs
per draw. (A single uniform integer and up to 16 discrete Laplace draws run in Python
integers instead, faster at that size: the same words in the same requests, the same values.)

The central construction is the geometric distribution ``P[G = k] = (1 - q) q**k`` with
``q = exp(-x)``. Its binary digits are independent: ``q**k = prod_j (q**(2**j))**k_j``, so
``G = L + M*H`` with ``M = 2**m``, ``L = G mod M`` a geometric truncated to ``[0, M)``,
``H = G // M`` a geometric with ratio ``q**M``, and ``L`` and ``H`` independent. ``L`` is
further split into independent 8-bit digits, each a truncated geometric on ``[0, 256)``.
Choosing ``M <= 1/x < 2M`` makes every digit's masses at least ``exp(-1)/256`` and
``q**M`` at most ``exp(-1/2)``, so each part is one lookup in a small exact inversion table
(:class:`~dpkit.samplers._exact.SurvivalTable`), and the rare tail of ``H`` past the table is
handled by memorylessness (``H >= K`` means ``H = K + H'`` with ``H'`` a fresh copy).

References
----------
C. Canonne, G. Kamath, T. Steinke. The Discrete Gaussian for Differential Privacy.
NeurIPS 2020 (arXiv:2004.00010): discrete Laplace and Gaussian, Algorithms 1-3.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache
from typing import Any

import numpy as np

from dpkit._validate import as_real_array, check_int, describe
from dpkit.errors import InternalError, ParameterError
from dpkit.samplers._exact import (
    _FB,
    _MASK64,
    DecimalReal,
    ExactReal,
    RationalReal,
    SurvivalTable,
    bernoulli_table,
    exp_neg,
    less_than_deep,
    powers_prefix64,
    prefixes64,
)
from dpkit.samplers._gaussian import EnvelopeGaussian
from dpkit.samplers._source import BitSource, as_source

__all__ = [
    "bernoulli",
    "bernoulli_exp",
    "bernoulli_exp_int",
    "bernoulli_exp_pairs",
    "discrete_gaussian",
    "discrete_gaussian_blocks",
    "discrete_laplace",
    "discrete_laplace_blocks",
    "draw_discrete_gaussian",
    "draw_discrete_laplace",
    "geometric",
    "permutation",
    "random_signs",
    "uniform_int",
    "uniform_one",
]

_MAX_SCALE = Fraction(2**50)  # largest 1/x (geometric) or scale (Laplace): keeps G in int64
#: The largest discrete Laplace scale (or geometric ``1 / x``) drawn exactly; callers that
#: derive a scale from public figures check it before anything is spent.
MAX_NOISE_SCALE = _MAX_SCALE
_MIN_MASS_BITS = 60  # table entries keep masses >= 2**-60 so 64-bit prefixes are distinct


#: Most draws one sampler call returns: 2**28 int64 values are 2 GiB. Larger requests are
#: refused before anything is allocated (draw in batches): an allocation the machine cannot
#: hold would otherwise fail half-way, or be killed by the operating system.
MAX_DRAWS = 2**28


def _size(owner: str, size: Any, *, name: str = "size") -> int:
    out = check_int(owner, name, size, minimum=0)
    if out > MAX_DRAWS:
        raise ParameterError(
            f"{owner}: `{name}` must be at most 2**28 = {MAX_DRAWS:,} draws per call "
            f"({8 * MAX_DRAWS / 2**30:.0f} GiB of int64); got {describe(size)}: draw in batches"
        )
    return out


def _rational(owner: str, name: str, value: Any, *, positive: bool = True) -> Fraction:
    if isinstance(value, bool | np.bool_ | np.timedelta64 | np.datetime64):
        raise TypeError(f"{owner}: `{name}` must be a number; got {type(value).__name__}")
    if isinstance(value, Fraction):
        out = value
    elif isinstance(value, int | np.integer):
        out = Fraction(int(value))
    elif isinstance(value, float | np.floating):
        if not math.isfinite(float(value)):
            raise ParameterError(f"{owner}: `{name}` must be finite; got {value!r}")
        out = Fraction(float(value))
    else:
        raise TypeError(f"{owner}: `{name}` must be a number; got {type(value).__name__}")
    if positive and out <= 0:
        raise ParameterError(f"{owner}: `{name}` must be > 0; got {value!r}")
    if not positive and out < 0:
        raise ParameterError(f"{owner}: `{name}` must be >= 0; got {value!r}")
    return out


# ----------------------------------------------------------------------------- uniform bits


def random_signs(n: int, source: BitSource) -> np.ndarray:
    """``n`` independent fair bits as a bool array (64 per word drawn)."""
    words = source.words((n + 63) // 64)
    return np.unpackbits(words.view(np.uint8), count=n).astype(bool)


def uniform_int(n: int, size: int, rng: Any = None) -> np.ndarray:
    """Exactly uniform integers on ``[0, n)`` (``1 <= n <= 2**63``), by rejection.

    Each round draws a word per pending entry and keeps its top ``ceil(log2 n)`` bits; values
    ``>= n`` (probability < 1/2) are drawn again.

    Examples
    --------
    >>> uniform_int(6, 5, rng=1)
    array([4, 1, 3, 3, 2])
    """
    n = check_int("uniform_int", "n", n, minimum=1, maximum=2**63)
    size = _size("uniform_int", size)
    source = as_source(rng)
    out = np.zeros(size, dtype=np.int64)
    if n == 1:
        return out
    k = (n - 1).bit_length()
    pending = np.arange(size)
    while pending.size:
        v = source.words(pending.size) >> np.uint64(64 - k)
        ok = v < np.uint64(n)
        out[pending[ok]] = v[ok].astype(np.int64)
        pending = pending[~ok]
    return out


def uniform_one(n: int, source: BitSource) -> int:
    """One draw of :func:`uniform_int` with ``size=1`` as a Python int: the same words (one
    per round), the same value, without the array work (for callers drawing one at a time
    with an ``n`` they computed, ``1 <= n <= 2**63``)."""
    if not 1 <= n <= 1 << 63:
        raise InternalError(f"uniform_one: n = {n} outside [1, 2**63]")
    if n == 1:
        return 0
    shift = 64 - (n - 1).bit_length()
    while True:
        v = int(source.words(1)[0]) >> shift
        if v < n:
            return v


def permutation(n: int, rng: Any = None) -> np.ndarray:
    """A uniformly random permutation of ``range(n)`` (int64).

    Each element gets an independent uniform 64-bit key and the permutation is the order of
    the keys. If two keys collide (probability below ``n**2 / 2**65``) all keys are drawn
    again; conditioned on distinct keys every order is equally likely, so the result is
    exactly uniform.
    """
    n = _size("permutation", n, name="n")
    source = as_source(rng)
    while True:
        keys = source.words(n)
        order = np.argsort(keys, kind="stable")
        sk = keys[order]
        if n < 2 or not np.any(sk[1:] == sk[:-1]):
            return order.astype(np.int64)


def permutations(n: int, size: int, rng: Any = None) -> np.ndarray:
    """``size`` independent uniformly random permutations of ``range(n)``: shape (size, n).

    As :func:`permutation`, row by row: each row orders fresh uniform 64-bit keys, and rows
    whose keys collide are drawn again, so every row is exactly uniform.

    Examples
    --------
    >>> permutations(3, 2, rng=0).shape
    (2, 3)
    """
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or int(n) < 0:
        raise ParameterError(f"permutations: `n` must be an int >= 0; got {n!r}")
    size = _size("permutations", size)
    n = int(n)
    source = as_source(rng)
    out = np.empty((size, n), dtype=np.int64)
    todo = np.arange(size)
    while todo.size:
        keys = source.words(todo.size * n).reshape(todo.size, n)
        order = np.argsort(keys, axis=1, kind="stable")
        sk = np.take_along_axis(keys, order, axis=1)
        bad = (sk[:, 1:] == sk[:, :-1]).any(axis=1) if n > 1 else np.zeros(todo.size, bool)
        out[todo[~bad]] = order[~bad]
        todo = todo[bad]
    return out


# ----------------------------------------------------------------------------- Bernoulli


def bernoulli(p: Any, size: int, rng: Any = None) -> np.ndarray:
    """Exact Bernoulli(p) draws for a rational ``p`` in [0, 1] (a float is taken exactly).

    Examples
    --------
    >>> from fractions import Fraction
    >>> bernoulli(Fraction(1, 3), 6, rng=3)
    array([ True, False, False, False, False, False])
    """
    pf = _rational("bernoulli", "p", p, positive=False)
    if pf > 1:
        raise ParameterError(f"bernoulli: `p` must be in [0, 1]; got {p!r}")
    size = _size("bernoulli", size)
    source = as_source(rng)
    real = RationalReal(pf)
    thr, one = prefixes64([real])
    return bernoulli_table(thr, one, [real], np.zeros(size, dtype=np.intp), source)


def bernoulli_exp(x: Any, size: int, rng: Any = None) -> np.ndarray:
    """Exact Bernoulli(exp(-x)) draws for a rational ``x >= 0`` (a float is taken exactly).

    Examples
    --------
    >>> bernoulli_exp(0.5, 6, rng=3)
    array([ True,  True, False, False, False, False])
    """
    xf = _rational("bernoulli_exp", "x", x, positive=False)
    size = _size("bernoulli_exp", size)
    source = as_source(rng)
    real = exp_neg(xf)
    thr, one = prefixes64([real])
    return bernoulli_table(thr, one, [real], np.zeros(size, dtype=np.intp), source)


@lru_cache(maxsize=256)
def _digit_table(
    x: Fraction, pos: int, width: int
) -> tuple[np.ndarray, np.ndarray, Callable[[int], ExactReal]]:
    """Exact 64-bit prefixes of exp(-x v 2**(width pos)) for v < 2**width (cached)."""
    unit = x * (1 << (width * pos))
    _, pre = powers_prefix64(exp_neg(unit), 1 << width)

    def real_at(v: int) -> ExactReal:
        return exp_neg(unit * v)

    fixed = [p if p >= 0 else real_at(v).prefix(64) for v, p in enumerate(pre)]
    fixed[0] = _MASK64  # v = 0: probability exactly one
    one = np.zeros(1 << width, dtype=bool)
    one[0] = True
    return np.array(fixed, dtype=np.uint64), one, real_at


def bernoulli_exp_int(x: Any, k: Any, rng: Any = None) -> np.ndarray:
    """Exact Bernoulli(exp(-x * k_i)) for a rational ``x >= 0`` and integers ``k_i >= 0``.

    ``exp(-x k) = prod_d exp(-x * k_d * B**d)`` over the base-``B`` digits ``k_d`` of ``k``,
    so the draw succeeds exactly when independent draws succeed for every digit; each digit
    is one lookup in an exact table (``B = 2**16`` for large batches, ``2**8`` otherwise, so
    small calls do not pay for building big tables). High digits are tested first, so
    entries that fail early cost nothing further.
    """
    xf = _rational("bernoulli_exp_int", "x", x, positive=False)
    karr = as_real_array("bernoulli_exp_int", "k", k)
    if karr.dtype.kind not in "iu":
        raise TypeError(f"bernoulli_exp_int: `k` must hold integers; got dtype {karr.dtype}")
    karr = karr.astype(np.int64, copy=False)
    if karr.size and karr.min() < 0:
        raise ParameterError("bernoulli_exp_int: `k` must be >= 0")
    source = as_source(rng)
    flat = karr.ravel()
    out = np.ones(flat.size, dtype=bool)
    if flat.size == 0 or xf == 0:
        return out.reshape(karr.shape)
    width = 16 if flat.size >= 4096 else 8
    mask = (1 << width) - 1
    ndigits = max(1, (int(flat.max()).bit_length() + width - 1) // width)
    alive = np.arange(flat.size)
    for d in range(ndigits - 1, -1, -1):
        v = (flat[alive] >> (width * d)) & mask
        sel = np.flatnonzero(v)
        if sel.size == 0:
            continue
        thr, one, real_at = _digit_table(xf, d, width)
        ok = bernoulli_table(thr, one, real_at, v[sel], source)
        failed = sel[~ok]
        out[alive[failed]] = False
        if d and failed.size:
            keep = np.ones(alive.size, dtype=bool)
            keep[failed] = False
            alive = alive[keep]
            if alive.size == 0:
                break
    return out.reshape(karr.shape)


#: Exponents of :func:`bernoulli_exp_pairs` are split into ``n * 2**-10`` (an integer-digit
#: Bernoulli) plus a remainder below about ``2**-10``, where the float bounds are tight.
_PAIRS_STEP = Fraction(1, 2**10)


def bernoulli_exp_pairs(rate: Any, hi: Any, lo: Any, rng: Any = None) -> np.ndarray:
    """Exact Bernoulli(exp(-rate (hi_i + lo_i))) for a rational ``rate >= 0`` and float pairs.

    Each exponent is the exact rational ``y_i = rate * (hi_i + lo_i)`` (floats are dyadic
    rationals, read exactly; every sum must be ``>= 0``), so a value held as an unevaluated
    float sum (``hi + lo``, as a two-sum error term gives it) keeps every bit.

    ``exp(-y) = exp(-n d) exp(-(y - n d))`` with ``d = 2**-10`` and ``n = floor(y_lo / d)``
    for a certified lower bound ``y_lo`` of ``y``: the first factor is
    :func:`bernoulli_exp_int` (exact), the second has an exponent ``z`` in ``[0, d + 2**-40
    y]``, decided by one 64-bit word of the uniform against certified float bounds ``1 - z
    + z**2/2 - z**3/6 <= exp(-z) <= 1 - z + z**2/2`` (Taylor remainders of alternating
    sign), widened by the rounding of every float operation; a word between them
    (probability about ``z**4/24 + 2**-48``, below ``2**-40``) is decided by the exact digits
    of ``exp(-z)`` (:func:`~dpkit.samplers._exact.exp_neg` of the exact rational) and, on a
    64-bit tie, deeper words. The two factors are independent draws, so the product is exact.

    Examples
    --------
    >>> bernoulli_exp_pairs(1, [0.0, 0.5, 40.0], [0.0, 2.0**-60, 0.0], rng=3)
    array([ True,  True, False])
    """
    owner = "bernoulli_exp_pairs"
    rf = _rational(owner, "rate", rate, positive=False)
    h = as_real_array(owner, "hi", hi).astype(np.float64).ravel()
    lo_arr = as_real_array(owner, "lo", lo).astype(np.float64).ravel()
    if h.shape != lo_arr.shape:
        raise ParameterError(f"{owner}: `hi` and `lo` must have the same length")
    if not (np.isfinite(h).all() and np.isfinite(lo_arr).all()):
        raise ParameterError(f"{owner}: `hi` and `lo` must be finite")
    if np.any(h + lo_arr < 0):  # the rounded sum has the exact sum's sign
        raise ParameterError(f"{owner}: every `hi + lo` must be >= 0")
    _size(owner, h.size)
    source = as_source(rng)
    n = h.size
    if n == 0 or rf == 0:
        return np.ones(n, dtype=bool)
    r = float(rf)  # within a relative 2**-53 of the rate
    if not math.isfinite(r) or r > 2.0**900:
        raise ParameterError(f"{owner}: `rate` must be below 2**900; got {float(rf):.3g}")
    step = float(_PAIRS_STEP)
    with np.errstate(over="ignore", under="ignore"):
        a, b = r * h, r * lo_arr
        y = a + b
        # |y - exact| <= 3 2**-53 (|a| + |b|) (products, sum, rate) plus underflow
        slack = (np.abs(a) + np.abs(b)) * 2.0**-50 + 2.0**-1060
    y_lo = np.maximum(y - slack, 0.0)
    # n d <= y_lo <= y: the remainder z = y - n d is >= 0; n below 2**62 (else exp(-y) is
    # below exp(-2**52) and the integer factor alone decides, exactly)
    units = np.minimum(np.floor(y_lo / step), 2.0**62).astype(np.int64)
    out = bernoulli_exp_int(_PAIRS_STEP, units, source) if units.any() else np.ones(n, bool)
    live = np.flatnonzero(out)
    if live.size == 0:
        return out
    base = units[live].astype(np.float64) * step  # n d, exact (n < 2**53 where it matters)
    y_l, s_l = y[live], slack[live]
    # z = y - n d: float bounds with the subtraction's own rounding (<= 2**-53 |y|) added
    z_up = (y_l + s_l - base) + 2.0**-52 * (np.abs(y_l) + s_l) + 2.0**-1060
    z_lo = np.maximum((y_l - s_l - base) - 2.0**-52 * (np.abs(y_l) + s_l), 0.0)
    words = source.words(live.size)
    low = 1 - z_up * (1 - z_up * (0.5 - z_up / 6)) - 2.0**-50  # <= exp(-z)
    high = np.where(z_lo <= 1, 1 - z_lo * (1 - 0.5 * z_lo) + 2.0**-50, 2.0)  # >= exp(-z)
    wf = words.astype(np.float64)  # within 2**11 of the word (monotone rounding)
    # accept: U < (w + 1) / 2**64 <= low; reject: U >= w / 2**64 >= high
    accept = wf + 2.0**12 <= np.maximum(low, 0.0) * 2.0**64
    reject = (wf - 2.0**12 >= high * 2.0**64) & ~accept
    second = accept
    undecided = np.flatnonzero(~accept & ~reject)
    if undecided.size:
        which = live[undecided]
        reals = [
            exp_neg(
                rf * (Fraction(float(h[i])) + Fraction(float(lo_arr[i])))
                - int(units[i]) * _PAIRS_STEP
            )
            for i in which.tolist()
        ]
        thr, one = prefixes64(reals)
        second[undecided] = bernoulli_table(
            thr, one, reals, np.arange(undecided.size), source, words=words[undecided]
        )
    out[live] = second
    return out


# ----------------------------------------------------------------------------- geometric


def _trunc_geometric_table(a: Fraction, width: int) -> SurvivalTable:
    """Inversion table of the geometric truncated to [0, V), V = 2**width, ratio r = exp(-a).

    Survival values ``S_j = (r^j - r^V) / (1 - r^V)`` for ``j = 1..V-1``. The powers come
    from :func:`powers_prefix64` with certified error (``r^j 2**192`` lies in
    ``[p_j, p_j + 2j]``), so ``2**64 S_j`` lies between
    ``(p_j - p_V - 2V) 2**64 / (2**192 - p_V)`` and
    ``(p_j + 2j - p_V) 2**64 / (2**192 - p_V - 2V)``;
    where their floors agree that is the prefix, elsewhere it is computed exactly with
    :mod:`decimal` (error amplification there: ``1 - r^V >= 1 - exp(-a V)`` with
    ``a V >= 2**-50``, at most ~1e16 < 10**(slack - 2)).
    """
    v_total = 1 << width
    powers, _ = powers_prefix64(exp_neg(a), v_total + 1)
    one = 1 << _FB
    p_v = powers[v_total]
    an, ad = a.numerator, a.denominator

    def real_at(j: int) -> ExactReal:
        def fn() -> Decimal:
            r_j = (-Decimal(an * j) / Decimal(ad)).exp()
            r_v = (-Decimal(an * v_total) / Decimal(ad)).exp()
            return (r_j - r_v) / (1 - r_v)

        return DecimalReal(fn, slack=25)

    den_hi, den_lo = one - p_v, one - p_v - 2 * v_total
    prefixes = []
    for j in range(1, v_total):
        lo = ((powers[j] - p_v - 2 * v_total) << 64) // den_hi
        hi = ((powers[j] + 2 * j - p_v) << 64) // den_lo
        prefixes.append(lo if lo == hi else real_at(j).prefix(64))
    return SurvivalTable(prefixes, real_at)


class _Geometric:
    """Exact sampler of P[G = k] = (1 - e^-x) e^(-k x), built once per x (see module doc)."""

    def __init__(self, x: Fraction) -> None:
        if x <= 0 or 1 / x > _MAX_SCALE:
            raise ParameterError(
                f"geometric: `x` must satisfy 2**-50 <= x; got {float(x)!r} (scale too large)"
            )
        t = 1 / x
        m = 0
        if t >= 1:
            m = t.numerator.bit_length() - t.denominator.bit_length()
            while Fraction(1 << m) > t:
                m -= 1
            while Fraction(1 << (m + 1)) <= t:
                m += 1
        self.m = m
        # low digits in at most 10-bit chunks of balanced width (a 2**10-entry table each)
        self.chunks: list[tuple[int, SurvivalTable]] = []
        nchunks = -(-m // 10)
        lo = 0
        for i in range(nchunks):
            width = (m - lo) // (nchunks - i)
            self.chunks.append((lo, _trunc_geometric_table(x * (1 << lo), width)))
            lo += width
        # H ~ geometric with ratio s = exp(-x M); table of P[H >= h] = s**h while s**h >= 2**-60.
        xm = x * (1 << m)
        reals: list[ExactReal] = []
        h = 1
        while True:
            r = exp_neg(xm * h)
            if h > 1 and r.prefix(64) < (1 << (64 - _MIN_MASS_BITS)):
                break
            reals.append(r)
            h += 1
            if h > 4096:  # cannot happen: x M > 1/2 bounds the table by ~84 entries
                raise InternalError("geometric: tail table too long")
        self.high = SurvivalTable.from_reals(reals)

    def _sample_high(self, n: int, source: BitSource) -> np.ndarray:
        out = self.high.sample(n, source)
        tail = np.flatnonzero(out == self.high.size)
        if tail.size:  # memoryless: H >= K  =>  H = K + fresh H
            out[tail] += self._sample_high(tail.size, source)
        return out

    def sample(self, n: int, source: BitSource) -> np.ndarray:
        # one request for all the words of the batch: the high part and every chunk
        words = source.words(n * (len(self.chunks) + 1))
        g = self.high.sample_from_words(words[:n], source)
        tail = np.flatnonzero(g == self.high.size)
        if tail.size:  # memoryless: H >= K  =>  H = K + fresh H
            g[tail] += self._sample_high(tail.size, source)
        g <<= self.m
        for i, (lo, table) in enumerate(self.chunks, start=1):
            part = table.sample_from_words(words[i * n : (i + 1) * n], source)
            part <<= lo
            g += part
        return g

    def sample_into(self, n: int, source: BitSource, ws: _LaplaceWorkspace) -> np.ndarray:
        """:meth:`sample` into the workspace's buffers (``ws.g[:n]``, overwritten by the next
        call): the same words in the same requests, the same lookups, the same values."""
        words = source.words(n * (len(self.chunks) + 1))
        g = ws.g[:n]
        index = ws.index[:n]
        g[:] = self.high.lookup_into(words[:n], source, ws.small(self.high.dtype, n), index)
        tail = np.flatnonzero(g == self.high.size)
        if tail.size:  # memoryless: H >= K  =>  H = K + fresh H
            g[tail] += self._sample_high(tail.size, source)
        g <<= self.m
        part64 = ws.part64[:n]
        for i, (lo, table) in enumerate(self.chunks, start=1):
            u = words[i * n : (i + 1) * n]
            part = table.lookup_into(u, source, ws.small(table.dtype, n), index)
            np.left_shift(part, lo, out=part64, dtype=np.int64)
            g += part64
        return g

    def sample_list(self, n: int, source: BitSource) -> list[int]:
        """:meth:`sample` for a few draws, as Python ints: the same words in the same
        requests (the tail's fresh draws included), the same tables."""
        words = source.words(n * (len(self.chunks) + 1)).tolist()
        g = self.high.sample_from_list(words[:n], source)
        tail = [i for i, h in enumerate(g) if h == self.high.size]
        if tail:  # memoryless: H >= K  =>  H = K + fresh H
            for i, extra in zip(tail, self._sample_high(len(tail), source).tolist(), strict=True):
                g[i] += extra
        g = [h << self.m for h in g]
        for i, (lo, table) in enumerate(self.chunks, start=1):
            part = table.sample_from_list(words[i * n : (i + 1) * n], source)
            g = [h + (p << lo) for h, p in zip(g, part, strict=True)]
        return g


@lru_cache(maxsize=128)
def _geometric_sampler(x: Fraction) -> _Geometric:
    return _Geometric(x)


def geometric(x: Any, size: int, rng: Any = None) -> np.ndarray:
    """Exact geometric draws: ``P[G = k] = (1 - exp(-x)) exp(-k x)`` for ``k = 0, 1, ...``.

    Parameters
    ----------
    x : rational > 0 (float taken exactly), with ``1/x <= 2**50``.
    size : number of draws.
    rng : ``None`` (secure), a seed, or a BitSource.

    Examples
    --------
    >>> geometric(0.5, 6, rng=7)
    array([2, 6, 0, 1, 3, 4])
    """
    xf = _rational("geometric", "x", x)
    size = _size("geometric", size)
    geo, source = _geometric_sampler(xf), as_source(rng)
    return _blocked(lambda k: geo.sample(k, source), size)


_BLOCK = 1 << 16
#: Gaussian blocks propose ~1.45x their size, so a smaller block keeps proposals near 2**16
_GAUSS_BLOCK = 45_000


def _blocked(fill: Callable[[int], np.ndarray], size: int, block: int = _BLOCK) -> np.ndarray:
    """Produce ``size`` draws in blocks of 65,536, so temporaries stay small and are reused.

    Large fresh allocations are slow (page faults); working block by block keeps every
    temporary in cache and lets the allocator reuse it.
    """
    if size <= block:
        return fill(size)
    out = np.empty(size, dtype=np.int64)
    for start in range(0, size, block):
        stop = min(size, start + block)
        out[start:stop] = fill(stop - start)
    return out


def _discrete_laplace_block(geo: _Geometric, size: int, source: BitSource) -> np.ndarray:
    g = geo.sample(size, source)
    neg = random_signs(size, source)
    bad = np.flatnonzero(neg & (g == 0))
    g *= 1 - 2 * neg.view(np.int8).astype(
        np.int64
    )  # "-0" would double the mass at zero: draw again
    if bad.size:
        g[bad] = _discrete_laplace_block(geo, bad.size, source)
    return g


class _LaplaceWorkspace:
    """Buffers one call reuses for every block (fresh large temporaries page-fault)."""

    def __init__(self, n: int) -> None:
        self.g = np.empty(n, dtype=np.int64)
        self.index = np.empty(n, dtype=np.int64)
        self.part64 = np.empty(n, dtype=np.int64)
        self._small: dict[np.dtype, np.ndarray] = {}

    def small(self, dtype: np.dtype, n: int) -> np.ndarray:
        """A buffer of ``n`` entries of a table lookup's ``dtype`` (int8 or int16)."""
        buf = self._small.get(dtype)
        if buf is None:
            buf = self._small[dtype] = np.empty(self.g.size, dtype=dtype)
        return buf[:n]


def _discrete_laplace_into(
    geo: _Geometric, size: int, source: BitSource, ws: _LaplaceWorkspace
) -> np.ndarray:
    """:func:`_discrete_laplace_block` in the workspace (``ws.g[:size]``, overwritten by the
    next call): the same words in the same requests (magnitudes, signs, then the redraws of
    "negative zeros"), the same values."""
    g = geo.sample_into(size, source, ws)
    neg = random_signs(size, source)
    bad = np.flatnonzero(neg & (g == 0))
    sign = ws.part64[:size]  # 1 - 2 neg, in a buffer the magnitudes no longer need
    np.multiply(neg.view(np.int8), -2, out=sign, dtype=np.int64)
    sign += 1
    g *= sign
    if bad.size:  # "-0" would double the mass at zero: draw again
        g[bad] = _discrete_laplace_block(geo, bad.size, source)
    return g


def _discrete_laplace_few(geo: _Geometric, size: int, source: BitSource) -> list[int]:
    """:func:`_discrete_laplace_block` for a few draws in Python ints (same words, same
    order: magnitudes, signs, then the redraws of "negative zeros")."""
    g = geo.sample_list(size, source)
    # random_signs(size, source) as ints: sign i is bit 7 - i % 8 (NumPy's unpackbits reads
    # a byte's high bit first) of byte (i % 64) // 8 (little-endian) of word i // 64
    words = source.words((size + 63) // 64).tolist()
    neg = [words[i >> 6] >> (((i & 63) & ~7) | (7 - (i & 7))) & 1 for i in range(size)]
    bad = [i for i in range(size) if neg[i] and g[i] == 0]
    g = [-v if s else v for v, s in zip(g, neg, strict=True)]
    if bad:
        for i, v in zip(bad, _discrete_laplace_few(geo, len(bad), source), strict=True):
            g[i] = v
    return g


#: Up to this many draws, discrete Laplace noise is drawn in Python ints (same bits).
_FEW = 16


def draw_discrete_laplace(scale: Fraction, size: int, source: BitSource) -> np.ndarray:
    """The kernel of :func:`discrete_laplace` for a caller that checked its arguments.

    ``scale`` is a Fraction in ``(0, 2**50]``, ``size`` an int in ``[0, 2**28]`` and
    ``source`` a :class:`BitSource`; nothing is validated again (the noise core,
    :mod:`dpkit.noise`, checks the scale from public figures before any spend). The same
    draws as :func:`discrete_laplace` for the same words.
    """
    geo = _geometric_sampler(1 / scale)
    if size <= _FEW:
        return np.array(_discrete_laplace_few(geo, size, source), dtype=np.int64)
    ws = _LaplaceWorkspace(min(size, _BLOCK))
    if size <= _BLOCK:
        return _discrete_laplace_into(geo, size, source, ws)
    return _blocked(lambda k: _discrete_laplace_into(geo, k, source, ws), size)


def discrete_laplace_blocks(scale: Fraction, size: int, source: BitSource) -> Iterator[np.ndarray]:
    """:func:`draw_discrete_laplace` block by block: the arrays yielded, concatenated, are
    its draws (the same words in the same requests), so a caller can use each block (add
    it to its values, write it out) while it is in cache and never hold all the draws at
    once. A yielded array may be overwritten by the next one: use it before asking for
    more."""
    geo = _geometric_sampler(1 / scale)
    if size <= _FEW:
        yield np.array(_discrete_laplace_few(geo, size, source), dtype=np.int64)
        return
    ws = _LaplaceWorkspace(min(size, _BLOCK))
    for start in range(0, size, _BLOCK):
        yield _discrete_laplace_into(geo, min(_BLOCK, size - start), source, ws)


#: the kernel's former private name (the samplers' own tests use it)
_discrete_laplace = draw_discrete_laplace


def discrete_laplace(scale: Any, size: int, rng: Any = None) -> np.ndarray:
    """Exact discrete Laplace draws: ``P[Z = z]`` proportional to ``exp(-|z| / scale)``.

    A geometric magnitude with a fair sign, rejecting "negative zero" (Canonne, Kamath and
    Steinke 2020, Algorithm 2). ``scale`` is rational (a float is taken exactly),
    ``0 < scale <= 2**50``.

    Examples
    --------
    >>> discrete_laplace(3, 6, rng=7)
    array([-2, -8,  0,  1, -5,  6])
    """
    sf = _rational("discrete_laplace", "scale", scale)
    if sf > _MAX_SCALE:
        raise ParameterError(f"discrete_laplace: `scale` must be <= 2**50; got {scale!r}")
    return _discrete_laplace(sf, _size("discrete_laplace", size), as_source(rng))


# ----------------------------------------------------------------------------- Gaussian


class _GaussAcceptance:
    """Exact 64-bit prefixes of A(y) = exp(-(y - c)**2 / (2 s2)) for y = 0..Y-1.

    Computed by a fixed-point recurrence with ``F = 2**128``: ``A(y+1) = A(y) * m(y)``,
    ``m(y+1) = m(y) * a`` with ``a = exp(-1/s2)``, ``m(0) = exp((2c - 1) / (2 s2))``. Each
    step truncates, so the fixed-point errors grow at most quadratically in ``y`` (bounded
    below by ``E(y) = 64 (y + 1)**2`` units, far above the true growth since every factor is
    at most ``exp(1/t) * exp(c/s2) < 3``); an entry whose bits 64..128 lie within ``E(y)`` of
    a carry is recomputed exactly with :mod:`decimal`. The table stops where
    ``A(y) < 2**-66``; beyond it the prefix is 0 and any tie is settled by the deep compare.

    Small sigma (``sigma < 1/2``, where ``m(0) = exp(1 - 1/(2 s2)) < exp(-1)`` and the
    recurrence's start is out of its range): ``A`` falls below ``2**-66`` within
    ``y <= c + sqrt(92 s2) < 6``, so each of those few entries is computed exactly with
    :mod:`decimal` instead (``c = s2 < 1/4`` is never an integer there).
    """

    F_BITS = 128

    def __init__(self, s2: Fraction, t: int) -> None:
        self.s2 = s2
        self.c = s2 / t
        fb = self.F_BITS
        one = 1 << fb

        def fixed(val: ExactReal | DecimalReal) -> int:
            return val.prefix(fb)

        expo = (2 * self.c - 1) / (2 * s2)
        if expo < -1:  # sigma < 1/2: a handful of entries, each exact (class docstring)
            self._small_sigma()
            return
        # a = exp(-1/s2) <= 1; m0 = exp((2c-1)/(2 s2)) may exceed 1: write m0 = m0' * 2**e
        a_fp = fixed(exp_neg(1 / s2))
        # m0 > 1 possible; compute exp(expo) = 2 * exp(expo - ln 2) is awkward, so use decimal
        m0_real = _exp_decimal(expo)
        m_fp = m0_real
        A_fp = fixed(exp_neg(self.c * self.c / (2 * s2)))
        pre: list[int] = []
        ones: list[bool] = []
        cutoff = one >> 66
        y = 0
        c_int = self.c.denominator == 1
        while True:
            margin = 64 * (y + 1) ** 2 + 64
            if c_int and y == self.c.numerator:
                pre.append((1 << 64) - 1)
                ones.append(True)
            else:
                low = A_fp & ((1 << (fb - 64)) - 1)
                if low < margin or low > (1 << (fb - 64)) - margin:
                    pre.append(self._exact_prefix(y))
                else:
                    pre.append(A_fp >> (fb - 64))
                ones.append(False)
            if y > self.c and A_fp + margin < cutoff:
                break
            A_fp = (A_fp * m_fp) >> fb
            m_fp = (m_fp * a_fp) >> fb
            y += 1
            if y > 1 << 24:
                raise InternalError("discrete_gaussian: acceptance table too long")
        self.thresholds = np.array(pre, dtype=np.uint64)
        self.one = np.array(ones, dtype=bool)
        self.size = len(pre)

    def _small_sigma(self) -> None:
        pre: list[int] = []
        y = 0
        while True:
            r = self.real(y)
            pre.append(r.prefix(64))
            if y > self.c and r.prefix(66) == 0:  # A(y) < 2**-66, and A decreases beyond c
                break
            y += 1
            if y > 64:  # pragma: no cover - y <= c + sqrt(92 s2) < 6 here
                raise InternalError("discrete_gaussian: small-sigma table too long")
        self.thresholds = np.array(pre, dtype=np.uint64)
        self.one = np.zeros(len(pre), dtype=bool)
        self.size = len(pre)

    def real(self, y: int) -> ExactReal:
        return exp_neg((y - self.c) ** 2 / (2 * self.s2))

    def _exact_prefix(self, y: int) -> int:
        return self.real(y).prefix(64)

    def accept(self, y: np.ndarray, source: BitSource) -> np.ndarray:
        """Exact Bernoulli(A(y_i)) for nonnegative integers ``y``."""
        w = source.words(y.size)
        inside = y < self.size
        yi = np.where(inside, y, 0).astype(np.intp)
        thr = np.where(inside, self.thresholds[yi], np.uint64(0))
        one = inside & self.one[yi]
        out = (w < thr) | one
        tie = np.flatnonzero((w == thr) & ~one)
        if tie.size:
            out[tie] = less_than_deep([self.real(int(v)) for v in y[tie]], source)
        return out


def _exp_decimal(expo: Fraction) -> int:
    """``floor(2**128 * exp(expo))`` for a small rational ``expo`` (|expo| <= 1)."""
    if abs(expo) > 1:
        raise InternalError("_exp_decimal: exponent out of range")
    num, den = expo.numerator, expo.denominator
    # exp(expo) = 3 * exp(expo - ln 3) is not needed: compute exp(expo)/3 in [0, 1] exactly
    real = DecimalReal(lambda: (Decimal(num) / Decimal(den)).exp() / 3, slack=25)
    return 3 * real.prefix(128) + 2  # round up by the division remainder bound (<3 units)


@lru_cache(maxsize=64)
def _gauss_acceptance(s2: Fraction, t: int) -> _GaussAcceptance:
    return _GaussAcceptance(s2, t)


def _accept_first(
    propose: Callable[[int], np.ndarray],
    accept: Callable[[np.ndarray], np.ndarray],
    size: int,
) -> np.ndarray:
    """Rejection sampling in few rounds: propose ~1.45x what is missing, keep the first hits.

    Accepted proposals are i.i.d. draws from the target, and which of them are kept (the
    first ones in index order) does not depend on their values, so the output is exact. The
    CKS proposal is accepted with probability ~0.76, so one round usually suffices.
    """
    out = np.empty(size, dtype=np.int64)
    filled = 0
    while filled < size:
        need = size - filled
        y = propose(int(need * 1.45) + 16)
        hits = y[accept(y)]
        take = min(hits.size, need)
        out[filled : filled + take] = hits[:take]
        filled += take
    return out


def _discrete_gaussian_block(
    geo: _Geometric, acc: _GaussAcceptance, size: int, source: BitSource
) -> np.ndarray:
    return _accept_first(
        lambda m: _discrete_laplace_block(geo, m, source),
        lambda y: acc.accept(np.abs(y), source),
        size,
    )


def draw_discrete_gaussian(s2: Fraction, size: int, source: BitSource) -> np.ndarray:
    """The kernel of :func:`discrete_gaussian` (variance parameter ``s2``, a Fraction in
    ``(0, 2**56]``) for a caller that checked its arguments, as :func:`draw_discrete_laplace`:
    the same draws as :func:`discrete_gaussian` with ``sigma2=s2`` for the same words."""
    if s2 >= _ENVELOPE_MIN_S2:
        return _envelope_sampler(s2).sample(size, source)
    t = math.isqrt(s2.numerator // s2.denominator) + 1  # floor(sigma) + 1
    acc = _gauss_acceptance(s2, t)
    geo = _geometric_sampler(Fraction(1, t))
    return _blocked(lambda k: _discrete_gaussian_block(geo, acc, k, source), size, _GAUSS_BLOCK)


def discrete_gaussian_blocks(s2: Fraction, size: int, source: BitSource) -> Iterator[np.ndarray]:
    """:func:`draw_discrete_gaussian` block by block (as :func:`discrete_laplace_blocks`:
    the blocks concatenated are its draws; use each before asking for the next)."""
    if s2 >= _ENVELOPE_MIN_S2:
        yield from _envelope_sampler(s2).blocks(size, source)
        return
    t = math.isqrt(s2.numerator // s2.denominator) + 1  # floor(sigma) + 1
    acc = _gauss_acceptance(s2, t)
    geo = _geometric_sampler(Fraction(1, t))
    if size <= _GAUSS_BLOCK:
        yield _discrete_gaussian_block(geo, acc, size, source)
        return
    for start in range(0, size, _GAUSS_BLOCK):
        yield _discrete_gaussian_block(geo, acc, min(_GAUSS_BLOCK, size - start), source)


_discrete_gaussian = draw_discrete_gaussian


@lru_cache(maxsize=64)
def _envelope_sampler(s2: Fraction) -> EnvelopeGaussian:
    return EnvelopeGaussian(s2)


def discrete_gaussian(sigma: Any, size: int, rng: Any = None, *, sigma2: Any = None) -> np.ndarray:
    """Exact discrete Gaussian draws: ``P[Z = z]`` proportional to ``exp(-z**2 / (2 sigma**2))``.

    For ``sigma**2 >= 2**10`` the sampler is rejection from a piecewise-uniform envelope
    with a certified floating-point acceptance test settled exactly when undecided
    (:mod:`dpkit.samplers._gaussian`: two table lookups and about 1.05 random words per
    draw, built in O(1) per sigma). Below that it is Canonne, Kamath and Steinke (2020),
    Algorithm 3: a discrete Laplace proposal with scale ``t = floor(sigma) + 1`` accepted
    with probability ``exp(-(|y| - sigma**2/t)**2 / (2 sigma**2))``, an exact table lookup
    (see ``_GaussAcceptance``). Both are exact. Pass ``sigma2`` (a rational variance)
    instead of ``sigma`` to give the variance exactly; ``sigma`` must be at most ``2**20``.

    Examples
    --------
    >>> discrete_gaussian(2.0, 6, rng=5)
    array([ 3, -3, -4,  3,  0,  0])
    """
    if sigma2 is None:
        sf = _rational("discrete_gaussian", "sigma", sigma)
        s2 = sf * sf
    else:
        s2 = _rational("discrete_gaussian", "sigma2", sigma2)
    if s2 > Fraction(2**40):
        name = "sigma" if sigma2 is None else "sigma2"
        raise ParameterError(
            f"discrete_gaussian: `{name}` must be at most 2**20 (sigma2 at most 2**40); got "
            f"{describe(sigma2 if sigma2 is not None else sigma)}"
        )
    return _discrete_gaussian(s2, _size("discrete_gaussian", size), as_source(rng))


def discrete_gaussian_tc(t: int, c: int, size: int, rng: Any = None) -> np.ndarray:
    """Exact discrete Gaussian with variance parameter ``sigma**2 = t * c`` (integers).

    The same sampler as :func:`discrete_gaussian` with ``sigma2 = t * c``; kept for the
    Gaussian mechanisms, which round the variance up to this form (``t * c <= 2**56``).
    """
    if t < 1 or c < 1:
        raise ParameterError(f"discrete_gaussian_tc: t and c must be >= 1; got {t}, {c}")
    if t * c > 2**56 or t > 2**40:
        raise ParameterError("discrete_gaussian_tc: sigma too large (sigma**2 must be <= 2**56)")
    return _discrete_gaussian(Fraction(t * c), size, as_source(rng))


#: sigma**2 from which the envelope sampler (:mod:`dpkit.samplers._gaussian`) is used; below
#: it the CKS proposal with the O(sigma) exact acceptance table is cheap and faster to build
_ENVELOPE_MIN_S2 = 2**10
