"""The plan's text says when the noise is below the lattice step (a release mostly exact)."""

from __future__ import annotations

import polars as pl

import dpkit as dp


def _query(epsilon_budget: float) -> dp.Session:
    df = pl.DataFrame({"a": [1, 2, 3, 4, 5] * 10, "g": ["x", "y"] * 25})
    return dp.Session(df, budget=dp.PureDP(epsilon_budget))


def test_explain_says_when_the_noise_is_below_the_lattice_step() -> None:
    # epsilon 1e300: the discrete Laplace noise is zero with probability 1 - 1e-27 (its scale
    # is floored at 1/64 step), counts and sums come back exact with intervals of width 0
    s = _query(1e301)
    q = s.query().group_by("g", keys=["x", "y"]).agg(dp.count(), dp.sum("a", bounds=(0, 10)))
    text = str(q.explain(epsilon=1e300))
    assert "noise below the lattice step for count, a_sum" in text
    out = q.release(epsilon=1e300)
    assert out["count"].to_list() == [25, 25] and out["count_low"].to_list() == [25, 25]
    # zCDP at a huge rho: the discrete Gaussian's variance is floored at 1/4 step squared,
    # zero with probability 0.79
    z = dp.Session(pl.DataFrame({"a": [1.0] * 20}), budget=dp.ZCDP(1e300))
    assert "noise below the lattice step for count" in str(
        z.query().agg(dp.count()).explain(rho=1e299)
    )


def test_explain_is_silent_at_ordinary_budgets() -> None:
    s = _query(10.0)
    assert "lattice step" not in str(s.query().agg(dp.count()).explain(epsilon=1.0))
    z = dp.Session(pl.DataFrame({"a": [1.0] * 20}), budget=dp.ZCDP(1.0))
    assert "lattice step" not in str(z.query().agg(dp.count()).explain(rho=0.5))
