"""Exact discrete Gaussian for large sigma: a binned envelope and a certified float test.

Target: ``P[Y = y]`` proportional to ``f(y) = exp(-x y**2)``, ``x = 1 / (2 sigma**2)``
rational. The sampler is rejection from a piecewise-uniform envelope whose pieces are chosen
by one table lookup: a proposal costs one 64-bit word and about fifteen NumPy operations
(a second word for the ~3% not settled at once), and about 98.5% of proposals are accepted.

Proposal
--------
Magnitudes ``m >= 0`` are cut into ``J`` bins ``[j w, (j + 1) w)`` of width ``w = 2**b``
(``sigma/64 < w <= sigma/32``) up to ``R = J w`` (about 6.5 sigma), plus a *tail* piece
beyond ``R``. Word A is split into independent fields: bits 0..15 pick a category ``j`` (a
bin, the tail, or "reject") through a guide table holding ``n_j`` copies of ``j``
(``sum n_j = 2**16``, so ``P[j] = n_j / 2**16`` exactly); bits 16..16+b-1 are the offset
of ``m`` in its bin (``b <= 23``); bits 39..62 are the first 24 bits of the acceptance
uniform ``U``; bit 63 is the sign. The proposal is ``y = m`` for sign 0 and
``y = -(m + 1)`` (``~m``) for sign 1, so every integer has exactly one way to be proposed
and ``|y|`` lies in ``[j w, (j + 1) w]``; its probability is ``n_j / (2**17 w)``.

Acceptance
----------
``y`` from bin ``j`` is accepted with probability ``p = f(y) 2**64 / (D n_j)``, ``D`` an
integer fixed at construction, so accepted values have probability proportional to
``f(y) 2**64 / (2**17 w D)``: exactly the target. ``n_j = floor(Q_j / D) + 1`` with
``Q_j >= 2**64 f(j w)`` (an exact 64-bit prefix plus one), which makes ``p <= 1``; ``D`` is
the smallest integer for which the counts fit in ``2**16``, and the leftover units go to the
"reject" category. The tail piece is ``m = R + k L + u`` with ``k`` geometric(1/2)
(leading zero bits of a word), ``u`` uniform on ``[0, L)``, ``L`` a power of two with
``R L >= ln(2) sigma**2`` so that ``f(R + k L) <= f(R) 2**-k``; it is accepted with
``p = f(y) 2**(k+1) L 2**64 / (w D n_t)``, again ``<= 1`` by the choice of ``n_t``.

Deciding ``U < p``
------------------
1. *Squeeze*: ``lo_j = floor(2**64 P_{j+1} / (D n_j))`` with ``P_{j+1} = floor(2**64
   f((j + 1) w))`` is at most ``2**64 p`` for every ``y`` of bin ``j``. If the first 24
   bits ``U24`` of ``U`` satisfy ``U24 < floor(lo_j / 2**40)``, then
   ``U < (U24 + 1) 2**-24 <= lo_j 2**-64 <= p``: accept (about 97% of proposals stop
   here). The others draw 40 more bits of ``U``, giving its first 64 bits ``W``.
2. *Certified float*: ``p = beta_j exp(-E)`` with ``beta_j = f(j w) 2**64 / (D n_j)`` and
   ``E = x k``, ``k = |y|**2 - (j w)**2`` in ``[0, (2 J - 1) w**2]``, so
   ``E <= E_max ~ 0.2`` (``E_max <= 1`` is checked). Write ``u = 2**-53``; only correctly
   rounded ``+ - *`` are used, never the float library's ``exp``/``log``:

   * ``E~ = fl(fl(k) fl(x))`` has ``|E~ - E| <= 3.01 u E``, and ``exp(-.)`` is
     1-Lipschitz on ``[0, inf)``: error ``<= 3.01 u``;
   * the degree-``N`` Taylor polynomial of ``exp(-z)``, ``N`` chosen so that
     ``E_max**(N+1) / (N+1)! <= 2**-60`` (``N <= 24`` is checked), differs from
     ``exp(-z)`` by at most ``2**-59`` at ``E~`` (Lagrange remainder), and Horner's rule
     with coefficients rounded to doubles evaluates it within ``(2N + 2) e u`` (Higham,
     *Accuracy and Stability of Numerical Algorithms*, 5.1: ``gamma_2N sum |a_i| z**i``,
     with ``sum |a_i| z**i <= e``);
   * ``beta_j~`` is ``beta_j`` computed to 40 decimal digits and rounded to the nearest
     double (``float(Decimal)`` is correctly rounded): relative error ``<= u + 1e-37``;
   * ``p~ = fl(beta_j~ poly~)``: altogether ``|p~ - p| <= ((2N + 2) e + 6) u < 2**-45 =
     eps``.

   ``u~ = (W >> 11) 2**-53`` is exact and ``U`` lies in ``[u~, u~ + u)``. With
   ``d~ = fl(p~ - u~)`` (relative error ``<= u``) and ``eta = 2 (eps + u)``:
   ``d~ >= eta`` gives ``p - U > p~ - eps - u~ - u >= 0`` (accept), and ``d~ <= -eta``
   gives ``U >= u~ >= p~ + eps >= p`` (reject).
3. *Exact*: the rest (``|d~| < eta``, probability about ``2**-43`` per float test) compare
   ``W`` with the exact 64-bit prefix of ``p`` from :mod:`decimal` and, on a tie, deeper
   bits (:func:`~dpkit.samplers._exact.less_than_deep`). Tail proposals (probability
   ``n_t / 2**16``, about ``2**-16``) are rejected at once when ``W`` is above a precomputed
   bound on their ``p``, and decided exactly otherwise.

Values with ``|y| >= 2**62`` cannot be returned in int64; tail proposals that large are
rejected. Their target probability is below ``exp(-2**124 x)``, i.e. below ``2**-(2**60)``
for every sigma allowed here, so no representable outcome changes probability by more.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np

from dpkit.errors import InternalError
from dpkit.samplers._exact import (
    DecimalReal,
    ExactReal,
    RationalReal,
    exp_neg,
    less_than_deep,
)
from dpkit.samplers._source import BitSource

_K = 16  # category bits: the guide table has 2**16 entries
_U = 2.0**-53
_EPS = 2.0**-45  # certified bound on |p~ - p| (see the module docstring)
_MAX_DEGREE = 24
_LN2_UP = Fraction(6931471805599454, 10**16)  # > ln 2 = 0.693147180559945309...
_MAX_Y = 1 << 62
_LOW63 = (1 << 63) - 1
_MASK24 = (1 << 24) - 1
_BLOCK = 1 << 15  # proposals per block


def _sigma_floor(s2: Fraction) -> int:
    return math.isqrt(s2.numerator // s2.denominator)


class EnvelopeGaussian:
    """Exact sampler of ``P[Y = y]`` proportional to ``exp(-y**2 / (2 s2))``, built once per s2.

    Needs ``s2 >= 2**10`` (so ``E_max <= 1``) and ``s2 <= 2**56`` (so squares fit in int64).
    The keyword arguments are for tests: ``tail_sigmas`` moves the tail start ``R`` (a small
    value sends many proposals through the tail), ``squeeze=False`` disables step 1 and
    ``eps`` overrides the float bound (``eps=1`` sends every bin proposal to step 3).
    """

    def __init__(
        self,
        s2: Fraction,
        *,
        tail_sigmas: Fraction = Fraction(13, 2),
        squeeze: bool = True,
        eps: float = _EPS,
    ) -> None:
        if not Fraction(2**10) <= s2 <= Fraction(2**56):
            raise InternalError(f"EnvelopeGaussian: s2 = {float(s2)} outside [2**10, 2**56]")
        self.s2 = s2
        self.x = x = 1 / (2 * s2)
        sig = _sigma_floor(s2)
        w = 1 << max(0, (sig // 32).bit_length() - 1)  # power of two, sigma/64 < w <= sigma/32
        self.w, self.b = w, w.bit_length() - 1
        if _K + self.b > 39:  # the offset field must end below U24 (bits 39..62)
            raise InternalError("EnvelopeGaussian: bin width needs too many bits")
        big_j = max(1, math.ceil(tail_sigmas * math.isqrt(s2.numerator // s2.denominator + 1) / w))
        self.J = big_j
        self.R = r_start = big_j * w
        if r_start * r_start >= 1 << 62:  # |y|**2 and (j w)**2 must fit in int64
            raise InternalError("EnvelopeGaussian: bins reach too far for int64 squares")
        # L: the smallest power of two with R L >= ln(2) s2
        ell = 1
        while r_start * ell < _LN2_UP * s2:
            ell *= 2
        self.L = ell
        # exact 64-bit prefixes of f(j w), j = 0..J (f(0) = 1 exactly)
        reals = [exp_neg(x * (j * w) ** 2) for j in range(big_j + 1)]
        pre = [r.prefix(64) for r in reals]
        upper = [p + 1 for p in pre]  # Q_j >= 2**64 f(j w)
        upper[0] = 1 << 64

        def counts(d: int) -> tuple[list[int], int]:
            n = [q // d + 1 for q in upper[:big_j]]
            return n, (2 * upper[big_j] * ell) // (w * d) + 1

        total = 1 << _K
        lo_d, hi_d = 1, 1 << 64  # counts(hi_d) always fit: every n_j <= 2 at D = 2**64
        if sum(counts(hi_d)[0]) + counts(hi_d)[1] > total:
            raise InternalError("EnvelopeGaussian: too many bins for the guide table")
        while lo_d < hi_d:
            mid = (lo_d + hi_d) // 2
            n, nt = counts(mid)
            if sum(n) + nt <= total:
                hi_d = mid
            else:
                lo_d = mid + 1
        self.D = dd = hi_d
        n_bins, n_tail = counts(dd)
        self.n = n_bins
        self.n_tail = n_tail
        n_reject = total - sum(n_bins) - n_tail
        cat = np.repeat(np.arange(big_j + 2), [*n_bins, n_tail, n_reject])
        self.guide = cat.astype(np.int16)
        self.acceptance = (
            float(s2) ** 0.5 * math.sqrt(2 * math.pi) * 2.0**64 / (dd * 2.0 ** (_K + 1) * w)
        )
        # per-category tables (bins 0..J-1, then tail J and reject J+1)
        self.base = np.zeros(big_j + 2, dtype=np.int64)
        self.base[:big_j] = np.arange(big_j, dtype=np.int64) * w
        lo = [0] * (big_j + 2)
        if squeeze:
            for j in range(big_j):
                lo[j] = (pre[j + 1] << 64) // (dd * n_bins[j])
        # squeeze thresholds on the first 24 bits of U, placed at bits 39..62 like U24
        self.lo_sh = np.array([(v >> 40) << 39 for v in lo], dtype=np.int64)
        self.scale = [Fraction(1 << 64, dd * nj) for nj in n_bins]  # p = f(y) * scale_j
        beta = []
        with localcontext() as ctx:
            ctx.prec = 40
            for j in range(big_j):
                e = x * (j * w) ** 2
                v = (-Decimal(e.numerator) / Decimal(e.denominator)).exp()
                beta.append(float(v * Decimal(1 << 64) / Decimal(dd * n_bins[j])))
        self.beta = np.array([*beta, 0.0, 0.0], dtype=np.float64)
        self.xf = float(x)
        e_max = x * (2 * big_j - 1) * w * w
        if e_max > 1:
            raise InternalError(f"EnvelopeGaussian: E_max = {float(e_max)} > 1")
        deg = 1
        while e_max ** (deg + 1) / math.factorial(deg + 1) > Fraction(1, 2**60):
            deg += 1
        if deg > _MAX_DEGREE:  # pragma: no cover - E_max <= 1 needs at most 19
            raise InternalError("EnvelopeGaussian: polynomial degree too high")
        self.coef = [float(Fraction((-1) ** i, math.factorial(i))) for i in range(deg, -1, -1)]
        self.eta = 2 * (eps + _U)
        # tail: p <= beta_t = 2 f(R) L 2**64 / (w D n_t); words >= hi_t reject at once
        beta_t_num = 2 * upper[big_j] * ell << 64
        beta_t_den = w * dd * n_tail
        self.tail_hi = -(-beta_t_num // beta_t_den)  # ceil; may exceed 2**64 - 1

    # ------------------------------------------------------------------ exact helpers

    def _real(self, y: int, factor: Fraction) -> ExactReal:
        """``exp(-x y**2) * factor`` (known to be <= 1) as an exact real."""
        if y == 0:
            return RationalReal(factor)
        e = self.x * y * y
        en, ed, fn, fd = e.numerator, e.denominator, factor.numerator, factor.denominator
        # no cancellation: the exponent's relative rounding error 10**-prec reaches the result
        # as an absolute error of about e * p * 10**-prec, and e * p < 100 for every proposal
        # (e <= 21 in the bins; in the tail p falls like 2**-k while e grows like k**2)
        return DecimalReal(
            lambda: (-Decimal(en) / Decimal(ed)).exp() * Decimal(fn) / Decimal(fd), slack=25
        )

    @staticmethod
    def _compare(reals: list[ExactReal], words: np.ndarray, source: BitSource) -> np.ndarray:
        """Exact ``U_i < p_i`` given the first 64 bits ``words`` of each ``U_i``."""
        out = np.zeros(len(reals), dtype=bool)
        tie = []
        for i, (r, wv) in enumerate(zip(reals, words.tolist(), strict=True)):
            pre = (1 << 64) if r.is_one() else r.prefix(64)
            if wv < pre:
                out[i] = True
            elif wv == pre:
                tie.append(i)
        if tie:
            out[tie] = less_than_deep([reals[i] for i in tie], source)
        return out

    # ------------------------------------------------------------------ sampling

    def _float_test(
        self, y: np.ndarray, j: np.ndarray, wb: np.ndarray, source: BitSource
    ) -> np.ndarray:
        """Decide ``U < p`` for bin proposals by the certified float test, then exactly."""
        mag = np.abs(y)
        b = self.base[j]
        k = mag * mag - b * b
        e = k.astype(np.float64) * self.xf
        poly = np.full(e.shape, self.coef[0])
        for a in self.coef[1:]:
            poly *= e
            poly += a
        poly *= self.beta[j]
        u = (wb >> np.uint64(11)).astype(np.float64) * _U
        poly -= u
        out = poly >= self.eta
        open_ = np.flatnonzero(np.abs(poly) < self.eta)
        if open_.size:
            reals = [
                self._real(int(yv), self.scale[int(jv)])
                for yv, jv in zip(y[open_].tolist(), j[open_].tolist(), strict=True)
            ]
            out[open_] = self._compare(reals, wb[open_], source)
        return out

    def _tail(
        self, signs: np.ndarray, wb: np.ndarray, source: BitSource
    ) -> tuple[np.ndarray, np.ndarray]:
        """Tail proposals: values and acceptance for sign masks ``signs`` and words ``wb``."""
        n = signs.size
        vals = np.zeros(n, dtype=np.int64)
        ok = np.zeros(n, dtype=bool)
        if self.tail_hi < 1 << 64:
            live = np.flatnonzero(wb < np.uint64(self.tail_hi))
        else:
            live = np.arange(n)
        if live.size == 0:
            return vals, ok
        # k: leading zero bits of fresh words (geometric(1/2)); u: top log2(L) bits
        ks = np.zeros(live.size, dtype=np.int64)
        todo = np.arange(live.size)
        while todo.size:
            v = source.words(todo.size)
            hi = v >> np.uint64(11)
            f = np.where(hi > 0, hi, v).astype(np.float64)  # exact: both below 2**53
            top = np.frexp(f)[1].astype(np.int64) - 1 + np.where(hi > 0, 11, 0)
            zero = v == 0
            ks[todo[~zero]] += 63 - top[~zero]
            ks[todo[zero]] += 64
            todo = todo[zero]
        lbits = self.L.bit_length() - 1
        offs = source.words(live.size) >> np.uint64(64 - lbits) if lbits else None
        reals: list[ExactReal] = []
        keep = []
        for i, (kv, sv) in enumerate(zip(ks.tolist(), signs[live].tolist(), strict=True)):
            u = int(offs[i]) if offs is not None else 0
            m = self.R + kv * self.L + u
            if m >= _MAX_Y:  # unrepresentable; probability below 2**-(2**60) (module doc)
                continue
            y = ~m if sv else m
            factor = Fraction((1 << (kv + 1)) * self.L << 64, self.w * self.D * self.n_tail)
            reals.append(self._real(y, factor))
            keep.append(i)
            vals[live[i]] = y
        if keep:
            idx = live[np.array(keep, dtype=np.intp)]
            ok[idx] = self._compare(reals, wb[idx], source)
        return vals, ok

    def _fill(self, n: int, ws: _Workspace, dst: np.ndarray, source: BitSource) -> int:
        """Make ``n`` proposals and write accepted ones to ``dst``; return how many.

        The proposals are i.i.d. and so are the pairs (value, accepted?); given the accept
        flags of a block, the accepted values are independent draws from the target. Where
        each accepted value goes (rejections leave holes, filled with the accepted
        proposals from the end of the block; at most ``dst.size`` are kept) depends on the
        flags only, never on the values, so the output is i.i.d. exact.
        """
        wa = source.words(n).view(np.int64)
        direct = dst.size >= n  # work in place in the output when the whole block fits
        y = dst[:n] if direct else ws.y[:n]
        idx, j, tmp, flag = ws.idx[:n], ws.j[:n], ws.tmp[:n], ws.flag[:n]
        np.bitwise_and(wa, (1 << _K) - 1, out=idx)
        np.take(self.guide, idx, out=j, mode="clip")
        np.right_shift(wa, _K, out=y)
        np.bitwise_and(y, self.w - 1, out=y)
        np.left_shift(j, self.b, out=tmp, dtype=np.int64)  # j w (meaningless for tail/reject)
        y += tmp
        np.right_shift(wa, 63, out=tmp)  # sign mask: all ones for sign 1
        y ^= tmp  # m, or ~m = -(m + 1)
        # squeeze on the first 24 bits of U (bits 39..62): accept when U24 < lo_j >> 40
        np.bitwise_and(wa, _LOW63, out=idx)
        np.take(self.lo_sh, j, out=tmp, mode="clip")
        np.greater_equal(idx, tmp, out=flag)
        rest = np.flatnonzero(flag)
        count = n
        if rest.size:
            war = wa[rest].view(np.uint64)
            # the first 64 bits of U: its 24 bits from word A, then 40 fresh ones
            w64 = ((war >> np.uint64(39)) & np.uint64(_MASK24)) << np.uint64(40)
            w64 |= source.words(rest.size) >> np.uint64(24)
            jr = j[rest]
            ok = np.zeros(rest.size, dtype=bool)
            inbin = np.flatnonzero(jr < self.J)
            if inbin.size:
                ok[inbin] = self._float_test(y[rest[inbin]], jr[inbin], w64[inbin], source)
            intail = np.flatnonzero(jr == self.J)
            if intail.size:
                vals, tail_ok = self._tail(war[intail].view(np.int64) >> 63, w64[intail], source)
                y[rest[intail]] = vals
                ok[intail] = tail_ok
            rejected = rest[~ok]
            count = n - rejected.size
            holes = rejected[rejected < count]
            if holes.size:  # as many accepted proposals sit at positions >= count
                movers = np.ones(n - count, dtype=bool)
                movers[rejected[rejected >= count] - count] = False
                y[holes] = y[count:][movers]
        count = min(count, dst.size)
        if not direct:
            dst[:count] = y[:count]
        return count

    def blocks(self, size: int, source: BitSource) -> Iterator[np.ndarray]:
        """:meth:`sample` block by block: the same proposals from the same words, the
        accepted values of each block yielded in order (a view of one buffer, overwritten by
        the next block), so that the blocks concatenated are :meth:`sample`'s draws.

        Each block's accepted values are kept up to what is still needed, as :meth:`sample`
        keeps them up to the room left in its output."""
        ws = _Workspace(min(_BLOCK, int(size / self.acceptance + 4 * math.sqrt(size)) + 16))
        buf = np.empty(ws.y.size, dtype=np.int64)
        filled = 0
        while filled < size:
            need = size - filled
            n = min(_BLOCK, int(need / self.acceptance + 4 * math.sqrt(need)) + 16)
            count = self._fill(n, ws, buf[: min(n, need)], source)
            filled += count
            yield buf[:count]

    def sample(self, size: int, source: BitSource) -> np.ndarray:
        """``size`` exact draws, made in blocks of at most 2**15 proposals."""
        out = np.empty(size, dtype=np.int64)
        ws = _Workspace(min(_BLOCK, int(size / self.acceptance + 4 * math.sqrt(size)) + 16))
        filled = 0
        while filled < size:
            need = size - filled
            n = min(_BLOCK, int(need / self.acceptance + 4 * math.sqrt(need)) + 16)
            filled += self._fill(n, ws, out[filled:], source)
        return out


class _Workspace:
    """Buffers reused by every block of one call (fresh large temporaries page-fault)."""

    def __init__(self, n: int) -> None:
        self.idx = np.empty(n, dtype=np.int64)
        self.j = np.empty(n, dtype=np.int16)
        self.y = np.empty(n, dtype=np.int64)
        self.tmp = np.empty(n, dtype=np.int64)
        self.flag = np.empty(n, dtype=bool)
