"""Private clipping bounds: a log-scale histogram with a threshold, or a private tail quantile.

``method="histogram"`` follows Google's ApproximateBounds (differential-privacy library,
``cc/algorithms/approx-bounds.h``): every record falls in one bucket of a signed log2
histogram, bucket counts get noise, and the bounds are the outer edges of the outermost
buckets whose noisy counts pass a threshold set so that an empty bucket passes with
probability at most ``beta``. The same noisy counts give a DP estimate of the fraction of
records outside the bounds, for free.

When no bucket passes (few records for the noise: 30 records at epsilon 0.3 cannot beat a
threshold of about 70), the bounds are never read from the noise: lowering the threshold
until something passes would let noise-only buckets pick them (anywhere in the float range).
The release falls back to public bounds instead, fixed before any data is seen: the
caller's ``fallback``, else :func:`default_fallback` (``(-1, 1)``, or
``(lower, lower + max(|lower|, 1))`` with a public ``lower``), and says so
(``BoundsRelease.fallback``). Whether a bucket passed is a function of the noisy counts
alone, so the fallback is post-processing: no refusal, no extra cost.

``method="tail"`` clips at a private ``tail``-quantile (say 0.999) of the upper side (and
``1 - tail`` of the lower side unless ``lower`` is given) by Durfee's unbounded quantile
estimation (NeurIPS 2023): AboveThreshold over the geometric candidates
``c_i = l + beta**i - 1``, no bounds needed. For heavy tails, where a fixed-mass rule clips
too much and the histogram's threshold too little. It reports no clipped fraction (it clips
about ``1 - tail`` by design), and on small data its answer is mostly noise: its query noise
has scale ``4 D / epsilon`` (``D = 999`` at ``tail = 0.999``), against counts that move by
``D`` per record.

Buckets (:func:`log2_buckets`): 0 holds 0; ``+(e + 1075)`` holds positive ``x`` with
``2**(e - 1) <= x < 2**e`` (``e`` the exponent of :func:`math.frexp`, ``-1073 <= e <= 1024``)
and ``-(e + 1075)`` the negative values of that magnitude. Engines reproduce them from
``floor(log2(|x|)) + 1``; an off-by-one at an exact power of two only moves that record to the
neighbouring bucket (the map stays per record, so privacy is unaffected).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from types import MappingProxyType
from typing import Any

import numpy as np

from dpkit._validate import (
    check_bounds,
    check_choice,
    check_finite_array,
    check_number,
    check_positive,
)
from dpkit.accounting.events import Event
from dpkit.accounting.guard import approx_event, laplace_event, spend
from dpkit.accounting.loss import PureDP
from dpkit.errors import ParameterError
from dpkit.noise import DiscreteLaplaceLaw, laplace_law
from dpkit.noise.laws import laplace_tail_index
from dpkit.samplers import MAX_NOISE_SCALE, as_source
from dpkit.statistics._input import (
    as_rational_level,
    check_count_array,
    check_level,
    check_total,
    record_array,
)

__all__ = [
    "BoundsRelease",
    "bounds_events",
    "bounds_from_counts",
    "bounds_noise_scale",
    "bucket_edges",
    "check_bounds_noise",
    "default_fallback",
    "log2_buckets",
    "private_bounds",
    "tail_bounds_from_counts",
    "tail_steps",
    "threshold_noise_scale",
]

_OFFSET = 1075  # frexp exponents run from -1073 (subnormals) to 1024
_TOP = 1024 + _OFFSET  # largest bucket index: 2099
_NEAR = 32  # octaves around the passing buckets counted for the clipped fraction
METHODS = ("histogram", "tail")


def log2_buckets(x: Any) -> np.ndarray:
    """The signed log2 bucket of each value (int64; module docstring).

    Examples
    --------
    >>> log2_buckets([0.0, 1.0, 3.0, -0.75]).tolist()
    [0, 1076, 1077, -1075]

    Raises TypeError for non-numbers (bool, None, strings, time deltas) and ParameterError
    for NaN or infinities: no bucket holds them.
    """
    arr = check_finite_array("log2_buckets", "x", x, allow_empty=True)
    _m, e = np.frexp(arr)
    out = e.astype(np.int64) + _OFFSET
    out = np.where(arr > 0, out, np.where(arr < 0, -out, 0))
    return out.astype(np.int64)


def bucket_edges(buckets: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(low, high)``: every value of bucket ``b`` lies in ``[low, high]``.

    Examples
    --------
    >>> [a.tolist() for a in bucket_edges([0, 1076, -1075])]
    [[0.0, 1.0, -1.0], [0.0, 2.0, -0.5]]

    Raises TypeError for non-integers (floats, NaN, bool, time deltas) and ParameterError
    for ids outside ``[-2099, 2099]`` (no such bucket).
    """
    if isinstance(buckets, str | bytes | np.ma.MaskedArray):
        raise TypeError("bucket_edges: `buckets` must be an array of integers")
    b = _bucket_ids("bucket_edges", "buckets", np.asarray(buckets), -_TOP, _TOP)
    e = np.abs(b) - _OFFSET
    top = np.finfo(np.float64).max  # the last bucket [2**1023, max]: 2**1024 overflows
    high = np.where(b == 0, 0.0, np.where(e >= 1024, top, np.ldexp(1.0, np.minimum(e, 1023))))
    low = np.where(b == 0, 0.0, np.ldexp(1.0, e - 1))
    return np.where(b < 0, -high, low), np.where(b < 0, -low, high)


