"""Privacy-loss distributions of the events, and their pessimistic discretisation.

For a pair ``(P, Q)`` of output laws on neighbouring datasets, the privacy loss is
``L = log(dP/dQ)`` with the output drawn from ``P`` (``+infinity`` where ``Q`` has no mass).
Its law (the PLD) gives the privacy profile ``delta(e) = E[(1 - e^(e - L))_+]``, which is
nondecreasing in every value ``L`` takes: moving loss mass up can only raise ``delta``.

:func:`models` gives each event's PLD in both orders of the neighbouring pair (``remove``:
the first dataset holds the extra record; ``add``: the second does), as atoms (a value and
its ``P``-mass), continuous segments (a function giving the ``P``- and ``Q``-mass of the loss
in any interval), an exact mass at ``+infinity``, and the truncation of unbounded tails (the
upper tail sent to ``+infinity``, the lower tail lumped onto the grid above it).

:func:`discretize` puts a PLD on the grid ``h Z`` (``h`` a power of two) by connecting the
dots (Doroshenko, Ghazi, Kamath, Kumar and Manurangsi, PETS 2022): the loss mass in each
cell ``[l_j, l_j + h]`` is split between the two ends so that both its ``P``-mass and its
``Q``-mass are kept. The grid pair's profile then equals the true one at every grid point
and is linear in ``e^e`` between them, where the true profile is convex: it lies above the
true profile everywhere, so the grid pair dominates the event and composes as an upper
bound (Zhu, Dong and Wang 2022, Theorem 10). Seen from ``P``, the split is a randomized
rounding of the loss to a cell end, up with probability
``theta(s) = (1 - e^-s) / (1 - e^-h)`` at distance ``s`` above ``l_j``: its bias is in
``[0, b(h)]`` with ``b(h) ~ h**2 / 8``, which :mod:`dpkit.accounting._pld` uses for a
certified lower bound.

Every mass comes with a bound on its floating-point error; :class:`Pmf` offers several splits
of those bounds into a relative part and an absolute part (:data:`REL_CAPS`), and the
composition carries the cheapest into ``delta``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from dpkit.accounting._special import ndtr, ndtr_diff
from dpkit.accounting.events import (
    Approx,
    Event,
    Exponential,
    Gaussian,
    KeySelection,
    Laplace,
    RandomizedResponse,
    SubsampledGaussian,
    SubsampledLaplace,
    Zcdp,
)

__all__ = ["REL_CAPS", "TAIL", "Model", "Pmf", "discretize", "max_bias", "models"]

#: P-mass allowed in each truncated tail of one event (upper tail to +inf, lower lumped up).
TAIL = 1e-20
_Z = math.sqrt(2.0 * math.log(1.0 / TAIL))  # Phi(-_Z) <= e^(-_Z**2/2) / 2 <= TAIL / 2
_U = 2.0**-53
#: The splits of the error bounds offered to the composition: with cap ``c``, a grid mass whose
#: error bound is at most ``c`` times the mass joins the relative budget, the others the
#: absolute one. Any split is valid; the composition picks, per event, the cheapest.
REL_CAPS = (1e-12, 1e-10, 1e-8, 1e-6, 1e-4)
#: Largest number of lattice atoms enumerated for a discrete Gaussian.
MAX_ATOMS = 2**22

Arrays4 = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]

#: ``masses(l1, l2) -> (a, b, err_a, err_b)``: P- and Q-mass of the loss in ``(l1, l2]`` and
#: bounds on their absolute errors, for arrays of intervals inside a segment.
MassFn = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]


#: ``quad(l1, l2) -> (ok, loss, wf, zz)``: for cells narrow against the density's scale
#: (``ok``), the loss at 8 Gauss-Legendre nodes per cell, the P-mass each node carries
#: (weight times density times Jacobian) and the largest squared standardised argument of
#: the density's exponential (for the error bound).
QuadFn = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]
_GL_T, _GL_W = np.polynomial.legendre.leggauss(8)
#: Cells narrower than this many standard deviations of the density are integrated by
#: quadrature: with 8 nodes the remainder is below 1e-30 of the cell's mass.
_QUAD_WIDTH = 0.05


@dataclass(frozen=True)
class Segment:
    """A continuous part of a PLD: losses in ``[lo, hi]``, masses from ``masses`` and, for
    narrow cells of smooth densities, the split itself by quadrature from ``quad``."""

    lo: float
    hi: float
    masses: MassFn
    quad: QuadFn | None = None


_EMPTY = np.zeros(0)


@dataclass(frozen=True, eq=False)
class Model:
    """One event's PLD in one order of the neighbouring pair (see the module docstring).

    Compared and hashed by identity: :func:`models` makes one per event and order.
    """

    atom_loss: np.ndarray = field(default_factory=lambda: _EMPTY, repr=False)
    atom_mass: np.ndarray = field(default_factory=lambda: _EMPTY, repr=False)
    segments: tuple[Segment, ...] = ()
    inf: float = 0.0
    lumps: tuple[tuple[float, float], ...] = ()  # truncated lower tails: put at ceil(l / h)
    trunc_inf: float = 0.0  # truncated upper tails, sent to +inf
    atom_rel: float = 64 * _U  # relative error of the atom masses
    tight: bool = True  # the pair is attained by the mechanism on some neighbours

    def span(self) -> tuple[float, float]:
        """The smallest and largest finite loss."""
        points = [a for a, _ in self.lumps]
        if self.atom_loss.size:
            points += [float(self.atom_loss.min()), float(self.atom_loss.max())]
        for seg in self.segments:
            points += [seg.lo, seg.hi]
        return min(points), max(points)


def _atoms(*pairs: tuple[float, float]) -> dict[str, Any]:
    """``Model`` keywords for atoms given as ``(loss, P-mass)`` pairs."""
    return {
        "atom_loss": np.array([a for a, _ in pairs], dtype=np.float64),
        "atom_mass": np.array([m for _, m in pairs], dtype=np.float64),
    }


@dataclass(frozen=True)
class Pmf:
    """A PLD on the grid ``h Z``: ``p[i]`` is the P-mass at loss ``(start + i) h``."""

    h: float
    start: int
    p: np.ndarray = field(repr=False)
    inf: float  # P-mass at +infinity (exact mass plus truncated upper tails)
    trunc: float  # P-mass moved by truncation (a failure event of the lower bound)
    var: float  # sum over split mass of theta (1 - theta): rounding variance / h**2
    offgrid: int  # how many of the releases it holds had mass split (bias may be positive)
    errors: tuple[tuple[float, float], ...]  # per cap: (relative bound, absolute l1 bound)

    @property
    def losses(self) -> np.ndarray:
        """The loss of each entry of :attr:`p`."""
        return (self.start + np.arange(self.p.size)) * self.h


def max_bias(h: float) -> float:
    """``max_s theta(s) h - s`` over ``s`` in ``[0, h]``: the largest upward bias of the
    connect-the-dots rounding (about ``h**2 / 8``), rounded up."""
    s = math.log(h / -math.expm1(-h))
    value = h * -math.expm1(-s) / -math.expm1(-h) - s
    return max(value, 0.0) * (1 + 1e-6) + 4 * _U * h


# --- the events' PLDs ----------------------------------------------------------------------


def _exp_segment(lo: float, hi: float, shift: float, scale: float) -> Segment:
    """Density ``e^((l - shift)/2) / scale`` on ``[lo, hi]`` (Laplace, bounded range)."""

    def masses(l1: np.ndarray, l2: np.ndarray) -> Arrays4:
        grow = np.expm1((l2 - l1) / 2.0)
        a = 2.0 * np.exp((l1 - shift) / 2.0) * grow / scale
        b = 2.0 * np.exp((-l2 - shift) / 2.0) * grow / scale
        return a, b, 16 * _U * a, 16 * _U * b

    return Segment(lo, hi, masses)


def _laplace(eps: float) -> Model:
    # P = Lap(0, b), Q = Lap(Delta, b): L = eps for x <= 0, -eps for x >= Delta, and
    # (Delta - 2x)/b in between, whose density is e^((l - eps)/2) / 4 on (-eps, eps)
    return Model(
        **_atoms((eps, 0.5), (-eps, 0.5 * math.exp(-eps))),
        segments=(_exp_segment(-eps, eps, eps, 4.0),),
    )


def _discrete_laplace(t: float, steps: int) -> Model:
    # P[z] = (1-q)/(1+q) q^|z|, q = e^(-1/t); L(z) = (|z - D| - |z|)/t
    q = math.exp(-1.0 / t)
    atoms = [(steps / t, 1.0 / (1.0 + q)), (-steps / t, math.exp(-steps / t) / (1.0 + q))]
    if steps == 1:
        return Model(**_atoms(*atoms))

    def masses(l1: np.ndarray, l2: np.ndarray) -> Arrays4:
        # atoms z in [1, D-1] with (D - 2z)/t in (l1, l2]
        z_lo = np.maximum(np.ceil((steps - t * l2) / 2.0), 1.0)
        z_hi = np.minimum(np.ceil((steps - t * l1) / 2.0) - 1.0, steps - 1.0)
        n = z_hi - z_lo + 1.0
        has = n > 0
        n = np.where(has, n, 1.0)
        a = np.exp(-z_lo / t) * -np.expm1(-n / t) / (1.0 + q)
        b = np.exp((z_hi - steps) / t) * -np.expm1(-n / t) / (1.0 + q)
        a = np.where(has, a, 0.0)
        b = np.where(has, b, 0.0)
        return a, b, 16 * _U * a, 16 * _U * b

    # the middle atoms lie at (D - 2z)/t for z = 1..D-1, strictly inside (-(D-1)/t, (D-1)/t)
    seg = Segment((1.0 - steps) / t, (steps - 1.0) / t, masses)
    return Model(**_atoms(*atoms), segments=(seg,))


def _gaussian(mu: float) -> Model:
    m = mu * mu / 2.0  # L ~ N(m, mu^2) under P, N(-m, mu^2) under Q

    def masses(l1: np.ndarray, l2: np.ndarray) -> Arrays4:
        a, ea = ndtr_diff((l1 - m) / mu, (l2 - m) / mu)
        b, eb = ndtr_diff((l1 + m) / mu, (l2 + m) / mu)
        return a, b, ea, eb

    def quad(l1: np.ndarray, l2: np.ndarray) -> Arrays4:
        half = (l2 - l1) / 2.0
        loss = ((l1 + l2) / 2.0)[:, None] + half[:, None] * _GL_T
        z = (loss - m) / mu
        wf = (half[:, None] * _GL_W) * np.exp(-z * z / 2.0) / (mu * math.sqrt(2 * math.pi))
        return half * 2.0 <= _QUAD_WIDTH * mu, loss, wf, np.max(z * z, axis=1)

    tail = float(ndtr(np.array(-_Z))) * (1 + 1e-12)
    lo, hi = m - mu * _Z, m + mu * _Z
    return Model(segments=(Segment(lo, hi, masses, quad),), lumps=((lo, tail),), trunc_inf=tail)


def _discrete_gaussian(sigma: float, steps: int) -> Model | None:
    top = math.ceil(sigma * _Z) + 1
    if 2 * top + 1 > MAX_ATOMS:
        return None
    z = np.arange(-top, top + 1, dtype=np.float64)
    log_w = -(z * z) / (2.0 * sigma * sigma)
    norm = math.fsum(np.exp(log_w).tolist())  # at most the full sum: masses rounded up
    p = np.exp(log_w) / norm
    loss = (steps * steps - 2.0 * z * steps) / (2.0 * sigma * sigma)
    # sum_{z > top} e^(-z^2/2s^2) <= int_top^inf e^(-x^2/2s^2) dx = s sqrt(2 pi) Phi(-top/s)
    tail = sigma * math.sqrt(2 * math.pi) * float(ndtr(np.array(-top / sigma))) / norm
    tail *= 1 + 1e-12
    low = (steps * steps - 2.0 * (top + 1) * steps) / (2.0 * sigma * sigma)
    return Model(
        atom_loss=loss,
        atom_mass=p,
        lumps=((low, tail),),
        trunc_inf=tail,
        atom_rel=64 * _U + 4 * tail,
    )


def _subsampled_gaussian(sigma: float, q: float, sens: float, add: bool) -> Model:
    c = sigma * sigma / sens

    def s_of(x: np.ndarray | float) -> np.ndarray:
        return (2.0 * np.asarray(x) * sens - sens * sens) / (2.0 * sigma * sigma)

    def loss(x: float) -> float:
        v = float(np.log1p(q * np.expm1(s_of(x))))
        return -v if add else v

    def x_of(v: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            u = np.log1p(np.expm1(-v if add else v) / q)
        return np.where(np.isnan(u), -np.inf, c * u + sens / 2.0)

    def mix(x1: np.ndarray, x2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        a0, e0 = ndtr_diff(x1 / sigma, x2 / sigma)
        a1, e1 = ndtr_diff((x1 - sens) / sigma, (x2 - sens) / sigma)
        return (1.0 - q) * a0 + q * a1, (1.0 - q) * e0 + q * e1 + 4 * _U * (a0 + a1)

    def masses(l1: np.ndarray, l2: np.ndarray) -> Arrays4:
        xa, xb = (x_of(l2), x_of(l1)) if add else (x_of(l1), x_of(l2))
        plain, e_plain = ndtr_diff(xa / sigma, xb / sigma)
        mixed, e_mixed = mix(xa, xb)
        if add:  # P = N(0), Q = mixture
            return plain, mixed, e_plain, e_mixed
        return mixed, plain, e_mixed, e_plain

    def quad(l1: np.ndarray, l2: np.ndarray) -> Arrays4:
        xa, xb = (x_of(l2), x_of(l1)) if add else (x_of(l1), x_of(l2))
        ok = np.isfinite(xa) & np.isfinite(xb) & (xb - xa <= _QUAD_WIDTH * sigma)
        xa, xb = np.where(ok, xa, 0.0), np.where(ok, xb, 0.0)
        half = (xb - xa) / 2.0
        x = ((xa + xb) / 2.0)[:, None] + half[:, None] * _GL_T
        z0, z1 = x / sigma, (x - sens) / sigma
        dens = np.exp(-z0 * z0 / 2.0)
        if not add:
            dens = (1.0 - q) * dens + q * np.exp(-z1 * z1 / 2.0)
        wf = (half[:, None] * _GL_W) * dens / (sigma * math.sqrt(2 * math.pi))
        v = np.log1p(q * np.expm1(s_of(x)))
        zz = np.max(np.maximum(z0 * z0, z1 * z1), axis=1)
        return ok, (-v if add else v), wf, zz

    x_low, x_high = -sigma * _Z, sens + sigma * _Z
    tz = float(ndtr(np.array(-_Z)))
    if add:  # loss decreasing in x; P = N(0, sigma^2)
        hi, lo = loss(x_low), loss(sigma * _Z)
        above, below = tz, tz
    else:
        lo, hi = loss(x_low), loss(x_high)
        above = (1 - q) * float(ndtr(np.array(-x_high / sigma))) + q * tz
        below = (1 - q) * tz + q * float(ndtr(np.array((x_low - sens) / sigma)))
    above *= 1 + 1e-12
    below *= 1 + 1e-12
    return Model(segments=(Segment(lo, hi, masses, quad),), lumps=((lo, below),), trunc_inf=above)


def _subsampled_laplace(b: float, q: float, sens: float, add: bool) -> Model:
    eps = sens / b
    low = math.log1p(q * math.expm1(-eps))  # x <= 0 (remove order)
    high = math.log1p(q * math.expm1(eps))  # x >= Delta

    def x_of(v: np.ndarray) -> np.ndarray:
        u = np.log1p(np.expm1(-v if add else v) / q)
        return np.clip((b * u + sens) / 2.0, 0.0, sens)

    def lap0(x1: np.ndarray, x2: np.ndarray) -> np.ndarray:  # Lap(0, b) mass of [x1, x2]
        return 0.5 * np.exp(-x1 / b) * -np.expm1(-(x2 - x1) / b)

    def lap1(x1: np.ndarray, x2: np.ndarray) -> np.ndarray:  # Lap(Delta, b) mass of [x1, x2]
        return 0.5 * np.exp((x1 - sens) / b) * np.expm1((x2 - x1) / b)

    def masses(l1: np.ndarray, l2: np.ndarray) -> Arrays4:
        xa, xb = (x_of(l2), x_of(l1)) if add else (x_of(l1), x_of(l2))
        plain = lap0(xa, xb)
        mixed = (1.0 - q) * plain + q * lap1(xa, xb)
        ep, em = 32 * _U * plain, 32 * _U * mixed
        if add:
            return plain, mixed, ep, em
        return mixed, plain, em, ep

    e = math.exp(-eps)
    if add:  # P = Lap(0): x <= 0 has loss -low, x >= Delta has loss -high
        atoms = _atoms((-low, 0.5), (-high, 0.5 * e))
        seg = Segment(-high, -low, masses)
    else:
        atoms = _atoms((low, 0.5 * ((1 - q) + q * e)), (high, 0.5 * ((1 - q) * e + q)))
        seg = Segment(low, high, masses)
    return Model(**atoms, segments=(seg,))


def _exponential(eps: float) -> Model:
    # upper envelope of the bounded-range profiles: density e^((eps + l)/2) / (2 (e^eps - 1)).
    # It is exactly the dominating pair: its trade-off curve (e^eps / (1 + (e^eps - 1) a) - 1)
    # / (e^eps - 1) passes through the corner of every two-point pair of range eps (Dong,
    # Durfee and Rogers 2020) and is convex. Not tight for a k-fold composition (hence
    # tight=False): with every pair fixed in advance, the optimum takes one common pair, which
    # is smaller (100 at epsilon 0.1, delta 1e-5: 1.99 against 2.32 here), but that optimum
    # does not hold when each mechanism is chosen after the last output (their Section 3.3).
    return Model(segments=(_exp_segment(-eps, eps, eps, -2.0 * math.expm1(-eps)),), tight=False)


def _randomized_response(eps: float, k: int) -> Model:
    e = math.exp(-eps)
    z = 1.0 + (k - 1) * e
    atoms = [(eps, 1.0 / z), (-eps, e / z)]
    if k > 2:
        atoms.append((0.0, (k - 2) * e / z))
    return Model(**_atoms(*atoms))


def _approx(eps: float, delta: float) -> Model:
    if eps == 0:
        return Model(**_atoms((0.0, 1.0 - delta)), inf=delta)
    e = math.exp(-eps)
    return Model(
        **_atoms((eps, (1.0 - delta) / (1.0 + e)), (-eps, (1.0 - delta) * e / (1.0 + e))),
        inf=delta,
    )


#: Largest |loss| a PLD may reach: beyond, e^loss overflows and the analysis is skipped.
MAX_LOSS = 700.0


@lru_cache(maxsize=512)
def models(event: Event) -> tuple[Model, Model] | None:
    """The PLD of ``event`` in the remove and add orders, or ``None`` when the PLD analysis
    does not apply (a zCDP event; a discrete Gaussian too wide to enumerate; losses beyond
    :data:`MAX_LOSS`, where every analysis gives an epsilon too large to matter)."""
    try:
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            out = _models(event)
    except OverflowError:  # a loss beyond the float range: far beyond MAX_LOSS too
        return None
    if out is None:
        return None
    for m in out:
        lo, hi = m.span()
        if not (math.isfinite(lo) and math.isfinite(hi)) or max(-lo, hi) > MAX_LOSS:
            return None
    return out


def _models(event: Event) -> tuple[Model, Model] | None:
    if isinstance(event, Laplace):
        if event.discrete:
            m = _discrete_laplace(event.scale, int(event.sensitivity))
        else:
            m = _laplace(event.epsilon)
        return m, m
    if isinstance(event, Gaussian):
        if event.discrete:
            g = _discrete_gaussian(event.sigma, int(event.sensitivity))
            return None if g is None else (g, g)
        m = _gaussian(event.mu)
        return m, m
    if isinstance(event, SubsampledGaussian):
        if event.rate == 1.0:
            m = _gaussian(event.sensitivity / event.sigma)
            return m, m
        args = (event.sigma, event.rate, event.sensitivity)
        return _subsampled_gaussian(*args, add=False), _subsampled_gaussian(*args, add=True)
    if isinstance(event, SubsampledLaplace):
        if event.rate == 1.0:
            m = _laplace(event.sensitivity / event.scale)
            return m, m
        args = (event.scale, event.rate, event.sensitivity)
        return _subsampled_laplace(*args, add=False), _subsampled_laplace(*args, add=True)
    if isinstance(event, Exponential):
        m = _exponential(event.epsilon)
        return m, m
    if isinstance(event, RandomizedResponse):
        m = _randomized_response(event.epsilon, event.categories)
        return m, m
    if isinstance(event, Approx):
        m = _approx(event.epsilon, event.delta)
        return m, m
    if isinstance(event, KeySelection):
        m = _approx(0.0, event.delta)
        return m, m
    if isinstance(event, Zcdp):
        return None
    raise TypeError(f"no privacy-loss distribution for {event!r}")  # pragma: no cover


# --- connect-the-dots discretisation -------------------------------------------------------


def _split(
    seg: Segment, j: np.ndarray, l1: np.ndarray, l2: np.ndarray, h: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The mass of the loss in each ``(l1, l2]`` inside the cell ``[j h, (j + 1) h]``, split
    between the cell's ends keeping its P- and Q-mass: ``(down, up)`` and error bounds.

    From the masses: ``up = (a - e^(jh) b) / (1 - e^-h)``. For a narrow cell of a smooth
    density, the same integral ``up = int theta dP`` by quadrature, which avoids the
    cancellation of ``a - e^(jh) b`` (relative error ``u / h``) and of the tails ``a`` and
    ``b`` are differences of (relative error up to ``tail / a``).
    """
    denom = -math.expm1(-h)
    n = j.size
    down, up, e_down, e_up = (np.zeros(n) for _ in range(4))
    ok = np.zeros(n, dtype=bool)
    if seg.quad is not None:
        ok, loss, wf, zz = seg.quad(l1, l2)
        if ok.any():
            s_off = np.clip(loss[ok] - (j[ok] * h)[:, None], 0.0, h)
            theta = -np.expm1(-s_off) / denom
            w = wf[ok]
            q_up = np.sum(w * theta, axis=1)
            q_down = np.sum(w * (1.0 - theta), axis=1)
            rel = 32 * _U * (1.0 + zz[ok])
            # theta's error from the rounding of the loss at the nodes and of s = loss - jh
            e_theta = 8 * _U * np.max(np.abs(loss[ok]), axis=1) / h + 8 * _U
            total = q_up + q_down
            up[ok], down[ok] = q_up, q_down
            e_up[ok] = rel * q_up + e_theta * total
            e_down[ok] = rel * q_down + e_theta * total
    rest = ~ok
    if rest.any():
        a, b, ea, eb = seg.masses(l1[rest], l2[rest])
        grow = np.exp(j[rest] * h)  # finite: models() keeps every loss within MAX_LOSS
        c = grow * b  # e^(l_j) b: the Q-mass seen from the cell's left end
        ec = grow * eb + 2 * _U * c
        u = np.clip((a - c) / denom, 0.0, a)
        eu = (ea + ec + 4 * _U * (a + c)) / denom * (1 + 1e-6) + 8 * _U * a
        up[rest], down[rest] = u, a - u
        e_up[rest], e_down[rest] = eu, ea + eu
    return down, up, e_down, e_up


