"""The SQL tests' data: a private table with a privacy unit, and a public lookup table."""

from __future__ import annotations

import datetime

import numpy as np
import polars as pl

N_ROWS = 400


def private_table(n: int = N_ROWS, seed: int = 0) -> pl.DataFrame:
    """People (``pid``, up to 3 rows each) with numbers, text, a date and a region code;
    ``income`` has nulls, ``code`` holds text that is not always a number."""
    rng = np.random.default_rng(seed)
    income = rng.lognormal(10, 1, n)
    return pl.DataFrame(
        {
            "pid": np.arange(n) // 3,
            "Age": rng.integers(17, 91, n),
            "Sex": rng.choice(["F", "M"], n),
            "Education": rng.choice(["BA", "HS", "MA", "PhD"], n),
            "Hours per week": rng.integers(1, 99, n),
            "income": pl.Series(income).scatter([3, 50, 51], None),
            "code": rng.choice(["1", "12", "x9", "7", ""], n),
            "region": rng.integers(1, 6, n),
            "d": [
                datetime.datetime(2020, 1, 1) + datetime.timedelta(days=int(k))
                for k in rng.integers(0, 900, n)
            ],
        }
    )


#: a public table: region id -> name and zone (id 6 has no private row; region 5 no entry)
REGIONS = pl.DataFrame(
    {
        "id": [1, 2, 3, 4, 6],
        "name": ["north", "south", "east", "west", "island"],
        "zone": ["a", "a", "b", "b", "c"],
    }
)
