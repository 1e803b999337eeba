"""Conversions between privacy-loss types, against worked values and independent computations."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from scipy import optimize

from dpkit import ZCDP, ApproxDP, ParameterError, PureDP
from dpkit.accounting import approx_to_zcdp, bounded_range_to_zcdp, pure_to_zcdp, zcdp_to_approx


def _cks_delta(rho: float, eps: float) -> float:
    """Independent CKS delta: minimise the Corollary 13 expression over alpha with scipy."""

    def log_delta(t: float) -> float:
        a = 1.0 + math.exp(t)
        return (a - 1) * (a * rho - eps) + a * math.log1p(-1 / a) - math.log(a - 1)

    res = optimize.minimize_scalar(
        log_delta, bounds=(-30, 40), method="bounded", options={"xatol": 1e-12}
    )
    return math.exp(res.fun)


def _cks_epsilon(rho: float, delta: float) -> float:
    """Smallest epsilon with CKS delta(epsilon) <= delta, by root finding (Steinke's cdp_eps)."""
    if _cks_delta(rho, 0.0) <= delta:
        return 0.0
    hi = rho + 2 * math.sqrt(rho * math.log(1 / delta))
    return optimize.brentq(
        lambda e: math.log(_cks_delta(rho, e)) - math.log(delta), 0.0, hi, xtol=1e-14
    )


# --- pure -> zCDP ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("eps", "rho"), [(1.0, 0.5), (2.0, 2.0), (0.5, 0.125), (0.0, 0.0), (3.0, 4.5)]
)
def test_pure_to_zcdp_worked_values(eps: float, rho: float) -> None:
    assert pure_to_zcdp(PureDP(eps)) == ZCDP(rho)
    assert pure_to_zcdp(eps) == ZCDP(rho)
    assert pure_to_zcdp(ApproxDP(eps, 0.0)) == ZCDP(rho)


@pytest.mark.parametrize("eps", [0.1, 0.3, 1 / 3, 0.7, 1e-8, 123.456])
def test_pure_to_zcdp_is_exact_rounded_up(eps: float) -> None:
    rho = pure_to_zcdp(eps).rho
    exact = Fraction(eps) ** 2 / 2
    # rho is the smallest float >= the exact rational eps^2 / 2
    assert Fraction(rho) >= exact
    assert Fraction(math.nextafter(rho, 0.0)) < exact


def test_bounded_range_is_four_times_tighter() -> None:
    assert bounded_range_to_zcdp(1.0) == ZCDP(0.125)
    assert bounded_range_to_zcdp(PureDP(2.0)) == ZCDP(0.5)
    for eps in (0.1, 0.5, 1.7):
        assert bounded_range_to_zcdp(eps).rho == pytest.approx(pure_to_zcdp(eps).rho / 4)


@pytest.mark.parametrize("bad", [-1.0, math.nan, math.inf])
def test_pure_to_zcdp_rejects_bad_numbers(bad: float) -> None:
    with pytest.raises(ParameterError, match="pure_to_zcdp: `epsilon`"):
        pure_to_zcdp(bad)


def test_pure_to_zcdp_rejects_wrong_types() -> None:
    with pytest.raises(ParameterError, match="delta > 0"):
        pure_to_zcdp(ApproxDP(1.0, 1e-6))
    with pytest.raises(TypeError, match="pure epsilon-DP"):
        pure_to_zcdp(ZCDP(1.0))  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        pure_to_zcdp(True)
    with pytest.raises(TypeError):
        bounded_range_to_zcdp("1.0")  # type: ignore[arg-type]


# --- zCDP -> (epsilon, delta) ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("rho", "delta"), [(0.5, 1e-6), (1.0, 1e-5), (0.01, 1e-9), (2.0, 0.01), (1e-4, 1e-6)]
)
def test_standard_conversion_matches_formula(rho: float, delta: float) -> None:
    expected = rho + 2 * math.sqrt(rho * math.log(1 / delta))
    out = zcdp_to_approx(ZCDP(rho), delta, method="standard")
    assert out.delta == delta
    # rounded up by a few ulps only
    assert expected <= out.epsilon <= expected * (1 + 1e-14)


def test_standard_conversion_worked_example() -> None:
    # rho = 0.5, delta = 1e-6: 0.5 + 2 sqrt(0.5 * 13.815510557964274) = 5.756521769756...
    assert zcdp_to_approx(0.5, 1e-6, method="standard").epsilon == pytest.approx(
        5.756521769756932, rel=1e-14
    )


@pytest.mark.parametrize("rho", [1e-6, 1e-3, 0.1, 0.5, 1.0, 10.0, 1000.0])
@pytest.mark.parametrize("delta", [1e-12, 1e-6, 1e-2])
def test_cks_conversion_matches_independent_computation(rho: float, delta: float) -> None:
    expected = _cks_epsilon(rho, delta)
    got = zcdp_to_approx(ZCDP(rho), delta).epsilon
    # Two independent optimisations of the same smooth function; both converge to ~1e-15
    # relative, so 1e-9 leaves room for the optimisers while catching any formula error
    # (a wrong term changes epsilon by far more than 1e-9).
    assert got == pytest.approx(expected, rel=1e-9, abs=1e-12)
    # soundness: the delta actually implied at our epsilon is within the requested delta
    assert _cks_delta(rho, got) <= delta * (1 + 1e-9)