@dataclass(frozen=True, slots=True)
class BoundsRelease:
    """Privately chosen clipping bounds.

    Attributes
    ----------
    bounds : (float, float)
        ``(lower, upper)``, a DP output: use it as public bounds for a later release.
    clipped_fraction : float or None
        A DP estimate (from the same noisy histogram) of the fraction of records outside
        ``bounds`` (counting the buckets within ``2**32`` of the bounds' magnitudes);
        ``None`` for ``method="tail"`` (which clips about ``1 - tail`` by design).
    method : str
        ``"histogram"`` or ``"tail"``.
    privacy : PureDP
        The cost.
    relation : str
        ``"unbounded"`` (add/remove one record).
    details : Mapping
        Public figures (the threshold, how many buckets passed it, the noisy total).
    fallback : bool
        ``True`` when no bucket's noisy count passed the threshold, so ``bounds`` are the
        stated public fallback (module docstring), not read from the data; always ``False``
        for ``method="tail"``.
    """

    bounds: tuple[float, float]
    clipped_fraction: float | None
    method: str
    privacy: PureDP
    relation: str = "unbounded"
    details: Mapping[str, Any] = field(default_factory=dict)
    fallback: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "details", MappingProxyType(dict(self.details)))


#: Privately chosen bounds are kept within +-BOUNDS_CAP (2**500 for a variance, whose squares
#: must stay finite) and at least MIN_WIDTH (2**-480 for a variance) or 2**-30 of their
#: magnitude apart, so that the statistic's lattice exists: :func:`representable`.
BOUNDS_CAP, MIN_WIDTH = 2.0**1020, 2.0**-960
VAR_CAP, VAR_MIN_WIDTH = 2.0**500, 2.0**-480


def _bucket_ids(owner: str, name: str, arr: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Integer ids in ``[lo, hi]`` as int64 (TypeError for other dtypes: floats, bool, time
    deltas, which NumPy files under the integers; ParameterError out of range)."""
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{owner}: `{name}` must hold integers; got dtype {arr.dtype}")
    if arr.size and (arr.min() < lo or arr.max() > hi):
        raise ParameterError(f"{owner}: {name} must lie in [{lo}, {hi}]")
    return arr.astype(np.int64)


def representable(
    bounds: tuple[float, float], variance: bool = False, zero: bool = False
) -> tuple[float, float]:
    """Chosen bounds clamped into the range where a mean's (or a variance's) lattice exists,
    and widened to at least ``max(min width, 2**-30 * magnitude)``; with ``zero``, first
    stretched to contain 0 (a sum: its sensitivity ``max(|lower|, |upper|)`` is unchanged,
    and its noise scale in lattice units stays within the range checked before the spend).
    A public rule applied to a DP output (post-processing), so a release never fails after
    its spend."""
    cap, min_width = (VAR_CAP, VAR_MIN_WIDTH) if variance else (BOUNDS_CAP, MIN_WIDTH)
    lo, hi = float(bounds[0]), float(bounds[1])
    if zero:
        lo, hi = min(lo, 0.0), max(hi, 0.0)
    lo = min(max(lo, -cap), cap)
    hi = min(max(hi, -cap), cap)
    width = max(min_width, max(abs(lo), abs(hi)) * 2.0**-30)
    if hi - lo < width:
        if lo + width <= cap:
            hi = lo + width
        else:
            lo = hi - width
    return float(lo), float(hi)


def check_variance_lower(owner: str, lower: Any) -> None:
    """A variance's public ``lower`` within ``+-VAR_CAP`` (checked before any spend)."""
    if lower is not None and abs(float(lower)) > VAR_CAP:
        raise ParameterError(
            f"{owner}: `lower` {lower!r} is out of range for a variance (squares overflow); "
            "rescale the data so that it lies within about 1e150 in magnitude"
        )


