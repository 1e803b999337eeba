"""Polars adapters: Polars frames, PyArrow tables and CSV/Parquet paths (scanned by Polars).

PyArrow tables run through Polars (``polars.from_arrow`` shares the Arrow buffers where it
can): narwhals' PyArrow backend has no window functions to rank rows within a person, which
contribution bounding needs. CSV and Parquet paths are scanned lazily with
``polars.scan_csv`` / ``polars.scan_parquet``, so only the aggregates are ever materialised.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import narwhals as nw
import polars as pl

from dpkit.errors import ParameterError
from dpkit.session.engines._base import Engine, RankMethod

__all__ = ["FileEngine", "PolarsEngine", "PyArrowEngine", "polars_rank"]


def polars_rank(
    frame: pl.LazyFrame,
    *,
    partition: str,
    hash_columns: list[str],
    tie_columns: list[str],
    salt: tuple[int, ...],
    method: RankMethod,
    name: str,
) -> pl.LazyFrame:
    """Polars' native salted hash (``Expr.hash(seed=...)``) ranked within ``partition``.

    Ordinal: ``hash.rank("ordinal").over(partition)``; Polars gives tied values distinct
    ranks in their order of occurrence, and removing another unit's rows keeps the relative
    order of a unit's own rows, so ties (identical rows, or a 64-bit collision) still leave
    each unit's kept rows a function of its own rows. Dense: the rank of the struct
    (hash, ties), so distinct groups never share a rank even if their hashes collide.
    """
    h = pl.struct(hash_columns).hash(seed=salt[0] % 2**64)
    if method == "ordinal":
        rank = h.rank("ordinal")
    else:
        rank = pl.struct([h.alias("__dpkit_hash"), *tie_columns]).rank("dense")
    return frame.with_columns(rank.over(partition).cast(pl.Int64).alias(name))


class PolarsEngine(Engine):
    """Polars DataFrame or LazyFrame (the embedded default)."""

    name = "polars"
    accepts = "polars.DataFrame, polars.LazyFrame"

    def matches(self, data: Any) -> bool:
        return isinstance(data, pl.DataFrame | pl.LazyFrame)

    def to_lazy(self, data: Any) -> nw.LazyFrame[Any]:
        return nw.from_native(data.lazy())

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
        native = polars_rank(
            frame.to_native(),
            partition=partition,
            hash_columns=hash_columns,
            tie_columns=tie_columns,
            salt=salt,
            method=method,
            name=name,
        )
        return nw.from_native(native)

    def with_bins(
        self, frame: nw.LazyFrame[Any], column: str, edges: tuple[float, ...], name: str
    ) -> nw.LazyFrame[Any]:
        """Polars' ``search_sorted`` of each value among the inner edges (``side="right"``:
        the edges at or below it), a binary search per row; ``+ 0.0`` makes -0.0 0.0."""
        inner = pl.Series(edges[1:-1], dtype=pl.Float64)
        x = pl.col(column).cast(pl.Float64) + 0.0
        index = pl.lit(inner).search_sorted(x, side="right").cast(pl.Int64)
        return nw.from_native(frame.to_native().with_columns(index.alias(name)))

    def snapshot(self, data: Any) -> bool:
        """A Polars DataFrame: its lazy frame holds the columns as they were (Polars' buffers
        are immutable; assigning to the DataFrame later replaces its columns, not the
        snapshot's). A LazyFrame may scan a file: not a snapshot."""
        return isinstance(data, pl.DataFrame)

    def collect(self, frame: nw.LazyFrame[Any]) -> pl.DataFrame:
        """Run an aggregated lazy frame on Polars' streaming engine.

        It evaluates the row-level expressions (the lattice map's clip, scale, round and
        centre) chunk by chunk while the chunk is in cache, instead of materialising every
        intermediate column of the whole table: about 2.5x faster on 10^7 rows. Operations it
        does not stream (the window ranks of the bounding) run on the in-memory engine by
        Polars' own fallback. The results are the same exact sums and counts (integer-valued
        float sums below 2**53 are exact in any order).
        """
        return frame.to_native().collect(engine="streaming")


class PyArrowEngine(PolarsEngine):
    """PyArrow Table, run through Polars (zero-copy where Arrow allows)."""

    name = "pyarrow (via polars)"
    accepts = "pyarrow.Table"

    def matches(self, data: Any) -> bool:
        pa = sys.modules.get("pyarrow")
        return pa is not None and isinstance(data, pa.Table)

    def snapshot(self, data: Any) -> bool:
        return True  # Arrow buffers are immutable

    def to_lazy(self, data: Any) -> nw.LazyFrame[Any]:
        frame = pl.from_arrow(data)
        assert isinstance(frame, pl.DataFrame)  # a Table always gives a DataFrame
        return nw.from_native(frame.lazy())


class FileEngine(PolarsEngine):
    """A path to a CSV or Parquet file, scanned lazily by Polars.

    A Parquet file declares its schema (in its metadata): those are the public types. A CSV
    file declares none, and types guessed from its values would let one record change them
    (one ``x`` among integers makes a column text, one ``7.5`` makes it a float): every
    column of a CSV is read as text, and numeric aggregates parse it (a value that is not a
    plain number counts as missing); ``Session(path, schema=...)`` declares types, applied
    with the total cast (a value that does not convert is null).
    """

    name = "polars (file scan)"
    accepts = "a path (str or os.PathLike) to a .csv or .parquet file"
    _SUFFIXES = (".csv", ".parquet", ".pq")

    def matches(self, data: Any) -> bool:
        return isinstance(data, str | os.PathLike)

    def to_lazy(self, data: Any) -> nw.LazyFrame[Any]:
        """The file scanned lazily, its schema read (the CSV header, the Parquet metadata;
        no row): a file that cannot be read is a ParameterError naming the file and the
        reader's error type only (its message can quote the file's content)."""
        path = Path(os.fspath(data))
        suffix = path.suffix.lower()
        if suffix not in self._SUFFIXES:
            raise TypeError(
                f"Session: a path must name a .csv or .parquet file; got {str(path)!r} "
                "(read other formats into a Polars or pandas frame first)"
            )
        if not path.is_file():
            raise FileNotFoundError(f"Session: no such file: {str(path)!r}")
        kind = "CSV" if suffix == ".csv" else "Parquet"
        failed = None
        try:
            if suffix == ".csv":
                frame = pl.scan_csv(path, infer_schema=False)
            else:
                frame = pl.scan_parquet(path)
            frame.collect_schema()
        except Exception as err:  # the reader's own error types
            failed = type(err).__name__
        else:
            return nw.from_native(frame)
        empty = suffix == ".csv" and path.stat().st_size == 0
        detail = "the file is empty (a CSV needs a header line)" if empty else f"{failed}"
        raise ParameterError(f"Session: cannot read {str(path)!r} as {kind}: {detail}")

    def changes(self, data: Any) -> bool:
        return True  # the file can be rewritten between releases

    def read_as_text(self, data: Any, frame: nw.LazyFrame[Any]) -> frozenset[str]:
        if Path(os.fspath(data)).suffix.lower() != ".csv":
            return frozenset()
        return frozenset(frame.collect_schema())
