"""Session aggregates: values describing one statistic (``dp.count()``, ``dp.mean(...)``, ...).

An aggregate is a small frozen value. It knows which integer statistics the engine must
compute for it (counts and sums of lattice units, :mod:`dpkit.session._lattice`), the
per-row contribution of each (from which the Session derives every sensitivity), how its
budget share is split between them, and how to turn their noisy values into the released
estimate and its interval. It never sees the data.

Sensitivities, for a privacy unit contributing at most ``k`` rows after bounding (add/remove
one unit; ``k = 1`` for row-level privacy), with ``w`` the largest ``|units|`` and ``h`` the
largest ``|units - centre|`` of the aggregate's lattice:

=========  ================================  =====================================
aggregate  noisy integer statistics          L1 (and L2) sensitivity, per statistic
=========  ================================  =====================================
count      rows (or non-null values)         k
sum        sum of units                      k w
mean       count, centred sum                k, k h
var / std  count, centred sum, sum squares   k, k h, k h**2
quantile   exponential mechanism per group   epsilon / k per group (group privacy)
histogram  count per (group, bin)            k
=========  ================================  =====================================

The L1 bound covers all groups at once (a unit's ``k`` rows are spread over its groups), so
disjoint groups compose in parallel without any extra charge.
"""

from __future__ import annotations

import dataclasses
import datetime
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import narwhals as nw
import numpy as np

from dpkit._validate import check_bounds, check_level, check_number, check_positive, describe
from dpkit.errors import ParameterError
from dpkit.session._lattice import Lattice
from dpkit.session._specs import NOTHING_KNOWN, CleanColumns, CountOf, Rows, Summed
from dpkit.statistics.bounds import METHODS as BOUNDS_METHODS
from dpkit.statistics.bounds import check_moments_lower, representable
from dpkit.statistics.quantile_release import METHODS as QUANTILE_METHODS

__all__ = [
    "Aggregate",
    "Count",
    "Histogram",
    "Mean",
    "Part",
    "Quantile",
    "Sum",
    "Var",
    "count",
    "histogram",
    "mean",
    "median",
    "quantile",
    "quantile_bits",
    "std",
    "sum",
    "var",
]

#: lattice resolution (in bits over the bounds' width) for sums and means, and for moments
_SUM_BITS = 20
_VAR_BITS = 10
#: The quantile grid: ``2**bits`` steps over the bounds (the unit is the power of two
#: :func:`dpkit._lattice.unit_for` gives). The engine hands Python one count per (group,
#: occupied grid point): never more than the rows, and never more than ``2**bits + 1`` per
#: group whatever the data. ``bits`` comes from public facts only (:func:`quantile_bits`): as
#: fine as the public cap of :data:`QUANTILE_CELLS` grid counts per aggregate allows over the
#: groups that can reach the engine's count (``2**24`` steps for one group: lognormal(10, 1)
#: deciles in [0, 1e7], n = 1e4, epsilon 1, are then as accurate as the array path's,
#: 0.11-0.12% rank error, against 0.20% on ``2**16`` steps, where 37 records shared one step
#: at the 10th percentile), and never coarser than ``2**16`` steps.
QUANTILE_CELLS = 2**24
QUANTILE_MIN_BITS = 16
#: the finest grid: the lattice of the mechanism itself (dpkit._lattice.GRID_BITS)
QUANTILE_MAX_BITS = 30

#: the mean's share for its sum: minimises the expected squared error when the true mean is
#: uniform over the bounds (Laplace: 1 / (1 + 3**(-1/3)); Gaussian/zCDP: 1 / (1 + 3**(-1/2)))
_MEAN_SUM_SHARE = {"laplace": Fraction(59, 100), "gaussian": Fraction(634, 1000)}


@dataclass(frozen=True, slots=True)
class Part:
    """One noisy integer statistic of an aggregate.

    ``per_row`` is the largest change one row can make to it (in statistic units), so the
    L1 sensitivity for ``k`` rows per unit is ``k * per_row``; ``share`` is its fraction of
    the aggregate's budget; ``unit`` is the value of one statistic unit.
    """

    key: str
    label: str
    per_row: int
    share: Fraction
    unit: float


def _check_weight(owner: str, weight: Any) -> float:
    return check_positive(owner, "weight", weight)


def _check_name(owner: str, name: Any) -> str | None:
    if name is None:
        return None
    if not isinstance(name, str) or not name:
        raise TypeError(f"{owner}: `name` must be a non-empty str; got {name!r}")
    return name


def _check_column(owner: str, column: Any) -> str:
    if not isinstance(column, str) or not column:
        raise TypeError(f"{owner}: `column` must be a column name (str); got {column!r}")
    return column


def _check_fill(owner: str, fill: Any) -> float | None:
    return None if fill is None else check_number(owner, "fill", fill)


