"""Figures that explain sensitivity and the frameworks (matplotlib, an optional extra).

matplotlib is imported lazily, only when a figure is drawn; without it the functions raise
:class:`~dpkit.errors.MissingDependencyError` (an ImportError) naming the extra: ``plotting
needs matplotlib to draw figures, and it is not installed: pip install 'dpkit[plot]'``.
Every function takes ``ax=None`` (a new figure when omitted), returns the Axes and never
calls ``plt.show()``.
"""

from __future__ import annotations

from typing import Any

from dpkit.errors import MissingDependencyError
from dpkit.plot.comparison import plot_comparison
from dpkit.plot.sensitivity import median_neighbours, sensitivity_by_distance

__all__ = [
    "median_neighbours",
    "plot_comparison",
    "require_matplotlib",
    "require_pyplot",
    "sensitivity_by_distance",
]


def require_matplotlib(purpose: str = "plotting") -> Any:
    """Return the ``matplotlib`` module, or say which extra installs it.

    Call it before any long work whose end is a figure (the demo, ``--plot``), so a missing
    extra is reported at once rather than after the work.

    Parameters
    ----------
    purpose : str
        What needs it, for the message (``"the demo"``, ``"--plot"``).

    Returns
    -------
    module
        ``matplotlib``.

    Raises
    ------
    MissingDependencyError
        matplotlib is not installed; the message names ``pip install 'dpkit[plot]'``.
    """
    try:
        import matplotlib
    except ImportError as exc:
        raise MissingDependencyError(
            f"{purpose} needs matplotlib to draw figures, and it is not installed: "
            "pip install 'dpkit[plot]'"
        ) from exc
    return matplotlib


def require_pyplot() -> Any:
    """Return ``matplotlib.pyplot``, or say which extra installs it.

    Returns
    -------
    module
        ``matplotlib.pyplot``.

    Raises
    ------
    MissingDependencyError
        matplotlib is not installed; the message names ``pip install 'dpkit[plot]'``.
    """
    require_matplotlib()
    import matplotlib.pyplot as plt

    return plt
