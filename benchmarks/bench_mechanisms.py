"""Mechanism benchmarks: dpkit's exact, secure noise and selection against NumPy and DP libraries.

Tasks (see benchmarks/README.md for the caveats):

``laplace 1e7``
    Laplace noise, epsilon 1, L1 sensitivity 1 (scale b = 1), added to 10^7 float64 values.
``gaussian 1e7``
    Gaussian noise for (epsilon, delta) = (1, 1e-5), L2 sensitivity 1, on 10^7 float64 values,
    with the analytic calibration (Balle & Wang 2018) where the library has it.
``select 1e5``
    One private selection among 10^5 candidates with integer scores in [0, 10^5), epsilon 1,
    sensitivity 1.

Peak memory: the dpkit and NumPy noise rows also report the peak of the memory allocated
during one call (``tracemalloc``, which sees NumPy's arrays) as a multiple of the input's size;
the output itself is one input's worth.

Error column: for the noise tasks, the root-mean-square of (output - input), i.e. the
empirical noise standard deviation; it should read sqrt(2) * b = 1.414 for Laplace and the
calibrated sigma (3.73 for the analytic Gaussian) for Gaussian, so a library adding the wrong
amount of noise stands out. For selection, the mean utility loss max(scores) - score(chosen)
over the timed calls (lower is better; the exponential mechanism's expected loss here is a few
units, see the README).

The NumPy rows use ``numpy.random.Generator`` floating-point samplers: the insecure, naive
baseline (PCG64, and floating-point noise that leaks through its low bits, Mironov 2012).
Libraries that cost microseconds per value are measured on a smaller size and scaled linearly
to the task size; the note says so.
"""

from __future__ import annotations

import math
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks._harness import Table, optional_import, timeit


def _sci(n: int) -> str:
    """``10**5`` -> ``"1e5"`` (task names and notes)."""
    mantissa, exponent = f"{n:.0e}".split("e")
    return f"{mantissa}e{int(exponent)}"


N_NOISE = 10**7  # values in the noise tasks
N_SELECT = 10**5  # candidates in the selection task
N_SLOW = 10**5  # size at which per-value (microseconds per value) libraries are measured
EPSILON = 1.0
DELTA = 1e-5
SENSITIVITY = 1.0
SEED = 20261122  # data and the NumPy baseline only; dpkit rows use secure randomness

LAPLACE = f"laplace {_sci(N_NOISE)}"
GAUSSIAN = f"gaussian {_sci(N_NOISE)}"
SELECT = f"select {_sci(N_SELECT)}"


def analytic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    """Smallest sigma for which Gaussian noise is (epsilon, delta)-DP (Balle & Wang 2018, Thm 8).

    delta(sigma) = Phi(D/(2 s) - e s/D) - exp(e) Phi(-D/(2 s) - e s/D) decreases in sigma;
    bisection to relative precision 1e-12. Kept here, independent of every library measured,
    so the NumPy and OpenDP rows use the same sigma as the analytic calibrations.
    """

    def phi(t: float) -> float:
        return 0.5 * math.erfc(-t / math.sqrt(2.0))

    def delta_of(sigma: float) -> float:
        a = sensitivity / (2.0 * sigma)
        b = epsilon * sigma / sensitivity
        return phi(a - b) - math.exp(epsilon) * phi(-a - b)

    lo, hi = 1e-6 * sensitivity, sensitivity
    while delta_of(hi) > delta:
        hi *= 2.0
    while hi - lo > 1e-12 * hi:
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if delta_of(mid) <= delta else (mid, hi)
    return hi


def _rms_noise(out: Any, x: np.ndarray) -> float:
    diff = np.asarray(out, dtype=np.float64) - x[: np.size(out)]
    return float(np.sqrt(np.mean(diff * diff)))


def _timed_noise(
    table: Table,
    task: str,
    impl: str,
    fn: Callable[[np.ndarray], Any],
    x: np.ndarray,
    *,
    n_target: int,
    repeat: int = 5,
    warmup: int = 1,
    note: str = "",
    peak: bool = False,
) -> None:
    """Time ``fn(x)``; when ``x`` is shorter than the task, scale the time linearly. With
    ``peak``, the note also gives one call's peak memory as a multiple of the input."""
    last: list[Any] = []

    def call() -> None:
        last[:] = [fn(x)]

    seconds = timeit(call, repeat=repeat, warmup=warmup)
    if x.size != n_target:
        factor = n_target / x.size
        seconds *= factor
        scaled = f"on {_sci(x.size)} values, time x{factor:g}"
        note = f"{scaled}; {note}" if note else scaled
    if peak:
        note = f"{note}; peak {_peak(fn, x) / x.nbytes:.2f}x the input"
    table.add(task, impl, seconds, error=_rms_noise(last[0], x), note=note)


