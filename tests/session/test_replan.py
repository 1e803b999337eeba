"""A release validates its budget once and re-plans by method, never from raw parameters.

The budget (``epsilon``, ``delta``, ``rho``, ``noise``) is checked once, into the typed
:class:`~dpkit.session._budget.Budget` the plan carries; a choice made at release time
(``max_rows_per_unit="auto"``, ``bounds="auto"``) re-splits that budget through
``Plan.with_rows`` and ``Plan.with_bounds``. The counts are read from the calls made
(a profile hook on the functions' code), whatever module calls them.
"""

from __future__ import annotations

import dataclasses
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import polars as pl
import pytest

import dpkit as dp
from dpkit.noise import Noise
from dpkit.session import _budget, _plan


@contextmanager
def _calls(**functions: Callable[..., Any]) -> Iterator[Counter[str]]:
    """Count the calls of each function (by its code object) inside the block."""
    codes = {f.__code__: name for name, f in functions.items()}
    seen: Counter[str] = Counter()

    def hook(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code in codes:
            seen[codes[frame.f_code]] += 1

    old = sys.getprofile()
    sys.setprofile(hook)
    try:
        yield seen
    finally:
        sys.setprofile(old)


def _session(budget: Any = None) -> dp.Session:
    rng = np.random.default_rng(1)
    df = pl.DataFrame(
        {
            "pid": rng.integers(0, 50, 400),
            "g": rng.choice(["a", "b"], 400),
            "x": rng.uniform(0, 100, 400),
        }
    )
    return dp.Session(
        df, privacy_unit="pid", max_rows_per_unit=2, budget=budget or dp.ApproxDP(100, 1e-3), rng=3
    )


#: query, release parameters, and the splits of the budget it makes: one plan, plus one
#: per contribution bound chosen, plus two per automatic bounds stage (the statistics
#: checked on the worst bounds before the spend, then split for the chosen ones)
CASES: dict[str, tuple[Callable[[dp.Session], Any], dict[str, Any], int]] = {
    "count": (lambda s: s.query().group_by("g", keys=["a", "b"]).agg(dp.count()), {}, 1),
    "private keys": (lambda s: s.query().group_by("g").agg(dp.count()), {"delta": 1e-6}, 1),
    "mean": (lambda s: s.query().agg(dp.mean("x", bounds=(0.0, 100.0))), {}, 1),
    "median": (lambda s: s.query().agg(dp.median("x", bounds=(0.0, 100.0))), {}, 1),
    "bounds auto": (lambda s: s.query().agg(dp.mean("x", bounds="auto")), {}, 3),
    "rows auto": (lambda s: s.query(max_rows_per_unit="auto").agg(dp.count()), {}, 2),
    "both auto": (
        lambda s: s.query(max_rows_per_unit="auto").agg(dp.sum("x", bounds="auto")),
        {},
        4,
    ),
    "zcdp": (lambda s: s.query().agg(dp.mean("x", bounds="auto")), {"rho": 0.5}, 3),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_release_validates_its_budget_once(name: str) -> None:
    build, params, _ = CASES[name]
    query = build(_session(dp.ZCDP(10.0) if "rho" in params else None))
    params = {"epsilon": 1.0, **params} if "rho" not in params else params
    with _calls(make_budget=_budget.make_budget) as seen:
        query.release(**params)
    assert seen["make_budget"] == 1


@pytest.mark.parametrize("name", list(CASES))
def test_a_release_plans_from_its_raw_parameters_once(name: str) -> None:
    build, params, splits = CASES[name]
    query = build(_session(dp.ZCDP(10.0) if "rho" in params else None))
    params = {"epsilon": 1.0, **params} if "rho" not in params else params
    with _calls(plan=_plan.Recipe.plan, split=_plan.split) as seen:
        query.release(**params)
    # each re-plan splits the validated budget again (the sensitivities follow the choice)
    assert seen["plan"] == splits
    assert seen["split"] == splits


def test_replanning_by_method_splits_the_validated_budget_for_the_choice() -> None:
    # the contribution bound's stage keeps its share; the count's noise is that of
    # sensitivity k on the rest of the same Budget (no new validation, no rounding)
    auto = _session().query(max_rows_per_unit="auto").agg(dp.count()).explain(epsilon=1.0)
    assert auto.rows is not None and auto.budget is not None and auto.budget.epsilon
    replanned = auto.with_rows(3)
    assert replanned.budget is auto.budget
    assert replanned.max_rows == 3 and replanned.rows == dataclasses.replace(auto.rows, chosen=3)
    rest = auto.budget.epsilon * (1 - auto.rows.share)
    assert [p.noise for p in replanned.parts] == [Noise.laplace(rest, 3, 1)]
    assert [p.sensitivity for p in replanned.parts] == [3]
    # a wrong k (the worst case kept) would give the cap's sensitivity instead
    assert auto.parts[0].sensitivity == auto.max_rows != 3
