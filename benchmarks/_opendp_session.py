"""OpenDP's Polars Context on the Session benchmark tasks, run in its own environment.

OpenDP's polars extra pins an exact Polars version, so ``make bench`` installs it in
``.venv-bench-opendp`` and ``bench_session`` runs this file there as a subprocess; it prints
one JSON object of median seconds. It imports neither dpkit nor the harness.
Usage: ``python benchmarks/_opendp_session.py N SEED``.
"""

from __future__ import annotations

import json
import statistics
import sys
import time

import numpy as np
import opendp.prelude as dp
import polars as pl

dp.enable_features("contrib")


def _median_time(fn, repeat: int = 3) -> float:
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    n, seed = int(sys.argv[1]), int(sys.argv[2])
    rng = np.random.default_rng(seed)
    lf = pl.DataFrame({"g": rng.integers(0, 1000, n), "x": rng.uniform(0, 100, n)}).lazy()
    keys = pl.LazyFrame({"g": np.arange(1000, dtype=np.int64)})
    context = dp.Context.compositor(
        data=lf,
        privacy_unit=dp.unit_of(contributions=1),
        privacy_loss=dp.loss_of(epsilon=1000.0),
        split_evenly_over=1000,
        margins=[dp.polars.Margin(max_length=n)],
    )

    def count() -> None:
        context.query().group_by("g").agg(dp.len()).with_keys(keys).release().collect()

    def mean() -> None:
        context.query().select(pl.col("x").fill_null(0.0).dp.mean((0.0, 100.0))).release().collect()

    out = {
        "version": dp.__version__ if hasattr(dp, "__version__") else "?",
        "polars": pl.__version__,
    }
    for name, fn in (("count", count), ("mean", mean)):
        try:
            out[name] = _median_time(fn)
        except Exception as exc:  # report, do not crash the benchmark run
            out[name] = None
            out[f"{name}_error"] = f"{type(exc).__name__}: {exc}"[:300]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
