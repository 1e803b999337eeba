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

import numpy as np
import polars as pl

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
    s = dp.Session(engine(df), budget=dp.PureDP(100.0), rng=1)
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
    s = dp.Session(engine(df), budget=dp.PureDP(1.0))
    schema = s._schema
    valid = lat.valid("x", schema["x"])
    # row-level values, so not through the engine's collect (which takes aggregates only)
    got = s._frame.select(lat.offsets("x", valid, None).alias("o")).collect("polars")
    want = units(x, lat.unit, -3.0, 7.0) - lat.centre
    assert got["o"].to_list() == want.tolist()