def _check_lower(owner: str, lower: Any) -> float | None:
    """A public lower bound: finite, and below the largest double (bounds need an upper
    bound above it)."""
    if lower is None:
        return None
    low = check_number(owner, "lower", lower)
    if low >= sys.float_info.max:
        raise ParameterError(
            f"{owner}: `lower` must be below the largest float so that a finite upper bound "
            f"above it exists; got {lower!r}"
        )
    return low


def check_moments_lower(owner: str, lower: Any, variance: bool = False) -> None:
    """A mean's, sum's (or, with ``variance``, a variance's) public ``lower`` for
    ``bounds="auto"``, checked before any spend: finite, within ``+-VAR_CAP`` for a
    variance (:func:`check_variance_lower`), and at most ``(1 - 2**-30)`` times the cap of
    :func:`representable`, so that the chosen bounds, kept within the cap, still start at
    ``lower`` (above it, they would be moved below it: the statistic would fall below the
    public lower bound it was given)."""
    if lower is None:
        return
    low = check_number(owner, "lower", lower)
    if variance:
        check_variance_lower(owner, low)
    cap = VAR_CAP if variance else BOUNDS_CAP
    if low > cap * (1 - 2.0**-30):
        raise ParameterError(
            f"{owner}: `lower` {lower!r} is out of range: chosen bounds must lie within "
            f"2**{500 if variance else 1020} (about {cap:.1e}) and start at `lower`; "
            "rescale the data"
        )


def default_fallback(lower: float | None = None) -> tuple[float, float]:
    """The public bounds used when no bucket passes: ``(-1.0, 1.0)``, or with a public
    ``lower``, ``(lower, lower + max(|lower|, 1))`` (kept below the largest double)."""
    if lower is None:
        return (-1.0, 1.0)
    return (lower, min(lower + max(abs(lower), 1.0), sys.float_info.max))


def _check_fallback(owner: str, fallback: Any, lower: float | None) -> tuple[float, float]:
    """The caller's fallback bounds (finite, ``lower < upper``, starting at ``lower`` when a
    public ``lower`` is given), or :func:`default_fallback`."""
    if fallback is None:
        return default_fallback(lower)
    lo, hi = check_bounds(owner, fallback, name="fallback")
    if lower is not None and lo != lower:
        raise ParameterError(
            f"{owner}: `fallback` must start at the public `lower` {lower!r}; got {fallback!r}"
        )
    return lo, hi


def _threshold(scale: Fraction, buckets: int, beta: float) -> int:
    """Smallest integer ``T >= 1`` with ``buckets * P[Z >= T] <= beta`` for ``Z`` discrete
    Laplace of ``scale``.

    The tail index of the law at ``beta / buckets`` (:func:`dpkit.noise.laws.
    laplace_tail_index`), given as ``log(beta) - log(buckets)``: finite for every scale and
    every ``beta`` down to the smallest double (``beta / buckets`` would underflow).
    """
    return laplace_tail_index(scale, math.log(beta) - math.log(buckets))


def bounds_noise_scale(
    epsilon: Fraction, method: str = "histogram", lower: float | None = None, tail: float = 0.999
) -> Fraction | None:
    """The largest discrete Laplace scale of the bounds stage at ``epsilon`` (``None`` for
    epsilon 0), from public figures only: ``1 / epsilon`` for the histogram; AboveThreshold's
    query noise ``4 D / epsilon``, per searched side, for the tail."""
    if method == "histogram":
        return 1 / epsilon if epsilon > 0 else None
    side = epsilon if lower is not None else epsilon / 2
    return threshold_noise_scale(tail, side) if side > 0 else None


