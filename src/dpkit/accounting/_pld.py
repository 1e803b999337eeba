"""Composition of privacy-loss distributions by FFT, with every error charged to ``delta``.

:func:`compose_pld` discretises each distinct event on one grid ``h Z`` by connecting the dots
(:mod:`dpkit.accounting._losses`), composes all of them at once in Fourier space (each
event's spectrum raised to its count by repeated squaring, then multiplied), and answers
``delta(e)`` and ``epsilon(delta)`` with certified upper and lower bounds, in both orders of
the neighbouring pair.

The upper bound adds, to the ``delta`` of the composed grid distribution:

* the truncated tails of each event (upper tails at ``+infinity``, lower tails lumped up);
* the mass outside the FFT window, bounded by Chernoff's inequality on the composed grid
  distribution (a circular convolution folds it into the window, where it only adds);
* the floating-point error of the masses (relative and absolute budgets per event) and of
  the FFT (per-frequency error ``8 log2(N) u ||p||_1`` of each spectrum, propagated through
  the powers, plus the inverse transform's);

so nothing is rounded in the caller's favour. The lower bound reads connect-the-dots as a
randomized rounding of each loss with an upward bias of at most ``b(h) ~ h**2/8`` per event:
with probability ``1 - eta`` (Bernstein) the composed grid loss exceeds the true one by at
most ``t = K b(h) + t_eta``, so ``delta(e) >= delta_grid(e + t) - eta - P[truncation]``.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from dpkit.accounting._losses import Model, Pmf, discretize, max_bias, models
from dpkit.accounting.events import Event

__all__ = ["Composed", "compose_pld", "grid_step"]

_U = 2.0**-53
#: Largest FFT length (doubles); beyond, the window is clipped and its tails charged.
N_MAX = 2**23
#: Target mass left outside the FFT window (charged to delta, whatever it is).
_ALIAS = 1e-18
_LAMBDAS = np.geomspace(1e-3, 1e2, 24)
_ETAS = (1e-1, 1e-2, 1e-3, 1e-4)


@dataclass(frozen=True)
class Composed:
    """The composed grid PLD of one order of the neighbouring pair, with its error terms."""

    h: float
    start: int  # q[i] is the mass at loss (start + i) h
    q: np.ndarray = field(repr=False)
    inf: float  # mass at +infinity (events' own plus truncated tails), rounded up
    outside: float  # Chernoff bound on the mass outside the window, times (1 + rel)
    fft: float  # l1 bound of the FFT's floating-point error
    rel: float  # relative error factor of the masses: true <= (1 + rel) computed + absolute
    absolute: float
    bias: float  # largest total upward bias of the rounding
    var: float  # total rounding variance, in units of h**2
    trunc: float  # probability that some event's tail was truncated
    _suffix: list[tuple[np.ndarray, np.ndarray] | None] = field(
        default_factory=lambda: [None], repr=False, compare=False
    )

    def _g(self, e: float) -> float:
        """``sum_{l > e} q_l (1 - e^(e - l))``, with its summation error bound added."""
        i0 = max(0, math.floor(e / self.h) - self.start)
        if i0 >= self.q.size:
            return 0.0
        tail = self.q[i0:]
        loss = (self.start + i0 + np.arange(tail.size)) * self.h
        w = -np.expm1(np.minimum(e - loss, 0.0))
        total = float(np.sum(tail * w))
        return total * (1.0 + (8 + 2 * math.log2(tail.size + 1)) * _U)

    def _extra_upper(self) -> float:
        return self.fft + self.outside

    def delta_upper(self, e: float) -> float:
        """An upper bound on ``delta(e)`` of the composition."""
        value = self.inf + (1.0 + self.rel) * (self._g(e) + self._extra_upper()) + self.absolute
        return min(1.0, value * (1 + 4 * _U))

    def epsilon_upper(self, delta: float) -> float:
        """The smallest ``e >= 0`` found with :meth:`delta_upper` ``(e) <= delta``."""
        g = (delta * (1 - 4 * _U) - self.inf - self.absolute) / (1.0 + self.rel)
        g -= self._extra_upper()
        if g <= 0:
            return math.inf
        if self._g(0.0) <= g:
            return 0.0
        e = self._root(g)
        for _ in range(64):
            if self.delta_upper(e) <= delta:
                return e
            e = e + max(abs(e), self.h) * 2.0**-40
        return math.inf  # pragma: no cover - the root is within a few ulps

    def epsilon_lower(self, delta: float) -> float:
        """A certified lower bound on the epsilon of the composed (undiscretised) pairs."""
        best = 0.0
        bad = self.trunc + self.absolute
        keep = (1.0 - self.rel) if self.rel < 1 else 0.0
        if keep <= 0:
            return 0.0
        inf_low = self.inf * (1 - 1e-9) - 8 * _U  # the mass at +inf is stored rounded up
        for eta in _ETAS:
            eta = eta * delta
            g = (delta - inf_low + bad + eta) / keep + self.fft + self.outside
            if g < 0:  # the mass at +infinity alone exceeds delta: no finite epsilon
                return math.inf
            if g >= self._g(self._lowest()):
                continue
            root = self._root(g)
            # G is continuous and decreasing: step below the root until G exceeds g
            step = max(abs(root), self.h) * 2.0**-40
            while root > self._lowest() and self._g(root) <= g:
                root -= step
                step *= 4.0
            # Bernstein: the centred roundings are independent, within +-h, of total variance
            # var h^2 (none at all when every mass sits on the grid)
            big = math.log(1.0 / eta)
            t = self.h * big / 3.0 if self.var > 0 else 0.0
            t += math.sqrt(t * t + 2.0 * self.var * self.h * self.h * big)
            best = max(best, root - self.bias - t)
        return max(0.0, best * (1 - 4 * _U) if best > 0 else best)

    def _lowest(self) -> float:
        return (self.start - 1) * self.h

    def _root(self, g: float) -> float:
        """``e`` with ``G(e) = g`` for ``0 < g < G(lowest)``: bracket on the grid from suffix
        sums, then solve inside the cell, where ``G(e) = A - e^(e - l_J) B``."""
        q, h = self.q, self.h
        cache = self._suffix[0]
        if cache is None:
            mass = np.cumsum(q[::-1])[::-1]  # A_J = sum_{r >= J} q_r
            span = q.size * h
            if span <= 600.0:
                scaled = q * np.exp(-np.arange(q.size) * h)
                weight = np.cumsum(scaled[::-1])[::-1] * np.exp(np.arange(q.size) * h)
            else:
                weight = np.zeros_like(mass)  # no bracket: bisection below
            cache = (mass, weight)
            self._suffix[0] = cache
        mass, weight = cache
        # G at grid point l_J = sum_{r > J} q_r (1 - e^{-(r - J) h}) = A_{J+1} - e^{-h} W_{J+1}
        if weight.any():
            g_grid = np.empty(q.size)
            g_grid[:-1] = mass[1:] - math.exp(-h) * weight[1:]
            g_grid[-1] = 0.0
            below = np.flatnonzero(g_grid <= g)
            j = int(below[0]) if below.size else q.size - 1
            lo = (self.start + j - 1) * h
            hi = (self.start + j) * h
        else:
            lo, hi = self._lowest(), (self.start + q.size) * h
        for _ in range(3):
            if self._g(lo) >= g:
                break
            lo -= h
        top = (self.start + q.size) * h  # G vanishes from here on
        while hi < top and self._g(hi) > g:
            hi = min(hi + h, top)
        i0 = max(0, math.floor(lo / h) - self.start + 1)
        tail = q[i0:]
        loss = (self.start + i0 + np.arange(tail.size)) * h
        if hi - lo <= h * 1.5 and tail.size:
            a = float(np.sum(tail))
            b = float(np.sum(tail * np.exp(lo - loss)))
            if b > 0 and a > g:
                e = lo + math.log((a - g) / b)
                if lo - h <= e <= hi + h:
                    return e
        for _ in range(200):  # bisection fallback
            mid = 0.5 * (lo + hi)
            if mid in (lo, hi):
                break
            if self._g(mid) > g:
                lo = mid
            else:
                hi = mid
        return hi


#: Bounds on the grid step: below 2**-30 the float error of the split (about u / h of each
#: mass) grows past 1e-7; no event may need more than 2**22 cells.
_H_MIN = 2.0**-30
_MAX_CELLS = 2**22


def grid_step(items: tuple[tuple[Event, int], ...], size: int) -> float:
    """The grid step: a power of two giving about ``size`` points over ``+-10`` standard
    deviations of the composed loss (a power of two, so sets of events nest their grids),
    within :data:`_H_MIN` and what keeps every event within :data:`_MAX_CELLS` cells."""
    var = 0.0
    widest = 0.0
    for event, count in items:
        var += count * _variance(event)
        pair = models(event)
        if pair is not None:
            for model in pair:
                lo, hi = model.span()
                widest = max(widest, hi - lo)
    width = 20.0 * math.sqrt(var) if var > 0 else 1.0
    h = 2.0 ** math.floor(math.log2(max(width, 1e-300) / size))
    least = max(_H_MIN, widest / _MAX_CELLS)
    return max(h, 2.0 ** math.ceil(math.log2(least)))


@lru_cache(maxsize=512)
def _variance(event: Event) -> float:
    """The larger variance of the event's loss over both orders (on a local grid)."""
    pair = models(event)
    if pair is None:  # pragma: no cover - callers check first
        return 0.0
    out = 0.0
    for model in pair[:1] if pair[0] is pair[1] else pair:
        lo, hi = model.span()
        # a rough figure is enough (it only sizes the grid): 256 cells
        h = 2.0 ** math.floor(math.log2(max(hi - lo, 1e-300) / 256))
        pmf = discretize(model, h)
        mass = float(np.sum(pmf.p))
        if mass <= 0:
            continue
        loss = pmf.losses
        mean = float(np.sum(pmf.p * loss)) / mass
        out = max(out, float(np.sum(pmf.p * (loss - mean) ** 2)) / mass)
    return out