def _peak(fn: Callable[[np.ndarray], Any], x: np.ndarray) -> int:
    """Bytes allocated at the peak of one call ``fn(x)`` (``tracemalloc``; its result kept)."""
    tracemalloc.start()
    try:
        fn(x)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _guard(table: Table, task: str, impl: str, body: Callable[[], None]) -> None:
    """Run one row's ``body``; a missing library or a failure becomes an unmeasured row."""
    try:
        body()
    except Exception as exc:  # a competitor's failure is a finding, not a crash
        table.missing(task, impl, exc)


def _per_value(mech_call: Callable[[float], float]) -> Callable[[np.ndarray], np.ndarray]:
    """Apply a one-value-per-call mechanism to every element (the library's only API)."""

    def apply(x: np.ndarray) -> np.ndarray:
        return np.fromiter((mech_call(v) for v in x.tolist()), dtype=np.float64, count=x.size)

    return apply


# --------------------------------------------------------------------------------------------
# laplace 1e7


def bench_laplace(table: Table, x: np.ndarray) -> None:
    b = SENSITIVITY / EPSILON
    small = x[:N_SLOW]

    gen = np.random.default_rng(SEED)
    _timed_noise(
        table,
        LAPLACE,
        "numpy",
        lambda v: v + gen.laplace(0.0, b, size=v.shape),
        x,
        n_target=N_NOISE,
        note="Generator.laplace: insecure floating-point noise",
        peak=True,
    )

    def dpkit_row() -> None:
        from dpkit.mechanisms import Laplace

        mech = Laplace(epsilon=EPSILON, sensitivity=SENSITIVITY)
        _timed_noise(
            table,
            LAPLACE,
            "dpkit",
            lambda v: mech.release(v),
            x,
            n_target=N_NOISE,
            note="exact, secure default rng",
            peak=True,
        )

    _guard(table, LAPLACE, "dpkit", dpkit_row)

    def opendp_row() -> None:
        dp = _opendp()
        space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l1_distance(T=float)
        meas = dp.m.make_laplace(*space, scale=b)
        eps = float(meas.map(SENSITIVITY))
        _timed_noise(
            table,
            LAPLACE,
            "opendp",
            lambda v: meas(v.tolist()),
            small,
            n_target=N_NOISE,
            repeat=3,
            warmup=0,
            note=f"make_laplace, exact; map(1) = eps {eps:g}",
        )

    _guard(table, LAPLACE, "opendp", opendp_row)

    def diffprivlib_row() -> None:
        from diffprivlib.mechanisms import Laplace as DPLLaplace

        mech = DPLLaplace(epsilon=EPSILON, sensitivity=SENSITIVITY)
        _timed_noise(
            table,
            LAPLACE,
            "diffprivlib",
            _per_value(mech.randomise),
            small,
            n_target=N_NOISE,
            repeat=3,
            note="Laplace.randomise, one Python call per value",
        )

    _guard(table, LAPLACE, "diffprivlib", diffprivlib_row)

    def pydp_row() -> None:
        from pydp.algorithms.numerical_mechanisms import LaplaceMechanism

        mech = LaplaceMechanism(epsilon=EPSILON, sensitivity=SENSITIVITY)
        _timed_noise(
            table,
            LAPLACE,
            "pydp",
            _per_value(mech.add_noise),
            small,
            n_target=N_NOISE,
            repeat=3,
            note="LaplaceMechanism.add_noise, one Python call per value",
        )

    _guard(table, LAPLACE, "pydp", pydp_row)

    def pipeline_row() -> None:
        from pipeline_dp.dp_computations import LaplaceMechanism as PLaplace

        mech = PLaplace.create_from_epsilon(EPSILON, SENSITIVITY)
        _timed_noise(
            table,
            LAPLACE,
            "pipeline-dp",
            mech.add_noise,
            small,
            n_target=N_NOISE,
            repeat=3,
            note="add_noise(ndarray): np.vectorize over PyDP",
        )

    _guard(table, LAPLACE, "pipeline-dp", pipeline_row)


# --------------------------------------------------------------------------------------------
# gaussian 1e7


