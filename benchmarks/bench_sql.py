"""SQL benchmarks: ``Session.sql`` against the same Session query, and against SmartNoise SQL.

Tasks:

``sql parse and plan, 10 aggregates``
    ``Session.sql(..., explain=True)`` of one SELECT with ten aggregates (counts, sums,
    means, a variance, a deviation, a median, a quantile), a WHERE and a GROUP BY with 1,000
    public keys: parsing, compiling and planning, no data read (target: at most 5 ms),
    against building the same query with the builder and explaining it.
``sql release 1e7 polars`` / ``sql release 1e7 duckdb``
    ``SELECT g, COUNT(*), AVG(x) FROM data WHERE x >= 1 GROUP BY g`` with 1,000 public keys
    on 10^7 rows, through ``Session.sql`` and through the same builder query (target: SQL at
    most 1.1x the builder; the calls interleaved, medians).
``count, sum, mean by 10 groups 1e6``
    The query SmartNoise SQL supports, ``SELECT g, COUNT(*), SUM(x), AVG(x) ... GROUP BY g``
    on 10^6 rows (x uniform on [0, 100], bounds (0, 100), 10 public groups), total epsilon 1
    for both: dpkit's split by its weights, SmartNoise's epsilon per computed column scaled
    so that ``get_privacy_cost`` is 1. Time: one release; error: the mean absolute error of
    the released counts, sums and means (in the note), over the groups of 5 releases.
``pums: ...``
    Twelve queries on the 1,000-row PUMS sample SmartNoise is tested on
    (``benchmarks/data/pums/``, their metadata's bounds), each at total epsilon 1 (delta 1e-5
    where groups are chosen privately: dpkit's key threshold with Laplace noise, SmartNoise's
    ``censor_dims``, whose noise is Laplace too):
    the answers side by side, the mean absolute error over 10 releases, and each library's
    refusals with their messages.

SmartNoise SQL pins pandas and SQLAlchemy versions of its own: it runs from
``.venv-bench-smartnoise`` (built by ``make bench``; ``DPKIT_SMARTNOISE_PYTHON`` names
another interpreter), as ``benchmarks/_smartnoise_sql.py`` in a subprocess.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._harness import Table, optional_import

ROOT = Path(__file__).resolve().parent.parent
PUMS = ROOT / "benchmarks" / "data" / "pums"
SEED = 20261128
PLAN = "sql parse and plan, 10 aggregates"
RELEASE = "sql release 1e7"
GROUPS = "count, sum, mean by 10 groups 1e6"


def _smartnoise_python() -> Path:
    given = os.environ.get("DPKIT_SMARTNOISE_PYTHON")
    return Path(given) if given else ROOT / ".venv-bench-smartnoise" / "bin" / "python"


def _interleaved(fns: list[Any], repeat: int) -> list[float]:
    """Median seconds of each callable, the calls interleaved after one warm-up round."""
    for fn in fns:
        fn()
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            start = time.perf_counter()
            fn()
            times[i].append(time.perf_counter() - start)
    return [statistics.median(t) for t in times]


def _plan(table: Table) -> None:
    import narwhals as nw
    import polars as pl

    import dpkit as dp

    rng = np.random.default_rng(SEED)
    n = 10**5
    df = pl.DataFrame(
        {"g": rng.integers(0, 1000, n), "x": rng.uniform(0, 100, n), "y": rng.uniform(0, 1, n)}
    )
    s = dp.Session(df, budget=dp.PureDP(1e9))
    keys = list(range(1000))
    bx, by = (0, 100), (0, 1)
    sql = (
        "SELECT g, COUNT(*), SUM(x), AVG(x), VAR_POP(x), STDDEV(x), MEDIAN(x), "
        "QUANTILE_CONT(y, 0.9) AS y90, COUNT(x), AVG(y), SUM(y) FROM data WHERE x >= 0 "
        "GROUP BY g"
    )

    def by_sql() -> Any:
        return s.sql(sql, epsilon=1.0, keys={"g": keys}, bounds={"x": bx, "y": by}, explain=True)

    def by_builder() -> Any:
        q = s.query().filter(nw.col("x") >= 0).group_by("g", keys=keys)
        q = q.agg(
            dp.count(),
            dp.sum("x", bounds=bx),
            dp.mean("x", bounds=bx),
            dp.var("x", bounds=bx),
            dp.std("x", bounds=bx),
            dp.median("x", bounds=bx),
            dp.quantile("y", [0.9], bounds=by),
            dp.count("x"),
            dp.mean("y", bounds=by),
            dp.sum("y", bounds=by),
        )
        return q.explain(1.0)

    builder, sql_time = _interleaved([by_builder, by_sql], repeat=30)
    table.add(PLAN, "dpkit", builder, note="builder query + explain()")
    table.add(PLAN, "dpkit sql", sql_time, note="parse + compile + explain (no data read)")


def _releases(table: Table) -> None:
    import narwhals as nw
    import polars as pl

    import dpkit as dp

    rng = np.random.default_rng(SEED)
    n = 10**7
    df = pl.DataFrame({"g": rng.integers(0, 1000, n), "x": rng.uniform(0, 100, n)})
    keys = list(range(1000))
    sql = "SELECT g, COUNT(*), AVG(x) FROM data WHERE x >= 1 GROUP BY g"
    engines: list[tuple[str, Any]] = [("polars", df)]
    duckdb = optional_import("duckdb")
    if duckdb is not None:
        engines.append(("duckdb", duckdb.connect().from_arrow(df.to_arrow())))
    else:
        table.missing(f"{RELEASE} duckdb", "dpkit", "duckdb is not installed")
    for name, data in engines:
        s = dp.Session(data, budget=dp.PureDP(1e9))
        q = (
            s.query()
            .filter(nw.col("x") >= 1)
            .group_by("g", keys=keys)
            .agg(dp.count(), dp.mean("x", bounds=(0, 100)))
        )
        builder, by_sql = _interleaved(
            [
                lambda q=q: q.release(epsilon=1.0),
                lambda s=s: s.sql(sql, epsilon=1.0, keys={"g": keys}, bounds={"x": (0, 100)}),
            ],
            repeat=5,
        )
        task = f"{RELEASE} {name}"
        table.add(task, "dpkit", builder, note="builder: filter, 1000 public keys, count, mean")
        table.add(task, "dpkit sql", by_sql, note="the same query as SQL (target: 1.1x)")


def _smartnoise(args: list[str]) -> dict[str, Any] | str:
    python = _smartnoise_python()
    if not python.exists():
        return f"run `make bench` to build {python.parent.parent.name}"
    done = subprocess.run(
        [str(python), str(ROOT / "benchmarks" / "_smartnoise_sql.py"), *args],
        capture_output=True,
        text=True,
        timeout=3600,
        check=False,
    )
    try:
        out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        return (done.stderr or "no output").strip()[-200:]
    return out


def _groups(table: Table) -> None:
    import polars as pl

    import dpkit as dp

    n, repeat = 10**6, 5
    rng = np.random.default_rng(SEED)
    g = rng.integers(0, 10, n).astype(str)
    x = rng.uniform(0, 100, n)
    df = pl.DataFrame({"g": g, "x": x})
    truth = df.group_by("g").agg(pl.len().alias("n"), pl.col("x").sum().alias("s"))
    truth = truth.with_columns(m=pl.col("s") / pl.col("n")).sort("g")
    sql = "SELECT g, COUNT(*) AS n, SUM(x) AS s, AVG(x) AS m FROM data GROUP BY g"
    keys = {"g": truth["g"].to_list()}

    def errors(runs: list[pl.DataFrame]) -> dict[str, float]:
        out = {}
        for col in ("n", "s", "m"):
            diffs = [
                np.abs(r.sort("g")[col].to_numpy().astype(float) - truth[col].to_numpy())
                for r in runs
            ]
            out[col] = float(np.mean(diffs))
        return out

    def note(err: dict[str, float], extra: str) -> str:
        return f"MAE count {err['n']:.3g}, sum {err['s']:.3g}, mean {err['m']:.3g}; {extra}"

    s = dp.Session(df, budget=dp.PureDP(1e9))
    runs: list[pl.DataFrame] = []

    def release() -> None:
        runs.append(s.sql(sql, epsilon=1.0, keys=keys, bounds={"x": (0, 100)}))

    release()  # warm-up
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        release()
        times.append(time.perf_counter() - start)
    err = errors(runs[-repeat:])
    table.add(
        GROUPS,
        "dpkit sql",
        statistics.median(times),
        error=err["m"],
        note=note(err, "public keys, epsilon 1 split 3 ways (discrete Laplace)"),
    )
    sn = _smartnoise(["groups", str(n), str(SEED), str(repeat)])
    if isinstance(sn, str):
        table.missing(GROUPS, "smartnoise-sql", sn)
        return
    sn_runs = [
        pl.DataFrame(r, schema=["g", "n", "s", "m"], orient="row", strict=False)
        for r in sn["runs"][1:]
    ]
    sn_err = errors(sn_runs)
    table.add(
        GROUPS,
        "smartnoise-sql",
        float(sn["seconds"]),
        error=sn_err["m"],
        note=note(
            sn_err,
            f"SmartNoise {sn['version']}, epsilon 1/{sn['cost_at_epsilon_1']:g} per column "
            "(cost 1), censor_dims off",
        ),
    )


#: (label, dpkit SQL, Session.sql keyword arguments); the labels are those of
#: _smartnoise_sql.PUMS_QUERIES, the queries the same on dpkit's table ``data``
PUMS_QUERIES: list[tuple[str, str, dict[str, Any]]] = [
    ("count", "SELECT COUNT(*) AS n FROM data", {}),
    (
        "count by sex",
        "SELECT sex, COUNT(*) AS n FROM data GROUP BY sex",
        {"delta": 1e-5, "noise": "laplace"},
    ),
    (
        "mean age by sex",
        "SELECT sex, AVG(age) AS a FROM data GROUP BY sex",
        {"delta": 1e-5, "noise": "laplace"},
    ),
    (
        "mean income by educ",
        "SELECT educ, AVG(income) AS m FROM data GROUP BY educ",
        {"delta": 1e-5, "noise": "laplace"},
    ),
    (
        "sum income by race",
        "SELECT race, SUM(income) AS s FROM data GROUP BY race",
        {"delta": 1e-5, "noise": "laplace"},
    ),
    (
        "count by married, sex",
        "SELECT married, sex, COUNT(*) AS n FROM data GROUP BY married, sex",
        {"delta": 1e-5, "noise": "laplace"},
    ),
    ("stddev age", "SELECT STDDEV(age) AS sd FROM data", {}),
    ("mean age where income > 50000", "SELECT AVG(age) AS a FROM data WHERE income > 50000", {}),
    ("median age", "SELECT MEDIAN(age) AS med FROM data", {}),
    (
        "deciles of age",
        "SELECT QUANTILE_CONT(age, [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]) AS age FROM data",
        {},
    ),
    ("min age", "SELECT MIN(age) AS m FROM data", {}),
    (
        "count by educ label (join)",
        "SELECT e.label, COUNT(*) AS n FROM data d JOIN educ e ON d.educ = e.code GROUP BY e.label",
        {},
    ),
]


def _truth(label: str, df: Any) -> Any:
    """The exact answer of a PUMS query (keys..., value), or None where none is compared."""
    import polars as pl

    age, income = pl.col("age"), pl.col("income")
    grouped = {
        "count by sex": (["sex"], pl.len()),
        "mean age by sex": (["sex"], age.mean()),
        "mean income by educ": (["educ"], income.mean()),
        "sum income by race": (["race"], income.sum()),
        "count by married, sex": (["married", "sex"], pl.len()),
    }
    whole = {
        "count": pl.len(),
        "stddev age": age.std(ddof=0),
        "median age": age.median(),
    }
    if label in grouped:
        by, value = grouped[label]
        return df.group_by(by).agg(value.alias("v")).sort(by)
    if label in whole:
        return df.select(whole[label].alias("v"))
    if label == "mean age where income > 50000":
        return df.filter(income > 50_000).select(age.mean().alias("v"))
    return None


def _mae(runs: list[list[list[Any]]], truth: Any) -> float | None:
    """Mean absolute error of the released value cells (the last column) against the exact
    answers, matched by their key columns; None when nothing matches."""
    exact = {tuple(str(v) for v in row[:-1]): row[-1] for row in truth.rows()}
    diffs = []
    for rows in runs:
        for row in rows:
            key = tuple(str(v) for v in row[:-1])
            if key in exact and row[-1] is not None:
                diffs.append(abs(float(row[-1]) - float(exact[key])))
    return float(np.mean(diffs)) if diffs else None


def _released_rows(frame: Any) -> list[list[Any]]:
    """A released frame as rows of (keys..., value), one per group and value column (the
    value's name among the keys when there are several); intervals left out."""
    cols = list(frame.columns)
    values = [c for c in cols if f"{c}_low" in cols and f"{c}_high" in cols]
    shown = set(values) | {f"{c}_{e}" for c in values for e in ("low", "high")}
    keys = [c for c in cols if c not in shown]
    out = []
    for row in frame.iter_rows(named=True):
        for v in values:
            key = [row[k] for k in keys] + ([v] if len(values) > 1 else [])
            out.append([*key, row[v]])
    return out


def _shown(rows: list[list[Any]], limit: int = 3) -> str:
    cells = []
    for row in rows[:limit]:
        *key, value = row
        value = f"{value:.4g}" if isinstance(value, float) else str(value)
        cells.append(("/".join(map(str, key)) + "=" if key else "") + value)
    more = f" (+{len(rows) - limit})" if len(rows) > limit else ""
    return ", ".join(cells) + more


def _pums(table: Table) -> None:
    import polars as pl

    import dpkit as dp

    repeat = 10
    df = pl.read_csv(PUMS / "PUMS.csv", schema_overrides={"income": pl.Float64})
    codes = sorted(df["educ"].unique().to_list())
    educ = pl.DataFrame({"code": codes, "label": [f"level {c}" for c in codes]})
    bounds = {"age": (0, 100), "income": (0, 500_000)}
    sn = _smartnoise(["pums", str(PUMS / "PUMS.csv"), str(PUMS / "PUMS.yaml"), str(repeat)])
    for label, sql, kw in PUMS_QUERIES:
        task = f"pums: {label}"
        truth = _truth(label, df)
        s = dp.Session(df, budget=dp.ApproxDP(1e9, 0.5), rng=SEED, public={"educ": educ})
        used = {k: v for k, v in bounds.items() if k in sql}
        try:
            runs, times = [], []
            for _ in range(repeat):
                start = time.perf_counter()
                out = s.sql(sql, epsilon=1.0, bounds=used, **kw)
                times.append(time.perf_counter() - start)
                runs.append(_released_rows(out))
        except dp.ParameterError as err:
            table.add(task, "dpkit sql", None, note=f"refused: {str(err)[13:150]}")
        else:
            err = _mae(runs, truth) if truth is not None else None
            table.add(
                task,
                "dpkit sql",
                statistics.median(times),
                error=err,
                note=f"answers {_shown(runs[0])}",
            )
        if isinstance(sn, str):
            table.missing(task, "smartnoise-sql", sn)
            continue
        got = sn.get(label, {})
        if "refused" in got:
            table.add(task, "smartnoise-sql", None, note=f"refused: {got['refused'][:140]}")
            continue
        sn_runs = got["runs"][1:]
        table.add(
            task,
            "smartnoise-sql",
            float(got["seconds"]),
            error=_mae(sn_runs, truth) if truth is not None else None,
            note=f"answers {_shown(sn_runs[0])}; epsilon 1/{got['cost_at_epsilon_1']:g} per column",
        )
        if truth is not None:
            table.add(
                task, "exact", None, note=f"answers {_shown([list(r) for r in truth.rows()])}"
            )


def run(table: Table) -> None:
    _plan(table)
    _releases(table)
    _groups(table)
    _pums(table)
