"""The FFT composition: its error bounds cover the errors they claim to."""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import pytest

from dpkit.accounting import _pld, compose
from dpkit.accounting import events as ev
from dpkit.accounting._losses import discretize, models


def _exact_power(p: np.ndarray, k: int) -> np.ndarray:
    """p convolved with itself k times, in extended precision, directly (no FFT)."""
    base = p.astype(np.longdouble)
    out = np.array([1.0], dtype=np.longdouble)
    while k:
        if k & 1:
            out = np.convolve(out, base)
        k >>= 1
        if k:
            base = np.convolve(base, base)
    return out


@pytest.mark.parametrize(
    ("event", "k"),
    [
        (ev.Laplace(scale=2.0), 7),
        (ev.RandomizedResponse(epsilon=0.3, categories=3), 300),
        (ev.SubsampledLaplace(scale=1.0, rate=0.1), 40),
    ],
    ids=repr,
)
def test_fft_error_bound_covers_the_float_error(event: ev.Event, k: int) -> None:
    model = models(event)[0]  # type: ignore[index]
    pmf = discretize(model, 2.0**-5)
    exact = _exact_power(pmf.p, k)
    n = 1 << (exact.size - 1).bit_length()  # no aliasing: the error is the float error
    q, bound = _pld._fft_compose([(pmf, k)], n)
    err = float(np.sum(np.abs(q[: exact.size].astype(np.longdouble) - exact)))
    err += float(np.sum(np.abs(q[exact.size :])))
    assert 0 < err <= bound
    assert bound < 1e-10  # and it is small enough not to matter


@pytest.fixture
def fresh_caches() -> Iterator[None]:
    def clear() -> None:
        models.cache_clear()
        _pld._pmf.cache_clear()
        _pld._variance.cache_clear()

    clear()
    yield
    clear()


def test_mass_outside_the_window_is_charged(
    monkeypatch: pytest.MonkeyPatch, fresh_caches: None
) -> None:
    """With the FFT far too short (1024 points for 1000 Laplace releases), the composed
    loss folds onto itself; the Chernoff bound on what lies outside must keep the bound
    valid (here: no finite epsilon), never report the folded distribution's epsilon."""
    monkeypatch.setattr(_pld, "N_MAX", 2**10)
    c = compose([(ev.Laplace(scale=100.0), 1000)], delta=1e-5, methods=["pld"])
    assert c.epsilon >= 1.1828  # prv_accountant's certified lower bound


def test_chernoff_window_holds_the_mass() -> None:
    """The window chosen for 10**4 Laplace releases holds all but a negligible mass."""
    c = compose([(ev.Laplace(scale=100.0), 10**4)], delta=1e-5, methods=["pld"])
    remove = c._state.pld[0]  # type: ignore[index]
    assert remove.outside < 1e-15
    assert math.fsum(remove.q.tolist()) + remove.inf == pytest.approx(1.0, abs=1e-9)


def test_both_orders_of_the_pair_are_composed() -> None:
    """Subsampled mechanisms differ by order; the worse one is charged."""
    c = compose([(ev.SubsampledGaussian(sigma=0.8, rate=0.05), 200)], delta=1e-6)
    remove, add = c._state.pld  # type: ignore[misc]
    eps = (remove.epsilon_upper(1e-6), add.epsilon_upper(1e-6))
    assert eps[0] != eps[1]
    assert c.by_method["pld"] == max(eps)