def bounds_events(epsilon: float | Fraction, method: str = "histogram") -> list[Event]:
    """What the bounds stage at ``epsilon`` is, for accounting (``[]`` for epsilon 0).

    The histogram: every bucket gets discrete Laplace noise of scale ``1 / epsilon`` (as
    :func:`_from_histogram` draws it, ``epsilon`` taken exactly) and one record moves one
    bucket by one, a Laplace event of sensitivity 1 step. The tail method is AboveThreshold,
    pure ``epsilon``-DP but not one Laplace release of a known scale: ``Approx(epsilon)``.
    """
    eps = Fraction(epsilon)
    if eps == 0:
        return []
    if method == "histogram":
        return [laplace_event(1 / eps, 1)]
    return [approx_event(eps)]  # AboveThreshold (sparse vector): only its pure epsilon


def check_bounds_noise(
    owner: str,
    epsilon: float | Fraction,
    method: str = "histogram",
    lower: float | None = None,
    tail: float = 0.999,
) -> None:
    """The bounds stage's discrete Laplace noise at ``epsilon`` is within the exact sampler's
    range (scale ``<= 2**50``, :func:`bounds_noise_scale`): a ParameterError naming epsilon
    otherwise, so callers check it before anything is spent."""
    eps = Fraction(epsilon)
    scale = bounds_noise_scale(eps, method, lower, tail)
    if scale is None or scale > MAX_NOISE_SCALE:
        raise ParameterError(
            f"{owner}: `epsilon` {float(eps):.3g} is too small for the {method} bounds: "
            "their discrete Laplace noise would exceed 2**50, the exact sampler's range; "
            "raise epsilon (or the share spent on the bounds)"
        )


def _from_histogram(
    owner: str,
    buckets: np.ndarray,
    counts: np.ndarray,
    eps: float,
    lower: float | None,
    beta: float,
    source: Any,
    fallback: tuple[float, float] | None = None,
) -> BoundsRelease:
    """Noise every bucket from ``-_TOP`` to ``_TOP`` (public), threshold, read the bounds,
    or take the public ``fallback`` (default :func:`default_fallback`) when none passes."""
    full = np.zeros(2 * _TOP + 1, dtype=np.int64)
    np.add.at(full, buckets + _TOP, counts)
    noise = laplace_law(1, Fraction(eps))  # one record moves one bucket by one
    scale = noise.scale
    noisy = full + noise.draw(full.size, source)
    t = _threshold(scale, full.size, beta)
    passing = np.flatnonzero(noisy >= t)
    fell_back = passing.size == 0
    if fell_back:  # nothing passed: public bounds, never a noise-only bucket
        lo_v, hi_v = fallback if fallback is not None else default_fallback(lower)
        # the clipped fraction's window is centred on the fallback's magnitudes
        anchors = log2_buckets([v for v in (lo_v, hi_v) if v != 0.0] or [1.0])
    else:
        lo_b, hi_b = int(passing.min()) - _TOP, int(passing.max()) - _TOP
        low_edge, _ = bucket_edges([lo_b])
        _, high_edge = bucket_edges([hi_b])
        lo_v, hi_v = float(low_edge[0]), float(high_edge[0])
        if lower is not None:
            lo_v = lower
            hi_v = max(hi_v, lower)
        anchors = passing - _TOP
    if lo_v == hi_v:  # a single point (all zeros, say): widen to a usable interval, finite
        # (a public `lower` is below the largest double, so the upper bound stays above it)
        hi_v = min(lo_v + (abs(lo_v) or 1.0), sys.float_info.max)
    # the DP clipped fraction: noisy counts of the buckets wholly outside [lo_v, hi_v] over
    # those of all buckets, both restricted to magnitudes within 2**_NEAR of the passing
    # buckets' (a public window: far buckets hold noise only, and summing thousands of them
    # would swamp the estimate)
    ids = np.arange(-_TOP, _TOP + 1)
    lows, highs = bucket_edges(ids)
    mags = np.abs(ids) - _OFFSET
    pass_mags = np.abs(anchors) - _OFFSET
    near = (mags >= pass_mags.min() - _NEAR) & (mags <= pass_mags.max() + _NEAR) | (ids == 0)
    # a bucket is outside when all its values are beyond a bound (but for a value equal to
    # the bound itself: the buckets' edges are closed, so [64, 128] beyond an upper bound of
    # 64 counts, the exact-zero bucket below a lower bound of 0 does not)
    outside = near & (((lows >= hi_v) & (highs > hi_v)) | ((highs <= lo_v) & (lows < lo_v)))
    total = float(noisy[near].sum())
    clipped = min(max(float(noisy[outside].sum()) / total, 0.0), 1.0) if total >= 1 else 0.0
    return BoundsRelease(
        bounds=(lo_v, hi_v),
        clipped_fraction=clipped,
        method="histogram",
        privacy=PureDP(eps),
        details={
            "threshold": t,
            "passing_buckets": int(passing.size),
            "noisy_total": int(noisy.sum()),
        },
        fallback=fell_back,
    )


