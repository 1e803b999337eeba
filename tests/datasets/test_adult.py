"""The bundled UCI Adult table: complete, with the book's column names."""

from __future__ import annotations

import hashlib

import narwhals as nw
import pytest

import dpkit as dp
from dpkit.datasets import ADULT_COLUMNS, adult_path, load_adult

BOOK_COLUMNS = [
    "Age", "Workclass", "Education", "Education-Num", "Marital Status", "Occupation",
    "Relationship", "Race", "Sex", "Capital Gain", "Capital Loss", "Hours per week",
    "Country", "Target",
]  # fmt: skip


def test_file_is_the_uci_training_split() -> None:
    digest = hashlib.sha256(adult_path().read_bytes()).hexdigest()
    assert digest == "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d"


def test_polars_frame_has_book_columns_and_all_rows() -> None:
    df = load_adult()
    assert df.columns == BOOK_COLUMNS
    assert df.shape == (32_561, 14)
    ages = df["Age"]
    assert (int(ages.min()), int(ages.max())) == (17, 90)
    assert int(ages.sum()) == 1_256_257
    assert float(ages.median()) == 37.0
    assert set(df["Target"].unique().to_list()) == {"<=50K", ">50K"}
    missing = (df["Workclass"] == "?") | (df["Occupation"] == "?") | (df["Country"] == "?")
    assert int(missing.sum()) == 2_399


def test_pandas_backend_and_fnlwgt() -> None:
    pd_df = load_adult(backend="pandas")
    assert list(pd_df.columns) == BOOK_COLUMNS
    assert len(pd_df) == 32_561
    # the fixed schema: a Session reads the integer columns as integers, not floats
    schema = dp.Session(pd_df, budget=dp.PureDP(1.0)).schema
    assert schema["Age"] == nw.Int64() and schema["Sex"] == nw.String()
    with_weight = load_adult(include_fnlwgt=True)
    assert with_weight.columns == list(ADULT_COLUMNS)


def test_unknown_backend() -> None:
    with pytest.raises(ValueError, match="backend"):
        load_adult(backend="excel")
