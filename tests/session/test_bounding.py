"""Contribution bounding against a brute force, on every engine."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl

import dpkit as dp
from dpkit.session._engine import bounded_rows

K, M = 5, 2
GROUPS = ["g0", "g1", "g2", "g3", "g4"]
SALT_A = (11, 12, 13, 14)
SALT_B = (21, 22, 23, 24)


def _people(seed: int = 0) -> pl.DataFrame:
    """40 persons with 1 to 50 rows each in up to 5 groups; person 0 has 50 rows at x = 100."""
    rng = np.random.default_rng(seed)
    sizes = np.concatenate([[50], rng.integers(1, 51, 39)])
    pid = np.repeat(np.arange(40), sizes)
    n = pid.size
    x = np.where(pid == 0, 100.0, rng.uniform(0, 100, n).round(2))
    g = np.where(pid == 0, "g0", rng.choice(GROUPS, n))
    return pl.DataFrame({"pid": pid, "g": g, "x": x})


def _query(data: Any) -> Any:
    s = dp.Session(
        data,
        schema=_people().schema,
        privacy_unit="pid",
        max_rows_per_unit=K,
        max_groups_per_unit=M,
        budget=dp.PureDP(1.0),
    )
    return s.query().group_by("g", keys=GROUPS).agg(dp.count(), dp.sum("x", bounds=(0, 100)))


def _kept(data: Any, salt: tuple[int, ...]) -> pl.DataFrame:
    q = _query(data)
    ctx = q._with_rows(q._context())
    # the kept rows themselves, so not through the engine's collect (aggregates only)
    return bounded_rows(ctx, salt).collect("polars").to_native().sort("pid", "g", "x")


def test_bounding_keeps_at_most_k_rows_and_m_groups(engine: Callable[[pl.DataFrame], Any]) -> None:
    df = _people()
    kept = _kept(engine(df), SALT_A)
    per = kept.group_by("pid").agg(pl.len().alias("rows"), pl.col("g").n_unique().alias("groups"))
    assert per["rows"].max() <= K and per["groups"].max() <= M
    # brute force: a person keeps K rows, or all their rows in min(M, own groups) of their
    # groups, each kept row one of theirs
    orig = df.group_by("pid", "g").len()
    for pid, sub in kept.group_by("pid"):
        mine = orig.filter(pl.col("pid") == pid[0])
        groups = set(sub["g"])
        there = int(mine.filter(pl.col("g").is_in(groups))["len"].sum())
        # K rows, or fewer only when every row of min(M, own groups) groups was kept
        assert sub.height == K or (sub.height == there and len(groups) == min(M, mine.height))
        have = df.filter(pl.col("pid") == pid[0]).group_by("g", "x").len()
        used = sub.group_by("g", "x").len().join(have, on=["g", "x"], how="left")
        assert (used["len"] <= used["len_right"]).all()  # a sub-multiset of the person's rows
    assert kept["pid"].n_unique() == df["pid"].n_unique()  # nobody is dropped entirely


def test_kept_rows_change_with_the_salt(engine: Callable[[pl.DataFrame], Any]) -> None:
    df = _people()
    a, b = _kept(engine(df), SALT_A), _kept(engine(df), SALT_B)
    assert not a.equals(b)  # which rows and groups are kept is fresh for each salt
    assert a.equals(_kept(engine(df), SALT_A))  # and a function of the salt alone


def test_sensitivities_equal_brute_force_removal(engine: Callable[[pl.DataFrame], Any]) -> None:
    """explain()'s count and sum sensitivities equal the largest change, over persons, of the
    bounded per-group counts and sums (L1 over groups) when all of one person's rows go."""
    df = _people()
    plan = _query(engine(df)).explain(epsilon=1.0)
    sens = {p.part.label: p.sensitivity * p.part.unit for p in plan.parts}

    def stats(kept: pl.DataFrame) -> pl.DataFrame:
        out = kept.group_by("g").agg(pl.len().alias("n"), pl.col("x").clip(0, 100).sum())
        return pl.DataFrame({"g": GROUPS}).join(out, on="g", how="left").fill_null(0)

    full = stats(_kept(engine(df), SALT_A))
    worst = {"count": 0.0, "sum": 0.0}
    for pid in range(0, 40, 4):  # every 4th person, person 0 (50 rows at the bound) included
        less = stats(_kept(engine(df.filter(pl.col("pid") != pid)), SALT_A))
        worst["count"] = max(worst["count"], float((full["n"] - less["n"]).abs().sum()))
        worst["sum"] = max(worst["sum"], float((full["x"] - less["x"]).abs().sum()))
    assert worst["count"] == sens["count"] == K
    assert worst["sum"] == sens["sum"] == K * 100.0


def test_each_release_draws_a_fresh_salt() -> None:
    """Through the public path: every person has a row at 0 and a row at 100 and keeps one;
    with noise far below 1, each release's sum shows which rows were kept, and consecutive
    releases of one Session keep different rows."""
    pid = np.repeat(np.arange(200), 2)
    df = pl.DataFrame({"pid": pid, "x": np.tile([0.0, 100.0], 200)})
    s = dp.Session(df, privacy_unit="pid", max_rows_per_unit=1, budget=dp.PureDP(1e4), rng=9)
    sums = [float(s.sum("x", bounds=(0, 100), epsilon=1e3)["x_sum"][0]) for _ in range(3)]
    assert len({round(v) for v in sums}) == 3
    assert all(2000 < v < 18000 for v in sums)  # about half of the 200 persons keep 100
