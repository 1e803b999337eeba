"""SmartNoise SQL on the SQL benchmark tasks, run in its own environment.

SmartNoise SQL (``smartnoise-sql``) pins versions of pandas, SQLAlchemy and OpenDP that
dpkit's environments do not share, so ``make bench`` installs it in
``.venv-bench-smartnoise`` and ``bench_sql`` runs this file there as a subprocess; it prints
one JSON object and imports neither dpkit nor the harness.

Usage::

    python benchmarks/_smartnoise_sql.py groups N SEED REPEAT
    python benchmarks/_smartnoise_sql.py pums CSV YAML REPEAT

Budget: SmartNoise charges epsilon per computed column (``get_privacy_cost``); each query
runs at the epsilon that makes its total cost 1, dpkit's budget for the same query.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from typing import Any

import numpy as np
import pandas as pd
import snsql
from snsql import Privacy
from snsql.metadata import Metadata

#: (label, query) on the PUMS sample, as SmartNoise reads it (table PUMS.PUMS)
PUMS_QUERIES = [
    ("count", "SELECT COUNT(*) AS n FROM PUMS.PUMS"),
    ("count by sex", "SELECT sex, COUNT(*) AS n FROM PUMS.PUMS GROUP BY sex"),
    ("mean age by sex", "SELECT sex, AVG(age) AS a FROM PUMS.PUMS GROUP BY sex"),
    ("mean income by educ", "SELECT educ, AVG(income) AS m FROM PUMS.PUMS GROUP BY educ"),
    ("sum income by race", "SELECT race, SUM(income) AS s FROM PUMS.PUMS GROUP BY race"),
    (
        "count by married, sex",
        "SELECT married, sex, COUNT(*) AS n FROM PUMS.PUMS GROUP BY married, sex",
    ),
    ("stddev age", "SELECT STDDEV(age) AS sd FROM PUMS.PUMS"),
    ("mean age where income > 50000", "SELECT AVG(age) AS a FROM PUMS.PUMS WHERE income > 50000"),
    ("median age", "SELECT MEDIAN(age) AS med FROM PUMS.PUMS"),
    (
        "deciles of age",
        "SELECT PERCENTILE_CONT(0.1) WITHIN GROUP (ORDER BY age) AS p10 FROM PUMS.PUMS",
    ),
    ("min age", "SELECT MIN(age) AS m FROM PUMS.PUMS"),
    (
        "count by educ label (join)",
        "SELECT label, COUNT(*) AS n FROM PUMS.PUMS JOIN PUMS.educ ON educ = code GROUP BY label",
    ),
]


def _median_time(fn: Any, repeat: int) -> tuple[float, list[Any]]:
    out = [fn()]
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        out.append(fn())
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def _rows(result: Any) -> list[list[Any]]:
    return [[_plain(v) for v in row] for row in result[1:]]


def _plain(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    return v


def _scaled(connect: Any, query: str, delta: float) -> Any:
    """A connection whose epsilon makes ``query``'s total cost 1."""
    cost, _ = connect(1.0, delta).get_privacy_cost(query)
    return connect(1.0 / float(cost), delta), float(cost)


def groups(n: int, seed: int, repeat: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"g": rng.integers(0, 10, n).astype(str), "x": rng.uniform(0, 100, n)})
    meta = {
        "": {
            "data": {
                "t": {
                    "row_privacy": True,
                    "rows": n,
                    "censor_dims": False,  # public groups, as dpkit's keys
                    "g": {"type": "string"},
                    "x": {"type": "float", "lower": 0.0, "upper": 100.0},
                }
            }
        }
    }
    query = "SELECT g, COUNT(*) AS n, SUM(x) AS s, AVG(x) AS m FROM data.t GROUP BY g"

    def connect(eps: float, delta: float) -> Any:
        return snsql.from_df(
            df, privacy=Privacy(epsilon=eps, delta=delta), metadata=Metadata.from_dict(meta)
        )

    conn, cost = _scaled(connect, query, 0.0)
    seconds, results = _median_time(lambda: conn.execute(query), repeat)
    return {"seconds": seconds, "cost_at_epsilon_1": cost, "runs": [_rows(r) for r in results]}


def pums(csv: str, yaml: str, repeat: int) -> dict[str, Any]:
    df = pd.read_csv(csv)
    out: dict[str, Any] = {}
    for label, query in PUMS_QUERIES:

        def connect(eps: float, delta: float) -> Any:
            return snsql.from_df(df, privacy=Privacy(epsilon=eps, delta=delta), metadata=yaml)

        try:
            conn, cost = _scaled(connect, query, 1e-5)
            seconds, results = _median_time(lambda c=conn, q=query: c.execute(q), repeat)
        except Exception as err:  # SmartNoise's refusal: reported, not raised
            out[label] = {"refused": f"{type(err).__name__}: {str(err).splitlines()[0][:200]}"}
            continue
        out[label] = {
            "seconds": seconds,
            "cost_at_epsilon_1": cost,
            "runs": [_rows(r) for r in results],
        }
    return out


def main() -> None:
    mode = sys.argv[1]
    if mode == "groups":
        out = groups(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
    else:
        out = pums(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    out["version"] = getattr(snsql, "__version__", None) or _version()
    print(json.dumps(out, default=str))


def _version() -> str:
    from importlib.metadata import version

    return version("smartnoise-sql")


if __name__ == "__main__":
    main()
