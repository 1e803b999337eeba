"""Released counts and sums follow the stated discrete noise; intervals cover.

Many public-key groups in one release give many independent noise draws at once (each group's
noise is drawn independently), so a few releases give tens of thousands of draws cheaply.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from scipy import stats

import dpkit as dp

G = 4000  # groups per release
PASS, FAIL = 1e-3, 1e-6


def _table(seed: int = 0) -> tuple[pl.DataFrame, list[int]]:
    """G groups; group i holds i % 5 rows (some empty) with values in [0, 100]."""
    rng = np.random.default_rng(seed)
    sizes = np.arange(G) % 5
    g = np.repeat(np.arange(G), sizes)
    x = rng.uniform(0, 100, g.size)
    return pl.DataFrame({"g": g, "x": x}), list(range(G))


def _dlap_cdf(t: float):
    """P[Z <= z] for P[Z = z] ~ exp(-|z|/t) (the two-sided geometric law)."""
    q = math.exp(-1 / t)

    def cdf(z: np.ndarray) -> np.ndarray:
        z = np.asarray(z, dtype=np.float64)
        return np.where(z >= 0, 1 - q ** (z + 1) / (1 + q), q ** (-z) / (1 + q))

    return cdf


def _dgauss_cdf(s2: float):
    k = int(40 * math.sqrt(s2)) + 2
    support = np.arange(-k, k + 1)
    pmf = np.exp(-(support.astype(float) ** 2) / (2 * s2))
    cum = np.cumsum(pmf / pmf.sum())

    def cdf(z: np.ndarray) -> np.ndarray:
        idx = np.clip(np.asarray(z, dtype=np.int64) + k, -1, 2 * k)
        return np.where(idx < 0, 0.0, cum[np.maximum(idx, 0)])

    return cdf


def _pvalue(noise: np.ndarray, cdf, cells: int = 30) -> float:
    """Chi-square p-value of integer draws over ~equiprobable cells (-inf, e_1], (e_1, e_2]..."""
    edges = np.unique(np.quantile(noise, np.linspace(0, 1, cells + 1)[1:-1]).round())
    probs = np.diff(np.concatenate([[0.0], cdf(edges), [1.0]]))
    obs = np.bincount(np.searchsorted(edges, noise, side="left"), minlength=edges.size + 1)
    exp = probs * noise.size
    return float(stats.chi2.sf(float(((obs - exp) ** 2 / exp).sum()), df=edges.size))


def _noise_draws(agg, releases: int, **kw) -> tuple[np.ndarray, list]:
    df, keys = _table()
    truth = (
        pl.DataFrame({"g": keys})
        .join(df.group_by("g").agg(pl.len().alias("n"), pl.col("x").sum()), on="g", how="left")
        .fill_null(0)
    )
    s = dp.Session(df, budget=dp.ApproxDP(1e9, 0.5), rng=2024)
    q = s.query().group_by("g", keys=keys).agg(agg)
    rels = [q.measure(**kw) for _ in range(releases)]
    return truth, rels


def test_count_noise_is_the_stated_discrete_laplace() -> None:
    eps = 0.5
    truth, rels = _noise_draws(dp.count(), 5, epsilon=eps)
    noise = np.concatenate([r.frame["count"].to_numpy() - truth["n"].to_numpy() for r in rels])
    t = 1 / eps  # sensitivity 1 (one row per unit), the whole budget on the count
    # 20,000 draws in 30 cells: the right law passes at 1e-3; a scale 10% off moves the
    # cell masses by ~2-4%, a chi-square of several hundred, far below 1e-6
    assert _pvalue(noise, _dlap_cdf(t)) > PASS
    assert _pvalue(noise, _dlap_cdf(1.1 * t)) < FAIL
    assert _pvalue(noise, _dlap_cdf(t / 1.1)) < FAIL


def test_sum_noise_is_the_stated_discrete_laplace_on_the_lattice() -> None:
    eps = 1.0
    truth, rels = _noise_draws(dp.sum("x", bounds=(0, 100)), 5, epsilon=eps)
    unit = 2.0**-14  # the largest power of two <= 100 / 2**20
    exact = truth["x"].to_numpy()  # float sums are close enough here: noise is ~1e6 units
    noise = np.concatenate([(r.frame["x_sum"].to_numpy() - exact) / unit for r in rels])
    noise = np.rint(noise)
    t = 100 / unit / eps  # sensitivity max(|lower|, |upper|) in lattice units
    assert _pvalue(noise, _dlap_cdf(t)) > PASS
    assert _pvalue(noise, _dlap_cdf(1.1 * t)) < FAIL


def test_count_noise_is_the_stated_discrete_gaussian() -> None:
    eps, delta = 1.0, 1e-6
    truth, rels = _noise_draws(dp.count(), 5, epsilon=eps, delta=delta)
    noise = np.concatenate([r.frame["count"].to_numpy() - truth["n"].to_numpy() for r in rels])
    rho = rels[0].plan.budget.rho  # the zCDP budget converting to (eps, delta)
    # independently: the largest rho with the CKS conversion at delta below eps
    assert dp.zcdp_to_approx(float(rho), delta).epsilon <= eps
    assert dp.zcdp_to_approx(float(rho) * 1.001, delta).epsilon > eps
    s2 = 1 / (2 * float(rho))  # sigma^2 = sensitivity^2 / (2 rho), sensitivity 1
    assert _pvalue(noise, _dgauss_cdf(s2)) > PASS
    assert _pvalue(noise, _dgauss_cdf(1.21 * s2)) < FAIL  # sigma 10% too large
    assert _pvalue(noise, _dgauss_cdf(s2 / 1.21)) < FAIL  # sigma 10% too small


@pytest.mark.parametrize(
    ("agg", "column", "truth_col", "kw", "alpha"),
    [
        # alpha 0.065 for the Laplace count (t = 2): the exact interval misses 6.2%, one step
        # shorter would miss 10.2%, so a half-width one step short fails the test
        (dp.count(), "count", "n", {"epsilon": 0.5}, 0.065),
        (dp.count(), "count", "n", {"epsilon": 0.5, "delta": 1e-6}, 0.1),
        (dp.sum("x", bounds=(0, 100)), "x_sum", "x", {"epsilon": 1.0}, 0.1),
        (dp.mean("x", bounds=(0, 100)), "x_mean", "mean", {"epsilon": 1.0}, 0.1),
        (dp.var("x", bounds=(0, 100)), "x_var", "var", {"epsilon": 1.0, "delta": 1e-6}, 0.1),
    ],
)
def test_interval_coverage(agg, column, truth_col, kw, alpha) -> None:
    """At least 1 - alpha - 3 standard errors of the 20,000 intervals cover the true value
    (exact intervals reach about 1 - alpha; the conservative ones more)."""
    truth, rels = _noise_draws(agg, 5, alpha=alpha, **kw)
    df, _ = _table()
    by = df.group_by("g").agg(
        pl.col("x").mean().alias("mean"), pl.col("x").var(ddof=0).alias("var")
    )
    truth = truth.join(by, on="g", how="left")
    covered, total = 0, 0
    for r in rels:
        f = r.frame.join(truth, on="g")
        f = f.filter(pl.col(truth_col).is_not_null()) if truth_col in ("mean", "var") else f
        ok = (f[f"{column}_low"] <= f[truth_col] + 1e-9) & (
            f[truth_col] - 1e-9 <= f[f"{column}_high"]
        )
        covered += int(ok.sum())
        total += f.height
    se = math.sqrt(alpha * (1 - alpha) / total)
    assert covered / total >= 1 - alpha - 3 * se