@pytest.mark.parametrize("rho", [1e-5, 0.01, 0.5, 3.0, 100.0])
@pytest.mark.parametrize("delta", [1e-10, 1e-5, 0.1])
def test_cks_never_worse_than_standard(rho: float, delta: float) -> None:
    cks = zcdp_to_approx(rho, delta).epsilon
    std = zcdp_to_approx(rho, delta, method="standard").epsilon
    # strictly better: the CKS terms alpha log(1 - 1/alpha) - log(alpha - 1) add up to a
    # negative amount at every alpha > 1, so the standard bound is never attained
    assert cks < std


def test_zero_rho_converts_to_zero_epsilon() -> None:
    assert zcdp_to_approx(ZCDP(0.0), 1e-6) == ApproxDP(0.0, 1e-6)


def test_cks_known_value() -> None:
    # rho = 1/2 (Gaussian mechanism, sensitivity 1, sigma 1), delta = 1e-6: computed by the
    # independent root-finding above (scipy brentq on the Corollary 13 delta): 5.22153444453017
    assert zcdp_to_approx(0.5, 1e-6).epsilon == pytest.approx(5.22153444453017, rel=1e-12)


@pytest.mark.parametrize("delta", [0.0, 1.0, -1e-6, math.nan, 2.0])
def test_zcdp_to_approx_rejects_bad_delta(delta: float) -> None:
    with pytest.raises(ParameterError, match="zcdp_to_approx: `delta`"):
        zcdp_to_approx(0.5, delta)


def test_zcdp_to_approx_rejects_bad_inputs() -> None:
    with pytest.raises(ParameterError, match="`rho`"):
        zcdp_to_approx(-0.1, 1e-6)
    with pytest.raises(TypeError, match="needs a zCDP guarantee"):
        zcdp_to_approx(PureDP(1.0), 1e-6)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="`method`"):
        zcdp_to_approx(0.5, 1e-6, method="rdp")  # type: ignore[arg-type]


@pytest.mark.parametrize("rho", [0.01, 0.1, 0.3])
@pytest.mark.parametrize("delta", [0.3, 0.5, 0.9])
def test_cks_sound_when_terms_cancel(rho: float, delta: float) -> None:
    # With delta near 1 the positive and negative terms of the CKS expression nearly cancel;
    # the returned epsilon must still imply at most delta (independent scipy computation).
    got = zcdp_to_approx(rho, delta).epsilon
    if got > 0:
        assert _cks_delta(rho, got) <= delta * (1 + 1e-9)
    assert got >= _cks_epsilon(rho, delta) - 1e-12


# ------------------------------------------------------------------------- approx_to_zcdp


@pytest.mark.parametrize(
    ("eps", "delta"),
    [(1.0, 1e-6), (0.1, 1e-9), (8.0, 1e-5), (1e-7, 1e-10), (10.0, 1e-300), (3.0, 0.5)],
)
def test_approx_to_zcdp_is_the_largest_rho_that_fits(eps: float, delta: float) -> None:
    # within the budget (the certified conversion), and a rho 1e-8 larger would not be
    rho = approx_to_zcdp(eps, delta).rho
    assert rho > 0
    assert zcdp_to_approx(rho, delta).epsilon <= eps
    assert zcdp_to_approx(rho * (1 + 1e-8), delta).epsilon > eps


def test_approx_to_zcdp_beats_the_standard_bound() -> None:
    # the standard bound solved for rho: (sqrt(log(1/delta) + eps) - sqrt(log(1/delta)))**2;
    # CKS is tighter, so the rho it allows is larger
    lg = math.log(1e6)
    standard = (math.sqrt(lg + 1.0) - math.sqrt(lg)) ** 2
    assert approx_to_zcdp(1.0, 1e-6).rho > standard * 1.1


@pytest.mark.parametrize(("eps", "delta"), [(1e300, 0.5), (1.7e308, 0.999), (1e300, 1e-300)])
def test_approx_to_zcdp_at_the_top_of_the_float_range(eps: float, delta: float) -> None:
    rho = approx_to_zcdp(eps, delta).rho
    assert math.isfinite(rho) and rho > 0
    assert zcdp_to_approx(rho, delta).epsilon <= eps


def test_approx_to_zcdp_underflows_to_zero() -> None:
    assert approx_to_zcdp(1e-300, 1e-10) == ZCDP(0.0)


@pytest.mark.parametrize("eps", [0.0, -1.0, math.inf, math.nan])
def test_approx_to_zcdp_rejects_bad_epsilon(eps: float) -> None:
    with pytest.raises(ParameterError, match="approx_to_zcdp: `epsilon`"):
        approx_to_zcdp(eps, 1e-6)


@pytest.mark.parametrize("delta", [0.0, 1.0, math.nan])
def test_approx_to_zcdp_rejects_bad_delta(delta: float) -> None:
    with pytest.raises(ParameterError, match="approx_to_zcdp: `delta`"):
        approx_to_zcdp(1.0, delta)
