"""Sensitivity: how much one record can move a query's answer.

Definitions (the contract)
--------------------------
- Datasets are multisets. ``relation="unbounded"``: neighbours add or remove one record and
  ``dist(x, y) = |x Δ y|`` (replacing a record is distance 2). ``relation="bounded"``: same
  size, ``dist`` is the number of records replaced.
- ``LS_k(f, x) = max |f(x) - f(y)|`` over ``1 <= dist(x, y) <= k``: :func:`local` (exact, fast;
  :func:`local_by_distance` for several ``k`` at once) and :func:`empirical_local` (brute
  force over a universe).
- Global sensitivity: the largest ``LS_k`` over every dataset in scope:
  :func:`global_sensitivity` (closed forms) and :func:`empirical_global` (brute force).
- ``A(f, x, k) = max LS_1(f, y)`` over ``dist(x, y) <= k``: :func:`local_at_distance`.
- ``S_beta(f, x) = max_k exp(-beta k) A(f, x, k)``: :func:`smooth`.
- With ``bounds=(lower, upper)`` an added or replacing record may take any value in the range;
  with a ``universe`` it is drawn from that multiset.

Local sensitivity is never used directly to scale noise: the frameworks in
:mod:`dpkit.frameworks` (propose-test-release, smooth sensitivity) use it safely.
"""

from dpkit.sensitivity.analytic import global_sensitivity
from dpkit.sensitivity.at_distance import local_at_distance
from dpkit.sensitivity.empirical import (
    DEFAULT_MAX_DATASETS,
    empirical_at_distance,
    empirical_global,
    empirical_local,
)
from dpkit.sensitivity.local_exact import local, local_by_distance
from dpkit.sensitivity.smooth_sensitivity import SmoothSensitivity, smooth
from dpkit.sensitivity.table import SweepRow, sweep

__all__ = [
    "DEFAULT_MAX_DATASETS",
    "SmoothSensitivity",
    "SweepRow",
    "empirical_at_distance",
    "empirical_global",
    "empirical_local",
    "global_sensitivity",
    "local",
    "local_at_distance",
    "local_by_distance",
    "smooth",
    "sweep",
]
