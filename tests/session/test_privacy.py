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
    # every outcome's probability ratio stays within exp(eps) plus delta, both ways; cells
    # with fewer than 400 draws are skipped; slack: 4 standard errors of each estimate
    for o in set(d) | set(d2):
        p, q = d[o] / B, d2[o] / B
        if max(d[o], d2[o]) < 400:
            continue
        se = math.sqrt(p / B) + math.sqrt(q / B)
        assert p <= math.exp(EPS) * q + DELTA + 4 * se * math.exp(EPS), o
        assert q <= math.exp(EPS) * p + DELTA + 4 * se * math.exp(EPS), o
    assert len([o for o in d if d[o] >= 400]) >= 4  # the test sees several outcomes


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
