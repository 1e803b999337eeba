"""The sensitivity catalogue, also importable as ``dpkit.queries``.

The catalogue lives in :mod:`dpkit.sensitivity.catalogue` (the statistics whose sensitivity
:mod:`dpkit.sensitivity` computes, by name, and :class:`~dpkit.sensitivity.catalogue.Statistic`,
also named ``Query`` here). This module is that module: ``dpkit.queries is
dpkit.sensitivity.catalogue``, so ``dpkit.queries.median`` and
``dpkit.sensitivity.catalogue.median`` are one object.
"""

import sys

from dpkit.sensitivity import catalogue as _catalogue
from dpkit.sensitivity.catalogue import (  # explicit re-exports, for type checkers
    CATALOGUE as CATALOGUE,
)
from dpkit.sensitivity.catalogue import (
    Query as Query,
)
from dpkit.sensitivity.catalogue import (
    Statistic as Statistic,
)
from dpkit.sensitivity.catalogue import (
    count as count,
)
from dpkit.sensitivity.catalogue import (
    custom as custom,
)
from dpkit.sensitivity.catalogue import (
    exact_statistic as exact_statistic,
)
from dpkit.sensitivity.catalogue import (
    histogram as histogram,
)
from dpkit.sensitivity.catalogue import (
    mean as mean,
)
from dpkit.sensitivity.catalogue import (
    median as median,
)
from dpkit.sensitivity.catalogue import (
    percentile as percentile,
)
from dpkit.sensitivity.catalogue import (
    resolve as resolve,
)
from dpkit.sensitivity.catalogue import (
    statistic_on_grid as statistic_on_grid,
)
from dpkit.sensitivity.catalogue import (
    std as std,
)
from dpkit.sensitivity.catalogue import (
    sum as sum,
)
from dpkit.sensitivity.catalogue import (
    var as var,
)

__all__ = _catalogue.__all__

sys.modules[__name__] = _catalogue  # one module under both names