def bounds_from_counts(
    buckets: Any,
    counts: Any,
    *,
    epsilon: float,
    lower: float | None = None,
    beta: float = 1e-6,
    rng: Any = None,
    accountant: Any = None,
    fallback: tuple[float, float] | None = None,
) -> BoundsRelease:
    """Private bounds from engine-side counts of :func:`log2_buckets` (histogram method).

    Parameters
    ----------
    buckets : array_like of int
        Bucket ids (``log2_buckets``), each at most once.
    counts : array_like of int
        Records per bucket, ``>= 0``.
    epsilon : float
        Cost, finite and > 0.
    lower : float, optional
        A public lower bound (for example 0 for amounts); the search then only sets the
        upper bound.
    beta : float
        Probability that noise alone lifts an empty bucket over the threshold, in (0, 1).
    rng, accountant
        As everywhere (the accountant is charged before any noise).
    fallback : (float, float), optional
        Public bounds to use when no bucket passes the threshold (starting at ``lower``
        when that is given); default :func:`default_fallback`. The release then says so
        (``fallback=True``).

    Returns
    -------
    BoundsRelease

    Raises
    ------
    TypeError, ParameterError
        Bad buckets, counts, epsilon (too small: :func:`check_bounds_noise`), lower, beta,
        fallback or rng; all before the accountant is charged.

    Privacy
    -------
    Pure ``epsilon``-DP under add/remove of one record: one record changes one bucket count
    by one, and every bucket in the fixed public range gets discrete Laplace noise of scale
    ``1 / epsilon`` (Ghosh, Roughgarden and Sundararajan 2009); the rest is post-processing.

    Examples
    --------
    >>> b = log2_buckets(np.arange(1.0, 1001.0))
    >>> ids, cnt = np.unique(b, return_counts=True)
    >>> bounds_from_counts(ids, cnt, epsilon=1.0, lower=0.0, rng=1).bounds
    (0.0, 1024.0)
    """
    owner = "bounds_from_counts"
    eps = check_positive(owner, "epsilon", epsilon)
    b, c = _keyed_counts(owner, "bucket", buckets, counts, -_TOP, _TOP)
    beta_v = _check_beta(owner, beta)
    low = _check_lower(owner, lower)
    fall = _check_fallback(owner, fallback, low)
    check_bounds_noise(owner, eps)
    source = as_source(rng)
    spend(accountant, PureDP(eps), owner, events=bounds_events(eps))
    return _from_histogram(owner, b, c, eps, low, beta_v, source, fall)


def _keyed_counts(
    owner: str, name: str, keys: Any, counts: Any, lo: int, hi: int
) -> tuple[np.ndarray, np.ndarray]:
    """Engine-side counts per key, checked: integer keys in ``[lo, hi]``, each once, with
    integer counts ``>= 0`` of the same 1-d shape; returned as int64 arrays."""
    k = _bucket_ids(owner, f"{name}s", np.asarray(keys), lo, hi)
    # counts are private: refused (never quoted) when not integers, negative, beyond int64
    # or with a total of 2**40 or more (the noisy sums in int64 would wrap)
    c = check_count_array(owner, "counts", np.asarray(counts), whole_floats=False)
    if k.shape != c.shape or k.ndim != 1:
        raise ParameterError(f"{owner}: `{name}s` and `counts` must be 1-d of one shape")
    check_total(owner, c)
    if k.size != np.unique(k).size:
        raise ParameterError(f"{owner}: every {name} must appear once")
    return k, c


