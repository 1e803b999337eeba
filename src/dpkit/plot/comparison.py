"""Figure of a :func:`dpkit.compare.compare` run: the error distribution of every method."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["plot_comparison"]


def plot_comparison(comparison: Any, *, ax: Any = None, bins: int = 40) -> Any:
    """Histograms of ``|error|`` of every method, on one log-scaled axis.

    Parameters
    ----------
    comparison : dpkit.compare.Comparison
        The result of :func:`dpkit.compare.compare`.
    ax : matplotlib Axes, optional
        Where to draw (a new figure when omitted).
    bins : int
        Number of logarithmic bins spanning all methods' errors.

    Returns
    -------
    matplotlib.axes.Axes
        The axes; the title names the statistic, epsilon and the trials, the legend each
        method with its median absolute error and refusal rate, and the delta of the
        (epsilon, delta) methods only (pure-DP methods have none).

    Notes
    -----
    Errors of the methods differ by orders of magnitude, so the x axis is logarithmic and
    the histograms are outlines (``histtype="step"``) on shared bins. Zero errors (a release
    exactly equal to the truth) are drawn in the first bin.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from dpkit.compare import compare
    >>> c = compare(np.arange(1000.0), "median", bounds=(0, 1000), trials=30, rng=0)
    >>> ax = plot_comparison(c)
    >>> ax.get_xscale()
    'log'
    """
    from dpkit.plot import require_pyplot

    plt = require_pyplot()
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 5.5))  # room for the legend below
    errs = {r.method: np.abs(comparison.errors(r.method)) for r in comparison.results}
    positive = np.concatenate([e[e > 0] for e in errs.values()] or [np.array([1.0])])
    if positive.size == 0:
        positive = np.array([1.0])
    lo = max(float(positive.min()), 1e-12)
    hi = max(float(positive.max()), lo * 10)
    edges = np.logspace(np.log10(lo) - 0.05, np.log10(hi) + 0.05, bins + 1)
    summary = {row["method"]: row for row in comparison.summary()}
    for r in comparison.results:
        e = np.maximum(errs[r.method], edges[0])
        row = summary[r.method]
        delta = getattr(r.privacy, "delta", 0.0)  # only (epsilon, delta) methods name one
        name = f"{r.label} (delta {delta:.2g})" if delta else r.label
        label = f"{name}: median |err| {row['median_abs_error']:.3g}"
        if row["refused"] > 0:
            label += f", refused {row['refused']:.0%}"
        ax.hist(e, bins=edges, histtype="step", linewidth=1.6, label=label)
    ax.set_xscale("log")
    ax.set_xlabel(f"|release - true {comparison.statistic}| of {comparison.column}")
    ax.set_ylabel("trials")
    ax.set_title(
        f"{comparison.statistic.capitalize()} of {comparison.column}: "
        f"epsilon {comparison.epsilon:g} per method, {comparison.trials:,} trials per method"
    )
    # below the axes, where no bar can be: loc="best" would search every position against
    # every bar of the histograms, which matplotlib warns can be slow (on a loaded machine)
    ax.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2)
    return ax
