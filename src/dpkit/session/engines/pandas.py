"""The pandas adapter: SipHash with a secret per-release key, ranked with a stable sort."""

from __future__ import annotations

import sys
from typing import Any

import narwhals as nw
import numpy as np
import polars as pl

from dpkit.errors import ParameterError
from dpkit.session._total import polars_type
from dpkit.session.engines._base import Engine, RankMethod

__all__ = ["PandasEngine"]


def _nullable_int(name: str) -> str:
    """pandas' nullable integer type for a NumPy integer name ("uint8" -> "UInt8")."""
    return "UInt" + name[4:] if name.startswith("uint") else "Int" + name[3:]


def _nullable(dtype: Any) -> Any:
    """pandas' nullable NumPy-backed type for a PyArrow-backed number, boolean or text type
    (None for other types, which keep theirs)."""
    import pandas as pd

    kind = dtype.kind
    if kind in "iu":
        return _nullable_int(dtype.numpy_dtype.name)
    if kind == "f":
        return "Float32" if dtype.numpy_dtype.itemsize <= 4 else "Float64"
    if kind == "b":
        return "boolean"
    if kind in "OUS" and str(dtype.pyarrow_dtype) in ("string", "large_string"):
        return pd.StringDtype("python")
    return None


def _is_str_dtype(dtype: Any) -> bool:
    import pandas as pd

    return isinstance(dtype, pd.StringDtype)


def _public(dtype: Any, natural: Any) -> Any:
    """The public narwhals type of a pandas column of type ``dtype`` (narwhals reads it as
    ``natural``): see :meth:`PandasEngine.public_schema`."""
    if isinstance(dtype, np.dtype):
        if dtype.kind in "iu" or dtype == np.float64:
            return nw.Float64()
        if dtype.kind == "f":
            return nw.Float32()
        if dtype.kind == "b":
            return nw.Boolean()
        if dtype.kind == "O":
            return nw.String()
    if _is_str_dtype(dtype):
        return nw.String()
    return natural


