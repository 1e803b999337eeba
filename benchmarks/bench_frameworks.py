"""Local-sensitivity framework benchmarks.

Tasks:

``inverse median 1e6``
    A private median of 10^6 values uniform on [0, 100], epsilon 1, bounds [0, 100]. Rows:
    NumPy's sort of the same array (the reference: the mechanism needs sorted data), dpkit's
    exact continuous inverse-sensitivity mechanism, OpenDP's ``make_private_quantile`` (on a
    grid of 1,001 candidates; ``scale`` set so that ``map(1) == 1``, symmetric distance) and
    diffprivlib's ``tools.median``. Error: the median over 20 releases of
    ``|release - numpy.median(x)|``.
``smooth median release 1e6``
    dpkit's smooth-sensitivity release of the median of the same data, with Laplace
    (``delta = 1e-6``) and Cauchy noise; NumPy's median as the reference time. Error: the
    median over 20 releases of ``|release - median|``.
``smooth median release 501 eps1e-3``
    The Laplace release at epsilon 1e-3 on 501 values evenly spread on [1, 99], where the
    smooth sensitivity's scan reaches every distance (its speed only: at this epsilon the
    noise is as wide as the bounds).
``median adult eps1e-12``
    The median of Adult's Age (32,561 records, bounds [0, 100]) at epsilon 1e-12 and delta
    ``1 / n**2``: the smooth-sensitivity release (Laplace noise; its distance reaches
    ``n + 1``, where the scan of every distance took over 900 s) and the propose-test-release
    release (proposed bound 1, compare's default; its cap is far away, where the scan took
    over 600 s). Speed only: at this epsilon the noise is as wide as the bounds.
``compare adult 1000``
    ``dpkit.compare`` with 1,000 trials of every method on Adult's Age (mean, then median).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from benchmarks._harness import Table, optional_import, timeit

N = 10**6
EPSILON = 1.0
BOUNDS = (0.0, 100.0)
SEED = 20261122  # the data only; dpkit rows use secure randomness
RELEASES = 20

INVERSE = "inverse median 1e6"
SMOOTH = "smooth median release 1e6"
SMOOTH_SMALL_EPS = "smooth median release 501 eps1e-3"
TINY_EPS = "median adult eps1e-12"
COMPARE = "compare adult 1000"


def _guard(table: Table, task: str, impl: str, fn: Any) -> None:
    try:
        fn()
    except Exception as exc:  # a competitor's failure becomes a row, not a crash
        table.missing(task, impl, exc)


def _median_error(release: Any, truth: float) -> float:
    return float(np.median([abs(float(release()) - truth) for _ in range(RELEASES)]))


def bench_inverse(table: Table, x: np.ndarray) -> None:
    truth = float(np.median(x))
    table.add(INVERSE, "numpy", timeit(lambda: np.sort(x)), note="np.sort of the data")

    def dpkit_row() -> None:
        from dpkit.frameworks import inverse_sensitivity

        def rel() -> float:
            return inverse_sensitivity(x, "median", epsilon=EPSILON, bounds=BOUNDS).value

        table.add(
            INVERSE,
            "dpkit",
            timeit(rel),
            error=_median_error(rel, truth),
            note="exact continuous mechanism, secure rng",
        )

    _guard(table, INVERSE, "dpkit", dpkit_row)

    def opendp_row() -> None:
        dp = optional_import("opendp.prelude")
        if dp is None:
            raise ImportError("opendp is not installed (pip install 'dpkit[bench]')")
        dp.enable_features("contrib")
        cands = np.linspace(*BOUNDS, 1001).tolist()
        space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.symmetric_distance()
        m = dp.m.make_private_quantile(
            *space, dp.max_divergence(), candidates=cands, alpha=0.5, scale=1.0
        )
        scale = 1.0 * float(m.map(1)) / EPSILON
        m = dp.m.make_private_quantile(
            *space, dp.max_divergence(), candidates=cands, alpha=0.5, scale=scale
        )
        xs = x.tolist()
        table.add(
            INVERSE,
            "opendp",
            timeit(lambda: m(xs)),
            error=_median_error(lambda: m(xs), truth),
            note=f"make_private_quantile, 1001 candidates, eps {float(m.map(1)):g}; list input",
        )

    _guard(table, INVERSE, "opendp", opendp_row)

    def diffprivlib_row() -> None:
        from diffprivlib.tools import median

        def rel() -> float:
            return float(median(x, epsilon=EPSILON, bounds=BOUNDS))

        table.add(
            INVERSE,
            "diffprivlib",
            timeit(rel),
            error=_median_error(rel, truth),
            note="tools.median (exponential mechanism over intervals)",
        )

    _guard(table, INVERSE, "diffprivlib", diffprivlib_row)


def bench_smooth(table: Table, x: np.ndarray) -> None:
    truth = float(np.median(x))
    table.add(SMOOTH, "numpy", timeit(lambda: np.median(x)), note="np.median (no privacy)")

    def rows() -> None:
        from dpkit.frameworks import smooth_sensitivity_release

        for noise, delta in (("laplace", 1e-6), ("cauchy", 0.0)):

            def rel(noise: str = noise, delta: float = delta) -> float:
                out = smooth_sensitivity_release(
                    x, "median", epsilon=EPSILON, delta=delta, bounds=BOUNDS, noise=noise
                )
                return float(out.value)

            table.add(
                SMOOTH,
                f"dpkit {noise}",
                timeit(rel, repeat=3),
                error=_median_error(rel, truth),
                note=f"smooth sensitivity + exact {noise} noise on a grid",
            )

    _guard(table, SMOOTH, "dpkit", rows)

    # a small epsilon scans every distance to n (the smooth sensitivity's k reaches n + 1):
    # the exact scan of the percentile windows (O(K^2)); an O(K^3) scan took 18 s here
    small = np.linspace(1.0, 99.0, 501)
    table.add(
        SMOOTH_SMALL_EPS, "numpy", timeit(lambda: np.median(small)), note="np.median (no privacy)"
    )

    def small_rows() -> None:
        from dpkit.frameworks import smooth_sensitivity_release

        def rel() -> float:
            out = smooth_sensitivity_release(
                small, "median", epsilon=1e-3, delta=1e-6, bounds=(0.0, 100.0)
            )
            return float(out.value)

        table.add(
            SMOOTH_SMALL_EPS,
            "dpkit laplace",
            timeit(rel, repeat=3),
            note="exact smooth sensitivity (k = 502) + exact Laplace noise",
        )

    _guard(table, SMOOTH_SMALL_EPS, "dpkit", small_rows)


def bench_tiny_epsilon(table: Table) -> None:
    def rows() -> None:
        from dpkit.datasets import load_adult
        from dpkit.frameworks import propose_test_release, smooth_sensitivity_release

        ages = load_adult()["Age"].to_numpy().astype(float)
        kw = {"epsilon": 1e-12, "delta": 1 / ages.size**2, "bounds": BOUNDS}
        table.add(
            TINY_EPS,
            "numpy",
            timeit(lambda: np.median(ages)),
            note="np.median (no privacy)",
        )
        table.add(
            TINY_EPS,
            "dpkit smooth laplace",
            timeit(lambda: smooth_sensitivity_release(ages, "median", **kw), repeat=3),
            note="exact smooth sensitivity (k = n + 1) by branch-and-bound over k",
        )
        table.add(
            TINY_EPS,
            "dpkit ptr",
            timeit(lambda: propose_test_release(ages, "median", 1.0, **kw), repeat=3),
            note="exact distance to high sensitivity by galloping search over k",
        )

    _guard(table, TINY_EPS, "dpkit", rows)


def bench_compare(table: Table) -> None:
    def rows() -> None:
        from dpkit.compare import compare
        from dpkit.datasets import load_adult

        ages = load_adult()["Age"].to_numpy().astype(float)
        delta = 1 / ages.size**2
        for stat in ("mean", "median"):
            secs = timeit(
                lambda stat=stat: compare(
                    ages, stat, bounds=BOUNDS, epsilon=EPSILON, delta=delta, trials=1000
                ),
                repeat=1,
                warmup=0,
            )
            table.add(COMPARE, f"dpkit {stat}", secs, note="all methods x 1,000 trials")

    _guard(table, COMPARE, "dpkit", rows)


def run(table: Table) -> None:
    """Add the ``inverse median``, ``smooth median``, ``median adult eps1e-12`` and
    ``compare`` rows to ``table``."""
    x = np.random.default_rng(SEED).uniform(*BOUNDS, size=N)
    bench_inverse(table, x)
    bench_smooth(table, x)
    bench_tiny_epsilon(table)
    bench_compare(table)
