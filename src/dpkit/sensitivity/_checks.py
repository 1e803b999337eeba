"""Shared boundary checks of the sensitivity functions (relation, distance, data, bounds)."""

from __future__ import annotations

from typing import Any

import numpy as np

from dpkit._validate import (
    check_bounds,
    check_choice,
    check_finite_array,
    check_int,
    check_positive,
)
from dpkit._validate import check_relation as _check_relation
from dpkit.errors import ParameterError
from dpkit.sensitivity.catalogue import Statistic, resolve

NORMS = ("l1", "l2")


def check_relation(owner: str, relation: Any) -> str:
    """``"bounded"`` or ``"unbounded"`` (no default: the choice changes the answer)."""
    return _check_relation(owner, relation)


def check_distance(owner: str, distance: Any, *, name: str = "distance", minimum: int = 1) -> int:
    """A Hamming distance: an int >= ``minimum``."""
    return check_int(owner, name, distance, minimum=minimum)


def check_norm(owner: str, norm: Any) -> str:
    return check_choice(owner, "norm", norm, NORMS)


def check_beta(owner: str, beta: Any) -> float:
    return check_positive(owner, "beta", beta)


def query_of(owner: str, query: Any) -> Statistic:
    return resolve(query, owner=owner)


def sorted_data(
    owner: str, data: Any, bounds: tuple[float, float] | None, query: Statistic
) -> np.ndarray:
    """The data as a sorted float array, checked finite, non-empty and within ``bounds``."""
    arr = check_finite_array(owner, "data", data, ndim=1)
    if arr.size < max(query.min_size, 1):
        raise ParameterError(
            f"{owner}: `data` must hold at least {max(query.min_size, 1)} value(s) for "
            f"{query.name!r}; got {arr.size}"
        )
    if bounds is not None:
        lower, upper = bounds
        outside = int(np.count_nonzero((arr < lower) | (arr > upper)))
        if outside:
            raise ParameterError(
                f"{owner}: {outside} value(s) of `data` lie outside `bounds` "
                f"[{lower!r}, {upper!r}]; clip them first (for example numpy.clip) with bounds "
                "chosen without looking at the data"
            )
    return np.sort(arr)


def needs_bounds(owner: str, query: Statistic, bounds: Any) -> tuple[float, float] | None:
    """Bounds are required for every catalogue query except ``count``."""
    if query.kind == "count" and bounds is None:
        return None
    if query.kind == "custom":
        raise ParameterError(
            f"{owner}: {query.name!r} is a user function, for which no exact algorithm exists; "
            "use empirical_local or empirical_global (brute force over a universe)"
        )
    if bounds is None:
        raise ParameterError(
            f"{owner}: `bounds` is required for {query.name!r}: pass (lower, upper) chosen "
            "without looking at the data (added or replacing records may take any value in "
            "between); bounds derived from the data are not private"
        )
    return check_bounds(owner, bounds)
