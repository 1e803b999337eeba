"""The aggregate kinds: what each asks the engine, its noisy parts, its estimate.

:class:`Aggregate` declares the protocol a release calls on any aggregate (the plan's parts,
the engine's per-group figures, the exact statistics, the released columns, the bounding
facts); :class:`Count`, :class:`Sum`, :class:`Mean`, :class:`Var`, :class:`Quantile` and
:class:`Histogram` implement it. The analyst makes them with the constructors of
:mod:`dpkit.session.aggregates` (``dp.count()``, ``dp.mean(...)``), which validate the
arguments; the sensitivities are tabulated there.
"""

from __future__ import annotations

import dataclasses
import datetime
import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import narwhals as nw
import numpy as np

from dpkit._validate import check_number, check_positive
from dpkit.errors import ParameterError
from dpkit.session._lattice import Lattice
from dpkit.session._specs import CleanColumns, CountOf, Rows, Summed
from dpkit.statistics.bounds import representable

__all__ = [
    "AUTO_BOUNDS_SHARE",
    "QUANTILE_CELLS",
    "QUANTILE_MAX_BITS",
    "QUANTILE_MIN_BITS",
    "SUM_BITS",
    "VAR_BITS",
    "Aggregate",
    "Count",
    "Histogram",
    "Mean",
    "Part",
    "Quantile",
    "Sum",
    "Var",
    "check_column",
    "check_fill",
    "check_name",
    "check_weight",
    "quantile_bits",
    "with_lattice",
]

#: lattice resolution (in bits over the bounds' width) for sums and means, and for moments
SUM_BITS = 20
VAR_BITS = 10
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


def check_weight(owner: str, weight: Any) -> float:
    return check_positive(owner, "weight", weight)


def check_name(owner: str, name: Any) -> str | None:
    if name is None:
        return None
    if not isinstance(name, str) or not name:
        raise TypeError(f"{owner}: `name` must be a non-empty str; got {name!r}")
    return name


def check_column(owner: str, column: Any) -> str:
    if not isinstance(column, str) or not column:
        raise TypeError(f"{owner}: `column` must be a column name (str); got {column!r}")
    return column


def check_fill(owner: str, fill: Any) -> float | None:
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

    def columns(self, schema: Any, prefix: str, clean: CleanColumns) -> dict[str, Any]:
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

    def columns(self, schema: Any, prefix: str, clean: CleanColumns) -> dict[str, Any]:
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
        return with_lattice(out, VAR_BITS if var else SUM_BITS)

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

    def columns(self, schema: Any, prefix: str, clean: CleanColumns) -> dict[str, Any]:
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

    def columns(self, schema: Any, prefix: str, clean: CleanColumns) -> dict[str, Any]:
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

    def columns(self, schema: Any, prefix: str, clean: CleanColumns) -> dict[str, Any]:
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


def with_lattice(agg: Any, bits: int) -> Any:
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
