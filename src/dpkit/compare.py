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

from dpkit._validate import (
    check_bounds,
    check_choice,
    check_delta,
    check_finite_array,
    check_int,
    check_positive,
    describe,
)
from dpkit.accounting.loss import ApproxDP, PrivacyLoss, PureDP
from dpkit.samplers import as_source

__all__ = ["METHODS", "Comparison", "MethodResult", "compare"]

METHODS: tuple[str, ...] = (
    "global",
    "ptr",
    "smooth",
    "sample_and_aggregate",
    "inverse_sensitivity",
)

#: Largest ``trials``: every method keeps one float per trial (and the frameworks a few
#: temporaries of that size), so 10**8 trials already hold several GB.
MAX_TRIALS = 10**8

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
    check_choice(owner, "statistic", statistic, ("mean", "median"))
    lower, upper = check_bounds(owner, bounds)
    eps = check_positive(owner, "epsilon", epsilon)
    dlt = check_delta(owner, delta, allow_zero=False)
    n_trials = check_int(owner, "trials", trials, minimum=1, maximum=MAX_TRIALS)
    k_chunks = check_int(owner, "chunks", chunks, minimum=1)
    arr = np.clip(check_finite_array(owner, "data", data, ndim=1), lower, upper)
    if methods is None:
        chosen = list(METHODS)
    elif isinstance(methods, str) or not isinstance(methods, Sequence):
        raise TypeError(
            f"{owner}: `methods` must be a sequence of method names from {METHODS}; got "
            f"{type(methods).__name__} {describe(methods)}"
        )
    else:
        chosen = [check_choice(owner, "methods[i]", m, METHODS) for m in methods]
    source = as_source(rng)
    truth = float(np.mean(arr) if statistic == "mean" else np.median(arr))
    width = upper - lower
    b = ptr_bound if ptr_bound is not None else (5e-5 if statistic == "mean" else 0.01) * width
    b = check_positive(owner, "ptr_bound", b)
    task = _Task(arr, statistic, lower, upper, eps, dlt, n_trials, source, b, k_chunks)
    results = []
    for m in chosen:
        t0 = time.perf_counter()
        values, privacy, nbrs, det = _RUNNERS[m](task)
        results.append(
            MethodResult(m, privacy, nbrs, np.asarray(values, float), time.perf_counter() - t0, det)
        )
    return Comparison(statistic, column, truth, int(arr.size), eps, dlt, n_trials, tuple(results))


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


def _spacing(t: _Task, scale: float, extent: float | None = None) -> float:
    from dpkit.frameworks._common import noise_spacing

    top = max(abs(t.lower), abs(t.upper)) if extent is None else extent
    return noise_spacing("compare", scale, extent=top, params=f"`epsilon`={t.eps!r}")


def _run_global(t: _Task) -> _Out:
    from dpkit.frameworks._common import laplace_on_grid

    arr, statistic, lower, upper = t.arr, t.statistic, t.lower, t.upper
    if statistic == "mean":
        s_sens = max(abs(lower), abs(upper))
        half = t.eps / 2
        n = float(arr.size)
        g_sum = _spacing(t, s_sens / half, n * s_sens)
        sums, _ = laplace_on_grid(
            np.full(t.trials, float(arr.sum())), s_sens, half, g_sum, t.source
        )
        counts, _ = laplace_on_grid(
            np.full(t.trials, n), 1.0, half, _spacing(t, 1 / half, n), t.source
        )
        # post-processing: a non-positive noisy count gives no estimate (counted as refused)
        with np.errstate(divide="ignore", invalid="ignore"):
            vals = np.where(counts >= 1, sums / counts, np.nan)
        det = {"sum_sensitivity": s_sens, "count_sensitivity": 1.0, "split": (half, half)}
        return vals, PureDP(t.eps), "unbounded", det
    sens = upper - lower
    vals, scale = laplace_on_grid(
        np.full(t.trials, float(np.median(arr))), sens, t.eps, _spacing(t, sens / t.eps), t.source
    )
    return vals, PureDP(t.eps), "unbounded", {"sensitivity": sens, "scale": scale}


def _run_ptr(t: _Task) -> _Out:
    from dpkit.frameworks._common import laplace_on_grid
    from dpkit.frameworks.ptr import distance_to_high_sensitivity, threshold_plan

    arr, statistic, lower, upper = t.arr, t.statistic, t.lower, t.upper
    eps_t = eps_r = t.eps / 2
    g_test, thr, cap = threshold_plan(eps_t, t.dlt)
    g_rel = _spacing(t, t.b / eps_r)
    dist = distance_to_high_sensitivity(statistic, arr, t.b, bounds=(lower, upper), cap=cap)
    noisy, _ = laplace_on_grid(np.full(t.trials, float(dist)), 1.0, eps_t, g_test, t.source)
    value = float(np.mean(arr) if statistic == "mean" else np.median(arr))
    rel, scale = laplace_on_grid(np.full(t.trials, value), t.b, eps_r, g_rel, t.source)
    vals = np.where(noisy > thr, rel, np.nan)
    det = {"proposed_bound": t.b, "threshold": thr, "distance": dist, "scale": scale}
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
    from dpkit.frameworks._common import laplace_on_grid
    from dpkit.frameworks.sample_aggregate import chunk_outputs

    arr, statistic, lower, upper = t.arr, t.statistic, t.lower, t.upper
    k = min(t.chunks, arr.size)
    g = _spacing(t, (upper - lower) / k / t.eps)
    means = np.empty(t.trials)
    for i in range(t.trials):
        outs, _ = chunk_outputs(
            arr, statistic, chunks=k, output_bounds=(lower, upper), rng=t.source
        )
        means[i] = outs.mean()
    sens = (upper - lower) / k
    vals, scale = laplace_on_grid(means, sens, t.eps, g, t.source)
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
