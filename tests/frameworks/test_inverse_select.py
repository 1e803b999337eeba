"""The O(n) inverse-sensitivity quantile (selection window + exact envelope) and the
support-aware candidates: both against brute-force laws."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from dpkit.errors import ParameterError
from dpkit.frameworks import inverse_sensitivity
from dpkit.frameworks.inverse import inverse_sensitivity_sample

BOUNDS = (0.0, 8.0)
G = 2.0**-27  # the grid of bounds (0, 8): 2**(floor(log2 8) - 30)


def _gap_law(x: list[float], p: float, eps: float) -> np.ndarray:
    """Brute force: P[gap g] ∝ length(g) exp(-eps ceil(|g - p n|) / 2), g = 0 .. n."""
    units = sorted(round(min(max(v, 0.0), 8.0) / G) for v in x)
    ext = [0, *units, round(8.0 / G)]
    n = len(x)
    pn = Fraction(p) * n
    logw = []
    for g in range(n + 1):
        length = ext[g + 1] - ext[g]
        loss = math.ceil(abs(g - pn))
        logw.append(math.log(length) - eps * loss / 2 if length else -math.inf)
    w = np.exp(np.array(logw) - max(logw))
    return w / w.sum()


def _gap_of(values: np.ndarray, x: list[float]) -> np.ndarray:
    units = np.sort(np.round(np.clip(x, *BOUNDS) / G))
    cells = np.floor(values / G)
    return np.searchsorted(units, cells, side="right")


CASES = [
    # (data, p, eps, window): windows far smaller than n force the envelope and the fallback
    ([0.5, 1.0, 1.5, 2.0, 3.0, 3.5, 5.0, 6.0, 7.0, 7.5], 0.5, 0.6, 1),
    ([0.5, 1.0, 1.5, 2.0, 3.0, 3.5, 5.0, 6.0, 7.0, 7.5], 0.3, 0.4, 2),
    ([1.0, 2.0, 2.0, 2.0, 2.0, 6.0, 6.0, 7.9, 8.0, -3.0, 9.0], 0.5, 0.8, 1),
    ([0.1 * k for k in range(1, 31)], 0.9, 0.3, 3),
]


@pytest.mark.parametrize(("x", "p", "eps", "window"), CASES)
def test_selection_window_has_the_sort_law(x, p, eps, window, chi2_pvalue) -> None:
    pmf = _gap_law(x, p, eps)
    vals, losses = inverse_sensitivity_sample(
        x,
        epsilon=eps,
        bounds=BOUNDS,
        query="percentile",
        percentile=100 * p,
        size=30_000,
        rng=7,
        window=window,
    )
    gaps = _gap_of(vals, x)
    # 30,000 draws over <= 31 gaps; the outside gaps (beyond the window) carry a large share
    # here, so an envelope off by one loss unit (exp(eps/2)) or an outside draw accepted
    # without its test moves them by tens of percent: a chi-square far below 1e-3
    assert chi2_pvalue(gaps, np.arange(pmf.size), pmf) > 1e-3
    pn = Fraction(p) * len(x)
    assert np.array_equal(losses, [math.ceil(abs(g - pn)) for g in gaps])


@pytest.mark.parametrize("window", [None, 40])
def test_selection_with_a_sampled_bracket_has_the_sort_law(window, chi2_pvalue) -> None:
    # 40,000 records: the bracket comes from a strided sample (not the data itself); with
    # window=40 at epsilon 0.01 about a third of the draws take the envelope branch
    x = np.random.default_rng(1).normal(4, 1, 40_000).clip(0, 8)
    x[::7] = np.round(x[::7])  # ties
    pmf = _gap_law(x.tolist(), 0.5, 0.01)
    fast, _ = inverse_sensitivity_sample(
        x, epsilon=0.01, bounds=BOUNDS, size=20_000, rng=3, window=window
    )
    gaps = _gap_of(fast, x.tolist())
    assert chi2_pvalue(gaps, np.arange(pmf.size), pmf) > 1e-3


def test_bad_window_is_refused() -> None:
    with pytest.raises(ParameterError, match="`window` must be an int >= 0"):
        inverse_sensitivity_sample([1.0, 2.0], epsilon=1.0, bounds=BOUNDS, window=-1)


# --------------------------------------------------------------------------- support


def _support_law(x: list[float], p: float, eps: float, support: object):
    """Brute force over cells: atoms at data values, gaps between; mass of the base measure
    by its definition, loss len = max(0, L - q, q + frac - E)."""
    n = len(x)
    pn = Fraction(p) * n
    q = math.floor(pn)
    frac = int(pn != q)
    vals = sorted(set(x))
    units = [round(v / G) for v in vals]

    def mass(a: int, b: int) -> int:
        if b < a:
            return 0
        if support == "auto":
            return 31 * (b - a + 1) + sum(((b >> j) - ((a - 1) >> j)) << j for j in range(31))
        k = 27 + int(math.log2(support))
        return (b - a + 1) + (((b >> k) - ((a - 1) >> k)) << k)

    edges = [-1, *units, round(8.0 / G) + 1]
    logw = []
    for i in range(len(edges) - 1):
        a, b = edges[i] + 1, edges[i + 1] - 1
        lt = sum(v * 1 < (vals[i] if i < len(vals) else 9) for v in x)
        lt = sum(1 for v in x if round(v / G) < a)
        m = mass(a, b)
        loss = max(0, lt - q, q + frac - lt)
        logw.append(math.log(m) - eps * loss / 2 if m else -math.inf)
        if i < len(units):
            lt = sum(1 for v in x if v < vals[i])
            le = sum(1 for v in x if v <= vals[i])
            loss = max(0, lt - q, q + frac - le)
            logw.append(math.log(mass(units[i], units[i])) - eps * loss / 2)
    w = np.exp(np.array(logw) - max(logw))
    return vals, w / w.sum()


@pytest.mark.parametrize("support", ["auto", 1.0])
def test_support_candidates_follow_their_law(support, chi2_pvalue) -> None:
    x = [1.0, 2.0, 2.0, 2.0, 3.0, 5.0, 5.0]
    vals, pmf = _support_law(x, 0.5, 1.0, support)
    draws, _ = inverse_sensitivity_sample(
        x, epsilon=1.0, bounds=BOUNDS, size=30_000, rng=11, support=support
    )
    arr = np.array(vals)
    pos = np.searchsorted(arr, draws)
    hit = (pos < arr.size) & (arr[np.minimum(pos, arr.size - 1)] == draws)
    cells = np.where(hit, 2 * pos + 1, 2 * pos)
    assert chi2_pvalue(cells, np.arange(pmf.size), pmf) > 1e-3


def test_support_releases_tied_integers_exactly() -> None:
    ages = np.repeat(np.arange(18, 91), 30).astype(float)
    rel = inverse_sensitivity(ages, epsilon=1.0, bounds=(0, 100), support=1.0, rng=2)
    assert rel.value == np.median(ages) and rel.details["support"] == 1.0
    cont = inverse_sensitivity(ages, epsilon=1.0, bounds=(0, 100), rng=2)
    assert cont.value != round(cont.value)  # a cell midpoint beside the tie block


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(support="integers"), "`support`"),
        (dict(support=0.3), "power of two"),
        (dict(support="auto", grid=[1.0, 2.0]), "not both"),
        (dict(query="mean", support="auto", relation="bounded"), "median and percentiles"),
    ],
)
def test_support_errors(kwargs, match) -> None:
    with pytest.raises(ValueError, match=match):
        inverse_sensitivity([1.0, 2.0, 3.0], epsilon=1.0, bounds=BOUNDS, **kwargs)


@pytest.mark.parametrize("bounds", [(0.0, 100.0), (-1e6, 1e6), (-3.0, -1.0)])
def test_counts_from_units_equal_np_unique(bounds: tuple[float, float]) -> None:
    """The sorted distinct lattice values and counts (32-bit offsets from the lattice's low
    end) are np.unique's, with values at both ends of the lattice and many ties."""
    from dpkit.mechanisms.quantile_em import Counts, QuantileLattice

    lat = QuantileLattice.for_bounds("q", *bounds)
    rng = np.random.default_rng(3)
    lo, hi = bounds
    x = np.concatenate((rng.uniform(lo, hi, 5000), np.round(rng.uniform(lo, hi, 5000)), [lo, hi]))
    units = lat.units(x)
    got = Counts.from_units(lat, units)
    values, counts = np.unique(units, return_counts=True)
    np.testing.assert_array_equal(got.values, values)
    np.testing.assert_array_equal(got.counts, counts)
    assert got.values.dtype == np.int64 and got.cum[-1] == x.size
    assert Counts.from_units(lat, units[:0]).n == 0
