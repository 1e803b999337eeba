"""Figures that explain sensitivity and the frameworks (matplotlib, an optional extra).

matplotlib is imported lazily, only when a figure is drawn; without it the functions raise
``ImportError("plotting needs matplotlib: pip install 'dpkit[plot]'")``. Every function takes
``ax=None`` (a new figure when omitted), returns the Axes and never calls ``plt.show()``.
"""

from __future__ import annotations

from typing import Any

from dpkit.plot.compare import plot_comparison
from dpkit.plot.sensitivity import median_neighbours, sensitivity_by_distance

__all__ = ["median_neighbours", "plot_comparison", "require_pyplot", "sensitivity_by_distance"]


def require_pyplot() -> Any:
    """Return ``matplotlib.pyplot``, or raise an ImportError naming the ``plot`` extra."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - exercised with matplotlib hidden
        raise ImportError("plotting needs matplotlib: pip install 'dpkit[plot]'") from exc
    return plt
