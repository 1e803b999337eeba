"""Renyi DP, zCDP, basic and advanced composition of events.

* Renyi DP: each event's Renyi divergence at a grid of orders (:data:`ORDERS`), added over
  the ledger and converted to ``(epsilon, delta)`` by the improved conversion of Balle et
  al. 2020 (Theorem 21; Canonne, Kamath and Steinke 2020, Proposition 12):
  ``epsilon = R(alpha) + log(1 - 1/alpha) - (log delta + log alpha) / (alpha - 1)``,
  minimised over the grid (every order gives a valid bound).
* zCDP: each event's ``rho``, added and converted by
  :func:`dpkit.accounting.zcdp_to_approx` (Canonne, Kamath and Steinke 2020, Corollary 13).
* Basic composition: epsilons and deltas add (Dwork and Roth 2014, Theorem 3.16); an event
  with no epsilon of its own (Gaussian, zCDP) gets an equal share of the remaining delta.
* Advanced composition (Dwork, Rothblum and Vadhan 2010, Theorem III.3, in its Azuma form
  for different epsilons): ``sqrt(2 log(1/delta') sum k eps**2) + sum k eps (e^eps - 1)``.

An ``(epsilon, delta)`` event (``Approx``, ``KeySelection``) is, in the hockey-stick sense,
the composition of randomized response with parameter epsilon and a ``(0, delta)`` pair; the
composition of all of them is charged ``delta_fixed = 1 - prod (1 - delta_i)^k_i`` up
front, and the Renyi or zCDP analysis of the rest runs at ``delta - delta_fixed``.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from dpkit.accounting._losses import discretize, models
from dpkit.accounting._rational import round_up
from dpkit.accounting._special import gdp_delta_upper, gdp_epsilon_upper
from dpkit.accounting.conversions import zcdp_to_approx
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
    amplified,
)

__all__ = [
    "ORDERS",
    "advanced_delta",
    "advanced_epsilon",
    "basic_delta",
    "basic_epsilon",
    "fixed_delta",
    "rdp_curve",
    "rdp_delta",
    "rdp_epsilon",
    "rho",
    "zcdp_delta",
    "zcdp_epsilon",
]

_U = 2.0**-53

#: The Renyi orders: fine near 1 (large ledgers of small losses), integers to 64, then
#: powers up to 4096 (few, strong releases).
ORDERS = np.array(
    sorted(
        {1.0 + x / 64 for x in range(1, 64)}
        | {2.0 + x / 8 for x in range(0, 72)}
        | {float(a) for a in range(11, 65)}
        | {72.0, 80.0, 96.0, 112.0, 128.0, 160.0, 192.0, 256.0, 384.0, 512.0}
        | {768.0, 1024.0, 1536.0, 2048.0, 3072.0, 4096.0}
    )
)

Items = tuple[tuple[Event, int], ...]


def fixed_delta(items: Items) -> float:
    """``1 - prod (1 - delta_i)^k_i`` over the events' own deltas, rounded up."""
    log_keep = 0.0
    for event, count in items:
        d = event.delta if isinstance(event, Approx | KeySelection) else 0.0
        if d:
            log_keep += count * math.log1p(-d)
    return min(1.0, -math.expm1(log_keep) * (1 + 1e-12)) if log_keep else 0.0


