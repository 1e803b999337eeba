"""The catalogue of statistics whose sensitivity :mod:`dpkit.sensitivity` computes.

A :class:`Statistic` is a small frozen value that evaluates a statistic on a one-dimensional
dataset (a multiset of real numbers) and, for the built-in catalogue, tells the sensitivity
functions which exact algorithm applies. Every sensitivity function and framework accepts a
:class:`Statistic` (its ``query`` parameter), the name of a parameterless one as a string
(``"count"``, ``"sum"``, ``"mean"``, ``"median"``, ``"var"``, ``"std"``) or any callable
``f(array) -> float`` (or ``-> array`` for vector-valued queries). The same module is
``dpkit.queries``.

The catalogue
-------------
============  =================================================  ==========
name          value on data ``x`` (``n = len(x)``)                 empty data
============  =================================================  ==========
``count``     ``n``                                                0
``sum``       ``x.sum()``                                          0
``mean``      ``x.mean()``                                         undefined
``median``    ``numpy.median(x)`` (average of the middle two)      undefined
``var``       ``x.var()`` (population, ddof=0)                     undefined
``std``       ``x.std()`` (population, ddof=0)                     undefined
percentile    ``numpy.percentile(x, p)`` (linear interpolation)    undefined
histogram     counts of ``x`` in the given bins (a vector)         zeros
============  =================================================  ==========

Empty datasets
--------------
Removing records (the unbounded relation) can empty a dataset. dpkit's convention, applied
identically by the exact algorithms and by the brute-force oracles: a query has a
``min_size``; datasets smaller than it are **out of scope**, that is they are neither a
dataset whose sensitivity is asked for nor a neighbour of one. ``count``, ``sum`` and
``histogram`` are defined on the empty dataset (``min_size=0``); every other query, including
user callables unless told otherwise, has ``min_size=1``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from dpkit._lattice import exact_sum
from dpkit._validate import check_finite_array, check_number
from dpkit.errors import ParameterError

__all__ = [
    "CATALOGUE",
    "Statistic",
    "count",
    "custom",
    "exact_statistic",
    "histogram",
    "mean",
    "median",
    "percentile",
    "resolve",
    "statistic_on_grid",
    "std",
    "sum",
    "var",
]

_ArrayFn = Callable[[np.ndarray], Any]


@dataclass(frozen=True, slots=True)
class Statistic:
    """A statistic of a one-dimensional dataset, as the sensitivity functions take it.

    Use the module-level catalogue (:data:`count`, :data:`sum`, :data:`mean`, :data:`median`,
    :data:`var`, :data:`std`), :func:`percentile`, :func:`histogram` or :func:`custom` rather than
    constructing one directly.

    Attributes
    ----------
    name
        Short name used in tables and plots, for example ``"median"`` or ``"p90"``.
    kind
        ``"count"``, ``"sum"``, ``"mean"``, ``"percentile"``, ``"var"``, ``"std"``,
        ``"histogram"`` or ``"custom"``; the exact sensitivity algorithms dispatch on it.
    func
        ``func(x)`` evaluates the query on a 1-D float array.
    batch
        ``batch(X)`` evaluates it on every row of a 2-D array at once (vectorised), or ``None``.
    min_size
        Smallest dataset size in scope (see the module docstring on empty datasets).
    q
        For percentiles, the fraction ``p / 100`` (the median has ``q = 0.5``); else ``None``.
    bins
        For histograms, the bin edges; else ``None``.
    vector
        ``True`` when the query returns an array (sensitivities then need a ``norm``).

    Examples
    --------
    >>> from dpkit import queries
    >>> queries.median([1.0, 2.0, 10.0, 11.0])
    6.0
    >>> queries.percentile(25)([1.0, 2.0, 3.0, 10.0, 11.0])
    2.0
    """

    name: str
    kind: str
    func: _ArrayFn = field(repr=False, compare=False)
    batch: _ArrayFn | None = field(default=None, repr=False, compare=False)
    min_size: int = 1
    q: float | None = None
    bins: tuple[float, ...] | None = None
    vector: bool = False

    def __call__(self, data: Any) -> Any:
        """Evaluate the query on ``data`` (a 1-D array of finite numbers)."""
        arr = check_finite_array(f"{self.name}", "data", data, allow_empty=True).ravel()
        if arr.size < self.min_size:
            raise ParameterError(
                f"{self.name}: `data` must hold at least {self.min_size} value(s); got {arr.size}"
            )
        out = self.func(arr)
        return np.asarray(out, dtype=np.float64) if self.vector else float(out)

    def evaluate_rows(self, rows: np.ndarray) -> np.ndarray:
        """Evaluate on every row of a 2-D array (all datasets of one size), vectorised.

        Returns a 1-D array (scalar queries) or a 2-D array with one row per dataset (vector
        queries). Falls back to a loop over rows for callables without a batch form.
        """
        rows = np.asarray(rows, dtype=np.float64)
        if rows.shape[0] == 0:
            return np.empty((0,), dtype=np.float64)
        if self.batch is not None:
            return np.asarray(self.batch(rows), dtype=np.float64)
        vals = [np.asarray(self.func(r), dtype=np.float64) for r in rows]
        return np.stack(vals) if vals else np.empty((0,), dtype=np.float64)


#: :class:`Statistic` under the name ``dpkit.queries`` also gives it (``dpkit.queries.Query``);
#: not to be confused with the Session's query builder, :class:`dpkit.session.Query`.
Query = Statistic


def _count_batch(rows: np.ndarray) -> np.ndarray:
    return np.full(rows.shape[0], float(rows.shape[1]))


def _mean(x: np.ndarray) -> float:
    return float(np.mean(x))


count = Statistic("count", "count", lambda x: float(x.size), _count_batch, min_size=0)
"""The number of records. Defined on the empty dataset (0)."""

sum = Statistic(  # the query is named sum on purpose (module attribute, not a builtin)
    "sum",
    "sum",
    lambda x: float(np.sum(x)),
    lambda rows: np.sum(rows, axis=1),
    min_size=0,
)
"""The sum of the records. Defined on the empty dataset (0)."""

mean = Statistic("mean", "mean", _mean, lambda rows: np.mean(rows, axis=1))
"""The arithmetic mean. Undefined on the empty dataset."""

median = Statistic(
    "median",
    "percentile",
    lambda x: float(np.median(x)),
    lambda rows: np.median(rows, axis=1),
    q=0.5,
)
"""NumPy's median (the average of the two middle values for an even size)."""

