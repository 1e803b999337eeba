"""Sensitivity benchmarks: exact local and smooth sensitivity on 10^6 values, and the oracle.

Tasks:

``local <q> 1e6``
    Exact local sensitivity LS_1 (unbounded, bounds (0, 100)) of the median, the 90th
    percentile, the mean and the variance of 10^6 uniform values, including the sort. The
    ``numpy`` row computes the statistic itself (``numpy.median`` and so on), the floor any
    sensitivity computation pays.
``smooth median 1e6``
    Exact smooth sensitivity of the median (unbounded, beta = 0.035, about
    epsilon / (2 ln(2 / delta)) for epsilon = 1, delta = 1e-6), on the same data and on 10^6
    Adult ages (ties hundreds of thousands deep).
``smooth var 1e6``, ``smooth std 1e6``
    Exact smooth sensitivity of the population variance and deviation of the 10^6 ages, both
    neighbour relations.
``smooth mean, tiny beta``
    Exact smooth sensitivity of the mean of the 32,561 Adult ages at the beta of
    ``dpkit compare --epsilon 1e-12`` (every distance up to n + 1 is scanned).
``local var, k = 1..200``, ``global var, k = 1..200``
    ``dpkit sensitivity --distance 1..200`` on 2,000 values: the local variance at every
    distance in one sweep, and the unbounded variance's global sensitivity at each.
``oracle vs exact``
    The brute-force oracle (``empirical_local`` / ``empirical_global``) against the exact
    function on a case both can do; the error column is their absolute difference (0 expected).

No other DP library computes sensitivity (they take it from declared bounds), so there are no
competitor rows.
"""

from __future__ import annotations

import numpy as np

from benchmarks._harness import Table, timeit

N = 10**6
BOUNDS = (0.0, 100.0)
BETA = 0.035
SEED = 20261122


