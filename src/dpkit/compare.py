"""Compare global sensitivity with the local-sensitivity frameworks on one statistic.

:func:`compare` runs, on one column, many independent releases of the mean or the median by

* ``global``: noisy sum over noisy count (the budget split in half, each calibrated to its
  global sensitivity under add/remove of one record) for the mean; for the median, Laplace
  noise scaled to the median's global sensitivity under add/remove of one record,
  ``(upper - lower) / 2`` (:func:`dpkit.sensitivity.global_sensitivity`, the figure the
  sensitivity tables print for ``relation="unbounded"``);
* ``ptr``: :func:`~dpkit.frameworks.propose_test_release` (refusals are counted, not scored);
* ``smooth``: :func:`~dpkit.frameworks.smooth_sensitivity_release` (Laplace noise when
  ``delta > 0``, Cauchy otherwise);
* ``sample_and_aggregate``: :func:`~dpkit.frameworks.sample_and_aggregate` with the statistic
  on each part and the noisy mean of the parts;
* ``inverse_sensitivity``: :func:`~dpkit.frameworks.inverse_sensitivity` (median only),

each at the same total privacy cost: every method spends at most ``(epsilon, delta)``, and the
cost each one actually carries is reported. Trials are vectorised where the mathematics
allows: the data-dependent part (distance, smooth sensitivity, loss classes) is computed once
per block of :data:`TRIAL_BLOCK` trials and the noise of a block is drawn in one sampler call,
so the working memory does not grow with ``trials`` past one block; sample-and-aggregate's
block holds one permutation of the records per trial, so its blocks are cut to at most
:data:`PERMUTATION_BLOCK_BYTES` of permutations (5,000 trials on Adult's 32,561 records held
6.5 GB at once as one block). The releases themselves (8 bytes per trial and method) are kept
for the summary and the plot, and a run whose estimated memory exceeds ``max_memory`` is
refused before any work. ``progress`` shows a bar of the trials done (on stderr). Each
trial is a full release; the trials together are *not* one private release (they cost
``trials`` times the budget): this module studies accuracy, it does not publish.

Both statistics of data within ``[lower, upper]`` lie in ``[lower, upper]``, so every release
is clamped to the bounds (post-processing: free in privacy, never worse in error).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from dpkit._validate import (
    check_bounds,
    check_choice,
    check_delta,
    check_finite_array,
    check_int,
    check_positive,
    check_within_bounds,
    describe,
)
from dpkit.accounting.loss import ApproxDP, PrivacyLoss, PureDP
from dpkit.errors import ParameterError
from dpkit.samplers import as_source

__all__ = [
    "DEFAULT_CHUNKS",
    "MAX_MEMORY",
    "METHODS",
    "PERMUTATION_BLOCK_BYTES",
    "TRIAL_BLOCK",
    "Comparison",
    "MethodResult",
    "compare",
]

#: The methods ``compare`` runs by default, in the order of its table: global sensitivity,
#: propose-test-release, smooth sensitivity, sample-and-aggregate, inverse sensitivity.
METHODS: tuple[str, ...] = (
    "global",
    "ptr",
    "smooth",
    "sample_and_aggregate",
    "inverse_sensitivity",
)

#: Sample-and-aggregate's number of parts when ``chunks`` is not given (or the number of
#: records, if smaller; the table says which was used).
DEFAULT_CHUNKS = 600

#: Trials drawn per sampler call: bounds the working memory of a run (at most 160 bytes per
#: trial of a block, whatever ``trials`` is, plus 40 bytes per record for
#: sample-and-aggregate's permutations).
TRIAL_BLOCK = 2**18

#: Largest block of sample-and-aggregate's permutations (40 bytes per record and trial):
#: trials are drawn in blocks of at most this many bytes, whatever ``trials`` is.
PERMUTATION_BLOCK_BYTES = 2**26

#: Default limit on a run's estimated memory (``max_memory``), in bytes: 2 GiB, enough for
#: 1,000 trials of every method on the bundled Adult data (32,561 records: about 1.2 GiB).
MAX_MEMORY = 2**31

# The estimate (_memory), in bytes, of what a run holds at its peak, beyond the interpreter:
#
#     8 (methods + 3) trials  +  160 min(trials, TRIAL_BLOCK)
#                             +  (40 n + 160) min(trials, _saa_block(n))  +  128 n
#
# - 8 bytes per release kept, per method, plus three trial-sized float64 working copies when
#   summarising (the errors, their absolute values, the sorted copy of a quantile);
# - one block of trials in flight (every method's block is freed before the next method):
#   160 bytes per trial (measured with tracemalloc at a full block of 2**18 trials: at most
#   118, inverse sensitivity's weighted choice), and 40 n + 160 per trial of
#   sample-and-aggregate's smaller blocks (_saa_block: at most PERMUTATION_BLOCK_BYTES of
#   permutations): each trial draws a permutation of the n records, and
#   dpkit.samplers.permutations holds five n-sized int64 arrays of each row at once (the keys,
#   their order, the sorted keys, the output and the rows it copies in; measured: 40.0 n bytes
#   per trial, 2,000 <= n <= 32,561);
# - 128 bytes per record for the copies of the data the methods make (validated, clipped,
#   sorted, on the lattice, prefix sums; measured at most 123 bytes per record, the median's
#   smooth sensitivity, n = 10**5 and 10**6).
#
# Checked against peak RSS (/usr/bin/time -v): 1,000 trials of every method on Adult estimate
# 1.22 GiB and peak at 1.33 GiB with the interpreter's own 0.1 GiB; 10**6 trials on 2,000
# records estimate 19.6 GiB and peaked at 19.7 GiB before this estimate existed.
_KEPT_BYTES = 8
_SUMMARY_COPIES = 3
_BLOCK_BYTES = 160
_PERMUTATION_BYTES = 40
_DATA_BYTES = 128

_LABELS = {
    "global": "global sensitivity",
    "ptr": "propose-test-release",
    "smooth": "smooth sensitivity",
    "sample_and_aggregate": "sample-and-aggregate",
    "inverse_sensitivity": "inverse sensitivity",
}


@dataclass(frozen=True)
class MethodResult:
    """The releases of one method in a :func:`compare` run.

    Attributes
    ----------
    method : str
        One of :data:`METHODS`.
    privacy : PureDP or ApproxDP
        What one release of the method costs.
    neighbours : str
        The neighbour relation that cost holds under: ``"unbounded"`` (add/remove one
        record), ``"bounded"`` (replace one record) or ``"both"``.
    values : numpy.ndarray
        One release per trial, clamped to the bounds; NaN where the method refused.
    seconds : float
        Wall time of all the trials.
    details : dict
        The method's inner figures (sensitivity, scale, threshold, parts, ...).
    """

    method: str
    privacy: PrivacyLoss
    neighbours: str
    values: np.ndarray = field(repr=False)
    seconds: float
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """The method's name in tables and legends (``"propose-test-release"``, ...)."""
        return _LABELS.get(self.method, self.method)

    @property
    def refused(self) -> float:
        """Fraction of trials that released nothing."""
        return float(np.mean(np.isnan(self.values))) if self.values.size else 0.0


