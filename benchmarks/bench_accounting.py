"""Privacy accounting benchmarks: dpkit's tight composition beside dp_accounting and PRV.

Every row of a task composes the same releases at the same delta; the ``error`` column is the
epsilon each implementation reports (3 digits; the note has 5, and PRV's certified interval).
dpkit's rows time :func:`dpkit.accounting.compose` from cold caches (every analysis it runs:
exact Gaussian or PLD, Renyi, zCDP, advanced, basic); ``dpkit pld`` is its PLD analysis
alone. dp_accounting's PLD uses connect-the-dots at ``value_discretization_interval`` 1e-4
(its default), its RDP accountant the default orders; PRV uses ``eps_error`` 0.01 and
``delta_error`` delta / 1000 and reports ``[low, estimate, up]`` (the upper value is its
bound). Competitors are optional: a missing library gives "not measured" rows.

Tasks (targets from issue 29):

``gauss k=1e3 sigma=30``, ``gauss k=1e4 sigma=100``
    k-fold Gaussian composition at delta 1e-5: within 1e-4 of the closed form, never below;
    10**4-fold self-composition in at most 0.1 s.
``laplace k=100 eps0=0.1``, ``laplace k=1e4 eps0=0.01``
    At most dp_accounting's PLD + 1e-3 (4.2203 at k = 100).
``mixed lap+gauss+em``
    50 Laplace counts (epsilon 0.1), 50 Gaussian sums (sigma 20), 50 exponential-mechanism
    selections (epsilon 0.1): at or below dp_accounting's PLD and RDP. dp_accounting has no
    bounded-range event: its PLD takes the selections as epsilon-DP, its RDP (which has no
    epsilon-DP event under add/remove) as Laplace noise of scale 1/epsilon, which is *less*
    than what an epsilon-DP selection may cost, so that row favours dp_accounting.
``dpsgd mnist``
    Poisson rate 256/60000, sigma 1.1, 60 epochs (14063 steps), delta 1e-5: within PRV's
    certified interval or at most its upper bound + 1e-3.
``1000 gaussians``
    1,000 Gaussian releases with sigma uniform on [20, 60] (seed 0), delta 1e-6: at most
    0.5 s. dp_accounting's PLD composes them one by one at interval 1e-3; PRV's heterogeneous
    composition is not run (the survey measured 134 s and more than 5 GB).
``ledger spend at 1e3``
    A tight :class:`~dpkit.Accountant` on a SQLite ledger holding 1,000 spends (a third each
    Laplace counts at epsilon 0.1, Gaussian sums at sigma 20, exponential-mechanism
    selections at epsilon 0.1): one more spend (durable, fsync included) plus the epsilon
    query (``composed()``, every analysis) in at most 20 ms. ``past the charges' sum`` is the
    same with a budget the charges' sum has passed, so the spend is checked by composing;
    ``all 1e3 distinct`` a ledger of 1,000 different releases of the three kinds (more
    distinct events than the accountant's PLD limit, so the other analyses decide). dpkit
    only: neither library keeps a ledger.
"""

from __future__ import annotations

import functools
import importlib.metadata
import itertools
import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks._harness import Table, optional_import, timeit

STEPS = math.ceil(60 * 60000 / 256)


def _cold() -> None:
    """Clear dpkit's per-event caches, so each timed call discretises from scratch."""
    from dpkit.accounting import _losses, _pld, _rdp

    _losses.models.cache_clear()
    _pld._pmf.cache_clear()
    _pld._variance.cache_clear()
    _rdp._curve.cache_clear()
    _rdp._rho.cache_clear()


def _dpkit_rows(table: Table, task: str, ledger: list, delta: float, *, pld: bool) -> None:
    from dpkit.accounting import compose

    def run(methods: list[str] | None = None) -> Any:
        _cold()
        return compose(ledger, delta=delta, methods=methods)

    seconds = timeit(run, repeat=3)
    c = run()
    lower = "-" if c.lower is None else f"{c.lower:.5f}"
    others = ", ".join(f"{m} {v:.4f}" for m, v in c.by_method.items() if m != c.method)
    table.add(
        task,
        "dpkit",
        seconds,
        error=c.epsilon,
        note=f"eps {c.epsilon:.5f} by {c.method}, certified [{lower}, {c.epsilon:.5f}]; {others}",
    )
    if pld:
        seconds = timeit(lambda: run(["pld"]), repeat=3)
        p = run(["pld"])
        table.add(task, "dpkit pld", seconds, error=p.epsilon, note=f"eps {p.epsilon:.5f}")


