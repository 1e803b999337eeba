"""Private quantiles: exact law against an independent oracle, privacy, intervals, errors."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

import dpkit
from dpkit.statistics import (
    QuantileRelease,
    median,
    quantile,
    quantile_samples,
    quantiles,
    quantiles_from_counts,
    quantiles_samples,
)

# --------------------------------------------------------------------------- oracle
# An independent re-derivation of the single-level law on a small example: bounds (0, 8), so
# the lattice spacing is g = 2**(3 - 30) and the lattice indices run over [0, 2**30]. The
# mass of a stretch [A, B] of lattice indices is computed with Python integers from the
# definition of the base measure; the distance d and the probabilities from direct counts.

G_EXP = 27  # g = 2**-27 for bounds (0, 8)
HI = 8 << G_EXP


def _mass(a: int, b: int, support: object) -> int:
    if b < a:
        return 0
    n = b - a + 1
    if support == "continuous":
        return n
    if support == "auto":
        return 31 * n + sum((b >> j) - ((a - 1) >> j) << j for j in range(31))
    k = G_EXP + int(math.log2(float(support)))  # resolution r = 2**k g
    return n + ((b >> k) - ((a - 1) >> k)) * (1 << k)


def _oracle_cells(x: list[float], q: float, eps: float, support: object):
    """Cells (label, probability): ('atom', v) for each data value, ('gap', i) between them."""
    vals = sorted(set(x))
    units = [int(v * (1 << G_EXP)) for v in vals]
    n = len(x)
    qr = Fraction(q).limit_denominator(1 << 20)
    tau = qr * n
    delta = max(qr, 1 - qr)
    cells = []
    edges = [-1, *units, HI + 1]
    for i in range(len(edges) - 1):
        a, b = edges[i] + 1, edges[i + 1] - 1
        below = sum(1 for v in x if v * (1 << G_EXP) < a)
        cells.append((("gap", i), _mass(a, b, support), below, below))
        if i < len(units):
            u = units[i]
            lt = sum(1 for v in x if v < vals[i])
            le = sum(1 for v in x if v <= vals[i])
            cells.append((("atom", vals[i]), _mass(u, u, support), lt, le))
    logw = []
    for _label, mass, lt, le in cells:
        d = max(Fraction(0), lt - tau, tau - le)
        logw.append(math.log(mass) - eps * float(d) / (2 * float(delta)) if mass else -math.inf)
    top = max(logw)
    w = np.exp(np.array(logw) - top)
    return [c[0] for c in cells], w / w.sum()


def _classify(draws: np.ndarray, x: list[float]) -> np.ndarray:
    vals = np.array(sorted(set(x)))
    pos = np.searchsorted(vals, draws, side="left")
    hit = (pos < vals.size) & (vals[np.minimum(pos, vals.size - 1)] == draws)
    # cell index in the oracle's order: gap i is 2 i, atom i is 2 i + 1
    return np.where(hit, 2 * pos + 1, 2 * pos)


CASES = [
    ([1.0, 2.0, 2.0, 3.5, 6.0], 0.5, 1.0, "auto"),
    ([1.0, 2.0, 2.0, 3.5, 6.0], 0.5, 1.0, "continuous"),
    ([0.5, 2.0, 2.0, 2.0, 3.0, 7.0], 0.3, 2.0, 1.0),
    ([4.0], 0.9, 0.5, "auto"),
]


@pytest.mark.parametrize(("x", "q", "eps", "support"), CASES)
def test_single_level_law_matches_the_oracle(x, q, eps, support, chi2_pvalue) -> None:
    labels, pmf = _oracle_cells(x, q, eps, support)
    draws = quantile_samples(
        x, q, epsilon=eps, bounds=(0, 8), size=40_000, support=support, rng=20261122
    )
    cells = _classify(draws, x)
    # 40,000 draws: a 10% error in the rate moves these probabilities by several percent, a
    # chi-square shift far beyond the 1e-3 level (checked by the mutation list)
    assert chi2_pvalue(cells, np.arange(len(labels)), pmf) > 1e-3, (labels, pmf)


WINDOW_CASES = [
    # windows far narrower than the data force the envelope, the outside acceptance and the
    # full-law fallback of the windowed sampler the releases use
    ([0.5, 1.0, 1.0, 2.0, 3.0, 3.5, 5.0, 6.0, 6.0, 7.0, 7.5], 0.5, 0.7, "auto", 1),
    ([0.5, 1.0, 1.0, 2.0, 3.0, 3.5, 5.0, 6.0, 6.0, 7.0, 7.5], 0.2, 0.5, 1.0, 2),
    ([float(k) for k in range(8)] * 3, 0.8, 0.4, "continuous", 3),
]


@pytest.mark.parametrize(("x", "q", "eps", "support", "window"), WINDOW_CASES)
def test_windowed_sampler_has_the_same_law(x, q, eps, support, window, chi2_pvalue) -> None:
    labels, pmf = _oracle_cells(x, q, eps, support)
    draws = quantile_samples(
        x, q, epsilon=eps, bounds=(0, 8), size=6000, support=support, rng=5, window=window
    )
    # 6,000 draws; the outside carries a large share of the mass here, so an envelope one
    # unit too high or an outside cell accepted untested moves it by tens of percent
    assert chi2_pvalue(_classify(draws, x), np.arange(len(labels)), pmf) > 1e-3


def test_points_inside_a_gap_follow_the_base_measure() -> None:
    # one record at 2 and one at 6, median, resolution 1: a draw lands in the open gap (2, 6)
    # with lattice points 3, 4, 5 weighing 1 + 2**27 each and every other point 1, so
    # P[integer | gap] = 3 (1 + 2**27) / ((4 * 2**27 - 1) + 3 * 2**27) ~ 3/7 exactly
    x = [2.0, 6.0]
    draws = quantile_samples(x, 0.5, epsilon=0.01, bounds=(0, 8), size=20_000, support=1.0, rng=3)
    inside = draws[(draws > 2) & (draws < 6)]
    p = 3 * (1 + 2**27) / ((4 * 2**27 - 1) + 3 * 2**27)
    k = int(np.count_nonzero(inside == np.round(inside)))
    m = inside.size
    # binomial: 5 standard deviations
    assert abs(k - m * p) < 5 * math.sqrt(m * p * (1 - p))


def test_exact_privacy_ratio_of_the_law_on_neighbours() -> None:
    """The oracle law on x and x plus one record: every lattice point's probability ratio is
    within e^epsilon (the cells of x' refine those of x, so compare point by point)."""
    rng = np.random.default_rng(5)
    for _ in range(40):
        n = int(rng.integers(1, 7))
        x = sorted(rng.integers(0, 9, n).astype(float).tolist())
        y = float(rng.integers(0, 9))
        q = float(rng.choice([0.1, 0.25, 0.5, 0.8]))
        eps = float(rng.choice([0.3, 1.0, 3.0]))
        for support in ("auto", "continuous", 1.0):
            worst = _max_log_ratio(x, sorted([*x, y]), q, eps, support)
            assert worst <= eps + 1e-9, (x, y, q, eps, support, worst)


def _point_logp(x: list[float], q: float, eps: float, support: object, points: list[int]):
    _labels, pmf = _oracle_cells(x, q, eps, support)
    vals = sorted(set(x))
    units = [int(v * (1 << G_EXP)) for v in vals]
    out = []
    for t in points:
        # which cell holds t, and the point's share of the cell's mass
        i = int(np.searchsorted(units, t))
        if i < len(units) and units[i] == t:
            cell = 2 * i + 1
            a = b = t
        else:
            cell = 2 * i
            a = (units[i - 1] + 1) if i > 0 else 0
            b = (units[i] - 1) if i < len(units) else HI
        out.append(
            math.log(pmf[cell]) + math.log(_mass(t, t, support)) - math.log(_mass(a, b, support))
        )
    return np.array(out)


def _max_log_ratio(x, x2, q, eps, support) -> float:
    units = sorted({int(v * (1 << G_EXP)) for v in x + x2})
    probe = {0, HI}
    for u in units:
        probe.update({u - 1, u, u + 1, u + (1 << G_EXP) // 2})
    probe.update({(1 << G_EXP) * k for k in range(9)})
    pts = sorted(p for p in probe if 0 <= p <= HI)
    a = _point_logp(x, q, eps, support, pts)
    b = _point_logp(x2, q, eps, support, pts)
    return float(np.max(np.abs(a - b)))


def test_empirical_histograms_on_neighbours_stay_within_e_to_the_epsilon() -> None:
    x = [1.0, 2.0, 2.0, 3.0, 5.0, 6.0]
    x2 = [*x, 2.0]
    eps = 1.0
    edges = np.arange(0, 8.5, 0.5)
    kw = dict(epsilon=eps, bounds=(0, 8), size=60_000, support=1.0)
    h1 = np.histogram(quantile_samples(x, 0.5, rng=1, **kw), bins=edges)[0]
    h2 = np.histogram(quantile_samples(x2, 0.5, rng=2, **kw), bins=edges)[0]
    keep = (h1 > 400) & (h2 > 400)
    ratio = np.abs(np.log(h1[keep] / h2[keep]))
    # bins with >= 400 draws: the log-ratio estimate's standard error is below 0.071, so
    # e^epsilon plus 4 standard errors bounds it with overwhelming probability
    assert ratio.max() <= eps + 4 * 0.071


# --------------------------------------------------------------------------- behaviour


def test_integer_ties_are_released_exactly() -> None:
    ages = np.repeat(np.arange(18, 91), 40)  # int dtype: resolution 1 under "auto"
    rel = quantiles(ages, [0.1, 0.5, 0.9], epsilon=1.0, bounds=(0, 100), rng=4)
    assert rel.support == 1.0
    assert np.all(rel.values == np.round(rel.values))
    truth = np.quantile(ages, rel.levels, method="inverted_cdf")
    assert np.max(np.abs(rel.values - truth)) <= 1


_AGES = np.repeat(np.arange(18, 91), np.random.default_rng(8).integers(5, 60, 73))


@pytest.mark.parametrize("method", ["auto", "aq", "joint", "independent", "cdf"])
@pytest.mark.parametrize("levels", [[0.5], [0.25, 0.75]])
def test_integer_columns_come_back_on_integers_under_every_method(method, levels) -> None:
    """An integer-typed column (support 1.0) releases integers whatever the method. JointExp's
    score is not tie-aware and its gap points carry half of the base measure, so about half
    of its draws for a level inside a tie block land beside the block; every method's points
    are moved to the nearest integer inside the bounds (post-processing), the counts form and
    the Session's batched sampler alike. 15 releases each at epsilon 0.5."""
    from dpkit.statistics.sampling import quantiles_from_counts_samples

    pts, cnt = np.unique(_AGES, return_counts=True)
    kw = {"epsilon": 0.5, "bounds": (0, 100), "method": method}
    for seed in range(15):
        for rel in (
            quantiles(_AGES, levels, rng=seed, **kw),
            quantiles_from_counts(pts.astype(float), cnt, levels, support=1.0, rng=seed, **kw),
        ):
            assert rel.support == 1.0
            assert np.all(rel.values == np.round(rel.values)), (seed, rel.values)
            assert np.all((rel.values >= 0) & (rel.values <= 100))
    many = quantiles_from_counts_samples(
        pts.astype(float), cnt, levels, size=15, support=1.0, rng=1, **kw
    )
    assert np.all(many == np.round(many))


def test_moving_a_point_onto_the_grid_never_worsens_its_tie_aware_rank_error() -> None:
    """On data lying on the support's grid, the nearest grid point of any lattice point t
    has a tie-aware rank error max(0, #{x < t} - q n, q n - #{x <= t}) no larger than t's:
    1,000 random data sets (integers in [0, 20], support 1.0, bounds (0, 20)) and points."""
    from dpkit.mechanisms.quantile_em import Measure, QuantileLattice
    from dpkit.statistics.quantile_release import on_support

    lat = QuantileLattice.for_bounds("test", 0.0, 20.0)
    measure = Measure(lat, 1.0)
    rng = np.random.default_rng(4)

    def error(x: np.ndarray, t: np.ndarray, q: float) -> np.ndarray:
        below = np.searchsorted(x, t, side="left")
        at_most = np.searchsorted(x, t, side="right")
        qn = q * x.size
        return np.maximum(0, np.maximum(below - qn, qn - at_most))

    for _ in range(1000):
        x = np.sort(rng.integers(0, 21, rng.integers(1, 30)).astype(float))
        q = float(rng.uniform(0.05, 0.95))
        units = rng.integers(lat.lo, lat.hi + 1, 20)
        t = lat.values(units)
        snapped = lat.values(on_support(measure, units))
        assert np.all(snapped == np.round(snapped)) and np.all(np.abs(snapped - t) <= 0.5)
        assert np.all(error(x, snapped, q) <= error(x, t, q) + 1e-12)


def test_multi_level_release_is_sorted_and_one_mechanism() -> None:
    x = np.random.default_rng(0).normal(50, 15, 5000).clip(0, 100)
    levels = [0.1, 0.25, 0.5, 0.75, 0.9]
    acct = dpkit.Accountant(dpkit.PureDP(1.0))
    rel = quantiles(x, levels, epsilon=1.0, bounds=(0, 100), rng=2, accountant=acct)
    assert rel.method == "aq" and rel.privacy == dpkit.PureDP(1.0)
    assert rel.relation == "unbounded"
    assert np.all(np.diff(rel.values) >= 0)
    assert np.max(np.abs(rel.values - np.quantile(x, levels))) < 2.0
    assert acct.spent == dpkit.PureDP(1.0)
    ind = quantiles(x, levels, epsilon=1.0, bounds=(0, 100), rng=2, method="independent")
    assert ind.method == "independent" and np.all(np.diff(ind.values) >= 0)


def test_cdf_outputs_are_sorted_on_small_noisy_groups() -> None:
    """The noisy-histogram method on a tiny group (6 records, epsilon 0.25): the noisy
    cumulative counts go up and down and the noisy total is often <= 0, so the first
    crossings of q n~ come out of order in about 8% of releases unless sorted. 300 seeds
    (about 24 unsorted without the sort); the batched draws follow the same rule."""
    kw = {"epsilon": 0.25, "bounds": (0, 16), "support": 1.0}
    for seed in range(300):
        rel = quantiles_from_counts([2.0, 3.0, 14.0], [1, 1, 4], [0.25, 0.75], rng=seed, **kw)
        assert rel.method == "cdf"
        assert np.all(np.diff(rel.values) >= 0), seed
    from dpkit.statistics.sampling import quantiles_from_counts_samples

    many = quantiles_from_counts_samples(
        [2.0, 3.0, 14.0], [1, 1, 4], [0.25, 0.75], size=300, rng=1, **kw
    )
    assert np.all(np.diff(many, axis=1) >= 0)


def test_seeded_releases_repeat_and_are_read_only() -> None:
    x = np.arange(100.0)
    a = quantiles(x, [0.2, 0.8], epsilon=1.0, bounds=(0, 100), rng=9)
    b = quantiles(x, [0.2, 0.8], epsilon=1.0, bounds=(0, 100), rng=9)
    assert np.array_equal(a.values, b.values)
    assert np.array_equal(a.value_intervals, b.value_intervals)
    with pytest.raises(ValueError):
        a.values[0] = 1.0
    assert isinstance(a, QuantileRelease) and "QuantileRelease" in repr(a)


def test_budget_is_spent_before_anything_is_drawn() -> None:
    acct = dpkit.Accountant(dpkit.PureDP(0.5))
    with pytest.raises(dpkit.BudgetExceededError):
        median(np.arange(10.0), epsilon=1.0, bounds=(0, 10), accountant=acct)


def _rank_quantiles(x: np.ndarray, q: float) -> tuple[float, float]:
    """The rank quantiles of level ``q``: every ``t`` with ``#{x < t} <= q n <= #{x <= t}``,
    the segment ``[x_(ceil(q n)), x_(floor(q n) + 1)]`` (1-based order statistics; one point
    unless ``q n`` is an integer), with ``q`` the float's exact value."""
    xs = np.sort(x)
    qn = Fraction(q) * xs.size
    return float(xs[math.ceil(qn) - 1]), float(xs[math.floor(qn)])


def test_value_intervals_contain_the_rank_quantiles_not_numpys_interpolation() -> None:
    """x = 0, 1, ..., 8, 100 and q = 0.95: the only rank quantile is 100 (9 records lie below
    it and 9.5 <= 10), while NumPy's linear interpolation gives 58.6, in the empty gap below
    100. At epsilon 200 the interval is certified tightly around 100 in every release."""
    x = np.array([0, 1, 2, 3, 4, 5, 6, 7, 8, 100.0])
    assert _rank_quantiles(x, 0.95) == (100.0, 100.0)
    assert np.quantile(x, 0.95, method="inverted_cdf") == 100.0
    numpy_linear = float(np.quantile(x, 0.95))
    assert abs(numpy_linear - 58.6) < 1e-9
    for seed in range(50):
        ((low, high),) = quantile(x, 0.95, epsilon=200.0, bounds=(0, 100), rng=seed).value_intervals
        assert low <= 100.0 <= high and not low <= numpy_linear <= high, seed


#: (data, levels, method) of the coverage test: records with ties and empty gaps, with levels
#: whose rank quantiles are a segment (q n = 120 and 200: [1, 2] and [2, 5]) and one where
#: NumPy's linear value (27.7) lies in an empty gap below the rank quantile (40)
_X = np.repeat([0, 1, 2, 5, 40, 41, 90], [60, 60, 80, 100, 20, 40, 40])
_COVERAGE_CASES = [
    (_X.astype(float), [0.3, 0.5, 0.751], "aq", 400),
    (_X, [0.3, 0.5, 0.751], "cdf", 400),  # an integer dtype: the noisy-histogram method
    (_X.astype(float), [0.5], "auto", 400),  # one level: the single exponential mechanism
    (_X.astype(float), [0.3, 0.751], "joint", 200),
    (_X.astype(float), [0.3, 0.5, 0.751], "independent", 200),
]


@pytest.mark.parametrize(
    ("x", "levels", "method", "releases"),
    _COVERAGE_CASES,
    ids=[c[2] for c in _COVERAGE_CASES],
)
def test_intervals_cover_at_the_stated_rate(x, levels, method, releases) -> None:
    """The stated guarantee at the default alpha = 0.05: with probability at least 0.95, every
    value interval contains every rank quantile of its level (the whole segment) and every
    rank interval contains ``#{x < value} / n`` of its released value, all at once.

    Tolerance: a release fails that joint event with probability at most alpha, so over
    ``releases`` independent releases the failures are at most Binomial(releases, alpha);
    the test allows its upper 1e-3 quantile (35 of 400, 20 of 200). The bound is a union of
    Chernoff bounds, so correct intervals fail far less often (0 here); what fails are
    intervals certified without their noise (every statement then errs about half the
    time) or checked against the wrong quantiles. A half-width a few per cent off cannot
    show in any coverage count: tests/statistics/test_intervals.py checks the half-widths
    and the certification exactly."""
    from scipy import stats

    alpha = 0.05
    truth = [_rank_quantiles(x, q) for q in levels]
    seg_lo = np.array([t[0] for t in truth])
    seg_hi = np.array([t[1] for t in truth])
    xs = np.sort(x.astype(float))
    misses = 0
    widths = []
    for seed in range(releases):
        rel = quantiles(x, levels, epsilon=2.0, bounds=(0, 100), method=method, rng=seed)
        assert rel.alpha == alpha and rel.method == ("exponential" if method == "auto" else method)
        iv, rk = rel.value_intervals, rel.rank_intervals
        below = np.searchsorted(xs, rel.values, side="left") / xs.size  # #{x < value} / n
        ok = np.all((iv[:, 0] <= seg_lo) & (seg_hi <= iv[:, 1]))
        ok &= np.all((rk[:, 0] <= below + 1e-12) & (below - 1e-12 <= rk[:, 1]))
        misses += not ok
        widths.append(np.median(iv[:, 1] - iv[:, 0]))
    assert misses <= stats.binom.isf(1e-3, releases, alpha), misses
    # and they are informative here: far narrower than the bounds (0, 100) in most releases
    assert np.median(widths) < 50


def test_empty_summary_releases_noise_without_error() -> None:
    rel = quantiles_from_counts([10.0, 20.0], [0, 0], [0.5], epsilon=1.0, bounds=(0, 100), rng=1)
    assert 0 <= rel.value <= 100
    rel = quantiles_from_counts([], [], 0.5, epsilon=1.0, bounds=(0, 100), rng=1)
    assert 0 <= rel.value <= 100


def test_counts_form_matches_the_array_form() -> None:
    x = np.array([3.0, 3.0, 7.0, 9.0, 9.0, 9.0])
    pts, cnt = np.unique(x, return_counts=True)
    a = quantiles(x, [0.3, 0.6], epsilon=1.0, bounds=(0, 10), rng=5)
    b = quantiles_from_counts(pts, cnt, [0.3, 0.6], epsilon=1.0, bounds=(0, 10), rng=5)
    assert np.array_equal(a.values, b.values)


@pytest.mark.parametrize(
    ("levels", "method", "support", "intervals"),
    [
        (0.5, "auto", "auto", True),
        ([0.1, 0.5, 0.9], "auto", "auto", True),
        ([0.25, 0.75], "joint", "continuous", True),
        ([0.2, 0.8], "independent", 1.0, False),
        ([0.1, 0.5, 0.9], "cdf", 1.0, True),
    ],
)
def test_counts_releaser_is_quantiles_from_counts_on_every_summary(
    levels, method, support, intervals
) -> None:
    """The Session's per-group releaser (parameters checked once) releases each summary
    exactly as quantiles_from_counts does from the same source, empty summaries included."""
    from dpkit.samplers import SeededSource
    from dpkit.statistics.quantile_release import counts_releaser

    rng = np.random.default_rng(12)
    kw = {"epsilon": 0.8, "bounds": (0, 100), "method": method, "support": support}
    release = counts_releaser(levels, intervals=intervals, interval_share=0.3, alpha=0.1, **kw)
    a, b = SeededSource(3), SeededSource(3)
    for n in (0, 1, 5, 40, 300):
        pts, cnt = np.unique(np.round(rng.normal(50, 20, n)), return_counts=True)
        got = release(pts, cnt, a)
        want = quantiles_from_counts(
            pts, cnt, levels, intervals=intervals, interval_share=0.3, alpha=0.1, rng=b, **kw
        )
        assert repr(got) == repr(want) and got.method == want.method
        assert np.array_equal(got.values, want.values)
        for name in ("value_intervals", "rank_intervals"):
            g, w = getattr(got, name), getattr(want, name)
            assert (g is None and w is None) or np.array_equal(g, w)
        assert dict(got.details) == dict(want.details)


def test_adversarial_data() -> None:
    kw = dict(epsilon=1.0, rng=0)
    # all values equal, at a non-dyadic value: auto support still releases near it
    rel = median(np.full(500, 37.3), bounds=(0, 100), **kw)
    assert abs(rel.value - 37.3) < 1e-6
    # two atoms
    rel = quantiles(np.repeat([10, 90], [300, 300]), [0.25, 0.75], bounds=(0, 100), **kw)
    assert rel.values.tolist() == [10.0, 90.0]
    # values at the bounds and beyond (clipped), n = 1, huge range
    assert median(np.array([-5.0, 0.0, 100.0, 200.0]), bounds=(0, 100), **kw).value <= 100
    assert 0 <= median([42.0], bounds=(0, 100), **kw).value <= 100
    rel = median(np.full(1000, 3e11), bounds=(-1e12, 1e12), **kw)
    assert abs(rel.value - 3e11) < 1e-3 * 1e12


@pytest.mark.parametrize(
    ("levels", "exc", "match"),
    [
        (0.0, dpkit.ParameterError, r"`levels` must be in \(0, 1\)"),
        (1.0, dpkit.ParameterError, r"must be in \(0, 1\)"),
        ([0.5, 1.5], dpkit.ParameterError, r"`levels\[1\]` must be in \(0, 1\)"),
        ([0.5, 0.5], dpkit.ParameterError, "must not repeat"),
        ([0.6, 0.5], dpkit.ParameterError, "sorted in increasing order"),
        ([], dpkit.ParameterError, "`levels` is empty"),
        (float("nan"), dpkit.ParameterError, "finite"),
        # a level within 2**-21 of 0 or 1 would be rounded onto it by the 2**20 denominator
        (1e-9, dpkit.ParameterError, "`levels` 1e-09 is too close to 0"),
        ([0.5, 1 - 1e-9], dpkit.ParameterError, r"`levels\[1\]` 0.999999999 is too close to 1"),
        (True, TypeError, "real number"),
        ("0.5", TypeError, "real number"),
    ],
)
def test_bad_levels_get_a_clear_error(levels, exc, match) -> None:
    with pytest.raises(exc, match=match):
        quantiles(np.arange(10.0), levels, epsilon=1.0, bounds=(0, 10))


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        (dict(data=[]), dpkit.ParameterError, "`data` is empty"),
        (dict(data=[1.0, float("nan")]), dpkit.ParameterError, "NaN"),
        (dict(data=[True, False]), TypeError, "real numbers"),
        (dict(data=np.ma.masked_array([1.0, 2.0], [0, 1])), TypeError, "masked"),
        (dict(bounds=None), dpkit.ParameterError, "`bounds` is required"),
        (dict(bounds=(5, 1)), dpkit.ParameterError, "lower < upper"),
        (dict(epsilon=0), dpkit.ParameterError, "`epsilon` must be a finite number > 0"),
        (dict(epsilon=float("inf")), dpkit.ParameterError, "`epsilon`"),
        (dict(method="joint-ish"), dpkit.ParameterError, "`method` must be one of"),
        (dict(support="integers"), dpkit.ParameterError, "`support` must be one of"),
        (dict(support=0.3), dpkit.ParameterError, "power of two"),
        (dict(alpha=1.5), dpkit.ParameterError, r"`alpha` must be in \(0, 1\)"),
        (dict(intervals="yes"), TypeError, "`intervals` must be True or False"),
        (dict(interval_share=1.0), dpkit.ParameterError, "`interval_share`"),
    ],
)
def test_bad_input_gets_a_clear_error(kwargs, exc, match) -> None:
    args = dict(data=np.arange(10.0), levels=0.5, epsilon=1.0, bounds=(0, 10)) | kwargs
    data, levels = args.pop("data"), args.pop("levels")
    with pytest.raises(exc, match=match):
        quantiles(data, levels, **args)


@pytest.mark.parametrize(
    ("points", "counts", "exc", "match"),
    [
        ([1.0, 2.0], [1, -1], dpkit.ParameterError, ">= 0"),
        ([1.0, 2.0], [1.5, 1], dpkit.ParameterError, "whole numbers"),
        ([1.0, 2.0], [1], dpkit.ParameterError, "shape"),
        ([2.0, 1.0], [1, 1], dpkit.ParameterError, "sorted and distinct"),
        ([1.0, 1.0], [1, 1], dpkit.ParameterError, "sorted and distinct"),
        ([1.0, float("nan")], [1, 1], dpkit.ParameterError, "finite"),
        ([1.0, 2.0], [True, False], TypeError, "integers"),
        ("ab", [1, 1], TypeError, "numeric"),
    ],
)
def test_bad_summaries_get_a_clear_error(points, counts, exc, match) -> None:
    with pytest.raises(exc, match=match):
        quantiles_from_counts(points, counts, 0.5, epsilon=1.0, bounds=(0, 10))


def test_single_level_helpers() -> None:
    with pytest.raises(TypeError, match="one level"):
        quantile(np.arange(5.0), [0.5], epsilon=1.0, bounds=(0, 5))
    with pytest.raises(dpkit.ParameterError, match="use `values`"):
        _ = quantiles(np.arange(5.0), [0.2, 0.5], epsilon=1.0, bounds=(0, 5), rng=0).value
    with pytest.raises(TypeError, match="`size`"):
        quantile_samples(np.arange(5.0), 0.5, epsilon=1.0, bounds=(0, 5), size=0)


# --------------------------------------------------------------------------- AQ law


def _em_law(vals, cnts, out_lo, out_hi, tau, delta, eps, support):
    """Cells (label, probability) of one exponential-mechanism draw on a sub-problem given by
    sorted lattice values with counts and an output range (a value with count 0 is a point
    of its gap listed apart: the same law on a finer partition)."""
    keep = list(zip(vals, cnts, strict=True))
    labels, logw = [], []
    below = 0
    prev = out_lo - 1
    for v, c in [*keep, (out_hi + 1, 0)]:
        a, b = prev + 1, v - 1
        m = _mass(a, b, support)
        d = max(Fraction(0), below - tau, tau - below)
        if m:
            labels.append(("gap", prev))
            logw.append(math.log(m) - float(eps * d / (2 * delta)))
        if v <= out_hi:
            d = max(Fraction(0), below - tau, tau - (below + c))
            labels.append(("atom", v))
            logw.append(math.log(_mass(v, v, support)) - float(eps * d / (2 * delta)))
            below += c
        prev = v
    w = np.exp(np.array(logw) - max(logw))
    return labels, w / w.sum()


def _label_of(t: int, vals, out_lo) -> tuple[str, int]:
    if t in vals:
        return ("atom", t)
    below = [v for v in vals if v < t]
    return ("gap", below[-1] if below else out_lo - 1)


def test_aq_split_follows_the_recursive_law(chi2_pvalue) -> None:
    """ApproximateQuantiles with three levels (a complete binary tree: one-level nodes),
    checked against its definition: the middle level on all records with epsilon / 2, then,
    when that draw is a tied value, the lowest level (rescaled to 1/2) on the records below
    it plus a Binomial(tie, 1/2) share of the tied ones, with the rest of the budget; the
    lowest output's law given the middle one is the mixture over the coin flips."""
    x = [1, 2, 2, 3, 3, 3, 4, 5, 5, 6]
    units = [v << G_EXP for v in x]
    eps = 2.0
    rows = quantiles_samples(
        np.array(x),
        [0.3, 0.6, 0.9],
        epsilon=eps,
        bounds=(0, 8),
        size=2000,
        support=1.0,
        rng=9,
        method="aq",
    )
    pivot = 3 << G_EXP  # condition on the first (middle) output being the tied value 3
    firsts = np.round(rows[:, 1] / 2.0**-G_EXP).astype(np.int64)
    seconds = np.round(rows[:, 0] / 2.0**-G_EXP).astype(np.int64)
    sel = seconds[firsts == pivot]
    vals = sorted(set(units))
    below_vals = [v for v in vals if v < pivot]
    below_cnts = [units.count(v) for v in below_vals]
    tie = units.count(pivot)
    mix: dict[tuple[str, int], float] = {}
    for g in range(tie + 1):
        p_g = math.comb(tie, g) / 2**tie
        sub_vals, sub_cnts = [*below_vals, pivot], [*below_cnts, g]
        n_l = sum(sub_cnts)
        labels, pmf = _em_law(
            sub_vals,
            sub_cnts,
            0,
            pivot,
            Fraction(1, 2) * n_l,
            Fraction(1, 2),
            Fraction(eps) / 2,
            1.0,
        )
        for lab, p in zip(labels, pmf, strict=True):
            mix[lab] = mix.get(lab, 0.0) + p_g * p
    keys = sorted(mix)
    code = {k: i for i, k in enumerate(keys)}
    obs = np.array([code[_label_of(int(t), [*below_vals, pivot], 0)] for t in sel])
    assert sel.size > 400
    assert chi2_pvalue(obs, np.arange(len(keys)), np.array([mix[k] for k in keys])) > 1e-3


def _free_total_lp(lo, hi, levels, n) -> float:
    """The joint node's score by a linear programme (scipy's HiGHS), an oracle independent
    of free_total_cost: minimise sum_k s_k over ranks rho (lo_j <= rho_j <= hi_j, rho_j <=
    rho_{j+1}), a total N >= 0 and slacks s_k >= |c_k - w_k N|, c = (rho_1, rho_2 - rho_1,
    ..., n - rho_d), w the gaps of 0, levels, 1."""
    from scipy.optimize import linprog

    d = len(levels)
    a = [0.0, *(float(v) for v in levels), 1.0]
    nv = d + 1 + (d + 1)  # rho_1..rho_d, N, s_0..s_d
    cost = np.zeros(nv)
    cost[d + 1 :] = 1
    rows, rhs = [], []
    for k in range(d + 1):  # c_k - w_k N <= s_k and -(c_k - w_k N) <= s_k
        coef = np.zeros(nv)
        if k < d:
            coef[k] += 1  # + rho_{k+1}
        if k > 0:
            coef[k - 1] -= 1  # - rho_k
        coef[d] = -(a[k + 1] - a[k])
        const = float(n) if k == d else 0.0
        for sign in (1, -1):
            row = sign * coef.copy()
            row[d + 1 + k] = -1
            rows.append(row)
            rhs.append(-sign * const)
    for j in range(d - 1):  # rho_j <= rho_{j+1}
        row = np.zeros(nv)
        row[j], row[j + 1] = 1, -1
        rows.append(row)
        rhs.append(0.0)
    bounds = [(float(lo[j]), float(hi[j])) for j in range(d)] + [(0, None)] * (d + 2)
    res = linprog(cost, A_ub=np.array(rows), b_ub=np.array(rhs), bounds=bounds, method="highs")
    assert res.status == 0
    return float(res.fun)


def _pair_law(units, a1, a2, eps, support, out_lo, out_hi):
    """The exact law of a two-level node over pairs of cells (module docstring of
    dpkit.statistics._approximate): weight mu(o1) mu(o2) exp(-r U*) on o1 <= o2, r =
    epsilon / 2, summed per pair of cells (gap or data value, in order); inside one cell
    the ordered pairs weigh (M**2 + sum mu**2) / 2. Returns the cells' first points, the
    pairs (i, j) and their probabilities (float64: the enumeration is of probabilities, not
    of a draw)."""

    def sq(a: int, b: int) -> int:  # sum of mu(t)**2 over [a, b]
        if b < a:
            return 0
        n_pts = b - a + 1
        if support == "continuous":
            return n_pts
        k = G_EXP + int(math.log2(float(support)))
        atoms = (b >> k) - ((a - 1) >> k)
        return (n_pts - atoms) + atoms * (1 + (1 << k)) ** 2

    vals, cnts = np.unique(np.array(units, dtype=np.int64), return_counts=True)
    n = len(units)
    starts, mass, sqs, lo, hi = [], [], [], [], []
    below, prev = 0, out_lo - 1
    for v, c in [*zip(vals.tolist(), cnts.tolist(), strict=True), (out_hi + 1, 0)]:
        if v - 1 >= prev + 1:
            starts.append(prev + 1)
            mass.append(_mass(prev + 1, v - 1, support))
            sqs.append(sq(prev + 1, v - 1))
            lo.append(below)
            hi.append(below)
        if v <= out_hi:
            starts.append(v)
            mass.append(_mass(v, v, support))
            sqs.append(sq(v, v))
            lo.append(below)
            hi.append(below + c)
            below += c
        prev = v
    from dpkit.statistics._approximate import PAIR_CAP

    r = float(eps) / 2
    size = len(starts)
    lo_a, hi_a = np.array(lo, dtype=float), np.array(hi, dtype=float)
    # the capped score U* = min(U, (|e1| + |e2|) / L + cap / r), e_j tie-aware
    t1, t2 = float(a1 * n), float(a2 * n)
    e = np.abs(np.clip(t1, lo_a, hi_a) - t1)[:, None] + np.abs(np.clip(t2, lo_a, hi_a) - t2)
    spread = max(2 - float(a1 + a2), float(a1 + a2))  # the L1 norm of the worst rank shift
    capped = e / spread + PAIR_CAP / r
    # point ranges (most pairs): U = min over N >= 0 of sum |c_k - w_k N|, convex and
    # piecewise linear in N, so the least of its values at N = 0 and at each c_k / w_k
    c = [lo_a[:, None] + 0 * lo_a[None, :], lo_a[None, :] - lo_a[:, None], n - lo_a[None, :]]
    w = [float(a1), float(a2 - a1), float(1 - a2)]
    cands = [np.zeros((size, size))] + [ck / wk for ck, wk in zip(c, w, strict=True) if wk > 0]
    u = np.min([sum(np.abs(ck - wk * t) for ck, wk in zip(c, w, strict=True)) for t in cands], 0)
    u = np.minimum(u, capped)
    # a range (an output on a data value): U by the linear programme, where the pair can weigh
    # more than e^-40 of the heaviest (|e1| + |e2| <= L U bounds its weight; lighter pairs
    # are left out, together below 1e-10 of the law)
    m = np.array(mass, dtype=float)
    with np.errstate(divide="ignore"):
        logm = np.log(m)[:, None] + np.log(m)[None, :]
    top = np.max(logm - r * u)
    heavy = logm - r * e / spread > top - 40
    ranged = lo_a != hi_a
    pair_ranged = ranged[:, None] | ranged[None, :]
    for i, j in np.argwhere(pair_ranged & heavy):
        if i <= j:
            lp = _free_total_lp((lo[i], lo[j]), (hi[i], hi[j]), (a1, a2), n)
            u[i, j] = min(lp, capped[i, j])
    u[pair_ranged & ~heavy] = np.inf
    with np.errstate(divide="ignore"):
        same = np.log((m * m + np.array(sqs, dtype=float)) / 2)
    logm[np.diag_indices(m.size)] = same
    logw = logm - r * u
    logw[np.tril_indices(m.size, -1)] = -np.inf  # o1 <= o2: cell i <= cell j
    w = np.exp(logw - logw.max())
    i, j = np.nonzero(w > 0)
    p = w[i, j] / w.sum()
    return np.array(starts), (i, j), p


def _ranges(x: list[int], pts: list[float]) -> tuple[list[int], list[int]]:
    xs = np.sort(np.array(x))
    return (
        np.searchsorted(xs, pts, side="left").tolist(),
        np.searchsorted(xs, pts, side="right").tolist(),
    )


def test_free_total_cost_is_the_linear_programme() -> None:
    """free_total_cost (lazy walk over the breakpoints of N; weighted medians for point
    ranges) equals the linear programme of its definition, solved by HiGHS, on 600 random
    cases: one to three levels, ties (ranges), outputs on one tied value (identical ranges,
    where the ranks must stay ordered), a level at 0 or 1 after rescaling."""
    from dpkit.statistics._approximate import free_total_cost

    rng = np.random.default_rng(11)
    grid = [Fraction(k, 20) for k in range(21)]
    for case in range(600):
        n = int(rng.integers(0, 12))
        x = sorted(rng.integers(0, 6, n).tolist())
        d = int(rng.integers(1, 4))
        levels = sorted(Fraction(v) for v in rng.choice(grid, d, replace=case % 7 == 0))
        pts = sorted(float(v) for v in rng.choice(np.arange(-1, 7, 0.5), d))
        lo, hi = _ranges(x, pts)
        exact = free_total_cost(lo, hi, levels, n)
        assert isinstance(exact, Fraction)
        assert abs(float(exact) - _free_total_lp(lo, hi, levels, n)) <= 1e-7, (x, pts, levels)


def test_pair_score_has_sensitivity_one_and_dominates_the_proposal() -> None:
    """The privacy argument of the two-level node, checked exactly (Fractions) on every
    neighbour (one record added at every position, ties included) of 40 small data sets and
    every ordered pair of outputs (data values, gaps, beyond the ends): the free-total score
    U moves by at most 1 and the proposal's |e1| + |e2| by at most L = pair_spread, both
    bounds attained (a score or spread claimed 10 % lower fails), and |e1| + |e2| <= L U
    (the exact rejection step's ratio is at most 1)."""
    from dpkit.statistics._approximate import _offset, free_total_cost, pair_spread

    rng = np.random.default_rng(3)
    probe = [k / 2 for k in range(-1, 14)]
    worst_u, worst_l1 = Fraction(0), Fraction(0)
    for _ in range(40):
        n = int(rng.integers(0, 7))
        x = sorted(rng.integers(0, 6, n).tolist())
        a1, a2 = sorted(Fraction(int(v), 10) for v in rng.choice(np.arange(1, 10), 2, False))
        spread = pair_spread(a1, a2)
        for add in range(0, 7):
            x2 = sorted([*x, add])
            for i, p1 in enumerate(probe):
                for p2 in probe[i:]:
                    vals = []
                    for data in (x, x2):
                        (l1, l2), (h1, h2) = _ranges(data, [p1, p2])
                        m = len(data)
                        u = free_total_cost((l1, l2), (h1, h2), (a1, a2), m)
                        e = abs(_offset(a1 * m, l1, h1)) + abs(_offset(a2 * m, l2, h2))
                        assert e <= spread * u
                        vals.append((u, e))
                    worst_u = max(worst_u, abs(vals[1][0] - vals[0][0]))
                    worst_l1 = max(worst_l1, abs(vals[1][1] - vals[0][1]) / spread)
    assert worst_u == 1
    assert worst_l1 == 1


TIED = [1, 2, 2, 3, 3, 3, 3, 4, 5, 5, 6, 7]
#: 1,000 distinct values on the 1/256 grid with a gap of 1,000 steps at the median: with
#: levels 0.49 and 0.51 many pairs fall in that gap, and the draws use windows
SPLIT = [k / 256 for k in range(500)] + [(k + 1500) / 256 for k in range(500)]


@pytest.mark.parametrize(
    ("x", "levels", "support", "eps"),
    [
        (TIED, (Fraction(3, 10), Fraction(3, 5)), "continuous", 3.0),
        (TIED, (Fraction(3, 10), Fraction(3, 5)), 1.0, 3.0),
        ([1, 7], (Fraction(3, 10), Fraction(3, 5)), "continuous", 3.0),
        (SPLIT, (Fraction(49, 100), Fraction(51, 100)), "continuous", 1.0),
    ],
)
def test_two_level_node_follows_its_exact_law(
    x: list[int], levels: tuple[Fraction, Fraction], support: object, eps: float, chi2_pvalue
) -> None:
    """Two levels are one two-level node (the tie-aware, capped free-total score): its
    pairs of output cells against the law enumerated from the definition, on data with
    ties, with an even base measure and with atoms on the integers (where tied values are
    reachable exactly), on two records, and on two blocks of 500 values where many pairs
    share the gap between the blocks and the draws use windows (a pair inside one cell must
    come out ordered: mass (M**2 + sum mu**2) / 2, not M**2). 4,000 draws (1,500 for the
    blocks, where accepting unordered pairs would nearly double the shared-gap share, 0.2);
    a 10 % error in the sensitivity shifts the law far beyond the 1e-3 level."""
    units = [round(v * 2**G_EXP) for v in x]
    rows = quantiles_samples(
        np.array(x, dtype=float),
        [float(v) for v in levels],
        epsilon=eps,
        bounds=(0, 8),
        size=1500 if x is SPLIT else 4000,  # SPLIT: slow rejections, a large effect
        support=support,
        rng=5,
        method="aq",
    )
    lat_lo, lat_hi = 0, 8 << G_EXP
    starts, (ci, cj), pmf = _pair_law(units, *levels, eps, support, lat_lo, lat_hi)
    pts = np.round(rows / 2.0**-G_EXP).astype(np.int64)
    idx = np.searchsorted(starts, pts, side="right") - 1
    assert np.all(pts[:, 0] <= pts[:, 1])
    size = starts.size
    obs = idx[:, 0] * size + idx[:, 1]
    assert chi2_pvalue(obs, ci * size + cj, pmf) > 1e-3
    if support == 1.0:
        assert np.mean(rows[:, 0] == 3.0) > 0.3
    if x is SPLIT:
        assert np.mean(idx[:, 0] == idx[:, 1]) > 0.15  # the case this data is here for


@pytest.mark.parametrize("m", [*range(1, 20), 31, 32, 99])
def test_aq_every_path_spends_exactly_epsilon(m: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The recursion's draws, in the order made (node, then its subtrees left to right, as
    node_levels says: one level, or two by one joint draw), rebuild a tree each of whose
    root-to-leaf paths spends exactly epsilon (the privacy argument), whose root estimates
    the levels node_levels(m) names, and whose height is tree_height(m): at most
    ceil(log2(m + 1)) and 3 for the nine deciles (ApproximateQuantiles' binary tree: 4)."""
    from dpkit.statistics import _approximate

    drawn: list[tuple[tuple[Fraction, ...], Fraction]] = []
    real_one, real_two = _approximate.draw_view, _approximate.draw_pair

    def one(view, measure, a, b, eps, source):  # type: ignore[no-untyped-def]
        drawn.append(((a,), eps))
        return real_one(view, measure, a, b, eps, source)

    def two(view, measure, a1, a2, eps, source):  # type: ignore[no-untyped-def]
        drawn.append(((a1, a2), eps))
        return real_two(view, measure, a1, a2, eps, source)

    monkeypatch.setattr(_approximate, "draw_view", one)
    monkeypatch.setattr(_approximate, "draw_pair", two)
    levels = [(k + 1) / (m + 1) for k in range(m)]
    epsilon = Fraction(0.7)  # all of it goes to the values without intervals
    r = quantiles(
        np.arange(1000.0), levels, epsilon=0.7, bounds=(0, 1000), method="aq", intervals=False
    )
    assert len(r.values) == m and sum(len(a) for a, _e in drawn) == m
    it = iter(drawn)
    paths: list[Fraction] = []

    def rebuild(k: int, spent: Fraction, depth: int) -> int:
        if k == 0:
            paths.append(spent)
            return depth - 1
        a, eps = next(it)
        idx = _approximate.node_levels(k)
        assert len(a) == len(idx) and all(0 <= i < k for i in idx)
        assert eps == (epsilon - spent) / _approximate.tree_height(k)  # the stated budget rule
        edges = [-1, *idx, k]
        return max(
            rebuild(edges[j + 1] - edges[j] - 1, spent + eps, depth + 1)
            for j in range(len(idx) + 1)
        )

    height = rebuild(m, Fraction(0), 1)
    assert all(p == epsilon for p in paths)
    assert height == _approximate.tree_height(m) <= max(1, math.ceil(math.log2(m + 1)))
    first = tuple(Fraction(levels[i]).limit_denominator(10**9) for i in _approximate.node_levels(m))
    assert drawn[0][0] == first
    if m == 9:
        assert height == 3 and _approximate.node_levels(9) == (2, 5)


def test_aq_split_puts_the_fewest_levels_on_full_height_paths() -> None:
    """split_index's closed form against a brute force over every split of every subtree:
    the tree it builds has height ceil(log2(m + 1)) and the fewest levels on full-height
    paths (the ones that get epsilon / height), which _on_full_paths counts."""
    from functools import cache

    from dpkit.statistics._approximate import _on_full_paths, aq_depth, split_index

    def h(k: int) -> int:
        return aq_depth(k) if k else 0

    @cache
    def fewest(k: int, d: int) -> int:
        if h(k) < d:
            return 0
        if d == 1:
            return 1
        return 1 + min(
            fewest(i, d - 1) + fewest(k - 1 - i, d - 1)
            for i in range(k)
            if max(h(i), h(k - 1 - i)) == d - 1
        )

    def built(k: int, d: int) -> tuple[int, int]:  # (height, levels on d-draw paths)
        if k == 0:
            return 0, 0
        i = split_index(k)
        (hl, cl), (hr, cr) = built(i, d - 1), built(k - 1 - i, d - 1)
        height = 1 + max(hl, hr)
        return height, (0 if height < d else 1 + cl + cr)

    for m in range(1, 130):
        d = aq_depth(m)
        assert built(m, d) == (d, fewest(m, d)) == (d, _on_full_paths(m, d)), m


# --------------------------------------------------------------------------- cdf method


def test_cdf_histogram_noise_is_the_stated_discrete_laplace(chi2_pvalue) -> None:
    x = np.repeat(np.arange(20, 61), 7)  # integer column: resolution 1, grid 0 .. 100
    true = np.bincount(x, minlength=101)
    noise = np.concatenate(
        [
            np.array(
                quantiles(x, [0.25, 0.75], epsilon=0.7, bounds=(0, 100), rng=s).details[
                    "noisy_histogram"
                ]
            )
            - true
            for s in range(60)
        ]
    )
    a = math.exp(-0.7)
    support = np.arange(-15, 16)
    pmf = (1 - a) / (1 + a) * a ** np.abs(support)
    # 6,060 draws: a 10% error in the scale moves P[0] from 0.336 to 0.309, far past 1e-3
    assert chi2_pvalue(noise, support, pmf) > 1e-3


def test_cdf_is_auto_for_integer_columns_exact_and_covered() -> None:
    rng = np.random.default_rng(12)
    x = rng.integers(18, 91, 3000)
    truth = np.quantile(x, DECILE_LEVELS)
    misses = 0
    for s in range(60):
        rel = quantiles(x, DECILE_LEVELS, epsilon=1.0, bounds=(0, 100), alpha=0.2, rng=s)
        assert rel.method == "cdf" and np.all(np.diff(rel.values) >= 0)
        iv = rel.value_intervals
        misses += not np.all((iv[:, 0] <= truth) & (truth <= iv[:, 1]))
    assert misses / 60 <= 0.2 + 3 * math.sqrt(0.2 * 0.8 / 60)
    assert np.all(rel.values == np.round(rel.values))
    with pytest.raises(dpkit.ParameterError, match="method='cdf' needs"):
        quantiles(x.astype(float), [0.5], epsilon=1.0, bounds=(0, 100), method="cdf")


DECILE_LEVELS = [k / 10 for k in range(1, 10)]


# ---------------------------------------------------------------- nothing fails after the spend


_X10 = np.arange(10.0)


@pytest.mark.parametrize(
    "release",
    [
        lambda rng, a: quantiles(_X10, [0.5], epsilon=1.0, bounds=(0, 10), rng=rng, accountant=a),
        lambda rng, a: quantile(_X10, 0.3, epsilon=1.0, bounds=(0, 10), rng=rng, accountant=a),
        lambda rng, a: median(_X10, epsilon=1.0, bounds=(0, 10), rng=rng, accountant=a),
        lambda rng, a: quantiles_from_counts(
            [1.0], [3], 0.5, epsilon=1.0, bounds=(0, 10), rng=rng, accountant=a
        ),
    ],
)
def test_a_bad_rng_is_refused_before_the_spend(refused_before_the_spend, release, bad_rng) -> None:
    rng, exc, match = bad_rng
    refused_before_the_spend(lambda a: release(rng, a), exc, match)


@pytest.mark.parametrize(
    "release",
    [
        lambda a: quantiles(
            np.array([0.1, 0.5, 0.9]),
            [0.25, 0.75],
            epsilon=1.0,
            bounds=(0, 1),
            method="cdf",
            accountant=a,
        ),
        lambda a: quantiles_from_counts(
            [1.0, 2.0], [3, 4], 0.5, epsilon=1.0, bounds=(0, 10), method="cdf", accountant=a
        ),
        lambda a: quantiles(
            np.arange(10), [0.5], epsilon=1.0, bounds=(0, 10**6), method="cdf", accountant=a
        ),
    ],
)
def test_cdf_without_a_small_grid_is_refused_before_the_spend(
    refused_before_the_spend, release
) -> None:
    refused_before_the_spend(release, dpkit.ParameterError, "method='cdf' needs")


@pytest.mark.parametrize("method", ["auto", "joint", "aq"])
def test_summary_counts_that_wrap_int64_are_refused_before_the_spend(
    refused_before_the_spend, method: str
) -> None:
    # 2**62 + 2**62 wraps to -2**63 in int64: the 2**40-record cap must see the true total
    refused_before_the_spend(
        lambda a: quantiles_from_counts(
            [0.0, 1.0],
            [2**62, 2**62],
            [0.5],
            epsilon=1.0,
            bounds=(0, 1),
            method=method,
            accountant=a,
        ),
        dpkit.ParameterError,
        "2\\*\\*40 records",
    )
    refused_before_the_spend(
        lambda a: quantiles_from_counts(
            [0.0, 1.0, 2.0], [2**39, 2**39, 1], 0.5, epsilon=1.0, bounds=(0, 2), accountant=a
        ),
        dpkit.ParameterError,
        "2\\*\\*40 records",
    )


@pytest.mark.parametrize("levels", [[0.25, 0.75], [0.75], [0.1, 0.5, 0.9]])
def test_cdf_on_a_one_point_grid_releases_the_point(levels) -> None:
    # integer data, bounds holding the single integer 0: the grid has one point, so every
    # level's answer and interval is that point (and nothing fails after the spend)
    acct = dpkit.Accountant(dpkit.PureDP(10.0))
    x = np.zeros(10, dtype=np.int64)
    rel = quantiles(
        x, levels, epsilon=1.0, bounds=(-0.5, 0.5), method="cdf", rng=0, accountant=acct
    )
    assert rel.method == "cdf" and acct.spent == dpkit.PureDP(1.0)
    assert rel.values.tolist() == [0.0] * len(levels)
    assert np.all(np.isfinite(rel.value_intervals)) and np.all(np.isfinite(rel.rank_intervals))
    assert np.all(rel.value_intervals[:, 0] <= 0) and np.all(rel.value_intervals[:, 1] >= 0)


def test_aq_splits_a_tie_of_more_than_2_28_records() -> None:
    # the records tied at a released value go left by fair coins: more than the Bernoulli
    # sampler's 2**28 per call are drawn in chunks (the same Binomial(tie, 1/2) law)
    acct = dpkit.Accountant(dpkit.PureDP(10.0))
    rel = quantiles_from_counts(
        [0.5], [2**28 + 1], [0.1, 0.5, 0.9], epsilon=1.0, bounds=(0, 1), rng=0, accountant=acct
    )
    assert rel.values.tolist() == [0.5, 0.5, 0.5] and acct.spent == dpkit.PureDP(1.0)
