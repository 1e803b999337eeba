"""Audit a Session query of your own: ``dpkit audit query examples/audit_session_query.py``.

The query: how many people live in each city, and their mean age, with the cities chosen
privately (no public list of keys), each person protected with all their rows. The audit
removes the person with the most rows, then a person alone in a city (Brest), and checks that
the released frames stay (epsilon, delta)-close (docs/guides/auditing.md).

``query`` is batched: :class:`dpkit.audit.SessionQuery` computes the engine's aggregates once
and draws thousands of releases a second through the release's own code. A plain
``def query(frame, rng): return build(frame).release(epsilon=1.0, delta=1e-6, rng=rng)``
audits the same query one release at a time (about a hundred a second).
"""

import dpkit as dp
from dpkit.audit import SessionQuery

DATA = "people.csv"  # read next to this file; columns id, city, age, hours
PRIVACY_UNIT = "id"
GROUP_BY = "city"
CLAIM = dp.ApproxDP(1.0, 1e-6)


def build(frame):
    """The query on one table (the audit builds it on both neighbours)."""
    s = dp.Session(
        frame,
        privacy_unit="id",
        max_rows_per_unit=2,
        max_groups_per_unit=2,
        budget=dp.ApproxDP(1.0, 1e-6),
    )
    return s.query().group_by("city").agg(dp.count(), dp.mean("age", bounds=(0, 100)))


query = SessionQuery(build, epsilon=1.0, delta=1e-6)
