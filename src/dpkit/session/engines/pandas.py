"""The pandas adapter: SipHash with a secret per-release key, ranked with a stable sort."""

from __future__ import annotations

import sys
from typing import Any

import narwhals as nw
import numpy as np
import polars as pl

from dpkit.session.engines._base import Engine, RankMethod

__all__ = ["PandasEngine"]


def _nullable_int(name: str) -> str:
    """pandas' nullable integer type for a NumPy integer name ("uint8" -> "UInt8")."""
    return "UInt" + name[4:] if name.startswith("uint") else "Int" + name[3:]


class PandasEngine(Engine):
    """pandas DataFrame; results come back as pandas."""

    name = "pandas"
    accepts = "pandas.DataFrame"

    def matches(self, data: Any) -> bool:
        pd = sys.modules.get("pandas")
        return pd is not None and isinstance(data, pd.DataFrame)

    def to_lazy(self, data: Any) -> nw.LazyFrame[Any]:
        """The frame, with PyArrow-backed integer columns as pandas' nullable integers:
        PyArrow refuses to cast an integer beyond ``2**53`` to Float64 (a failure that
        depends on the values, hence after the spend), where NumPy rounds it like every
        other engine."""
        import pandas as pd

        arrow_ints = {
            c: _nullable_int(t.numpy_dtype.name)
            for c, t in data.dtypes.items()
            if isinstance(t, pd.ArrowDtype) and t.kind in "iu"
        }
        return nw.from_native(data.astype(arrow_ints) if arrow_ints else data).lazy()

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
        import pandas as pd

        df = frame.to_native()
        # pandas' keyed SipHash-2-4; the key is 16 ASCII characters (64 bits of the salt)
        key = f"{salt[0] % 2**64:016x}"
        h = pd.util.hash_pandas_object(df[hash_columns], index=False, hash_key=key)
        order = pd.DataFrame(
            {
                "__p": df[partition].to_numpy(),
                "__h": h.to_numpy(),
                **{f"__t{i}": df[c].to_numpy() for i, c in enumerate(tie_columns)},
            }
        )
        keys = list(order.columns)
        order = order.sort_values(keys, kind="stable", na_position="last")
        if method == "ordinal":
            rank = order.groupby("__p", sort=False, dropna=False).cumcount().to_numpy() + 1
        else:
            first = (~order.duplicated(keys)).astype(np.int64)
            rank = first.groupby(order["__p"], sort=False, dropna=False).cumsum().to_numpy()
        out = np.empty(len(order), dtype=np.int64)
        out[order.index.to_numpy()] = rank
        return nw.from_native(df.assign(**{name: out})).lazy()

    def with_bins(
        self, frame: nw.LazyFrame[Any], column: str, edges: tuple[float, ...], name: str
    ) -> nw.LazyFrame[Any]:
        """NumPy's ``searchsorted`` of each value among the inner edges (``side="right"``:
        the edges at or below it), a binary search per row; ``+ 0.0`` makes -0.0 0.0."""
        df = frame.to_native()
        x = frame.select(nw.col(column).cast(nw.Float64)).to_native()[column]
        inner = np.asarray(edges[1:-1], dtype=np.float64)
        index = np.searchsorted(inner, x.to_numpy(dtype=np.float64) + 0.0, side="right")
        return nw.from_native(df.assign(**{name: index.astype(np.int64)})).lazy()

    def output(self, frame: pl.DataFrame, like: nw.LazyFrame[Any] | None = None) -> Any:
        import pandas as pd

        cols = {}
        for c in frame.columns:
            s = frame[c]
            cols[c] = s.to_numpy() if s.dtype.is_numeric() and s.null_count() == 0 else s.to_list()
        return pd.DataFrame(cols, columns=frame.columns)