@dataclass(frozen=True, slots=True)
class Aggregate:
    """Base of every aggregate: the column, the output name and the budget weight.

    The whole protocol a release uses is declared here, so that the plan, the engine side
    and the noise side call it on any aggregate without probing for attributes: the noisy
    parts (:meth:`parts`), the engine's per-group figures (:meth:`columns`), the exact
    statistics and the released columns (:meth:`statistics`, :meth:`finish`), the interval
    level (:meth:`interval_alpha`), and the bounding facts (:attr:`bounds`, :attr:`fill`,
    :attr:`lattice`, :attr:`auto` and the automatic bounds' settings), which an aggregate
    without bounds (a count, a histogram) answers with their neutral values.
    """

    column: str | None
    name: str
    weight: float

    #: the noisy integer statistics; empty for aggregates released by another mechanism
    def parts(self, noise: str, prefix: str) -> list[Part]:  # pragma: no cover - abstract
        raise NotImplementedError

    def columns(
        self, schema: Any, prefix: str, clean: CleanColumns = NOTHING_KNOWN
    ) -> dict[str, Any]:
        """What the engine aggregates per group for :meth:`statistics` (see
        :mod:`dpkit.session._specs`); columns in ``clean`` are known to hold no null and no
        NaN. Empty for an aggregate the engine counts another way (a quantile's grid, a
        histogram's bins)."""
        return {}

    def statistics(  # pragma: no cover - abstract
        self, table: dict[str, np.ndarray], prefix: str
    ) -> list[np.ndarray]:
        """The exact integer statistic of each part, per group, from the engine's figures."""
        raise NotImplementedError

    def finish(  # pragma: no cover - abstract
        self, noisy: list[np.ndarray], half: list[int], alpha: float
    ) -> dict[str, Any]:
        """The released columns from the noisy statistics and their interval half-widths."""
        raise NotImplementedError

    def interval_alpha(self, alpha: float) -> float:
        """The level each part's interval is computed at for an interval at ``alpha``."""
        return alpha

    def resolve(self, bounds: tuple[float, float]) -> Aggregate:
        """This aggregate with ``bounds`` chosen for ``bounds="auto"`` (itself when it has
        no automatic bounds)."""
        return self

    @property
    def bounds(self) -> tuple[float, float] | None:
        """The clipping bounds (``None``: the aggregate clips nothing)."""
        return None

    @property
    def fill(self) -> float | None:
        """The value nulls and NaN are replaced by (``None``: left out)."""
        return None

    @property
    def lattice(self) -> Lattice | None:
        """The exact integer lattice of the clipped values (``None``: none)."""
        return None

    @property
    def auto(self) -> bool:
        """``bounds="auto"`` not yet resolved."""
        return False

    @property
    def bounds_share(self) -> float:
        """The share of the aggregate's budget spent on choosing its bounds."""
        return 0.0

    @property
    def bounds_method(self) -> str:
        """How ``bounds="auto"`` chooses: ``"histogram"`` or ``"tail"``."""
        return "histogram"

    @property
    def lower(self) -> float | None:
        """A public lower bound for ``bounds="auto"`` (``None``: both ends searched)."""
        return None

    @property
    def root(self) -> bool:
        """A standard deviation (the root of a variance)."""
        return False

    @property
    def reads_numbers(self) -> bool:
        """The aggregate reads its column as numbers (text columns are parsed for it)."""
        return False

    def outputs(self) -> list[str]:
        """The released value columns (each also gets ``_low`` and ``_high``)."""
        return [self.name]

    def check_schema(self, schema: Any) -> None:
        """Refuse unknown or non-numeric columns (TypeError / ParameterError)."""
        if self.column is None:
            return
        owner = type(self).__name__.lower()
        if self.column not in schema:
            raise ParameterError(
                f"dp.{owner}: unknown column {self.column!r}; the data has "
                f"{', '.join(map(repr, schema))}"
            )


def _numeric(owner: str, column: str, schema: Any) -> None:
    if column not in schema:
        raise ParameterError(
            f"dp.{owner}: unknown column {column!r}; the data has {', '.join(map(repr, schema))}"
        )
    dtype = schema[column]
    if not dtype.is_numeric():
        raise TypeError(
            f"dp.{owner}: column {column!r} must be numeric (integer, float or decimal); "
            f"got {dtype}"
        )


@dataclass(frozen=True, slots=True)
class Count(Aggregate):
    """``dp.count()``: the number of rows (or of non-null values of ``column``)."""

    def parts(self, noise: str, prefix: str) -> list[Part]:
        return [Part(f"{prefix}n", "count", 1, Fraction(1), 1.0)]

    def columns(
        self, schema: Any, prefix: str, clean: CleanColumns = NOTHING_KNOWN
    ) -> dict[str, Any]:
        """What the engine aggregates per group (see :mod:`dpkit.session._specs`); columns in
        ``clean`` are known to hold no null and no NaN."""
        if self.column is None:
            return {f"{prefix}n": Rows()}
        ok = _valid(self.column, schema[self.column])
        return {f"{prefix}n": Summed(nw.when(ok).then(nw.lit(1.0)).otherwise(nw.lit(0.0)), bound=1)}

    def statistics(self, table: dict[str, np.ndarray], prefix: str) -> list[np.ndarray]:
        return [table[f"{prefix}n"]]

    def finish(self, noisy: list[np.ndarray], half: list[int], alpha: float) -> dict[str, Any]:
        v = noisy[0].astype(np.int64)
        return {self.name: v, f"{self.name}_low": v - half[0], f"{self.name}_high": v + half[0]}


def _valid(column: str, dtype: Any) -> nw.Expr:
    ok = ~nw.col(column).is_null()
    if dtype.is_float():
        ok = ok & ~nw.col(column).is_nan()
    return ok


#: default share of an aggregate's budget spent on choosing its bounds (``bounds="auto"``)
AUTO_BOUNDS_SHARE = 0.5


