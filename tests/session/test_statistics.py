"""The statistics layer in the Session: many quantiles in one mechanism, ties on integer
columns, private clipping bounds (``bounds="auto"``) and private contribution bounds
(``max_rows_per_unit="auto"``), on every engine of the Session's fixture."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl
import pytest

import dpkit as dp
from dpkit import statistics
from dpkit.samplers import as_source
from dpkit.session.batch import QuerySampler

# ----------------------------------------------------------------------------- many quantiles


def _quantile_table() -> pl.DataFrame:
    rng = np.random.default_rng(11)
    n = 600
    return pl.DataFrame(
        {
            "age": rng.integers(18, 91, n),  # integer-typed: atoms on the integers
            # floats on the quantile grid of (0, 100) (its unit is 1/64): the engine's grid
            # counts are then the values' own counts
            "x": np.round(rng.normal(50, 15, n).clip(0, 100) * 8) / 8,
        }
    )


def test_multi_quantile_release_is_the_statistics_mechanism_on_every_engine(
    engine: Callable[[pl.DataFrame], Any], to_polars: Callable[[Any], pl.DataFrame]
) -> None:
    """A query with two multi-level quantile aggregates releases exactly what the statistics
    layer releases on the brute-force counts with the same seed: the engine's grid counts,
    the budget split (epsilon / 2 each), the integer column's support (1.0: ties released
    exactly, the noisy-histogram method), ``method=`` passed through, the column names
    ``<name>_<q:g>`` with their intervals, and sorted values."""
    df = _quantile_table()
    s = dp.Session(engine(df), schema=df.schema, budget=dp.PureDP(4.0), rng=21)
    q = s.query().agg(
        dp.quantile("age", [0.1, 0.5, 0.9], bounds=(0, 100)),
        dp.quantile("x", [0.25, 0.75], bounds=(0, 100), method="joint", name="xq"),
    )
    got = to_polars(q.release(epsilon=2.0))
    assert got.columns == [
        f"{n}{x}"
        for n in ("age_0.1", "age_0.5", "age_0.9", "xq_0.25", "xq_0.75")
        for x in ("", "_low", "_high")
    ]
    source = as_source(21)
    want = []
    for col, levels, method, support in (
        ("age", [0.1, 0.5, 0.9], "auto", 1.0),
        ("x", [0.25, 0.75], "joint", "auto"),
    ):
        pts, cnt = np.unique(df[col].to_numpy().astype(np.float64), return_counts=True)
        rel = statistics.quantiles_from_counts(
            pts,
            cnt,
            levels,
            epsilon=1.0,
            bounds=(0, 100),
            method=method,
            support=support,
            interval_share=0.25,
            rng=source,
        )
        want.append((rel, levels))
    (age, _), (xq, _) = want
    assert age.method == "cdf" and xq.method == "joint"
    row = got.row(0, named=True)
    for prefix, (rel, levels) in zip(("age", "xq"), want, strict=True):
        for j, lv in enumerate(levels):
            assert row[f"{prefix}_{lv:g}"] == rel.values[j]
            assert row[f"{prefix}_{lv:g}_low"] == rel.value_intervals[j, 0]
            assert row[f"{prefix}_{lv:g}_high"] == rel.value_intervals[j, 1]
    ages = [row[f"age_{lv:g}"] for lv in (0.1, 0.5, 0.9)]
    assert ages == sorted(ages) and all(float(a).is_integer() for a in ages)


def test_quantiles_on_loose_bounds_are_the_array_release_on_every_engine(
    engine: Callable[[pl.DataFrame], Any], to_polars: Callable[[Any], pl.DataFrame]
) -> None:
    """Nine deciles of lognormal(10, 1) incomes with loose public bounds (0, 1e7), three
    aggregates of one group: the engine counts them on 2**24 steps (unit 0.5), so the
    release, values and intervals, is bit for bit ``statistics.quantiles`` on the same
    seeded source: on the records themselves when they lie on that grid (halves; an
    integer-typed column, whose support is then 1.0 as for an integer array), on the
    records moved to it (at most 0.25 each) otherwise. On 2**16 steps (unit 128), about 11
    of these 3,000 records would share each step near the 10th percentile."""
    from dpkit._lattice import units

    deciles = [k / 10 for k in range(1, 10)]
    bounds = (0.0, 1e7)
    x = np.random.default_rng(6).lognormal(10, 1, 3000)
    df = pl.DataFrame({"x": x, "h": np.round(x * 2) / 2, "k": np.round(x).astype(np.int64)})
    s = dp.Session(engine(df), schema=df.schema, budget=dp.PureDP(10.0), rng=5)
    aggs = [dp.quantile(c, deciles, bounds=bounds) for c in ("x", "h", "k")]
    got = to_polars(s.query().agg(*aggs).release(epsilon=3.0)).row(0, named=True)
    unit = aggs[0].grid().unit
    assert unit == 0.5
    moved = units(x, unit, *bounds) * unit
    assert np.abs(moved - x).max() <= unit / 2
    source = as_source(5)
    for col, data in (("x", moved), ("h", df["h"].to_numpy()), ("k", df["k"].to_numpy())):
        want = statistics.quantiles(data, deciles, epsilon=1.0, bounds=bounds, rng=source)
        assert want.support == (1.0 if col == "k" else "auto")
        for j, lv in enumerate(deciles):
            assert got[f"{col}_{lv:g}"] == want.values[j]
            assert got[f"{col}_{lv:g}_low"] == want.value_intervals[j, 0]
            assert got[f"{col}_{lv:g}_high"] == want.value_intervals[j, 1]


def test_integer_ages_are_released_on_the_tie_block() -> None:
    """Integer ages: the Session's median of an integer-typed column lands on the tied value
    itself. The true median's rank (1000 of 2000) lies 10 records inside the block of 40s
    (ranks 990..1800). At epsilon = 0.2 (0.15 on the draw), each of the 63 lattice points
    between 39 and 40 has weight exp(-1.5) relative to 40 under the lattice's even measure,
    so without atoms (the interval mechanism's view: ``support="continuous"``) 40 comes out
    in about 1% of releases; the integer column's support (atoms of weight 64 on the
    integers) gives about 70% (measured 68 of 100; 61 with the dyadic default). Threshold
    45 of 100: five standard deviations below 70%, far above 1%."""
    rng = np.random.default_rng(5)
    ages = np.concatenate([rng.integers(18, 40, 990), np.full(810, 40), rng.integers(41, 91, 200)])
    s = dp.Session(pl.DataFrame({"age": ages}), budget=dp.PureDP(1e6), rng=3)
    q = s.query().agg(dp.median("age", bounds=(0, 100)))
    hits = sum(q.release(epsilon=0.2)["age_median"][0] == 40.0 for _ in range(100))
    assert hits >= 45


@pytest.mark.parametrize("method", ["joint", "aq", "independent"])
def test_integer_columns_come_back_on_integers_in_the_session(method: str) -> None:
    """An integer-typed column releases integers under every method, JointExp (whose score
    is not tie-aware) included: the statistics layer moves each value onto the integers."""
    rng = np.random.default_rng(5)
    ages = np.concatenate([rng.integers(18, 40, 990), np.full(810, 40), rng.integers(41, 91, 200)])
    s = dp.Session(pl.DataFrame({"age": ages}), budget=dp.PureDP(1e6), rng=3)
    q = s.query().agg(dp.quantile("age", [0.25, 0.75], bounds=(0, 100), method=method))
    for _ in range(10):
        row = q.release(epsilon=0.5).row(0, named=True)
        for name in ("age_0.25", "age_0.75"):
            assert row[name] == round(row[name]), (name, row[name])


# neighbour histogram: a person with K rows at the top decides the upper quantile

K = 4
EPS_NB = 2.0


def _nb_table(with_p: bool) -> pl.DataFrame:
    vals = [4] * 12
    pid = [f"p{i}" for i in range(12)]
    if with_p:
        vals, pid = vals + [12] * K, pid + ["P"] * K
    return pl.DataFrame({"pid": pid, "x": vals})


def _nb_cells(with_p: bool, seed: int, n: int) -> Counter:
    s = dp.Session(
        _nb_table(with_p), privacy_unit="pid", max_rows_per_unit=K, budget=dp.PureDP(1.0)
    )
    q = s.query().agg(dp.quantile("x", [0.25, 0.75], bounds=(0, 16)))
    f = QuerySampler(q, epsilon=EPS_NB).sample(n, rng=seed)
    edges = [3.5, 4.5, 11.5, 12.5]
    lo = np.digitize(f["x_0.25"].to_numpy(), edges)
    hi = np.digitize(f["x_0.75"].to_numpy(), edges)
    return Counter(zip(lo.tolist(), hi.tolist(), strict=True))


def test_multi_quantile_neighbour_histogram_stays_within_e_to_the_epsilon() -> None:
    """Two levels in one mechanism on a table and on the same table without person P, whose
    K = 4 rows all sit at 12 (above everyone else's 4): every joint output cell's probability
    ratio stays within exp(epsilon). The release's own draws (QuerySampler: the release's
    code, intervals aside), 2,000 per table; cells with >= 100 draws; slack 4 standard errors.
    The correct mechanism reaches a log ratio of about 1.75 of the allowed 2 on the cell
    "upper quantile at 12" (0.11 against 0.019: the bound allows 0.26 with the slack);
    without group privacy (epsilon not divided by K) it is about 5.5 (0.24 against 0.001:
    the bound allows 0.07)."""
    n = 2000
    d, d2 = _nb_cells(True, 1, n), _nb_cells(False, 2, n)
    e = math.exp(EPS_NB)
    for o in set(d) | set(d2):
        if max(d[o], d2[o]) < 100:
            continue
        p, q = d[o] / n, d2[o] / n
        # each estimate within 4 binomial standard errors of its probability
        sp, sq = math.sqrt(p * (1 - p) / n), math.sqrt(max(q * (1 - q), 1 / n) / n)
        assert p <= e * q + 4 * (sp + e * sq), o
        assert q <= e * p + 4 * (sq + e * sp), o


# ----------------------------------------------------------------------------- bounds="auto"


def _bucket_table() -> pl.DataFrame:
    x = [0.0, -0.0, 1.0, 2.0, 3.0, 4.0, 0.5, 0.75, -1.0, -2.0, -3.5, 1023.0, 1024.0, 1025.0]
    x += [1e-300, -1e300, 2.0**-1022, 6.5e7, 100.0, 100.0, float("nan"), None]  # type: ignore[list-item]
    return pl.DataFrame({"x": pl.Series(x, dtype=pl.Float64), "k": list(range(len(x)))})


def test_log2_bucket_counts_equal_brute_force_on_every_engine(
    engine: Callable[[pl.DataFrame], Any],
) -> None:
    """The engine's signed log2 buckets (powers of two, negatives, zeros, tiny and huge values;
    NaN and null left out) counted per bucket equal dpkit.statistics.log2_buckets, and an
    integer column's too."""
    from dpkit.session import _engine as ex
    from dpkit.session._auto import bucket_counts

    df = _bucket_table()
    s = dp.Session(engine(df), schema=df.schema, budget=dp.PureDP(1.0))
    q = s.query().agg(dp.mean("x", bounds="auto"), dp.sum("k", bounds="auto"))
    ctx = q._with_rows(q._context())
    rows = ex.bounded_rows(ctx, None)
    for agg, col in zip(ctx.aggregates, ("x", "k"), strict=True):
        got = bucket_counts(ctx, rows, agg)
        vals = df[col].drop_nulls().drop_nans().to_numpy() if col == "x" else df[col].to_numpy()
        ids, cnt = np.unique(statistics.log2_buckets(vals), return_counts=True)
        np.testing.assert_array_equal(got[0], ids)
        np.testing.assert_array_equal(got[1], cnt)


