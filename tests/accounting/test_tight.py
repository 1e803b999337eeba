"""Tight composition against exact oracles, reference values and its own invariants.

Oracles, computed here independently of dpkit's code:

* Gaussian: the closed form of mu-GDP, delta(e) = Phi(-e/mu + mu/2) - e^e Phi(-e/mu - mu/2)
  (Balle and Wang 2018), solved with SciPy to about 1e-12.
* Randomized response: the composed privacy loss is eps (i - j) with (i, j) multinomial, so
  delta(e) is a finite sum, enumerated exactly (in log space).
* Laplace: the loss distribution of one release (atoms at +-eps0 and a density between)
  bucketed on a grid of step eps0 / 2000 that holds the atoms exactly, rounded up
  (pessimistic) and down (optimistic), composed with SciPy's FFT convolution: the true
  epsilon lies in the sandwich [optimistic, pessimistic], about 3e-4 wide at k = 100.

Reference values (dp_accounting 0.6.0 and prv_accountant 0.2.0) are from the wave-3 survey.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, signal, special

from dpkit import ParameterError
from dpkit.accounting import Composition, compose
from dpkit.accounting import events as ev

# --- oracles -----------------------------------------------------------------------------


def _gdp_delta(mu: float, e: float) -> float:
    a = -e / mu + mu / 2
    # e^e Phi(a - mu) = exp(e + log_ndtr(a - mu)), both terms from log_ndtr
    return math.exp(special.log_ndtr(a)) - math.exp(e + special.log_ndtr(a - mu))


def _gdp_epsilon(mu: float, delta: float) -> float:
    if _gdp_delta(mu, 0.0) <= delta:
        return 0.0
    return optimize.brentq(lambda e: _gdp_delta(mu, e) - delta, 0.0, 100.0, xtol=1e-14)


def _solve(delta_of: object, delta: float, hi: float) -> float:
    """Smallest e >= 0 with delta_of(e) <= delta, for a decreasing delta_of."""
    f = delta_of  # type: ignore[assignment]
    if f(0.0) <= delta:  # type: ignore[operator]
        return 0.0
    return optimize.brentq(lambda e: f(e) - delta, 0.0, hi, xtol=1e-13)  # type: ignore[operator]


def _rr_delta(eps: float, categories: int, n: int, e: float) -> float:
    """Exact delta(e) of n-fold k-ary randomized response, by enumeration."""
    z = math.exp(eps) + categories - 1
    la, lb = eps - math.log(z), -math.log(z)
    lc = math.log(categories - 2) - math.log(z) if categories > 2 else 0.0
    total = 0.0
    for i in range(n + 1):
        # binary RR never answers "neither": then j = n - i
        j = np.arange(n - i + 1) if categories > 2 else np.array([n - i])
        rest = n - i - j
        logp = (
            special.gammaln(n + 1)
            - special.gammaln(i + 1)
            - special.gammaln(j + 1)
            - special.gammaln(rest + 1)
            + i * la
            + j * lb
            + rest * lc
        )
        loss = eps * (i - j)
        w = -np.expm1(np.minimum(e - loss, 0.0))
        total += float(np.sum(np.exp(logp) * w))
    return total


def _laplace_sandwich(eps0: float, k: int, delta: float) -> tuple[float, float]:
    """(optimistic, pessimistic) epsilon of k Laplace releases of epsilon eps0."""
    m = 2000
    h = eps0 / m
    j = np.arange(-m, m + 1)
    edges = np.arange(-m, m + 1) * h
    # density e^((l - eps0)/2) / 4 on (-eps0, eps0): mass of [l_j, l_j + h]
    cell = 0.5 * np.exp((edges[:-1] - eps0) / 2) * np.expm1(h / 2)
    out = []
    for up in (False, True):
        p = np.zeros(j.size)
        p[0] += 0.5 * math.exp(-eps0)  # atom at -eps0
        p[-1] += 0.5  # atom at +eps0
        if up:
            p[1:] += cell
        else:
            p[:-1] += cell
        q, start, power = np.array([1.0]), 0, k
        base, base_start = p, -m
        while power:
            if power & 1:
                q = np.maximum(signal.fftconvolve(q, base), 0.0)
                start += base_start
            power >>= 1
            if power:
                base = np.maximum(signal.fftconvolve(base, base), 0.0)
                base_start *= 2
        loss = (start + np.arange(q.size)) * h

        def delta_of(e: float, q: np.ndarray = q, loss: np.ndarray = loss) -> float:
            return float(np.sum(q * -np.expm1(np.minimum(e - loss, 0.0))))

        out.append(_solve(delta_of, delta, k * eps0))
    return out[0], out[1]


# --- exact Gaussian composition ----------------------------------------------------------

TABLE_A = [  # k, sigma, delta, exact epsilon (the survey's Table A)
    (1, 1, 1e-5, 4.37718),
    (1, 1, 1e-6, 4.88655),
    (10, 5, 1e-5, 2.59438),
    (10, 5, 1e-6, 2.92160),
    (100, 10, 1e-5, 4.37718),
    (100, 10, 1e-6, 4.88655),
    (1000, 30, 1e-5, 4.65298),
    (1000, 30, 1e-6, 5.18904),
    (1000, 50, 1e-5, 2.59438),
    (1000, 50, 1e-6, 2.92160),
    (10000, 100, 1e-5, 4.37718),
    (10000, 100, 1e-6, 4.88655),
]


@pytest.mark.parametrize(("k", "sigma", "delta", "table"), TABLE_A)
def test_gaussian_composition_is_the_closed_form_never_below(
    k: int, sigma: float, delta: float, table: float
) -> None:
    c = compose([(ev.Gaussian(sigma=sigma), k)], delta=delta)
    exact = _gdp_epsilon(math.sqrt(k) / sigma, delta)
    # the oracle is good to ~1e-12; dpkit certifies its float error, so it is never below
    assert exact - 1e-10 <= c.by_method["gaussian"] <= exact + 1e-4
    assert exact - 1e-10 <= c.epsilon <= c.by_method["gaussian"]
    assert c.method == "gaussian" or k == 1  # one release: basic composition is exact too
    assert c.lower is not None and exact - 1e-4 <= c.lower <= exact + 1e-10
    assert round(exact, 5) == pytest.approx(table, abs=1e-5)
    assert c.delta_at(c.epsilon) <= delta
    assert c.delta_at(max(c.epsilon - 1e-6, 0.0)) > delta


def test_gaussians_of_different_sigma_and_sensitivity_compose_exactly() -> None:
    rng = np.random.default_rng(0)
    sigmas = rng.uniform(20, 60, 1000)  # the survey's Table E ledger
    c = compose([ev.Gaussian(sigma=float(s)) for s in sigmas], delta=1e-6)
    exact = _gdp_epsilon(math.sqrt(float(np.sum(1 / sigmas**2))), 1e-6)
    assert exact - 1e-10 <= c.epsilon <= exact + 1e-4
    assert round(exact, 5) == 4.30524
    mixed = compose([ev.Gaussian(sigma=2.0, sensitivity=3.0), ev.Gaussian(sigma=1.5)], delta=1e-6)
    assert mixed.epsilon == pytest.approx(_gdp_epsilon(math.sqrt(1.5**2 + 1 / 1.5**2), 1e-6))


# --- the PLD analysis against exact oracles ----------------------------------------------


@pytest.mark.parametrize(
    ("k", "sigma", "delta"), [(1, 1.0, 1e-5), (100, 10.0, 1e-6), (10000, 100.0, 1e-5)]
)
def test_gaussian_pld_is_never_below_the_closed_form(k: int, sigma: float, delta: float) -> None:
    # the PLD analysis alone: its discretisation must round against the caller
    c = compose([(ev.Gaussian(sigma=sigma), k)], delta=delta, methods=["pld"])
    exact = _gdp_epsilon(math.sqrt(k) / sigma, delta)
    # connect-the-dots on 2**16 points: within 3e-4 even at k = 10**4 (merged to one pair)
    assert exact - 1e-10 <= c.epsilon <= exact + 3e-4
    assert c.lower is not None and c.lower <= exact + 1e-10
    grid = np.linspace(0.0, exact * 1.5, 7)
    for e in grid:
        assert c.delta_at(float(e)) >= _gdp_delta(math.sqrt(k) / sigma, float(e)) - 1e-15


@pytest.mark.parametrize(
    ("eps", "categories", "n", "delta"),
    [(0.1, 2, 100, 1e-5), (0.5, 4, 100, 1e-5), (1.0, 2, 20, 1e-6), (0.05, 3, 400, 1e-6)],
)
def test_randomized_response_pld_matches_exact_enumeration(
    eps: float, categories: int, n: int, delta: float
) -> None:
    exact = _solve(lambda e: _rr_delta(eps, categories, n, e), delta, n * eps)
    c = compose([(ev.RandomizedResponse(epsilon=eps, categories=categories), n)], delta=delta)
    assert c.method == "pld"
    # never below the exact value; connect-the-dots' excess is second order in the grid step
    assert exact - 1e-9 <= c.epsilon <= exact + 1e-3
    assert c.lower is not None and c.lower <= exact + 1e-9
    # pure epsilon-DP with no other information composes exactly as binary RR
    if categories == 2:
        assert compose([(ev.Approx(epsilon=eps), n)], delta=delta).epsilon == pytest.approx(
            c.epsilon, abs=1e-9
        )


@pytest.mark.parametrize("points", [2**8, 2**10])
def test_lower_bound_holds_on_coarse_grids(points: int) -> None:
    """On a coarse grid connect-the-dots overshoots (by 0.23 at 2**8 points for 100 RR
    releases); the lower bound must still account for that rounding and stay below."""
    exact = _solve(lambda e: _rr_delta(0.1, 2, 100, e), 1e-5, 10.0)
    c = compose([(ev.RandomizedResponse(epsilon=0.1), 100)], delta=1e-5, pld_points=points)
    assert c.lower is not None and c.lower <= exact - 1e-9 <= c.epsilon
    g = compose([(ev.Gaussian(sigma=0.5), 1)], delta=1e-5, pld_points=points, methods=["pld"])
    exact = _gdp_epsilon(2.0, 1e-5)
    assert g.lower is not None and g.lower <= exact <= g.epsilon + 1e-10


@pytest.mark.parametrize(("eps0", "k", "delta"), [(0.1, 100, 1e-5), (0.5, 20, 1e-6)])
def test_laplace_pld_lies_in_the_fine_grid_sandwich(eps0: float, k: int, delta: float) -> None:
    low, high = _laplace_sandwich(eps0, k, delta)
    c = compose([(ev.Laplace(scale=1 / eps0), k)], delta=delta)
    assert c.method == "pld"
    assert low - 1e-9 <= c.epsilon <= high + 1e-4
    assert c.lower is not None and c.lower <= high


def test_discrete_laplace_of_sensitivity_one_is_randomized_response() -> None:
    # P[z] ~ e^{-|z|/b} with Delta = 1 has loss +-1/b only: binary RR with epsilon 1/b
    a = compose([(ev.Laplace(scale=10.0, discrete=True), 100)], delta=1e-5)
    exact = _solve(lambda e: _rr_delta(0.1, 2, 100, e), 1e-5, 10.0)
    assert exact - 1e-9 <= a.epsilon <= exact + 1e-3
    assert a.epsilon > compose([(ev.Laplace(scale=10.0), 100)], delta=1e-5).epsilon


# --- reference values from dp_accounting and prv_accountant ------------------------------


@pytest.mark.parametrize(
    ("eps0", "k", "delta", "pld", "prv_low"),
    [
        (0.1, 100, 1e-5, 4.2203, 4.2065),
        (0.1, 100, 1e-6, 4.6927, 4.6869),
        (0.01, 1000, 1e-5, 1.1957, 1.1828),
        (1.0, 10, 1e-5, 9.9900, 9.9774),
    ],
)
def test_laplace_ledgers_meet_dp_accountings_pld(
    eps0: float, k: int, delta: float, pld: float, prv_low: float
) -> None:
    c = compose([(ev.Laplace(scale=1 / eps0), k)], delta=delta)
    assert prv_low <= c.epsilon <= pld + 1e-3
    assert c.by_method["basic"] == pytest.approx(k * eps0, rel=1e-12)
    assert c.epsilon < c.by_method["rdp"] < c.by_method["basic"]


@pytest.mark.slow
def test_dp_sgd_lies_in_prvs_certified_interval() -> None:
    # MNIST, Abadi et al. 2016: N = 60000, batch 256, sigma 1.1, 60 epochs (14063 steps)
    steps = math.ceil(60 * 60000 / 256)
    c = compose([(ev.SubsampledGaussian(sigma=1.1, rate=256 / 60000), steps)], delta=1e-5)
    assert c.method == "pld"
    assert 2.3715 <= c.epsilon <= 2.3918  # prv_accountant's [low, up] at eps_error 0.01
    assert c.lower is not None and c.lower <= 2.3918
    assert c.by_method["rdp"] == pytest.approx(2.5967, abs=0.01)  # the survey's RDP column


def test_exponential_mechanism_is_charged_as_bounded_range() -> None:
    # one release: the PLD of the envelope pair reproduces the optimal profile exactly
    for eps in (0.5, 2.0):
        c = compose([ev.Exponential(epsilon=eps)], delta=1e-5, methods=["pld"])
        for e in np.linspace(0.0, eps * 0.95, 6):
            exact = (math.exp(eps / 2) - math.exp(e / 2)) ** 2 / math.expm1(eps)
            assert exact <= c.delta_at(float(e)) <= exact + 1e-8
    # many: below the same ledger charged as plain epsilon-DP, by PLD and by zCDP (eps^2/8)
    ledger = [(ev.Laplace(scale=10.0), 50), (ev.Gaussian(sigma=20.0), 50)]
    br = compose([*ledger, (ev.Exponential(epsilon=0.1), 50)], delta=1e-5)
    pure = compose([*ledger, (ev.Approx(epsilon=0.1), 50)], delta=1e-5)
    assert br.epsilon < pure.epsilon - 0.1
    assert br.lower is None  # the envelope is not attained by one mechanism


# --- the result object and its invariants ------------------------------------------------


def test_epsilon_is_the_smallest_method_and_each_is_a_valid_bound() -> None:
    ledger = [
        (ev.Laplace(scale=20.0), 30),
        (ev.Gaussian(sigma=15.0), 20),
        (ev.RandomizedResponse(epsilon=0.2), 10),
        (ev.KeySelection(delta=1e-9), 30),
    ]
    c = compose(ledger, delta=1e-6)
    assert set(c.by_method) == {"pld", "rdp", "zcdp", "basic"}
    assert c.epsilon == min(c.by_method.values()) == c.by_method[c.method]
    assert c.lower is not None and c.lower <= c.epsilon
    for method, d in c.delta_by_method(c.by_method["rdp"]).items():
        assert 0 <= d <= 1, method
    assert c.delta_by_method(c.by_method["basic"])["basic"] <= 1e-6 * (1 + 1e-9)
    assert c.delta_by_method(c.by_method["zcdp"])["zcdp"] <= 1e-6 * (1 + 1e-6)
    assert c.delta_by_method(c.by_method["rdp"])["rdp"] <= 1e-6 * (1 + 1e-6)
    assert c.delta_at(c.epsilon) <= 1e-6
    with pytest.raises(TypeError):
        c.by_method["pld"] = 0.0  # type: ignore[index]


def test_more_events_never_cost_less() -> None:
    rng = np.random.default_rng(7)
    makers = [
        lambda: ev.Laplace(scale=float(rng.uniform(2, 50))),
        lambda: ev.Gaussian(sigma=float(rng.uniform(5, 50))),
        lambda: ev.Exponential(epsilon=float(rng.uniform(0.01, 0.3))),
        lambda: ev.SubsampledGaussian(sigma=float(rng.uniform(0.8, 2)), rate=0.01),
        lambda: ev.RandomizedResponse(epsilon=float(rng.uniform(0.05, 0.5))),
        lambda: ev.KeySelection(delta=1e-9),
        lambda: ev.Zcdp(rho=float(rng.uniform(1e-4, 1e-2))),
    ]
    for _ in range(4):
        ledger: list[tuple[ev.Event, int]] = []
        previous = compose(ledger, delta=1e-5)
        for _ in range(5):
            ledger.append((makers[int(rng.integers(len(makers)))](), int(rng.integers(1, 40))))
            now = compose(ledger, delta=1e-5)
            # every analysis is monotone in the ledger; the PLD grid may move with the
            # ledger, which could cost at most float-level noise
            assert now.epsilon >= previous.epsilon * (1 - 1e-9)
            for method, value in previous.by_method.items():
                if method in now.by_method and method != "pld":
                    assert now.by_method[method] >= value
            previous = now


def test_events_own_deltas_are_charged_first() -> None:
    lap = (ev.Laplace(scale=10.0), 10)
    c = compose([lap, (ev.KeySelection(delta=4e-6), 2)], delta=1e-5)
    # delta(e) = d + (1 - d) delta_laplace(e) with d = 1 - (1 - 4e-6)^2
    d = 1 - (1 - 4e-6) ** 2
    base = compose([lap], delta=(1e-5 - d) / (1 - d))
    assert c.epsilon == pytest.approx(base.epsilon, abs=1e-6)
    assert c.delta_at(c.epsilon) >= d
    # deltas that use up the budget leave no finite epsilon
    spent = compose([(ev.Approx(epsilon=0.1, delta=1e-5), 2)], delta=1e-5)
    assert math.isinf(spent.epsilon)


def test_empty_ledger_costs_nothing() -> None:
    c = compose([], delta=1e-5)
    assert (c.epsilon, c.method, dict(c.by_method), c.lower) == (0.0, "none", {}, 0.0)
    assert c.delta_at(1.0) == 0.0


def test_zcdp_events_are_composed_by_renyi_and_zcdp_only() -> None:
    c = compose([(ev.Zcdp(rho=0.01), 10), (ev.Gaussian(sigma=10.0), 5)], delta=1e-6)
    assert set(c.by_method) == {"rdp", "zcdp", "basic"}
    assert c.lower is None
    from dpkit.accounting import zcdp_to_approx

    assert c.by_method["zcdp"] == pytest.approx(zcdp_to_approx(0.125, 1e-6).epsilon, rel=1e-12)


def test_methods_keyword_restricts_the_analyses() -> None:
    ledger = [(ev.Laplace(scale=10.0), 100)]
    c = compose(ledger, delta=1e-5, methods=["rdp", "basic"])
    assert set(c.by_method) == {"rdp", "basic"} and c.method == "rdp"
    # advanced composition as Dwork, Rothblum and Vadhan state it (survey: 5.8502)
    adv = compose(ledger, delta=1e-5, methods=["advanced"])
    assert adv.epsilon == pytest.approx(5.8502, abs=1e-4)
    with pytest.raises(ParameterError, match="none of the analyses"):
        compose([ev.Zcdp(rho=0.1)], delta=1e-5, methods=["pld"])


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"delta": 0.0}, ParameterError, "compose: `delta`"),
        ({"delta": 1.0}, ParameterError, "compose: `delta`"),
        ({"delta": "1e-5"}, TypeError, "compose: `delta`"),
        ({"delta": 1e-5, "methods": "pld"}, TypeError, "not one string"),
        ({"delta": 1e-5, "methods": ["exact"]}, ParameterError, "`methods`"),
        ({"delta": 1e-5, "methods": []}, ParameterError, "`methods` is empty"),
        ({"delta": 1e-5, "pld_points": 10}, ParameterError, "`pld_points`"),
        ({"delta": 1e-5, "pld_points": 2.0**16}, TypeError, "`pld_points`"),
    ],
)
def test_compose_validates_its_arguments(kwargs: dict, error: type, message: str) -> None:
    with pytest.raises(error, match=message.replace("(", r"\(")):
        compose([ev.Laplace(scale=1.0)], **kwargs)


def test_delta_at_validates_epsilon() -> None:
    c = compose([ev.Laplace(scale=1.0)], delta=1e-5)
    assert isinstance(c, Composition)
    with pytest.raises(ParameterError, match="delta_at: `epsilon`"):
        c.delta_at(-1.0)
    with pytest.raises(TypeError):
        c.delta_at(None)  # type: ignore[arg-type]
    assert c.delta_at(1.0) == 0.0  # one Laplace release of epsilon 1 is pure 1-DP


@pytest.mark.parametrize(
    "event",
    [
        ev.Laplace(scale=1e-3),
        ev.Gaussian(sigma=1e-3),
        ev.Exponential(epsilon=50.0),
        ev.SubsampledGaussian(sigma=0.05, rate=0.5),
        ev.Approx(epsilon=2000.0),
        ev.Laplace(scale=1e6, sensitivity=3, discrete=True),
        ev.Gaussian(sigma=1e7, discrete=True),
        ev.Gaussian(sigma=1e-8, discrete=True),
        ev.SubsampledLaplace(scale=1e-4, rate=1e-6),
        ev.SubsampledGaussian(sigma=0.01, rate=0.5),
        ev.SubsampledGaussian(sigma=1e6, rate=1e-9),
        ev.Laplace(scale=1e9),
        ev.Exponential(epsilon=1e-9),
        ev.Laplace(scale=1e-6, sensitivity=10**9, discrete=True),
        ev.RandomizedResponse(epsilon=1e-9, categories=10**6),
    ],
    ids=repr,
)
@pytest.mark.parametrize("count", [3, 10**9])
def test_extreme_events_give_a_finite_or_infinite_bound_never_an_error(
    event: ev.Event, count: int
) -> None:
    c = compose([(event, count)], delta=1e-6)
    assert c.epsilon >= 0 and not math.isnan(c.epsilon)
    assert all(v >= 0 and not math.isnan(v) for v in c.by_method.values())
    assert c.lower is None or c.lower <= c.epsilon


def test_many_distinct_releases_match_exact_enumeration() -> None:
    """60 binary RR releases of distinct epsilons m / 1024: the composed loss lives on the
    lattice Z / 1024, so its law is an exact (extended-precision) convolution; dpkit merges
    such distinct releases pairwise before the final FFT."""
    rng = np.random.default_rng(3)
    ms = rng.integers(20, 200, 60)
    law = np.array([1.0], dtype=np.longdouble)
    for m in ms.tolist():
        e = math.exp(-m / 1024)
        step = np.zeros(2 * m + 1, dtype=np.longdouble)
        step[0], step[-1] = e / (1 + e), 1 / (1 + e)  # loss -m/1024, +m/1024
        law = np.convolve(law, step)
    loss = (np.arange(law.size) - int(ms.sum())) / 1024

    def delta_of(e: float) -> float:
        return float(np.sum(law * -np.expm1(np.minimum(e - loss, 0.0))))

    exact = _solve(delta_of, 1e-6, float(ms.sum()) / 1024)
    c = compose([ev.RandomizedResponse(epsilon=m / 1024) for m in ms.tolist()], delta=1e-6)
    assert c.method == "pld"
    assert exact - 1e-9 <= c.epsilon <= exact + 1e-4
    assert c.lower is not None and c.lower <= exact + 1e-9


def test_many_distinct_key_selections_charge_every_delta() -> None:
    """Distinct releases are merged before the FFT; each one's own delta must survive it."""
    ledger = [ev.KeySelection(delta=1e-7 * (1 + i / 100)) for i in range(40)]
    ledger += [ev.Laplace(scale=10.0 + i) for i in range(10)]
    c = compose(ledger, delta=1e-5)
    held = 1 - math.prod(1 - e.delta for e in ledger if isinstance(e, ev.KeySelection))
    assert c.delta_by_method(c.by_method["pld"])["pld"] >= held
    assert c.by_method["pld"] >= compose(ledger[40:], delta=1e-5 - held).by_method["pld"] - 1e-6
