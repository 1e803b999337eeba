"""Exact arithmetic at large offsets: bounds (1e15, 1e15 + 1), the float-sum attack's setting.

Values near 1e15 have a float64 spacing of 0.125; a float sum of n of them loses far more than
the sensitivity of a mean's centred sum (half the width, 0.5), and differently on neighbouring
tables (the attack on float sums in Tumult and OpenDP). dpkit sums integer lattice offsets.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import narwhals as nw
import numpy as np
import polars as pl
import pytest

import dpkit as dp
from dpkit._lattice import units
from dpkit.session._lattice import Lattice

LO, HI = 1e15, 1e15 + 1
STEPS = LO + np.array([0.0, 0.25, 0.5, 0.75, 1.0, 0.3, 0.9])  # 0.3, 0.9 round to the 0.125 grid


def test_lattice_at_large_offsets() -> None:
    lat = Lattice.for_bounds("test", LO, HI, 20)
    assert lat.unit == 0.25  # doubled from 2**-20 until 1e15 / unit < 2**52
    assert max(abs(LO), abs(HI)) / lat.unit < 2**52
    assert lat.half_range == 2  # units 4e15 .. 4e15 + 4 around the centre


def test_engine_sums_are_exact(
    engine: Callable[[pl.DataFrame], Any], to_polars: Callable[[Any], pl.DataFrame]
) -> None:
    """The released mean with negligible noise equals the exact rational mean of the lattice
    values, on every engine; the engine's own float mean does not."""
    rng = np.random.default_rng(0)
    x = rng.choice(STEPS, 200_001)
    df = pl.DataFrame({"x": x})
    s = dp.Session(engine(df), schema=df.schema, budget=dp.PureDP(100.0), rng=1)
    # epsilon 50: the noise on the centred sum (scale 2 / 29.5 units) is 0 but with
    # probability ~2e-6, so the released mean is the exact one
    got = to_polars(s.query().agg(dp.mean("x", bounds=(LO, HI))).release(epsilon=50.0))
    dp_mean = float(got["x_mean"][0])
    u = units(x, 0.25, LO, HI)  # the shared NumPy reference of the map
    exact = Fraction(sum(int(v) for v in u), len(u)) * Fraction(0.25)
    assert abs(Fraction(dp_mean) - exact) <= Fraction(1, 8)  # float64 spacing at 1e15
    naive = float(np.cumsum(x)[-1] / x.size)  # a sequential float sum, as a streaming engine
    assert abs(Fraction(naive) - exact) > Fraction(1, 2)  # off by more than the sensitivity