@dataclass(frozen=True, slots=True)
class _Bounded(Aggregate):
    bounds: tuple[float, float] = (0.0, 1.0)
    fill: float | None = None
    lattice: Lattice = field(default=None, repr=False, compare=False)  # type: ignore[assignment]
    #: ``bounds="auto"`` not yet resolved: ``bounds`` is a placeholder and there is no lattice
    auto: bool = False
    #: the share of this aggregate's budget spent on choosing its bounds (0 with given bounds;
    #: kept after :meth:`resolve`, so the statistics get the rest)
    bounds_share: float = 0.0
    #: how ``bounds="auto"`` chooses: ``"histogram"`` (ApproximateBounds) or ``"tail"`` (UQE)
    bounds_method: str = "histogram"
    #: a public lower bound for ``bounds="auto"`` (only the upper bound is then searched)
    lower: float | None = None

    @property
    def reads_numbers(self) -> bool:
        return True

    def check_schema(self, schema: Any) -> None:
        _numeric(type(self).__name__.lower(), self.column or "", schema)

    def resolve(self, bounds: tuple[float, float]) -> Any:
        """This aggregate with privately chosen ``bounds`` (a DP output) in place of "auto",
        first kept where its lattice exists (:func:`dpkit.statistics.bounds.representable`;
        for a variance within ``+-2**500`` and ``2**-480`` apart, so that squares stay finite
        and normal; for a sum stretched through 0, which leaves its sensitivity unchanged):
        post-processing, so nothing can fail after the spend."""
        var = isinstance(self, Var)
        safe = representable(bounds, var, isinstance(self, Sum))
        out = dataclasses.replace(self, bounds=safe, auto=False)
        return _with_lattice(out, _VAR_BITS if var else _SUM_BITS)

    def _base_columns(
        self, schema: Any, prefix: str, clean: CleanColumns, squares: bool = False
    ) -> dict[str, Any]:
        assert self.column is not None
        lat = self.lattice
        valid = None if self.column in clean else lat.valid(self.column, schema[self.column])
        span = clean.spans.get(self.column)  # the column's range, if known
        # uncentred units when their float64 sums are exact too: at most `rows` values per
        # group (the table's rows), each of magnitude <= lat.magnitude
        rows = clean.rows
        plain = not squares and rows is not None and rows * lat.magnitude <= 2**53
        off = lat.offsets(
            self.column, valid, self.fill, clip=not lat.inside(span), centred=not plain
        )
        h = lat.half_range
        out: dict[str, Any] = {
            f"{prefix}s": Summed(off, lat.centre, f"{prefix}n", lat.magnitude)
            if plain
            else Summed(off, bound=h),
            f"{prefix}n": CountOf(f"{prefix}s"),  # the non-null offsets: the valid values
        }
        if squares:
            out[f"{prefix}q"] = Summed(off * off, bound=h * h)
        return out


@dataclass(frozen=True, slots=True)
class Sum(_Bounded):
    """``dp.sum(column, bounds=)``: the sum of the clipped values.

    The sum and its interval are exact integers of lattice units rounded once to float64:
    a value or an interval end beyond the float range (bounds near ``1e308``, or a tiny
    epsilon's wide interval) is released as ``-inf`` or ``inf``; bounds and a budget whose
    noise interval alone is beyond it (``+-inf`` for every table) are refused before the
    spend (:func:`dpkit.statistics.moments.check_sum_interval`).
    """

    def parts(self, noise: str, prefix: str) -> list[Part]:
        lat = self.lattice
        return [Part(f"{prefix}sum", "sum", lat.magnitude, Fraction(1), lat.unit)]

    def columns(
        self, schema: Any, prefix: str, clean: CleanColumns = NOTHING_KNOWN
    ) -> dict[str, Any]:
        return self._base_columns(schema, prefix, clean)

    def statistics(self, table: dict[str, np.ndarray], prefix: str) -> list[np.ndarray]:
        n, s = table[f"{prefix}n"], table[f"{prefix}s"]
        c = self.lattice.centre
        total = n.astype(object) * c + s.astype(object)  # exact Python integers
        return [_compact(total)]

    def finish(self, noisy: list[np.ndarray], half: list[int], alpha: float) -> dict[str, Any]:
        """The sum and its interval, in float64: an interval whose ends leave int64 (a
        tiny epsilon, bounds far from 0) is computed in Python integers, and an end beyond
        the float range is released as an infinity (never an error after the spend)."""
        u = self.lattice.unit
        v = noisy[0]
        if v.dtype == object or not _fits_int64(v, half[0]):
            v = v.astype(object)
        return {
            self.name: _scaled(v, u),
            f"{self.name}_low": _scaled(v - half[0], u),
            f"{self.name}_high": _scaled(v + half[0], u),
        }


def _compact(values: np.ndarray) -> np.ndarray:
    """int64 when every value fits comfortably, else an object array of Python ints."""
    if values.size == 0:
        return np.zeros(0, dtype=np.int64)
    big = max(abs(int(values.max())), abs(int(values.min())))
    return values.astype(np.int64) if big < 2**60 else values


def _fits_int64(v: np.ndarray, half: int) -> bool:
    """``v - half`` and ``v + half`` stay within int64."""
    top = max(abs(int(v.max())), abs(int(v.min()))) if v.size else 0
    return top + abs(int(half)) < 2**63


def _times(x: int, unit: float) -> float:
    """The integer ``x`` times the power of two ``unit``, rounded to float64 once; an
    infinity of ``x``'s sign past the float range."""
    try:
        return float(Fraction(int(x)) * Fraction(unit))
    except OverflowError:
        return math.copysign(math.inf, x)


def _scaled(v: np.ndarray, unit: float) -> np.ndarray:
    """Integers times a power-of-two unit, as float64 (rounded only past 2**53; an
    infinity past the float range)."""
    if v.dtype == object:
        return np.array([_times(x, unit) for x in v], dtype=np.float64)
    with np.errstate(over="ignore"):
        return v.astype(np.float64) * unit


@dataclass(frozen=True, slots=True)
class Mean(_Bounded):
    """``dp.mean(column, bounds=)``: centred noisy sum over noisy count, clamped to the bounds.

    Estimator: ``clamp(unit * (centre + S / max(N, 1)), lower, upper)`` with ``S`` the noisy
    sum of ``units - centre`` and ``N`` the noisy count. The sum takes 59% (Laplace) or 63.4%
    (Gaussian) of the mean's budget: the split minimising the expected squared error when the
    true mean is uniform over the bounds. The interval combines the sum's and the count's
    ``1 - alpha/2`` intervals (a union bound, so it is conservative) and is ``bounds`` when the
    count's interval reaches 0.
    """

    def parts(self, noise: str, prefix: str) -> list[Part]:
        lat = self.lattice
        share = _MEAN_SUM_SHARE[noise]
        return [
            Part(f"{prefix}n", "count", 1, 1 - share, 1.0),
            Part(f"{prefix}s", "centred sum", lat.half_range, share, lat.unit),
        ]

    def columns(
        self, schema: Any, prefix: str, clean: CleanColumns = NOTHING_KNOWN
    ) -> dict[str, Any]:
        return self._base_columns(schema, prefix, clean)

    def statistics(self, table: dict[str, np.ndarray], prefix: str) -> list[np.ndarray]:
        return [table[f"{prefix}n"], table[f"{prefix}s"]]

    def interval_alpha(self, alpha: float) -> float:
        return alpha / 2

    def finish(self, noisy: list[np.ndarray], half: list[int], alpha: float) -> dict[str, Any]:
        lat = self.lattice
        n = noisy[0].astype(np.float64)
        s = noisy[1].astype(np.float64)
        value = _clamp((lat.centre + s / np.maximum(n, 1.0)) * lat.unit, lat)
        n_lo, n_hi = n - half[0], n + half[0]
        s_lo, s_hi = s - half[1], s + half[1]
        with np.errstate(divide="ignore", invalid="ignore"):
            corners = np.stack([s_lo / n_lo, s_lo / n_hi, s_hi / n_lo, s_hi / n_hi])
        ok = n_lo > 0
        lo = np.where(ok, (lat.centre + corners.min(axis=0)) * lat.unit, lat.lower)
        hi = np.where(ok, (lat.centre + corners.max(axis=0)) * lat.unit, lat.upper)
        return {
            self.name: value,
            f"{self.name}_low": _clamp(lo, lat),
            f"{self.name}_high": _clamp(hi, lat),
        }


