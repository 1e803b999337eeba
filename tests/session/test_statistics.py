"""The statistics layer in the Session: many quantiles in one mechanism, ties on integer
columns, private clipping bounds (``bounds="auto"``) and private contribution bounds
(``max_rows_per_unit="auto"``), on every engine of the Session's fixture."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl

import dpkit as dp
from dpkit import statistics
from dpkit.samplers import as_source
from dpkit.session._sample import QuerySampler

# ----------------------------------------------------------------------------- many quantiles


def _quantile_table() -> pl.DataFrame:
    rng = np.random.default_rng(11)
    n = 600
    return pl.DataFrame(
        {
            "age": rng.integers(18, 91, n),  # integer-typed: atoms on the integers
            # floats on the quantile grid of (0, 100) (its unit is 1/64): the engine's grid
            # counts are then the values' own counts
            "x": np.round(rng.normal(50, 15, n).clip(0, 100) * 8) / 8,
        }
    )


def test_multi_quantile_release_is_the_statistics_mechanism_on_every_engine(
    engine: Callable[[pl.DataFrame], Any], to_polars: Callable[[Any], pl.DataFrame]
) -> None:
    """A query with two multi-level quantile aggregates releases exactly what the statistics
    layer releases on the brute-force counts with the same seed: the engine's grid counts,
    the budget split (epsilon / 2 each), the integer column's support (1.0: ties released
    exactly, the noisy-histogram method), ``method=`` passed through, the column names
    ``<name>_<q:g>`` with their intervals, and sorted values."""
    df = _quantile_table()
    s = dp.Session(engine(df), budget=dp.PureDP(4.0), rng=21)
    q = s.query().agg(
        dp.quantile("age", [0.1, 0.5, 0.9], bounds=(0, 100)),
        dp.quantile("x", [0.25, 0.75], bounds=(0, 100), method="joint", name="xq"),
    )
    got = to_polars(q.release(epsilon=2.0))
    assert got.columns == [
        f"{n}{x}"
        for n in ("age_0.1", "age_0.5", "age_0.9", "xq_0.25", "xq_0.75")
        for x in ("", "_low", "_high")
    ]
    source = as_source(21)
    want = []
    for col, levels, method, support in (
        ("age", [0.1, 0.5, 0.9], "auto", 1.0),
        ("x", [0.25, 0.75], "joint", "auto"),
    ):
        pts, cnt = np.unique(df[col].to_numpy().astype(np.float64), return_counts=True)
        rel = statistics.quantiles_from_counts(
            pts,
            cnt,
            levels,
            epsilon=1.0,
            bounds=(0, 100),
            method=method,
            support=support,
            interval_share=0.25,
            rng=source,
        )
        want.append((rel, levels))
    (age, _), (xq, _) = want
    assert age.method == "cdf" and xq.method == "joint"
    row = got.row(0, named=True)
    for prefix, (rel, levels) in zip(("age", "xq"), want, strict=True):
        for j, lv in enumerate(levels):
            assert row[f"{prefix}_{lv:g}"] == rel.values[j]
            assert row[f"{prefix}_{lv:g}_low"] == rel.value_intervals[j, 0]
            assert row[f"{prefix}_{lv:g}_high"] == rel.value_intervals[j, 1]
    ages = [row[f"age_{lv:g}"] for lv in (0.1, 0.5, 0.9)]
    assert ages == sorted(ages) and all(float(a).is_integer() for a in ages)


def test_integer_ages_are_released_on_the_tie_block() -> None:
    """Integer ages: the Session's median of an integer-typed column lands on the tied value
    itself. The true median's rank (1000 of 2000) lies 10 records inside the block of 40s
    (ranks 990..1800). At epsilon = 0.2 (0.15 on the draw), each of the 63 lattice points
    between 39 and 40 has weight exp(-1.5) relative to 40 under the lattice's even measure,
    so without atoms (the interval mechanism's view: ``support="continuous"``) 40 comes out
    in about 1% of releases; the integer column's support (atoms of weight 64 on the
    integers) gives about 70% (measured 68 of 100; 61 with the dyadic default). Threshold
    45 of 100: five standard deviations below 70%, far above 1%."""
    rng = np.random.default_rng(5)
    ages = np.concatenate([rng.integers(18, 40, 990), np.full(810, 40), rng.integers(41, 91, 200)])
    s = dp.Session(pl.DataFrame({"age": ages}), budget=dp.PureDP(1e6), rng=3)
    q = s.query().agg(dp.median("age", bounds=(0, 100)))
    hits = sum(q.release(epsilon=0.2)["age_median"][0] == 40.0 for _ in range(100))
    assert hits >= 45


# neighbour histogram: a person with K rows at the top decides the upper quantile

K = 4
EPS_NB = 2.0


def _nb_table(with_p: bool) -> pl.DataFrame:
    vals = [4] * 12
    pid = [f"p{i}" for i in range(12)]
    if with_p:
        vals, pid = vals + [12] * K, pid + ["P"] * K
    return pl.DataFrame({"pid": pid, "x": vals})


def _nb_cells(with_p: bool, seed: int, n: int) -> Counter:
    s = dp.Session(
        _nb_table(with_p), privacy_unit="pid", max_rows_per_unit=K, budget=dp.PureDP(1.0)
    )
    q = s.query().agg(dp.quantile("x", [0.25, 0.75], bounds=(0, 16)))
    f = QuerySampler(q, epsilon=EPS_NB).sample(n, rng=seed)
    edges = [3.5, 4.5, 11.5, 12.5]
    lo = np.digitize(f["x_0.25"].to_numpy(), edges)
    hi = np.digitize(f["x_0.75"].to_numpy(), edges)
    return Counter(zip(lo.tolist(), hi.tolist(), strict=True))


def test_multi_quantile_neighbour_histogram_stays_within_e_to_the_epsilon() -> None:
    """Two levels in one mechanism on a table and on the same table without person P, whose
    K = 4 rows all sit at 12 (above everyone else's 4): every joint output cell's probability
    ratio stays within exp(epsilon). The release's own draws (QuerySampler: the release's
    code, intervals aside), 2,000 per table; cells with >= 100 draws; slack 4 standard errors.
    The correct mechanism reaches a log ratio of about 1.75 of the allowed 2 on the cell
    "upper quantile at 12"; without group privacy (epsilon not divided by K) it is about 5."""
    n = 2000
    d, d2 = _nb_cells(True, 1, n), _nb_cells(False, 2, n)
    seen = 0
    for o in set(d) | set(d2):
        if max(d[o], d2[o]) < 100:
            continue
        seen += 1
        p, q = d[o] / n, d2[o] / n
        se = math.sqrt(p / n) + math.sqrt(q / n)
        assert p <= math.exp(EPS_NB) * (q + 4 * se), o
        assert q <= math.exp(EPS_NB) * (p + 4 * se), o
    assert seen >= 4