def _logsumexp(terms: np.ndarray, axis: int = -1) -> np.ndarray:
    top = np.max(terms, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    return np.squeeze(top, axis=axis) + np.log(np.sum(np.exp(terms - top), axis=axis))


def _atoms_rdp(loss: np.ndarray, mass: np.ndarray) -> np.ndarray:
    """``log E_P[e^((alpha - 1) L)] / (alpha - 1)`` for a PLD made of atoms."""
    with np.errstate(divide="ignore"):
        terms = np.log(mass)[None, :] + (ORDERS - 1.0)[:, None] * loss[None, :]
    return _logsumexp(terms) / (ORDERS - 1.0)


def _rr_rdp(eps: float) -> np.ndarray:
    e = math.exp(-eps)
    return _atoms_rdp(np.array([eps, -eps]), np.array([1 / (1 + e), e / (1 + e)]))


def _laplace_rdp(eps: float) -> np.ndarray:
    a = ORDERS
    # Mironov 2017, Proposition 6 (sensitivity / scale = eps)
    terms = np.logaddexp(
        np.log(a / (2 * a - 1)) + (a - 1) * eps, np.log((a - 1) / (2 * a - 1)) - a * eps
    )
    return np.minimum(terms / (a - 1), _rr_rdp(eps))


def _discrete_laplace_rdp(t: float, steps: int) -> np.ndarray:
    a = ORDERS
    q = math.exp(-1.0 / t)
    top = np.log(1 / (1 + q)) + (a - 1) * steps / t
    bottom = np.log(math.exp(-steps / t) / (1 + q)) - (a - 1) * steps / t
    parts = [top, bottom]
    if steps > 1:
        # sum_{z=1}^{D-1} (1-q)/(1+q) q^z e^{(a-1)(D - 2z)/t} = c sum r^z, r = e^{-(2a-1)/t}
        log_r = -(2 * a - 1) / t
        geo = log_r + np.log(-np.expm1((steps - 1) * log_r)) - np.log(-np.expm1(log_r))
        parts.append(math.log((1 - q) / (1 + q)) + (a - 1) * steps / t + geo)
    return _logsumexp(np.stack(parts, axis=-1)) / (a - 1)


def _exponential_rdp(eps: float) -> np.ndarray:
    a = ORDERS
    c = (a - 0.5) * eps
    # the envelope pair: E e^{(a-1)L} = e^{eps/2} sinh(c) / ((a - 1/2)(e^eps - 1))
    log_sinh = c + np.log1p(-np.exp(-2 * c)) - math.log(2.0)
    log_expm1 = eps + math.log1p(-math.exp(-eps))
    envelope = (eps / 2 + log_sinh - np.log(a - 0.5) - log_expm1) / (a - 1)
    return np.minimum(envelope, a * eps * eps / 8)  # Cesar and Rogers 2021, Lemma 3.2


#: ``log(n!)`` for ``n`` up to the largest order.
_LOG_FACT = np.concatenate(([0.0], np.cumsum(np.log(np.arange(1.0, ORDERS[-1] + 1)))))


def _subsampled_gaussian_rdp(mu: float, q: float) -> np.ndarray:
    # Mironov, Talwar and Zhang 2019: A_a = sum_k C(a,k) (1-q)^(a-k) q^k e^{(k^2-k) mu^2/2}
    # for integer a (the add order is dominated, their Section 3.3); a fractional order uses
    # the next integer (Renyi divergences grow with the order)
    out = np.empty_like(ORDERS)
    cache: dict[int, float] = {}
    for i, a in enumerate(ORDERS.tolist()):
        n = math.ceil(a)
        if n not in cache:
            k = np.arange(n + 1, dtype=np.float64)
            log_binom = _LOG_FACT[n] - _LOG_FACT[: n + 1] - _LOG_FACT[n::-1]
            terms = log_binom + (n - k) * math.log1p(-q) + k * math.log(q)
            terms += (k * k - k) * mu * mu / 2
            cache[n] = float(_logsumexp(terms)) / (n - 1)
        out[i] = cache[n]
    return np.minimum(out, ORDERS * mu * mu / 2)


def _pmf_rdp(event: Event) -> np.ndarray:
    """From the connect-the-dots grid pair (which dominates the event), both orders."""
    pair = models(event)
    if pair is None:  # losses beyond the float range: no better than the pure bound
        return np.full_like(ORDERS, np.inf)
    out = np.full_like(ORDERS, -np.inf)
    for model in pair:
        lo, hi = model.span()
        h = 2.0 ** math.floor(math.log2(max(hi - lo, 1e-12) / 2**11))
        pmf = discretize(model, h)
        # true masses <= (1 + rel) p + alpha with sum alpha <= abs: put abs at the top loss
        rel, absolute = pmf.errors[-1]
        loss = np.append(pmf.losses, pmf.losses[-1])
        mass = np.append(pmf.p * (1 + rel + 1e-12), absolute)
        out = np.maximum(out, _atoms_rdp(loss, mass))
    return out


#: Distinct events whose curves and rhos are kept (a ledger of more distinct releases than
#: this recomputes them at every composition: one curve is 205 floats, about 2 KB).
CACHED_EVENTS = 2**14


@lru_cache(maxsize=CACHED_EVENTS)
def _curve(event: Event) -> tuple[float, ...]:
    """The event's Renyi divergence at each order, rounded up; ``inf`` where a formula leaves
    the float range (for example an epsilon of 10**15)."""
    with np.errstate(all="ignore"):
        r = _raw_curve(event)
    r = np.where(np.isnan(r), np.inf, np.maximum(r, 0.0))
    return tuple((r * (1 + 1e-10) + 1e-15).tolist())


def _raw_curve(event: Event) -> np.ndarray:
    if isinstance(event, Laplace):
        if event.discrete:
            r = _discrete_laplace_rdp(event.scale, int(event.sensitivity))
        else:
            r = _laplace_rdp(event.epsilon)
    elif isinstance(event, Gaussian):
        r = ORDERS * (event.mu * event.mu) / 2  # discrete: Canonne, Kamath and Steinke 2020, Thm 4
    elif isinstance(event, Exponential):
        r = _exponential_rdp(event.epsilon)
    elif isinstance(event, RandomizedResponse):
        e = math.exp(-event.epsilon)
        z = 1.0 + (event.categories - 1) * e
        loss = np.array([event.epsilon, -event.epsilon, 0.0])
        mass = np.array([1 / z, e / z, (event.categories - 2) * e / z])
        r = _atoms_rdp(loss, mass)
    elif isinstance(event, Approx):
        r = _rr_rdp(event.epsilon) if event.epsilon > 0 else np.zeros_like(ORDERS)
    elif isinstance(event, KeySelection):
        r = np.zeros_like(ORDERS)
    elif isinstance(event, Zcdp):
        r = ORDERS * event.rho
    elif isinstance(event, SubsampledGaussian):
        mu = event.sensitivity / event.sigma
        r = ORDERS * mu * mu / 2 if event.rate == 1 else _subsampled_gaussian_rdp(mu, event.rate)
    elif isinstance(event, SubsampledLaplace):
        if event.rate == 1:
            r = _laplace_rdp(event.sensitivity / event.scale)
        else:
            r = np.minimum(_pmf_rdp(event), _rr_rdp(event.epsilon))
    else:  # pragma: no cover - every event is handled above
        raise TypeError(f"no Renyi divergence for {event!r}")
    return np.asarray(r, dtype=np.float64)


def rdp_curve(items: Items) -> np.ndarray:
    """The ledger's Renyi divergence at each of :data:`ORDERS` (each event's, times count),
    rounded up: each product rounds once and ``np.sum`` adds pairwise (an error of about
    ``log2(n)`` ulps of the total), which the ``1e-12`` relative margin covers for any
    number of events."""
    kept = [(event, count) for event, count in items if count]
    if not kept:
        return np.zeros_like(ORDERS)
    curves = np.array([_curve(event) for event, _ in kept])
    counts = np.array([float(count) for _, count in kept])
    with np.errstate(invalid="ignore"):
        total = np.sum(curves * counts[:, None], axis=0)
    return np.where(np.isnan(total), np.inf, total) * (1 + 1e-12)


def rdp_epsilon(items: Items, delta: float) -> float:
    """Renyi DP composition at ``delta`` (``inf`` when the events' deltas use it all up)."""
    rest = delta - fixed_delta(items)
    if rest <= 0:
        return math.inf
    r = rdp_curve(items)
    a = ORDERS
    eps = r + np.log1p(-1 / a) - (math.log(rest) + np.log(a)) / (a - 1)
    best = float(np.min(eps))
    return round_up(max(best, 0.0)) if math.isfinite(best) else math.inf


def rdp_delta(items: Items, epsilon: float) -> float:
    """The Renyi DP conversion's ``delta`` at ``epsilon``."""
    r = rdp_curve(items)
    a = ORDERS
    log_d = (a - 1) * (r - epsilon + np.log1p(-1 / a)) - np.log(a)
    d = math.exp(min(float(np.min(log_d)), 0.0)) * (1 + 1e-9)
    return min(1.0, fixed_delta(items) + d)


@lru_cache(maxsize=CACHED_EVENTS)
def _rho(event: Event) -> float:
    """The event's zCDP ``rho`` (``inf`` beyond the float range: products, not ``**``, which
    raises there)."""
    if isinstance(event, Laplace):
        return event.epsilon * event.epsilon / 2
    if isinstance(event, Gaussian):
        return event.mu * event.mu / 2
    if isinstance(event, Exponential):
        return event.epsilon * event.epsilon / 8
    if isinstance(event, RandomizedResponse | Approx):
        return event.epsilon * event.epsilon / 2
    if isinstance(event, KeySelection):
        return 0.0
    if isinstance(event, Zcdp):
        return event.rho
    if isinstance(event, SubsampledGaussian):
        # the mixture's divergences are at most the Gaussian's (joint convexity)
        mu = event.sensitivity / event.sigma
        return mu * mu / 2
    if isinstance(event, SubsampledLaplace):
        return event.epsilon * event.epsilon / 2
    raise TypeError(f"no zCDP bound for {event!r}")  # pragma: no cover


def rho(items: Items) -> float:
    """The ledger's total ``rho``, rounded up."""
    return round_up(math.fsum(count * _rho(event) for event, count in items))


def zcdp_epsilon(items: Items, delta: float) -> float:
    """zCDP composition, converted at ``delta - delta_fixed``."""
    rest = delta - fixed_delta(items)
    if rest <= 0:
        return math.inf
    try:
        return zcdp_to_approx(rho(items), rest).epsilon
    except ValueError:
        return math.inf


def _cks_log_delta(t: float, r: float, epsilon: float) -> float:
    a = 1.0 + math.exp(t)
    return (a - 1) * (a * r - epsilon + math.log1p(-1 / a)) - math.log(a)


def _cks_delta(r: float, epsilon: float) -> float:
    """``min_alpha`` of the CKS delta of ``r``-zCDP at ``epsilon`` (any alpha is valid):
    a grid over ``alpha = 1 + e^t`` and golden-section steps around its best point."""
    if r == 0:
        return 0.0
    grid = np.linspace(-25.0, 25.0, 401)
    a = 1.0 + np.exp(grid)
    with np.errstate(over="ignore", invalid="ignore"):  # beyond floats: +inf, never chosen
        values = (a - 1) * (a * r - epsilon + np.log1p(-1 / a)) - np.log(a)
    best = int(np.argmin(values))
    lo, hi = grid[max(best - 1, 0)], grid[min(best + 1, grid.size - 1)]
    inv_phi = (math.sqrt(5.0) - 1.0) / 2.0
    c, d = hi - inv_phi * (hi - lo), lo + inv_phi * (hi - lo)
    fc, fd = _cks_log_delta(c, r, epsilon), _cks_log_delta(d, r, epsilon)
    for _ in range(60):
        if fc < fd:
            hi, d, fd = d, c, fc
            c = hi - inv_phi * (hi - lo)
            fc = _cks_log_delta(c, r, epsilon)
        else:
            lo, c, fc = c, d, fd
            d = lo + inv_phi * (hi - lo)
            fd = _cks_log_delta(d, r, epsilon)
    log_d = min(float(values[best]), fc, fd)
    # each term is a few roundings: a relative 1e-12 of their size covers them
    return math.exp(min(log_d, 0.0)) * (1 + 1e-9)


def zcdp_delta(items: Items, epsilon: float) -> float:
    """The zCDP conversion's ``delta`` at ``epsilon``."""
    return min(1.0, fixed_delta(items) + _cks_delta(rho(items), epsilon))


def _fixed_pair(event: Event) -> tuple[float, float] | None:
    """The event's own ``(epsilon, delta)``, or ``None`` if it has no epsilon at delta 0."""
    if isinstance(event, Laplace | SubsampledLaplace):
        return event.epsilon, 0.0
    if isinstance(event, Exponential | RandomizedResponse):
        return event.epsilon, 0.0
    if isinstance(event, Approx):
        return event.epsilon, event.delta
    if isinstance(event, KeySelection):
        return 0.0, event.delta
    return None


def _flex_epsilon(items: Items, share: float) -> float:
    """``sum k epsilon_i(share)`` over the events without an epsilon of their own."""
    gauss_mu: list[float] = []
    gauss_k: list[int] = []
    total = 0.0
    for event, count in items:
        if isinstance(event, Gaussian) and not event.discrete:
            gauss_mu.append(event.mu)
            gauss_k.append(count)
        elif isinstance(event, Gaussian | Zcdp):
            try:
                total += count * zcdp_to_approx(_rho(event), share).epsilon
            except ValueError:
                return math.inf
        elif isinstance(event, SubsampledGaussian):
            inner = share / event.rate
            if inner >= 1:
                continue  # the share alone covers the release: epsilon 0
            mu = np.array([event.sensitivity / event.sigma])
            eps_g = float(gdp_epsilon_upper(mu, inner)[0])
            total += count * round_up(amplified(eps_g, event.rate))
    if gauss_mu:
        eps = gdp_epsilon_upper(np.array(gauss_mu), share)
        total += math.fsum((np.array(gauss_k) * eps).tolist())
    return total


def _tally(items: Items) -> tuple[float, int]:
    """The fixed epsilons' sum and the number of flexible releases (those without a fixed
    ``(epsilon, delta)``, which share a delta or an epsilon)."""
    pure = 0.0
    flex = 0
    for event, count in items:
        pair = _fixed_pair(event)
        if pair is None:
            flex += count
        else:
            pure += count * pair[0]
    return pure, flex


def basic_epsilon(items: Items, delta: float) -> float:
    """Basic composition: epsilons add; flexible events share the remaining delta."""
    pure, flex = _tally(items)
    rest = delta - fixed_delta(items)
    if rest < 0 or (flex and rest <= 0):
        return math.inf
    total = pure + (_flex_epsilon(items, rest / flex) if flex else 0.0)
    return round_up(total) if math.isfinite(total) else math.inf


def basic_delta(items: Items, epsilon: float) -> float:
    """Basic composition's ``delta`` at ``epsilon``: flexible events share what the fixed
    epsilons leave, equally per release."""
    pure, flex = _tally(items)
    if pure > epsilon:
        return 1.0
    total = fixed_delta(items)
    if flex:
        share = (epsilon - pure) / flex
        for event, count in items:
            if isinstance(event, Gaussian) and not event.discrete:
                d = float(gdp_delta_upper(np.array(event.mu), np.array(share)))
            elif isinstance(event, Gaussian | Zcdp):
                d = _cks_delta(_rho(event), share)
            elif isinstance(event, SubsampledGaussian):
                inner = math.log1p(math.expm1(share) / event.rate)
                mu = event.sensitivity / event.sigma
                d = event.rate * float(gdp_delta_upper(np.array(mu), np.array(inner)))
            else:
                continue
            total += count * d
    return min(1.0, round_up(total, 2))


def _advanced_sums(items: Items) -> tuple[float, float] | None:
    sq, drift = 0.0, 0.0
    for event, count in items:
        pair = _fixed_pair(event)
        if pair is None:
            return None
        sq += count * pair[0] * pair[0]
        drift += count * pair[0] * math.expm1(min(pair[0], 700.0))
    return sq, drift


def advanced_epsilon(items: Items, delta: float) -> float | None:
    """Advanced composition, or ``None`` when an event has no epsilon of its own."""
    sums = _advanced_sums(items)
    if sums is None:
        return None
    sq, drift = sums
    rest = delta - fixed_delta(items)
    if rest <= 0:
        return math.inf
    value = math.sqrt(2 * sq * math.log(1 / rest)) + drift
    return round_up(value) if math.isfinite(value) else math.inf


def advanced_delta(items: Items, epsilon: float) -> float | None:
    """Advanced composition's ``delta`` at ``epsilon`` (``None`` as above)."""
    sums = _advanced_sums(items)
    if sums is None:
        return None
    sq, drift = sums
    fixed = fixed_delta(items)
    if epsilon <= drift:
        return 1.0
    if sq == 0:
        return fixed
    gap = epsilon - drift
    d = math.exp(-(gap * gap) / (2 * sq)) * (1 + 1e-9)
    return min(1.0, fixed + d)