class PandasEngine(Engine):
    """pandas DataFrame; results come back as pandas."""

    name = "pandas"
    accepts = "pandas.DataFrame"

    def matches(self, data: Any) -> bool:
        pd = sys.modules.get("pandas")
        return pd is not None and isinstance(data, pd.DataFrame)

    def to_lazy(self, data: Any) -> nw.LazyFrame[Any]:
        """The frame, with PyArrow-backed numbers, booleans and text as pandas' nullable
        types: PyArrow refuses to cast an integer beyond ``2**53`` to Float64 (a failure that
        depends on the values, hence after the spend), where NumPy rounds it like every
        other engine. Duplicate column names are refused (nothing could name them)."""
        import pandas as pd

        names = [str(c) for c in data.columns]
        twice = sorted({c for c in names if names.count(c) > 1})
        if twice or not all(isinstance(c, str) for c in data.columns):
            what = f"duplicate column names {twice}" if twice else "column names that are not str"
            raise ParameterError(
                f"Session: the pandas frame has {what}; a query names columns by str, so "
                "give each column a distinct str name first (df.columns = [...])"
            )
        arrow = {
            c: _nullable(t)
            for c, t in data.dtypes.items()
            if isinstance(t, pd.ArrowDtype) and _nullable(t) is not None
        }
        return nw.from_native(data.astype(arrow) if arrow else data).lazy()

    def public_schema(self, frame: nw.LazyFrame[Any]) -> dict[str, Any]:
        """pandas infers a column's NumPy type from its values, so one record can change it:
        a null turns ``int64`` into ``float64`` and ``bool`` into ``object``, a value that
        is not a string turns text into ``object``. The public types follow a rule no
        record can flip between ``int64`` and ``float64`` or within text:

        * NumPy integers and ``float64`` are Float64 (``float32`` and ``float16`` Float32);
        * NumPy ``bool`` is Boolean;
        * ``object`` and ``str`` are String: in an ``object`` column, a number, boolean or
          date is read as its text (``str``), a list or other object as null; numeric
          aggregates parse text columns (text that is not a plain number counts as missing);
        * every type that holds its own nulls keeps its type: pandas' nullable
          ``Int64``/``Float64``/``boolean``/``string``, PyArrow-backed types, datetimes,
          durations, categoricals.

        A column's type can still change with a value outside its kind: a ``bool`` column
        with a missing value, or a number column with one text value, is ``object`` (so
        String) in pandas. Give such columns pandas' nullable types (``boolean``,
        ``Float64``), or declare them with ``schema=``.
        """
        df = frame.to_native()
        out: dict[str, Any] = {}
        natural = frame.collect_schema()
        for c, t in df.dtypes.items():
            out[c] = _public(t, natural[c])
        return out

    def with_types(self, frame: nw.LazyFrame[Any], schema: dict[str, Any]) -> nw.LazyFrame[Any]:
        """The frame with every column of ``schema`` in its public type: NumPy integers as
        ``float64`` (rounded beyond ``2**53``, as every engine casts them to Float64),
        ``float16`` as ``float32``; an ``object`` column in the type ``schema`` gives it
        (a declared one, or String), each value kept if it is a Python value of that type,
        parsed by the total cast if it is a ``str``, null otherwise (see
        :func:`_objects`). A column not in ``schema`` (the privacy unit) keeps its numbers;
        its values that are not ``str`` become null all the same."""
        df = frame.to_native()
        cols: dict[str, Any] = {}
        for c, t in df.dtypes.items():
            if not isinstance(t, np.dtype):
                continue  # types that hold their own nulls
            if t.kind == "O":
                cols[c] = _objects(df[c], schema.get(c, nw.String()))
            elif c in schema and t.kind in "iu":
                cols[c] = df[c].astype(np.float64)
            elif c in schema and t == np.float16:
                cols[c] = df[c].astype(np.float32)
        return nw.from_native(df.assign(**cols) if cols else df).lazy()

    def check_declared(self, owner: str, name: str, dtype: Any) -> None:
        """pandas holds numbers, booleans, text and naive datetimes declared by ``schema=``
        in its own types; a date (pandas has no date type) or other types are refused."""
        ok = dtype.is_numeric() or isinstance(dtype, nw.Boolean | nw.String)
        ok = ok or (isinstance(dtype, nw.Datetime) and dtype.time_zone is None)
        if not ok or isinstance(dtype, nw.Decimal | nw.Int128 | nw.UInt128):
            raise ParameterError(
                f"{owner}: on pandas, `schema` declares numbers, booleans, text or naive "
                f"datetimes; got {dtype} for {name!r} (pandas has no date type: declare "
                "'datetime', or convert the column before the Session)"
            )

    def without_rows(self, frame: nw.LazyFrame[Any]) -> nw.LazyFrame[Any]:
        return nw.from_native(frame.to_native().iloc[:0]).lazy()

    def where(
        self, frame: nw.LazyFrame[Any], conditions: list[nw.Expr], schema: dict[str, Any]
    ) -> nw.LazyFrame[Any]:
        """The rows where every condition holds, the conditions evaluated by Polars on a
        copy of the columns they read (see :func:`_on_polars`), the rows kept by pandas."""
        if not conditions:
            return frame
        df = frame.to_native()
        keep = nw.all_horizontal(*conditions, ignore_nulls=False).fill_null(False)
        mask = _on_polars(df, {"__dpkit_keep": keep}, schema)["__dpkit_keep"]
        return nw.from_native(df[mask.to_numpy()]).lazy()

    def converted(
        self, frame: nw.LazyFrame[Any], columns: dict[str, nw.Expr], schema: dict[str, Any]
    ) -> nw.LazyFrame[Any]:
        """The declared columns converted by Polars on a copy of the columns they read (see
        :func:`_on_polars`), back in pandas' nullable types."""
        if not columns:
            return frame
        df = frame.to_native()
        out = _on_polars(df, columns, schema)
        new = {c: _to_pandas(out[c]) for c in columns}
        return nw.from_native(df.assign(**new)).lazy()

    def changes(self, data: Any) -> bool:
        return True  # a pandas frame is mutable: a column can be reassigned

    def read_as_text(self, data: Any, frame: nw.LazyFrame[Any]) -> frozenset[str]:
        """Text columns (``str`` or ``object``): pandas makes a column of numbers ``object``
        when one value is text, so numeric aggregates parse text columns, whichever type
        pandas chose."""
        public = self.public_schema(frame)
        return frozenset(c for c, t in public.items() if isinstance(t, nw.String))

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

    def output(
        self,
        frame: pl.DataFrame,
        like: nw.LazyFrame[Any] | None = None,
        keys: tuple[str, ...] = (),
    ) -> Any:
        """The released frame as pandas, each column's pandas type fixed by its Polars type
        and role alone (never by its values, such as whether a released key is null or no
        group is released): statistics as NumPy ``int64``/``float64``; keys and other
        columns in pandas' types that hold a null (``Int64``, ``boolean``, ``str``,
        ``datetime64``; floats hold it as NaN)."""
        import pandas as pd

        cols = {}
        for c in frame.columns:
            s = frame[c]
            if s.dtype.is_numeric() and c not in keys:
                cols[c] = s.to_numpy()  # statistics: never null
            else:
                cols[c] = _released(s)
        return pd.DataFrame(cols, columns=frame.columns)

    def released(self, frame: Any) -> pl.DataFrame:
        """A released pandas frame back as Polars."""
        return pl.from_pandas(frame)


