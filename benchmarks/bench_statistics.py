"""Statistics benchmarks (issue 13): private quantiles, deciles, and means with automatic bounds.

Data (fixed seed): ``normal`` = normal(50, 15) clipped to [0, 100]; ``lognormal`` =
lognormal(10, 1) with public bounds [0, 1e7]; ``ints`` = uniform integers 18..90 (int64) with
bounds [0, 100]; ``pareto`` = 1000 (1 + Lomax(2)) for the means. Pure epsilon-DP everywhere.

Metric for quantiles (the ``error`` column, in percent): the normalised, tie-aware rank error
``dist(q n, [#{x < est}, #{x <= est}]) / n`` on the clipped data; one quantile: the median
over 30 releases; deciles: the maximum over the nine levels, then the median over 30 releases.
For means: the median over 30 releases of ``|est - mean| / |mean|`` (percent).

Tasks:

``median 1e4 eps1 <data>``
    dpkit ``quantile(q=0.5, intervals=False)`` (all of epsilon on the quantile) and the default
    release (a quarter of epsilon buys the intervals); diffprivlib ``tools.quantile`` (Smith's
    exponential mechanism over data intervals, the accuracy leader of the survey); OpenDP
    ``make_private_quantile`` on 1,001 evenly spaced candidates; PyDP's ``QuantileTree``
    with PipelineDP's defaults (height 4, branching 16: what PipelineDP's PERCENTILE runs).
    Targets: 0.01% (continuous), 0.05% (ints).
``deciles 1e4 eps<e> <data>``
    Nine deciles in one release: dpkit's default (ApproximateQuantiles; on the integer column
    the noisy-histogram ``cdf`` method), ApproximateQuantiles, JointExp, independent draws;
    diffprivlib (epsilon split evenly over the nine); OpenDP (nine mechanisms at epsilon / 9);
    the quantile tree. Targets: 0.1% at eps 1, 1% at eps 0.1 (normal,
    lognormal); ints: no worse than independent releases.
``deciles 1e5 time``
    Seconds per nine-decile release on 10^5 normal values (target 20 ms), same rows.
``mean auto <data> <n>``
    Mean with automatic bounds, epsilon 1 in total: dpkit ``mean(bounds="auto")`` (half of
    epsilon on the histogram bounds, as Google's BoundedMean) and its tail-quantile variant;
    PyDP ``BoundedMean`` without bounds (Google's ApproximateBounds inside: the reference).
    Target: within 1.5x of the reference and no 4-8% floor.

``dpkit Session`` rows (deciles at eps 1, means with automatic bounds) run the same tasks
through :class:`dpkit.Session` on a Polars frame (quantiles pay their intervals there).

``session deciles 1e4 eps1 <data> <tight|loose>``
    Nine deciles through the Session against the array path at the same interval share
    (``quantiles`` with its default intervals, a quarter of epsilon), 100 releases each (the
    error: median of the maximum rank error over the nine levels): normal on (0, 100) and
    (-1e4, 1e4), lognormal on (0, 2e6) and (0, 1e7). The Session counts the values on its
    grid in the engine; the note gives the grid's unit and the ratio of the two errors
    (target: at most 1.2).

The inverse-sensitivity median on 10^6 values against ``np.sort`` is the ``inverse median 1e6``
task of bench_frameworks.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks._harness import Table, optional_import, timeit

SEED = 20261123
TRIALS = 30
DECILES = [k / 10 for k in range(1, 10)]


def _datasets(n: int) -> dict[str, tuple[np.ndarray, tuple[float, float]]]:
    rng = np.random.default_rng(SEED + n)
    return {
        "normal": (np.clip(rng.normal(50, 15, n), 0, 100), (0.0, 100.0)),
        "lognormal": (rng.lognormal(10, 1, n), (0.0, 1e7)),
        "ints": (rng.integers(18, 91, n), (0.0, 100.0)),
    }


def _mean_datasets(n: int) -> dict[str, np.ndarray]:
    """The columns whose means are released with ``bounds="auto"`` (array and Session rows)."""
    rng = np.random.default_rng(SEED + 7 * n)
    return {
        "normal": rng.normal(50, 15, n),
        "lognormal": rng.lognormal(10, 1, n),
        "pareto": (rng.pareto(2, n) + 1) * 1000,
    }


def rank_error(sorted_x: np.ndarray, est: Any, levels: list[float]) -> float:
    """Largest tie-aware normalised rank error of the estimates (one per level)."""
    n = sorted_x.size
    est = np.atleast_1d(np.asarray(est, dtype=np.float64))
    lt = np.searchsorted(sorted_x, est, side="left")
    le = np.searchsorted(sorted_x, est, side="right")
    t = np.asarray(levels) * n
    return float(np.max(np.maximum(0, np.maximum(lt - t, t - le))) / n)


def _guard(table: Table, task: str, impl: str, fn: Callable[[], None]) -> None:
    try:
        fn()
    except Exception as exc:  # a competitor's failure becomes a row, not a crash
        table.missing(task, impl, exc)


def _accuracy(
    table: Table,
    task: str,
    impl: str,
    release: Callable[[int], Any],
    xs: np.ndarray,
    levels: list[float],
    note: str,
    trials: int = TRIALS,
) -> None:
    errs = [rank_error(xs, release(t), levels) for t in range(trials)]
    secs = timeit(lambda: release(0), repeat=3, warmup=0)
    table.add(task, impl, secs, error=100 * float(np.median(errs)), note=note)


def _competitors(
    x: np.ndarray, bounds: tuple[float, float], levels: list[float], eps: float
) -> dict[str, tuple[Callable[[int], Any], str]]:
    """Competitor releases of ``levels`` on ``x`` at total ``eps`` (missing ones skipped)."""
    out: dict[str, tuple[Callable[[int], Any], str]] = {}
    m = len(levels)
    dl = optional_import("diffprivlib.tools")
    if dl is not None:
        xf = x.astype(np.float64)
        out["diffprivlib"] = (
            lambda t: dl.quantile(xf, levels, epsilon=eps, bounds=bounds, random_state=t),
            "tools.quantile: Smith EM over intervals" + (", epsilon / 9 each" if m > 1 else ""),
        )
    dp = optional_import("opendp.prelude")
    if dp is not None:
        dp.enable_features("contrib")
        cands = np.linspace(bounds[0], bounds[1], 1001).tolist()
        space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.symmetric_distance()
        meas = []
        for q in levels:
            probe = dp.m.make_private_quantile(
                *space, dp.max_divergence(), candidates=cands, alpha=q, scale=1.0
            )
            # symmetric distance: one added/removed record is distance 1
            scale = float(probe.map(1)) * m / eps
            meas.append(
                dp.m.make_private_quantile(
                    *space, dp.max_divergence(), candidates=cands, alpha=q, scale=scale
                )
            )
        xl = x.astype(np.float64).tolist()
        out["opendp"] = (
            lambda t: [mm(xl) for mm in meas],
            "make_private_quantile, 1,001 candidates" + (", epsilon / 9 each" if m > 1 else ""),
        )
    qt = optional_import("pydp.algorithms.quantile_tree")
    if qt is not None:
        xl2 = x.astype(np.float64).tolist()

        def tree(_t: int) -> Any:
            tr = qt.QuantileTree(bounds[0], bounds[1], 4, 16)
            for v in xl2:
                tr.add_entry(v)
            return tr.compute_quantiles(eps, 0.0, 1, 1, levels)

        out["pipelinedp tree"] = (tree, "PyDP QuantileTree h=4 b=16 (PipelineDP PERCENTILE)")
    return out


def bench_median(table: Table) -> None:
    from dpkit.statistics import quantile

    for name, (x, bounds) in _datasets(10**4).items():
        task = f"median 1e4 eps1 {name}"
        xs = np.sort(np.clip(x, *bounds).astype(np.float64))
        _accuracy(
            table,
            task,
            "dpkit",
            lambda t, x=x, b=bounds: (
                quantile(x, 0.5, epsilon=1.0, bounds=b, intervals=False, rng=t).value
            ),
            xs,
            [0.5],
            "quantile(intervals=False); target " + ("0.05%" if name == "ints" else "0.01%"),
        )
        _accuracy(
            table,
            task,
            "dpkit +intervals",
            lambda t, x=x, b=bounds: quantile(x, 0.5, epsilon=1.0, bounds=b, rng=t).value,
            xs,
            [0.5],
            "default: 3/4 of epsilon on the median, 1/4 on its interval",
        )
        for impl, (fn, note) in _competitors(x, bounds, [0.5], 1.0).items():
            _guard(
                table,
                task,
                impl,
                lambda fn=fn, impl=impl, note=note, task=task, xs=xs: _accuracy(
                    table, task, impl, fn, xs, [0.5], note
                ),
            )


def bench_deciles(table: Table) -> None:
    from dpkit.statistics import quantiles

    cells = [
        ("normal", 1.0),
        ("normal", 0.1),
        ("lognormal", 1.0),
        ("lognormal", 0.1),
        ("ints", 1.0),
    ]
    data = _datasets(10**4)
    for name, eps in cells:
        x, bounds = data[name]
        task = f"deciles 1e4 eps{eps:g} {name}"
        xs = np.sort(np.clip(x, *bounds).astype(np.float64))
        methods = (
            ("auto", "aq", "joint", "independent")
            if name == "ints"
            else ("auto", "joint", "independent")
        )
        notes = {
            "auto": "default: cdf on an integer column, else ApproximateQuantiles",
            "aq": "ApproximateQuantiles",
            "joint": "JointExp, exact",
            "independent": "epsilon / 9 per level",
        }
        for method in methods:
            impl = "dpkit" if method == "auto" else f"dpkit {method}"
            _accuracy(
                table,
                task,
                impl,
                lambda t, x=x, b=bounds, m=method, e=eps: (
                    quantiles(
                        x, DECILES, epsilon=e, bounds=b, method=m, intervals=False, rng=t
                    ).values
                ),
                xs,
                DECILES,
                notes[method],
                trials=TRIALS if method != "joint" else 20,
            )
        for impl, (fn, note) in _competitors(x, bounds, DECILES, eps).items():
            _guard(
                table,
                task,
                impl,
                lambda fn=fn, impl=impl, note=note, task=task, xs=xs: _accuracy(
                    table,
                    task,
                    impl,
                    fn,
                    xs,
                    DECILES,
                    note,
                    trials=10 if "opendp" in impl else TRIALS,
                ),
            )


def bench_decile_time(table: Table) -> None:
    from dpkit.statistics import quantiles

    x, bounds = _datasets(10**5)["normal"]
    task = "deciles 1e5 time"
    table.add(task, "numpy", timeit(lambda: np.quantile(x, DECILES)), note="np.quantile")
    for impl, kw, note in (
        ("dpkit", {"intervals": False}, "ApproximateQuantiles; target 20 ms"),
        ("dpkit +intervals", {}, "default release with intervals"),
        ("dpkit joint", {"intervals": False, "method": "joint"}, "JointExp, exact"),
    ):
        table.add(
            task,
            impl,
            timeit(
                lambda kw=kw: quantiles(x, DECILES, epsilon=1.0, bounds=bounds, **kw),
                repeat=5 if "joint" not in impl else 2,
            ),
            note=note,
        )
    for impl, (fn, note) in _competitors(x, bounds, DECILES, 1.0).items():
        _guard(
            table,
            task,
            impl,
            lambda fn=fn, impl=impl, note=note: table.add(
                task, impl, timeit(lambda: fn(0), repeat=2, warmup=0), note=note
            ),
        )


def bench_means(table: Table) -> None:
    from dpkit.statistics import mean

    for n in (10**4, 10**5):
        for name, x in _mean_datasets(n).items():
            task = f"mean auto {name} 1e{int(np.log10(n))}"
            truth = float(x.mean())

            def add(
                impl: str,
                rel: Callable[[int], float],
                note: str,
                task: str = task,
                truth: float = truth,
            ) -> None:
                errs = [abs(rel(t) - truth) / abs(truth) for t in range(TRIALS)]
                table.add(
                    task,
                    impl,
                    timeit(lambda: rel(0), repeat=3, warmup=0),
                    error=100 * float(np.median(errs)),
                    note=note,
                )

            add(
                "dpkit",
                lambda t, x=x: mean(x, epsilon=1.0, rng=t).value,
                "bounds='auto' (histogram, half of epsilon)",
            )
            add(
                "dpkit tail",
                lambda t, x=x: mean(x, epsilon=1.0, bounds_method="tail", rng=t).value,
                "bounds='auto', tail quantile 0.999 (Durfee 2023)",
            )
            lap = optional_import("pydp.algorithms.laplacian")
            if lap is None:
                table.missing(task, "pydp", "python-dp is not installed")
                continue
            xl = x.tolist()

            def pydp_mean(_t: int, xl: list[float] = xl, lap: Any = lap) -> float:
                return float(lap.BoundedMean(epsilon=1.0, dtype="float").quick_result(xl))

            _guard(
                table,
                task,
                "pydp",
                lambda: add(
                    "pydp", pydp_mean, "BoundedMean without bounds (ApproximateBounds, eps/2)"
                ),
            )


def bench_session(table: Table) -> None:
    """The same tasks through the Session on a Polars frame (engine-side grid counts and log2
    histograms; every release also pays its intervals)."""
    import polars as pl

    import dpkit as dp

    data = _datasets(10**4)
    for name in ("normal", "lognormal", "ints"):
        x, bounds = data[name]
        task = f"deciles 1e4 eps1 {name}"
        xs = np.sort(np.clip(x, *bounds).astype(np.float64))
        df = pl.DataFrame({"x": x})
        cols = [f"x_{q:g}" for q in DECILES]

        def session_deciles(
            t: int, df: pl.DataFrame = df, b: Any = bounds, cols: list[str] = cols
        ) -> Any:
            s = dp.Session(df, budget=dp.PureDP(1e9), rng=t)
            out = s.query().agg(dp.quantile("x", DECILES, bounds=b)).release(epsilon=1.0)
            return out.select(cols).row(0)

        _accuracy(
            table,
            task,
            "dpkit Session",
            session_deciles,
            xs,
            DECILES,
            "dp.quantile(x, deciles) in a Session (3/4 of epsilon on the values)",
        )
    for n in (10**4, 10**5):
        for name, x in _mean_datasets(n).items():
            task = f"mean auto {name} 1e{int(np.log10(n))}"
            truth = float(x.mean())
            df = pl.DataFrame({"x": x})
            for share, method in ((0.25, "histogram"), (0.5, "histogram"), (0.5, "tail")):

                def session_mean(
                    t: int, df: pl.DataFrame = df, share: float = share, method: str = method
                ) -> float:
                    s = dp.Session(df, budget=dp.PureDP(1e9), rng=t)
                    agg = dp.mean("x", bounds="auto", bounds_share=share, bounds_method=method)
                    return float(s.query().agg(agg).release(epsilon=1.0)["x_mean"][0])

                errs = [abs(session_mean(t) - truth) / abs(truth) for t in range(TRIALS)]
                tail = " tail" if method == "tail" else ""
                table.add(
                    task,
                    f"dpkit Session {share:g}{tail}",
                    timeit(lambda f=session_mean: f(0), repeat=3, warmup=0),
                    error=100 * float(np.median(errs)),
                    note=f"dp.mean(bounds='auto', bounds_share={share:g}"
                    + (", bounds_method='tail'" if tail else "")
                    + ") in a Session",
                )


GRID_TRIALS = 100


def bench_session_grid(table: Table, trials: int = GRID_TRIALS) -> None:
    """Session deciles against the array path on tight and loose bounds (module docstring)."""
    import polars as pl

    import dpkit as dp
    from dpkit.statistics import quantiles

    x_normal, _ = _datasets(10**4)["normal"]
    x_lognormal, _ = _datasets(10**4)["lognormal"]
    cases = (
        ("normal", "tight", x_normal, (0.0, 100.0)),
        ("normal", "loose", x_normal, (-1e4, 1e4)),
        ("lognormal", "tight", x_lognormal, (0.0, 2e6)),
        ("lognormal", "loose", x_lognormal, (0.0, 1e7)),
    )
    cols = [f"x_{q:g}" for q in DECILES]
    for name, kind, x, bounds in cases:
        task = f"session deciles 1e4 eps1 {name} {kind}"
        xs = np.sort(np.clip(x, *bounds).astype(np.float64))
        df = pl.DataFrame({"x": x})

        def array(t: int, x: np.ndarray = x, b: Any = bounds) -> Any:
            return quantiles(x, DECILES, epsilon=1.0, bounds=b, rng=t).values

        def session(t: int, df: pl.DataFrame = df, b: Any = bounds) -> Any:
            s = dp.Session(df, budget=dp.PureDP(1e9), rng=t)
            out = s.query().agg(dp.quantile("x", DECILES, bounds=b)).release(epsilon=1.0)
            return out.select(cols).row(0)

        errs = {}
        for impl, fn in (("dpkit", array), ("dpkit Session", session)):
            errs[impl] = float(np.median([rank_error(xs, fn(t), DECILES) for t in range(trials)]))
        unit = dp.quantile("x", DECILES, bounds=bounds).grid().unit
        ratio = errs["dpkit Session"] / errs["dpkit"]
        for impl, fn, note in (
            ("dpkit", array, f"quantiles(bounds={bounds}), 1/4 of epsilon on intervals"),
            ("dpkit Session", session, f"grid unit {unit:g}; error {ratio:.2f}x the array's"),
        ):
            table.add(
                task,
                impl,
                timeit(lambda fn=fn: fn(0), repeat=3, warmup=1),
                error=100 * errs[impl],
                note=note,
            )


def run(table: Table) -> None:
    """Add the quantile, decile and automatic-bounds mean rows to ``table``."""
    bench_median(table)
    bench_deciles(table)
    bench_decile_time(table)
    bench_means(table)
    bench_session(table)
    bench_session_grid(table)