@dataclass(frozen=True, repr=False)
class Comparison:
    """Result of :func:`compare`: the truth and every method's releases.

    Printing it (or its ``repr`` at a prompt) shows :meth:`table`.

    Attributes
    ----------
    statistic : str
        ``"mean"`` or ``"median"``.
    column : str
        Name used in the table and plot.
    truth : float
        The statistic of the data (after clipping, when ``clipped > 0``): a true,
        non-private value, printed as such.
    n : int
        Number of records.
    epsilon, delta : float
        The budget of one release of each method (``delta`` is used by the approximate-DP
        methods only).
    trials : int
        Releases per method.
    results : tuple of MethodResult
        One per method, in the order asked.
    bounds : (float, float)
        The public bounds; every release is clamped to them.
    clipped : int
        How many records were outside the bounds and clipped (``clip=True``).
    """

    statistic: str
    column: str
    truth: float
    n: int
    epsilon: float
    delta: float
    trials: int
    results: tuple[MethodResult, ...]
    bounds: tuple[float, float] = (float("-inf"), float("inf"))
    clipped: int = 0

    def errors(self, method: str) -> np.ndarray:
        """Signed errors ``release - truth`` of one method.

        Parameters
        ----------
        method : str
            One of the methods that ran.

        Returns
        -------
        numpy.ndarray
            One error per trial that released a value (refusals dropped).

        Raises
        ------
        KeyError
            ``method`` did not run.
        """
        res = self[method]
        v = res.values[~np.isnan(res.values)]
        return v - self.truth

    def __getitem__(self, method: str) -> MethodResult:
        for r in self.results:
            if r.method == method:
                return r
        raise KeyError(method)

    def summary(self) -> list[dict[str, Any]]:
        """The figures of the table, one dict per method.

        Returns
        -------
        list of dict
            Keys ``method``, ``label``, ``privacy``, ``neighbours``, ``median_abs_error``,
            ``mean_abs_error``, ``p95_abs_error`` (NaN when every trial was refused),
            ``refused`` (a fraction) and ``seconds``.
        """
        rows = []
        for r in self.results:
            err = np.abs(self.errors(r.method))
            has = err.size > 0
            rows.append(
                {
                    "method": r.method,
                    "label": r.label,
                    "privacy": r.privacy,
                    "neighbours": r.neighbours,
                    "median_abs_error": float(np.median(err)) if has else float("nan"),
                    "mean_abs_error": float(np.mean(err)) if has else float("nan"),
                    "p95_abs_error": float(np.quantile(err, 0.95)) if has else float("nan"),
                    "refused": r.refused,
                    "seconds": r.seconds,
                }
            )
        return rows

    def table(self) -> str:
        """The summary as a fixed-width text table, with what each method used below it.

        Returns
        -------
        str
            A header (the true, non-private value; the budget; the trials), one row per
            method, and one line per method naming its sensitivity (with the neighbour
            relation), scale, threshold or parts.
        """
        lower, upper = self.bounds
        head = (
            f"{self.statistic.capitalize()} of {self.column}: true (non-private) value "
            f"{self.truth:.6g}, n = {self.n:,}\n"
            f"epsilon {self.epsilon:g} per method, delta {self.delta:.3g} for the (epsilon, "
            f"delta) methods, {self.trials:,} trials per method"
        )
        cols = f"{'method':<22} {'privacy':<17} {'neighbours':<10} {'median|err|':>12} "
        cols += f"{'mean|err|':>11} {'95%|err|':>11} {'refused':>8} {'time':>7}"
        lines = [head, cols, "-" * len(cols)]
        for row in self.summary():
            lines.append(
                f"{row['label']:<22} {_fmt_privacy(row['privacy']):<17} {row['neighbours']:<10} "
                f"{row['median_abs_error']:>12.4g} {row['mean_abs_error']:>11.4g} "
                f"{row['p95_abs_error']:>11.4g} {row['refused']:>8.1%} {row['seconds']:>6.2f}s"
            )
        lines.append("-" * len(cols))
        lines.extend(f"{r.label:<22} {_note(self.statistic, r)}" for r in self.results)
        lines.append(
            "neighbours: unbounded = add/remove one record, bounded = replace one record, both "
            f"= either; releases clamped to [{lower:g}, {upper:g}] (post-processing)"
        )
        if self.clipped:
            lines.append(f"{self.clipped:,} record(s) outside the bounds were clipped to them")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()

    def __repr__(self) -> str:
        return self.table()