def bench_gaussian(table: Table, x: np.ndarray) -> None:
    sigma = analytic_gaussian_sigma(EPSILON, DELTA, SENSITIVITY)
    small = x[:N_SLOW]

    gen = np.random.default_rng(SEED + 1)
    _timed_noise(
        table,
        GAUSSIAN,
        "numpy",
        lambda v: v + gen.normal(0.0, sigma, size=v.shape),
        x,
        n_target=N_NOISE,
        note=f"Generator.normal, analytic sigma {sigma:.4f}: insecure floating-point noise",
        peak=True,
    )

    def dpkit_row() -> None:
        from dpkit.mechanisms import Gaussian

        mech = Gaussian(
            epsilon=EPSILON, delta=DELTA, sensitivity=SENSITIVITY, calibration="analytic"
        )
        _timed_noise(
            table,
            GAUSSIAN,
            "dpkit",
            lambda v: mech.release(v),
            x,
            n_target=N_NOISE,
            note=f"exact, secure default rng; its .scale is {float(mech.scale):.4f}",
            peak=True,
        )

    _guard(table, GAUSSIAN, "dpkit", dpkit_row)

    def opendp_row() -> None:
        dp = _opendp()
        space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l2_distance(T=float)
        meas = dp.m.make_gaussian(*space, scale=sigma)
        rho = float(meas.map(SENSITIVITY))
        _timed_noise(
            table,
            GAUSSIAN,
            "opendp",
            lambda v: meas(v.tolist()),
            small,
            n_target=N_NOISE,
            repeat=3,
            warmup=0,
            note=f"make_gaussian, exact, same sigma (OpenDP accounts it as rho={rho:.3g} zCDP)",
        )

    _guard(table, GAUSSIAN, "opendp", opendp_row)

    def diffprivlib_row() -> None:
        from diffprivlib.mechanisms import GaussianAnalytic

        mech = GaussianAnalytic(epsilon=EPSILON, delta=DELTA, sensitivity=SENSITIVITY)
        _timed_noise(
            table,
            GAUSSIAN,
            "diffprivlib",
            _per_value(mech.randomise),
            small,
            n_target=N_NOISE,
            repeat=3,
            note="GaussianAnalytic.randomise, one Python call per value",
        )

    _guard(table, GAUSSIAN, "diffprivlib", diffprivlib_row)

    def pydp_row() -> None:
        from pydp.algorithms.numerical_mechanisms import GaussianMechanism

        mech = GaussianMechanism(epsilon=EPSILON, delta=DELTA, sensitivity=SENSITIVITY)
        _timed_noise(
            table,
            GAUSSIAN,
            "pydp",
            _per_value(mech.add_noise),
            small,
            n_target=N_NOISE,
            repeat=3,
            note=f"GaussianMechanism.add_noise (own calibration, sigma {mech.std:.4f})",
        )

    _guard(table, GAUSSIAN, "pydp", pydp_row)


# --------------------------------------------------------------------------------------------
# select 1e5


def _timed_select(
    table: Table,
    impl: str,
    fn: Callable[[], Any],
    scores: np.ndarray,
    *,
    repeat: int = 5,
    warmup: int = 1,
    note: str = "",
) -> None:
    """Time one selection; the error is the mean utility loss over all calls made."""
    chosen: list[int] = []

    def call() -> None:
        chosen.append(int(fn()))

    seconds = timeit(call, repeat=repeat, warmup=warmup)
    best = int(scores.max())
    loss = float(np.mean([best - int(scores[i]) for i in chosen]))
    table.add(SELECT, impl, seconds, error=loss, note=note)


