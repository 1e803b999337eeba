"""Compare global sensitivity with the local-sensitivity frameworks on one statistic.

:func:`compare` runs, on one column, many independent releases of the mean or the median by

* ``global``: noisy sum over noisy count (the budget split in half, each calibrated to its
  global sensitivity) for the mean; Laplace with the median's global sensitivity
  ``upper - lower`` for the median;
* ``ptr``: :func:`~dpkit.frameworks.propose_test_release` (refusals are counted, not scored);
* ``smooth``: :func:`~dpkit.frameworks.smooth_sensitivity_release` (Laplace noise when
  ``delta > 0``, Cauchy otherwise);
* ``sample_and_aggregate``: :func:`~dpkit.frameworks.sample_and_aggregate` with the statistic
  on each part and the noisy mean of the parts;
* ``inverse_sensitivity``: :func:`~dpkit.frameworks.inverse_sensitivity` (median only),

each at the same total privacy cost: every method spends at most ``(epsilon, delta)``, and the
cost each one actually carries is reported. Trials are vectorised where the mathematics
allows: the data-dependent part (distance, smooth sensitivity, loss classes) is computed once
and the noise for all trials is drawn in one sampler call. Each trial is a full release; the
trials together are *not* one private release (they cost ``trials`` times the budget): this
module studies accuracy, it does not publish.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpkit._validate import check_bounds, check_delta, check_finite_array, check_positive
from dpkit.accounting.loss import ApproxDP, PrivacyLoss, PureDP
from dpkit.errors import ParameterError
from dpkit.samplers import as_source

__all__ = ["METHODS", "Comparison", "MethodResult", "compare"]

METHODS: tuple[str, ...] = (
    "global",
    "ptr",
    "smooth",
    "sample_and_aggregate",
    "inverse_sensitivity",
)

_LABELS = {
    "global": "global sensitivity",
    "ptr": "propose-test-release",
    "smooth": "smooth sensitivity",
    "sample_and_aggregate": "sample-and-aggregate",
    "inverse_sensitivity": "inverse sensitivity",
}


@dataclass(frozen=True)
class MethodResult:
    """The releases of one method: ``values`` holds NaN where the method refused."""

    method: str
    privacy: PrivacyLoss
    neighbours: str
    values: np.ndarray = field(repr=False)
    seconds: float
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return _LABELS.get(self.method, self.method)

    @property
    def refused(self) -> float:
        """Fraction of trials that released nothing."""
        return float(np.mean(np.isnan(self.values))) if self.values.size else 0.0


@dataclass(frozen=True)
class Comparison:
    """Result of :func:`compare`: the truth and every method's releases."""

    statistic: str
    column: str
    truth: float
    n: int
    epsilon: float
    delta: float
    trials: int
    results: tuple[MethodResult, ...]

    def errors(self, method: str) -> np.ndarray:
        """Signed errors ``release - truth`` of ``method`` (refusals dropped)."""
        res = self[method]
        v = res.values[~np.isnan(res.values)]
        return v - self.truth

    def __getitem__(self, method: str) -> MethodResult:
        for r in self.results:
            if r.method == method:
                return r
        raise KeyError(method)

    def summary(self) -> list[dict[str, Any]]:
        """One dict per method: median, mean and 95th percentile of ``|error|``, refusals."""
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
        """The summary as a fixed-width text table."""
        head = (
            f"{self.statistic.capitalize()} of {self.column}: true value {self.truth:.6g} "
            f"(n = {self.n:,}), epsilon {self.epsilon:g}, delta {self.delta:.3g}, "
            f"{self.trials:,} trials per method"
        )
        cols = f"{'method':<22} {'privacy':<30} {'neighbours':<10} {'median|err|':>12} "
        cols += f"{'mean|err|':>11} {'95%|err|':>11} {'refused':>8} {'time':>7}"
        lines = [head, cols, "-" * len(cols)]
        for row in self.summary():
            lines.append(
                f"{row['label']:<22} {_fmt_privacy(row['privacy']):<30} {row['neighbours']:<10} "
                f"{row['median_abs_error']:>12.4g} {row['mean_abs_error']:>11.4g} "
                f"{row['p95_abs_error']:>11.4g} {row['refused']:>7.1%} {row['seconds']:>6.2f}s"
            )
        return "\n".join(lines)


def _fmt_privacy(p: PrivacyLoss) -> str:
    if isinstance(p, ApproxDP):
        return f"({p.epsilon:g}, {p.delta:.2g})-DP"
    if isinstance(p, PureDP):
        return f"{p.epsilon:g}-DP (pure)"
    return repr(p)


