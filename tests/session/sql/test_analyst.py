"""The analyst's task, as SQL, on the bundled Adult table on every engine: the count per
Education, the mean Age per Sex, the median hours worked and the deciles of Age, under a total
epsilon of 1."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import polars as pl

import dpkit as dp

ADULT = dp.datasets.load_adult()
EDUCATION = sorted(ADULT["Education"].unique().to_list())
TASK = [
    (
        "SELECT Education, COUNT(*) AS n FROM data GROUP BY Education",
        0.25,
        {"keys": {"Education": EDUCATION}},
    ),
    (
        "SELECT Sex, AVG(Age) AS mean_age FROM data GROUP BY Sex",
        0.25,
        {"keys": {"Sex": ["Female", "Male"]}, "bounds": {"Age": (0, 100)}},
    ),
    (
        'SELECT MEDIAN("Hours per week") AS median_hours, '
        "QUANTILE_CONT(Age, [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]) AS age FROM data",
        0.5,
        {"bounds": {"Age": (0, 100), "Hours per week": (0, 100)}},
    ),
]


def test_the_analysts_task_runs_as_sql_on_every_engine(
    engine: Callable[[pl.DataFrame], Any], to_polars: Callable[[Any], pl.DataFrame]
) -> None:
    s = dp.Session(engine(ADULT), budget=dp.PureDP(1.0), rng=3)
    frames = [to_polars(s.sql(sql, epsilon=eps, **kw)) for sql, eps, kw in TASK]
    assert s.accountant.spent == dp.PureDP(1.0) and len(s.accountant.history) == 3
    counts, means, hours = frames
    assert counts["Education"].to_list() == EDUCATION
    assert counts.columns == ["Education", "n", "n_low", "n_high"]
    # 32,561 people: each count within a few units of the truth (Laplace scale 4)
    truth = ADULT.group_by("Education").len().sort("Education")["len"]
    assert (counts["n"] - truth).abs().max() < 60
    assert means.columns == ["Sex", "mean_age", "mean_age_low", "mean_age_high"]
    assert means["mean_age"].is_between(30, 45).all()
    deciles = [f"age_{q / 10:g}" for q in range(1, 10)]
    assert hours.columns[:3] == ["median_hours", "median_hours_low", "median_hours_high"]
    assert [c for c in hours.columns if not c.endswith(("_low", "_high"))][1:] == deciles
    assert 30 < hours["age_0.5"][0] < 45  # the median age is 37


def test_pandas_output_has_the_builders_types() -> None:
    """A pandas release through SQL has the types the builder's release has (the released
    table is post-processed in Polars and handed back through the engine's own output)."""
    df = ADULT.to_pandas()
    sql = "SELECT Sex, COUNT(*) AS count, AVG(Age) AS Age_mean FROM data GROUP BY Sex"
    kw = {"keys": {"Sex": ["Female", "Male"]}, "bounds": {"Age": (0, 100)}}
    got = dp.Session(df, budget=dp.PureDP(1.0), rng=1).sql(sql, epsilon=0.5, **kw)
    q = dp.Session(df, budget=dp.PureDP(1.0), rng=1).query()
    q = q.group_by("Sex", keys=["Female", "Male"])
    want = q.agg(dp.count(), dp.mean("Age", bounds=(0, 100))).release(epsilon=0.5)
    assert list(got.columns) == list(want.columns)
    assert [str(t) for t in got.dtypes] == [str(t) for t in want.dtypes]
    assert got.equals(want)