var = Statistic("var", "var", lambda x: float(np.var(x)), lambda rows: np.var(rows, axis=1))
"""Population variance (ddof=0)."""

std = Statistic("std", "std", lambda x: float(np.std(x)), lambda rows: np.std(rows, axis=1))
"""Population standard deviation (ddof=0)."""

CATALOGUE: dict[str, Statistic] = {q.name: q for q in (count, sum, mean, median, var, std)}
"""The parameterless queries by name (the strings every sensitivity function accepts)."""


def percentile(p: float) -> Statistic:
    """The ``p``-th percentile with NumPy's default linear interpolation.

    Parameters
    ----------
    p : float
        Percentile in [0, 100]. ``percentile(50)`` equals :data:`median`.

    Returns
    -------
    Statistic
        A query named ``"p<p>"`` (``"median"`` for 50).

    Raises
    ------
    TypeError
        If ``p`` is not a real number.
    ParameterError
        If ``p`` is not finite or outside [0, 100].

    Notes
    -----
    With ``x`` sorted and ``h = (p / 100) (n - 1)``, the value is
    ``x[floor(h)] + (h - floor(h)) (x[floor(h) + 1] - x[floor(h)])``.

    Examples
    --------
    >>> from dpkit import queries
    >>> queries.percentile(90)([0.0, 10.0, 20.0, 30.0, 40.0])
    36.0
    """
    value = check_number("percentile", "p", p)
    if not 0 <= value <= 100:
        raise ParameterError(f"percentile: `p` must be in [0, 100]; got {p!r}")
    if value == 50:
        return median
    name = f"p{value:g}"
    return Statistic(
        name,
        "percentile",
        lambda x: float(np.percentile(x, value)),
        lambda rows: np.percentile(rows, value, axis=1),
        q=value / 100,
    )