def _fmt_privacy(p: PrivacyLoss) -> str:
    if isinstance(p, ApproxDP):
        return f"({p.epsilon:g}, {p.delta:.2g})-DP"
    if isinstance(p, PureDP):
        return f"{p.epsilon:g}-DP (pure)"
    return repr(p)


def _note(statistic: str, r: MethodResult) -> str:
    """What a method used, in one line: its sensitivity, scale, threshold or parts."""
    d = r.details
    if r.method == "global" and statistic == "mean":
        return (
            f"noisy sum (sensitivity {d['sum_sensitivity']:g}) / noisy count (sensitivity "
            f"{d['count_sensitivity']:g}), epsilon {d['split'][0]:g} + {d['split'][1]:g}"
        )
    if r.method == "global":
        return f"sensitivity {d['sensitivity']:g} (the median's), Laplace scale {d['scale']:.4g}"
    if r.method == "ptr":
        return (
            f"proposed bound {d['proposed_bound']:g}, threshold {d['threshold']:.4g}, epsilon "
            f"{d['epsilon_test']:g} test + {d['epsilon_release']:g} release"
        )
    if r.method == "smooth":
        return (
            f"smooth sensitivity {d['smooth_sensitivity']:.3g} (beta {d['beta']:.3g}; from the "
            f"data, not private), noise scale {d['scale']:.3g}"
        )
    if r.method == "sample_and_aggregate":
        return (
            f"{d['chunks']:,} parts ({d['chunks_rule']}), sensitivity (upper - lower) / "
            f"{d['chunks']:,} = {d['sensitivity']:.4g}"
        )
    return "exponential mechanism over the records to change (loss sensitivity 1)"


