"""Bundled data: the UCI Adult census table (CC BY 4.0; see ``data/LICENSE.md``)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

__all__ = ["ADULT_COLUMNS", "adult_path", "load_adult"]

#: The book's column names (Near and Abuah, *Programming Differential Privacy*), in file order;
#: the UCI ``fnlwgt`` column is kept as ``fnlwgt`` only when ``include_fnlwgt=True``.
ADULT_COLUMNS = (
    "Age",
    "Workclass",
    "fnlwgt",
    "Education",
    "Education-Num",
    "Marital Status",
    "Occupation",
    "Relationship",
    "Race",
    "Sex",
    "Capital Gain",
    "Capital Loss",
    "Hours per week",
    "Country",
    "Target",
)
_INT_COLUMNS = ("Age", "fnlwgt", "Education-Num", "Capital Gain", "Capital Loss", "Hours per week")


def adult_path() -> Path:
    """Path of the bundled ``adult.data`` file (UCI training split, 32,561 records)."""
    return Path(str(resources.files("dpkit.datasets") / "data" / "adult.data"))


def load_adult(*, backend: str = "polars", include_fnlwgt: bool = False) -> Any:
    """Load the UCI Adult training split with the book's column names.

    Parameters
    ----------
    backend : {"polars", "pandas"}
        Which DataFrame library to return. Polars is the embedded default.
    include_fnlwgt : bool
        Keep UCI's sampling-weight column ``fnlwgt`` (the book's CSV has none).

    The schema is fixed: the integer columns are Int64 (pandas' nullable ``Int64``), the
    others text.

    Returns
    -------
    DataFrame
        32,561 rows; columns Age, Workclass, Education, Education-Num, Marital Status,
        Occupation, Relationship, Race, Sex, Capital Gain, Capital Loss, Hours per week,
        Country, Target. Missing values stay as UCI's literal ``"?"``.

    Examples
    --------
    >>> df = load_adult()
    >>> df.shape
    (32561, 14)
    >>> int(df["Age"].sum())
    1256257
    """
    import polars as pl

    if backend not in ("polars", "pandas"):
        raise ValueError(f"load_adult: `backend` must be 'polars' or 'pandas'; got {backend!r}")
    schema = {c: (pl.Int64 if c in _INT_COLUMNS else pl.String) for c in ADULT_COLUMNS}
    df = pl.read_csv(
        adult_path(),
        has_header=False,
        new_columns=list(ADULT_COLUMNS),
        schema_overrides=schema,
        separator=",",
        truncate_ragged_lines=False,
    )
    df = df.with_columns(
        pl.col(c).str.strip_chars(" ") for c in ADULT_COLUMNS if c not in _INT_COLUMNS
    )
    df = df.filter(pl.col("Age").is_not_null())
    if not include_fnlwgt:
        df = df.drop("fnlwgt")
    if backend == "pandas":
        try:
            import pandas as pd
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError(
                "load_adult(backend='pandas') needs pandas: pip install 'dpkit[pandas]'"
            ) from exc
        # column by column through NumPy (no pyarrow needed); the integer columns in pandas'
        # nullable Int64, a type pandas does not infer from values, so a Session reads them
        # as integers (NumPy int64 would be Float64 to it: a null would make it float64)
        return pd.DataFrame(
            {
                c: pd.array(df[c].to_numpy(), dtype="Int64")
                if c in _INT_COLUMNS
                else df[c].to_numpy()
                for c in df.columns
            }
        )
    return df
