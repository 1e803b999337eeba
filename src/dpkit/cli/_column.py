"""One numeric column of a CSV file, read the same way by every subcommand that takes ``--data``.

The rule, shared by ``dpkit sensitivity --data`` and ``dpkit compare``:

* missing values (empty cells) are dropped, and a note on stderr says how many;
* a column that is not numeric (text, booleans, dates), that holds NaN or infinite values, or
  that has no value left is a one-line error naming the column;
* values outside ``--bounds`` are refused (the error says how many) unless ``--clip`` is
  given, which clips them to the bounds and says how many on stderr
  (:func:`dpkit._validate.check_within_bounds`).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from dpkit._validate import check_within_bounds
from dpkit.errors import ParameterError

__all__ = ["read_column", "within_bounds"]


def _note(text: str) -> None:
    print(f"note: {text}", file=sys.stderr)


def read_column(path: Path | None, column: str | None) -> tuple[np.ndarray, str]:
    """The finite values of ``column`` in the CSV file ``path`` (the Adult data if ``None``).

    Parameters
    ----------
    path : Path, optional
        A CSV file with a header row; ``None`` reads the bundled UCI Adult table.
    column : str
        The column to read.

    Returns
    -------
    (numpy.ndarray, str)
        The values as float64 (missing values dropped, with a note on stderr) and a short
        description of where they came from, for headers.

    Raises
    ------
    ParameterError
        The file cannot be read, the column is missing, not numeric, holds NaN or infinite
        values, or has no value.
    """
    import polars as pl

    if column is None:
        raise ParameterError("--data needs --column NAME")
    if path is None:
        from dpkit.datasets import load_adult

        frame = load_adult()
        where = "the bundled Adult data"
    else:
        try:
            frame = pl.read_csv(path, infer_schema_length=None)
        except OSError as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ParameterError(f"--data: cannot read {path} as CSV: {first}") from None
        except pl.exceptions.PolarsError as exc:  # a parse error can quote the data
            raise ParameterError(
                f"--data: cannot read {path} as CSV ({type(exc).__name__})"
            ) from None
        where = str(path)
    if column not in frame.columns:
        raise ParameterError(
            f"--column: {column!r} is not a column of {where}; the columns are "
            f"{', '.join(frame.columns) or '(none)'}"
        )
    col = frame[column]
    missing = col.null_count()
    if missing == len(col):
        raise ParameterError(
            f"--column: {column!r} of {where} has no values ({missing:,} missing, "
            f"{len(col):,} rows)"
        )
    if col.dtype == pl.String:  # numbers spelled as text, such as "nan" or "inf" among them
        parsed = col.cast(pl.Float64, strict=False)
        if parsed.null_count() == missing:
            col = parsed
    if not col.dtype.is_numeric():
        numeric = [c for c in frame.columns if frame[c].dtype.is_numeric()]
        hint = f"numeric columns: {', '.join(numeric)}" if numeric else "it has no numeric column"
        raise ParameterError(  # no example value: error messages never quote the data
            f"--column: {column!r} of {where} holds {col.dtype} values, not numbers; {hint}"
        )
    values = col.drop_nulls().cast(pl.Float64).to_numpy()
    bad = int(np.count_nonzero(~np.isfinite(values)))
    if bad:
        raise ParameterError(
            f"--column: {column!r} of {where} holds {bad:,} NaN or infinite value(s); remove or "
            "impute them first"
        )
    if missing:
        _note(f"dropped {missing:,} missing value(s) of {column!r}; {values.size:,} remain")
    return values, where


def within_bounds(
    values: np.ndarray, column: str, bounds: tuple[float, float], *, clip: bool
) -> np.ndarray:
    """Refuse values outside ``bounds`` or, with ``clip``, clip them and say how many.

    Parameters
    ----------
    values : numpy.ndarray
        The column's values.
    column : str
        Its name, for messages.
    bounds : (float, float)
        The public bounds given by ``--bounds``.
    clip : bool
        Whether ``--clip`` was given.

    Returns
    -------
    numpy.ndarray
        The values, clipped to the bounds when ``clip``.

    Raises
    ------
    ParameterError
        Values outside the bounds without ``clip``.
    """
    out, clipped = check_within_bounds(
        "--bounds",
        repr(column),
        values,
        bounds,
        clip=clip,
        bounds_name="the bounds",
        clip_hint="--clip",
    )
    if clipped:
        _note(f"clipped {clipped:,} value(s) of {column!r} to [{bounds[0]:g}, {bounds[1]:g}]")
    return out