@pytest.mark.parametrize("lower", [None, -2.0])
def test_tail_step_counts_equal_brute_force_on_every_engine(
    engine: Callable[[pl.DataFrame], Any], lower: float | None
) -> None:
    """With bounds_method="tail" the engine counts each value's candidate index: equal to
    dpkit.statistics.tail_steps (signed without a lower bound; tiny, huge, negative values,
    infinities at the top, NaN and null left out), and an integer column's too."""
    from dpkit.session import _engine as ex
    from dpkit.session._auto import bucket_counts

    df = _bucket_table().with_columns(
        pl.Series("y", [3.5, 0.07, 1e6, float("inf"), -float("inf")] * 4 + [2.0, 9.0])
    )
    s = dp.Session(engine(df), schema=df.schema, budget=dp.PureDP(1.0))
    q = s.query().agg(
        dp.mean("x", bounds="auto", bounds_method="tail", lower=lower),
        dp.sum("k", bounds="auto", bounds_method="tail", lower=lower),
        dp.sum("y", bounds="auto", bounds_method="tail", lower=lower, name="ys"),
    )
    ctx = q._with_rows(q._context())
    rows = ex.bounded_rows(ctx, None)
    for agg, col in zip(ctx.aggregates, ("x", "k", "y"), strict=True):
        got = bucket_counts(ctx, rows, agg)
        vals = df[col].drop_nulls().drop_nans().to_numpy() if col == "x" else df[col].to_numpy()
        vals = np.clip(vals.astype(np.float64), -1.7976931348623157e308, 1.7976931348623157e308)
        ids, cnt = np.unique(statistics.tail_steps(vals, lower), return_counts=True)
        np.testing.assert_array_equal(got[0], ids)
        np.testing.assert_array_equal(got[1], cnt)


