"""The events' privacy-loss distributions and their connect-the-dots discretisation."""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import pytest
from scipy import integrate, stats

from dpkit.accounting import _losses, _pld
from dpkit.accounting import events as ev
from dpkit.accounting._losses import discretize, models

EVENTS = [
    ev.Laplace(scale=4.0),
    ev.Laplace(scale=3.0, sensitivity=4, discrete=True),
    ev.Gaussian(sigma=2.0),
    ev.Gaussian(sigma=3.0, sensitivity=2, discrete=True),
    ev.Exponential(epsilon=0.7),
    ev.SubsampledGaussian(sigma=1.1, rate=0.01),
    ev.SubsampledGaussian(sigma=0.7, rate=0.3, sensitivity=0.5),
    ev.SubsampledLaplace(scale=0.5, rate=0.05),
    ev.RandomizedResponse(epsilon=0.8, categories=5),
    ev.Approx(epsilon=0.4, delta=1e-3),
    ev.KeySelection(delta=1e-4),
]


def _q_total(event: ev.Event) -> float:
    return 1.0 - (event.delta if isinstance(event, ev.Approx | ev.KeySelection) else 0.0)


@pytest.mark.parametrize("event", EVENTS, ids=repr)
@pytest.mark.parametrize("h", [2.0**-6, 2.0**-11])
def test_discretisation_keeps_both_masses(event: ev.Event, h: float) -> None:
    """Connect-the-dots keeps the P-mass and the Q-mass of every cell, so the totals hold:
    sum p + (mass at +inf) = 1 and sum p e^-l = Q's total (1 - delta for (eps, delta))."""
    for model in models(event):  # type: ignore[union-attr]
        pmf = discretize(model, h)
        assert math.fsum(pmf.p.tolist()) + pmf.inf == pytest.approx(1.0, abs=1e-12)
        q_mass = math.fsum((pmf.p * np.exp(-pmf.losses)).tolist())
        # truncated tails (< 1e-19) may move Q-mass by as much
        assert q_mass == pytest.approx(_q_total(event), abs=1e-12)
        assert pmf.inf >= model.inf + model.trunc_inf
        assert np.all(pmf.p >= 0)


def _laplace_profile(eps0: float, e: float) -> float:
    return -math.expm1((e - eps0) / 2) if e < eps0 else 0.0


@pytest.mark.parametrize("h", [2.0**-4, 2.0**-9])
def test_grid_profile_is_exact_on_the_grid_and_above_between(h: float) -> None:
    eps0 = 1.3
    (model, _) = models(ev.Laplace(scale=1 / eps0))  # type: ignore[misc]
    pmf = discretize(model, h)
    loss = pmf.losses

    def grid_delta(e: float) -> float:
        return float(np.sum(pmf.p * -np.expm1(np.minimum(e - loss, 0.0))))

    for j in range(0, int(eps0 / h)):
        e = j * h
        assert grid_delta(e) == pytest.approx(_laplace_profile(eps0, e), abs=1e-13)
        mid = e + h / 2
        assert grid_delta(mid) >= _laplace_profile(eps0, mid) - 1e-13
    # the optimistic rounding (all mass down) would fall below the true profile
    down = float(np.sum(pmf.p * -np.expm1(np.minimum(h / 2 - (loss - h), 0.0))))
    assert down < _laplace_profile(eps0, h / 2)


def test_subsampled_gaussian_cells_match_numerical_integration() -> None:
    sigma, q = 1.1, 0.02
    remove, add = models(ev.SubsampledGaussian(sigma=sigma, rate=q))  # type: ignore[misc]
    h = 2.0**-8
    for model, add_order in ((remove, False), (add, True)):
        pmf = discretize(model, h)
        # P(L > e) from the grid vs from the mechanism: x with loss(x) > e
        for e in (0.0, 0.05, 0.3):
            grid = float(np.sum(pmf.p[pmf.losses > e + h])) + pmf.inf

            def loss(x: float, add_order: bool = add_order) -> float:
                v = math.log1p(q * math.expm1((2 * x - 1) / (2 * sigma**2)))
                return -v if add_order else v

            if add_order:
                density = stats.norm(0, sigma).pdf
            else:

                def density(x: float) -> float:
                    return (1 - q) * stats.norm(0, sigma).pdf(x) + q * stats.norm(1, sigma).pdf(x)

            true, _ = integrate.quad(
                lambda x, density=density, loss=loss, e=e: density(x) * (loss(x) > e),
                -30,
                30,
                points=[0.5],
                limit=500,
            )
            # the grid moves each cell's mass by less than one step: bracket it
            wide = float(np.sum(pmf.p[pmf.losses > e - h])) + pmf.inf
            assert grid - 1e-9 <= true <= wide + 1e-9


@pytest.fixture
def fresh_caches() -> Iterator[None]:
    def clear() -> None:
        models.cache_clear()
        _pld._pmf.cache_clear()
        _pld._variance.cache_clear()

    clear()
    yield
    clear()


def test_truncated_tails_are_charged(monkeypatch: pytest.MonkeyPatch, fresh_caches: None) -> None:
    """Truncate far less deep (tails of 2.3% instead of 1e-20): the bound must still hold,
    the upper tail at +infinity and the lower one lumped up, never dropped."""
    from dpkit.accounting import compose

    monkeypatch.setattr(_losses, "_Z", 2.0)
    model = models(ev.Gaussian(sigma=1.0))[0]  # type: ignore[index]
    pmf = discretize(model, 2.0**-10)
    tail = stats.norm.sf(2.0)
    assert pmf.inf >= tail and pmf.trunc >= 2 * tail
    assert math.fsum(pmf.p.tolist()) + pmf.inf == pytest.approx(1.0, abs=1e-12)
    for mu in (1.0, 2.0):
        c = compose([(ev.Gaussian(sigma=1 / mu), 1)], delta=0.05, methods=["pld"])
        assert math.isfinite(c.epsilon)
        a = -c.epsilon / mu + mu / 2
        exact = stats.norm.cdf(a) - math.exp(c.epsilon) * stats.norm.cdf(a - mu)
        assert exact <= 0.05 * (1 + 1e-9)