@lru_cache(maxsize=64)
def _pmf(model: Model, h: float) -> Pmf:
    return discretize(model, h)


def compose_pld(
    items: tuple[tuple[Event, int], ...], delta: float, size: int
) -> tuple[Composed, Composed, bool] | None:
    """The composed PLD of ``items`` in the remove and add orders, and whether every pair is
    tight (attained by its mechanism); ``None`` if some event has no PLD."""
    pairs = []
    tight = True
    for event, count in items:
        m = models(event)
        if m is None:
            return None
        pairs.append((m, count))
        tight &= m[0].tight and m[1].tight
    h = grid_step(items, size)
    out: list[Composed] = []
    for side in (0, 1):
        pmfs = [(_pmf(m[side], h), count) for m, count in pairs]
        if side == 1 and all(m[0] is m[1] for m, _ in pairs):
            out.append(out[0])
            break
        out.append(_compose(pmfs, h, delta, size))
    return out[0], out[1], tight


def _log_mgf(pmf: Pmf, lam: np.ndarray) -> np.ndarray:
    """An upper bound on ``log sum_r p_r e^(lam r)`` for each ``lam`` (index units from the
    PMF's start), all of one sign: the masses are pooled in blocks of at most ``2**11``
    blocks, each at its block's largest index (``lam > 0``) or smallest (``lam < 0``)."""
    p = pmf.p
    block = max(1, -(-p.size // 2**11))
    pad = np.zeros(-(-p.size // block) * block)
    pad[: p.size] = p
    pooled = pad.reshape(-1, block).sum(axis=1)
    with np.errstate(divide="ignore"):
        logp = np.log(pooled)
    r = np.arange(pooled.size, dtype=np.float64) * block
    if lam[0] > 0:
        r = np.minimum(r + (block - 1), p.size - 1)
    expo = logp[None, :] + lam[:, None] * r[None, :]
    top = np.max(expo, axis=1)
    return (top + np.log(np.sum(np.exp(expo - top[:, None]), axis=1))) * (1 + 1e-12) + 1e-12


def _cheapest(pmf: Pmf, delta: float) -> tuple[float, float]:
    """The split of the PMF's float-error bound that costs least at ``delta`` (all valid)."""
    return min(pmf.errors, key=lambda ra: ra[0] * delta + ra[1])


def _merge(a: Pmf, b: Pmf, delta: float) -> Pmf:
    """The exact convolution of two PMFs (an FFT long enough not to fold), with its error.

    If the true masses are within ``(1 + r) p + alpha`` of each computed PMF, the true
    convolution is within ``(1 + r_a)(1 + r_b)`` times the computed one plus
    ``(1 + r)`` times the FFT's l1 error plus the cross terms of the alphas, in l1 at most
    ``(1 + r_a)|a| abs_b + (1 + r_b)|b| abs_a + abs_a abs_b`` (and symmetrically below).
    """
    size = a.p.size + b.p.size - 1
    n = 1 << max(1, (size - 1).bit_length())
    q, err = _fft_compose([(a, 1), (b, 1)], n)
    ra, aa = _cheapest(a, delta)
    rb, ab = _cheapest(b, delta)
    rel = (1 + ra) * (1 + rb) - 1
    ma, mb = float(np.sum(a.p)), float(np.sum(b.p))
    cross = (1 + ra) * ma * ab + (1 + rb) * mb * aa + aa * ab
    return Pmf(
        h=a.h,
        start=a.start + b.start,
        p=q[:size],
        inf=1.0 - (1.0 - a.inf) * (1.0 - b.inf),
        trunc=a.trunc + b.trunc,
        var=a.var + b.var,
        offgrid=a.offgrid + b.offgrid,
        errors=(((rel) * (1 + 1e-12), ((1 + rel) * err + cross) * (1 + 1e-12)),),
    )


def _premerge(pmfs: list[tuple[Pmf, int]], delta: float, limit: int) -> list[tuple[Pmf, int]]:
    """Convolve single releases together, shortest first, while the result stays within
    ``limit`` points: many distinct releases then cost a few long FFTs, not one each."""
    singles = [p for p, k in pmfs if k == 1]
    if len(singles) <= 4:
        return pmfs
    rest = [(p, k) for p, k in pmfs if k != 1]
    heap = [(p.p.size, i, p) for i, p in enumerate(singles)]
    heapq.heapify(heap)
    done: list[Pmf] = []
    count = len(heap)
    while len(heap) >= 2:
        la, _, a = heapq.heappop(heap)
        lb, _, b = heapq.heappop(heap)
        if la + lb - 1 > limit:
            done += [a, b]
            done += [item[2] for item in heap]
            heap = []
            break
        merged = _merge(a, b, delta)
        count += 1
        heapq.heappush(heap, (merged.p.size, count, merged))
    done += [item[2] for item in heap]
    return rest + [(p, 1) for p in done]


def _compose(pmfs: list[tuple[Pmf, int]], h: float, delta: float, size: int) -> Composed:
    pmfs = _premerge(pmfs, delta, size)
    k_total = sum(k for _, k in pmfs)
    j0 = sum(k * p.start for p, k in pmfs)
    span = sum(k * (p.p.size - 1) for p, k in pmfs) + 1
    log_keep = sum(k * math.log1p(-p.inf) for p, k in pmfs if p.inf < 1)
    inf = 1.0 if any(p.inf >= 1 for p, _ in pmfs) else -math.expm1(log_keep)
    inf = min(1.0, inf * (1 + 1e-12) + 4 * _U)
    trunc = sum(k * p.trunc for p, k in pmfs) * (1 + 1e-12)
    # the cheapest split of each event's float-error bound (all are valid)
    # true masses <= (1 + r) p + alpha with sum alpha <= a: the composition's true masses
    # are at most (1 + rel) times the computed ones plus terms holding some alpha, whose
    # total is at most (1 + rel) (prod (1 + a_i / |p_i|)^k_i - 1)
    rel_log, abs_log = 0.0, 0.0
    for p, k in pmfs:
        r, a = _cheapest(p, delta)
        rel_log += k * math.log1p(r)
        abs_log += k * math.log1p(a / max(float(np.sum(p.p)), 1e-300))
    rel = math.expm1(rel_log) * (1 + 1e-9) if rel_log < 700 else math.inf
    absolute = (1.0 + rel) * math.expm1(abs_log) * (1 + 1e-9) if abs_log < 700 else math.inf
    # the window: Chernoff bounds on the composed grid loss (index units from j0), lambda on
    # the scale of the composed loss (per unit of its standard deviation)
    spread = 0.0
    for p, k in pmfs:
        mass = float(np.sum(p.p))
        if mass > 0:
            idx = np.arange(p.p.size, dtype=np.float64)
            mean = float(np.sum(p.p * idx)) / mass
            spread += k * float(np.sum(p.p * (idx - mean) ** 2)) / mass
    lam = _LAMBDAS / max(math.sqrt(spread), 1.0)  # index units
    cgf_up = sum(k * _log_mgf(p, lam) for p, k in pmfs)
    cgf_down = sum(k * _log_mgf(p, -lam) for p, k in pmfs)
    log_tau = math.log(_ALIAS)
    w_hi = min(span - 1, math.ceil(float(np.min((cgf_up - log_tau) / lam))))
    w_lo = max(0, math.floor(float(np.max(-(cgf_down - log_tau) / lam))))
    width = min(max(w_hi - w_lo + 1, 1), span)
    n = min(N_MAX, 1 << max(1, (width - 1).bit_length()))
    if n >= span:  # the whole support fits: nothing folds
        n = 1 << max(1, (span - 1).bit_length())
        w_lo, outside = 0, 0.0
    else:
        w_lo = max(0, min(w_lo - (n - width) // 2, span - n))
        up = float(np.min(cgf_up - lam * (w_lo + n)))  # P[S >= w_lo + n]
        down = float(np.min(cgf_down + lam * (w_lo - 1)))  # P[S <= w_lo - 1]
        outside = (math.exp(min(up, 0.0)) if w_lo + n < span else 0.0) + (
            math.exp(min(down, 0.0)) if w_lo > 0 else 0.0
        )
        outside *= 1.0 + 1e-9
    outside *= 1.0 + rel
    q, fft_err = _fft_compose(pmfs, n)
    q = np.roll(q, -(w_lo % n))
    bias = max_bias(h) * sum(k * p.offgrid for p, k in pmfs)
    var = sum(k * p.var for p, k in pmfs)
    del k_total
    return Composed(
        h=h,
        start=j0 + w_lo,
        q=q,
        inf=inf,
        outside=outside,
        fft=fft_err,
        rel=rel,
        absolute=absolute,
        bias=bias,
        var=var,
        trunc=trunc,
    )


def _fold(p: np.ndarray, n: int) -> np.ndarray:
    if p.size <= n:
        return p
    pad = np.zeros(-(-p.size // n) * n)
    pad[: p.size] = p
    return pad.reshape(-1, n).sum(axis=0)


def _power(z: np.ndarray, k: int) -> np.ndarray:
    result = np.ones_like(z)
    base = z
    while k:
        if k & 1:
            result = result * base
        k >>= 1
        if k:
            base = base * base
    return result


def _fft_compose(pmfs: list[tuple[Pmf, int]], n: int) -> tuple[np.ndarray, float]:
    """Circular convolution of ``p_i^(*k_i)`` on ``n`` points, and an l1 bound on its
    floating-point error.

    Each spectrum entry of a real FFT of length ``n`` is within ``c log2(n) u ||p||_1`` of
    exact (``c = 8``: a few roundings per butterfly stage, twiddles included), so with
    ``U_j = prod (|P_ij| + e_i)^k_i`` the power's error is at most ``U_j - prod |P_ij|^k_i``
    plus ``4 K u U_j`` for the multiplications. The l1 error of the result is at most the l2
    norm of the spectrum's error over the full (Hermitian) spectrum (Parseval, then
    Cauchy-Schwarz), plus the inverse's, ``c log2(n) u ||U||_2``.
    """
    stages = max(1.0, math.log2(n))
    spec = None
    log_upper = np.zeros(n // 2 + 1)
    log_lower = np.zeros(n // 2 + 1)
    k_total = 0
    for p, k in pmfs:
        f = np.fft.rfft(_fold(p.p, n), n)
        e = 8.0 * stages * _U * float(np.sum(p.p))
        mag = np.abs(f)
        with np.errstate(divide="ignore"):
            log_upper += k * np.log(mag + e)
            log_lower += k * np.log(mag)
        powered = _power(f, k)
        spec = powered if spec is None else spec * powered
        k_total += k
    assert spec is not None
    upper = np.exp(log_upper)
    err = upper - np.exp(log_lower) + 4.0 * k_total * _U * upper
    weights = np.full(err.size, 2.0)
    weights[0] = 1.0
    if n % 2 == 0:
        weights[-1] = 1.0
    spec_err = math.sqrt(float(np.sum(weights * err * err)))
    # the inverse's l2 error is within c log2(n) u of the result's l2 norm (Higham 2002,
    # Theorem 24.2), so its l1 error is within c log2(n) u times the spectrum's l2 norm
    inverse_err = 8.0 * stages * _U * math.sqrt(float(np.sum(weights * upper * upper)))
    q = np.fft.irfft(spec, n)
    q = np.maximum(q, 0.0)
    return q, (spec_err + inverse_err) * (1 + 1e-6)