def _check_beta(owner: str, beta: Any) -> float:
    v = check_positive(owner, "beta", beta)
    if not v < 1:
        raise ParameterError(f"{owner}: `beta` must be in (0, 1); got {beta!r}")
    return v


def private_bounds(
    data: Any,
    *,
    epsilon: float,
    method: str = "histogram",
    lower: float | None = None,
    tail: float = 0.999,
    beta: float = 1e-6,
    rng: Any = None,
    accountant: Any = None,
    fallback: tuple[float, float] | None = None,
) -> BoundsRelease:
    """Choose clipping bounds privately (see the module docstring).

    Parameters
    ----------
    data : array_like
        Finite real values, one per record; no bounds needed.
    epsilon : float
        Cost, finite and > 0.
    method : {"histogram", "tail"}
        ApproximateBounds-style histogram and threshold (default; reports a DP clipped
        fraction) or a private ``tail``-quantile by AboveThreshold (Durfee 2023).
    lower : float, optional
        A public lower bound (0 for amounts): only the upper bound is searched, and with
        ``"tail"`` the whole budget goes to it.
    tail : float
        The upper quantile for ``"tail"``, in (0.5, 1); the lower side uses ``1 - tail``.
    beta : float
        For ``"histogram"``: probability that noise lifts an empty bucket over the threshold.
    rng, accountant
        As everywhere (the accountant is charged before any noise).
    fallback : (float, float), optional
        For ``"histogram"``: public bounds used when no bucket passes the threshold (as in
        :func:`bounds_from_counts`); default :func:`default_fallback`.

    Returns
    -------
    BoundsRelease
        ``fallback=True`` when no bucket passed and the bounds are the public fallback.

    Raises
    ------
    TypeError, ParameterError
        Bad data (empty, NaN, infinite, bool, masked), bad method, tail, beta, fallback,
        rng or epsilon; an epsilon so small that the noise would exceed the exact sampler's range
        (:func:`check_bounds_noise`). All before the accountant is charged.

    Privacy
    -------
    Pure ``epsilon``-DP under add/remove of one record: the histogram method as in
    :func:`bounds_from_counts`; the tail method is AboveThreshold (Dwork and Roth 2014,
    Theorem 3.23, with Lyu, Su and Li 2017's noise scales) on counting queries of
    sensitivity ``max(q, 1 - q)``, run once per searched side with half the budget each.

    Examples
    --------
    >>> x = np.arange(1.0, 1001.0)
    >>> rel = private_bounds(x, epsilon=1.0, lower=0.0, rng=1)
    >>> rel.bounds, round(rel.clipped_fraction, 3)  # none clipped; the estimate is noisy
    ((0.0, 1024.0), 0.012)
    """
    owner = "private_bounds"
    arr = check_finite_array(owner, "data", record_array(owner, data))
    eps = check_positive(owner, "epsilon", epsilon)
    method = check_choice(owner, "method", method, METHODS)
    low = _check_lower(owner, lower)
    beta_v = _check_beta(owner, beta)
    tail_v = _check_tail(owner, tail)
    fall = _check_fallback(owner, fallback, low)
    check_bounds_noise(owner, eps, method, low, tail_v)
    source = as_source(rng)
    spend(accountant, PureDP(eps), owner, events=bounds_events(eps, method))
    if method == "histogram":
        ids, cnt = np.unique(log2_buckets(arr), return_counts=True)
        return _from_histogram(owner, ids, cnt.astype(np.int64), eps, low, beta_v, source, fall)
    return _tail_bounds(arr, eps, low, tail_v, source)


# ----------------------------------------------------------------------------- tail (UQE)

#: Candidates grow by this factor: c_i = l + BASE**i - 1 (0.1 % resolution).
BASE = 1.001
MAX_STEPS = int(math.log(1e308) / math.log(BASE)) + 2


