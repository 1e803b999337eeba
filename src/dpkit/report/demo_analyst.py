"""Demo section: the analyst's task on the bundled Adult data with the Session.

"A private count per Education level, the mean Age per Sex and the median hours worked, under
a total epsilon of 1, one row per person", with every figure of each plan printed, then the
release report of the three releases (``analyst-report.html`` in the output folder). The
Session reference of the documentation (docs/guides/session.md) shows the same code.
"""

from __future__ import annotations

from typing import Any

TITLE = "The analyst: DataFrame queries with dp.Session"
#: the release report of the section's three releases, in the demo's output folder
REPORT = "analyst-report.html"


def run(ctx: Any) -> None:

    import dpkit as dp

    echo = ctx.echo
    # --- the code shown in docs/guides/session.md ---------------------------------------
    s = dp.Session(dp.datasets.load_adult(), budget=dp.ApproxDP(1.0, 1e-6), rng=ctx.rng(1101))
    counts = s.query().group_by("Education").agg(dp.count())  # keys chosen privately
    means = s.query().group_by("Sex", keys=["Female", "Male"]).agg(dp.mean("Age", bounds=(0, 100)))
    hours = s.query().agg(dp.median("Hours per week", bounds=(0, 100)))
    plan = [(counts, 0.5, 1e-6), (means, 0.25, 0.0), (hours, 0.25, 0.0)]
    for query, eps, delta in plan:
        echo(str(query.explain(epsilon=eps, delta=delta)))
        echo(str(query.release(epsilon=eps, delta=delta)))
    # -------------------------------------------------------------------------------------
    echo("")
    echo(s.accountant.summary())
    # the release report a privacy officer signs off (docs/guides/report.md)
    report = s.report(ctx.out / REPORT)
    echo("")
    echo(f"release report (open it in a browser): {report.resolve()}")
