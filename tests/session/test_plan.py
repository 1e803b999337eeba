"""The privacy plan of a release: each quantile stage is charged by what it is.

A quantile aggregate runs stages of two kinds (``dpkit.statistics.quantile_release``): exponential
mechanisms (the values, the interval helpers), which are epsilon-bounded range and so
``epsilon**2 / 8``-zCDP (Cesar and Rogers 2021), and discrete Laplace noise (the histogram of
method ``"cdf"``, the interval cell counts), which is pure epsilon-DP and only
``epsilon**2 / 2``-zCDP (Bun and Steinke 2016). Under a zCDP budget the stages' costs must add
up to at most the aggregate's share of rho. The tests read the epsilons the mechanisms are
actually called with and charge each by its kind from this table, never from the code under
test.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import polars as pl
import pytest
from scipy.special import logsumexp

import dpkit as dp
import dpkit.noise.laws as laws_module
import dpkit.statistics.quantile_release as quantiles_module
from dpkit.accounting import approx_to_zcdp
from dpkit.session import _plan
from dpkit.session.batch import QuerySampler

#: zCDP of each stage at epsilon: rho = epsilon**2 / DIVISOR[stage]
DIVISOR = {"values": 8, "helpers": 8, "histogram": 2, "counts": 2}


def _frame(n: int = 600) -> pl.DataFrame:
    rng = np.random.default_rng(4)
    return pl.DataFrame(
        {
            "pid": np.arange(n) // 2,  # two rows per person
            "i": pl.Series(rng.integers(0, 50, n), dtype=pl.Int64),
            "x": rng.uniform(0, 100, n),
        }
    )


class StageSpy:
    """Records the epsilon every quantile stage is run at (per record), by stage."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[tuple[str, Fraction]] = []
        mod = quantiles_module
        for name, stage in (
            ("approximate_quantiles", "values"),
            ("independent_quantiles", "values"),
            ("joint_exp", "values"),
        ):
            monkeypatch.setattr(mod, name, self._values(getattr(mod, name), stage))
        cdf = mod.cdf_quantiles

        def cdf_spy(counts: Any, measure: Any, levels: Any, epsilon: Any, *a: Any) -> Any:
            self.calls.append(("histogram", Fraction(epsilon)))
            return cdf(counts, measure, levels, epsilon, *a)

        interval = mod.interval_stage

        def interval_spy(*a: Any, epsilon_helpers: Any, epsilon_counts: Any, **kw: Any) -> Any:
            self.calls.append(("helpers", Fraction(epsilon_helpers)))
            self.calls.append(("counts", Fraction(epsilon_counts)))
            kw.update(epsilon_helpers=epsilon_helpers, epsilon_counts=epsilon_counts)
            return interval(*a, **kw)

        monkeypatch.setattr(mod, "cdf_quantiles", cdf_spy)
        monkeypatch.setattr(mod, "interval_stage", interval_spy)

    def _values(self, func: Any, stage: str) -> Any:
        def spy(counts: Any, measure: Any, levels: Any, epsilon: Any, source: Any) -> Any:
            self.calls.append((stage, Fraction(epsilon)))
            return func(counts, measure, levels, epsilon, source)

        return spy

    def rho(self, k: int) -> Fraction:
        """The zCDP of one group's release for a unit of ``k`` rows, from the stages' kinds."""
        stages = dict(self.calls)
        assert len(stages) == len(self.calls)  # one group: each stage ran once
        return sum((Fraction(k) * e) ** 2 / DIVISOR[s] for s, e in stages.items())


# (column, levels, method asked for, method run): the integer column on its small grid gets
# the noisy histogram by default; the float column the exponential mechanisms
QUERIES = [
    ("i", [0.25, 0.5, 0.75], "auto", "cdf"),
    ("i", 0.5, "cdf", "cdf"),
    ("x", [0.25, 0.5, 0.75], "auto", "aq"),
    ("x", 0.5, "auto", "exponential"),
    ("x", [0.3, 0.7], "joint", "joint"),
    ("x", [0.3, 0.7], "independent", "independent"),
]


