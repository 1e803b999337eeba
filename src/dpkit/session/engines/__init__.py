"""Engine adapters: the few things the Session needs that narwhals does not provide.

Everything row-level in a Session query goes through narwhals on the user's own engine. An
adapter adds only what narwhals lacks, per engine:

* :meth:`Engine.to_lazy` - the user's data as a lazy narwhals frame, on its own engine;
* :meth:`Engine.with_rank` - a salted hash of some columns, ranked within a partition (the
  random per-person order of contribution bounding; narwhals has no hash expression);
* :meth:`Engine.with_bins` - optionally, a numeric histogram's bin per row, by a binary
  search (by default nested ``when/then``; Polars and pandas search natively, DuckDB joins
  the edges as of the value, Spark uses its ``Bucketizer``);
* :meth:`Engine.with_categories` - optionally, a categorical histogram's bin per row (by
  default a balanced sum of indicators; Spark looks the value up in one array);
* :meth:`Engine.check_column` - optionally, refuse before the spend a column name the
  engine cannot use in a role (``*`` and the empty name everywhere, a dotted key on DuckDB,
  a dotted name on Spark);
* :meth:`Engine.ambiguous_columns` - optionally, the names a query cannot tell apart
  (duplicates; on Spark, names differing only by case);
* :meth:`Engine.public_schema`, :meth:`Engine.with_types` - optionally, where an engine
  infers types from the values (pandas), the public types by a rule no record can flip and
  the data held in them; :meth:`Engine.read_as_text` - text columns numeric aggregates parse;
* :meth:`Engine.where`, :meth:`Engine.converted`, :meth:`Engine.without_rows` - optionally,
  for an eager engine (pandas): total conditions and conversions evaluated without pandas'
  types, and the frame of no rows the checks before a spend run on;
* :meth:`Engine.changes` - whether the data's schema can change between releases (files,
  pandas), so that it is read again before each spend;
* :meth:`Engine.collect` - an aggregated (small) lazy frame as a Polars DataFrame;
* :meth:`Engine.output` - the released Polars frame in the caller's family.

Adding an engine means writing one more :class:`Engine` subclass and registering it with
:func:`register`; nothing else in :mod:`dpkit.session` changes (PySpark is
:class:`SparkEngine`, importing pyspark only when given a Spark DataFrame).
"""

from __future__ import annotations

from dpkit.session.engines._base import Engine, engine_for, register, supported
from dpkit.session.engines.duckdb import DuckDBEngine
from dpkit.session.engines.pandas import PandasEngine
from dpkit.session.engines.polars import FileEngine, PolarsEngine, PyArrowEngine
from dpkit.session.engines.spark import SparkEngine

__all__ = [
    "DuckDBEngine",
    "Engine",
    "FileEngine",
    "PandasEngine",
    "PolarsEngine",
    "PyArrowEngine",
    "SparkEngine",
    "engine_for",
    "register",
    "supported",
]

register(PolarsEngine())
register(PandasEngine())
register(PyArrowEngine())
register(DuckDBEngine())
register(FileEngine())
register(SparkEngine())
