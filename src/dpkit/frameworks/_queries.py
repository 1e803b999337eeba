"""The queries a framework takes: the names with an exact ``A(f, x, k)``, the quantiles."""

from __future__ import annotations

from typing import Any

from dpkit._validate import check_number, describe
from dpkit.errors import ParameterError
from dpkit.sensitivity.at_distance import SUPPORTED
from dpkit.sensitivity.catalogue import Statistic

__all__ = ["EXACT_QUERIES", "check_exact_query", "quantile_of"]


#: The query names with an exact ``A(f, x, k)`` (``dpkit.sensitivity.at_distance.SUPPORTED``).
EXACT_QUERIES = "'count', 'sum', 'mean', 'median', a percentile ('pNN'), 'var' or 'std'"


def check_exact_query(
    owner: str, query: Any, resolved: Any, supported: str = EXACT_QUERIES
) -> None:
    """Refuse a query without an exact ``A(f, x, k)`` (a callable, a histogram), by name.

    ``resolved`` is :func:`dpkit.queries.resolve` of ``query``; ``supported`` lists the
    query names ``owner`` takes (by default all of them). A callable such as
    ``numpy.median`` is named as a callable (its ``__name__`` is not a query name: dpkit
    cannot know what it computes).
    """
    if resolved.kind in SUPPORTED:
        return
    if callable(query) and not isinstance(query, Statistic):
        what = f"a callable named {describe(getattr(query, '__name__', type(query).__name__))}"
        hint = (
            "; a callable is not a supported query name, even one that computes a supported "
            "statistic: pass the name (for example 'median', not numpy.median); for any "
            "function use sample_and_aggregate"
        )
    else:
        what = f"{describe(resolved.name)} (a {resolved.kind} query)"
        hint = "; for other queries use sample_and_aggregate"
    raise ParameterError(
        f"{owner}: `query` must be one of the supported query names: {supported}; got {what}{hint}"
    )


def quantile_of(owner: str, query: Any, percentile: Any) -> tuple[str, float]:
    """Normalise a quantile query to ``(name, p)`` with ``p`` in [0, 1].

    Accepts ``"median"``, ``"percentile"`` with ``percentile=`` in [0, 100], or a
    :mod:`dpkit.queries` percentile query (``kind == "percentile"``, ``q = p / 100``).
    """
    if not isinstance(query, str | Statistic):
        raise TypeError(
            f"{owner}: `query` must be 'median', 'percentile' or a dpkit.queries percentile; "
            f"got {type(query).__name__} {describe(query)}"
        )
    name = query if isinstance(query, str) else query.name
    is_quantile = (
        isinstance(query, Statistic) and query.kind == "percentile" and query.q is not None
    )
    if is_quantile and percentile is None:  # a dpkit.queries percentile: q = p / 100
        assert isinstance(query, Statistic) and query.q is not None
        return ("median", 0.5) if query.q == 0.5 else ("percentile", float(query.q))
    if name == "median":
        if percentile is not None and check_number(owner, "percentile", percentile) != 50:
            raise ParameterError(
                f"{owner}: `percentile` must be 50 (or omitted) for the median; got {percentile!r}"
            )
        return "median", 0.5
    if name in ("percentile", "quantile"):
        if percentile is None:
            raise ParameterError(
                f"{owner}: query 'percentile' needs `percentile` in [0, 100]; got None"
            )
        p = check_number(owner, "percentile", percentile)
        if not 0 <= p <= 100:
            raise ParameterError(f"{owner}: `percentile` must be in [0, 100]; got {percentile!r}")
        return "percentile", p / 100
    raise ParameterError(
        f"{owner}: `query` must be 'median' or 'percentile' (with `percentile=`); got "
        f"{describe(query)}"
    )