def _on_polars(df: Any, exprs: dict[str, nw.Expr], schema: dict[str, Any]) -> pl.DataFrame:
    """The total expressions ``exprs`` (:mod:`dpkit.session._total`, built for the public
    ``schema``) evaluated by Polars on a copy of the pandas columns they read.

    Total expressions hold the user's row operations (filters, declared casts), and their
    rules are written for engines that keep a null a null whatever the type; pandas' NumPy
    types turn a null integer into a float NaN or an ``object``, on which the next cast or
    boolean operator fails. Evaluated by Polars they mean the same on pandas data as on a
    Polars frame, and nothing a user writes runs on pandas itself.
    """
    from dpkit.session._total import columns_of

    needed = sorted(set().union(*(columns_of(e) for e in exprs.values())))
    cols = {c: _to_polars(df[c], schema[c]) for c in needed}
    cols["__dpkit_row"] = pl.Series(np.zeros(len(df), dtype=np.int8))
    frame = nw.from_native(pl.DataFrame(cols))
    return frame.select(*(e.alias(c) for c, e in exprs.items())).to_native()


def _to_polars(series: Any, dtype: Any) -> pl.Series:
    """A pandas column as a Polars Series of its public narwhals type ``dtype`` (pandas'
    missing values, NaN in a float column among them, as nulls)."""
    missing = series.isna().to_numpy()
    if dtype.is_float():
        values = series.to_numpy(dtype=np.float64, na_value=np.nan)
        out = pl.Series(values, nan_to_null=True)
        return out.cast(pl.Float32) if isinstance(dtype, nw.Float32) else out
    if dtype.is_integer() or isinstance(dtype, nw.Boolean):
        unsigned = dtype.is_unsigned_integer() if dtype.is_integer() else False
        kind = np.bool_ if isinstance(dtype, nw.Boolean) else np.uint64 if unsigned else np.int64
        fill = False if kind is np.bool_ else 0
        values = pl.Series(series.to_numpy(dtype=kind, na_value=fill))
        native = polars_type(dtype)
        return pl.select(
            pl.when(pl.Series(missing)).then(None).otherwise(values).cast(native)
        ).to_series()
    if isinstance(dtype, nw.String | nw.Categorical | nw.Enum):
        items = series.astype(object).tolist()
        text = [v if isinstance(v, str) else None for v in items]
        out = pl.Series(text, dtype=pl.String)
        return out.cast(pl.Categorical) if isinstance(dtype, nw.Categorical) else out
    if isinstance(dtype, nw.Datetime) and dtype.time_zone is not None:
        naive = series.dt.tz_convert("UTC").dt.tz_localize(None).to_numpy()
        utc = pl.Series(naive).dt.replace_time_zone("UTC")
        return utc.dt.convert_time_zone(dtype.time_zone)
    if isinstance(dtype, nw.Date):
        return pl.Series(series.astype(object).where(~missing, None).tolist(), dtype=pl.Date)
    return pl.Series(series.to_numpy())  # naive datetimes and durations: NumPy's NaT is null