def _centred_sums(drop: bool, groups: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(5)
    base = np.tile(rng.choice(STEPS, 20), groups)
    g = np.repeat(np.arange(groups), 20)
    df = pl.DataFrame({"g": g, "x": base})
    if drop:  # the neighbour: each group loses one row holding 1e15 + 1
        df = pl.concat([df, pl.DataFrame({"g": np.arange(groups), "x": np.full(groups, HI)})])
    s = dp.Session(df, budget=dp.PureDP(1e9), rng=seed)
    rel = (
        s.query()
        .group_by("g", keys=list(range(groups)))
        .agg(dp.mean("x", bounds=(LO, HI)))
        .measure(epsilon=EPS)
    )
    return np.asarray(rel.releases["x_mean: centred sum"].value, dtype=np.int64)


EPS = 1.5


def test_neighbour_ratio_of_the_released_centred_sum() -> None:
    """Each group's released centred sum (in lattice units) on a table and on the same table
    plus one value at the upper bound: every value's probability ratio stays within exp(eps).
    The true sums differ by 2 units (the sensitivity); with it understated, the ratio would
    reach exp(2 eps_sum) ~ 5.9 > exp(eps) ~ 4.5."""
    groups = 20_000
    a = Counter(_centred_sums(False, groups, 1).tolist())
    b = Counter(_centred_sums(True, groups, 2).tolist())
    checked = 0
    for v in set(a) | set(b):
        if min(a[v], b[v]) < 300:
            continue
        # the log of a ratio of two counts has standard error ~ sqrt(1/a + 1/b); 4 of slack
        slack = 4 * math.sqrt(1 / a[v] + 1 / b[v])
        assert abs(math.log(a[v] / b[v])) <= EPS + slack, v
        checked += 1
    assert checked >= 5


def test_engine_lattice_map_is_the_shared_map_bit_for_bit(
    engine: Callable[[pl.DataFrame], Any],
) -> None:
    """The engine expression gives dpkit._lattice.units exactly, on awkward values: a hair
    below a half step, negative values, values beyond the bounds, infinities."""
    lat = Lattice.for_bounds("test", -3.0, 7.0, 20)
    half = lat.unit / 2
    x = np.array(
        [
            0.0,
            half,
            np.nextafter(half, 0),
            -half,
            3 * half,
            7.0,
            -3.0,
            1e300,
            -np.inf,
            np.inf,
            np.nextafter(7.0, 8),
            2.0 / 3,
            -1.0 / 3,
            1e-300,
        ]
    )
    df = pl.DataFrame({"x": x})
    s = dp.Session(engine(df), schema=df.schema, budget=dp.PureDP(1.0))
    schema = s._schema
    valid = lat.valid("x", schema["x"])
    # row-level values, so not through the engine's collect (which takes aggregates only)
    got = s._table().select(lat.offsets("x", valid, None).alias("o")).collect("polars")
    want = units(x, lat.unit, -3.0, 7.0) - lat.centre
    assert got["o"].to_list() == want.tolist()


@pytest.mark.parametrize("rows", [2**20, 2**40, 2**58])
@pytest.mark.parametrize("bound", [1, 3, 2**21, 2**44, 2**52])
def test_digit_sums_recombine_to_the_exact_sum(rows: int, bound: int) -> None:
    """Past 2**53 over the largest value, a sum is split into base-2**bits digits: every
    digit sum fits (rows times the largest digit at most 2**62), and the digits of each
    value, summed and recombined, give the exact integer sum (brute force in Python ints on
    values at and near the bound, both signs)."""
    from dpkit.session._specs import digits, split_for

    split = split_for(rows, bound)
    if rows * bound <= 2**53:
        assert split is None
        return
    assert split is not None
    bits, count = split
    rng = np.random.default_rng(bits * 131 + count)
    edge = [bound, -bound, bound - 1, 1 - bound, 0, 1, -1]
    values = np.array(edge + list(rng.integers(-bound, bound, 200, endpoint=True)), float)
    frame = pl.DataFrame({"v": values})
    exprs = [d.alias(f"d{j}") for j, d in enumerate(digits(nw.col("v"), bits, count))]
    got = nw.from_native(frame).select(*exprs).to_native()
    for j in range(count):
        top = int(got[f"d{j}"].abs().max())  # type: ignore[arg-type]
        assert rows * top <= 2**62  # each digit's sum stays inside Int64
    per_row = sum(got[f"d{j}"].to_numpy().astype(object) * 2 ** (bits * j) for j in range(count))
    assert list(per_row) == [int(v) for v in values]


def test_sums_are_exact_at_any_size(
    engine: Callable[[pl.DataFrame], Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A table so large that a float64 sum of a group's values could round (2**53 over the
    largest value: 8.6e9 rows for a sum here) is summed by digits: the same exact figures,
    so the same release for the same seed, never a failure after the spend. Simulated by
    reporting 2**60 rows for the table."""
    from dpkit.session import _engine as ex

    rng = np.random.default_rng(3)
    df = pl.DataFrame({"g": rng.choice(["a", "b"], 500), "x": rng.uniform(-50, 150, 500)})

    def build(s: dp.Session) -> Any:
        q = s.query().group_by("g", keys=["a", "b"])
        return q.agg(
            dp.sum("x", bounds=(-10, 100)),
            dp.mean("x", bounds=(0, 100)),
            dp.var("x", bounds=(0, 100)),
        ).release(epsilon=1e3, rng=4)

    def frame(out: Any) -> pl.DataFrame:
        if hasattr(out, "toArrow"):
            return pl.from_arrow(out.toArrow())  # type: ignore[return-value]
        return out if isinstance(out, pl.DataFrame) else pl.from_pandas(out)

    plain = frame(build(dp.Session(engine(df), budget=dp.PureDP(1e4))))
    clean = ex.table_clean

    def huge(ctx: Any, cols: list[str]) -> Any:
        out = clean(ctx, cols)
        out.rows = 2**60
        return out

    monkeypatch.setattr(ex, "table_clean", huge)
    split = frame(build(dp.Session(engine(df), budget=dp.PureDP(1e4))))
    assert split.equals(plain)