def compare(
    data: Any,
    statistic: str = "mean",
    *,
    bounds: tuple[float, float],
    epsilon: float = 1.0,
    delta: float | None = None,
    trials: int = 1000,
    methods: Sequence[str] | None = None,
    ptr_bound: float | None = None,
    chunks: int | None = None,
    column: str = "data",
    clip: bool = False,
    force_delta: bool = False,
    max_memory: int = MAX_MEMORY,
    rng: Any = None,
    progress: bool | None = None,
) -> Comparison:
    """Run every method ``trials`` times on one statistic and collect the errors.

    Parameters
    ----------
    data : array_like
        One column of finite values (one per person) within ``bounds``.
    statistic : {"mean", "median"}
        The statistic every method estimates (the truth is NumPy's).
    bounds : (float, float)
        Public ``(lower, upper)``, chosen without looking at the data (required).
    epsilon : float
        The epsilon each method may spend on one release, > 0.
    delta : float, optional
        The delta of the (epsilon, delta) methods (PTR, smooth sensitivity), in (0, 1/n].
        Default ``min(1/n**2, 1e-6)``, shown in the table.
    trials : int
        Releases per method, >= 1.
    methods : sequence of str, optional
        A subset of :data:`METHODS` (default all).
    ptr_bound : float, optional
        PTR's proposed bound; default ``5e-5 (upper - lower)`` for the mean (the book's 0.005
        for ages in [0, 100]) and ``0.01 (upper - lower)`` for the median. Never data-derived.
    chunks : int, optional
        Parts for sample-and-aggregate, between 1 and the number of records; default
        :data:`DEFAULT_CHUNKS`, or the number of records if smaller (the table says so).
    column : str
        Name used in the table and plot.
    clip : bool
        Clip values outside ``bounds`` to them (their number is reported in the table)
        instead of refusing them.
    force_delta : bool
        Allow ``delta > 1/n`` (see Raises): only to study what such a delta does.
    max_memory : int
        Refuse runs whose estimated memory exceeds this many bytes (default
        :data:`MAX_MEMORY`, 2 GiB): about ``8 (methods + 3) trials`` bytes for the kept
        releases and their summary, plus one block of at most :data:`TRIAL_BLOCK` trials in
        flight (160 bytes per trial; sample-and-aggregate's permutations, 40 bytes per trial
        and record, in blocks of at most :data:`PERMUTATION_BLOCK_BYTES`), plus 128 bytes per
        record.
    rng
        ``None`` (secure), an ``int`` seed or a bit source.
    progress : bool, optional
        Show a progress bar of the trials done on stderr (default: when stderr is a
        terminal).

    Returns
    -------
    Comparison
        Printing it shows :meth:`Comparison.table`; :meth:`Comparison.summary` gives the
        figures; plot it with :func:`dpkit.plot.comparison.plot_comparison`.

    Raises
    ------
    ParameterError
        Unknown statistic or method; bad privacy parameters or bounds; data that is empty,
        not finite or (without ``clip``) outside the bounds; ``chunks`` above the number of
        records; ``delta`` above ``1/n`` without ``force_delta`` (a mechanism that publishes
        each record in the clear with probability ``delta`` is ``(0, delta)``-DP, so such a
        delta protects no one); a run estimated to need more than ``max_memory`` bytes.
    TypeError
        Non-numeric data, a non-integer ``trials`` or ``chunks``.

    Privacy
    -------
    Each single trial of each method is a release with the privacy printed in the table
    (at most ``(epsilon, delta)``) under the neighbour relation printed beside it; running
    many trials on the same data is a study of accuracy, not a private publication.

    Examples
    --------
    >>> x = 40 + 10 * np.sin(np.arange(2000.0))  # any data will do
    >>> c = compare(x, "median", bounds=(0, 100), trials=50, rng=1)
    >>> [r.method for r in c.results]
    ['global', 'ptr', 'smooth', 'sample_and_aggregate', 'inverse_sensitivity']
    >>> c["inverse_sensitivity"].privacy
    PureDP(epsilon=1.0)
    >>> c["global"].details["sensitivity"]  # (100 - 0) / 2: add/remove one record
    50.0
    """
    owner = "compare"
    check_choice(owner, "statistic", statistic, ("mean", "median"))
    lower, upper = check_bounds(owner, bounds)
    eps = check_positive(owner, "epsilon", epsilon)
    trials = check_int(owner, "trials", trials, minimum=1)
    if methods is None:
        chosen = list(METHODS)
    elif isinstance(methods, str) or not isinstance(methods, Sequence):
        raise TypeError(
            f"{owner}: `methods` must be a sequence of method names from {METHODS}; got "
            f"{type(methods).__name__} {describe(methods)}"
        )
    else:
        chosen = [check_choice(owner, "methods[i]", m, METHODS) for m in methods]
    if not chosen:
        raise ParameterError(f"{owner}: `methods` is empty; choose from {METHODS}")
    arr = check_finite_array(owner, "data", data, ndim=1)
    arr, clipped = check_within_bounds(owner, "`data`", arr, (lower, upper), clip=clip)
    n = int(arr.size)
    dlt = _delta(owner, delta, n, force_delta)
    k, chunks_rule = _chunks(owner, chunks, n)
    _check_memory(owner, trials, len(chosen), "sample_and_aggregate" in chosen, n, max_memory)
    source = as_source(rng)
    truth = float(np.mean(arr) if statistic == "mean" else np.median(arr))
    width = upper - lower
    b = ptr_bound if ptr_bound is not None else (5e-5 if statistic == "mean" else 0.01) * width
    b = check_positive(owner, "ptr_bound", b)
    task = _Task(arr, statistic, lower, upper, eps, dlt, trials, source, b, k)
    results = []
    from tqdm import tqdm

    show = sys.stderr.isatty() if progress is None else bool(progress)
    bar = tqdm(
        total=trials * len(chosen), desc="compare", unit="trial", file=sys.stderr, disable=not show
    )
    try:
        for m in chosen:
            bar.set_description(_LABELS[m])
            t0 = time.perf_counter()
            values = np.full(trials, np.nan)  # a slot no block filled would show as a refusal
            privacy: PrivacyLoss = PureDP(eps)
            nbrs, det = "", dict[str, Any]()
            block = _saa_block(n) if m == "sample_and_aggregate" else TRIAL_BLOCK
            for start in range(0, trials, block):
                stop = min(trials, start + block)
                vals, privacy, nbrs, det = _RUNNERS[m](replace(task, trials=stop - start))
                values[start:stop] = vals
                bar.update(stop - start)
            np.clip(values, lower, upper, out=values)  # post-processing; NaN (refusals) stays
            if m == "sample_and_aggregate":
                det = det | {"chunks_rule": chunks_rule}
            seconds = time.perf_counter() - t0
            results.append(MethodResult(m, privacy, nbrs, values, seconds, det))
    finally:
        bar.close()
    return Comparison(
        statistic,
        column,
        truth,
        n,
        eps,
        dlt,
        trials,
        tuple(results),
        bounds=(lower, upper),
        clipped=clipped,
    )


