"""Hostile calls of every public entry point end in a result or a clear error.

1. Every call of ``tests/data/fuzz_reproductions.txt`` (one per kind of failure a fuzzer can
   provoke, grouped by class: b = a raw Python/NumPy error, c = a silent bad output, d = a
   hang, warnings = a RuntimeWarning reaching the user) ends as a finite result or a clear
   error: a ``ParameterError`` or ``TypeError`` whose message names the user's parameter (in
   backticks, never an internal helper), or a ``BudgetExceededError`` (the budget refused the
   spend; nothing was charged). No other exception, no warning (pytest turns warnings into
   errors), at most a few seconds each.
2. A seeded fuzz over the public entry points with extreme and ill-typed parameters: the
   same contract, plus nothing may be charged to the accountant when the call fails.

The reproductions cover: ``DiscreteGaussian(epsilon=10.0, ...)``; the audit suite's
smooth-Cauchy case; ``ReportNoisyMax``, ``sample_and_aggregate`` and ``DiscreteGaussian`` at
extreme scales; ``Gaussian`` with sensitivity 1e300; smooth sensitivity at tiny epsilon or
beta; ``Geometric(epsilon=2**31)``, ``samplers.geometric``, ``bernoulli_exp``; the empirical
sensitivities and ``local_at_distance(..., 10**6)``; infinite releases; dict candidates;
masked arrays; overflow, a bad ``accountant=``, non-string choices, time deltas, ragged
lists; messages naming helpers. The targeted tests, with their reasoning, live beside the
module each one pins (``tests/mechanisms/test_hostile_parameters.py``,
``tests/frameworks/test_hostile_parameters.py``, ``tests/samplers/test_robust_samplers.py``,
...).
"""

from __future__ import annotations

import math
import random
import re
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import fields, is_dataclass
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpkit as dp
from dpkit import sensitivity as sens
from dpkit.errors import BudgetExceededError, ParameterError

DATA = Path(__file__).parent / "data" / "fuzz_reproductions.txt"
#: Helpers whose names must never be the subject of a user-facing message.
INTERNAL = (
    "grid:",
    "discrete_gaussian_tc",
    "_exp_decimal",
    "pow2_at_most",
    "unit_for:",
    "framework:",
    "rounded_laplace",
)
#: Seconds one call may take (the hangs of class d ran for minutes or forever).
CALL_LIMIT = 5


def deep(n: int) -> list[Any]:
    """A list nested ``n`` levels deep (a ragged input beyond NumPy's 64 dimensions)."""
    x: list[Any] = [1.0]
    for _ in range(n):
        x = [x]
    return x


def selfref() -> list[Any]:
    """A list that contains itself."""
    x: list[Any] = [1.0]
    x.append(x)
    return x


def _reproductions() -> list[Any]:
    out = []
    cls = ""
    header = ""
    for line in DATA.read_text(encoding="utf-8").splitlines():
        if line.startswith("== "):
            cls = line[3:]
        elif line.startswith("["):
            header = line
        elif line.startswith("    ") and header:
            target = header[1 : header.index("]")]
            ident = f"{cls}-{len(out):03d}-{target}"
            out.append(pytest.param(cls, header, line.strip(), id=ident))
            header = ""
    return out


REPRODUCTIONS = _reproductions()


class CallTimeout(Exception):
    """A call ran past CALL_LIMIT seconds."""


@contextmanager
def _time_limit(seconds: int) -> Iterator[None]:
    def _raise(*_args: Any) -> None:
        raise CallTimeout(f"still running after {seconds} s")

    old = signal.signal(signal.SIGALRM, _raise)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _numbers(out: Any, depth: int = 0) -> Iterator[float]:
    """Every float a result carries (values, intervals, scales, sensitivities)."""
    if depth > 4 or out is None or isinstance(out, str | bool | np.bool_):
        return
    if isinstance(out, int | float | np.integer | np.floating):
        yield float(out)
    elif isinstance(out, np.ndarray):
        if out.dtype.kind in "fiu":
            yield from out.astype(np.float64).ravel().tolist()
    elif isinstance(out, list | tuple):
        for v in out:
            yield from _numbers(v, depth + 1)
    elif is_dataclass(out) and not isinstance(out, type):
        for f in fields(out):
            if f.name not in ("details", "diagnostics"):
                yield from _numbers(getattr(out, f.name), depth + 1)