def compare(
    data: Any,
    statistic: str = "mean",
    *,
    bounds: tuple[float, float],
    epsilon: float = 1.0,
    delta: float = 1e-6,
    trials: int = 1000,
    methods: Sequence[str] | None = None,
    ptr_bound: float | None = None,
    chunks: int = 600,
    column: str = "data",
    rng: Any = None,
) -> Comparison:
    """Run every method ``trials`` times on one statistic and collect the errors.

    Parameters
    ----------
    data : array_like
        One column of finite values (one per person), clipped to ``bounds``.
    statistic : {"mean", "median"}
        The statistic every method estimates (the truth is NumPy's, on the clipped data).
    bounds : (float, float)
        Public ``(lower, upper)``.
    epsilon, delta : float
        The total privacy cost each method may spend (``delta`` in (0, 1)).
    trials : int
        Releases per method, >= 1.
    methods : sequence of str, optional
        A subset of :data:`METHODS` (default all).
    ptr_bound : float, optional
        PTR's proposed bound; default ``5e-5 (upper - lower)`` for the mean (the book's 0.005
        for ages in [0, 100]) and ``0.01 (upper - lower)`` for the median. Never data-derived.
    chunks : int
        Parts for sample-and-aggregate (at most the number of records).
    column : str
        Name used in the table and plot.
    rng
        ``None`` (secure), an ``int`` seed or a bit source.

    Returns
    -------
    Comparison
        With :meth:`Comparison.table` and :meth:`Comparison.summary`; plot it with
        :func:`dpkit.plot.compare.plot_comparison`.

    Raises
    ------
    ParameterError
        Unknown statistic or method, bad privacy parameters, bounds or data.

    Privacy
    -------
    Each single trial of each method is a release with the privacy printed in the table
    (at most ``(epsilon, delta)``); running many trials on the same data is a study of
    accuracy, not a private publication.

    Examples
    --------
    >>> x = 40 + 10 * np.sin(np.arange(2000.0))  # any data will do
    >>> c = compare(x, "median", bounds=(0, 100), trials=50, rng=1)
    >>> [r.method for r in c.results]
    ['global', 'ptr', 'smooth', 'sample_and_aggregate', 'inverse_sensitivity']
    >>> c["inverse_sensitivity"].privacy
    PureDP(epsilon=1.0)
    """
    owner = "compare"
    if statistic not in ("mean", "median"):
        raise ParameterError(f"{owner}: `statistic` must be 'mean' or 'median'; got {statistic!r}")
    lower, upper = check_bounds(owner, bounds)
    eps = check_positive(owner, "epsilon", epsilon)
    dlt = check_delta(owner, delta, allow_zero=False)
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
        raise ParameterError(f"{owner}: `trials` must be an int >= 1; got {trials!r}")
    arr = np.clip(check_finite_array(owner, "data", data).ravel(), lower, upper)
    chosen = list(METHODS if methods is None else methods)
    for m in chosen:
        if m not in METHODS:
            raise ParameterError(f"{owner}: unknown method {m!r}; choose from {METHODS}")
    source = as_source(rng)
    truth = float(np.mean(arr) if statistic == "mean" else np.median(arr))
    width = upper - lower
    b = ptr_bound if ptr_bound is not None else (5e-5 if statistic == "mean" else 0.01) * width
    task = _Task(arr, statistic, lower, upper, eps, dlt, trials, source, b, chunks)
    results = []
    for m in chosen:
        t0 = time.perf_counter()
        values, privacy, nbrs, det = _RUNNERS[m](task)
        results.append(
            MethodResult(m, privacy, nbrs, np.asarray(values, float), time.perf_counter() - t0, det)
        )
    return Comparison(statistic, column, truth, int(arr.size), eps, dlt, trials, tuple(results))


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
    from dpkit import queries
    from dpkit.frameworks._common import grid_for, laplace_units, on_data_lattice, spacing_for

    arr, statistic, lower, upper = t.arr, t.statistic, t.lower, t.upper
    # the statistics are exact: records mapped onto the lattice of the bounds (a per-record
    # map), then summed or interpolated in integers (dpkit.frameworks._common.on_data_lattice)
    lat = on_data_lattice(arr, lower, upper)
    if statistic == "mean":
        s_sens = max(abs(lower), abs(upper))
        half = t.eps / 2
        g = spacing_for(s_sens / half)
        total = queries.statistic_on_grid(queries.sum, lat.units, lat.unit, g)
        sums, _ = laplace_units(np.full(t.trials, total), s_sens, half, g, t.source)
        g_count = spacing_for(1 / half)
        count = queries.statistic_on_grid(queries.count, lat.units, lat.unit, g_count)
        counts, _ = laplace_units(np.full(t.trials, count), 1.0, half, g_count, t.source)
        # post-processing: a non-positive noisy count gives no estimate (counted as refused)
        with np.errstate(divide="ignore", invalid="ignore"):
            vals = np.where(counts >= 1, sums / counts, np.nan)
        det = {"sum_sensitivity": s_sens, "count_sensitivity": 1.0, "split": (half, half)}
        return vals, PureDP(t.eps), "unbounded", det
    sens = upper - lower
    g = grid_for(sens / t.eps, lower, upper)
    med = queries.statistic_on_grid(queries.median, lat.units, lat.unit, g)
    vals, scale = laplace_units(np.full(t.trials, med), sens, t.eps, g, t.source)
    return vals, PureDP(t.eps), "unbounded", {"sensitivity": sens, "scale": scale}


def _run_ptr(t: _Task) -> _Out:
    from dpkit.frameworks.ptr import _draw, _plan

    p = _plan(t.arr, t.statistic, t.b, t.eps, t.dlt, (t.lower, t.upper), "unbounded", 0.5)
    _noisy, vals = _draw(p, t.trials, t.source)
    assert vals is not None
    det = {"proposed_bound": t.b, "threshold": p.threshold, "distance": p.distance}
    return vals, ApproxDP(t.eps, t.dlt), "unbounded", det | {"scale": p.scale}


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
    from dpkit.frameworks._common import grid_for
    from dpkit.frameworks.sample_aggregate import sample_and_aggregate_sample

    arr, statistic, lower, upper = t.arr, t.statistic, t.lower, t.upper
    k = min(t.chunks, arr.size)
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