def _delta(owner: str, delta: float | None, n: int, force: bool) -> float:
    """The default ``min(1/n**2, 1e-6)``, or a given delta no larger than ``1/n``."""
    if delta is None:
        return min(1.0 / n**2, 1e-6)
    dlt = check_delta(owner, delta, allow_zero=False)
    if dlt > 1.0 / n and not force:
        raise ParameterError(
            f"{owner}: `delta` {delta!r} is above 1/n = {1.0 / n:.3g} for n = {n:,} records. "
            "A mechanism that publishes each record in the clear with probability delta is "
            "(0, delta)-DP, so such a delta lets about delta * n records out and protects no "
            "one; use a delta well below 1/n (the default is min(1/n^2, 1e-6)), or "
            "force_delta=True (--force-delta) to study it anyway"
        )
    return dlt


def _chunks(owner: str, chunks: int | None, n: int) -> tuple[int, str]:
    """Sample-and-aggregate's parts and the rule that chose them (printed in the table)."""
    if chunks is None:
        if n >= DEFAULT_CHUNKS:
            return DEFAULT_CHUNKS, f"the default {DEFAULT_CHUNKS}"
        return n, f"one per record: fewer records than the default {DEFAULT_CHUNKS}"
    chunks = check_int(owner, "chunks", chunks)
    if not 1 <= chunks <= n:
        raise ParameterError(
            f"{owner}: `chunks` must be between 1 and the number of records, {n:,} (each part "
            f"needs at least one record); got {chunks!r}"
        )
    return int(chunks), "as asked"