def _check_outcome(call: Callable[[], Any], names: tuple[str, ...] = ()) -> str:
    """Run ``call``: a finite result, or an error of the contract. Returns what happened."""
    t0 = time.perf_counter()
    try:
        with _time_limit(CALL_LIMIT):
            out = call()
    except (ParameterError, TypeError) as exc:
        msg = str(exc)
        assert re.search(r"`[\w\[\]., ]+`", msg), f"no parameter named: {type(exc).__name__}: {msg}"
        assert not any(h in msg for h in INTERNAL), f"names a helper: {msg}"
        if names:
            assert any(n in msg for n in names), f"none of {names} named: {msg}"
        return type(exc).__name__
    except BudgetExceededError:
        return "BudgetExceededError"
    assert time.perf_counter() - t0 < CALL_LIMIT
    # a comparison reports NaN errors for a method that refused every trial (PTR): only
    # infinities are wrong there; everywhere else every number must be finite
    ok = math.isnan if isinstance(out, dp.compare.Comparison) else (lambda _v: False)
    bad = [v for v in _numbers(out) if not (math.isfinite(v) or ok(v))]
    assert not bad, f"non-finite output {bad[:3]} in {out!r:.300}"
    return "ok"


@pytest.mark.parametrize(("cls", "signature", "expression"), REPRODUCTIONS)
def test_reproduction_ends_in_a_result_or_a_clear_error(
    cls: str, signature: str, expression: str
) -> None:
    namespace = {
        "dp": dp,
        "np": np,
        "pd": pd,
        "sens": sens,
        "Fraction": Fraction,
        "Decimal": Decimal,
        "deep": deep,
        "selfref": selfref,
    }
    _check_outcome(lambda: eval(expression, namespace))


def test_every_class_is_covered() -> None:
    classes = {p.values[0] for p in REPRODUCTIONS}
    assert classes == {"b", "c", "d", "warnings"}
    assert len(REPRODUCTIONS) == 303


# ------------------------------------------------------------------------------- the fuzz

#: Values that break careless code (overflow, underflow, NaN, wrong types), and neighbours.
NASTY: list[Any] = [
    math.nan,
    math.inf,
    -math.inf,
    -1.0,
    0.0,
    -0.0,
    1e308,
    5e-324,
    1e-300,
    1e300,
    10**400,
    Fraction(10**400, 3),
    2**63,
    True,
    np.timedelta64(1, "D"),
    np.float32(1e-45),
    np.uint64(2**64 - 1),
    "1",
    None,
    np.array([1.0, 2.0]),
    [1.0, [2.0]],
    np.ma.masked_array([1.0, 2.0], mask=[0, 1]),
    {},
    np.array(3.0),
]
DATA_NASTY: list[Any] = [
    [],
    [1.0, math.nan],
    [1.0, [2.0]],
    np.ma.masked_array([1.0, 5.0, 3.0], mask=[0, 1, 0]),
    np.ones((2, 2)),
    np.array(3.0),
    ["a", "b"],
    [True, False],
    np.array([1, 2], dtype="timedelta64[s]"),
    [1e308, -1e308],
    pd.Series([1.0, 2.0, 3.0], index=[2, 0, 1]),
    {"a": 1.0},
]
X = [1.0, 2.0, 3.0, 10.0, 11.0]


def _acct() -> dp.Accountant:
    return dp.Accountant(dp.ApproxDP(1e300, 0.5), relation="bounded")