def _competitor(table: Table, task: str, impl: str, fn: Callable[[], Any]) -> None:
    """One timed run (competitors take up to seconds); a failure is a row, not a crash."""
    try:
        start = time.perf_counter()
        value = fn()
        seconds = time.perf_counter() - start
    except Exception as exc:
        table.missing(task, impl, exc)
        return
    dist = impl.split()[0].replace("_", "-")
    try:
        version = f" ({dist} {importlib.metadata.version(dist)})"
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - it just ran
        version = ""
    if isinstance(value, tuple):  # PRV: (low, estimate, up)
        low, est, up = value
        note = f"[{low:.5f}, {est:.5f}, {up:.5f}]{version}"
        table.add(task, impl, seconds, error=up, note=note)
    else:
        table.add(task, impl, seconds, error=value, note=f"eps {value:.5f}{version}")


def run(table: Table) -> None:
    from dpkit.accounting import events as ev

    dpa = optional_import("dp_accounting")
    prv = optional_import("prv_accountant")
    rng = np.random.default_rng(0)
    sigmas = rng.uniform(20, 60, 1000)
    em = 0.1
    tasks: list[tuple[str, list, float, bool]] = [
        ("gauss k=1e3 sigma=30", [(ev.Gaussian(sigma=30.0), 1000)], 1e-5, True),
        ("gauss k=1e4 sigma=100", [(ev.Gaussian(sigma=100.0), 10**4)], 1e-5, True),
        ("laplace k=100 eps0=0.1", [(ev.Laplace(scale=10.0), 100)], 1e-5, False),
        ("laplace k=1e4 eps0=0.01", [(ev.Laplace(scale=100.0), 10**4)], 1e-5, False),
        (
            "mixed lap+gauss+em",
            [
                (ev.Laplace(scale=10.0), 50),
                (ev.Gaussian(sigma=20.0), 50),
                (ev.Exponential(epsilon=em), 50),
            ],
            1e-5,
            False,
        ),
        (
            "dpsgd mnist",
            [(ev.SubsampledGaussian(sigma=1.1, rate=256 / 60000), STEPS)],
            1e-5,
            False,
        ),
        ("1000 gaussians", [ev.Gaussian(sigma=float(s)) for s in sigmas], 1e-6, False),
    ]
    for task, ledger, delta, pld in tasks:
        _dpkit_rows(table, task, ledger, delta, pld=pld)
        if task.startswith("gauss"):
            k, sigma = ledger[0][1], ledger[0][0].sigma
            _exact_row(table, task, math.sqrt(k) / sigma, delta)
        if dpa is None:
            table.missing(task, "dp_accounting", ImportError("dp_accounting is not installed"))
        else:
            for impl, fn in _dpa(task, ledger, delta, sigmas):
                _competitor(table, task, impl, fn)
        if prv is None:
            table.missing(task, "prv_accountant", ImportError("prv_accountant is not installed"))
        elif task == "1000 gaussians":
            table.add(task, "prv_accountant", None, note="not run: 134 s, >5 GB (survey)")
        else:
            _competitor(table, task, "prv_accountant", _prv(ledger, delta))
    _ledger_rows(table)


def _spend_and_query(acct: Any, kinds: list, counter: Any) -> float:
    """One more spend (the next kind in turn) and the ledger's tightest epsilon."""
    cost, event = kinds[next(counter) % len(kinds)]
    acct.spend(cost, label="one more", events=[event])
    return float(acct.composed().epsilon)


def _ledger_rows(table: Table) -> None:
    """One spend plus the epsilon query on a tight ledger of 1,000 spends (fsync included)."""
    import tempfile
    from pathlib import Path

    from dpkit import ZCDP, Accountant, ApproxDP, PureDP
    from dpkit.accounting import events as ev

    kinds = [
        (PureDP(0.1), ev.Laplace(scale=10.0)),
        (ZCDP(1 / 800), ev.Gaussian(sigma=20.0)),
        (PureDP(0.1), ev.Exponential(epsilon=0.1)),
    ]
    # every release different, the three kinds in turn with scale 10 + i/64 (sigma twice it)
    distinct = []
    for i in range(1100):
        b = 10 + i / 64
        distinct.append(
            [
                (PureDP(1 / b), ev.Laplace(scale=b)),
                (ZCDP(1 / (8 * b * b)), ev.Gaussian(sigma=2 * b)),
                (PureDP(1 / b), ev.Exponential(epsilon=1 / b)),
            ][i % 3]
        )
    task = "ledger spend at 1e3"
    runs = (
        ("dpkit", 1000.0, kinds),
        ("dpkit past the charges' sum", 20.0, kinds),
        ("dpkit, all 1e3 distinct", 1000.0, distinct),
    )
    with tempfile.TemporaryDirectory() as tmp:
        for n_run, (impl, budget, pool) in enumerate(runs):
            path = Path(tmp) / f"{n_run}.sqlite"
            with Accountant(ApproxDP(budget, 1e-5), ledger=path, composition="tight") as acct:
                for i in range(1000):
                    cost, event = pool[i % len(pool)]
                    acct.spend(cost, label=f"release {i}", events=[event])
                counter = itertools.count(1000 if pool is distinct else 0)
                one = functools.partial(_spend_and_query, acct, pool, counter)
                seconds = timeit(one, repeat=7)
                c = acct.composed()
                n = len(acct.history)
                note = f"eps {c.epsilon:.5f} by {c.method} after {n} spends, budget {budget}"
                table.add(task, impl, seconds, error=c.epsilon, note=note)
    for impl in ("dp_accounting", "prv_accountant"):
        table.add(task, impl, None, note="no ledger")


