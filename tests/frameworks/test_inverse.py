"""The inverse-sensitivity mechanism: loss against brute force, exact law, privacy, errors."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

import dpkit
from dpkit.frameworks import inverse_sensitivity, inverse_sensitivity_finite, loss_at, utility_bound
from dpkit.frameworks.inverse import inverse_sensitivity_sample


def _is_quantile(values: tuple[float, ...], t: float, p: float) -> bool:
    n = len(values)
    return sum(v < t for v in values) <= p * n and sum(v > t for v in values) <= (1 - p) * n


def _brute_loss(x: list[float], t: float, p: float, universe: list[float]) -> int:
    """Fewest replacements (values from universe or t itself) making t a p-quantile."""
    n = len(x)
    best = n + 1
    for cand in itertools.combinations_with_replacement(sorted(set(universe) | {t}), n):
        if _is_quantile(cand, t, p):
            common = sum(min(x.count(v), cand.count(v)) for v in set(cand))
            best = min(best, n - common)
    return best


def test_loss_matches_brute_force_on_random_small_cases() -> None:
    rng = np.random.default_rng(0)
    universe = [0.0, 1.0, 2.0, 3.0, 4.0]
    points = [0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0]
    for _ in range(40):
        n = int(rng.integers(1, 6))
        x = sorted(rng.integers(0, 5, n).astype(float).tolist())
        p = float(rng.choice([0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0]))
        got = loss_at(x, points, bounds=(0, 4), query="percentile", percentile=100 * p)
        want = [_brute_loss(x, t, p, universe) for t in points]
        assert got.tolist() == want, (x, p)


def test_loss_zero_exactly_on_the_median_set() -> None:
    # even n: every point between the middle values is a median (loss 0)
    assert loss_at([1, 2, 3, 4], [2.0, 2.5, 3.0, 1.5, 3.5], bounds=(0, 5)).tolist() == [
        0,
        0,
        0,
        1,
        1,
    ]


def test_finite_oracle_matches_fast_loss_for_lower_median() -> None:
    # func = "t is a median" encoded as output t when t is the lower median: the oracle's len
    # for the lower-median function on universe {0..3}; compare with brute force by hand
    rel = inverse_sensitivity_finite(
        [0, 1, 3], lambda c: c[len(c) // 2], [0, 1, 2, 3], [0, 1, 2, 3], epsilon=1.0, rng=0
    )
    # lower/upper median of 3 records is the middle one: [0,1,3] -> 1; 0 needs one change
    # (3 -> 0), 2 needs one (1 -> 2), 3 needs one (1 -> 3)
    assert rel.diagnostics["losses"] == (1, 0, 1, 1)
    unb = inverse_sensitivity_finite(
        [0, 1, 3],
        lambda c: c[(len(c) - 1) // 2],
        [0, 1, 2, 3],
        [0, 1, 2, 3],
        epsilon=1.0,
        relation="unbounded",
        max_loss=6,
        rng=0,
    )
    # unbounded: removing 3 gives [0, 1] whose lower median is 0 -> distance 1
    assert unb.diagnostics["losses"][0] == 1 and unb.diagnostics["losses"][1] == 0


def _class_probs(x: np.ndarray, p: float, eps: float, lower: float, upper: float) -> dict:
    """Exact probability of each loss value for the continuous mechanism (float check)."""
    xs = np.sort(np.clip(x, lower, upper))
    ext = np.concatenate(([lower], xs, [upper]))
    n = xs.size
    probs: dict[int, float] = {}
    for g in range(n + 1):
        length = ext[g + 1] - ext[g]
        loss = math.ceil(abs(g - p * n))
        probs[loss] = probs.get(loss, 0.0) + length * math.exp(-eps * loss / 2)
    z = sum(probs.values())
    return {k: v / z for k, v in probs.items() if v > 0}


def test_continuous_loss_classes_follow_the_exact_law(chi2_pvalue) -> None:
    x = np.array([1.0, 2.0, 2.5, 4.0, 7.0, 7.5, 9.0])
    probs = _class_probs(x, 0.5, 1.0, 0.0, 10.0)
    _, losses = inverse_sensitivity_sample(x, epsilon=1.0, bounds=(0, 10), size=20_000, rng=7)
    support = np.array(sorted(probs))
    pmf = np.array([probs[k] for k in support])
    # chi-square at level 1e-3: a rate off by 10% (eps 1.1 instead of 1) fails with 20k draws
    assert chi2_pvalue(losses, support, pmf) > 1e-3


def test_continuous_point_is_uniform_within_its_gap() -> None:
    x = np.array([1.0, 2.0, 2.5, 4.0, 7.0])
    vals, losses = inverse_sensitivity_sample(x, epsilon=0.5, bounds=(0, 10), size=5000, rng=3)
    ext = np.array([0.0, 1.0, 2.0, 2.5, 4.0, 7.0, 10.0])
    g = np.searchsorted(ext, vals, side="right") - 1
    g = np.clip(g, 0, ext.size - 2)
    rel = (vals - ext[g]) / (ext[g + 1] - ext[g])
    # KS at level 1e-3 (grid rounding is 2**-27 of the width: invisible at this sample size)
    assert stats.kstest(rel, "uniform").pvalue > 1e-3
    # and the gap's loss is the reported loss
    assert np.array_equal(np.ceil(np.abs(g - 2.5)).astype(int), losses)


def test_grid_version_follows_exp_of_minus_half_eps_loss(chi2_pvalue) -> None:
    x = np.array([3.0, 4.0, 4.0, 6.0, 9.0, 12.0])
    grid = np.arange(0.0, 16.0, 1.0)
    eps = 0.8
    losses = loss_at(x, grid, bounds=(0, 15))
    w = np.exp(-eps * losses / 2)
    pmf = w / w.sum()
    vals, got_losses = inverse_sensitivity_sample(
        x, epsilon=eps, bounds=(0, 15), grid=grid, size=20_000, rng=11
    )
    assert set(vals.tolist()) <= set(grid.tolist())
    assert np.array_equal(loss_at(x, vals, bounds=(0, 15)), got_losses)
    assert chi2_pvalue(vals.astype(int), grid.astype(int), pmf) > 1e-3


@pytest.mark.parametrize("relation", ["bounded", "unbounded"])
def test_exact_privacy_loss_on_all_neighbours_stays_within_epsilon(relation: str) -> None:
    # the law of the grid mechanism is exp(-eps len/2)/Z: check the max log ratio exactly
    # over every neighbour of several datasets (replace-one or add/remove)
    eps = 1.0
    grid = np.arange(0.0, 5.01, 0.5)
    uni = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    rng = np.random.default_rng(5)
    worst = 0.0
    for _ in range(25):
        x = rng.integers(0, 6, int(rng.integers(2, 7))).astype(float).tolist()
        p = float(rng.choice([0.25, 0.5, 0.8]))
        if relation == "bounded":
            nbrs = [[*x[:i], v, *x[i + 1 :]] for i in range(len(x)) for v in uni]
        else:
            nbrs = [[*x, v] for v in uni] + [x[:i] + x[i + 1 :] for i in range(len(x))]

        def law(d: list[float], p: float = p) -> np.ndarray:
            w = np.exp(
                -eps * loss_at(d, grid, bounds=(0, 5), query="percentile", percentile=100 * p) / 2
            )
            return w / w.sum()

        px = law(x)
        for y in nbrs:
            worst = max(worst, float(np.max(np.abs(np.log(px / law(y))))))
    assert worst <= eps + 1e-12
    assert worst > eps / 2  # the bound is nearly attained: the test can see a violation


def _median_density(x: np.ndarray, rate: float, lower: float, upper: float):
    """The continuous mechanism's density for the median, from the math: on the open gap
    ``g`` between sorted records (``x_(-1) = lower``, ``x_(n) = upper``) the loss is
    ``ceil(|g - n/2|)`` and the density ``exp(-rate * loss) / Z``. Returns a function of t."""
    xs = np.sort(np.clip(x, lower, upper))
    ext = np.concatenate(([lower], xs, [upper]))
    loss = np.ceil(np.abs(np.arange(xs.size + 1) - xs.size / 2))
    w = np.exp(-rate * loss)
    z = float((np.diff(ext) * w).sum())

    def density(t: np.ndarray) -> np.ndarray:
        g = np.clip(np.searchsorted(ext, t, side="right") - 1, 0, xs.size)
        return w[g] / z

    return density, ext


def _bin_masses(x: np.ndarray, rate: float, edges: np.ndarray) -> np.ndarray:
    """Exact mass of each bin: the density is constant between breakpoints."""
    density, ext = _median_density(x, rate, float(edges[0]), float(edges[-1]))
    cuts = np.unique(np.concatenate([ext, edges]))
    mids, widths = (cuts[1:] + cuts[:-1]) / 2, np.diff(cuts)
    piece = density(mids) * widths
    return np.bincount(np.searchsorted(edges, mids) - 1, weights=piece, minlength=edges.size - 1)


def test_empirical_histograms_on_neighbours_respect_e_to_the_epsilon() -> None:
    # x and x' differ in one record (replace-one). The law on each is exact and known: the
    # density exp(-(epsilon / 2) len) / Z with the loss from the math (_median_density), so
    # the released values are tested against it, at the rate epsilon / 2 derived here.
    eps = 1.0
    x = np.array([2.0, 3.0, 5.0, 5.5, 8.0, 9.0])
    y = x.copy()
    y[2] = 0.0
    n = 40_000
    edges = np.linspace(0, 10, 21)
    for data, seed in ((x, 1), (y, 2)):
        vals, _ = inverse_sensitivity_sample(data, epsilon=eps, bounds=(0, 10), size=n, rng=seed)
        obs = np.histogram(vals, edges)[0]

        def pvalue(rate: float, obs: np.ndarray = obs, data: np.ndarray = data) -> float:
            exp = _bin_masses(data, rate, edges) * n
            return float(stats.chi2.sf(((obs - exp) ** 2 / exp).sum(), df=edges.size - 2))

        # chi-square over 20 bins at level 1e-3; the law of a rate 10% high (or low) is
        # rejected at 1e-6 (its statistic is 75 to 110 at 40,000 draws; 1e-6 needs 64)
        assert pvalue(eps / 2) > 1e-3
        assert pvalue(1.1 * eps / 2) < 1e-6
        assert pvalue(eps / 2 / 1.1) < 1e-6

    # that exact law is epsilon-DP on the pair: the density ratio at every point (constant
    # between breakpoints) is at most e**epsilon; on a nearly tight pair (found by a search
    # over small datasets) the ratio is within 10% of it, and a rate 10% high breaks it
    def worst(a: np.ndarray, b: np.ndarray, rate: float) -> float:
        da, ea = _median_density(a, rate, 0.0, 10.0)
        db, eb = _median_density(b, rate, 0.0, 10.0)
        cuts = np.unique(np.concatenate([ea, eb]))
        mids = (cuts[1:] + cuts[:-1]) / 2
        return float(np.abs(np.log(da(mids) / db(mids))).max())

    assert worst(x, y, eps / 2) <= eps
    tight = np.array([0.0, 1.0, 1.0, 8.5, 10.0, 10.0])
    other = tight.copy()
    other[4] = 0.0
    assert 0.9 * eps < worst(tight, other, eps / 2) <= eps
    assert worst(tight, other, 1.1 * eps / 2) > eps


def test_release_record_and_accountant_spend_before_sampling() -> None:
    acct = dpkit.Accountant(dpkit.PureDP(10.0))
    rel = inverse_sensitivity(
        [1.0, 5.0, 7.0], "median", epsilon=0.5, bounds=(0, 10), rng=0, accountant=acct
    )
    assert rel.privacy == dpkit.PureDP(0.5)
    assert [(s.cost, s.label) for s in acct.history] == [(dpkit.PureDP(0.5), "inverse_sensitivity")]
    assert 0 <= rel.value <= 10
    assert rel.diagnostics["loss"] == int(loss_at([1.0, 5.0, 7.0], [rel.value], bounds=(0, 10))[0])
    # seeded runs repeat
    again = inverse_sensitivity([1.0, 5.0, 7.0], epsilon=0.5, bounds=(0, 10), rng=0)
    assert again.value == rel.value


def test_percentile_queries_from_dpkit_queries_are_accepted() -> None:
    from dpkit import queries

    data = np.arange(1000.0)
    rel = inverse_sensitivity(data, queries.percentile(90), epsilon=2.0, bounds=(0, 1000), rng=1)
    assert abs(rel.value - 900) < 20
    rel2 = inverse_sensitivity(
        data, "percentile", percentile=90, epsilon=2.0, bounds=(0, 1000), rng=1
    )
    assert rel2.value == rel.value


def test_utility_bound_holds_with_the_stated_probability() -> None:
    rng = np.random.default_rng(2)
    x = rng.normal(50, 10, 400)
    beta = 0.1
    bound = utility_bound(x, epsilon=1.0, bounds=(0, 100), beta=beta)
    vals, _ = inverse_sensitivity_sample(x, epsilon=1.0, bounds=(0, 100), size=2000, rng=4)
    miss = np.mean(np.abs(vals - np.median(np.clip(x, 0, 100))) > bound)
    # binomial(2000, <= 0.1): mean + 4 sd = 0.1 + 4 * 0.0067
    assert miss <= beta + 4 * math.sqrt(beta * (1 - beta) / 2000)
    gb = utility_bound(x, epsilon=1.0, bounds=(0, 100), beta=beta, grid=np.arange(0, 101.0))
    gv, _ = inverse_sensitivity_sample(
        x, epsilon=1.0, bounds=(0, 100), grid=np.arange(0, 101.0), size=2000, rng=5
    )
    assert np.mean(np.abs(gv - np.median(x)) > gb) <= beta + 4 * math.sqrt(beta * 0.9 / 2000)


def test_large_data_accuracy() -> None:
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 100, 100_000)
    vals, _ = inverse_sensitivity_sample(x, epsilon=1.0, bounds=(0, 100), size=50, rng=9)
    # typical gap 1e-3; loss rarely above 10 at eps=1 -> error far below 0.05
    assert np.median(np.abs(vals - np.median(x))) < 0.01


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"epsilon": 0.0}, dpkit.ParameterError, "epsilon"),
        ({"epsilon": float("nan")}, dpkit.ParameterError, "epsilon"),
        ({"epsilon": True}, TypeError, "epsilon"),
        ({"bounds": (5, 1)}, dpkit.ParameterError, "lower < upper"),
        ({"bounds": None}, dpkit.ParameterError, "bounds"),
        ({"data": [1.0, float("nan")]}, dpkit.ParameterError, "NaN"),
        ({"data": []}, dpkit.ParameterError, "empty"),
        ({"grid": [1.0, 50.0]}, dpkit.ParameterError, "grid"),
        ({"query": "mean", "grid": [1.0], "relation": "bounded"}, dpkit.ParameterError, "grid"),
        ({"query": "mean"}, dpkit.ParameterError, "relation='bounded'"),
        ({"relation": "replace"}, dpkit.ParameterError, "relation"),
        ({"relation": 1}, TypeError, "relation"),
        ({"query": "var"}, dpkit.ParameterError, "median"),
        ({"query": "percentile"}, dpkit.ParameterError, "percentile"),
        ({"query": "percentile", "percentile": 101}, dpkit.ParameterError, "percentile"),
    ],
)
def test_bad_input_gets_a_clear_error(kwargs: dict, exc: type, match: str) -> None:
    args = {"data": [1.0, 2.0, 3.0], "query": "median", "epsilon": 1.0, "bounds": (0, 10)}
    args.update(kwargs)
    with pytest.raises(exc, match=match):
        inverse_sensitivity(**args)


def _brute_mean_loss(x: list[float], t: float, lower: float, upper: float) -> int:
    """Fewest replaced records (values anywhere in the bounds) giving mean t: by subsets."""
    n = len(x)
    for k in range(n + 1):
        for rep in itertools.combinations(range(n), k):
            kept = sum(v for i, v in enumerate(x) if i not in rep)
            if (kept + k * lower) / n <= t <= (kept + k * upper) / n:
                return k
    raise AssertionError("unreachable")


def test_mean_version_losses_match_brute_force() -> None:
    rng = np.random.default_rng(8)
    for _ in range(10):
        x = rng.integers(0, 11, int(rng.integers(1, 7))).astype(float).tolist()
        vals, losses = inverse_sensitivity_sample(
            x, query="mean", epsilon=0.7, bounds=(0, 10), size=40, rng=int(rng.integers(1000))
        )
        for v, loss in zip(vals.tolist(), losses.tolist(), strict=True):
            assert _brute_mean_loss(x, v, 0.0, 10.0) == loss, (x, v, loss)


def test_mean_version_class_law(chi2_pvalue) -> None:
    # class k has total length (room above + room below of the k-th record in line) / n
    x = np.array([1.0, 4.0, 4.0, 9.0])
    up = np.sort(10 - x)[::-1]
    down = np.sort(x)[::-1]
    w = (up + down) * np.exp(-0.5 * np.arange(1, 5))
    _, losses = inverse_sensitivity_sample(
        x, query="mean", epsilon=1.0, bounds=(0, 10), size=20_000, rng=3
    )
    assert chi2_pvalue(losses, np.arange(1, 5), w / w.sum()) > 1e-3


@pytest.mark.parametrize("relation", ["bounded", "unbounded"])
def test_the_law_is_epsilon_bounded_range_as_its_event_states(relation: str) -> None:
    """The spend's event is Exponential(epsilon): between neighbours the log-ratio of the
    exact law spans an interval of width at most epsilon over the outputs (bounded range),
    and the release states that event."""
    eps = 1.0
    grid = np.arange(0.0, 5.01, 0.5)
    uni = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    rng = np.random.default_rng(7)
    widest = 0.0
    for _ in range(25):
        x = rng.integers(0, 6, int(rng.integers(2, 7))).astype(float).tolist()
        p = float(rng.choice([0.25, 0.5, 0.8]))
        if relation == "bounded":
            nbrs = [[*x[:i], v, *x[i + 1 :]] for i in range(len(x)) for v in uni]
        else:
            nbrs = [[*x, v] for v in uni] + [x[:i] + x[i + 1 :] for i in range(len(x))]

        def law(d: list[float], p: float = p) -> np.ndarray:
            w = np.exp(
                -eps * loss_at(d, grid, bounds=(0, 5), query="percentile", percentile=100 * p) / 2
            )
            return w / w.sum()

        for y in nbrs:
            ratio = np.log(law(x) / law(y))
            widest = max(widest, float(ratio.max() - ratio.min()))
    assert widest <= eps + 1e-12
    assert widest > eps / 2  # nearly attained: a wider law would show
    acct = dpkit.Accountant(dpkit.ApproxDP(10.0, 1e-6), relation=relation)
    inverse_sensitivity(
        [1.0, 2.0, 4.0],
        "median",
        epsilon=eps,
        bounds=(0, 5),
        rng=0,
        accountant=acct,
        relation=relation,
    )
    assert acct.history[0].events == (dpkit.accounting.events.Exponential(epsilon=eps),)
