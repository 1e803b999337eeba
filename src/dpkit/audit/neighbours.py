"""Neighbouring inputs for audits: arrays, selection scores and DataFrames with a privacy unit.

An audit is only as strong as the pair of inputs it runs on: the pair must be neighbours
under the relation the claim is made for, and should be the *worst* pair for the statistic,
where the outputs differ most. Each generator returns :class:`NeighbourPair` values saying
which relation they are neighbours under and why they were chosen.

* Arrays: remove one value, add one value, replace one value; the worst-case pairs of a
  statistic at its bounds (:func:`statistic_pairs`), including the pair on the bounds'
  floating-point grid where a float computation of the statistic moves most
  (:func:`float_worst_pair`: far from zero the float mean moves by more than the
  sensitivity a framework charges).
* Selection scores (:func:`score_pairs`): one candidate's score moves by the sensitivity, up
  or down, or every other score moves against it.
* DataFrames (:func:`unit_pairs`, any narwhals-supported eager frame): remove all rows of one
  person, chosen to stress contribution bounding: the person with the most rows, and a
  person alone in a group (whose key should appear only past a threshold).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpkit._validate import check_bounds, check_finite_array, check_positive
from dpkit.errors import ParameterError

__all__ = [
    "NeighbourPair",
    "add_one",
    "float_worst_pair",
    "remove_one",
    "remove_unit",
    "replace_one",
    "score_pairs",
    "statistic_pairs",
    "unit_pairs",
]


@dataclass(frozen=True)
class NeighbourPair:
    """Two neighbouring inputs, the relation they are neighbours under, and why."""

    x0: Any
    x1: Any
    relation: str  # "unbounded" (add/remove one record or person) or "bounded" (replace one)
    description: str


def _array(owner: str, x: Any) -> np.ndarray:
    return check_finite_array(owner, "x", x)


def _index(owner: str, arr: np.ndarray, index: Any) -> int:
    if isinstance(index, bool) or not isinstance(index, int | np.integer):
        raise TypeError(f"{owner}: `index` must be an int; got {index!r}")
    if not -arr.size <= int(index) < arr.size:
        raise ParameterError(f"{owner}: `index` must be in [-{arr.size}, {arr.size}); got {index}")
    return int(index) % arr.size


def remove_one(x: Any, index: int = -1) -> NeighbourPair:
    """``x`` and ``x`` without the value at ``index`` (add/remove neighbours).

    Examples
    --------
    >>> remove_one([1.0, 2.0, 3.0], 0).x1.tolist()
    [2.0, 3.0]
    """
    arr = _array("remove_one", x)
    i = _index("remove_one", arr, index)
    return NeighbourPair(arr, np.delete(arr, i), "unbounded", f"remove x[{i}] = {arr[i]:g}")


def add_one(x: Any, value: float) -> NeighbourPair:
    """``x`` and ``x`` with ``value`` appended (add/remove neighbours)."""
    arr = _array("add_one", x)
    v = float(check_finite_array("add_one", "value", [value])[0])
    return NeighbourPair(arr, np.append(arr, v), "unbounded", f"add {v:g}")


def replace_one(x: Any, index: int, value: float) -> NeighbourPair:
    """``x`` and ``x`` with the value at ``index`` replaced by ``value`` (replace-one)."""
    arr = _array("replace_one", x)
    i = _index("replace_one", arr, index)
    v = float(check_finite_array("replace_one", "value", [value])[0])
    out = arr.copy()
    out[i] = v
    return NeighbourPair(arr, out, "bounded", f"replace x[{i}] = {arr[i]:g} by {v:g}")


_STATISTICS = ("count", "sum", "mean", "median", "percentile", "var", "std")


def statistic_pairs(
    statistic: str,
    bounds: tuple[float, float],
    n: int,
    *,
    relation: str = "unbounded",
    percentile: float = 50.0,
) -> list[NeighbourPair]:
    """Worst-case neighbouring datasets of ``n`` records for a statistic at its bounds.

    Parameters
    ----------
    statistic : {"count", "sum", "mean", "median", "percentile", "var", "std"}
    bounds : (float, float)
        The public bounds the data are clipped to.
    n : int
        Records in the first dataset (>= 2).
    relation : {"unbounded", "bounded"}
        Add/remove one record, or replace one.
    percentile : float
        For ``"percentile"``.

    Returns
    -------
    list of NeighbourPair
        The extreme pairs: every record at one bound and the changed record at the other
        (this moves a sum, mean, variance by their global sensitivity), the data split at the
        quantile's rank so that the changed record moves it across the whole range, and, when
        the bounds are far from zero for their width, the float-rounding worst pair
        (:func:`float_worst_pair`).

    Examples
    --------
    >>> [p.description for p in statistic_pairs("mean", (0, 1), 5, relation="bounded")][:1]
    ['5 x 0, replace one by 1']
    """
    if statistic not in _STATISTICS:
        raise ParameterError(f"statistic_pairs: `statistic` must be one of {_STATISTICS}")
    lo, hi = check_bounds("statistic_pairs", bounds)
    if isinstance(n, bool) or not isinstance(n, int) or n < 2:
        raise ParameterError(f"statistic_pairs: `n` must be an int >= 2; got {n!r}")
    if relation not in ("bounded", "unbounded"):
        raise ParameterError(
            f"statistic_pairs: `relation` must be 'bounded' or 'unbounded'; got {relation!r}"
        )
    pairs = []
    for a, b in ((lo, hi), (hi, lo)):
        base = np.full(n, a)
        if relation == "bounded":
            pairs.append(replace_one(base, 0, b))
            pairs[-1] = NeighbourPair(
                base, pairs[-1].x1, "bounded", f"{n} x {a:g}, replace one by {b:g}"
            )
        else:
            pairs.append(
                NeighbourPair(base, np.append(base, b), "unbounded", f"{n} x {a:g}, add {b:g}")
            )
    if statistic in ("median", "percentile"):
        p = (
            0.5
            if statistic == "median"
            else check_positive("statistic_pairs", "percentile", percentile) / 100
        )
        k = min(max(int(np.floor(p * n)), 1), n - 1)
        split = np.concatenate([np.full(k, lo), np.full(n - k, hi)])
        if relation == "bounded":
            other = split.copy()
            other[k] = lo
            desc = f"{k} x {lo:g} and {n - k} x {hi:g}, replace one {hi:g} by {lo:g}"
        else:
            other = np.delete(split, k)
            desc = f"{k} x {lo:g} and {n - k} x {hi:g}, remove one {hi:g}"
        pairs.append(NeighbourPair(split, other, relation, desc))
        # records spread inside the bounds: the loss of every interval moves (at the bounds
        # every output interval can have the same loss, hiding the mechanism's behaviour)
        spread = lo + (hi - lo) * (np.arange(n) + 0.5) / n
        if relation == "bounded":
            other = spread.copy()
            other[k] = lo
            desc = f"{n} values spread in ({lo:g}, {hi:g}), replace x[{k}] by {lo:g}"
        else:
            other = np.delete(spread, k)
            desc = f"{n} values spread in ({lo:g}, {hi:g}), remove x[{k}]"
        pairs.append(NeighbourPair(spread, other, relation, desc))
    if statistic in ("mean", "sum", "var", "std") and max(abs(lo), abs(hi)) / (hi - lo) > 2**20:
        pairs.insert(0, float_worst_pair(statistic, (lo, hi), n, relation=relation))
    return pairs


def _stat_fn(statistic: str) -> Callable[[np.ndarray], float]:
    from dpkit.sensitivity.catalogue import resolve

    q = resolve(statistic, owner="float_worst_pair")
    return lambda a: float(q(a))


def float_worst_pair(
    statistic: str,
    bounds: tuple[float, float],
    n: int,
    *,
    relation: str = "bounded",
    trials: int = 20_000,
    steps: int = 8,
    rng: Any = 0,
) -> NeighbourPair:
    """The neighbouring pair, on the bounds' float grid, where float ``statistic`` moves most.

    Datasets of ``n`` records drawn from ``steps + 1`` evenly spaced points of the bounds
    (``lower + k (upper - lower) / steps``, each rounded to float), one record changed; the
    pair maximising ``|f(x) - f(x')|`` computed in float64 by dpkit's query over ``trials``
    random tries (seeded: the search is part of the test, not of a release). Far from zero
    the float rounding of a sum exceeds the record's contribution, and this pair shows it.

    Examples
    --------
    >>> p = float_worst_pair("mean", (1e15, 1e15 + 1), 7)
    >>> bool(abs(p.x0.mean() - p.x1.mean()) > 1 / 7)
    True
    """
    from dpkit.samplers import as_source, uniform_int

    lo, hi = check_bounds("float_worst_pair", bounds)
    f = _stat_fn(statistic)
    grid = lo + (hi - lo) * np.arange(steps + 1) / steps
    grid = np.clip(grid, lo, hi)
    source = as_source(rng)
    m = grid.size
    base = grid[uniform_int(m, trials * n, source).reshape(trials, n)]
    pos = uniform_int(n, trials, source)
    new = grid[uniform_int(m, trials, source)]
    best, best_i = -1.0, 0
    for i in range(trials):  # the statistic is a black box: one call per candidate pair
        a = base[i]
        b = a.copy()
        b[pos[i]] = new[i]
        if relation == "unbounded":
            b = np.delete(a, pos[i])
        d = abs(f(a) - f(b))
        if d > best:
            best, best_i = d, i
    a = base[best_i]
    b = a.copy()
    if relation == "unbounded":
        b = np.delete(a, pos[best_i])
    else:
        b[pos[best_i]] = new[best_i]
    return NeighbourPair(
        a,
        b,
        relation,
        f"float worst case of {statistic} on ({lo:.17g}, {hi:.17g}): moves by {best:.4g}",
    )


def score_pairs(
    n: int, sensitivity: float = 1.0, *, monotonic: bool = False
) -> list[NeighbourPair]:
    """Worst-case neighbouring score vectors for a selection mechanism over ``n`` candidates.

    Scores move by at most ``sensitivity`` each between neighbours. The pairs: all scores
    equal vs. the first raised by ``sensitivity``; and (unless ``monotonic``, where all
    scores move in the same direction) the first raised while every other is lowered.

    Examples
    --------
    >>> [p.x1.tolist() for p in score_pairs(3)]
    [[1.0, 0.0, 0.0], [1.0, -1.0, -1.0]]
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 2:
        raise ParameterError(f"score_pairs: `n` must be an int >= 2; got {n!r}")
    s = check_positive("score_pairs", "sensitivity", sensitivity)
    base = np.zeros(n)
    up = base.copy()
    up[0] = s
    pairs = [NeighbourPair(base, up, "unbounded", f"first score +{s:g}")]
    if not monotonic:
        split = np.full(n, -s)
        split[0] = s
        pairs.append(NeighbourPair(base, split, "unbounded", f"first score +{s:g}, others -{s:g}"))
    return pairs


# ----------------------------------------------------------------------------- DataFrames


def remove_unit(frame: Any, privacy_unit: str, unit: Any) -> Any:
    """The frame without every row of one person (``privacy_unit == unit``), same type."""
    import narwhals as nw

    df = nw.from_native(frame, eager_only=True)
    if privacy_unit not in df.columns:
        raise ParameterError(
            f"remove_unit: `privacy_unit` {privacy_unit!r} is not a column; columns: "
            f"{list(df.columns)}"
        )
    return df.filter(nw.col(privacy_unit) != unit).to_native()


def unit_pairs(
    frame: Any, privacy_unit: str, *, group_by: Sequence[str] | str | None = None
) -> list[NeighbourPair]:
    """Neighbouring frames differing by all rows of one person (add/remove one person).

    Parameters
    ----------
    frame : DataFrame
        Polars, pandas or PyArrow (anything narwhals reads eagerly).
    privacy_unit : str
        The column identifying a person.
    group_by : str or sequence of str, optional
        Grouping columns of the query to be audited.

    Returns
    -------
    list of NeighbourPair
        The frame without the person with the most rows (stressing ``max_rows_per_unit``
        and, with ``group_by``, the person in the most groups), and, with ``group_by``, the
        frame without a person alone in a group (that group's key should then appear only
        past the threshold). Ties are broken by the smallest unit value, so the choice is
        reproducible; the person alone in a group is another than the first when possible.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"id": [1, 1, 1, 2, 3], "g": ["a", "a", "b", "a", "c"]})
    >>> [p.description for p in unit_pairs(df, "id", group_by="g")]
    ['remove person id=1 (3 rows, 2 groups)', 'remove person id=3 (alone in group g=c)']
    """
    import narwhals as nw

    df = nw.from_native(frame, eager_only=True)
    if privacy_unit not in df.columns:
        raise ParameterError(
            f"unit_pairs: `privacy_unit` {privacy_unit!r} is not a column; columns: "
            f"{list(df.columns)}"
        )
    if len(df) == 0:
        raise ParameterError("unit_pairs: `frame` is empty")
    keys = [group_by] if isinstance(group_by, str) else list(group_by or [])
    for k in keys:
        if k not in df.columns:
            raise ParameterError(f"unit_pairs: `group_by` column {k!r} is not in the frame")
    u = nw.col(privacy_unit)
    aggs = [nw.len().alias("_rows")]
    if keys:
        aggs.append(
            nw.concat_str([nw.col(k).cast(nw.String) for k in keys], separator="|")
            .n_unique()
            .alias("_groups")
        )
    per = (
        df.group_by(privacy_unit).agg(*aggs).sort(["_rows", privacy_unit], descending=[True, False])
    )
    top = per.row(0)
    unit = top[0]
    desc = f"remove person {privacy_unit}={unit} ({top[1]} rows"
    desc += f", {top[2]} groups)" if keys else ")"
    pairs = [NeighbourPair(frame, remove_unit(frame, privacy_unit, unit), "unbounded", desc)]
    if keys:
        alone = (
            df.group_by(keys)
            .agg(u.n_unique().alias("_units"), u.min().alias("_unit"))
            .filter(nw.col("_units") == 1)
            .sort(keys)
        )
        others = alone.filter(nw.col("_unit") != unit)  # prefer a second, different person
        alone = others if len(others) else alone
        if len(alone):
            row = alone.row(0)
            key = ", ".join(f"{k}={v}" for k, v in zip(keys, row[: len(keys)], strict=True))
            who = row[len(keys) + 1]
            pairs.append(
                NeighbourPair(
                    frame,
                    remove_unit(frame, privacy_unit, who),
                    "unbounded",
                    f"remove person {privacy_unit}={who} (alone in group {key})",
                )
            )
    return pairs