def _to_pandas(values: pl.Series) -> Any:
    """A Polars Series as a pandas column of the matching nullable type (integers and
    booleans keep their nulls; floats hold them as NaN, text as pandas' NA)."""
    import pandas as pd

    dtype = values.dtype
    missing = values.is_null().to_numpy()
    if dtype.is_integer():
        ints = values.fill_null(0).to_numpy()
        return pd.arrays.IntegerArray(ints, missing)
    if dtype == pl.Boolean:
        return pd.arrays.BooleanArray(values.fill_null(False).to_numpy(), missing)
    if dtype.is_float():
        return values.cast(pl.Float64).fill_null(float("nan")).to_numpy()
    if dtype == pl.String:
        return pd.array(values.to_list(), dtype=pd.StringDtype("python"))
    return values.to_numpy()


def _text(value: Any) -> str | None:
    """A value of an ``object`` column as text: a ``str`` itself, a number, boolean, date
    or time as Python writes it (``str``), null for a missing value (None, NaN, NaT) and
    for anything else (a list, a dict: no one text for it)."""
    import datetime

    if isinstance(value, str):
        return value
    if isinstance(value, float | np.floating) and not np.isfinite(value):
        return None if np.isnan(value) else str(float(value))
    if isinstance(value, bool | int | float | np.bool_ | np.integer | np.floating):
        return str(value.item() if isinstance(value, np.generic) else value)
    if isinstance(value, datetime.date | datetime.time | datetime.timedelta):
        return str(value)
    return None


def _objects(values: Any, dtype: Any) -> Any:
    """An ``object`` column in the narwhals type ``dtype``: a value that already is a Python
    value of that type is kept (a ``bool`` for Boolean; an ``int``, or a whole ``float``, in
    range for an integer type; an ``int`` or ``float`` for a float type; a naive
    ``datetime`` for a Datetime), any other value is read as text (:func:`_text`) and, for
    a type other than String, parsed by the total cast
    (:func:`dpkit.session._total.total_cast`): what does not parse is null."""
    import datetime

    import pandas as pd

    from dpkit.session._casts import int_range, total_cast

    items = values.to_numpy()
    strings = pd.array([_text(v) for v in items], dtype=pd.StringDtype("python"))
    if isinstance(dtype, nw.String):
        return strings
    parsed = _on_polars(
        pd.DataFrame({"v": strings}),
        {"v": total_cast(nw.col("v"), nw.String(), dtype)},
        {"v": nw.String()},
    )["v"]
    bounds = int_range(dtype)

    def own(v: Any) -> Any:
        if isinstance(v, bool | np.bool_):
            return bool(v) if isinstance(dtype, nw.Boolean) else None
        if bounds is not None and isinstance(v, int | np.integer | float | np.floating):
            whole = float(v).is_integer() if isinstance(v, float | np.floating) else True
            return int(v) if whole and bounds[0] <= v <= bounds[1] else None
        if dtype.is_float() and isinstance(v, int | np.integer | float | np.floating):
            return float(v)
        if isinstance(dtype, nw.Datetime) and isinstance(v, datetime.datetime):
            return v if v.tzinfo is None else None
        return None

    mine = [own(v) for v in items]
    native = polars_type(dtype)
    kept = pl.Series(mine, dtype=native, strict=False)
    both = pl.select(pl.coalesce(kept, parsed.cast(native))).to_series()
    return _to_pandas(both)


def _released(values: pl.Series) -> Any:
    """A released key (or label) column in the pandas type of its Polars type."""
    import pandas as pd

    dtype = values.dtype
    if dtype.is_integer() or dtype == pl.Boolean:
        return _to_pandas(values)
    if dtype.is_float():
        return values.cast(pl.Float64).fill_null(float("nan")).to_numpy()
    if dtype in (pl.String, pl.Categorical) or isinstance(dtype, pl.Enum):
        return pd.Series(values.cast(pl.String).to_list(), dtype="str")
    if isinstance(dtype, pl.Datetime):
        naive = values.dt.replace_time_zone(None) if dtype.time_zone else values
        out = pd.Series(naive.to_numpy())
        return out.dt.tz_localize(dtype.time_zone) if dtype.time_zone else out
    if isinstance(dtype, pl.Duration):
        return pd.Series(values.to_numpy())
    return pd.Series(values.to_list(), dtype=object)
