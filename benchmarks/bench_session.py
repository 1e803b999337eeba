"""Session benchmarks: DataFrame queries against the same plain engine queries.

Tasks (10^7 rows: a group column with 1,000 values and a column uniform on [0, 100]; 10^6
persons with about 10 rows each for the bounding task):

``count by 1000 groups 1e7``
    A DP count per group with 1,000 public keys (epsilon 1) on a Polars DataFrame, against
    Polars' own ``group_by().len()`` (target: at most 1.5x), and OpenDP's Polars Context with
    the same keys (``with_keys``; its own environment, see below).
``count by 1000 groups 1e7 duckdb``
    The same on a DuckDB relation, against DuckDB's own ``GROUP BY`` count (target 1.5x).
``mean 1e7``
    A DP mean of the column with bounds (0, 100) against NumPy's mean (target 2x), and
    OpenDP's ``dp.mean``.
``histogram 3000 bins 1e6``
    A DP histogram with 3,001 public edges over 10^6 rows of the column (epsilon 1), against
    NumPy's ``np.histogram`` with the same edges (no target; one comparison per edge,
    chained, took about 45 s at 10^5 rows before each engine's binary search).
``median by 2000 groups 2e5``
    A DP median per group with 2,000 public keys over 2 * 10^5 rows (about 100 records per
    group, normal around 50, bounds (0, 100), epsilon 1: one exponential-mechanism draw, two
    helper draws and noisy cell counts per group), against Polars' own
    ``group_by().agg(median)`` (no target: the cost is per group, about 0.9 ms of CPU on
    the development machine, from 1.8 ms before the per-group work was trimmed). Error: the
    median over groups of ``|release - group median|``.
``bounding 1e6 persons to 5 rows``
    A per-person count keeping 5 rows per person (salted hash, fresh per release) against a
    plain Polars window rank ``rank().over(person)`` keeping 5 rows, then counting (target 2x).

OpenDP's polars extra pins ``polars==1.36.1``, so its rows run ``benchmarks/_opendp_session.py``
in ``.venv-bench-opendp`` (built by ``make bench``); without it they say so.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._harness import Table, optional_import, timeit

N = 10**7
PERSONS = 10**6
SEED = 20261123  # the data only; dpkit rows use secure randomness
ROOT = Path(__file__).resolve().parent.parent
OPENDP_PYTHON = ROOT / ".venv-bench-opendp" / "bin" / "python"

COUNT = "count by 1000 groups 1e7"
COUNT_DUCKDB = "count by 1000 groups 1e7 duckdb"
MEAN = "mean 1e7"
BOUNDING = "bounding 1e6 persons to 5 rows"
MEDIAN_GROUPS = "median by 2000 groups 2e5"
HISTOGRAM = "histogram 3000 bins 1e6"


def _data() -> Any:
    import polars as pl

    rng = np.random.default_rng(SEED)
    return pl.DataFrame({"g": rng.integers(0, 1000, N), "x": rng.uniform(0, 100, N)})


def _opendp(table: Table) -> None:
    if not OPENDP_PYTHON.exists():
        for task in (COUNT, MEAN):
            table.missing(task, "opendp", "run `make bench` to build .venv-bench-opendp")
        return
    script = ROOT / "benchmarks" / "_opendp_session.py"
    done = subprocess.run(
        [str(OPENDP_PYTHON), str(script), str(N), str(SEED)],
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    try:
        out = json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        for task in (COUNT, MEAN):
            table.missing(task, "opendp", (done.stderr or "no output").strip()[-200:])
        return
    note = f"OpenDP {out.get('version')}, polars {out.get('polars')} (own venv)"
    for task, key in ((COUNT, "count"), (MEAN, "mean")):
        if out.get(key) is None:
            table.missing(task, "opendp", out.get(f"{key}_error", "failed"))
        else:
            table.add(task, "opendp", float(out[key]), note=note)


def _counts(table: Table, df: Any) -> None:
    import dpkit as dp

    keys = list(range(1000))
    table.add(
        COUNT,
        "polars",
        timeit(lambda: df.group_by("g").len(), repeat=5),
        note="plain group_by().len()",
    )
    s = dp.Session(df, budget=dp.PureDP(1e9))
    q = s.query().group_by("g", keys=keys).agg(dp.count())
    table.add(
        COUNT,
        "dpkit",
        timeit(lambda: q.release(epsilon=1.0), repeat=5),
        note="public keys, discrete Laplace",
    )

    duckdb = optional_import("duckdb")
    if duckdb is None:
        table.missing(COUNT_DUCKDB, "dpkit", "duckdb is not installed")
        return
    rel = duckdb.connect().from_arrow(df.to_arrow())
    table.add(
        COUNT_DUCKDB,
        "duckdb",
        timeit(lambda: rel.aggregate("g, count(*) AS n", "g").fetchall(), repeat=5),
        note="plain GROUP BY count",
    )
    sd = dp.Session(rel, budget=dp.PureDP(1e9))
    qd = sd.query().group_by("g", keys=keys).agg(dp.count())
    table.add(
        COUNT_DUCKDB,
        "dpkit",
        timeit(lambda: qd.release(epsilon=1.0), repeat=5),
        note="same query on the DuckDB relation",
    )


def _mean(table: Table, df: Any) -> None:
    import dpkit as dp

    x = df["x"].to_numpy()
    table.add(MEAN, "numpy", timeit(lambda: np.mean(x), repeat=7), note="np.mean")
    s = dp.Session(df, budget=dp.PureDP(1e9))
    q = s.query().agg(dp.mean("x", bounds=(0, 100)))
    truth = float(np.mean(x))
    err = float(
        np.median([abs(float(q.release(epsilon=1.0)["x_mean"][0]) - truth) for _ in range(9)])
    )
    table.add(
        MEAN,
        "dpkit",
        timeit(lambda: q.release(epsilon=1.0), repeat=7),
        error=err,
        note="exact lattice sums; error: median |release - mean| of 9",
    )


def _histogram(table: Table, df: Any) -> None:
    import dpkit as dp

    small = df.head(10**6)
    x = small["x"].to_numpy()
    edges = np.linspace(0.0, 100.0, 3001)
    table.add(
        HISTOGRAM,
        "numpy",
        timeit(lambda: np.histogram(x, bins=edges), repeat=5),
        note="np.histogram",
    )
    s = dp.Session(small, budget=dp.PureDP(1e9))
    q = s.query().agg(dp.histogram("x", bins=list(edges)))
    table.add(
        HISTOGRAM,
        "dpkit",
        timeit(lambda: q.release(epsilon=1.0), repeat=3),
        note="bins by Polars search_sorted, discrete Laplace per bin",
    )


def _grouped_median(table: Table) -> None:
    import polars as pl

    import dpkit as dp

    groups, rows = 2000, 200_000
    rng = np.random.default_rng(SEED + 2)
    df = pl.DataFrame({"g": rng.integers(0, groups, rows), "x": rng.normal(50, 15, rows)})
    table.add(
        MEDIAN_GROUPS,
        "polars",
        timeit(lambda: df.group_by("g").agg(pl.col("x").median()), repeat=5),
        note="plain group_by().agg(median)",
    )
    s = dp.Session(df, budget=dp.PureDP(1e9))
    q = s.query().group_by("g", keys=list(range(groups))).agg(dp.median("x", bounds=(0, 100)))
    truth = df.group_by("g").agg(pl.col("x").median().alias("t"))
    got = q.release(epsilon=1.0).join(truth, on="g")
    err = float(np.median(np.abs(got["x_median"].to_numpy() - got["t"].to_numpy())))
    table.add(
        MEDIAN_GROUPS,
        "dpkit",
        timeit(lambda: q.release(epsilon=1.0), repeat=3),
        error=err,
        note="public keys, ~100 records per group; error: median |release - median| over groups",
    )


def _bounding(table: Table) -> None:
    import polars as pl

    import dpkit as dp

    rng = np.random.default_rng(SEED + 1)
    sizes = rng.poisson(10, PERSONS) + 1
    pid = np.repeat(np.arange(PERSONS), sizes)
    df = pl.DataFrame({"pid": pid, "x": rng.uniform(0, 100, pid.size)})
    lf = df.lazy()

    def plain() -> Any:
        ranked = lf.with_columns(r=pl.col("x").rank("ordinal").over("pid"))
        return ranked.filter(pl.col("r") <= 5).select(pl.len()).collect()

    table.add(
        BOUNDING,
        "polars",
        timeit(plain, repeat=3),
        note=f"window rank over person, {pid.size:,} rows",
    )
    s = dp.Session(df, privacy_unit="pid", max_rows_per_unit=5, budget=dp.PureDP(1e9))
    q = s.query().agg(dp.count())
    table.add(
        BOUNDING,
        "dpkit",
        timeit(lambda: q.release(epsilon=1.0), repeat=3),
        note="salted hash per release, ranked over the person, count",
    )


def run(table: Table) -> None:
    df = _data()
    _counts(table, df)
    _mean(table, df)
    _histogram(table, df)
    _grouped_median(table)
    _bounding(table)
    _opendp(table)
