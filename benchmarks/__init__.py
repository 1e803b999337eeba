"""dpkit benchmarks: ``python -m benchmarks [NAME ...]`` (or ``make bench``).

Each ``benchmarks/bench_*.py`` module exposes ``run(table)``; the harness in
:mod:`benchmarks._harness` times, collects and prints. See benchmarks/README.md.
"""

from benchmarks._harness import Row, Table, environment, optional_import, timeit

__all__ = ["Row", "Table", "environment", "optional_import", "timeit"]