def _exact_row(table: Table, task: str, mu: float, delta: float) -> None:
    from scipy import optimize, special

    def d(e: float) -> float:
        a = -e / mu + mu / 2
        return math.exp(special.log_ndtr(a)) - math.exp(e + special.log_ndtr(a - mu))

    exact = optimize.brentq(lambda e: d(e) - delta, 0.0, 100.0, xtol=1e-14)
    table.add(task, "closed form", None, error=exact, note=f"eps {exact:.5f} (mu-GDP, SciPy)")


def _dpa(task: str, ledger: list, delta: float, sigmas: np.ndarray) -> list:
    from dp_accounting import (
        GaussianDpEvent,
        LaplaceDpEvent,
        PoissonSampledDpEvent,
        SelfComposedDpEvent,
    )
    from dp_accounting.pld import privacy_loss_distribution as pld
    from dp_accounting.pld.common import DifferentialPrivacyParameters
    from dp_accounting.rdp import RdpAccountant

    step = 1e-4

    def self_composed(base: Any, k: int) -> Any:
        return base.self_compose(k) if k > 1 else base

    def pld_of(event: Any) -> Any:
        name = type(event).__name__
        if name == "Gaussian":
            return pld.from_gaussian_mechanism(event.sigma, value_discretization_interval=step)
        if name == "Laplace":
            return pld.from_laplace_mechanism(event.scale, value_discretization_interval=step)
        if name == "Exponential":
            params = DifferentialPrivacyParameters(event.epsilon, 0.0)
            return pld.from_privacy_parameters(params, value_discretization_interval=step)
        return pld.from_gaussian_mechanism(
            event.sigma, sampling_prob=event.rate, value_discretization_interval=step
        )

    def rdp_of(event: Any) -> Any:
        name = type(event).__name__
        if name == "Gaussian":
            return GaussianDpEvent(event.sigma)
        if name == "Laplace":
            return LaplaceDpEvent(event.scale)
        if name == "Exponential":
            return LaplaceDpEvent(1 / event.epsilon)  # see the module docstring
        return PoissonSampledDpEvent(event.rate, GaussianDpEvent(event.sigma))

    if task == "1000 gaussians":

        def sequential() -> float:
            total = None
            for s in sigmas:
                p = pld.from_gaussian_mechanism(float(s), value_discretization_interval=1e-3)
                total = p if total is None else total.compose(p)
            return total.get_epsilon_for_delta(delta)  # type: ignore[union-attr]

        return [("dp_accounting pld 1e-3", sequential)]

    def pld_eps() -> float:
        total = None
        for event, k in ledger:
            p = self_composed(pld_of(event), k)
            total = p if total is None else total.compose(p)
        return total.get_epsilon_for_delta(delta)  # type: ignore[union-attr]

    def rdp_eps() -> float:
        acc = RdpAccountant()
        for event, k in ledger:
            acc.compose(SelfComposedDpEvent(rdp_of(event), k))
        return acc.get_epsilon(delta)

    return [("dp_accounting pld", pld_eps), ("dp_accounting rdp", rdp_eps)]


def _prv(ledger: list, delta: float) -> Callable[[], tuple]:
    from prv_accountant import PRVAccountant
    from prv_accountant import privacy_random_variables as rv

    def prv_of(event: Any) -> Any:
        name = type(event).__name__
        if name == "Gaussian":
            return rv.GaussianMechanism(event.sigma)
        if name == "Laplace":
            return rv.LaplaceMechanism(event.epsilon)
        if name == "Exponential":
            return rv.PureDPMechanism(event.epsilon)
        return rv.PoissonSubsampledGaussianMechanism(event.rate, event.sigma)

    def go() -> tuple:
        prvs = [prv_of(e) for e, _ in ledger]
        counts = [k for _, k in ledger]
        acc = PRVAccountant(
            prvs=prvs, max_self_compositions=counts, eps_error=0.01, delta_error=delta / 1000
        )
        return tuple(
            float(x) for x in acc.compute_epsilon(delta=delta, num_self_compositions=counts)
        )

    return go