def above_threshold_scales(sensitivity: int, eps: Fraction) -> tuple[Fraction, Fraction]:
    """Discrete Laplace scales of AboveThreshold: threshold ``D / (eps/2)``, queries
    ``2 D / (eps/2)`` (Lyu, Su and Li 2017, Algorithm 1, ``eps_1 = eps_2 = eps / 2``)."""
    half = eps / 2
    return laplace_law(sensitivity, half).scale, laplace_law(2 * sensitivity, half).scale


def threshold_noise_scale(level: float, eps: Fraction) -> Fraction:
    """The query noise scale of AboveThreshold at ``eps`` for a quantile ``level = P / Q``
    (the larger of its two scales): sensitivity ``D = max(P, Q - P)`` per record, as in
    :func:`above_threshold_steps`. From public figures only, for checks before the spend."""
    q = as_rational_level(level)
    return above_threshold_scales(max(q.numerator, q.denominator - q.numerator), eps)[1]


def tail_steps(data: Any, lower: float | None = None) -> np.ndarray:
    """Per-record candidate indices of the tail method (the map engines reproduce).

    With a public ``lower``: ``ceil(log(max(x - lower + 1, 1)) / log(BASE))``, the index of
    the first candidate ``c_i = lower + BASE**i - 1`` at or above ``x``. Without: the same
    map from 0 applied to ``|x|``, signed like ``x``, so that one array serves both searched
    sides (the upper side counts ``max(s, 0)``, the lower side ``max(-s, 0)``). Clipped to
    ``[0, MAX_STEPS]`` in magnitude (the argument of the log is kept finite first). An engine
    whose log rounds differently at a candidate moves that record to the neighbouring index:
    still a function of the record alone, so privacy is unaffected.
    """
    x = check_finite_array("tail_steps", "data", data, allow_empty=True)
    low = None if lower is None else check_number("tail_steps", "lower", lower)
    with np.errstate(over="ignore"):  # an overflowed shift counts as the top (clipped below)
        if low is None:
            return np.sign(x).astype(np.int64) * _steps(np.abs(x) + 1.0)
        return _steps(x - low + 1.0)


def _steps(shifted: np.ndarray) -> np.ndarray:
    arg = np.clip(shifted, 1.0, sys.float_info.max)
    idx = np.ceil(np.log(arg) / math.log(BASE))
    return np.clip(idx, 0, MAX_STEPS).astype(np.int64)


def above_threshold_steps(
    steps: np.ndarray, counts: np.ndarray, q: Fraction, eps: Fraction, source: Any
) -> int:
    """The first candidate index ``i`` whose noisy count of records with step ``<= i``
    passes ``q n`` (records given as distinct ``steps >= 0`` with their ``counts``).

    AboveThreshold with integer queries ``F_i = Q #{step <= i} - P n`` (``q = P / Q``), of
    sensitivity ``D = max(P, Q - P)``, threshold 0: threshold noise discrete Laplace of scale
    ``D / (eps / 2)``, query noise of scale ``2 D / (eps / 2)``.
    """
    big_p, big_q = q.numerator, q.denominator
    d = max(big_p, big_q - big_p)
    rho_scale, nu_scale = above_threshold_scales(d, eps)
    hist = np.zeros(int(steps.max()) + 1 if steps.size else 1, dtype=np.int64)
    np.add.at(hist, steps, counts)
    below = np.cumsum(hist)  # below[i] = #{records : step <= i}
    n = int(below[-1])
    rho = int(DiscreteLaplaceLaw(rho_scale).draw(1, source)[0])
    query_noise = DiscreteLaplaceLaw(nu_scale)
    i = 0
    block = 4096
    while i <= MAX_STEPS:
        j = min(i + block, MAX_STEPS + 1)
        part = below[i:j]
        if part.size < j - i:  # past the largest record every count is n
            part = np.concatenate((part, np.full(j - i - part.size, n)))
        f = big_q * part - big_p * n
        nu = query_noise.draw(j - i, source)
        hit = np.flatnonzero(f + nu >= rho)
        if hit.size:
            return i + int(hit[0])
        i = j
        block *= 2
    return MAX_STEPS