def discretize(model: Model, h: float) -> Pmf:
    """``model`` on the grid ``h Z`` by connecting the dots (see the module docstring)."""
    idx: list[np.ndarray] = []
    mass: list[np.ndarray] = []
    err: list[np.ndarray] = []
    var = 0.0
    offgrid = False
    denom = -math.expm1(-h)
    if model.atom_loss.size:
        loss = model.atom_loss
        pa = model.atom_mass
        j = np.floor(loss / h)
        s = loss - j * h
        over = s >= h
        j = np.where(over, j + 1, j)
        s = np.clip(np.where(over, s - h, s), 0.0, h)
        theta = np.clip(-np.expm1(-s) / denom, 0.0, 1.0)
        up = pa * theta
        var += float(np.sum(pa * theta * (1 - theta)))
        offgrid |= bool(np.any((theta > 0) & (theta < 1) & (pa > 0)))
        e_atom = model.atom_rel * pa + 8 * _U * pa
        idx += [j, j + 1]
        mass += [pa - up, up]
        err += [e_atom, e_atom]
    for seg in model.segments:
        j = np.arange(math.floor(seg.lo / h), math.ceil(seg.hi / h), dtype=np.float64)
        l1 = np.maximum(j * h, seg.lo)
        l2 = np.minimum((j + 1) * h, seg.hi)
        keep = l2 > l1
        j, l1, l2 = j[keep], l1[keep], l2[keep]
        if not j.size:
            continue
        down, up, e_down, e_up = _split(seg, j, l1, l2, h)
        a = down + up
        pos = a > 0
        var += float(np.sum(np.where(pos, up * down / np.where(pos, a, 1.0), 0.0)))
        offgrid |= bool(np.any((up > 0) & (down > 0)))
        idx += [j, j + 1]
        mass += [down, up]
        err += [e_down, e_up]
    trunc = model.trunc_inf
    for loss_value, m in model.lumps:
        idx.append(np.array([math.ceil(loss_value / h)], dtype=np.float64))
        mass.append(np.array([m]))
        err.append(np.array([8 * _U * m]))
        trunc += m
    all_idx = np.concatenate(idx).astype(np.int64)  # grid indices (integral floats)
    base = int(all_idx.min())
    size = int(all_idx.max()) - base + 1
    p = np.bincount(all_idx - base, weights=np.concatenate(mass), minlength=size)
    e = np.bincount(all_idx - base, weights=np.concatenate(err), minlength=size)
    p = np.maximum(p, 0.0)
    nz = np.flatnonzero(p)
    if nz.size:
        p, e = p[nz[0] : nz[-1] + 1], e[nz[0] : nz[-1] + 1]
        base += int(nz[0])
    else:
        p, e = p[:1], e[:1]
    ratio = np.where(p > 0, e / np.where(p > 0, p, 1.0), np.inf)
    errors = []
    for cap in REL_CAPS:
        relative = ratio <= cap
        errors.append(
            (
                float(np.max(np.where(relative, ratio, 0.0))),
                float(np.sum(np.where(relative, 0.0, e))),
            )
        )
    return Pmf(
        h=h,
        start=base,
        p=p,
        inf=min(1.0, model.inf + model.trunc_inf),
        trunc=trunc,
        var=var,
        offgrid=int(offgrid),
        errors=tuple(errors),
    )
