"""Private key selection with its pre-threshold: the plan's threshold, cut and deltas, what
reaches Python, and the law of a group that one person lifts to the cut.

A candidate group whose exact count of distinct units is below the cut ``T`` is dropped in
the engine; the others pass if ``n + Z >= tau``. One person decides whether a group is a
candidate only for its groups of exactly ``T`` units, each released with probability
``P[T + Z >= tau]``, which the plan keeps at most ``delta_select / m``
(``dpkit.session._plan.selection_threshold``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl
import pytest

import dpkit as dp
from dpkit.accounting import zcdp_to_approx
from dpkit.session import _engine

# -------------------------------------------------------------------- exact tails (oracles)


def _laplace_tail(t: float, j: int) -> float:
    """P[Z >= j] for P[Z = z] ~ exp(-|z| / t): q**j / (1 + q), q = exp(-1/t) (j >= 1)."""
    if j <= 0:
        return 1.0
    q = math.exp(-1 / t)
    return q**j / (1 + q)


def _gaussian_tail(s2: float, j: int) -> float:
    """P[Z >= j] for the discrete Gaussian N_Z(0, s2), summed directly (j >= 1)."""
    if j <= 0:
        return 1.0
    s = math.sqrt(s2)
    z = np.arange(-int(40 * s) - j - 40, int(40 * s) + j + 40)
    w = np.exp(-(z.astype(np.float64) ** 2) / (2 * s2))
    return float(w[z >= j].sum() / w.sum())


def _plan(**kw: Any) -> Any:
    """The plan of a count per group with private keys on a small table (10 units)."""
    m = kw.pop("m")
    k = kw.pop("k", max(m, 2))
    pre = kw.pop("pre_threshold", None)
    df = pl.DataFrame({"pid": list(range(10)), "g": ["a", "b"] * 5})
    s = dp.Session(
        df,
        privacy_unit="pid",
        max_rows_per_unit=k,
        max_groups_per_unit=m,
        budget=dp.ApproxDP(9, 0.5),
    )
    return s.query().group_by("g", pre_threshold=pre).agg(dp.count()).explain(**kw)


_CONFIGS = [
    (kind, m, eps, delta)
    for kind in ("laplace", "gaussian")
    for m in (1, 2, 5)
    for eps in (0.1, 0.31, 0.5, 0.77, 1.0, 1.9, 3.0)
    for delta in (1e-9, 1e-6, 3e-4, 0.05)
]


def test_threshold_and_cut_keep_the_selection_within_its_delta() -> None:
    """For 168 budgets (Laplace and Gaussian noise, m = 1, 2, 5 groups per unit, epsilon 0.1
    to 3, delta 1e-9 to 0.05): a group of exactly T units passes with probability at most
    delta_select / m, computed here from the exact law of the noise (closed form for the
    discrete Laplace, a direct sum for the discrete Gaussian); tau is the smallest such
    integer (for Gaussian noise, the smallest for the rigorous tail bound the plan uses); the
    default cut is 1 + margin // 8, margin = tau_1 - 1 of no cut; the deltas the plan reports
    are these sums; and the budget's delta is the selection's plus the Gaussian noise's."""
    from dpkit.noise import gaussian_tail

    crossed = 0
    for kind, m, eps, delta in _CONFIGS:
        plan = _plan(m=m, epsilon=eps, delta=delta, noise=kind)
        sel, budget = plan.selection, plan.budget
        scale = float(sel.noise.scale)
        tail = _laplace_tail if kind == "laplace" else _gaussian_tail
        per_key = sel.delta / m
        assert sel.keys_per_unit == m
        # the delta split: Laplace noise is pure, the selection takes all of delta; Gaussian:
        # the zCDP noise converts to (eps, delta - delta_select)
        if kind == "laplace":
            assert sel.delta == delta
        else:
            assert 0 < sel.delta < delta
            assert zcdp_to_approx(float(budget.rho), delta - sel.delta).epsilon <= eps * (1 + 1e-9)
        # tau_1: the threshold without a cut, from the exact law
        if kind == "laplace":
            tau1 = 1 + next(j for j in range(1, 10**6) if tail(scale, j) <= per_key)
        else:
            tau1 = 1 + next(
                j for j in range(1, 10**6) if gaussian_tail(sel.noise.scale, j) <= per_key
            )
        assert sel.cut == max(1, 1 + (tau1 - 1) // 8), (kind, m, eps, delta)
        crossed += sel.cut > 1
        t, tau = sel.cut, sel.threshold
        exact = m * tail(scale, tau - t)
        assert exact <= sel.delta * (1 + 1e-9), (kind, m, eps, delta, exact, sel.delta)
        if kind == "laplace":  # tau is the smallest integer that holds the delta
            assert m * tail(scale, tau - 1 - t) > sel.delta, (m, eps, delta)
            assert tau == tau1 + t - 1
        else:  # the smallest for the rigorous bound the plan holds it with
            assert m * gaussian_tail(sel.noise.scale, tau - 1 - t) > sel.delta, (m, eps, delta)
        # what the plan reports: the bound it holds and the part the cut adds (exact for
        # Laplace; from the rigorous tail bound, so at least the exact law, for Gaussian)
        assert exact * (1 - 1e-9) <= sel.delta_bound <= sel.delta
        assert 0 <= sel.delta_cut <= sel.delta_bound
        if kind == "laplace":
            assert sel.delta_bound == pytest.approx(exact, rel=1e-6)
            extra = m * (tail(scale, tau - t) - tail(scale, tau - 1))
            assert sel.delta_cut == pytest.approx(extra, rel=1e-6, abs=1e-300)
    assert crossed > len(_CONFIGS) // 2  # most budgets get a cut


def test_explain_shows_the_cut_and_its_delta() -> None:
    """epsilon 1 (1/2 for the selection), delta 1e-6, m = 2: scale t = 4, the margin of no
    cut is the smallest j with e^(-j/4) / (1 + e^(-1/4)) <= 5e-7, j = 56 (tau_1 = 57), so
    the default cut is 1 + 56 // 8 = 8 and tau = 57 + 7 = 64."""
    plan = _plan(m=2, epsilon=1.0, delta=1e-6, noise="laplace")
    sel = plan.selection
    assert sel.cut == 8 and sel.threshold == 64
    text = str(plan)
    assert "fewer than 8 distinct units" in text and "dropped inside the engine" in text
    assert f"{sel.delta_cut:.4g} pays for this deterministic drop" in text
    assert "threshold is 7 higher" in text
    shown = f"held by 8 units appears] summed over a unit's <= 2 group(s): {sel.delta_bound:.4g}"
    assert shown in text
    off = _plan(m=2, epsilon=1.0, delta=1e-6, noise="laplace", pre_threshold=1)
    assert off.selection.cut == 1 and off.selection.threshold == 57
    assert "pre-threshold" not in str(off) and "held by one unit" in str(off)
    assert off.selection.delta_cut == 0.0
    high = _plan(m=2, epsilon=1.0, delta=1e-6, noise="laplace", pre_threshold=20)
    assert high.selection.cut == 20 and high.selection.threshold == 57 + 19


@pytest.mark.parametrize(
    ("value", "error", "match"),
    [
        (0, dp.ParameterError, "pre_threshold"),
        (2.5, TypeError, "pre_threshold"),
        (True, TypeError, "pre_threshold"),
        (2**60, dp.ParameterError, "pre_threshold"),
    ],
)
def test_a_bad_pre_threshold_is_refused(value: Any, error: type, match: str) -> None:
    s = dp.Session(pl.DataFrame({"g": ["a"]}), budget=dp.ApproxDP(1.0, 1e-6))
    with pytest.raises(error, match=match):
        s.query().group_by("g", pre_threshold=value)


def test_a_pre_threshold_with_public_keys_is_refused() -> None:
    s = dp.Session(pl.DataFrame({"g": ["a"]}), budget=dp.ApproxDP(1.0, 1e-6))
    with pytest.raises(dp.ParameterError, match="privately chosen keys only"):
        s.query().group_by("g", keys=["a"], pre_threshold=3)


# --------------------------------------------------------------- what reaches Python


def _ladder(rows_per_unit: int) -> pl.DataFrame:
    """Group ``gN`` held by N distinct units (N = 1 .. 12), each with ``rows_per_unit`` rows
    in it: 78 units."""
    pid, g = [], []
    unit = 0
    for n in range(1, 13):
        for _ in range(n):
            pid += [unit] * rows_per_unit
            g += [f"g{n:02d}"] * rows_per_unit
            unit += 1
    return pl.DataFrame({"pid": pid, "g": g})


@pytest.mark.parametrize(("rows", "reused"), [(2, False), (1, True)])
def test_only_candidates_at_or_above_the_cut_reach_python(
    engine: Callable[[pl.DataFrame], Any],
    monkeypatch: pytest.MonkeyPatch,
    rows: int,
    reused: bool,
) -> None:
    """Groups of 1 .. 12 units, cut 5: the per-group frame the engine hands to Python has one
    row per group of at least 5 units (8 rows), each with its exact count, on every engine;
    with one row per unit the count aggregate doubles as the selection count and is cut."""
    seen: list[pl.DataFrame] = []
    collect = _engine.Guarded.collect

    def recording(self: Any, frame: Any) -> pl.DataFrame:
        out = collect(self, frame)
        seen.append(out)
        return out

    monkeypatch.setattr(_engine.Guarded, "collect", recording)
    s = dp.Session(
        engine(_ladder(rows)),
        privacy_unit="pid",
        max_rows_per_unit=rows,
        budget=dp.ApproxDP(9, 0.5),
    )
    q = s.query().group_by("g", pre_threshold=5).agg(dp.count())
    rel = q.measure(epsilon=8.0, delta=0.1, noise="laplace")
    sel = rel.plan.selection
    assert sel.cut == 5 and (sel.reuse is not None) == reused
    column = "__dpkit_a0_n" if reused else "__dpkit_select"
    frames = [f for f in seen if column in f.columns]
    assert len(frames) == 1
    got = frames[0].sort("g")
    assert got["g"].to_list() == [f"g{n:02d}" for n in range(5, 13)]
    expected = [n * rows for n in range(5, 13)] if reused else list(range(5, 13))
    assert got[column].to_list() == expected
    # nothing else reached Python with a row per group (only one-row probes of the table)
    assert all(f.height <= 1 for f in seen if column not in f.columns)


# ---------------------------------------------------------- the neighbour at the cut

B = 20_000  # blocks: one release gives 20,000 independent draws of a block's output
EPS, DELTA = 1.0, 0.1


def _blocks(cut: int, with_p: bool) -> pl.DataFrame:
    """Per block i: group A_i held by cut - 1 persons, plus person P_i (so A_i has exactly
    ``cut`` units with P_i and ``cut - 1`` without)."""
    i = pl.int_range(B, eager=True)
    others = pl.DataFrame({"i": i}).join(pl.DataFrame({"j": range(cut - 1)}), how="cross")
    rows = others.select(pid=pl.format("{}-o{}", "i", "j"), g=pl.format("A{}", "i"))
    if with_p:
        p = pl.DataFrame({"i": i}).select(pid=pl.format("{}-P", "i"), g=pl.format("A{}", "i"))
        rows = pl.concat([rows, p])
    return rows


def _release(data: Any, pre: int | None, seed: int) -> Any:
    s = dp.Session(
        data,
        privacy_unit="pid",
        max_rows_per_unit=2,
        max_groups_per_unit=2,
        budget=dp.ApproxDP(10.0, 0.5),
        rng=seed,
    )
    q = s.query().group_by("g", pre_threshold=pre).agg(dp.count())
    return q.measure(epsilon=EPS, delta=DELTA, noise="laplace")


@pytest.mark.parametrize(
    ("engine_name", "pre"),
    [
        ("polars", None),
        ("polars", 4),
        ("duckdb", None),
        ("duckdb", 4),
        pytest.param("spark", None, marks=pytest.mark.spark),
    ],
)
def test_a_group_lifted_to_the_cut_by_one_person_appears_at_the_stated_rate(
    engine_name: str, pre: int | None, request: pytest.FixtureRequest
) -> None:
    """With person P_i, group A_i has exactly T units and is released with probability
    P[T + Z >= tau] = q**(tau - T) / (1 + q) (selection noise P[Z = z] ~ q**|z|,
    q = exp(-1/4): epsilon 1/2 for the selection over m = 2 groups), at most
    delta_select / m = 0.05; without P_i it has T - 1 units and never appears (dropped in
    the engine). 20,000 blocks per release; tolerance 4 binomial standard errors
    (about 0.006 at p = 0.046). A threshold not raised for the cut gives p = 0.059 (T = 2)
    or 0.098 (T = 4); a cut one too high, p = 0; one too low, A_i without P_i appears."""
    T = 2 if pre is None else pre
    convert: Callable[[pl.DataFrame], Any] = lambda df: df  # noqa: E731
    if engine_name == "duckdb":
        import duckdb

        convert = lambda df: duckdb.connect().from_arrow(df.to_arrow())  # noqa: E731
    elif engine_name == "spark":
        convert = request.getfixturevalue("to_spark")
    back = request.getfixturevalue("to_polars")
    rel = _release(convert(_blocks(T, True)), pre, seed=11)
    sel = rel.plan.selection
    assert sel.cut == T and sel.keys_per_unit == 2 and float(sel.noise.scale) == 4.0
    p = _laplace_tail(4.0, sel.threshold - T)
    assert p <= sel.delta / 2
    seen = back(rel.frame).height / B
    assert abs(seen - p) <= 4 * math.sqrt(p * (1 - p) / B), (seen, p)
    without = _release(convert(_blocks(T, False)), pre, seed=12)
    assert back(without.frame).height == 0
