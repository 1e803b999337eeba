"""Propose-test-release: distance against brute force, refusal rates, privacy cost, errors."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

import dpkit
from dpkit.frameworks import distance_to_high_sensitivity, propose_test_release, ptr_threshold
from dpkit.samplers.heavy_tailed import rounded_laplace

UNI = [0.0, 1.0, 2.0, 3.0, 4.0]


def _grid(scale: float) -> float:
    """The frameworks' power-of-two grid, ``2**(floor(log2(scale)) - 30)`` (module docs)."""
    return 2.0 ** (math.floor(math.log2(scale)) - 30)


def _threshold(eps_test: float, delta: float) -> tuple[float, float]:
    """``(T, g)`` from the derivation in the module docstring, written out independently:
    the noisy distance is ``D + g round(X / g)``, ``X ~ Laplace((1 + g) / eps_test)``, and at
    ``D = 0`` it passes with probability ``<= exp(-eps_test (T - g/2) / (1 + g)) / 2 = delta``
    when ``T = (1 + g) ln(1 / (2 delta)) / eps_test + g``."""
    g = _grid(1 / eps_test)
    return (1 + g) * math.log(1 / (2 * delta)) / eps_test + g, g


def _pass_probability(distance: int, eps_test: float, delta: float) -> float:
    """Exact ``P[D + g K > T]`` for ``K = round(X / g)``: ``K >= m = floor((T - D) / g) + 1``,
    and ``P[K >= m] = P[X >= (m - 1/2) g]`` (Laplace tails, either side of zero)."""
    t, g = _threshold(eps_test, delta)
    b = (1 + g) / eps_test
    m = math.floor((t - distance) / g) + 1
    edge = (m - 0.5) * g
    return 0.5 * math.exp(-edge / b) if edge >= 0 else 1 - 0.5 * math.exp(edge / b)


def _ls1(y: tuple[float, ...], f) -> float:
    if len(y) < 1:
        return 0.0
    fy = f(y)
    nbrs = [(*y, v) for v in UNI] + [y[:i] + y[i + 1 :] for i in range(len(y)) if len(y) > 1]
    return max(abs(fy - f(z)) for z in nbrs)


def _ball(x: tuple[float, ...], k: int) -> set[tuple[float, ...]]:
    out = set()
    for r in range(k + 1):
        for removed in itertools.combinations(range(len(x)), r):
            kept = [v for i, v in enumerate(x) if i not in removed]
            for a in range(k - r + 1):
                for added in itertools.combinations_with_replacement(UNI, a):
                    if kept or added:  # datasets of size 0 are out of scope
                        out.add(tuple(sorted(kept + list(added))))
    return out


def _brute_distance(x: list[float], f, b: float, kmax: int = 4) -> int:
    for k in range(kmax + 1):
        if max(_ls1(y, f) for y in _ball(tuple(sorted(x)), k)) > b:
            return k
    return kmax + 1


@pytest.mark.parametrize("name", ["mean", "median"])
def test_distance_matches_brute_force(name: str) -> None:
    f = (lambda y: float(np.mean(y))) if name == "mean" else (lambda y: float(np.median(y)))
    rng = np.random.default_rng(0)
    for _ in range(12):
        x = rng.integers(0, 5, int(rng.integers(2, 5))).astype(float).tolist()
        b = float(rng.choice([0.2, 0.4, 0.6, 1.0, 1.5]))
        want = _brute_distance(x, f, b, kmax=3)
        got = distance_to_high_sensitivity(name, x, b, bounds=(0, 4), cap=4)
        assert got == want, (x, b)


def test_threshold_is_the_derived_formula() -> None:
    assert ptr_threshold(0.5, 1e-6) == pytest.approx(math.log(1 / 2e-6) / 0.5)


def test_refuses_at_high_sensitivity_at_the_rate_the_theorem_predicts() -> None:
    # D = 0 (b below LS): passing needs the noise past T, probability about delta
    delta = 0.05
    x = [1.0, 2.0, 3.0]
    assert distance_to_high_sensitivity("mean", x, 0.01, bounds=(0, 10)) == 0
    p_pass = _pass_probability(0, 1.0, delta)
    assert p_pass == pytest.approx(delta, rel=1e-6)  # the threshold's whole point
    passes = sum(
        not propose_test_release(
            x, "mean", 0.01, epsilon=2.0, delta=delta, bounds=(0, 10), rng=s
        ).refused
        for s in range(2000)
    )
    # binomial(2000, 0.05): 4 standard deviations = 39
    assert abs(passes - 2000 * p_pass) <= 4 * math.sqrt(2000 * p_pass * (1 - p_pass))


