"""Privacy on neighbours: a table against the same table without one person (all their rows).

One release holds B independent copies ("blocks") of the same small situation: a group A_i
held by 10 persons plus person P_i, and a group B_i held by P_i alone (P_i has one row in
each). Each group's noise is drawn independently and nothing in the plan depends on the number
of blocks, so the B block outputs of one release are B independent draws of the output of the
one-block release; the neighbour removes P_i from every block. Per block the output is
(is A_i released, its noisy count, is B_i released).
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np
import polars as pl
import pytest

import dpkit as dp

B = 20_000  # blocks per release: one release on each neighbour gives 20,000 draws each
EPS, DELTA = 1.0, 0.1


def _blocks(with_p: bool) -> pl.DataFrame:
    i = pl.int_range(B, eager=True)
    others = pl.DataFrame({"i": i}).join(pl.DataFrame({"j": range(10)}), how="cross")
    others = others.select(
        pid=pl.format("{}-o{}", "i", "j"), g=pl.format("A{}", pl.col("i").cast(pl.String))
    )
    if not with_p:
        return others
    base = pl.DataFrame({"i": i}).select(pid=pl.format("{}-P", "i"), i=pl.col("i").cast(pl.String))
    ps = pl.concat(
        [
            base.select("pid", g=pl.format("A{}", "i")),
            base.select("pid", g=pl.format("B{}", "i")),
        ]
    )
    return pl.concat([others, ps])


def _outcomes(frame: pl.DataFrame) -> Counter:
    """Per block: (cell of A_i's noisy count or None if not released, is B_i released)."""
    f = frame.with_columns(kind=pl.col("g").str.head(1), i=pl.col("g").str.slice(1).cast(pl.Int64))
    a = f.filter(pl.col("kind") == "A").select("i", a=pl.col("count").clip(4, 20) // 2)
    b = f.filter(pl.col("kind") == "B").select("i", b=pl.lit(True))
    blocks = pl.DataFrame({"i": pl.int_range(B, eager=True).cast(pl.Int64)})
    blocks = blocks.join(a, on="i", how="left").join(b, on="i", how="left")
    blocks = blocks.with_columns(pl.col("b").fill_null(False))
    return Counter(blocks.select("a", "b").rows())


def _release(with_p: bool, noise: str, engine: Any, seed: int) -> Any:
    """``engine``: "polars", "duckdb" or a function making the engine's data (Spark)."""
    df = _blocks(with_p)
    data = df
    if engine == "duckdb":
        import duckdb

        data = duckdb.connect().from_arrow(df.to_arrow())
    elif callable(engine):
        data = engine(df)
    s = dp.Session(
        data,
        privacy_unit="pid",
        max_rows_per_unit=2,
        max_groups_per_unit=2,
        budget=dp.ApproxDP(10.0, 0.5),
        rng=seed,
    )
    return s.query().group_by("g").agg(dp.count()).measure(epsilon=EPS, delta=DELTA, noise=noise)


def _noise_pmf(noise: str, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """``(z, P[Z = z])`` of the discrete Laplace (``P ∝ exp(-|z| / scale)``) or the discrete
    Gaussian (``P ∝ exp(-z**2 / (2 scale))``, ``scale`` the variance parameter), on a range
    wide enough that the mass left out is below 1e-15."""
    z = np.arange(-400, 401)
    logw = -np.abs(z) / scale if noise == "laplace" else -(z.astype(float) ** 2) / (2 * scale)
    w = np.exp(logw - logw.max())
    return z, w / w.sum()


def _exact_cells(noise: str, with_p: bool, count_scale: float, sel_scale: float, tau: int):
    """The exact law of one block's outcome (as :func:`_outcomes` reads it) under the stated
    noise: A_i holds 11 rows of 11 units with P (10 without), each counted once; it is
    released when its noisy count of units reaches ``tau``, with a count noised
    independently; B_i (P's lone key) is released when 1 plus its selection noise reaches
    ``tau``."""
    n = 11 if with_p else 10
    z, pc = _noise_pmf(noise, count_scale)
    zs, ps = _noise_pmf(noise, sel_scale)
    released = ps[n + zs >= tau].sum()
    lone = ps[1 + zs >= tau].sum() if with_p else 0.0
    cell = np.clip(n + z, 4, 20) // 2
    out = {}
    for c in np.unique(cell).tolist():
        out[(c, False)] = released * pc[cell == c].sum() * (1 - lone)
        out[(c, True)] = released * pc[cell == c].sum() * lone
    out[(None, False)] = (1 - released) * (1 - lone)
    out[(None, True)] = (1 - released) * lone
    return out


def _stated_scales(noise: str) -> tuple[float, float]:
    """The noise scales the public parameters imply (never read from the plan): the count
    gets half the budget with sensitivity max_rows_per_unit = 2, the selection count the
    other half with one unit in each of max_groups_per_unit = 2 groups. Laplace: scales
    ``2 / (EPS / 2)`` both. Gaussian: rho from (EPS, DELTA / 2) (the other half of delta is
    the selection's), variances ``l2**2 / (2 rho / 2)`` with ``l2**2`` 4 and 2."""
    if noise == "laplace":
        return 2 / (EPS / 2), 2 / (EPS / 2)
    rho = dp.approx_to_zcdp(EPS, DELTA / 2).rho
    return 4 / rho, 2 / rho


@pytest.mark.parametrize(
    ("noise", "engine"),
    [
        ("laplace", "polars"),
        ("gaussian", "polars"),
        ("laplace", "duckdb"),
        pytest.param("laplace", "spark", marks=pytest.mark.spark),
    ],
)
def test_neighbour_output_ratios_and_lone_key(
    noise: str, engine: Any, request: pytest.FixtureRequest
) -> None:
    """Per outcome, the empirical privacy loss of removing P stays within the exact loss of
    the stated mechanism on this pair.

    P holds one of the 2 rows and one unit of each of its 2 groups a unit may hold, so the
    stated noise (scales from the public parameters alone, :func:`_stated_scales`) moves
    A_i's outcome by a log ratio of at most EPS / 2 = 0.5 under Laplace noise: 1 / 4 from
    the count and 1 / 4 from the selection count; the reverse direction adds
    -log(1 - P[B_i appears]) (0.047). Under Gaussian noise the bound is the largest exact
    log ratio over these (clipped) outcomes. Tolerance: 4 standard errors of each estimated
    log ratio (delta method, ``sqrt((1 - p) / (B p) + (1 - q) / (B q))``: 0.03 to 0.2 on
    cells of 100 to 10,000 draws). Epsilon doubled (every noise scale halved) gives log
    ratios near 1.0 on cells of thousands of draws and fails."""
    if engine == "spark":  # the test run's shared local Spark; the frames come back as Polars
        engine = request.getfixturevalue("to_spark")
        back = request.getfixturevalue("to_polars")
    else:
        back = lambda frame: frame  # noqa: E731
    rel = _release(True, noise, engine, seed=1)
    d = _outcomes(back(rel.frame))
    d2 = _outcomes(back(_release(False, noise, engine, seed=2).frame))
    # the lone key B_i appears with probability at most the threshold's promise: delta for
    # selection split over the person's (at most) 2 groups; 4 standard errors of slack
    sel = rel.plan.selection
    promise = sel.delta / sel.keys_per_unit
    lone = sum(v for (a, b), v in d.items() if b) / B
    assert lone <= promise + 4 * math.sqrt(promise / B)
    assert sum(v for (a, b), v in d2.items() if b) == 0  # B_i does not exist without P_i
    # the exact per-outcome loss of the stated mechanism on this pair
    count_scale, sel_scale = _stated_scales(noise)
    exact = _exact_cells(noise, True, count_scale, sel_scale, rel.threshold)
    exact2 = _exact_cells(noise, False, count_scale, sel_scale, rel.threshold)
    pairs = [(exact[o], exact2[o]) for o in exact2 if exact2[o] > 0 and exact[o] > 0]
    forward = max(math.log(p / q) for p, q in pairs)
    reverse = max(math.log(q / p) for p, q in pairs)
    if noise == "laplace":  # the analytic bound: half of EPS for the pair
        lone_exact = sum(v for (a, b), v in exact.items() if b)
        assert forward <= EPS / 2 + 1e-9
        assert reverse <= EPS / 2 - math.log(1 - lone_exact) + 1e-9
    checked = 0
    for o in set(d) | set(d2):
        if o[1] or min(d[o], d2[o]) < 100:  # B_i's outcomes: the lone-key check above
            continue
        p, q = d[o] / B, d2[o] / B
        se = math.sqrt((1 - p) / (B * p) + (1 - q) / (B * q))
        assert math.log(p / q) <= forward + 4 * se, (o, math.log(p / q), forward, se)
        assert math.log(q / p) <= reverse + 4 * se, (o, math.log(q / p), reverse, se)
        checked += 1
    assert checked >= 6  # the test sees several outcomes


def test_threshold_formula_laplace() -> None:
    """tau is the smallest integer with P[T + Z >= tau] <= delta / m for the discrete Laplace,
    T the pre-threshold (1 + j // 8, j the margin of no cut): P[Z >= j] = q**j / (1 + q),
    q = exp(-1/t), t = m / eps_selection (m = 2, half the eps)."""
    rel = _release(True, "laplace", "polars", seed=3)
    sel = rel.plan.selection
    t = 2 / (EPS / 2)
    q = math.exp(-1 / t)
    j = next(j for j in range(1, 1000) if q**j / (1 + q) <= DELTA / 2)
    assert sel.cut == 1 + j // 8
    assert sel.threshold == sel.cut + j
    assert float(sel.noise.scale) == t
    assert rel.threshold == sel.threshold
    shown = str(_release_plan())
    assert f">= {sel.threshold}" in shown


def _release_plan() -> Any:
    s = dp.Session(
        _blocks(True).head(50),
        privacy_unit="pid",
        max_rows_per_unit=2,
        max_groups_per_unit=2,
        budget=dp.ApproxDP(10.0, 0.5),
    )
    return (
        s.query().group_by("g").agg(dp.count()).explain(epsilon=EPS, delta=DELTA, noise="laplace")
    )