@pytest.mark.parametrize("interval_share", [0.05, 0.25, 0.5, 0.7, 0.95])
@pytest.mark.parametrize(("column", "levels", "method", "runs"), QUERIES)
def test_quantile_stages_cost_at_most_their_share_of_rho(
    monkeypatch: pytest.MonkeyPatch,
    interval_share: float,
    column: str,
    levels: Any,
    method: str,
    runs: str,
) -> None:
    """A count and a quantile aggregate at rho = 0.3, two rows per person: the quantile's
    stages, at the epsilons the mechanisms are called with, cost at most its half of rho
    (for a person's two rows in one group) whatever the interval share, and no less than
    that half less 1e-9 (the plan spends the share; each epsilon is only rounded down to a
    float). A stage charged by the wrong rule (a histogram or the cell counts as an
    exponential mechanism: 4x its cost) or 10% off breaks one side or the other."""
    monkeypatch.setattr(_plan, "QUANTILE_INTERVAL_SHARE", interval_share)
    spy = StageSpy(monkeypatch)
    s = dp.Session(_frame(), privacy_unit="pid", max_rows_per_unit=2, budget=dp.ZCDP(1.0))
    q = s.query().agg(dp.count(), dp.quantile(column, levels, bounds=(0, 100), method=method))
    rel = q.measure(rho=0.3, rng=1)
    assert rel.plan.quantiles[0].method == runs
    half = Fraction(0.3) / 2
    cost = spy.rho(k=2)
    assert cost <= half
    assert cost >= half * (1 - Fraction(1, 10**9))
    stages = {name for name, _e in spy.calls}
    assert stages == ({"histogram"} if runs == "cdf" else {"values", "helpers", "counts"})


@pytest.mark.parametrize(("column", "levels", "method", "runs"), QUERIES)
def test_laplace_budgets_split_the_quantile_epsilon_by_the_interval_share(
    monkeypatch: pytest.MonkeyPatch, column: str, levels: Any, method: str, runs: str
) -> None:
    """Pure budgets: the stages' epsilons add up to the aggregate's epsilon / k exactly (one
    epsilon, composed sequentially), the values taking 3/4 and the interval stage 1/4 (a third
    of it on helpers), or the whole of it on the histogram."""
    spy = StageSpy(monkeypatch)
    s = dp.Session(_frame(), privacy_unit="pid", max_rows_per_unit=2, budget=dp.PureDP(9.0))
    q = s.query().agg(dp.count(), dp.quantile(column, levels, bounds=(0, 100), method=method))
    q.release(epsilon=3.0, rng=1)
    got = dict(spy.calls)
    whole = Fraction(3, 2) / 2  # half of epsilon, for two rows
    if runs == "cdf":
        assert got == {"histogram": whole}
    else:
        assert got == {"values": whole * 3 / 4, "helpers": whole / 12, "counts": whole / 6}


def test_cdf_quantiles_under_a_delta_budget_get_the_pure_dp_epsilon() -> None:
    """``dpkit query adult --epsilon 1 --delta 1e-6 --quantile Age:... --count``: rho =
    approx_to_zcdp(1, 1e-6) = 0.02436, half of it for the quantiles; the integer ages on
    (0, 100) run the noisy histogram, pure DP, so epsilon = sqrt(2 rho / 2) = 0.1561 per group
    (an exponential mechanism would be allowed sqrt(8 rho / 2) = 0.3121)."""
    df = pl.DataFrame({"Age": pl.Series(np.arange(17, 91), dtype=pl.Int64)})
    q = dp.Session(df, budget=dp.ApproxDP(1.0, 1e-6)).query()
    q = q.agg(dp.count(), dp.quantile("Age", [0.25, 0.5, 0.75], bounds=(0, 100)))
    qp = q.explain(epsilon=1.0, delta=1e-6).quantiles[0]
    rho = approx_to_zcdp(1.0, 1e-6).rho
    assert qp.method == "cdf"
    assert qp.epsilon == pytest.approx(math.sqrt(2 * rho / 2), rel=1e-12)
    assert round(qp.epsilon, 4) == 0.1561
    assert (Fraction(qp.epsilon) ** 2 / 2) <= Fraction(rho) / 2


def test_explain_names_each_quantile_stage_and_its_rule() -> None:
    df = _frame()
    s = dp.Session(df, budget=dp.ZCDP(1.0))
    q = s.query().agg(
        dp.quantile("i", [0.25, 0.75], bounds=(0, 100)),
        dp.quantile("x", [0.25, 0.75], bounds=(0, 100), name="xq"),
    )
    text = str(q.explain(rho=0.5))
    assert "quantiles cdf" in text and "quantiles aq" in text
    assert "noisy histogram 0.7071 (discrete Laplace)" in text  # sqrt(2 * 0.25)
    # values sqrt(8 * 0.25 * 3/4), helpers sqrt(8 * 0.25 / 12), counts sqrt(2 * 0.25 / 6)
    assert "values 1.225 (exponential mechanism)" in text
    assert "interval helpers 0.4082 (exponential mechanism)" in text
    assert "interval counts 0.2887 (discrete Laplace)" in text
    assert "epsilon**2 / 8 (bounded range), discrete Laplace epsilon**2 / 2" in text
    pure = str(q.explain(epsilon=1.0))
    assert "noisy histogram 0.5 (discrete Laplace)" in pure and "zCDP" not in pure