def _saa_block(n: int) -> int:
    """Sample-and-aggregate's trials per block: at most :data:`PERMUTATION_BLOCK_BYTES` of
    permutations of the ``n`` records (at least one trial, at most :data:`TRIAL_BLOCK`)."""
    return max(1, min(TRIAL_BLOCK, PERMUTATION_BLOCK_BYTES // (_PERMUTATION_BYTES * max(n, 1))))


def _in_flight(trials: int, saa: bool, n: int) -> int:
    """Peak bytes of the block of trials in flight (every method's block is freed before the
    next method's): the larger of the general block and sample-and-aggregate's."""
    general = _BLOCK_BYTES * min(trials, TRIAL_BLOCK)
    if not saa:
        return general
    return max(general, (_PERMUTATION_BYTES * n + _BLOCK_BYTES) * min(trials, _saa_block(n)))


def _most_trials(methods: int, saa: bool, n: int, limit: int) -> int:
    """The largest ``trials`` whose estimate (:func:`_memory`) is at most ``limit``."""
    lo, hi = 0, 2**62
    if _memory(1, methods, saa, n) > limit:
        return 0
    while lo < hi:  # _memory grows with trials: bisection
        mid = (lo + hi + 1) // 2
        if _memory(mid, methods, saa, n) <= limit:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _memory(trials: int, methods: int, saa: bool, n: int) -> int:
    """Estimated peak bytes of a run (the formula above :data:`_KEPT_BYTES`): the kept
    releases and their summary copies, one block of trials in flight, the data's copies."""
    kept = _KEPT_BYTES * trials * (methods + _SUMMARY_COPIES)
    return kept + _in_flight(trials, saa, n) + _DATA_BYTES * n


def _check_memory(owner: str, trials: int, methods: int, saa: bool, n: int, limit: int) -> None:
    """Refuse, before any work, a run whose estimated memory exceeds ``limit`` bytes."""
    limit = check_int(owner, "max_memory", limit, minimum=1)
    need = _memory(trials, methods, saa, n)
    if need > limit:
        block = (
            f"{_BLOCK_BYTES:,} bytes per trial of a block of up to {TRIAL_BLOCK:,} drawn at once"
        )
        if saa:
            block += (
                f", sample-and-aggregate's permutations of the {n:,} records in blocks of "
                f"{_saa_block(n):,} trials"
            )
        raise ParameterError(
            f"{owner}: `trials` {trials:,} would need about {_bytes(need)} of memory "
            f"({_KEPT_BYTES} bytes per trial for each of {methods} method(s) and "
            f"{_SUMMARY_COPIES} working copies, plus {block}); the limit `max_memory` is "
            f"{_bytes(limit)}, which allows at most "
            f"{_most_trials(methods, saa, n, limit):,} trials here. Lower `trials` (a "
            "few thousand show the error distributions) or raise `max_memory` (CLI: "
            "--max-memory)"
        )


def _bytes(b: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if b < 1024 or unit == "GiB":
            return f"{b:,.0f} {unit}" if unit == "bytes" else f"{b:,.1f} {unit}"
        b /= 1024
    raise AssertionError  # pragma: no cover


_Out = tuple[np.ndarray, PrivacyLoss, str, dict[str, Any]]


@dataclass(frozen=True)
class _Task:
    """What every method runner gets: the data, the statistic and the shared settings."""

    arr: np.ndarray
    statistic: str
    lower: float
    upper: float
    eps: float
    dlt: float
    trials: int
    source: Any
    b: float  # PTR's proposed bound
    chunks: int  # sample-and-aggregate's parts


def _run_global(t: _Task) -> _Out:
    from dpkit._lattice import on_data_lattice
    from dpkit.noise.grid import grid_for, laplace_units, noise_spacing
    from dpkit.sensitivity import catalogue as queries

    arr, statistic, lower, upper = t.arr, t.statistic, t.lower, t.upper
    # the statistics are exact: records mapped onto the lattice of the bounds (a per-record
    # map), then summed or interpolated in integers (dpkit._lattice.on_data_lattice)
    lat = on_data_lattice(arr, lower, upper, owner="compare")
    if statistic == "mean":
        s_sens = max(abs(lower), abs(upper))
        half = t.eps / 2
        params = f"`epsilon`={t.eps!r} and `bounds`=({lower!r}, {upper!r})"
        # grids about 2**-30 of the noise scale, coarsened so that the sum and the count of
        # n records stay exact in float64 (a huge epsilon would give a subnormal grid)
        n = max(int(arr.size), 1)
        g = noise_spacing("compare", s_sens / half, extent=n * s_sens, params=params, epsilon=half)
        total = queries.statistic_on_grid(queries.sum, lat.units, lat.unit, g)
        sums, _ = laplace_units(np.full(t.trials, total), s_sens, half, g, t.source)
        g_count = noise_spacing("compare", 1 / half, extent=float(n), params=params, epsilon=half)
        count = queries.statistic_on_grid(queries.count, lat.units, lat.unit, g_count)
        counts, _ = laplace_units(np.full(t.trials, count), 1.0, half, g_count, t.source)
        # post-processing: a non-positive noisy count gives no estimate (counted as refused)
        with np.errstate(divide="ignore", invalid="ignore"):
            vals = np.where(counts >= 1, sums / counts, np.nan)
        det = {"sum_sensitivity": s_sens, "count_sensitivity": 1.0, "split": (half, half)}
        return vals, PureDP(t.eps), "unbounded", det
    from dpkit.sensitivity import global_sensitivity

    # every dataset size: add/remove neighbours have other sizes; (upper - lower) / 2
    sens = global_sensitivity("median", bounds=(lower, upper), relation="unbounded")
    g = grid_for(
        sens / t.eps, lower, upper, owner="compare", params=f"`epsilon`={t.eps!r}", epsilon=t.eps
    )
    med = queries.statistic_on_grid(queries.median, lat.units, lat.unit, g)
    vals, scale = laplace_units(np.full(t.trials, med), sens, t.eps, g, t.source)
    return vals, PureDP(t.eps), "unbounded", {"sensitivity": sens, "scale": scale}


def _run_ptr(t: _Task) -> _Out:
    from dpkit.frameworks.ptr import draw_release, plan_release

    p = plan_release(t.arr, t.statistic, t.b, t.eps, t.dlt, (t.lower, t.upper), "unbounded", 0.5)
    _noisy, vals = draw_release(p, t.trials, t.source)
    assert vals is not None
    det = {
        "proposed_bound": t.b,
        "threshold": p.threshold,
        "distance": p.distance,
        "scale": p.scale,
        "epsilon_test": p.eps_test,
        "epsilon_release": p.eps_rel,
    }
    return vals, ApproxDP(t.eps, t.dlt), "unbounded", det


def _run_smooth(t: _Task) -> _Out:
    from dpkit.frameworks.smooth import smooth_sensitivity_release, smooth_sensitivity_sample

    arr, statistic, lower, upper = t.arr, t.statistic, t.lower, t.upper
    kw: dict[str, Any] = {
        "epsilon": t.eps,
        "delta": t.dlt,
        "bounds": (lower, upper),
        "noise": "laplace",
    }
    one = smooth_sensitivity_release(arr, statistic, rng=t.source, **kw)
    vals = smooth_sensitivity_sample(arr, statistic, size=t.trials, rng=t.source, **kw)
    return vals, one.privacy, "unbounded", dict(one.details) | dict(one.diagnostics)


def _run_saa(t: _Task) -> _Out:
    from dpkit.frameworks.sample_aggregate import sample_and_aggregate_sample
    from dpkit.noise.grid import grid_for

    arr, statistic, lower, upper = t.arr, t.statistic, t.lower, t.upper
    k = t.chunks  # validated by compare: 1 <= chunks <= n
    vals = sample_and_aggregate_sample(
        arr,
        statistic,
        chunks=k,
        output_bounds=(lower, upper),
        epsilon=t.eps,
        size=t.trials,
        rng=t.source,
    )
    sens = (upper - lower) / k
    scale = (sens + grid_for(sens / t.eps, lower, upper)) / t.eps
    return vals, PureDP(t.eps), "bounded", {"chunks": k, "sensitivity": sens, "scale": scale}


def _run_inverse(t: _Task) -> _Out:
    from dpkit.frameworks.inverse import inverse_sensitivity_sample

    arr, statistic, lower, upper = t.arr, t.statistic, t.lower, t.upper
    vals, losses = inverse_sensitivity_sample(
        arr, query=statistic, epsilon=t.eps, bounds=(lower, upper), size=t.trials, rng=t.source
    )
    # the quantile loss is 1-sensitive under both relations, the mean's under replace-one
    nbrs = "both" if statistic == "median" else "bounded"
    return vals, PureDP(t.eps), nbrs, {"median_loss": float(np.median(losses))}


_RUNNERS = {
    "global": _run_global,
    "ptr": _run_ptr,
    "smooth": _run_smooth,
    "sample_and_aggregate": _run_saa,
    "inverse_sensitivity": _run_inverse,
}
