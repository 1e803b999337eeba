"""Sample-and-aggregate (Nissim, Raskhodnikova and Smith 2007).

Split the data uniformly at random into exactly ``chunks`` disjoint parts, run any function
on each part, clip each output to public ``output_bounds``, and release a differentially
private aggregate of the clipped outputs (their mean with Laplace noise, or their median with
the inverse-sensitivity mechanism).

Why it is private: under replace-one neighbours (``n`` public) couple the two runs on the
same random permutation. The record that differs sits in exactly one part, so exactly one
clipped output can change, by at most ``upper - lower``: the mean of ``chunks`` outputs moves
by at most ``(upper - lower) / chunks`` and the vector of outputs is a replace-one neighbour.
The aggregate is ``epsilon``-DP given the permutation, hence so is the mixture over
permutations. The noise uses the number of parts actually made, which is ``chunks`` by
construction (``_partition``): a common implementation makes ``ceil(n / size)`` parts of a
fixed size, fewer than asked, and still divides by the number asked, under-noising.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from dpkit._lattice import unit_for
from dpkit._validate import (
    as_real_array,
    check_bool,
    check_bounds,
    check_choice,
    check_int,
    check_positive,
    describe,
    is_real,
)
from dpkit.accounting.events import Event
from dpkit.accounting.guard import exponential_event, laplace_event, spend
from dpkit.accounting.loss import PureDP
from dpkit.errors import ParameterError
from dpkit.frameworks._data import check_grid_bounds, mean_on_grid
from dpkit.frameworks._range import clamp_to_range
from dpkit.frameworks.inverse import inverse_sensitivity_sample
from dpkit.noise.grid import grid_for, grid_laplace_scale, laplace_units
from dpkit.release import Release
from dpkit.samplers import as_source, permutation, permutations

__all__ = ["chunk_outputs", "sample_and_aggregate", "sample_and_aggregate_sample"]

_OWNER = "sample_and_aggregate"


def _check_data(data: Any) -> np.ndarray:
    if isinstance(data, str | bytes | dict | set | frozenset):
        raise TypeError(f"{_OWNER}: `data` must be an array of records; got {type(data).__name__}")
    if isinstance(data, np.ma.MaskedArray):
        as_real_array(_OWNER, "data", data)  # refuses masked arrays, naming `data`
    try:
        arr = np.asarray(data)
    except (ValueError, RecursionError) as exc:
        raise TypeError(
            f"{_OWNER}: `data` must be an array of records (rows of equal length); got a "
            f"ragged or nested {type(data).__name__} ({str(exc).split('.')[0]})"
        ) from None
    if arr.ndim == 0:
        raise TypeError(f"{_OWNER}: `data` must be an array of records; got a scalar")
    if arr.shape[0] == 0:
        raise ParameterError(f"{_OWNER}: `data` is empty; at least one record is needed")
    if arr.dtype.kind in "US":
        # strings are never parsed as numbers: '1' is not 1, and parsing could fail on one
        # record after the spend, quoting it (the dtype is not quoted: its width is the
        # length of the longest record)
        raise TypeError(
            f"{_OWNER}: `data` must hold real numbers or records; got an array of strings "
            "(strings are not parsed as numbers: convert the records first)"
        )
    if arr.dtype.kind in "mMcb":
        raise TypeError(
            f"{_OWNER}: `data` must hold real numbers or records; got dtype {arr.dtype}"
        )
    if arr.dtype.kind == "O":
        arr = _object_to_float(arr)
    if np.issubdtype(arr.dtype, np.number) and not np.isfinite(arr).all():
        bad = int(np.count_nonzero(~np.isfinite(arr)))
        raise ParameterError(
            f"{_OWNER}: `data` must be finite; found {bad} NaN or infinite value(s)"
            " (None counts as NaN; values too large for a float as infinite)"
        )
    return arr


def _object_to_float(arr: np.ndarray) -> np.ndarray:
    """An object array of real numbers as float64, checked entry by entry before any spend.

    Each entry must be a real number (:func:`dpkit._validate.is_real`: no bool, string,
    ``Decimal`` or nested sequence) or ``None`` (a missing value, mapped to NaN so the finite
    check refuses it like a float NaN); an int too large for a float becomes infinite, refused
    the same way. The message names only types and counts, never a value (the values are the
    private data).
    """
    flat = arr.ravel()
    out = np.empty(flat.size, dtype=np.float64)
    wrong: dict[str, int] = {}
    for j, v in enumerate(flat):
        if v is None:
            out[j] = math.nan
        elif is_real(v):
            try:
                out[j] = float(v)
            except OverflowError:
                out[j] = math.inf
        else:
            name = type(v).__name__
            wrong[name] = wrong.get(name, 0) + 1
    if wrong:
        kinds = ", ".join(f"{c} {t}" for t, c in sorted(wrong.items()))
        raise TypeError(
            f"{_OWNER}: `data` must hold real numbers; got an object array with entries that "
            f"are not ({kinds}); convert the records to numbers first"
        )
    return out.reshape(arr.shape)


def _check_func(func: Any, arr: np.ndarray) -> None:
    if isinstance(func, str):
        if func not in ("mean", "median") or arr.ndim != 1:
            raise ParameterError(
                f"{_OWNER}: `func` as a string must be 'mean' or 'median' on 1-D data; got "
                f"{describe(func)}"
            )
        if arr.dtype.kind not in "iuf":  # structured records: refused now, not after the spend
            raise TypeError(
                f"{_OWNER}: `func`={func!r} needs 1-D numeric data; got records of dtype "
                f"{arr.dtype}; pass a callable that reads the records' fields"
            )
    elif not callable(func):
        raise TypeError(
            f"{_OWNER}: `func` must be callable or 'mean' / 'median'; got "
            f"{type(func).__name__} {describe(func)}"
        )


def _part_output(func: Callable[[np.ndarray], Any], part: np.ndarray) -> float:
    """``func(part)`` as a float, or NaN when ``func`` raises or returns no real number.

    Whether ``func`` fails on a part depends on that part's records: raising would publish
    that event (after the budget is spent), so a failure is treated like a non-finite output.
    """
    try:
        out = func(part)
        value = float(out) if is_real(out) or np.ndim(out) == 0 else math.nan
    except Exception:
        return math.nan
    return value


def _check_chunks(chunks: Any, n: int) -> int:
    k = check_int(_OWNER, "chunks", chunks)
    if not 1 <= k <= n:
        raise ParameterError(
            f"{_OWNER}: `chunks` must be between 1 and the number of records ({n}) so every "
            f"part holds at least one record; got {describe(k)}"
        )
    return k


def _partition(n: int, chunks: int, rng: Any) -> list[np.ndarray]:
    """Exactly ``chunks`` disjoint parts of ``range(n)``, uniformly at random.

    A uniformly random permutation (exact, :func:`dpkit.samplers.permutation`) cut into
    ``n mod chunks`` parts of ``ceil(n / chunks)`` records followed by parts of
    ``floor(n / chunks)``: every part is non-empty and the sizes differ by at most one.
    """
    order = permutation(n, rng)
    return np.array_split(order, chunks)


def _fast_outputs(arr: np.ndarray, order: np.ndarray, chunks: int, which: str) -> np.ndarray:
    """Mean or median of every part at once: two reshapes (sizes q + 1 and q)."""
    n = order.size
    q, r = divmod(n, chunks)
    vals = arr[order]
    big = vals[: r * (q + 1)].reshape(r, q + 1)
    small = vals[r * (q + 1) :].reshape(chunks - r, q)
    fn = np.mean if which == "mean" else np.median
    parts = [fn(big, axis=1)] if r else []
    if chunks - r:
        parts.append(fn(small, axis=1))
    return np.concatenate(parts)


def chunk_outputs(
    data: Any,
    func: Callable[[np.ndarray], Any] | str,
    *,
    chunks: int,
    output_bounds: tuple[float, float],
    rng: Any = None,
) -> tuple[np.ndarray, int]:
    """The clipped outputs of ``func`` on a uniformly random partition into ``chunks`` parts.

    Not private by itself: the first step of :func:`sample_and_aggregate`, exposed for tests
    and teaching. Returns the outputs (one per part, exactly ``chunks`` of them) and the
    number of outputs replaced by the midpoint of ``output_bounds`` because they were not a
    finite real number (including parts on which ``func`` raised: raising would reveal
    something about that part).

    Examples
    --------
    >>> out, bad = chunk_outputs(np.arange(10.0), "mean", chunks=3, output_bounds=(0, 9),
    ...                          rng=0)
    >>> out.size, bad
    (3, 0)
    """
    arr = _check_data(data)
    n = int(arr.shape[0])
    k = _check_chunks(chunks, n)
    lower, upper = check_bounds(_OWNER, output_bounds, name="output_bounds")
    source = as_source(rng)
    _check_func(func, arr)
    if isinstance(func, str):
        outs = _fast_outputs(arr.astype(np.float64), permutation(n, source), k, func)
    elif callable(func):
        outs = np.array([_part_output(func, arr[idx]) for idx in _partition(n, k, source)])
    else:  # pragma: no cover - _check_func refused it
        raise TypeError(f"{_OWNER}: `func` must be callable; got {type(func).__name__}")
    bad = ~np.isfinite(outs)
    # a failed or non-finite output is a function of its part only: mapping it to a fixed
    # value keeps the one-part-changes argument (raising instead would leak which part
    # misbehaved, after the budget was spent)
    outs[bad] = (lower + upper) / 2
    return np.clip(outs, lower, upper), int(bad.sum())


def sample_and_aggregate(
    data: Any,
    func: Callable[[np.ndarray], Any] | str,
    *,
    chunks: int,
    output_bounds: tuple[float, float],
    epsilon: float,
    aggregator: str = "mean",
    rng: Any = None,
    accountant: Any = None,
    clamp: bool = True,
) -> Release:
    """Release ``func`` of the data by sample-and-aggregate.

    Parameters
    ----------
    data : array_like
        Records along the first axis (a 1-D array of values, or rows of a 2-D array).
    func : callable or {"mean", "median"}
        Maps a part (``data[idx]``) to one real number; any function, of any sensitivity.
        The strings use a vectorised path for 1-D data.
    chunks : int
        The number of parts, ``1 <= chunks <= n``; exactly this many are made.
    output_bounds : (float, float)
        Public ``(lower, upper)`` each part's output is clipped to.
    epsilon : float
        Finite and > 0.
    aggregator : {"mean", "median"}
        Noisy mean (Laplace on a grid) or inverse-sensitivity median of the clipped outputs.
    rng
        ``None`` (secure), an ``int`` seed or a bit source. The partition uses it too.
    accountant : optional
        Charged ``PureDP(epsilon)`` under ``relation="bounded"`` (replace one record) before
        anything random happens. An add/remove budget refuses it (replace-one DP does not
        imply add/remove DP): use ``Accountant(..., relation="bounded")``.
    clamp : bool
        ``True`` (default): a noisy mean outside ``output_bounds`` (where the mean of the
        clipped outputs always lies) is moved to its nearest end: post-processing, no
        privacy cost. The median aggregator's output lies in them already. ``False``
        returns the noisy mean as drawn.

    Returns
    -------
    Release
        ``value``; ``privacy = PureDP(epsilon)``; ``relation = "bounded"``; ``scale`` (Laplace
        scale for the mean);
        ``details``: ``chunks`` (parts used, always equal to ``chunks``), ``chunk_sizes``
        ``(smallest, largest)``, ``sensitivity`` of the aggregate, ``aggregator``, ``range``
        (``output_bounds``, the public range of the aggregate), ``clamped`` (the drawn value
        lay outside it), and the diagnostic ``nonfinite_outputs`` (read from the data: not
        private): parts whose output was replaced by the midpoint of ``output_bounds``
        because ``func`` raised or returned no finite real number there (raising would
        reveal which part failed, after spending).

    Raises
    ------
    TypeError
        Non-numeric parameters, ``func`` neither callable nor 'mean' / 'median', a bad
        ``accountant``.
    ParameterError
        ``chunks`` outside ``[1, n]``, inverted or missing ``output_bounds``, ``epsilon <= 0``,
        NaN or infinite data, empty data, unknown aggregator.

    Privacy
    -------
    ``epsilon``-DP under replace-one (bounded) neighbours with ``n`` public (module
    docstring; Nissim, Raskhodnikova and Smith 2007, Theorem 4.2 for the framework; the
    Laplace mechanism, Dwork et al. 2006). Add/remove neighbours change the partition sizes
    and are not covered.

    Notes
    -----
    Mean aggregator: the mean of ``chunks`` clipped outputs has sensitivity
    ``(upper - lower) / chunks``; it is rounded to a power-of-two grid ``g`` of about
    ``2**-30`` times ``sensitivity / epsilon`` and released with exactly sampled rounded
    Laplace noise of scale ``(sensitivity + g) / epsilon``. Cost: one permutation
    (``O(n log n)``) plus ``chunks`` calls of ``func``.

    References
    ----------
    K. Nissim, S. Raskhodnikova, A. Smith. Smooth sensitivity and sampling in private data
    analysis. STOC 2007.

    Examples
    --------
    >>> ages = np.arange(20, 80, dtype=float).repeat(10)
    >>> rel = sample_and_aggregate(ages, np.mean, chunks=60, output_bounds=(20, 80),
    ...                            epsilon=1.0, rng=0)
    >>> round(rel.value, 2), rel.details["chunks"], rel.details["chunk_sizes"]
    (49.78, 60, (10, 10))
    """
    arr = _check_data(data)
    n = int(arr.shape[0])
    k = _check_chunks(chunks, n)
    lower, upper = check_bounds(_OWNER, output_bounds, name="output_bounds")
    eps = check_positive(_OWNER, "epsilon", epsilon)
    check_choice(_OWNER, "aggregator", aggregator, ("mean", "median"))
    check_bool(_OWNER, "clamp", clamp)
    _check_func(func, arr)
    sens = (upper - lower) / k
    # the aggregate's grid and the lattice of the output bounds, checked now (never after
    # the spend)
    if aggregator == "mean":
        # the lattice mean_on_grid maps the outputs to, and the grid _draw releases on
        unit_for(lower, upper, owner=_OWNER, name="output_bounds")
        grid_for(
            sens / eps,
            lower,
            upper,
            owner=_OWNER,
            params=f"`epsilon`={eps!r}, `chunks`={k} and `output_bounds`=({lower!r}, {upper!r})",
            epsilon=eps,
        )
        # the noise _draw adds: continuous Laplace of scale (sens + g) / eps on the mean of
        # the outputs on the grid g (sensitivity sens + g), rounded to the grid
        # (post-processing); laplace_units draws it on the grid _draw picks
        g = grid_for(sens / eps, lower, upper)
        event: Event = laplace_event(
            grid_laplace_scale(sens, eps, g), Fraction(sens) + Fraction(g), discrete=False
        )
    else:
        check_grid_bounds(_OWNER, lower, upper, name="output_bounds")
        event = exponential_event(eps)  # the inverse-sensitivity median (inverse.py)
    cost = PureDP(eps)
    source = as_source(rng)  # a bad `rng` is refused before the spend
    spend(accountant, cost, _OWNER, "bounded", [event])
    vals, bad, scale = _draw(arr, func, k, (lower, upper), eps, aggregator, 1, source)
    out, moved = clamp_to_range(vals, lower, upper) if clamp else (vals, vals != vals)
    value = float(out[0])
    sens = (upper - lower) / k
    q = n // k
    return Release(
        value=value,
        mechanism="sample_and_aggregate",
        privacy=cost,
        scale=scale,
        details={
            "chunks": k,  # exactly `chunks` parts: _draw checks it
            "chunk_sizes": (q, q + (1 if n % k else 0)),
            "sensitivity": sens,
            "aggregator": aggregator,
            "range": (lower, upper),
            "clamped": bool(moved[0]),
            "nonfinite_outputs": int(bad[0]),
        },
        relation="bounded",
    )


def _batched_outputs(
    arr: np.ndarray, chunks: int, which: str, size: int, source: Any
) -> np.ndarray:
    """:func:`_fast_outputs` for ``size`` independent partitions at once: (size, chunks)."""
    n = arr.size
    q, r = divmod(n, chunks)
    vals = arr[permutations(n, size, source)]
    fn = np.mean if which == "mean" else np.median
    parts = []
    if r:
        parts.append(fn(vals[:, : r * (q + 1)].reshape(size, r, q + 1), axis=2))
    if chunks - r:
        parts.append(fn(vals[:, r * (q + 1) :].reshape(size, chunks - r, q), axis=2))
    return np.concatenate(parts, axis=1)


def _draw(
    arr: np.ndarray,
    func: Any,
    k: int,
    bounds: tuple[float, float],
    eps: float,
    aggregator: str,
    size: int,
    source: Any,
) -> tuple[np.ndarray, np.ndarray, float | None]:
    """``size`` releases: values, non-finite output counts, Laplace scale (mean aggregator)."""
    lower, upper = bounds
    if isinstance(func, str) and func in ("mean", "median") and arr.ndim == 1:
        outs = _batched_outputs(arr.astype(np.float64), k, func, size, source)
        bad = (~np.isfinite(outs)).sum(axis=1)
        outs[~np.isfinite(outs)] = (lower + upper) / 2
        outs = np.clip(outs, lower, upper)
    else:  # any function: one partition and k calls per release
        rows = [
            chunk_outputs(arr, func, chunks=k, output_bounds=bounds, rng=source)
            for _ in range(size)
        ]
        outs = np.stack([o for o, _ in rows])
        bad = np.array([b for _, b in rows])
    if outs.shape[1] != k:  # pragma: no cover - guaranteed by the partition
        raise AssertionError("sample_and_aggregate: wrong number of parts")
    sens = (upper - lower) / k
    if aggregator == "mean":
        # the exact mean of the outputs mapped to the lattice of the output bounds: a map of
        # each output inside the bounds, so one changed part still moves it by at most `sens`
        g = grid_for(sens / eps, lower, upper)
        vals, scale = laplace_units(mean_on_grid(outs, lower, upper, g), sens, eps, g, source)
        return vals, bad, scale
    meds = np.array(
        [
            inverse_sensitivity_sample(o, epsilon=eps, bounds=bounds, size=1, rng=source)[0][0]
            for o in outs
        ]
    )
    return meds, bad, None


def sample_and_aggregate_sample(
    data: Any,
    func: Callable[[np.ndarray], Any] | str,
    *,
    chunks: int,
    output_bounds: tuple[float, float],
    epsilon: float,
    aggregator: str = "mean",
    size: int = 1,
    rng: Any = None,
    clamp: bool = True,
) -> np.ndarray:
    """``size`` independent releases of :func:`sample_and_aggregate` (each its own partition,
    ``clamp`` as there).

    The code a release runs, vectorised over the releases for ``func`` ``"mean"`` or
    ``"median"`` on 1-D data (one batch of exact permutations); each draw costs the full
    ``epsilon`` and no accountant is charged. For audits and studies.

    Examples
    --------
    >>> sample_and_aggregate_sample(np.arange(10.0), "mean", chunks=5, output_bounds=(0, 9),
    ...                             epsilon=1.0, size=3, rng=0).shape
    (3,)
    """
    arr = _check_data(data)
    k = _check_chunks(chunks, int(arr.shape[0]))
    lower, upper = check_bounds(_OWNER, output_bounds, name="output_bounds")
    eps = check_positive(_OWNER, "epsilon", epsilon)
    _check_func(func, arr)
    if aggregator not in ("mean", "median"):
        raise ParameterError(
            f"{_OWNER}: `aggregator` must be 'mean' or 'median'; got {aggregator!r}"
        )
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise TypeError(f"{_OWNER}: `size` must be an int >= 1; got {size!r}")
    check_bool(_OWNER, "clamp", clamp)
    vals = _draw(arr, func, k, (lower, upper), eps, aggregator, size, as_source(rng))[0]
    return clamp_to_range(vals, lower, upper)[0] if clamp else vals