def histogram(bins: Any) -> Statistic:
    """Counts of the records in each bin: a vector-valued query.

    Parameters
    ----------
    bins : sequence of float
        Strictly increasing bin edges (at least two), as for :func:`numpy.histogram`: every bin
        is half-open ``[e_i, e_{i+1})`` except the last, which is closed.

    Returns
    -------
    Statistic
        A vector query with ``len(bins) - 1`` coordinates.

    Raises
    ------
    TypeError
        If ``bins`` is not numeric.
    ParameterError
        If there are fewer than two edges, or they are not finite and strictly increasing.

    Notes
    -----
    One record added or removed changes one count by one (L1 = L2 = 1, unbounded); one record
    replaced moves one unit between two bins (L1 = 2, L2 = sqrt(2), bounded).

    Examples
    --------
    >>> from dpkit import queries
    >>> queries.histogram([0, 10, 20])([1.0, 5.0, 15.0]).tolist()
    [2.0, 1.0]
    """
    edges = check_finite_array("histogram", "bins", bins).ravel()
    if edges.size < 2 or not np.all(np.diff(edges) > 0):
        raise ParameterError(
            "histogram: `bins` must be at least two strictly increasing edges; "
            f"got {edges.tolist()!r}"
        )
    edge_tuple = tuple(float(e) for e in edges)

    def func(x: np.ndarray) -> np.ndarray:
        return np.histogram(x, bins=edges)[0].astype(np.float64)

    def batch(rows: np.ndarray) -> np.ndarray:
        idx = np.searchsorted(edges, rows, side="right") - 1
        idx = np.where(rows == edges[-1], edges.size - 2, idx)
        out = np.zeros((rows.shape[0], edges.size - 1))
        for b in range(edges.size - 1):
            out[:, b] = np.count_nonzero(idx == b, axis=1)
        return out

    return Statistic(
        f"histogram[{edges.size - 1}]",
        "histogram",
        func,
        batch,
        min_size=0,
        bins=edge_tuple,
        vector=True,
    )


def custom(
    func: Callable[[np.ndarray], Any],
    *,
    name: str | None = None,
    min_size: int = 1,
    vector: bool = False,
    batch: Callable[[np.ndarray], Any] | None = None,
) -> Statistic:
    """Wrap a user function ``f(array) -> float`` (or ``-> array``) as a query.

    Only the brute-force oracles (:func:`dpkit.sensitivity.empirical_global`,
    :func:`dpkit.sensitivity.empirical_local`) can compute the sensitivity of a custom query.

    Parameters
    ----------
    func : callable
        Evaluates the statistic on a 1-D float array.
    name : str, optional
        Name for tables and plots (default: the function's ``__name__``).
    min_size : int, default 1
        Smallest dataset size on which ``func`` is defined (0 if it accepts empty data).
    vector : bool, default False
        ``True`` when ``func`` returns an array.
    batch : callable, optional
        A vectorised form evaluating every row of a 2-D array at once.

    Returns
    -------
    Statistic

    Raises
    ------
    TypeError
        If ``func`` is not callable or ``min_size`` is not an integer.
    ParameterError
        If ``min_size`` is negative.

    Examples
    --------
    >>> from dpkit import queries
    >>> q = queries.custom(lambda x: x.max() - x.min(), name="range")
    >>> q([3.0, 1.0, 7.0])
    6.0
    """
    if not callable(func):
        raise TypeError(f"custom: `func` must be callable; got {type(func).__name__}")
    if isinstance(min_size, bool) or not isinstance(min_size, int | np.integer):
        raise TypeError(f"custom: `min_size` must be an int; got {min_size!r}")
    if min_size < 0:
        raise ParameterError(f"custom: `min_size` must be >= 0; got {min_size}")
    label = name if name is not None else getattr(func, "__name__", "custom")
    return Statistic(label, "custom", func, batch, min_size=int(min_size), vector=bool(vector))


def resolve(query: Any, *, owner: str = "query") -> Statistic:
    """Turn a :class:`Statistic`, a catalogue name or a callable into a :class:`Statistic`.

    Parameters
    ----------
    query : Statistic, str or callable
        A query object; ``"count"``, ``"sum"``, ``"mean"``, ``"median"``, ``"var"``, ``"std"``
        (or ``"pNN"`` / ``"percentile:NN"`` for a percentile); or ``f(array) -> float``.
    owner : str
        Name of the calling function, for error messages.

    Returns
    -------
    Statistic

    Raises
    ------
    ParameterError
        For an unknown name (the message lists the known ones).
    TypeError
        For anything else.

    Examples
    --------
    >>> from dpkit import queries
    >>> queries.resolve("median").name
    'median'
    >>> queries.resolve("p90").q
    0.9
    """
    if isinstance(query, Statistic):
        return query
    if isinstance(query, str):
        key = query.strip().lower()
        if key in CATALOGUE:
            return CATALOGUE[key]
        for prefix in ("percentile:", "p"):
            if key.startswith(prefix):
                try:
                    value = float(key[len(prefix) :])
                except ValueError:
                    break
                return percentile(value)
        known = ", ".join(repr(k) for k in CATALOGUE)
        raise ParameterError(
            f"{owner}: unknown query {query!r}; known queries are {known} and 'pNN' for the "
            "NN-th percentile, or pass a callable f(array) -> float"
        )
    if callable(query):
        return custom(query)
    raise TypeError(
        f"{owner}: `query` must be a dpkit.queries Statistic, a query name or a callable; "
        f"got {type(query).__name__} {query!r}"
    )