def _spending(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Run ``fn(accountant=acct, **kw)``; if it fails, nothing may have been charged."""

    def run(**kw: Any) -> Any:
        acct = _acct()
        try:
            return fn(accountant=acct, **kw)
        except Exception:
            assert acct.history == (), f"charged {acct.history} before failing"
            raise

    return run


#: (name, function of keyword arguments, valid keyword arguments, data-like keywords)
ENTRY_POINTS: list[tuple[str, Callable[..., Any], dict[str, Any], tuple[str, ...]]] = [
    (
        "Laplace.release",
        _spending(
            lambda accountant, epsilon, sensitivity, value: dp.Laplace(
                epsilon=epsilon, sensitivity=sensitivity
            ).release(value, rng=1, accountant=accountant)
        ),
        {"epsilon": 1.0, "sensitivity": 1.0, "value": 3.0},
        ("value",),
    ),
    (
        "Laplace.measure",
        _spending(
            lambda accountant, epsilon, alpha, value: dp.Laplace(epsilon=epsilon).measure(
                value, alpha=alpha, rng=1, accountant=accountant
            )
        ),
        {"epsilon": 1.0, "alpha": 0.05, "value": 3.0},
        ("value",),
    ),
    (
        "Gaussian.measure",
        _spending(
            lambda accountant, epsilon, delta, sensitivity, alpha: dp.Gaussian(
                epsilon=epsilon, delta=delta, sensitivity=sensitivity
            ).measure(3.0, alpha=alpha, rng=1, accountant=accountant)
        ),
        {"epsilon": 1.0, "delta": 1e-5, "sensitivity": 1.0, "alpha": 0.05},
        (),
    ),
    (
        "Geometric.measure",
        _spending(
            lambda accountant, epsilon, sensitivity, alpha: dp.Geometric(
                epsilon=epsilon, sensitivity=sensitivity
            ).measure(3, alpha=alpha, rng=1, accountant=accountant)
        ),
        {"epsilon": 1.0, "sensitivity": 1, "alpha": 0.05},
        (),
    ),
    (
        "DiscreteGaussian.release",
        _spending(
            lambda accountant, epsilon, delta, sensitivity, value: dp.DiscreteGaussian(
                epsilon=epsilon, delta=delta, sensitivity=sensitivity
            ).release(value, rng=1, accountant=accountant)
        ),
        {"epsilon": 1.0, "delta": 1e-5, "sensitivity": 1, "value": 10},
        ("value",),
    ),
    *[
        (
            f"{cls.__name__}.select",
            _spending(
                lambda accountant, epsilon, sensitivity, candidates, scores, cls=cls: cls(
                    epsilon=epsilon, sensitivity=sensitivity
                ).select(candidates, scores, rng=1, accountant=accountant)
            ),
            {
                "epsilon": 1.0,
                "sensitivity": 1.0,
                "candidates": ["a", "b", "c"],
                "scores": [1.0, 5.0, 2.0],
            },
            ("candidates", "scores"),
        )
        for cls in (dp.Exponential, dp.ReportNoisyMax, dp.PermuteAndFlip)
    ],
    (
        "propose_test_release",
        _spending(
            lambda accountant, data, proposed_bound, epsilon, delta, bounds: (
                dp.propose_test_release(
                    data,
                    "median",
                    proposed_bound,
                    epsilon=epsilon,
                    delta=delta,
                    bounds=bounds,
                    rng=1,
                    accountant=accountant,
                )
            )
        ),
        {"data": X, "proposed_bound": 5.0, "epsilon": 1.0, "delta": 1e-6, "bounds": (0, 100)},
        ("data",),
    ),
    (
        "smooth_sensitivity_release",
        _spending(
            lambda accountant, data, epsilon, delta, bounds, noise: dp.smooth_sensitivity_release(
                data,
                "median",
                epsilon=epsilon,
                delta=delta,
                bounds=bounds,
                noise=noise,
                rng=1,
                accountant=accountant,
            )
        ),
        {"data": X, "epsilon": 1.0, "delta": 0.0, "bounds": (0, 100), "noise": "cauchy"},
        ("data",),
    ),
    (
        "sample_and_aggregate",
        _spending(
            lambda accountant, data, chunks, output_bounds, epsilon: dp.sample_and_aggregate(
                data,
                "mean",
                chunks=chunks,
                output_bounds=output_bounds,
                epsilon=epsilon,
                rng=1,
                accountant=accountant,
            )
        ),
        {"data": X, "chunks": 3, "output_bounds": (0, 100), "epsilon": 1.0},
        ("data",),
    ),
    (
        "inverse_sensitivity",
        _spending(
            lambda accountant, data, epsilon, bounds, percentile: dp.inverse_sensitivity(
                data,
                "percentile",
                epsilon=epsilon,
                bounds=bounds,
                percentile=percentile,
                rng=1,
                accountant=accountant,
            )
        ),
        {"data": X, "epsilon": 1.0, "bounds": (0, 100), "percentile": 25.0},
        ("data",),
    ),
    (
        "sensitivity.smooth",
        lambda data, beta, bounds, relation: sens.smooth(
            "median", data, beta=beta, relation=relation, bounds=bounds
        ),
        {"data": X, "beta": 0.1, "bounds": (0, 100), "relation": "bounded"},
        ("data",),
    ),
    (
        "sensitivity.local_at_distance",
        lambda data, distance, bounds: sens.local_at_distance(
            "mean", data, distance, relation="unbounded", bounds=bounds
        ),
        {"data": X, "distance": 3, "bounds": (0, 100)},
        ("data",),
    ),
    (
        "sensitivity.global_sensitivity",
        lambda bounds, n, distance: sens.global_sensitivity(
            "var", bounds=bounds, relation="bounded", n=n, distance=distance
        ),
        {"bounds": (0, 100), "n": 10, "distance": 1},
        (),
    ),
    (
        "statistics.quantiles",
        lambda data, levels, epsilon, bounds: dp.statistics.quantiles(
            data, levels, epsilon=epsilon, bounds=bounds, rng=1
        ),
        {"data": X, "levels": 0.5, "epsilon": 1.0, "bounds": (0, 100)},
        ("data",),
    ),
    (
        "accounting",
        lambda epsilon, delta, k: dp.advanced_composition(
            dp.ApproxDP(epsilon, delta), k, delta_prime=1e-6
        ),
        {"epsilon": 0.1, "delta": 1e-8, "k": 10},
        (),
    ),
    (
        "zcdp_to_approx",
        lambda rho, delta: dp.zcdp_to_approx(rho, delta),
        {"rho": 0.5, "delta": 1e-6},
        (),
    ),
    (
        "samplers",
        lambda scale, sigma, x, size: (
            dp.samplers.discrete_laplace(scale, size, rng=1),
            dp.samplers.discrete_gaussian(sigma, size, rng=1),
            dp.samplers.geometric(x, size, rng=1),
        ),
        {"scale": 1.0, "sigma": 1.0, "x": 0.5, "size": 5},
        (),
    ),
]


def _fuzz_cases(count: int, seed: int) -> list[tuple[str, dict[str, Any], tuple[str, ...]]]:
    rnd = random.Random(seed)  # test inputs, fixed seed
    out = []
    for _ in range(count):
        name, _fn, valid, data_keys = rnd.choice(ENTRY_POINTS)
        kw = dict(valid)
        picked = tuple(rnd.sample(sorted(kw), k=min(len(kw), rnd.choice((1, 1, 2)))))
        for key in picked:
            pool = DATA_NASTY + NASTY[:6] if key in data_keys else NASTY
            kw[key] = rnd.choice(pool)
            if key in ("bounds", "output_bounds") and rnd.random() < 0.7:
                kw[key] = (rnd.choice((0, -1e308, 5e-324, 1e15)), rnd.choice(NASTY[:12]))
        out.append((name, kw, picked))
    return out


FUNCTIONS = {name: fn for name, fn, _v, _d in ENTRY_POINTS}
#: Parameters a refusal may name instead of the one that was changed: data with fewer
#: records than `chunks` is refused by naming `chunks` (with the number of records).
RELATED = {"sample_and_aggregate": ("chunks",)}


def test_seeded_fuzz_over_the_public_entry_points() -> None:
    # 600 calls (a few seconds): every entry point with one or two parameters replaced by
    # values that break careless code; a call may succeed (finite output) or be
    # refused with an error naming one of the parameters it was given wrong, having charged
    # nothing
    seen: dict[str, int] = {}
    for name, kw, picked in _fuzz_cases(600, seed=20261123):
        try:
            names = picked + RELATED.get(name, ())
            what = _check_outcome(lambda name=name, kw=kw: FUNCTIONS[name](**kw), names=names)
        except AssertionError as exc:
            raise AssertionError(f"{name}({kw!r:.300}) [changed {picked}]: {exc}") from None
        seen[what] = seen.get(what, 0) + 1
    # the fuzz exercised both paths: some calls were refused, some released
    assert seen.get("ok", 0) > 25 and seen.get("ParameterError", 0) + seen.get("TypeError", 0) > 25