def _clamp(x: np.ndarray, lat: Lattice) -> np.ndarray:
    return np.clip(x, lat.lower, lat.upper)


@dataclass(frozen=True, slots=True)
class Var(_Bounded):
    """``dp.var`` / ``dp.std``: population variance (ddof = 0) from three noisy moments.

    Estimator: ``N``, ``S1 = sum(v)`` and ``S2 = sum(v**2)`` with ``v = units - centre`` get a
    third of the budget each; ``var = unit**2 (S2 / N - (S1 / N)**2)`` clamped to
    ``[0, ((upper - lower) / 2)**2]``; ``std = sqrt(var)``. The interval combines the three
    ``1 - alpha/3`` intervals by interval arithmetic (conservative).
    """

    root: bool = False

    def parts(self, noise: str, prefix: str) -> list[Part]:
        lat = self.lattice
        third = Fraction(1, 3)
        return [
            Part(f"{prefix}n", "count", 1, third, 1.0),
            Part(f"{prefix}s", "centred sum", lat.half_range, third, lat.unit),
            Part(f"{prefix}q", "sum of squares", lat.half_range**2, third, lat.unit**2),
        ]

    def columns(
        self, schema: Any, prefix: str, clean: CleanColumns = NOTHING_KNOWN
    ) -> dict[str, Any]:
        return self._base_columns(schema, prefix, clean, squares=True)

    def statistics(self, table: dict[str, np.ndarray], prefix: str) -> list[np.ndarray]:
        return [table[f"{prefix}n"], table[f"{prefix}s"], table[f"{prefix}q"]]

    def interval_alpha(self, alpha: float) -> float:
        return alpha / 3

    def finish(self, noisy: list[np.ndarray], half: list[int], alpha: float) -> dict[str, Any]:
        lat = self.lattice
        n, s1, s2 = (x.astype(np.float64) for x in noisy)
        top = ((lat.high - lat.low) / 2) ** 2  # largest variance on the lattice, in units**2
        nn = np.maximum(n, 1.0)
        value = np.clip(s2 / nn - (s1 / nn) ** 2, 0.0, top)
        n_lo, n_hi = n - half[0], n + half[0]
        s1_lo, s1_hi = s1 - half[1], s1 + half[1]
        q_lo, q_hi = np.maximum(s2 - half[2], 0.0), s2 + half[2]
        ok = n_lo > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            m = np.stack([s1_lo / n_lo, s1_lo / n_hi, s1_hi / n_lo, s1_hi / n_hi])
            m_lo, m_hi = m.min(axis=0), m.max(axis=0)
            sq_hi = np.maximum(m_lo**2, m_hi**2)
            sq_lo = np.where((m_lo <= 0) & (m_hi >= 0), 0.0, np.minimum(m_lo**2, m_hi**2))
            lo = np.where(ok, q_lo / n_hi - sq_hi, 0.0)
            hi = np.where(ok, q_hi / n_lo - sq_lo, top)
        lo, hi = np.clip(lo, 0.0, top), np.clip(hi, 0.0, top)
        u2 = lat.unit**2
        value, lo, hi = value * u2, lo * u2, hi * u2
        if self.root:
            value, lo, hi = np.sqrt(value), np.sqrt(lo), np.sqrt(hi)
        return {self.name: value, f"{self.name}_low": lo, f"{self.name}_high": hi}


@dataclass(frozen=True, slots=True)
class Quantile(_Bounded):
    """``dp.quantile`` / ``dp.median``: the exponential mechanism per group.

    Released by :func:`dpkit.statistics.quantiles_from_counts` on the group's counts over a
    power-of-two grid of the bounds (computed in the engine; :meth:`grid`, as fine as
    :data:`QUANTILE_CELLS` allows for the public groups: each record's grid point depends
    on that record and public facts alone, so the counts are a histogram of the bounded
    rows and the mechanism's privacy proof applies to them unchanged); several levels are one
    mechanism (``method``: ApproximateQuantiles by default, JointExp, independent draws or
    one noisy histogram; see :func:`quantile`). Columns are ``<name>_<q>`` (``q`` written
    ``f"{q:g}"``), or ``name`` alone for :func:`median`. An integer-typed column (a schema
    fact, never read from the values) puts the mechanism's atoms on the integers
    (``support=1.0``), so tied values such as integer ages are released exactly.
    """

    levels: tuple[float, ...] = (0.5,)
    single: bool = False
    method: str = "auto"

    def parts(self, noise: str, prefix: str) -> list[Part]:
        return []

    def outputs(self) -> list[str]:
        if self.single:
            return [self.name]
        return [f"{self.name}_{q:g}" for q in self.levels]

    def grid(self, groups: int | None = 1) -> Lattice:
        """The engine's grid when at most ``groups`` groups reach the engine's count (a
        public bound; ``None``: not publicly bounded), :func:`quantile_bits` steps."""
        lower, upper = self.bounds
        return Lattice.for_bounds("dp.quantile", lower, upper, quantile_bits(groups))