def test_the_release_runs_the_method_its_plan_charged(monkeypatch: pytest.MonkeyPatch) -> None:
    """Execution never resolves the method again: it runs the plan's (the method that was
    charged). A plan that resolved the integer column's quantiles to ApproximateQuantiles
    gets the exponential mechanisms and the interval stage, not the noisy histogram that
    the statistics layer's own default would pick."""
    q = (
        dp.Session(_frame(), budget=dp.ZCDP(1.0))
        .query()
        .agg(dp.quantile("i", [0.25, 0.75], bounds=(0, 100)))
    )
    spy = StageSpy(monkeypatch)
    assert q.measure(rho=0.5, rng=3).plan.quantiles[0].method == "cdf"
    assert [name for name, _e in spy.calls] == ["histogram"]
    spy.calls.clear()
    monkeypatch.setattr(_plan, "quantile_method", lambda *a, **kw: "aq")
    assert q.measure(rho=0.5, rng=3).plan.quantiles[0].method == "aq"
    assert [name for name, _e in spy.calls] == ["values", "helpers", "counts"]


# --------------------------------------------------------------- exact privacy of a release

RHO = 0.5
N = 100  # records at 0 in x; x' adds one at 1
WINDOW = 30  # noise values enumerated per cell: tails beyond hold < 1e-12 at epsilon 1


def _log_laplace(z: np.ndarray, epsilon: float) -> np.ndarray:
    """log P[Z = z] for discrete Laplace noise of scale 1 / epsilon."""
    return math.log(-math.expm1(-epsilon)) - math.log1p(math.exp(-epsilon)) - epsilon * np.abs(z)


def _divergences(logp: np.ndarray, logq: np.ndarray) -> dict[float, float]:
    """max(D_alpha(P || Q), D_alpha(Q || P)) / alpha on a grid of alpha (alpha = 1:
    Kullback-Leibler), from log-probabilities (no underflow in the far tails)."""
    out = {}
    for alpha in (1.0, 1.5, 2.0, 3.0, 5.0, 10.0, 30.0):
        worst = 0.0
        for lu, lv in ((logp, logq), (logq, logp)):
            if alpha == 1.0:
                d = float(np.sum(np.exp(lu) * (lu - lv)))
            else:
                d = float(logsumexp(alpha * lu + (1 - alpha) * lv)) / (alpha - 1)
            worst = max(worst, d / alpha)
        out[alpha] = worst
    return out