def run(table: Table) -> None:
    from dpkit import sensitivity as sens

    rng = np.random.default_rng(SEED)
    x = rng.uniform(*BOUNDS, size=N)
    stats = {
        "median": np.median,
        "p90": lambda v: np.percentile(v, 90),
        "mean": np.mean,
        "var": np.var,
    }
    for name, stat in stats.items():
        task = f"local {name} 1e6"
        table.add(task, "numpy", timeit(lambda stat=stat: stat(x)), note="the statistic alone")
        table.add(
            task,
            "dpkit",
            timeit(lambda name=name: sens.local(name, x, relation="unbounded", bounds=BOUNDS)),
            note="exact LS_1, unbounded, incl. sort",
        )

    task = "smooth median 1e6"
    table.add(task, "numpy", timeit(lambda: np.median(x)), note="the statistic alone")
    table.add(
        task,
        "dpkit",
        timeit(lambda: sens.smooth("median", x, beta=BETA, relation="unbounded", bounds=BOUNDS)),
        note=f"uniform data, beta {BETA}",
    )
    from dpkit.datasets import load_adult

    ages = np.resize(load_adult()["Age"].to_numpy().astype(float), N)
    table.add(
        task,
        "dpkit adult ages",
        timeit(lambda: sens.smooth("median", ages, beta=BETA, relation="unbounded", bounds=BOUNDS)),
        note="10^6 ages, deep ties",
    )
    for name, stat in (("var", np.var), ("std", np.std)):
        task = f"smooth {name} 1e6"
        table.add(task, "numpy", timeit(lambda stat=stat: stat(ages)), note="the statistic alone")
        for rel in ("unbounded", "bounded"):
            table.add(
                task,
                f"dpkit {rel}",
                timeit(
                    lambda name=name, rel=rel: sens.smooth(
                        name, ages, beta=BETA, relation=rel, bounds=BOUNDS
                    )
                ),
                note="10^6 Adult ages",
            )

    # `dpkit compare --epsilon 1e-12` on Adult: beta = epsilon / (2 ln(2 / delta)) is so small
    # that the scan runs over every k up to n + 1 (each A(f, x, k) of the mean by bisection)
    adult = load_adult()["Age"].to_numpy().astype(float)
    tiny = 1e-12 / (2 * np.log(2 * adult.size**2))
    task = "smooth mean, tiny beta, 32,561 ages"
    table.add(task, "numpy", timeit(lambda: np.mean(adult)), note="the statistic alone")
    table.add(
        task,
        "dpkit",
        timeit(
            lambda: sens.smooth("mean", adult, beta=tiny, relation="unbounded", bounds=BOUNDS),
            repeat=3,
        ),
        note=f"beta {tiny:.2g}: every k up to n + 1",
    )
    # `dpkit sensitivity --distance 1..200` on 2,000 values: one sweep for the local values,
    # one table of the unbounded variance's global sensitivity
    small = rng.uniform(*BOUNDS, size=2000)
    ks = list(range(1, 201))
    task = "local var, k = 1..200, n = 2,000"
    table.add(task, "numpy", timeit(lambda: np.var(small)), note="the statistic alone")
    table.add(
        task,
        "dpkit",
        timeit(
            lambda: sens.local_by_distance("var", small, ks, relation="unbounded", bounds=BOUNDS),
            repeat=3,
        ),
        note="local_by_distance, unbounded",
    )

    def global_var_table() -> None:
        from dpkit.sensitivity.analytic import _var_change_table

        _var_change_table.cache_clear()  # time the table, not the cache
        for k in ks:
            sens.global_sensitivity("var", bounds=BOUNDS, relation="unbounded", n=2000, distance=k)

    table.add(
        "global var, k = 1..200, n = 2,000",
        "dpkit",
        timeit(global_var_table, repeat=3),
        note="global_sensitivity at each k, unbounded",
    )

    # the oracle against the exact function on a case both can do
    data = rng.integers(0, 101, size=12).astype(float)
    k = 3
    # data, k copies of each bound and a grid: the extremes use only data and bounds, so the
    # brute force over this universe must give the exact value
    grid = np.linspace(*BOUNDS, 21)[1:-1]
    universe = np.concatenate([data, [BOUNDS[0]] * k, [BOUNDS[1]] * k, grid])
    task = "oracle vs exact: local median n=12 k=3"
    exact = sens.local("median", data, distance=k, relation="unbounded", bounds=BOUNDS)
    brute = sens.empirical_local("median", data, universe, distance=k, relation="unbounded")
    table.add(
        task,
        "dpkit",
        timeit(lambda: sens.local("median", data, distance=k, relation="unbounded", bounds=BOUNDS)),
        note="exact",
    )
    table.add(
        task,
        "dpkit brute force",
        timeit(
            lambda: sens.empirical_local(
                "median", data, universe, distance=k, relation="unbounded"
            ),
            repeat=3,
        ),
        error=abs(exact - brute),
        note="empirical_local, data + bounds + 19-point grid",
    )
    task = "oracle vs exact: global mean n=8 k=2"
    uni = [BOUNDS[0]] * 10 + [BOUNDS[1]] * 10 + [50.0] * 4
    exact = sens.global_sensitivity("mean", bounds=BOUNDS, relation="unbounded", n=8, distance=2)
    brute = sens.empirical_global("mean", uni, 8, distance=2, relation="unbounded")
    table.add(
        task,
        "dpkit",
        timeit(
            lambda: sens.global_sensitivity(
                "mean", bounds=BOUNDS, relation="unbounded", n=8, distance=2
            )
        ),
        note="closed form",
    )
    table.add(
        task,
        "dpkit brute force",
        timeit(
            lambda: sens.empirical_global("mean", uni, 8, distance=2, relation="unbounded"),
            repeat=3,
        ),
        error=abs(exact - brute),
        note="empirical_global, 10 x lower, 10 x upper, 4 x 50",
    )