def quantile_bits(groups: int | None) -> int:
    """The quantile grid's resolution (``2**bits`` steps over the bounds) when at most
    ``groups`` groups reach the engine's count: the largest ``bits`` with ``groups * 2**bits
    <= QUANTILE_CELLS``, within ``[QUANTILE_MIN_BITS, QUANTILE_MAX_BITS]``; ``groups=None``
    (no public bound: private keys, or keys the engine cannot filter on) gives the coarsest.

    A public function of public facts (never of the data), so every record's grid point is
    a function of that record alone, and the engine hands Python at most ``QUANTILE_CELLS +
    groups`` counts per aggregate (``2**bits + 1`` per group) whenever ``groups <=
    2**(24 - 16)``, and at most ``2**16 + 1`` per group beyond.

    >>> quantile_bits(1), quantile_bits(10), quantile_bits(1000), quantile_bits(None)
    (24, 20, 16, 16)
    """
    if groups is None:
        return QUANTILE_MIN_BITS
    bits = (QUANTILE_CELLS // max(int(groups), 1)).bit_length() - 1  # floor(log2(C / groups))
    return min(QUANTILE_MAX_BITS, max(QUANTILE_MIN_BITS, bits))


@dataclass(frozen=True, slots=True)
class Histogram(Aggregate):
    """``dp.histogram(column, bins=)``: a noisy count per (group, bin), empty bins included.

    ``bins`` is either a sorted sequence of numeric edges ``e0 < e1 < ... < eB`` (bins
    ``[e_i, e_{i+1})``, the last one closed; values outside ``[e0, eB]`` and nulls are not
    counted) or a sequence of category values (values outside it are not counted; ``None``
    among them counts the nulls).
    """

    edges: tuple[float, ...] | None = None
    categories: tuple[Any, ...] | None = None

    @property
    def reads_numbers(self) -> bool:
        return self.edges is not None

    def parts(self, noise: str, prefix: str) -> list[Part]:
        return [Part(f"{prefix}n", "count per bin", 1, Fraction(1), 1.0)]

    def check_schema(self, schema: Any) -> None:
        """Edges need a numeric column; categories values of the column's own type (str for
        a string or categorical column, bool, or the date/time type), refused here with a
        TypeError before anything is spent (an engine would fail, or on pandas silently
        count nothing)."""
        if self.edges is not None:
            _numeric("histogram", self.column or "", schema)
            return
        Aggregate.check_schema(self, schema)
        dtype = schema[self.column]
        kind = _category_kind(dtype)
        cats = [c for c in self.categories or () if c is not None]
        if kind is None or not all(_is_kind(c, kind) for c in cats):
            want = "" if kind is None else f"; categories for it must be {kind.__name__}"
            raise TypeError(
                f"dp.histogram({self.column!r}): the categories in `bins` do not fit the "
                f"column's type {dtype}{want}; got {sorted({type(c).__name__ for c in cats})} "
                "(numeric bins are edges: a sorted list of numbers)"
            )
        if isinstance(dtype, nw.Datetime):  # engines refuse to compare aware with naive
            aware = dtype.time_zone is not None
            if any((c.tzinfo is not None) != aware for c in cats):
                raise TypeError(
                    f"dp.histogram({self.column!r}): the column's datetimes are "
                    f"{'timezone-aware' if aware else 'naive'}; give categories that are too"
                )

    def bin_expr(self, schema: Any) -> nw.Expr:
        """Whether a row is counted by numeric edges: inside ``[e0, eB]``, no null, no NaN
        (its bin is the engine's :meth:`~dpkit.session.engines.Engine.with_bins`; categories
        are the engine's :meth:`~dpkit.session.engines.Engine.with_categories`)."""
        assert self.column is not None and self.edges is not None
        col = nw.col(self.column)
        e = self.edges
        x = col.cast(nw.Float64)
        inside = ~col.is_null() & (x >= e[0]) & (x <= e[-1])
        if schema[self.column].is_float():
            inside = inside & ~x.is_nan()
        return inside

    def labels(self) -> tuple[list[Any], list[Any]] | list[Any]:
        if self.edges is None:
            return list(self.categories or ())
        return list(self.edges[:-1]), list(self.edges[1:])


def _category_kind(dtype: Any) -> type | None:
    """The Python type of a category of a column of type ``dtype``, or None if categories
    cannot be used on it (numeric columns take edges; nested columns nothing)."""
    if dtype.is_numeric() or dtype.is_nested():
        return None
    if isinstance(dtype, nw.String | nw.Categorical | nw.Enum):
        return str
    if isinstance(dtype, nw.Boolean):
        return bool
    if isinstance(dtype, nw.Datetime):
        return datetime.datetime
    if isinstance(dtype, nw.Date):
        return datetime.date
    if isinstance(dtype, nw.Time):
        return datetime.time
    if isinstance(dtype, nw.Duration):
        return datetime.timedelta
    return None


def _is_kind(value: Any, kind: type) -> bool:
    """``value`` is a ``kind`` (a datetime is not taken for a date)."""
    if kind is datetime.date and isinstance(value, datetime.datetime):
        return False
    return isinstance(value, kind)


# ----------------------------------------------------------------------------- constructors


def count(column: str | None = None, *, name: str | None = None, weight: float = 1.0) -> Count:
    """A private count of rows, or of the non-null values of ``column``.

    Parameters
    ----------
    column : str, optional
        Count only rows where this column is not null (nor NaN).
    name : str, optional
        Output column (default ``"count"``, or ``"<column>_count"``).
    weight : float > 0, default 1.0
        Share of the release's budget, relative to the other aggregates.

    Returns
    -------
    Count

    Privacy
    -------
    Sensitivity ``k`` (the rows a privacy unit may keep), over all groups at once; the noise
    is discrete (geometric / discrete Gaussian), so the released count is an integer.

    Examples
    --------
    >>> count()
    Count(column=None, name='count', weight=1.0)
    """
    owner = "dp.count"
    if column is not None:
        column = _check_column(owner, column)
    default = "count" if column is None else f"{column}_count"
    return Count(column, _check_name(owner, name) or default, _check_weight(owner, weight))


def _bounded(
    owner: str,
    column: Any,
    bounds: Any,
    fill: Any,
    name: Any,
    weight: Any,
    auto: bool = False,
) -> dict:
    column = _check_column(owner, column)
    hint = ", or bounds='auto' to choose them privately with a share of the budget" if auto else ""
    if bounds is None:
        raise ParameterError(
            f"{owner}({column!r}): `bounds` is required: pass bounds=(lower, upper) chosen "
            "without looking at the data (for example (0, 100) for an age)"
            f"{hint}; bounds read from the data are not private"
        )
    if isinstance(bounds, str):
        if bounds != "auto" or not auto:
            allowed = "a (lower, upper) pair or 'auto'" if auto else "a (lower, upper) pair"
            raise TypeError(f"{owner}({column!r}): `bounds` must be {allowed}; got {bounds!r}")
        return {
            "column": column,
            "bounds": (0.0, 1.0),  # a placeholder until the release chooses them
            "fill": _check_fill(owner, fill),
            "weight": _check_weight(owner, weight),
            "name": _check_name(owner, name),
            "auto": True,
        }
    lo, hi = check_bounds(f"{owner}({column!r})", bounds)
    return {
        "column": column,
        "bounds": (lo, hi),
        "fill": _check_fill(owner, fill),
        "weight": _check_weight(owner, weight),
        "name": _check_name(owner, name),
    }


def _auto_share(
    owner: str,
    kw: dict,
    bounds_share: Any,
    bounds_method: Any = "histogram",
    lower: Any = None,
) -> dict:
    """``bounds_share`` in (0, 1), ``bounds_method`` and ``lower``, recorded only for
    ``bounds="auto"`` (``lower`` with given bounds is refused: it would be ignored)."""
    share = check_number(owner, "bounds_share", bounds_share)
    if not 0 < share < 1:
        raise ParameterError(f"{owner}: `bounds_share` must be in (0, 1); got {bounds_share!r}")
    if not isinstance(bounds_method, str) or bounds_method not in BOUNDS_METHODS:
        raise ParameterError(
            f"{owner}: `bounds_method` must be one of {BOUNDS_METHODS}; got {bounds_method!r}"
        )
    if lower is not None:
        low = check_number(owner, "lower", lower)
        if not math.isfinite(low):
            raise ParameterError(f"{owner}: `lower` must be finite; got {lower!r}")
        if not kw.get("auto"):
            raise ParameterError(f"{owner}: `lower` goes with bounds='auto' only")
        kw["lower"] = low
    if kw.get("auto"):
        kw["bounds_share"] = share
        kw["bounds_method"] = bounds_method
    return kw


def _with_lattice(agg: Any, bits: int) -> Any:
    if agg.auto:
        return agg
    lower, upper = agg.bounds
    owner = "dp.std" if agg.root else f"dp.{type(agg).__name__.lower()}"
    lat = Lattice.for_bounds(owner, lower, upper, bits)
    if isinstance(agg, Var):
        # the variance works with squares of values and of the lattice unit: both must be
        # normal floats (refused here, before any query is planned or anything spent)
        top = max(abs(lower), abs(upper))
        if not (math.isfinite(top * top) and lat.unit * lat.unit >= 2.0**-1022):
            raise ParameterError(
                f"{owner}({agg.column!r}): `bounds` ({lower!r}, {upper!r}) are out of range "
                "for a variance: squared values (or the squared lattice unit) overflow or "
                "underflow a float; rescale the data (other units) so the bounds lie within "
                "about 1e-140 to 1e150 in magnitude"
            )
    object.__setattr__(agg, "lattice", lat)
    return agg


def sum(
    column: str,
    *,
    bounds: tuple[float, float] | str | None = None,
    name: str | None = None,
    weight: float = 1.0,
    fill: float | None = None,
    bounds_share: float = AUTO_BOUNDS_SHARE,
    bounds_method: str = "histogram",
    lower: float | None = None,
) -> Sum:
    """A private sum of ``column``, each value clipped to ``bounds``.

    Parameters
    ----------
    column : str
    bounds : (lower, upper) or "auto"
        Required; public, chosen without looking at the data, or ``"auto"``: chosen
        privately at release time with ``bounds_share`` of this aggregate's budget.
    name : str, optional
        Output column (default ``"<column>_sum"``).
    weight : float > 0, default 1.0
    fill : float, optional
        Value used for nulls and NaN (then clipped); by default they are left out.
    bounds_share : float in (0, 1), default 0.5
        With ``bounds="auto"``: the share of this aggregate's budget spent on the bounds.
    bounds_method : {"histogram", "tail"}, default "histogram"
        With ``bounds="auto"``: ``"histogram"`` (below) or ``"tail"``, which clips at a
        private 99.9th percentile (and 0.1th, unless ``lower`` is given) by Durfee's
        unbounded quantile estimation: it fixes how many values are clipped (about 0.1 %)
        rather than where the bound falls. ``make bench`` compares both; for means of
        lognormal and Pareto columns the histogram is the more accurate.
    lower : float, optional
        With ``bounds="auto"``: a public lower bound (0 for amounts); only the upper bound
        is then chosen, and the whole bounds share goes to it.

    Privacy
    -------
    Add/remove sensitivity ``k * max(|lower|, |upper|)`` (on the value lattice, exactly). The
    sum is computed exactly as an integer number of lattice units, never as a float sum.

    Automatic bounds: ``bounds="auto"`` spends ``bounds_share`` of this aggregate's budget on
    choosing ``(lower, upper)`` privately, then releases the statistic with those bounds and
    the rest of its budget: :func:`dpkit.statistics.bounds_from_counts` on a signed log2
    histogram of the values counted in the engine (discrete Laplace noise of scale
    ``k / epsilon_bounds``, a unit's ``k`` rows move it by ``k`` in L1; a threshold after
    Google's ApproximateBounds), composed sequentially (Dwork and Roth 2014, Theorem 3.16).
    With ``bounds_method="tail"`` the engine counts each value's candidate index instead
    (:func:`dpkit.statistics.tail_steps`) and
    :func:`dpkit.statistics.tail_bounds_from_counts` runs AboveThreshold on those counts
    (Durfee 2023) at ``epsilon_bounds / k`` per row, which is ``epsilon_bounds``-DP per unit
    (group privacy); it reports no clipped fraction (it clips about 0.1 % by design).
    The bounds are global: one choice over all rows of the query after filtering and
    bounding, shared by every group. They are data-dependent but differentially private
    and come back, with a DP estimate of the fraction of values they clip, in
    ``QueryRelease.bounds`` and in the executed plan's text (``print(rel.plan)``). The same
    holds for :func:`mean`, :func:`var` and :func:`std`.

    Examples
    --------
    >>> sum("Age", bounds=(0, 100)).name
    'Age_sum'
    """
    kw = _bounded("dp.sum", column, bounds, fill, name, weight, auto=True)
    kw = _auto_share("dp.sum", kw, bounds_share, bounds_method, lower)
    check_moments_lower("dp.sum", kw.get("lower"))
    kw["name"] = kw["name"] or f"{kw['column']}_sum"
    return _with_lattice(Sum(**kw), _SUM_BITS)


def mean(
    column: str,
    *,
    bounds: tuple[float, float] | str | None = None,
    name: str | None = None,
    weight: float = 1.0,
    fill: float | None = None,
    bounds_share: float = AUTO_BOUNDS_SHARE,
    bounds_method: str = "histogram",
    lower: float | None = None,
) -> Mean:
    """A private mean of ``column`` clipped to ``bounds`` (see :class:`Mean` for the estimator).

    ``bounds="auto"`` chooses the bounds privately with ``bounds_share`` of the mean's budget
    (see :func:`sum`).

    Examples
    --------
    >>> mean("Age", bounds=(0, 100)).name
    'Age_mean'
    """
    kw = _bounded("dp.mean", column, bounds, fill, name, weight, auto=True)
    kw = _auto_share("dp.mean", kw, bounds_share, bounds_method, lower)
    check_moments_lower("dp.mean", kw.get("lower"))
    kw["name"] = kw["name"] or f"{kw['column']}_mean"
    return _with_lattice(Mean(**kw), _SUM_BITS)


def var(
    column: str,
    *,
    bounds: tuple[float, float] | str | None = None,
    name: str | None = None,
    weight: float = 1.0,
    fill: float | None = None,
    bounds_share: float = AUTO_BOUNDS_SHARE,
    bounds_method: str = "histogram",
    lower: float | None = None,
) -> Var:
    """A private population variance (ddof = 0) of ``column`` clipped to ``bounds``.

    ``bounds="auto"`` chooses the bounds privately with ``bounds_share`` of the budget (see
    :func:`sum`).

    Examples
    --------
    >>> var("Age", bounds=(0, 100)).name
    'Age_var'
    """
    kw = _bounded("dp.var", column, bounds, fill, name, weight, auto=True)
    kw = _auto_share("dp.var", kw, bounds_share, bounds_method, lower)
    check_moments_lower("dp.var", kw.get("lower"), variance=True)
    kw["name"] = kw["name"] or f"{kw['column']}_var"
    return _with_lattice(Var(**kw), _VAR_BITS)


def std(
    column: str,
    *,
    bounds: tuple[float, float] | str | None = None,
    name: str | None = None,
    weight: float = 1.0,
    fill: float | None = None,
    bounds_share: float = AUTO_BOUNDS_SHARE,
    bounds_method: str = "histogram",
    lower: float | None = None,
) -> Var:
    """A private population standard deviation: the square root of :func:`var`'s estimate.

    ``bounds="auto"`` chooses the bounds privately with ``bounds_share`` of the budget (see
    :func:`sum`).

    Examples
    --------
    >>> std("Age", bounds=(0, 100)).name
    'Age_std'
    """
    kw = _bounded("dp.std", column, bounds, fill, name, weight, auto=True)
    kw = _auto_share("dp.std", kw, bounds_share, bounds_method, lower)
    check_moments_lower("dp.std", kw.get("lower"), variance=True)
    kw["name"] = kw["name"] or f"{kw['column']}_std"
    return _with_lattice(Var(**kw, root=True), _VAR_BITS)


def _levels(owner: str, q: Any) -> tuple[tuple[float, ...], bool]:
    single = not isinstance(q, Sequence) or isinstance(q, str)
    raw = [q] if single else list(q)
    if not raw:
        raise ParameterError(f"{owner}: `q` must hold at least one level in (0, 1)")
    levels = tuple(check_level(owner, "q", v) for v in raw)
    if any(b <= a for a, b in itertools.pairwise(levels)):
        raise ParameterError(f"{owner}: levels `q` must be sorted and distinct; got {raw!r}")
    return levels, single


def _check_method(owner: str, method: Any) -> str:
    if not isinstance(method, str) or method not in QUANTILE_METHODS:
        raise ParameterError(f"{owner}: `method` must be one of {QUANTILE_METHODS}; got {method!r}")
    return method


def quantile(
    column: str,
    q: float | Sequence[float],
    *,
    bounds: tuple[float, float] | None = None,
    name: str | None = None,
    weight: float = 1.0,
    fill: float | None = None,
    method: str = "auto",
) -> Quantile:
    """Private quantiles of ``column`` at level(s) ``q``, all in one mechanism.

    Columns are ``<name>_<q>`` with ``q`` written ``f"{q:g}"`` (``name`` defaults to
    ``column``), each with ``_low`` / ``_high``; the released values are sorted. With
    probability at least ``1 - alpha``, jointly for all levels of a group, each ``_low`` /
    ``_high`` pair contains every rank quantile of the group's clipped values (the ``t``
    with ``#{x < t} <= q n <= #{x <= t}``: the order statistic ``x_(ceil(q n))``), which
    NumPy's default linear interpolation need not be (see
    :class:`dpkit.statistics.QuantileRelease`).

    Parameters
    ----------
    column : str
    q : float or sequence of float
        Levels in (0, 1), strictly increasing.
    bounds : (lower, upper)
        Required; public.
    name : str, optional
        Prefix of the output columns (default ``column``).
    weight : float > 0, default 1.0
    fill : float, optional
        Value used for nulls and NaN (by default they are left out).
    method : {"auto", "aq", "joint", "independent", "cdf"}
        Passed to :func:`dpkit.statistics.quantiles_from_counts`: ``"auto"`` is one draw for
        one level and, for several, ApproximateQuantiles (Kaplan, Schnapp and Stemmer 2022)
        or, on an integer-typed column with at most 4096 integers in the bounds, one noisy
        histogram (``"cdf"``); ``"joint"`` is JointExp (Gillenwater, Joseph and Kulesza 2021);
        ``"independent"`` one draw per level at ``epsilon / m``. ``"cdf"`` needs an
        integer-typed column (checked before anything is spent).

    Privacy
    -------
    Pure ``epsilon_q``-DP per group for the whole tuple of levels under add/remove of one
    record, with ``epsilon_q`` the aggregate's share divided by the rows a unit keeps (group
    privacy); groups are disjoint (parallel composition). See
    :func:`dpkit.statistics.quantiles_from_counts` for the theorems.

    Examples
    --------
    >>> quantile("Age", [0.1, 0.9], bounds=(0, 100)).outputs()
    ['Age_0.1', 'Age_0.9']
    """
    kw = _bounded("dp.quantile", column, bounds, fill, name, weight)
    kw["name"] = kw["name"] or kw["column"]
    levels, _single = _levels("dp.quantile", q)
    out = Quantile(**kw, levels=levels, method=_check_method("dp.quantile", method))
    return _with_grids("dp.quantile", out)


def _with_grids(owner: str, agg: Quantile) -> Quantile:
    """``agg`` once the bounds are known to carry both of its grids (refused here, before
    any release: the engine's grid and the mechanism's lattice, which a release builds after
    the spend)."""
    from dpkit.mechanisms.quantile_em import QuantileLattice

    agg.grid()
    QuantileLattice.for_bounds(owner, *agg.bounds)
    return agg


def median(
    column: str,
    *,
    bounds: tuple[float, float] | None = None,
    name: str | None = None,
    weight: float = 1.0,
    fill: float | None = None,
    method: str = "auto",
) -> Quantile:
    """A private median of ``column``: :func:`quantile` at 0.5, one column ``<column>_median``.

    ``method`` as for :func:`quantile` (``"auto"``: one exponential-mechanism draw).

    Examples
    --------
    >>> median("Age", bounds=(0, 100)).outputs()
    ['Age_median']
    """
    kw = _bounded("dp.median", column, bounds, fill, name, weight)
    kw["name"] = kw["name"] or f"{kw['column']}_median"
    out = Quantile(**kw, levels=(0.5,), single=True, method=_check_method("dp.median", method))
    return _with_grids("dp.median", out)


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def histogram(
    column: str,
    *,
    bins: Sequence[Any] | None = None,
    name: str | None = None,
    weight: float = 1.0,
) -> Histogram:
    """A private histogram of ``column``: one noisy count per (group, bin).

    Parameters
    ----------
    column : str
    bins : sequence
        Public bins, required: numeric edges (sorted, finite, at least two) or category
        values (at least one, distinct) of the column's type: ``str`` for a string or
        categorical column, ``bool``, or ``datetime`` values for a temporal one (checked
        against the schema before anything is spent); ``None`` among them counts the
        nulls. Never derived from the data.
    name : str, optional
        Output column for the counts (default ``"<column>_count"``).
    weight : float > 0, default 1.0

    Returns
    -------
    Histogram
        Released in long form: the group keys, the bin (``<column>`` for categories, or
        ``<column>_from`` / ``<column>_to`` for edges), then the count and its interval.

    Examples
    --------
    >>> histogram("Age", bins=[0, 30, 60, 100]).edges
    (0.0, 30.0, 60.0, 100.0)
    """
    owner = "dp.histogram"
    column = _check_column(owner, column)
    if bins is None or isinstance(bins, str) or not isinstance(bins, Sequence) or not bins:
        raise ParameterError(
            f"{owner}({column!r}): `bins` is required: a list of numeric edges or of "
            f"categories, chosen without looking at the data; got {bins!r}"
        )
    out_name = _check_name(owner, name) or f"{column}_count"
    w = _check_weight(owner, weight)
    numeric = all(
        isinstance(b, int | float | np.integer | np.floating) and not isinstance(b, bool)
        for b in bins
    )
    if numeric:
        edges = tuple(check_number(owner, "bins", b) for b in bins)
        if len(edges) < 2 or any(b <= a for a, b in itertools.pairwise(edges)):
            raise ParameterError(
                f"{owner}({column!r}): numeric `bins` are edges: at least two, strictly "
                f"increasing; got {list(bins)!r}"
            )
        if not all(math.isfinite(e) for e in edges):  # pragma: no cover - check_number
            raise ParameterError(f"{owner}: `bins` must be finite")
        return Histogram(column, out_name, w, edges=edges)
    cats = tuple(bins)
    for i, c in enumerate(cats):  # a category is one value: not a list, array or mapping
        if isinstance(c, list | tuple | set | frozenset | dict | np.ndarray) or not _hashable(c):
            raise TypeError(
                f"{owner}({column!r}): `bins` must be numeric edges or category values "
                f"(strings, numbers, dates); got {type(c).__name__} {describe(c)} at position {i}"
            )
    if len(set(cats)) != len(cats):
        raise ParameterError(f"{owner}({column!r}): categories in `bins` must be distinct")
    return Histogram(column, out_name, w, categories=cats)
