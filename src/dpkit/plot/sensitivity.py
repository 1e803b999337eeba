"""Sensitivity figures: sensitivity against Hamming distance, and the median's neighbours."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from dpkit.sensitivity.table import SweepRow, sweep

__all__ = ["median_neighbours", "sensitivity_by_distance"]

_STYLES = {"bounded": "-", "unbounded": "--"}
_MARKERS = {"bounded": "o", "unbounded": "s"}
#: Most distances labelled one by one on the x axis; past it, at most this many integer ticks.
_MAX_TICKS = 12
#: Most points of a line drawn with markers; past it, markers would merge into a thick line.
_MAX_MARKERS = 40


def _axes(ax: Any) -> Any:
    if ax is not None:
        return ax
    from dpkit.plot import require_pyplot

    plt = require_pyplot()
    _, new_ax = plt.subplots(figsize=(7, 4.5))
    return new_ax


def sensitivity_by_distance(
    queries: Iterable[Any] = ("count", "sum", "mean", "median", "var", "std"),
    universe: Any = (1, 2, 3, 10, 11),
    *,
    size: int | None = 3,
    data: Any = None,
    distances: Iterable[int] = (1, 2, 3),
    relations: Sequence[str] = ("bounded", "unbounded"),
    rows: Sequence[SweepRow] | None = None,
    ax: Any = None,
) -> Any:
    """Plot sensitivity against Hamming distance for several queries and both relations.

    Global sensitivity over every dataset of ``size`` records drawn from ``universe`` (or
    local sensitivity at ``data`` when it is given), computed by brute force
    (:func:`dpkit.sensitivity.sweep`). Bounded relations are solid lines, unbounded dashed;
    one colour per query.

    Parameters
    ----------
    queries : iterable of Statistic, str or callable
        Default: the parameterless catalogue.
    universe : array_like
        Default: the seed's universe ``{1, 2, 3, 10, 11}``.
    size : int, optional
        Dataset size for global sensitivity (default 3); ignored when ``data`` is given.
    data : array_like, optional
        A dataset drawn from the universe: plot local sensitivity at it instead.
    distances : iterable of int
        Hamming radii (x axis): each one a tick up to 12 distances, a few integer ticks
        beyond (and lines without markers past 40 points).
    relations : sequence of str
        Which relations to draw.
    rows : sequence of SweepRow, optional
        Precomputed rows (skips the computation; the other data arguments are then ignored).
    ax : matplotlib Axes, optional
        Where to draw; a new figure when omitted.

    Returns
    -------
    matplotlib.axes.Axes

    Raises
    ------
    ImportError
        Without matplotlib (the message names ``dpkit[plot]``).
    ParameterError
        Whatever :func:`dpkit.sensitivity.sweep` rejects.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from dpkit.plot import sensitivity_by_distance
    >>> ax = sensitivity_by_distance(["mean", "median"], [1, 2, 3, 10, 11], size=3)
    >>> len(ax.lines)
    4
    """
    if rows is None:
        if data is not None:
            rows = sweep(queries, universe, data=data, distances=distances, relations=relations)
        else:
            rows = sweep(queries, universe, size=size, distances=distances, relations=relations)
    ax = _axes(ax)
    names = list(dict.fromkeys(r.query for r in rows))
    colours = [f"C{i % 10}" for i in range(len(names))]
    for name, colour in zip(names, colours, strict=True):
        for rel in dict.fromkeys(r.relation for r in rows):
            sel = sorted(
                (r for r in rows if r.query == name and r.relation == rel), key=lambda r: r.distance
            )
            if not sel:
                continue
            ax.plot(
                [r.distance for r in sel],
                [r.sensitivity for r in sel],
                linestyle=_STYLES.get(rel, "-"),
                marker=_MARKERS.get(rel, "o") if len(sel) <= _MAX_MARKERS else None,
                color=colour,
                label=f"{name} ({rel})",
            )
    scope = rows[0].scope if rows else "global"
    ax.set_xlabel("Hamming distance k")
    ax.set_ylabel(f"{scope} sensitivity at distance k")
    ks = sorted({r.distance for r in rows})
    if len(ks) <= _MAX_TICKS:
        ax.set_xticks(ks)
    else:  # one label per k would overprint: a few integer ticks
        from matplotlib.ticker import MaxNLocator

        ax.xaxis.set_major_locator(MaxNLocator(nbins=_MAX_TICKS, integer=True))
    ax.set_title(
        f"{scope.capitalize()} sensitivity by distance (solid: bounded, dashed: unbounded)"
    )
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.grid(alpha=0.3)
    return ax


def median_neighbours(
    data: Any,
    universe: Any,
    *,
    relation: str = "unbounded",
    query: Any = "median",
    ax: Any = None,
) -> Any:
    """Show the query (default the median) on every neighbour of ``data`` at distance 1.

    Each neighbour drawn from ``universe`` is a point: its query value against its position
    in the list of neighbours, coloured by how it was obtained (record removed, added or
    replaced). A horizontal line marks the value on ``data``; the neighbour farthest from it,
    whose distance is the local sensitivity ``LS_1``, is annotated.

    Parameters
    ----------
    data : array_like
        The dataset, drawn from ``universe``.
    universe : array_like
        The multiset of records.
    relation : {"bounded", "unbounded"}, default "unbounded"
        Neighbour relation.
    query : Statistic, str or callable, default "median"
        A scalar query.
    ax : matplotlib Axes, optional
        Where to draw; a new figure when omitted.

    Returns
    -------
    matplotlib.axes.Axes

    Raises
    ------
    ImportError
        Without matplotlib.
    ParameterError
        Data not drawn from the universe, empty data, an unknown relation or query.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from dpkit.plot import median_neighbours
    >>> ax = median_neighbours([1, 2, 10], [1, 2, 3, 10, 11], relation="unbounded")
    >>> ax.get_title()
    'median of the 5 unbounded neighbours of [1, 2, 10]: LS_1 = 4'
    """
    from dpkit._validate import check_relation
    from dpkit.sensitivity import empirical as emp
    from dpkit.sensitivity.catalogue import resolve

    owner = "median_neighbours"
    q = resolve(query, owner=owner)
    rel = check_relation(owner, relation)
    vals, caps = emp.universe_counts(owner, universe)
    counts = emp.counts_in_universe(owner, data, vals, caps)
    fx = float(emp.evaluate_counts(q, vals, counts[None, :])[0])
    ys = [y for y in emp.neighbour_counts(counts, caps, 1, rel, q.min_size)]
    nb = np.concatenate(ys) if ys else np.zeros((0, vals.size), dtype=np.int64)
    fy = emp.evaluate_counts(q, vals, nb) if nb.shape[0] else np.zeros(0)
    delta = nb.sum(axis=1) - counts.sum()
    ax = _axes(ax)
    idx = np.arange(nb.shape[0])
    kinds = {-1: ("record removed", "C3"), 1: ("record added", "C2"), 0: ("record replaced", "C0")}
    for d, (label, colour) in kinds.items():
        sel = delta == d
        if np.any(sel):
            ax.scatter(idx[sel], fy[sel], color=colour, label=label, zorder=3)
    ax.axhline(fx, color="k", linewidth=1, label=f"{q.name} of the data = {fx:g}")
    if fy.size:
        far = int(np.argmax(np.abs(fy - fx)))
        ax.vlines(idx[far], fx, fy[far], color="C1", linewidth=2, label="largest change")
        shown = np.repeat(vals, nb[far]).tolist()
        ax.annotate(
            "[" + ", ".join(f"{v:g}" for v in shown) + "]",
            (idx[far], fy[far]),
            textcoords="offset points",
            xytext=(6, 6),
            fontsize="small",
        )
    labels = ["[" + ", ".join(f"{v:g}" for v in np.repeat(vals, row)) + "]" for row in nb]
    ax.set_xticks(idx, labels, rotation=60, ha="right", fontsize="x-small")
    ls = float(np.max(np.abs(fy - fx))) if fy.size else 0.0
    shown_data = "[" + ", ".join(f"{v:g}" for v in np.repeat(vals, counts)) + "]"
    ax.set_title(f"{q.name} of the {nb.shape[0]} {rel} neighbours of {shown_data}: LS_1 = {ls:g}")
    ax.set_ylabel(q.name)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.grid(alpha=0.3)
    return ax