def test_pass_rate_at_known_distance_matches_laplace_tail() -> None:
    # the distance (checked against brute force above) is 3 here
    x = [2.0, 2.0, 2.0, 2.0]
    d = distance_to_high_sensitivity("median", x, 0.5, bounds=(0, 4))
    assert d == _brute_distance(x, lambda y: float(np.median(y)), 0.5, kmax=3) == 3
    eps_t, delta = 1.0, 0.02
    # T = ln(25) = 3.22 just above d: P[pass] = P[Lap(1) > T - d] = 0.40; with T 10% low
    # (2.90, below d) it is 0.55, and 600 runs put 7 standard deviations between them
    p_pass = _pass_probability(d, eps_t, delta)
    assert p_pass == pytest.approx(0.5 * math.exp(-(math.log(25) - d) * eps_t), rel=1e-6)
    n = 600
    passes = sum(
        not propose_test_release(
            x, "median", 0.5, epsilon=2.0, delta=delta, bounds=(0, 4), rng=s
        ).refused
        for s in range(n)
    )
    assert abs(passes - n * p_pass) <= 4 * math.sqrt(n * p_pass * (1 - p_pass))


def test_noisy_distance_and_release_are_exact_rounded_laplace_draws() -> None:
    # Coupling: with a seed, PTR draws K1 (the distance noise, ratio (1 + g) / (eps_t g)) and
    # then K2 (the release noise, ratio (b + g2) / (eps_r g2)) from one bit source, each with
    # dpkit's exact rounded-Laplace sampler, whose law tests/frameworks checks. The ratios
    # are ~2**30, so any scale error above ~1e-9 relative (sensitivity 1 of the distance,
    # the epsilon split, the grid charges) changes the draws.
    x = np.arange(20.0, 70.0).repeat(100)  # far from high sensitivity: the test passes
    b, eps, delta, frac = 0.05, 2.0, 1e-6, 0.25
    eps_t, eps_r = eps * frac, eps * (1 - frac)
    t, g = _threshold(eps_t, delta)
    g2 = _grid(b / eps_r)
    cap = math.ceil(t + 60 / eps_t)  # distances are capped there (public parameters only)
    distance = distance_to_high_sensitivity("mean", x, b, bounds=(0, 100), cap=cap)
    assert distance == cap  # A(k) stays below b: the test passes but with probability e**-60
    for seed in range(8):
        rel = propose_test_release(
            x, "mean", b, epsilon=eps, delta=delta, bounds=(0, 100), test_fraction=frac, rng=seed
        )
        source = dpkit.samplers.SeededSource(seed)
        k1 = rounded_laplace(Fraction(1 + g) / Fraction(eps_t) / Fraction(g), 1, source)[0]
        k2 = rounded_laplace(
            (Fraction(b) + Fraction(g2)) / Fraction(eps_r) / Fraction(g2), 1, source
        )[0]
        assert rel.details["threshold"] == pytest.approx(t, rel=1e-12)
        assert rel.details["noisy_distance"] == (round(distance / g) + int(k1)) * g
        assert not rel.refused
        assert rel.value == (round(float(np.mean(x)) / g2) + int(k2)) * g2
        # the scale itself, exactly: a grid charge of 2**-30 relative is below what draws
        # can show (the rounded Laplace sampler is not an inversion in the scale)
        assert rel.scale == float((Fraction(b) + Fraction(g2)) / Fraction(eps_r))


def test_release_and_refusal_both_charge_the_full_cost() -> None:
    acct = dpkit.Accountant(dpkit.ApproxDP(10.0, 0.5))
    ages = np.arange(20.0, 70.0).repeat(100)
    ok = propose_test_release(
        ages, "mean", 0.05, epsilon=2.0, delta=1e-6, bounds=(0, 100), rng=0, accountant=acct
    )
    no = propose_test_release(
        ages, "mean", 1e-4, epsilon=2.0, delta=1e-6, bounds=(0, 100), rng=0, accountant=acct
    )
    assert not ok.refused and no.refused and no.value is None
    assert ok.privacy == no.privacy == dpkit.ApproxDP(2.0, 1e-6)
    assert [s.cost for s in acct.history] == [dpkit.ApproxDP(2.0, 1e-6)] * 2
    assert ok.scale == pytest.approx(0.05 / 1.0, rel=1e-6)
    assert ok.details["threshold"] == pytest.approx(ptr_threshold(1.0, 1e-6), rel=1e-6)
    assert abs(ok.value - ages.mean()) < 1