# -- exact evaluation on the lattice ------------------------------------------------------------

_EXACT_KINDS = ("count", "sum", "mean", "percentile", "var", "std")


def _sum_of_squares(y: np.ndarray) -> int:
    """``sum(y**2)`` exactly for int64 ``0 <= y < 2**32``: split ``y = a 2**16 + b``."""
    a, b = y >> 16, y & 0xFFFF
    return (exact_sum(a * a) << 32) + (exact_sum(2 * a * b) << 16) + exact_sum(b * b)


def _exact_variance(units: np.ndarray) -> Fraction:
    """The population variance of the integers ``units``, exactly (shift-invariant)."""
    n = units.size
    y = units - units.min()  # 0 <= y <= the lattice width, below 2**32 (check_unit)
    if y.size and int(y.max()) >= 2**32:
        raise ParameterError("exact_statistic: lattice width above 2**32 units")
    s = exact_sum(y)
    return Fraction(n * _sum_of_squares(y) - s * s, n * n)


def exact_statistic(query: Statistic, units: Any, unit: float) -> Fraction:
    """A catalogue statistic of the records ``units * unit``, as an exact Fraction.

    ``units`` are int64 lattice units (:func:`dpkit._lattice.units`), ``unit`` a power of two.
    Count, sum, mean, percentiles (NumPy's linear interpolation with ``h = p (n - 1)``, ``p``
    the query's float fraction taken exactly) and the population variance are rational in
    the units; the standard deviation is not (use :func:`statistic_on_grid`).

    Examples
    --------
    >>> exact_statistic(mean, np.array([1, 2, 2]), 0.5)
    Fraction(5, 6)
    >>> exact_statistic(percentile(25), np.array([0, 1, 3, 10, 11]), 1.0)
    Fraction(1, 1)
    """
    q = query
    if q.kind not in _EXACT_KINDS or q.kind == "std":
        raise ParameterError(f"exact_statistic: no exact rational value for {q.name!r}")
    u = np.sort(np.asarray(units, dtype=np.int64).ravel())
    n = u.size
    if n < q.min_size:
        raise ParameterError(f"exact_statistic: {q.name!r} needs at least {q.min_size} record(s)")
    g = Fraction(unit)
    if q.kind == "count":
        return Fraction(n)
    if q.kind == "sum":
        return exact_sum(u) * g
    if q.kind == "mean":
        return Fraction(exact_sum(u), n) * g
    if q.kind == "var":
        return _exact_variance(u) * g * g
    assert q.q is not None
    h = Fraction(q.q) * (n - 1)
    f = math.floor(h)
    low = int(u[f])
    high = int(u[min(f + 1, n - 1)])
    return (low + (h - f) * (high - low)) * g


def statistic_on_grid(query: Statistic, units: Any, unit: float, grid: float) -> int:
    """The statistic of ``units * unit`` divided by ``grid`` and rounded to the nearest integer
    (ties to even), exactly; ``grid`` a power of two.

    The standard deviation ``sqrt(V)`` is rounded with integer square roots: ``k =
    floor(sqrt(N / D))`` for ``V / grid**2 = N / D``, then ``k + 1`` when ``4 N > (2 k + 1)**2
    D`` (a tie, ``sqrt`` rational, goes to the even one).

    Examples
    --------
    >>> statistic_on_grid(std, np.array([0, 0, 0, 19]), 0.5, 2.0**-10)  # 9.5 sqrt(3) / 4
    4212
    """
    if query.kind != "std":
        return round(exact_statistic(query, units, unit) / Fraction(grid))
    u = np.asarray(units, dtype=np.int64).ravel()
    if u.size == 0:
        raise ParameterError("statistic_on_grid: 'std' needs at least one record")
    ratio = _exact_variance(u) * (Fraction(unit) / Fraction(grid)) ** 2
    num, den = ratio.numerator, ratio.denominator
    k = math.isqrt(num * den) // den
    twice = (2 * k + 1) ** 2 * den
    if 4 * num > twice or (4 * num == twice and k % 2 == 1):
        k += 1
    return k
