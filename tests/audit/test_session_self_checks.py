"""Self-checks on the real Session: its own code, broken on purpose, must be flagged.

Each test patches one piece of dpkit.session (the same functions every release calls), builds
the named audit target, and runs the audit at the suite's sizes and seed. The correct Session
passes the same audits (tests/audit/test_suite.py and the last test here).

Expected privacy loss of each broken variant against the claim of epsilon = 1:

* key selection without its threshold (tau = 0 or 1): the key of the person alone in city z
  appears with probability P[1 + Z >= tau] (selection noise P[Z = z] ~ q**|z|, q = e^(-1/4)):
  1 - q**2 / (1 + q) = 0.66 for tau = 0, 1 / (1 + q) = 0.56 for tau = 1, with them, and
  never without them: unbounded (measured: lower bounds 8.4 and 8.2);
* the count's discrete Laplace at half its scale: removing the person with the most rows moves
  the count by k = 2 against noise of scale 1 instead of 2: loss 2 (measured 1.95);
* bounding that ignores max_rows_per_unit: that person's 6 rows all count, against noise for 2
  rows: loss 3 for the count (measured 2.94); with one row and one city per person, their
  city's sum moves by 2 x 100 against noise for 100: loss 2 (measured 1.97);
* quantiles of an integer column released by one noisy histogram (method "cdf") but charged
  as an exponential mechanism under zCDP (epsilon**2 / 8 instead of epsilon**2 / 2): the
  histogram runs at epsilon sqrt(8 rho share) instead of sqrt(2 rho share), and its
  0.999-quantile is randomized response on the removed person's count (dpkit.audit.session_query):
  at rho 0.5, tested at delta 0.3 (claimed epsilon 0.82), the best event gives
  log((1 / (1 + e^-2) - 0.3) / (e^-2 / (1 + e^-2))) = 1.58 (correct charge 0.47); under
  (epsilon, delta) = (1, 0.3), rho 0.59, 1.77 against 1 (correct 0.58); with two thirds of
  rho 0.5 in one release of five aggregates, 1.19 against 0.82 (correct 0.25).

At 50,000 draws the audit resolves a loss of 1 to within 0.05 (the suite's count: 0.96), so
each broken variant's lower bound lands far above 1.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from dpkit.audit import targets
from dpkit.noise import Noise
from dpkit.session import _engine, _plan
from dpkit.statistics import QuantileStage

SEED = 20260101
N = 50_000


def _run(name: str, index: int = 0, **params: Any):
    case = targets.cases(name, **params)[index]
    return case, case.run(samples=N, rng=SEED, progress=False)


@pytest.mark.parametrize("tau", [0, 1])
def test_a_lone_persons_key_released_without_threshold_is_a_violation(monkeypatch, tau: int):
    monkeypatch.setattr(_plan, "threshold", lambda kind, scale, delta_single, top=1: tau)
    case, res = _run("session_group_by", 1)
    assert "alone in group city=z" in case.name
    assert res.verdict == "violation" and res.epsilon_lower_bound > 5, res
    assert "'z'" in res.event or "keys released" in res.event  # the lone key's presence


def test_a_halved_count_noise_scale_is_a_violation(monkeypatch):
    laplace = Noise.laplace.__func__  # type: ignore[attr-defined]

    def halved(cls: type, epsilon: Any, l1: int, groups: int) -> Noise:
        noise = laplace(cls, epsilon, l1, groups)
        return dataclasses.replace(noise, scale=noise.scale / 2)

    monkeypatch.setattr(Noise, "laplace", classmethod(halved))
    _case, res = _run("session_count")
    assert res.verdict == "violation" and res.epsilon_lower_bound > 1.7, res


ONE_ROW = {"max_rows": 1, "max_groups": 1}


@pytest.mark.parametrize(
    ("name", "params", "least"), [("session_count", {}, 2.5), ("session_sum", ONE_ROW, 1.7)]
)
def test_bounding_that_ignores_max_rows_per_unit_is_a_violation(monkeypatch, name, params, least):
    bounded_rows = _engine.bounded_rows

    def unbounded_rows(ctx: _engine.Context, salt: Any) -> Any:
        return bounded_rows(dataclasses.replace(ctx, max_rows=10**6), salt)

    monkeypatch.setattr(_engine, "bounded_rows", unbounded_rows)
    _case, res = _run(name, **params)
    assert res.verdict == "violation" and res.epsilon_lower_bound > least, res


@pytest.mark.parametrize(
    ("name", "index", "least"),
    [
        ("session_quantile_cdf", 0, 1.45),
        ("session_quantile_cdf", 1, 1.65),
        ("session_several", 0, 1.1),
    ],
)
def test_a_histogram_charged_as_an_exponential_mechanism_under_zcdp_is_a_violation(
    monkeypatch, name: str, index: int, least: float
):
    """Every quantile stage charged by the bounded-range rule (epsilon**2 / 8), the noisy
    histogram of method "cdf" included: the audit's bound lands near the expected loss
    (module docstring; 50,000 draws resolve it to about 0.05) and far above the claim."""
    monkeypatch.setattr(QuantileStage, "zcdp_divisor", property(lambda self: 8))
    _case, res = _run(name, index)
    assert res.verdict == "violation" and res.epsilon_lower_bound > least, res
    assert "a_q_0.999" in res.event


@pytest.mark.parametrize(
    ("name", "index", "params"),
    [
        ("session_group_by", 1, {}),
        ("session_count", 0, {}),
        ("session_sum", 0, ONE_ROW),
        ("session_quantile_cdf", 0, {}),
        ("session_quantile_cdf", 1, {}),
        ("session_several", 0, {}),
    ],
)
def test_the_correct_session_passes_the_same_audits(name: str, index: int, params: dict):
    _case, res = _run(name, index, **params)
    assert res.verdict == "pass", res