def test_session_tail_bounds_use_the_engine_counts_at_the_per_row_epsilon(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A unit keeps k = 2 rows: the tail stage gets the engine's step counts of the bounded
    rows, the public lower bound, and epsilon_b / k per row (bounds_share 0.5 of 2.0 over 2
    rows: 0.5), so each unit is covered by group privacy; the release reports them."""
    import dpkit.statistics as st

    calls: list[dict[str, Any]] = []
    real = st.tail_bounds_from_counts

    def spy(steps: Any, counts: Any, **kw: Any) -> Any:
        calls.append({"steps": steps, "counts": counts, **kw})
        return real(steps, counts, **kw)

    monkeypatch.setattr(st, "tail_bounds_from_counts", spy)
    x = np.random.default_rng(2).pareto(2, 800) * 100
    df = pl.DataFrame({"pid": np.arange(800) // 2, "x": x})
    s = dp.Session(df, privacy_unit="pid", max_rows_per_unit=2, budget=dp.PureDP(5.0), rng=3)
    q = s.query().agg(dp.mean("x", bounds="auto", bounds_method="tail", lower=0.0))
    text = str(q.explain(epsilon=2.0))
    assert "99.9th percentile" in text and "lower bound fixed at 0.0" in text
    rel = q.measure(epsilon=2.0)
    (call,) = calls
    assert call["epsilon"] == 0.5 and call["lower"] == 0.0
    ids, cnt = np.unique(statistics.tail_steps(x, 0.0), return_counts=True)
    np.testing.assert_array_equal(call["steps"], ids)
    np.testing.assert_array_equal(call["counts"], cnt)
    b = rel.bounds["x_mean"]
    assert b.method == "tail" and b.privacy == dp.PureDP(0.5) and b.bounds[0] == 0.0
    assert b.clipped_fraction is None and "n/a (the tail method" in str(rel.plan)
    assert s.accountant.spent == dp.PureDP(2.0)


def test_auto_bounds_with_a_public_lower_bound_search_only_the_upper_one() -> None:
    """lower=0 with the histogram: the lower bound is 0 exactly although every value is far
    above it (the histogram alone would start at the 2**9 bucket); the upper bound is found."""
    x = 600 + np.random.default_rng(4).exponential(100, 3000)
    s = dp.Session(pl.DataFrame({"x": x}), budget=dp.PureDP(5.0), rng=5)
    got = s.query().agg(dp.mean("x", bounds="auto", lower=0.0)).measure(epsilon=2.0)
    free = s.query().agg(dp.mean("x", bounds="auto")).measure(epsilon=2.0)
    assert got.bounds["x_mean"].bounds[0] == 0.0 and free.bounds["x_mean"].bounds[0] == 512.0
    assert got.bounds["x_mean"].bounds[1] >= 1024.0


@pytest.mark.parametrize("kind", ["mean", "sum", "var", "std"])
@pytest.mark.parametrize("method", ["histogram", "tail"])
def test_auto_bounds_on_extreme_values_never_fail_after_the_spend(kind: str, method: str) -> None:
    """Values at the ends of the doubles (and tiny ones), with and without a public lower
    bound: the chosen bounds are kept where the aggregate's lattice exists (within 2**1020,
    2**500 for a variance, and never empty), so every release completes; a variance's
    `lower` past 2**500 is refused before anything is spent. Before the fix, the histogram's
    bounds for 1.7e308 collapsed to one point at the cap and a variance's squares overflowed,
    both raising after the spend."""
    import warnings

    make = getattr(dp, kind)
    for lower in (None, 0.0, -1.7e308):
        for val in (1.7e308, -1.7e308, 1e300, 1e-300):
            s = dp.Session(pl.DataFrame({"x": np.full(50, val)}), budget=dp.PureDP(9.0), rng=1)
            try:
                agg = make("x", bounds="auto", bounds_method=method, lower=lower)
            except dp.ParameterError:
                assert kind in ("var", "std") and lower == -1.7e308
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # a sum of 50 x 1.7e308 is inf
                rel = s.query().agg(agg).measure(epsilon=1.0)
            lo, hi = rel.bounds[agg.name].bounds
            assert lo < hi and s.accountant.spent == dp.PureDP(1.0)


def test_tail_bounds_options_are_checked_before_anything_is_spent() -> None:
    with pytest.raises(dp.ParameterError, match="bounds_method"):
        dp.mean("x", bounds="auto", bounds_method="quantile")
    with pytest.raises(dp.ParameterError, match="bounds='auto' only"):
        dp.sum("x", bounds=(0, 1), lower=0.0)
    with pytest.raises(dp.ParameterError, match="finite"):
        dp.var("x", bounds="auto", lower=float("inf"))
    with pytest.raises(TypeError, match="lower"):
        dp.std("x", bounds="auto", lower="0")


# the law of the chosen upper bound: 400 persons with 2 rows at 40 (bucket [32, 64), always
# passing) and M persons with one row at 100 (bucket [64, 128)), M one below the threshold
EPS_B = 2.0  # the release; the mean's bounds get half (bounds_share) over k = 2 rows: 0.5


def _threshold(eps: float, buckets: int = 4199, beta: float = 1e-6) -> int:
    """Smallest T >= 1 with buckets * P[Z >= T] <= beta, P[Z >= T] = a**T / (1 + a)."""
    a = math.exp(-eps)
    return next(t for t in range(1, 10_000) if buckets * a**t / (1 + a) <= beta)


def test_auto_bounds_upper_bound_follows_the_stated_law() -> None:
    """With bounds_share 0.5 of epsilon 2 over k = 2 rows per person, the histogram runs at
    epsilon 0.5 per row (discrete Laplace scale 2). The bucket [64, 128) holds T - 1 rows, so
    the upper bound is 128 exactly when its noise is >= 1: probability a / (1 + a) with
    a = exp(-0.5), 0.3775 (no other bucket can change it but with probability < 1e-6).
    200 releases: standard error 0.034, tolerance 4 of them (0.14). The epsilon not divided by
    k (or the whole aggregate's share spent on bounds) gives scale 1 and probability ~1.
    The releases' DP clipped fraction (when the upper bound is 64) averages near the true
    (T - 1) / n within 0.03 (each estimate's noise: ~65 noisy buckets of scale 2 over n)."""
    t = _threshold(0.5)
    m = t - 1
    x = [40.0] * 800 + [100.0] * m
    pid = [f"a{i // 2}" for i in range(800)] + [f"b{i}" for i in range(m)]
    df = pl.DataFrame({"pid": pid, "x": x})
    s = dp.Session(df, privacy_unit="pid", max_rows_per_unit=2, budget=dp.PureDP(1e6), rng=9)
    q = s.query().agg(dp.mean("x", bounds="auto", bounds_share=0.5))
    uppers, clipped = [], []
    for _ in range(200):
        rel = q.measure(epsilon=EPS_B)
        b = rel.bounds["x_mean"]
        assert b.privacy == dp.PureDP(0.5) and b.bounds[0] == 32.0
        uppers.append(b.bounds[1])
        if b.bounds[1] == 64.0:
            clipped.append(b.clipped_fraction)
    assert set(uppers) <= {64.0, 128.0}
    a = math.exp(-0.5)
    p = a / (1 + a)
    got = uppers.count(128.0) / len(uppers)
    assert abs(got - p) <= 4 * math.sqrt(p * (1 - p) / len(uppers))
    assert abs(np.mean(clipped) - m / (800 + m)) <= 0.03


def test_auto_bounds_release_reports_bounds_and_spends_once(
    engine: Callable[[pl.DataFrame], Any], to_polars: Callable[[Any], pl.DataFrame]
) -> None:
    """A mean, a variance and a sum with bounds='auto' per group: one accountant entry for the
    whole release; the chosen bounds (global) and their DP clipped fraction in
    QueryRelease.bounds and the executed plan; explain() before the release names the share
    and says the bounds are data-dependent but private; the values are accurate (n = 4000)."""
    rng = np.random.default_rng(3)
    df = pl.DataFrame(
        {"g": rng.choice(["a", "b"], 4000), "x": rng.normal(50, 15, 4000).clip(0, 100)}
    )
    s = dp.Session(engine(df), schema=df.schema, budget=dp.PureDP(10.0), rng=4)
    q = (
        s.query()
        .group_by("g", keys=["a", "b"])
        .agg(
            dp.mean("x", bounds="auto"),
            dp.var("x", bounds="auto", name="v"),
            dp.sum("x", bounds="auto", bounds_share=0.1, name="t"),
        )
    )
    text = str(q.explain(epsilon=3.0))
    assert "bounds (auto)" in text and "data-dependent but differentially private" in text
    rel = q.measure(epsilon=3.0)
    assert s.accountant.spent == dp.PureDP(3.0)
    frame = to_polars(rel.frame)
    assert frame.columns == [
        "g",
        *(f"{n}{x}" for n in ("x_mean", "v", "t") for x in ("", "_low", "_high")),
    ]
    assert set(rel.bounds) == {"x_mean", "v", "t"}
    assert rel.bounds["t"].privacy == dp.PureDP(3.0 / 3 * 0.1)
    for b in rel.bounds.values():
        assert b.bounds[0] >= 0 and 64 <= b.bounds[1] <= 256 and 0 <= b.clipped_fraction < 0.1
    assert "chosen bounds" in str(rel.plan)
    truth = df.group_by("g").agg(pl.col("x").mean()).sort("g")["x"].to_numpy()
    np.testing.assert_allclose(frame["x_mean"].to_numpy(), truth, atol=1.5)


def test_auto_bounds_on_small_data_fall_back_to_public_bounds_and_say_so(
    engine: Callable[[pl.DataFrame], Any], to_polars: Callable[[Any], pl.DataFrame]
) -> None:
    """30 persons with the value 1.0 each, at most 3 rows per person, epsilon 1: the
    histogram runs at 0.5 / 3 per row (scale 6), its threshold is 130, which 30 records
    pass with probability about 3e-8 (and the empty buckets together with at most 1e-6).
    So every release falls back to the public bounds (-1, 1), says so in
    QueryRelease.bounds and the plan's text, and releases a mean within them (a threshold
    lowered until something passes let noise-only buckets choose bounds such as
    (9e74, 1.8e75))."""
    df = pl.DataFrame({"pid": list(range(30)), "v": [1.0] * 30})
    s = dp.Session(
        engine(df), privacy_unit="pid", max_rows_per_unit=3, budget=dp.PureDP(100.0), rng=5
    )
    q = s.query().agg(dp.mean("v", bounds="auto"))
    for _ in range(5):
        rel = q.measure(epsilon=1.0)
        b = rel.bounds["v_mean"]
        assert b.fallback and b.bounds == (-1.0, 1.0) and b.details["passing_buckets"] == 0
        assert b.details["threshold"] == 130
        value = to_polars(rel.frame)["v_mean"][0]
        assert -1.0 <= value <= 1.0
        assert "public fallback bounds, not read from the data" in str(rel.plan)


def test_auto_bounds_are_refused_where_they_do_not_apply() -> None:
    with pytest.raises(TypeError, match="pair"):
        dp.median("x", bounds="auto")
    with pytest.raises(TypeError, match="'auto'"):
        dp.mean("x", bounds="automatic")
    with pytest.raises(dp.ParameterError, match="bounds_share"):
        dp.mean("x", bounds="auto", bounds_share=1.0)
    s = dp.Session(pl.DataFrame({"x": [1.0, 2.0]}), budget=dp.PureDP(1.0))
    with pytest.raises(dp.ParameterError, match="batched"):
        QuerySampler(s.query().agg(dp.mean("x", bounds="auto")), epsilon=1.0)
    assert s.accountant.spent == dp.PureDP(0.0)


# ------------------------------------------------------------------ max_rows_per_unit="auto"


def _people(n: int = 3000) -> pl.DataFrame:
    rng = np.random.default_rng(8)
    rows = rng.geometric(0.3, 600)  # rows per person: 1, 2, ... (a long tail)
    pid = np.repeat(np.arange(600), rows)[:n]
    return pl.DataFrame(
        {
            "pid": pid,
            "city": rng.choice(["Brest", "Lyon", "Paris"], pid.size),
            "x": rng.uniform(0, 10, pid.size),
        }
    )


def test_auto_max_rows_is_the_statistics_bound_on_every_engine(
    engine: Callable[[pl.DataFrame], Any], to_polars: Callable[[Any], pl.DataFrame]
) -> None:
    """max_rows_per_unit='auto': the engine's histogram of rows per person equals the brute
    force, the release's bound is dpkit.statistics.contribution_bound_from_counts of it at
    the stated share of epsilon with the same seed (its law is tested there), the bounding
    then keeps that many rows (the plan says so), and private keys with max_groups_per_unit
    keep working (one accountant entry, the share shown by explain())."""
    from dpkit.session._auto import rows_per_unit

    df = _people()
    data = engine(df)
    per = df.group_by("pid").len()["len"].to_numpy()
    want_rows, want_units = np.unique(per, return_counts=True)
    for seed in (1, 2):
        s = dp.Session(
            data,
            schema=df.schema,
            privacy_unit="pid",
            max_rows_per_unit="auto",
            max_groups_per_unit=2,
            max_rows_level=0.9,
            budget=dp.ApproxDP(10.0, 1e-5),
            rng=seed,
        )
        q = s.query().group_by("city").agg(dp.count(), dp.mean("x", bounds=(0, 10)))
        got_rows, got_units = rows_per_unit(q._with_rows(q._context()))
        np.testing.assert_array_equal(got_rows, want_rows)
        np.testing.assert_array_equal(got_units, want_units)
        assert "max_rows_per_unit='auto'" in str(q.explain(epsilon=2.0, delta=1e-6))
        rel = q.measure(epsilon=2.0, delta=1e-6, noise="laplace")
        want = statistics.contribution_bound_from_counts(
            want_rows,
            want_units,
            epsilon=0.2,
            level=0.9,
            max_bound=1000,
            rng=seed,
            method="threshold",
        )
        assert rel.contribution.details == want.details
        assert rel.contribution.bound == want.bound == rel.plan.max_rows
        assert rel.plan.max_groups == min(2, want.bound)
        assert rel.plan.rows is not None and rel.plan.rows.chosen == want.bound
        assert [sp.charge for sp in s.accountant.history] == [dp.ApproxDP(2.0, 1e-6)]
        frame = to_polars(rel.frame)
        assert set(frame["city"].to_list()) <= {"Brest", "Lyon", "Paris"}


def test_auto_max_rows_settings_are_validated() -> None:
    df = _people(100)
    with pytest.raises(dp.ParameterError, match="max_rows_share"):
        dp.Session(
            df,
            privacy_unit="pid",
            max_rows_per_unit="auto",
            max_rows_share=0.0,
            budget=dp.PureDP(1.0),
        )
    s = dp.Session(df, privacy_unit="pid", max_rows_per_unit="auto", budget=dp.PureDP(1.0))
    with pytest.raises(dp.ParameterError, match="'auto'"):
        s.query(max_rows_per_unit="many")
    with pytest.raises(TypeError, match="max_rows_cap"):
        s.query(max_rows_cap=2.5)  # type: ignore[arg-type]
    # a level the 2**20 denominator would round to 0 is refused, not silently changed
    with pytest.raises(dp.ParameterError, match="`max_rows_level` 1e-09 is too close to 0"):
        s.query(max_rows_level=1e-9)
    with pytest.raises(dp.ParameterError, match=r"`q` 0\.999999999 is too close to 1"):
        dp.quantile("x", [0.5, 1 - 1e-9], bounds=(0, 1))
    assert s.query(max_rows_per_unit=3).agg(dp.count()).explain(epsilon=1.0).rows is None


def test_explain_with_auto_max_rows_says_its_figures_are_the_worst_case() -> None:
    """Before a release chooses max_rows_per_unit, explain() computes every figure at the
    cap of 'auto' and says so; the executed plan, with the chosen bound, does not."""
    s = dp.Session(
        _people(), privacy_unit="pid", max_rows_per_unit="auto", budget=dp.PureDP(10.0), rng=3
    )
    q = s.query().agg(dp.count(), dp.median("x", bounds=(0, 10)))
    before = str(q.explain(epsilon=1.0))
    assert "worst case" in before and "max_rows_per_unit = 1000 (the cap of 'auto')" in before
    rel = q.measure(epsilon=1.0)
    assert rel.plan.rows is not None and rel.plan.rows.chosen is not None
    assert "worst case" not in str(rel.plan)
    fixed = dp.Session(_people(), privacy_unit="pid", max_rows_per_unit=3, budget=dp.PureDP(1.0))
    assert "worst case" not in str(fixed.query().agg(dp.count()).explain(epsilon=1.0))


def test_auto_stages_and_statistics_split_the_budget_exactly() -> None:
    """With max_rows_per_unit='auto' (share 0.1) and bounds='auto' (share 0.5 of the mean's
    share, the default): the contribution stage runs at 0.1 epsilon; the mean's bounds at
    0.9 epsilon * 1/2 * 0.5 / k; every noisy part's discrete Laplace scale is its sensitivity over
    0.9 epsilon times its share; and the shares of the rest add up to exactly 1 (sequential
    composition within the cost charged)."""
    from fractions import Fraction

    df = _people()
    s = dp.Session(df, privacy_unit="pid", max_rows_per_unit="auto", budget=dp.PureDP(10.0), rng=5)
    q = s.query().agg(dp.count(), dp.mean("x", bounds="auto"))
    rel = q.measure(epsilon=2.0)
    plan = rel.plan
    k = plan.max_rows
    assert plan.rows is not None and plan.rows.epsilon == 0.2 and plan.rows.chosen == k
    rest = Fraction(2) * (1 - Fraction(0.1))  # the share as given (a float), exactly
    (bp,) = plan.bounds
    assert bp.share == Fraction(1, 2) * Fraction(1, 2)
    assert bp.epsilon == float(rest * bp.share / k)
    total = bp.share
    for p in plan.parts:
        assert p.noise.step == 1
        assert p.noise.scale == Fraction(p.sensitivity) / (rest * p.share)
        total += p.share
    assert total == 1


# ----------------------------------------------------------------------------- many groups


def test_grouped_quantiles_are_the_statistics_release_of_each_group(
    engine: Callable[[pl.DataFrame], Any], to_polars: Callable[[Any], pl.DataFrame]
) -> None:
    """Per group (public keys, sorted; one key without rows), the released quantiles and
    intervals are exactly ``quantiles_from_counts`` on that group's counts with the same
    seeded source, in key order: the Session checks the parameters once
    (``counts_releaser``) and slices each group's summary from the engine's counts."""
    rng = np.random.default_rng(5)
    n = 900
    df = pl.DataFrame(
        {
            "g": rng.integers(0, 6, n),
            "x": np.round(rng.normal(50, 15, n).clip(0, 100) * 8) / 8,
        }
    )
    keys = [0, 1, 2, 3, 4, 5, 7]  # 7 has no rows: its summary is empty
    s = dp.Session(engine(df), schema=df.schema, budget=dp.PureDP(4.0), rng=8)
    q = s.query().group_by("g", keys=keys).agg(dp.quantile("x", [0.1, 0.5, 0.9], bounds=(0, 100)))
    got = to_polars(q.release(epsilon=1.0)).sort("g")
    source = as_source(8)
    for key, row in zip(keys, got.iter_rows(named=True), strict=True):
        assert row["g"] == key
        xs = df.filter(pl.col("g") == key)["x"].to_numpy().astype(np.float64)
        pts, cnt = np.unique(xs, return_counts=True)
        rel = statistics.quantiles_from_counts(
            pts,
            cnt,
            [0.1, 0.5, 0.9],
            epsilon=1.0,
            bounds=(0, 100),
            interval_share=0.25,
            rng=source,
        )
        for j, lv in enumerate((0.1, 0.5, 0.9)):
            assert row[f"x_{lv:g}"] == rel.values[j]
            assert row[f"x_{lv:g}_low"] == rel.value_intervals[j, 0]
            assert row[f"x_{lv:g}_high"] == rel.value_intervals[j, 1]


def _summaries_oracle(by: list[str], table: pl.DataFrame, counts: pl.DataFrame, unit: float):
    """The per-group summaries as one gather per group (the definition)."""
    index = {k: g for k, g in counts.group_by(by, maintain_order=True)}
    out = []
    for key in table.select(by).rows():
        sub = index.get(key)
        if sub is None:
            out.append((np.zeros(0), np.zeros(0, dtype=np.int64)))
        else:
            pts = sub["__dpkit_bucket"].to_numpy().astype(np.float64) * unit
            out.append((pts, sub["__dpkit_n"].to_numpy().astype(np.int64)))
    return out


@pytest.mark.parametrize("shuffled", [False, True])
def test_group_summaries_are_each_groups_counts(shuffled: bool) -> None:
    """The slices of the engine's sorted counts are each group's rows, keys with nulls and
    several columns included; unsorted counts take the gather per group."""
    from types import SimpleNamespace

    from dpkit.session import _engine as ex
    from dpkit.session._draw import _summaries

    rng = np.random.default_rng(3)
    n = 400
    counts = pl.DataFrame(
        {
            "a": pl.Series(rng.choice([None, 1, 2, 3], n).tolist(), dtype=pl.Int64),
            "b": rng.choice(["u", "v"], n).tolist(),
            ex.BUCKET: rng.integers(-50, 50, n),
            "__dpkit_n": pl.Series(rng.integers(1, 9, n), dtype=pl.UInt32),
        }
    ).unique(subset=["a", "b", ex.BUCKET], keep="first")
    counts = counts.sort(["a", "b", ex.BUCKET], nulls_last=True)
    if shuffled:
        counts = counts.sample(fraction=1.0, shuffle=True, seed=4)
    table = pl.DataFrame({"a": [3, None, 1, 9, 2, 1], "b": ["v", "u", "u", "u", "v", "v"]})
    ctx = SimpleNamespace(by=("a", "b"))
    got = _summaries(ctx, table, counts, 0.25)  # type: ignore[arg-type]
    want = _summaries_oracle(["a", "b"], table, counts, 0.25)
    assert len(got) == len(want)
    for (gp, gc), (wp, wc) in zip(got, want, strict=True):
        assert gp.dtype == wp.dtype and gc.dtype == wc.dtype
        assert np.array_equal(gp, wp) and np.array_equal(gc, wc)
    assert sum(c.size for _p, c in got) > 0
