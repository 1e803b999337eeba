"""Spark benchmarks: the Session on PySpark against the same plain Spark queries.

All data is generated inside Spark (``spark.range``), so every run of either query scans the
same rows the same way; both queries collect their (small) results to the driver.

``spark start-up``
    Starting the local Spark (``local[2]``, 4 shuffle partitions, default JIT) and running a
    first trivial job: paid once per process, reported apart from the queries.
``spark count by 1000 groups 1e7``
    A DP count per group with 1,000 public keys on 10^7 rows (``g = id % 1000``) against
    ``groupBy("g").count().collect()`` (target: at most 1.3x).
``spark bounding 1e6 persons to 5 rows``
    10^6 persons with 10 rows each (10^7 rows): a DP count keeping 5 rows per person (salted
    ``xxhash64`` window rank) against a plain window ``row_number()`` over the person, keeping
    5 rows, then counting (target: at most 2x).

A Session checks its table (not empty, no null privacy unit) once, at its first release: the
``dpkit`` rows time later releases (the warm-up call pays the check), the ``dpkit first
release`` row a new Session each time. The calls of one task are interleaved (plain, dpkit,
plain, dpkit, ...; medians), so a change in the machine's load slows both alike.

Peak driver memory: the Python heap's peak during a release (``tracemalloc``: only
aggregates reach Python) and the JVM's peak heap (in local mode the driver JVM also runs the
executors, so that figure is the whole engine's), in each dpkit row's note.
"""

from __future__ import annotations

import statistics
import time
import tracemalloc
from typing import Any

from benchmarks._harness import Table, optional_import

N = 10**7
PERSONS = 10**6
GROUPS = 1000

STARTUP = "spark start-up"
COUNT = "spark count by 1000 groups 1e7"
BOUNDING = "spark bounding 1e6 persons to 5 rows"


def _paired(fns: list[Any], repeat: int, times: list[list[float]] | None = None) -> list[float]:
    """Median seconds of each callable, the calls interleaved (a, b, c, a, b, c, ...) after one
    warm-up round, so that a machine whose load changes during the run slows all alike;
    ``times`` (optional) receives every call's seconds, per callable."""
    for fn in fns:
        fn()
    seen: list[list[float]] = [[] for _ in fns] if times is None else times
    seen.extend([] for _ in range(len(fns) - len(seen)))
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            start = time.perf_counter()
            fn()
            seen[i].append(time.perf_counter() - start)
    return [statistics.median(t) for t in seen]


def _spread(times: list[float], base: list[float]) -> str:
    """The ratio of each call to the call of ``base`` beside it: median and quartiles."""
    r = sorted(t / b for t, b in zip(times, base, strict=True))
    q1, q3 = r[len(r) // 4], r[(3 * len(r)) // 4]
    mid = statistics.median(r)
    return f"/spark per interleaved pair: median {mid:.2f}, quartiles {q1:.2f}-{q3:.2f}"


def _python_peak(fn: Any) -> float:
    """Peak Python heap (MB) while ``fn()`` runs."""
    tracemalloc.start()
    try:
        fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak / 2**20


def _jvm_peak(spark: Any) -> float:
    """The JVM's peak heap so far (MB): the sum of the heap pools' peak usage."""
    mf = spark._jvm.java.lang.management.ManagementFactory
    total = 0
    for pool in mf.getMemoryPoolMXBeans():
        if str(pool.getType()) == "Heap memory":
            total += pool.getPeakUsage().getUsed()
    return total / 2**20


def _memory_note(spark: Any, fn: Any) -> str:
    return f"peak Python heap {_python_peak(fn):.1f} MB, JVM heap peak {_jvm_peak(spark):.0f} MB"


def _count(table: Table, spark: Any) -> None:
    from pyspark.sql import functions as F

    import dpkit as dp

    df = spark.range(N).select((F.col("id") % GROUPS).alias("g"))
    keys = list(range(GROUPS))
    s = dp.Session(df, budget=dp.PureDP(1e9))
    q = s.query().group_by("g", keys=keys).agg(dp.count())

    def first() -> Any:
        fresh = dp.Session(df, budget=dp.PureDP(1.0))
        return fresh.query().group_by("g", keys=keys).agg(dp.count()).release(epsilon=1.0)

    times: list[list[float]] = []
    plain, dpkit, fresh = _paired(
        [
            lambda: df.groupBy("g").count().collect(),
            lambda: q.release(epsilon=1.0).collect(),
            lambda: first().collect(),
        ],
        repeat=9,
        times=times,
    )
    note = _memory_note(spark, lambda: q.release(epsilon=1.0).collect())
    spread = _spread(times[1], times[0])
    table.add(COUNT, "dpkit", dpkit, note=f"public keys, discrete Laplace; {spread}; {note}")
    table.add(COUNT, "spark", plain, note="plain groupBy().count().collect()")
    table.add(
        COUNT,
        "dpkit first release",
        fresh,
        note="a new Session each time: + its one-off table check (Spark's isEmpty)",
    )


def _bounding(table: Table, spark: Any) -> None:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    import dpkit as dp

    df = spark.range(N).select(
        (F.col("id") % PERSONS).alias("pid"), ((F.col("id") * 7919) % 10_007).alias("x")
    )

    def plain() -> Any:
        w = Window.partitionBy("pid").orderBy("x")
        ranked = df.withColumn("r", F.row_number().over(w))
        return ranked.filter(F.col("r") <= 5).agg(F.count("*")).collect()

    s = dp.Session(df, privacy_unit="pid", max_rows_per_unit=5, budget=dp.PureDP(1e9))
    q = s.query().agg(dp.count())
    base, dpkit = _paired([plain, lambda: q.release(epsilon=1.0).collect()], repeat=5)
    note = _memory_note(spark, lambda: q.release(epsilon=1.0).collect())
    table.add(BOUNDING, "dpkit", dpkit, note=f"salted xxhash64 rank per release; {note}")
    table.add(BOUNDING, "spark", base, note="row_number() over person, keep 5, count")


def run(table: Table) -> None:
    if optional_import("pyspark") is None:
        for task in (STARTUP, COUNT, BOUNDING):
            table.missing(task, "dpkit", "pyspark is not installed (pip install 'dpkit[spark]')")
        return
    from dpkit.session.engines.spark import local_session

    start = time.perf_counter()
    spark = local_session(cores=2, shuffle_partitions=4, app_name="dpkit-bench")
    spark.range(10).count()
    table.add(STARTUP, "spark", time.perf_counter() - start, note="local[2], JVM start + 1 job")
    try:
        _count(table, spark)
        _bounding(table, spark)
    finally:
        spark.stop()
