"""The same query with the same seed gives the same release on every engine."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import narwhals as nw
import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import dpkit as dp


def as_polars(frame: Any) -> pl.DataFrame:
    if isinstance(frame, pl.DataFrame):
        return frame
    if hasattr(frame, "toArrow"):  # a Spark DataFrame (the released rows, collected here)
        out = pl.from_arrow(frame.toArrow())
        assert isinstance(out, pl.DataFrame)
        return out
    return pl.from_pandas(frame)


def _table(n: int = 3000, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    hours = rng.uniform(1, 99, n).round(1)
    hours[::97] = np.nan  # NaN and nulls are left out of the numeric aggregates
    return pl.DataFrame(
        {
            "pid": rng.integers(0, 400, n),
            "Sex": rng.choice(["Female", "Male"], n),
            "Education": rng.choice(["Bachelors", "HS-grad", "Masters", "Some-college"], n),
            "Age": rng.integers(17, 91, n).astype(np.float64),
            "Hours": hours,
        }
    ).with_columns(
        # nulls (not NaN) in the filtered column: engines order NaN differently (Polars and
        # DuckDB put it above every number, pandas compares it as missing)
        pl.when(pl.int_range(n) % 89 == 0).then(None).otherwise(pl.col(c)).alias(c)
        for c in ("Age", "Hours")
    )


def _release(data: Any, unit: str | None = None, **q: Any) -> pl.DataFrame:
    s = dp.Session(
        data,
        schema=_table().schema,  # declared: pandas and CSV data then carry Polars' types
        privacy_unit=unit,
        budget=dp.ApproxDP(1e6, 0.5),
        rng=11,
        **({"max_rows_per_unit": 3, "max_groups_per_unit": 2} if unit else {}),
    )
    query = (
        s.query()
        .filter(nw.col("Age") >= 18)
        .group_by("Education", **q)
        .agg(
            dp.count(),
            dp.sum("Hours", bounds=(0, 100)),
            dp.mean("Age", bounds=(0, 100)),
            dp.std("Hours", bounds=(0, 100), weight=0.5),
            dp.median("Age", bounds=(0, 100)),
            dp.quantile("Hours", [0.25, 0.75], bounds=(0, 100)),
        )
    )
    return as_polars(query.release(epsilon=2.0, delta=1e-6))


REFERENCE: dict[str, pl.DataFrame] = {}


@pytest.mark.parametrize("keys", [None, ["Bachelors", "Doctorate", "HS-grad"]])
def test_identical_release_on_every_engine(
    engine: Callable[[pl.DataFrame], Any], keys: list[str] | None
) -> None:
    df = _table()
    got = _release(engine(df), keys=keys)
    ref = _release(df, keys=keys)  # Polars eager as the reference
    assert_frame_equal(got, ref, check_dtypes=False)
    assert got["Education"].to_list() == sorted(got["Education"].to_list())
    if keys is not None:
        assert got["Education"].to_list() == sorted(keys)  # empty "Doctorate" included


def test_histogram_identical_on_every_engine(engine: Callable[[pl.DataFrame], Any]) -> None:
    df = _table()
    s = dp.Session(engine(df), schema=df.schema, budget=dp.PureDP(10.0), rng=5)
    got = as_polars(
        s.query()
        .group_by("Sex", keys=["Female", "Male"])
        .agg(dp.histogram("Age", bins=[0, 30, 60, 100]))
        .release(epsilon=1.0)
    )
    ref = as_polars(
        dp.Session(df, budget=dp.PureDP(10.0), rng=5)
        .query()
        .group_by("Sex", keys=["Female", "Male"])
        .agg(dp.histogram("Age", bins=[0, 30, 60, 100]))
        .release(epsilon=1.0)
    )
    assert_frame_equal(got, ref, check_dtypes=False)
    assert got.height == 6 and got.columns[:3] == ["Sex", "Age_from", "Age_to"]


def test_category_histogram_counts_each_category_on_every_engine(
    engine: Callable[[pl.DataFrame], Any],
) -> None:
    """Category bins: one row per (group, category) in the order of ``bins``, the count of
    rows holding it (a category absent from the data counts 0). With epsilon 1e4 the noise
    is 0 except with probability about 2 exp(-1e4); the same seed gives the same frame."""
    df = _table()
    bins = ["Masters", "Bachelors", "Doctorate"]
    s = dp.Session(engine(df), schema=df.schema, budget=dp.PureDP(1e5), rng=5)
    got = as_polars(
        s.query()
        .group_by("Sex", keys=["Female", "Male"])
        .agg(dp.histogram("Education", bins=bins))
        .release(epsilon=1e4)
    )
    true = df.group_by("Sex", "Education").len()
    for sex, edu, n in got.select("Sex", "Education", "Education_count").rows():
        hit = true.filter((pl.col("Sex") == sex) & (pl.col("Education") == edu))["len"]
        assert n == (int(hit[0]) if hit.len() else 0)
    assert got["Education"].to_list() == bins * 2


@pytest.mark.parametrize("n_edges", [120, 121])
def test_many_bins_count_like_numpy_on_every_engine(
    engine: Callable[[pl.DataFrame], Any], n_edges: int
) -> None:
    """A hundred uneven edges (both parities of the inner-edge count, which the engine sums
    as a balanced tree of comparisons): with epsilon 1e4 the noise is 0 except with
    probability about 2 * 120 * exp(-1e4), so every count equals NumPy's histogram (bins
    ``[e_i, e_i+1)``, the last one closed)."""
    df = _table()
    edges = np.sort(np.random.default_rng(3).uniform(0, 100, n_edges))
    edges[0], edges[-1] = 0.0, 100.0
    s = dp.Session(engine(df), schema=df.schema, budget=dp.PureDP(1e5), rng=5)
    got = as_polars(s.query().agg(dp.histogram("Hours", bins=list(edges))).release(epsilon=1e4))
    hours = df["Hours"].drop_nulls().drop_nans().to_numpy()
    want, _ = np.histogram(hours, bins=edges)
    assert got.height == n_edges - 1
    assert got["Hours_count"].to_list() == want.tolist()


def test_values_on_edges_and_signed_zeros_bin_alike_on_every_engine(
    engine: Callable[[pl.DataFrame], Any],
) -> None:
    """A value on an edge starts that edge's bin, the last edge closes the last bin, and -0.0
    is 0.0 (NumPy's bins; Spark's binary search orders -0.0 below 0.0 unless normalised).
    Counts exact at epsilon 1e4 (noise non-zero with probability about 8 exp(-1e4))."""
    df = pl.DataFrame({"x": [-1.0, -0.0, 0.0, 0.5, 1.0, 2.0, 3.0, 3.5, -2.0]})
    edges = [-1.0, 0.0, 1.0, 2.0, 3.0]
    s = dp.Session(engine(df), schema=df.schema, budget=dp.PureDP(1e5), rng=5)
    got = as_polars(s.query().agg(dp.histogram("x", bins=edges)).release(epsilon=1e4))
    want, _ = np.histogram(df["x"].to_numpy(), bins=edges)
    assert want.tolist() == [1, 3, 1, 2]
    assert got["x_count"].to_list() == want.tolist()
    # edges whose shortest repr has 17 digits, each met by itself and its two neighbours
    tricky = [0.0, 0.1, 0.30000000000000004, 1 / 3, 0.7, 1.0]
    near = [v for e in tricky[1:-1] for v in (np.nextafter(e, -1), e, np.nextafter(e, 2))]
    near_df = pl.DataFrame({"x": near})
    s = dp.Session(engine(near_df), schema=near_df.schema, budget=dp.PureDP(1e5), rng=5)
    got = as_polars(s.query().agg(dp.histogram("x", bins=tricky)).release(epsilon=1e4))
    assert got["x_count"].to_list() == np.histogram(near, bins=tricky)[0].tolist()
    assert got["x_count"].to_list() == [1, 3, 3, 3, 2]
    negative_zero_edge = [-1.0, -0.0, 1.0]
    s = dp.Session(engine(df), schema=df.schema, budget=dp.PureDP(1e5), rng=5)
    got = as_polars(s.query().agg(dp.histogram("x", bins=negative_zero_edge)).release(epsilon=1e4))
    assert got["x_count"].to_list() == [1, 4]


@pytest.mark.parametrize("backend", ["polars", "duckdb"])
def test_default_bin_search_is_numpys(backend: str) -> None:
    """The base adapter's bin search (nested when/then, for engines without their own; every
    built-in engine overrides it) numbers bins like ``np.searchsorted(side="right")`` over
    the inner edges: on edge values, their neighbours, -0.0, and 300 uneven edges."""
    from dpkit.session.engines import Engine

    rng = np.random.default_rng(4)
    for edges in (
        [0.0, 0.1, 0.30000000000000004, 1 / 3, 0.7, 1.0],
        [-1.0, -0.0, 1.0],
        list(np.sort(rng.uniform(0, 1, 300))),
    ):
        inner = np.array(edges[1:-1])
        near = np.concatenate([inner, np.nextafter(inner, -2), np.nextafter(inner, 2), [-0.0]])
        x = np.clip(
            np.concatenate([near, rng.uniform(edges[0], edges[-1], 200)]), edges[0], edges[-1]
        )
        df = pl.DataFrame({"x": x})
        if backend == "duckdb":
            duckdb = pytest.importorskip("duckdb")
            lf = nw.from_native(duckdb.connect().from_arrow(df.to_arrow()))
        else:
            lf = nw.from_native(df.lazy())
        out = Engine().with_bins(lf, "x", tuple(edges), "b").collect(backend="polars")
        got = out.to_native().sort("x")["b"].to_list()
        want = np.searchsorted(inner, np.sort(x) + 0.0, side="right").tolist()
        assert got == want


@pytest.mark.parametrize(
    "agg",
    [
        lambda: dp.median("x", bounds=(0, 100)),
        lambda: dp.histogram("x", bins=[0, 50, 100]),
        lambda: dp.count(),
    ],
    ids=["median", "histogram", "count"],
)
def test_keys_of_a_castable_type_release_like_typed_keys(
    engine: Callable[[pl.DataFrame], Any], agg: Callable[[], Any]
) -> None:
    """Public keys given as strings (or floats) for an integer column are cast to the
    column's type before the spend, so every path (a median- or histogram-only query used
    to look the groups up uncast: wrong medians, or a failed join after the spend) releases
    exactly what typed keys release, with the column's type; keys the cast would change
    ("01") are refused before the spend."""
    df = pl.DataFrame({"k": [1] * 400 + [2] * 400, "x": [10.0] * 400 + [90.0] * 400})
    got = {}
    for keys in ([1, 2], ["1", "2"], [1.0, 2.0]):
        s = dp.Session(engine(df), schema=df.schema, budget=dp.PureDP(10.0), rng=3)
        got[str(keys)] = as_polars(
            s.query().group_by("k", keys=keys).agg(agg()).release(epsilon=5.0)
        )
    ref = got.pop("[1, 2]")
    assert ref.schema["k"] == pl.Int64
    for frame in got.values():
        assert_frame_equal(frame, ref)
    s = dp.Session(engine(df), schema=df.schema, budget=dp.PureDP(10.0), rng=3)
    with pytest.raises(dp.ParameterError, match="do not fit its type"):
        s.query().group_by("k", keys=["01", "2"]).agg(agg()).release(epsilon=1.0)
    assert len(s.accountant.history) == 0


def test_column_names_an_engine_cannot_use_are_refused_before_the_spend(
    engine: Callable[[pl.DataFrame], Any],
) -> None:
    """Names that would break a release after the spend are refused before it: dpkit's
    reserved prefix (its working columns, such as the histogram's bin, could clash), ``*``
    (a pattern of all columns), a dotted group key on DuckDB (narwhals binds ``g.h`` as a
    table's column) and any used dotted name on Spark (``F.col`` reads a struct field).
    Where a dotted key works, it gives the true counts (epsilon 1e4: noise 0 except with
    probability about 4 exp(-1e4))."""
    df = pl.DataFrame({"g.h": ["a", "b", "a"], "x": [1.0, 2.0, 3.0], "*": [1.0, 2.0, 3.0]})
    with pytest.raises(dp.ParameterError, match=r"reserved .*; rename '__dpkit_bucket'"):
        dp.Session(engine(df.rename({"x": "__dpkit_bucket"})), budget=dp.PureDP(1.0))
    with pytest.raises(dp.ParameterError, match=r"reads as a pattern|contains '\.'"):
        dp.Session(engine(df), schema=df.schema, budget=dp.PureDP(1.0))
    declared = {"x": pl.Float64}  # no type can be declared for "*" (nor for "g.h" on Spark)
    s = dp.Session(engine(df), schema=declared, budget=dp.PureDP(1e5), rng=3)
    with pytest.raises(dp.ParameterError, match="reads as a pattern"):
        s.query().agg(dp.sum("*", bounds=(0, 10))).release(epsilon=1.0)
    keyed = s.query().group_by("g.h", keys=["a", "b"]).agg(dp.count())
    if s.engine in ("duckdb", "spark"):
        with pytest.raises(dp.ParameterError, match=r"contains '\.'"):
            keyed.release(epsilon=1e4)
    else:
        assert as_polars(keyed.release(epsilon=1e4))["count"].to_list() == [2, 1]
    assert len(s.accountant.history) == (0 if s.engine in ("duckdb", "spark") else 1)


def test_many_categories_count_exactly_on_every_engine(
    engine: Callable[[pl.DataFrame], Any],
) -> None:
    """Forty categories (their positions are a balanced sum of 39 indicator terms, odd at
    the first level) count exactly at epsilon 1e4 (noise 0 except with probability about
    80 exp(-1e4)), in the order of ``bins``, absent ones at 0."""
    values = [f"c{i % 45}" for i in range(3 * 45 + 7)]
    df = pl.DataFrame({"c": values})
    bins = [f"c{i}" for i in range(39, -1, -1)]  # reversed; c40..c44 are left out
    s = dp.Session(engine(df), schema=df.schema, budget=dp.PureDP(1e5), rng=5)
    got = as_polars(s.query().agg(dp.histogram("c", bins=bins)).release(epsilon=1e4))
    assert got["c"].to_list() == bins
    assert got["c_count"].to_list() == [values.count(b) for b in bins]


def test_bounded_aggregates_agree_across_engines(engine: Callable[[pl.DataFrame], Any]) -> None:
    """With per-person bounding the kept rows are random, but the total kept per person is
    min(rows, k) on every engine, so the bounded total count has one true value."""
    df = _table()
    k = 3
    per_person = df.filter(pl.col("Age") >= 18).group_by("pid").len()["len"]
    true_total = int(np.minimum(per_person.to_numpy(), k).sum())
    s = dp.Session(
        engine(df), schema=df.schema, privacy_unit="pid", max_rows_per_unit=k, budget=dp.ZCDP(1e6)
    )
    rel = s.query().filter(nw.col("Age") >= 18).agg(dp.count()).measure(rho=1e4, rng=3)
    noisy = int(as_polars(rel.frame)["count"][0])
    half = rel.releases["count: count"].details["half_width"]
    assert abs(noisy - true_total) <= half  # rho = 1e4: the noise is a few units at most


@pytest.mark.parametrize(
    "keys", [["Female", "Male"], ["Male"], None], ids=["two", "one", "private"]
)
def test_quantile_grid_counts_equal_brute_force(
    engine: Callable[[pl.DataFrame], Any], keys: list[str] | None
) -> None:
    """The engine's per-group counts of grid points are the counts of the shared lattice map
    of the (non-null) values on the grid the public keys give (2**23 steps for two keys,
    2**24 for one, 2**16 with private keys): the compact summary the statistics layer
    receives. With public keys only their groups are counted (the "Female" rows never
    reach Python when the only key is "Male")."""
    from dpkit._lattice import units
    from dpkit.session._engine import bounded_rows, grid_counts, grid_groups

    df = _table(500)
    agg = dp.quantile("Hours", [0.5], bounds=(0, 100))
    s = dp.Session(engine(df), schema=df.schema, budget=dp.PureDP(1.0))
    q = s.query().group_by("Sex", keys=keys).agg(agg)
    ctx = q._with_rows(q._context())
    got = grid_counts(ctx, bounded_rows(ctx, None), agg)
    bits = {2: 23, 1: 24}.get(len(keys or ()), 16)
    grid = agg.grid(grid_groups(ctx))
    assert grid.unit == 2.0 ** (6 - bits)  # 2**floor(log2(100)) / 2**bits
    assert sorted(set(got["Sex"].to_list())) == (keys or ["Female", "Male"])
    for sex in keys or ("Female", "Male"):
        x = df.filter((pl.col("Sex") == sex) & pl.col("Hours").is_not_nan())["Hours"]
        u, n = np.unique(
            units(x.drop_nulls().to_numpy(), grid.unit, 0.0, 100.0), return_counts=True
        )
        sub = got.filter(pl.col("Sex") == sex)
        assert sub["__dpkit_bucket"].to_list() == u.tolist()
        assert sub["__dpkit_n"].to_list() == n.tolist()


def test_quantile_grid_counts_keep_a_null_public_key(
    engine: Callable[[pl.DataFrame], Any],
) -> None:
    """Public keys on an integer column with a null key: the engine keeps exactly the rows
    of the public keys (the null group's included, the group 3 left out) and counts them on
    the grid of three groups (2**22 steps), on every engine once the schema is declared (a
    float key column would get no engine-exact filter: all groups on 2**16 steps)."""
    from dpkit._lattice import units
    from dpkit.session._engine import bounded_rows, grid_counts, grid_groups

    rng = np.random.default_rng(2)
    n = 600
    df = pl.DataFrame(
        {"k": pl.Series(rng.choice([None, 1, 2, 3], n).tolist(), dtype=pl.Int64)}
    ).with_columns(x=pl.Series(rng.uniform(0, 1, n)))
    agg = dp.quantile("x", [0.5], bounds=(0, 1))
    s = dp.Session(engine(df), schema=df.schema, budget=dp.PureDP(1.0))
    q = s.query().group_by("k", keys=[1, None, 2]).agg(agg)
    ctx = q._with_rows(q._context())
    exact = ctx.schema["k"].is_integer()
    assert grid_groups(ctx) == (3 if exact else None)
    grid = agg.grid(grid_groups(ctx))
    assert grid.unit == 2.0 ** (-22 if exact else -16)
    got = grid_counts(ctx, bounded_rows(ctx, None), agg)
    want = [1, 2, None] if exact else [1, 2, 3, None]
    assert got["k"].unique(maintain_order=True).to_list() == want
    for key in (1, 2, None):
        sel = df.filter(pl.col("k").is_null() if key is None else pl.col("k") == key)
        u, c = np.unique(units(sel["x"].to_numpy(), grid.unit, 0.0, 1.0), return_counts=True)
        sub = got.filter(pl.col("k").is_null() if key is None else pl.col("k") == key)
        assert sub["__dpkit_bucket"].to_list() == u.tolist()
        assert sub["__dpkit_n"].to_list() == c.tolist()


@pytest.mark.parametrize(
    ("groups", "bits"), [(1, 24), (2, 23), (3, 22), (10, 20), (255, 16), (256, 16), (None, 16)]
)
def test_quantile_grid_is_as_fine_as_the_public_cap_allows(groups: int | None, bits: int) -> None:
    """``groups`` public groups share the cap of 2**24 grid counts: the largest ``bits`` with
    ``groups * 2**bits <= 2**24``, never below 16; no public bound (None) gives 16."""
    from dpkit.session.aggregates import QUANTILE_CELLS, quantile_bits

    assert quantile_bits(groups) == bits
    if groups is not None and bits > 16:
        assert groups * 2**bits <= QUANTILE_CELLS < groups * 2 ** (bits + 1)
    agg = dp.quantile("x", [0.5], bounds=(0, 1e7))
    assert agg.grid(groups).unit == 2.0 ** (23 - bits)  # 2**floor(log2(1e7)) / 2**bits


def test_quantile_grid_groups_come_from_public_facts_only() -> None:
    """A finer grid only where the groups reaching the engine's count are publicly bounded:
    no group-by (one), public keys on integer, string or boolean columns (the product of
    each column's distinct key values, while it refines the grid); none for private keys,
    float or date keys (which no engine-exact membership test covers) or many keys."""
    import datetime

    from dpkit.session._engine import grid_groups

    df = pl.DataFrame(
        {
            "i": [1, 2, 3],
            "s": ["a", "b", "c"],
            "b": [True, False, True],
            "f": [0.5, 1.5, 2.5],
            "d": [datetime.date(2020, 1, d) for d in (1, 2, 3)],
            "x": [1.0, 2.0, 3.0],
        }
    )
    s = dp.Session(df, budget=dp.PureDP(1.0))
    agg = dp.median("x", bounds=(0, 10))

    def groups(*by: str, keys: Any) -> int | None:
        q = s.query().group_by(*by, keys=keys) if by else s.query()
        return grid_groups(q.agg(agg)._context())

    assert groups(keys=None) == 1
    assert groups("i", keys=[1, 2, 5]) == 3
    assert groups("s", "b", keys=[("a", True), ("b", True), ("c", False)]) == 3 * 2
    assert groups("i", keys=None) is None
    assert groups("f", keys=[0.5, 1.5]) is None
    assert groups("d", keys=[datetime.date(2020, 1, 1)]) is None
    assert groups("i", keys=list(range(300))) is None  # 2**16 steps either way


def test_quantile_grid_counts_stay_bounded_on_many_distinct_values() -> None:
    """Private keys give no public bound on the groups, so the grid is the coarsest (2**16
    steps): 150,000 distinct values in one group reach Python as at most 2**16 + 1 counts,
    whatever the rows; the counts still add up to the rows."""
    from dpkit.session._engine import bounded_rows, grid_counts

    n = 150_000
    x = np.random.default_rng(3).permutation(n) / n
    df = pl.DataFrame({"g": np.zeros(n, dtype=np.int64), "x": x})
    agg = dp.quantile("x", [0.5], bounds=(0, 1))
    s = dp.Session(df, budget=dp.PureDP(1.0))
    ctx = s.query().group_by("g").agg(agg)._context()
    got = grid_counts(ctx, bounded_rows(ctx, None), agg)
    assert 2**16 <= got.height <= 2**16 + 1
    assert int(got["__dpkit_n"].sum()) == n


@pytest.mark.parametrize("by", [(), ("Education",)])
def test_count_alone_counts_every_row(engine: Callable[[pl.DataFrame], Any], by: tuple) -> None:
    # A count with no other aggregate reads no column of the data: the rows must still be
    # counted (a bare literal selects one row on some engines). At epsilon = 1e6 the discrete
    # Laplace noise is non-zero with probability about 2 exp(-1e6): the release is the count.
    df = _table()
    s = dp.Session(engine(df), schema=df.schema, budget=dp.PureDP(1e7), rng=3)
    q = s.query().group_by(*by, keys=sorted(set(df["Education"]))) if by else s.query()
    got = as_polars(q.agg(dp.count()).release(epsilon=1e6))
    want = df.group_by(*by).len().sort(*by) if by else pl.DataFrame({"len": [df.height]})
    assert got["count"].to_list() == want["len"].to_list()


@pytest.mark.parametrize("dtype", [pl.Float64, pl.Float32])
def test_private_float_keys_do_not_carry_one_records_sign(
    engine: Callable[[pl.DataFrame], Any], dtype: Any
) -> None:
    """A privately selected key is a function of its group, not of one record: -0.0 and 0.0
    (NaN and negative NaN) are one group, released as 0.0 (the positive NaN) whichever row
    comes first. Engines output the bits of the group's first row unless the keys are made
    canonical (the last case has no positive row at all, so the test does not depend on
    which row an engine keeps). Groups of 200 rows at epsilon 5, delta 1e-3: each is kept
    (threshold about 3; a kept group is a deterministic function of its rows, so no tolerance
    is involved)."""
    neg_nan = float(np.copysign(np.nan, -1.0))
    cases = (
        ((-0.0, 0.0), (neg_nan, np.nan)),
        ((0.0, -0.0), (np.nan, neg_nan)),
        # every row negative: whichever row a (multithreaded) engine keeps, the bits are -
        ((-0.0, -0.0), (neg_nan, neg_nan)),
    )
    for zeros, nans in cases:
        keys = [zeros[0]] + [zeros[1]] * 199 + [nans[0]] + [nans[1]] * 199 + [1.0] * 200
        df = pl.DataFrame({"k": pl.Series(keys, dtype=dtype)})
        s = dp.Session(engine(df), schema=df.schema, budget=dp.ApproxDP(100, 1e-2), rng=3)
        got = as_polars(s.query().group_by("k").agg(dp.count()).release(epsilon=5, delta=1e-3))
        released = [v for v in got["k"].to_list() if v is not None]  # pandas: NaN is null
        assert 0.0 in released and 1.0 in released
        assert not any(np.signbit(v) for v in released), (zeros, nans, released)


def test_a_float_unit_is_one_unit_whatever_the_sign_of_its_zero(
    engine: Callable[[pl.DataFrame], Any],
) -> None:
    """The privacy unit 0.0 written as -0.0 on some rows is still one unit: one row per unit
    kept, so three units give a count of 3 (exact at epsilon 1e4: the noise is non-zero with
    probability about 2 exp(-1e4))."""
    df = pl.DataFrame({"u": [-0.0, 0.0, 0.0, -0.0, 1.0, 2.0]})
    s = dp.Session(
        engine(df), schema=df.schema, privacy_unit="u", max_rows_per_unit=1, budget=dp.PureDP(1e5)
    )
    got = as_polars(s.query().agg(dp.count()).release(epsilon=1e4))
    assert got["count"].to_list() == [3]


def test_a_column_with_an_empty_name_is_refused_before_the_spend(
    engine: Callable[[pl.DataFrame], Any],
) -> None:
    """``group_by("")`` used to pass the checks, spend, and fail (narwhals reads "" as no
    expression); an aggregate of the column "" is refused when it is built."""
    df = pl.DataFrame({"": [1.0, 2.0], "y": [1.0, 2.0]})
    try:
        s = dp.Session(engine(df), schema=df.schema, budget=dp.PureDP(1.0))
    except dp.ParameterError:  # an engine that cannot hold the name at all refuses it here
        return
    # PyArrow and DuckDB name such a column "column_0": "" is then an unknown column
    with pytest.raises(dp.ParameterError, match=r"empty name|unknown column ''"):
        s.query().group_by("").agg(dp.count()).release(epsilon=0.5)
    with pytest.raises(TypeError, match="must be a column name"):
        dp.sum("", bounds=(0, 10))
    assert s.accountant.spent == dp.PureDP(0.0)


def test_none_among_categories_counts_the_nulls_on_every_engine(
    engine: Callable[[pl.DataFrame], Any],
) -> None:
    """``None`` in categorical ``bins`` counts the nulls, and the other categories still
    count their rows (a None used to make every count 0: ``col == None`` is null on every
    row). Exact at epsilon 1e4 (noise non-zero with probability about 8 exp(-1e4))."""
    values = ["a", "b", None, "a", "é", None, None, "zz0"]
    df = pl.DataFrame({"c": values})
    bins = ["é", None, "a", "zz"]
    s = dp.Session(engine(df), schema=df.schema, budget=dp.PureDP(1e5), rng=5)
    got = as_polars(s.query().agg(dp.histogram("c", bins=bins)).release(epsilon=1e4))
    assert got["c"].to_list() == bins
    assert got["c_count"].to_list() == [1, 3, 2, 0]
    flags = pl.DataFrame({"c": [True, None, False, True, True]})
    s = dp.Session(engine(flags), schema=flags.schema, budget=dp.PureDP(1e5), rng=5)
    q = s.query().agg(dp.histogram("c", bins=[None, True]))
    if s._schema["c"] == nw.Object:  # pandas holds booleans with None as objects
        with pytest.raises(TypeError, match="do not fit the column's type Object"):
            q.release(epsilon=1e4)
        return
    assert as_polars(q.release(epsilon=1e4))["c_count"].to_list() == [1, 3]