def bench_select(table: Table) -> None:
    data = np.random.default_rng(SEED + 2)
    scores = data.integers(0, N_SELECT, size=N_SELECT)
    candidates = np.arange(N_SELECT)
    # Exponential mechanism weights exp(eps * u / (2 * sensitivity)); the Gumbel-max trick
    # samples it exactly in real arithmetic: argmax(eps * u / (2 s) + Gumbel(0, 1)).
    temperature = EPSILON / (2.0 * SENSITIVITY)

    gen = np.random.default_rng(SEED + 3)
    _timed_select(
        table,
        "numpy",
        lambda: np.argmax(scores * temperature + gen.gumbel(size=scores.shape)),
        scores,
        note="Gumbel-max trick with Generator.gumbel: insecure",
    )

    def dpkit_exponential() -> None:
        from dpkit.mechanisms import Exponential

        mech = Exponential(epsilon=EPSILON, sensitivity=SENSITIVITY)
        _timed_select(
            table,
            "dpkit Exponential",
            lambda: mech.select(candidates, scores),
            scores,
            note="exact, secure default rng",
        )

    _guard(table, SELECT, "dpkit Exponential", dpkit_exponential)

    def dpkit_pf() -> None:
        from dpkit.mechanisms import PermuteAndFlip

        mech = PermuteAndFlip(epsilon=EPSILON, sensitivity=SENSITIVITY)
        _timed_select(
            table,
            "dpkit PermuteAndFlip",
            lambda: mech.select(candidates, scores),
            scores,
            note="exact, secure default rng",
        )

    _guard(table, SELECT, "dpkit PermuteAndFlip", dpkit_pf)

    def dpkit_rnm() -> None:
        from dpkit.mechanisms import ReportNoisyMax

        mech = ReportNoisyMax(epsilon=EPSILON, sensitivity=SENSITIVITY)
        _timed_select(
            table,
            "dpkit ReportNoisyMax",
            lambda: mech.select(candidates, scores),
            scores,
            note="exact, secure default rng",
        )

    _guard(table, SELECT, "dpkit ReportNoisyMax", dpkit_rnm)

    def opendp_rows() -> None:
        dp = _opendp()
        space = dp.vector_domain(dp.atom_domain(T=int)), dp.linf_distance(T=int)
        scale = 2.0 * SENSITIVITY / EPSILON
        score_list = scores.tolist()
        if hasattr(dp.m, "make_noisy_max"):  # OpenDP >= 0.14
            gumbel = dp.m.make_noisy_max(*space, dp.zero_concentrated_divergence(), scale=scale)
            expo = dp.m.make_noisy_max(*space, dp.max_divergence(), scale=scale)
            _timed_select(
                table,
                "opendp gumbel",
                lambda: gumbel(scores.tolist()),
                scores,
                note=(
                    "make_noisy_max(zCDP): Gumbel noise = exponential mechanism; "
                    f"rho {float(gumbel.map(1)):g}; includes tolist()"
                ),
            )
            _timed_select(
                table,
                "opendp exponential",
                lambda: expo(scores.tolist()),
                scores,
                note=(
                    "make_noisy_max(pure): exponential noise = permute-and-flip; "
                    f"eps {float(expo.map(1)):g}; includes tolist()"
                ),
            )
        else:  # OpenDP 0.12-0.13
            gumbel = dp.m.make_report_noisy_max_gumbel(*space, scale=scale, optimize="max")
            _timed_select(
                table,
                "opendp gumbel",
                lambda: gumbel(score_list),
                scores,
                note=f"make_report_noisy_max_gumbel; eps {float(gumbel.map(1)):g}",
            )

    _guard(table, SELECT, "opendp", opendp_rows)

    def diffprivlib_rows() -> None:
        from diffprivlib.mechanisms import Exponential as DPLExponential
        from diffprivlib.mechanisms import PermuteAndFlip as DPLPermuteAndFlip

        utility = scores.tolist()

        def expo() -> int:
            mech = DPLExponential(epsilon=EPSILON, sensitivity=SENSITIVITY, utility=utility)
            return int(mech.randomise())

        _timed_select(
            table,
            "diffprivlib Exponential",
            expo,
            scores,
            note="Exponential(utility=...).randomise(), construction included",
        )

        def pf() -> int:
            mech = DPLPermuteAndFlip(epsilon=EPSILON, sensitivity=SENSITIVITY, utility=utility)
            return int(mech.randomise())

        _timed_select(
            table,
            "diffprivlib PermuteAndFlip",
            pf,
            scores,
            repeat=1,
            warmup=0,
            note="PermuteAndFlip(...).randomise(): Python loop over candidates; one call",
        )

    _guard(table, SELECT, "diffprivlib", diffprivlib_rows)

    def pipeline_row() -> None:
        from pipeline_dp.dp_computations import ExponentialMechanism

        class Score(ExponentialMechanism.ScoringFunction):
            def score(self, k: int) -> float:
                return float(scores[k])

            @property
            def global_sensitivity(self) -> float:
                return SENSITIVITY

            @property
            def is_monotonic(self) -> bool:
                return False

        mech = ExponentialMechanism(Score())
        cand = candidates.tolist()
        with np.errstate(over="raise", invalid="raise"):
            _timed_select(
                table,
                "pipeline-dp",
                lambda: mech.apply(EPSILON, cand),
                scores,
                note="ExponentialMechanism.apply: unnormalised exp(eps*u/2), insecure numpy rng",
            )

    _guard(table, SELECT, "pipeline-dp", pipeline_row)


def _opendp() -> Any:
    dp = optional_import("opendp.prelude")
    if dp is None:
        raise ImportError("opendp is not installed (pip install 'dpkit[bench]')")
    dp.enable_features("contrib")
    return dp


def run(table: Table) -> None:
    """Add the ``laplace``, ``gaussian`` and ``select`` rows to ``table``."""
    x = np.random.default_rng(SEED).uniform(0.0, 100.0, size=N_NOISE)
    bench_laplace(table, x)
    bench_gaussian(table, x)
    bench_select(table)