def test_released_values_on_neighbours_respect_the_claim() -> None:
    # both datasets are far from high sensitivity, so releases are Laplace(b / eps_r) around
    # each mean; the means differ by at most b. Bins with mass >= 0.05 over 1500 draws have
    # log-ratio standard error <= sqrt(2 / 75) = 0.16; allow 3.
    x = np.full(50, 10.0)
    y = x.copy()
    y[0] = 0.0  # a neighbour under replacement; mean moves by 0.2 = b
    b, eps = 0.2, 2.0
    a = [
        propose_test_release(
            x, "mean", b, epsilon=eps, delta=1e-3, bounds=(0, 10), relation="bounded", rng=s
        ).value
        for s in range(1500)
    ]
    c = [
        propose_test_release(
            y, "mean", b, epsilon=eps, delta=1e-3, bounds=(0, 10), relation="bounded", rng=9000 + s
        ).value
        for s in range(1500)
    ]
    assert None not in a and None not in c
    edges = np.linspace(9.0, 10.6, 9)
    ha = np.histogram(a, edges)[0] / 1500
    hc = np.histogram(c, edges)[0] / 1500
    keep = (ha >= 0.05) & (hc >= 0.05)
    assert keep.sum() >= 3
    assert np.abs(np.log(ha[keep] / hc[keep])).max() <= eps / 2 + 3 * math.sqrt(2 / 75)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"delta": 0.0}, "delta"),
        ({"delta": 1.0}, "delta"),
        ({"delta": -0.1}, "delta"),
        ({"proposed_bound": 0.0}, "proposed_bound"),
        ({"proposed_bound": -1.0}, "proposed_bound"),
        ({"epsilon": 0}, "epsilon"),
        ({"data": [1.0, float("nan")]}, "NaN"),
        ({"bounds": (10, 0)}, "lower < upper"),
        ({"test_fraction": 1.0}, "test_fraction"),
        ({"relation": "sideways"}, "relation"),
    ],
)
def test_bad_input_gets_a_clear_error(kwargs: dict, match: str) -> None:
    args = {
        "data": [1.0, 2.0, 3.0],
        "query": "mean",
        "proposed_bound": 0.5,
        "epsilon": 1.0,
        "delta": 1e-6,
        "bounds": (0, 10),
    }
    args.update(kwargs)
    with pytest.raises(dpkit.ParameterError, match=match):
        propose_test_release(**args)


def _scan_distance(values, env, stable, b, cap):
    """Reference: the distance by the toolkit's scan over every k, as
    distance_to_high_sensitivity computed it before its percentile search, from ``values``
    (``at_distance.sequence``: A(f, x, k) from all the candidates of every distance, up to the
    stable distance) and the same stopping rules."""
    limit = cap if cap is not None else env.size
    for k, a in enumerate(values):
        if a > b:
            return k
        if k + 1 >= limit or k >= stable or env[min(k + 1, env.size - 1) :].max() <= b:
            return cap if cap is not None else -1
    raise AssertionError("unreachable")


def test_percentile_distance_search_equals_the_full_scan() -> None:
    """Percentiles with a level of denominator <= 16 find the first k with A(k) > b by a
    galloping search over exact A at a few distances (O(k D) each; compare's Adult median at
    epsilon 1e-12 went from > 600 s to under a second): the same distance as the scan, for
    bounds b at and just below the values A takes (where an off-by-one shows), several caps,
    both relations, ties, atoms at the bounds and n = 1, 2, 3."""
    from dpkit.queries import resolve
    from dpkit.sensitivity import at_distance

    rng = np.random.default_rng(20261124)
    levels = ("median", "p25", "p75", "p6.25", "p93.75", "p0", "p100", "p37.5", "p12.5")
    checked = 0
    for i in range(120):
        n = (1, 2, 3)[i % 3] if i % 5 == 0 else int(rng.integers(1, 40))
        shape = i % 4
        if shape == 0:
            x, bounds = rng.integers(0, 12, n).astype(float), (0.0, 12.0)
        elif shape == 1:  # off the lattice of the bounds
            x, bounds = rng.normal(50, 10, n).clip(0, 100), (0.0, 100.0)
        elif shape == 2:  # atoms at the bounds and long runs of ties
            x, bounds = rng.choice([0.0, 10.0, 10.0, 4.0], n), (0.0, 10.0)
        else:
            x, bounds = np.repeat(rng.integers(0, 5, 3), n // 3 + 1)[:n].astype(float), (0.0, 9.0)
        q = resolve(levels[i % len(levels)])
        relation = ("unbounded", "bounded")[i % 2]
        xs, lo, hi = at_distance.prepare("t", q, x, bounds)
        stable = at_distance.stable_distance(q, n, relation)
        env = at_distance.upper_envelope(q, xs, relation, lo, hi, n + 3)
        values = list(itertools.islice(at_distance.sequence(q, xs, relation, lo, hi), stable + 1))
        jumps = sorted({v for v in values if v > 0})
        jumps = [jumps[j] for j in sorted({0, len(jumps) // 2, len(jumps) - 1})] if jumps else []
        for b in [*jumps, *(float(np.nextafter(v, 0)) for v in jumps)]:
            for cap in (None, 1, max(1, n // 2), 3 * n + 7):
                want = _scan_distance(values, env, stable, b, cap)
                got = distance_to_high_sensitivity(
                    q, x, b, bounds=bounds, relation=relation, cap=cap
                )
                assert got == want, (x.tolist(), q.name, relation, b, cap)
                checked += 1
    assert checked > 2000
