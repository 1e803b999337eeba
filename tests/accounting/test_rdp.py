"""Renyi divergences of the events against numerical integration, and the conversions."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, special

from dpkit.accounting import _rdp, compose
from dpkit.accounting import events as ev

ORDERS_TO_CHECK = [1.5, 2.0, 3.0, 8.0, 32.0]


def _renyi(logp: object, logq: object, alpha: float, lo: float, hi: float, points: list) -> float:
    """D_alpha(P || Q) = log int p^alpha q^(1 - alpha) / (alpha - 1), numerically, from the
    log-densities (scaled by the integrand's largest value on a grid, so nothing overflows)."""

    def log_integrand(x: float) -> float:
        return alpha * logp(x) + (1 - alpha) * logq(x)  # type: ignore[operator]

    top = max(log_integrand(x) for x in np.linspace(lo, hi, 4001))
    value, _ = integrate.quad(
        lambda x: math.exp(log_integrand(x) - top),
        lo,
        hi,
        points=points,
        limit=800,
        epsabs=0,
        epsrel=1e-11,
    )
    return (math.log(value) + top) / (alpha - 1)


def _log_normal(mean: float, sd: float) -> object:
    return lambda x: -((x - mean) ** 2) / (2 * sd * sd) - math.log(sd * math.sqrt(2 * math.pi))


def _log_laplace(mean: float, b: float) -> object:
    return lambda x: -abs(x - mean) / b - math.log(2 * b)


def _log_mix(q: float, base: object, shifted: object) -> object:
    return lambda x: float(
        np.logaddexp(math.log1p(-q) + base(x), math.log(q) + shifted(x))  # type: ignore[operator]
    )


def _curve_at(event: ev.Event, alpha: float) -> float:
    i = int(np.flatnonzero(alpha == _rdp.ORDERS)[0])
    return _rdp._curve(event)[i]


@pytest.mark.parametrize("alpha", ORDERS_TO_CHECK)
def test_laplace_divergence_matches_integration(alpha: float) -> None:
    eps = 0.7
    p, q = _log_laplace(0, 1 / eps), _log_laplace(1, 1 / eps)
    exact = _renyi(p, q, alpha, -60, 60, [0.0, 1.0])
    assert _curve_at(ev.Laplace(scale=1 / eps), alpha) == pytest.approx(exact, rel=1e-8)


@pytest.mark.parametrize("alpha", [2.0, 3.0, 8.0, 32.0])
@pytest.mark.parametrize(("sigma", "q"), [(1.1, 0.01), (0.8, 0.2), (2.0, 0.5)])
def test_subsampled_gaussian_divergence_is_the_binomial_sum_and_dominates_add(
    alpha: float, sigma: float, q: float
) -> None:
    """Remove order: exactly Mironov, Talwar and Zhang's A_alpha; the add order (which dpkit
    does not compute) is below it, as their Section 3.3 shows."""
    base = _log_normal(0, sigma)
    mix = _log_mix(q, base, _log_normal(1, sigma))
    hi = alpha + 12 * sigma  # the remove order's integrand peaks near x = alpha
    remove = _renyi(mix, base, alpha, -12 * sigma, hi, [0.0, 1.0])
    add = _renyi(base, mix, alpha, -12 * sigma - alpha, 1 + 12 * sigma, [0.0, 1.0])
    got = _curve_at(ev.SubsampledGaussian(sigma=sigma, rate=q), alpha)
    assert got == pytest.approx(remove, rel=1e-7)
    assert add <= got * (1 + 1e-9)


@pytest.mark.parametrize("alpha", ORDERS_TO_CHECK)
def test_exponential_mechanism_divergence_is_the_envelope_within_cesar_rogers(alpha: float) -> None:
    eps = 0.9
    density = lambda x: math.exp((eps + x) / 2) / (2 * math.expm1(eps))  # noqa: E731
    value, _ = integrate.quad(lambda x: math.exp((alpha - 1) * x) * density(x), -eps, eps)
    envelope = math.log(value) / (alpha - 1)
    got = _curve_at(ev.Exponential(epsilon=eps), alpha)
    assert got == pytest.approx(min(envelope, alpha * eps**2 / 8), rel=1e-8)
    assert got <= alpha * eps**2 / 8 * (1 + 1e-9)


@pytest.mark.parametrize("alpha", ORDERS_TO_CHECK)
def test_discrete_laplace_divergence_matches_enumeration(alpha: float) -> None:
    t, steps = 2.5, 3
    z = np.arange(-400, 401)
    p = np.exp(-np.abs(z) / t)
    p /= p.sum()
    loss = (np.abs(z - steps) - np.abs(z)) / t
    exact = special.logsumexp((alpha - 1) * loss, b=p) / (alpha - 1)
    got = _curve_at(ev.Laplace(scale=t, sensitivity=steps, discrete=True), alpha)
    assert got == pytest.approx(exact, rel=1e-9)


def test_subsampled_laplace_divergence_bounds_integration() -> None:
    b, q = 1.0, 0.1
    base = _log_laplace(0, b)
    mix = _log_mix(q, base, _log_laplace(1, b))
    for alpha in (2.0, 8.0):
        exact = max(
            _renyi(mix, base, alpha, -60, 61, [0.0, 1.0]),
            _renyi(base, mix, alpha, -60, 61, [0.0, 1.0]),
        )
        got = _curve_at(ev.SubsampledLaplace(scale=b, rate=q), alpha)
        # the grid pair dominates the mechanism: above, and within its rounding
        assert exact <= got <= exact * 1.01


def test_renyi_conversion_is_balle_et_al() -> None:
    items = ((ev.Gaussian(sigma=5.0), 10),)
    r = _rdp.rdp_curve(items)
    a = _rdp.ORDERS
    delta = 1e-6
    expected = np.min(r + np.log((a - 1) / a) - (math.log(delta) + np.log(a)) / (a - 1))
    assert _rdp.rdp_epsilon(items, delta) == pytest.approx(float(expected), rel=1e-12)
    assert _rdp.rdp_epsilon(items, delta) >= float(expected)
    # and the conversion's delta at that epsilon is at most delta
    assert _rdp.rdp_delta(items, _rdp.rdp_epsilon(items, delta)) <= delta * (1 + 1e-6)


def test_dp_sgd_renyi_matches_the_survey() -> None:
    c = compose([(ev.SubsampledGaussian(sigma=0.8, rate=0.005), 1000)], delta=1e-6, methods=["rdp"])
    # dp_accounting (fractional orders too) gives 2.6265; integer orders are a little above
    assert 2.6265 - 1e-4 <= c.epsilon <= 2.6265 + 0.03