def test_noisy_histogram_of_a_cdf_release_is_within_its_rho(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Everything a "cdf" release outputs is computed from its noisy histogram, in which one
    record moves one count by one: its Renyi divergences bound the release's (data
    processing). At the noise scale the release actually draws with (recorded), the exact
    divergences of discrete Laplace and its shift by one, summed over |z| <= 2000 (the rest
    holds < 1e-800), satisfy D_alpha <= rho alpha for every alpha tried (zCDP), to 1e-9
    (rounding); the bounded-range rule's scale (epsilon 2 instead of 1) gives D_1 = 2 tanh(1)
    = 1.52 > 0.5."""
    scales: list[Fraction] = []
    draw = laws_module.draw_discrete_laplace

    def recorded(scale: Any, size: int, source: Any) -> Any:
        scales.append(Fraction(scale))
        return draw(scale, size, source)

    monkeypatch.setattr(laws_module, "draw_discrete_laplace", recorded)
    df = pl.DataFrame({"a": pl.Series([0] * N, dtype=pl.Int64)})
    q = dp.Session(df, budget=dp.ZCDP(1.0)).query()
    q.agg(dp.quantile("a", [0.5, 0.999], bounds=(0, 1))).release(rho=RHO, rng=1)
    (scale,) = set(scales)
    epsilon = float(1 / scale)
    z = np.arange(-2000, 2001)
    worst = _divergences(_log_laplace(z, epsilon), _log_laplace(z - 1, epsilon))
    assert max(worst.values()) <= RHO * (1 + 1e-9), worst


def _sample(
    monkeypatch: pytest.MonkeyPatch, frame: pl.DataFrame, noise: np.ndarray
) -> tuple[np.ndarray, float]:
    """The values of ``len(noise)`` releases (the audit's batched path, the release's own
    code) with the histogram noise ``noise`` (one row per release), and the epsilon drawn."""
    flat = iter(noise.ravel().tolist())
    scales: list[Fraction] = []

    def enumerated(scale: Any, size: int, source: Any) -> np.ndarray:
        scales.append(Fraction(scale))
        return np.array([next(flat) for _ in range(size)], dtype=np.int64)

    monkeypatch.setattr(laws_module, "draw_discrete_laplace", enumerated)
    q = dp.Session(frame, budget=dp.ZCDP(1.0)).query()
    smp = QuerySampler(q.agg(dp.quantile("a", [0.5, 0.999], bounds=(0, 1))), rho=RHO)
    out = smp.sample(len(noise), rng=1).sort("draw")
    (scale,) = set(scales)
    return out.select("a_0.5", "a_0.999").to_numpy(), float(1 / scale)


def test_exact_law_of_a_cdf_release_is_within_its_rho(monkeypatch: pytest.MonkeyPatch) -> None:
    """The exact law of the released values on x (100 records at 0) and x' (one more at 1),
    integer column, bounds (0, 1), levels 0.5 and 0.999, rho = 0.5: the release's values are
    computed (by the release's own code, the audit's batched path) for every noise pair in a
    window of +-30 around each count; the mass outside it (< 1e-12, computed from the tails)
    is lumped into one outcome, which can only lower the divergences. The 0.999-quantile is 1
    exactly when the noisy count at 1 is >= 1, so the values carry the histogram's whole
    privacy loss: with the pure-DP rule (epsilon 1) D_1 = tanh(1/2) = 0.46 <= 0.5 = rho, and
    D_alpha <= rho alpha at every alpha tried (to 1e-9, rounding); the bounded-range rule
    (epsilon 2) gives D_1 = 2 tanh(1) = 1.52."""
    z0, w = (
        g.ravel()
        for g in np.meshgrid(
            np.arange(-WINDOW, WINDOW + 1), np.arange(-WINDOW, WINDOW + 2), indexing="ij"
        )
    )
    x = pl.DataFrame({"a": pl.Series([0] * N, dtype=pl.Int64)})
    x1 = pl.DataFrame({"a": pl.Series([0] * N + [1], dtype=pl.Int64)})
    # the same noisy histograms (N + z0, w) on both tables: noise (z0, w) on x, (z0, w - 1)
    # on x'; the release is a function of the noisy histogram (checked: equal outputs)
    out, eps = _sample(monkeypatch, x, np.column_stack((z0, w)))
    out1, eps1 = _sample(monkeypatch, x1, np.column_stack((z0, w - 1)))
    assert np.array_equal(out, out1) and eps == eps1
    tail = np.arange(WINDOW + 1, 3000)
    rest0 = 2 * np.exp(_log_laplace(tail, eps)).sum()  # |z0| > WINDOW
    rest_w = np.exp(_log_laplace(tail, eps)).sum() + np.exp(_log_laplace(tail + 1, eps)).sum()
    rest_w1 = np.exp(_log_laplace(tail + 1, eps)).sum() + np.exp(_log_laplace(tail, eps)).sum()
    rows, inverse = np.unique(out, axis=0, return_inverse=True)
    laws = []
    for noise_w, rest in ((w, rest_w), (w - 1, rest_w1)):
        mass = np.exp(_log_laplace(z0, eps) + _log_laplace(noise_w, eps))
        law = np.bincount(inverse.ravel(), weights=mass, minlength=len(rows))
        laws.append(np.log(np.append(law, rest0 + rest - rest0 * rest)))
    assert 0 < np.exp(laws[0][-1]) < 1e-12 and 0 < np.exp(laws[1][-1]) < 1e-12
    worst = _divergences(laws[0], laws[1])
    assert worst[1.0] == pytest.approx(math.tanh(eps / 2) * eps, rel=1e-6)
    assert max(worst.values()) <= RHO * (1 + 1e-9), worst


def test_automatic_stages_are_charged_as_pure_dp_under_zcdp() -> None:
    """max_rows_per_unit="auto" (AboveThreshold on a histogram of rows per unit) and
    bounds="auto" (a discrete-Laplace log2 histogram, or AboveThreshold with the tail
    method) are pure-DP stages, so under zCDP their epsilon is sqrt(2 rho share) (per unit),
    divided by the rows a unit keeps for the bounds (here the cap of 8, checked before the
    chosen bound is known): rho 0.5, the rows stage 1/10 of it, the mean's bounds
    1/2 of the rest."""
    s = dp.Session(_frame(), privacy_unit="pid", max_rows_per_unit="auto", budget=dp.ZCDP(1.0))
    q = s.query(max_rows_cap=8).agg(dp.mean("x", bounds="auto"))
    plan = q.explain(rho=0.5)
    assert plan.rows is not None and plan.rows.epsilon == pytest.approx(math.sqrt(2 * 0.05))
    (bounds,) = plan.bounds
    assert bounds.epsilon == pytest.approx(math.sqrt(2 * 0.45 / 2) / 8, rel=1e-12)
    tail = s.query(max_rows_per_unit=2).agg(dp.sum("x", bounds="auto", bounds_method="tail"))
    (bounds,) = tail.explain(rho=0.5).bounds
    assert bounds.epsilon == pytest.approx(math.sqrt(2 * 0.5 / 2) / 2, rel=1e-12)