def tail_bounds_from_counts(
    steps: Any,
    counts: Any,
    *,
    epsilon: float,
    lower: float | None = None,
    tail: float = 0.999,
    rng: Any = None,
    accountant: Any = None,
) -> BoundsRelease:
    """Private bounds from engine-side counts of :func:`tail_steps` (tail method).

    Parameters
    ----------
    steps : array_like of int
        Candidate indices (:func:`tail_steps` with the same ``lower``), each at most once;
        signed when ``lower`` is None, in ``[0, MAX_STEPS]`` otherwise.
    counts : array_like of int
        Records per index, ``>= 0``.
    epsilon : float
        Cost, finite and > 0.
    lower : float, optional
        The public lower bound the steps were computed from; None searches both sides.
    tail : float
        The upper quantile, in (0.5, 1); the lower side uses ``1 - tail``.
    rng, accountant
        As everywhere (the accountant is charged before any noise).

    Returns
    -------
    BoundsRelease
        ``clipped_fraction`` is None: the tail method clips about ``1 - tail`` by design.

    Raises
    ------
    TypeError, ParameterError
        Bad steps, counts, epsilon (too small: :func:`check_bounds_noise`), lower, tail or
        rng; all before the accountant is charged.

    Privacy
    -------
    Pure ``epsilon``-DP under add/remove of one record, as :func:`private_bounds` with
    ``method="tail"``: one record is one count of one index.

    Examples
    --------
    >>> x = np.arange(1.0, 1001.0)
    >>> s, c = np.unique(tail_steps(x, lower=0.0), return_counts=True)
    >>> lo, hi = tail_bounds_from_counts(s, c, epsilon=1.0, lower=0.0, rng=1).bounds
    >>> lo, 950 < hi < 1010  # the 99.9th percentile is 999
    (0.0, True)
    """
    owner = "tail_bounds_from_counts"
    eps = check_positive(owner, "epsilon", epsilon)
    low = _check_lower(owner, lower)
    floor = 0 if low is not None else -MAX_STEPS
    k, c = _keyed_counts(owner, "step", steps, counts, floor, MAX_STEPS)
    tail_v = _check_tail(owner, tail)
    check_bounds_noise(owner, eps, "tail", low, tail_v)
    source = as_source(rng)
    spend(accountant, PureDP(eps), owner, events=bounds_events(eps, "tail"))
    return _tail_from_steps(k, c, eps, low, tail_v, source)


def _check_tail(owner: str, tail: Any) -> float:
    return check_level(owner, "tail", tail, low=0.5)


def _tail_from_steps(
    steps: np.ndarray,
    counts: np.ndarray,
    eps: float,
    lower: float | None,
    tail: float,
    source: Any,
) -> BoundsRelease:
    total = Fraction(eps)
    q = as_rational_level(tail)
    if lower is not None:
        k = above_threshold_steps(steps, counts, q, total, source)
        lo, hi = lower, lower + BASE**k - 1.0
        details = {"steps_upper": k}
    else:
        # two invocations (Durfee 2023, Section 5): the upper tail from the smallest double's
        # neighbourhood upward is not defined without a start, so each side starts at 0 and
        # counts its own half of the line: the upper side counts x <= c, the lower side -x
        half = total / 2
        k_hi = above_threshold_steps(np.maximum(steps, 0), counts, q, half, source)
        k_lo = above_threshold_steps(np.maximum(-steps, 0), counts, q, half, source)
        hi = BASE**k_hi - 1.0
        lo = 0.0 - (BASE**k_lo - 1.0)  # not -0.0
        details = {"steps_upper": k_hi, "steps_lower": k_lo}
    if not lo < hi:
        hi = lo + (abs(lo) or 1.0)
    if not math.isfinite(hi):
        hi = sys.float_info.max
    return BoundsRelease(
        bounds=(float(lo), float(hi)),
        clipped_fraction=None,
        method="tail",
        privacy=PureDP(eps),
        details=details,
    )


def _tail_bounds(
    arr: np.ndarray, eps: float, lower: float | None, tail: float, source: Any
) -> BoundsRelease:
    steps, counts = np.unique(tail_steps(arr, lower), return_counts=True)
    return _tail_from_steps(steps, counts.astype(np.int64), eps, lower, tail, source)
