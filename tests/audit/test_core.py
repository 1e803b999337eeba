"""The audit's own statistics: the Clopper-Pearson bound with delta subtracted, events chosen
on the selection half only, and features that do not depend on how draws were batched; and its
limits: the confidence range, the memory guard and the time budget (in fake time)."""

from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction

import numpy as np
import polars as pl
import pytest
from scipy.stats import beta, binom

import dpkit as dp
from dpkit.audit import AuditResult, audit, core
from dpkit.audit.core import _bound
from dpkit.errors import ParameterError
from dpkit.samplers import as_source, bernoulli


@pytest.mark.parametrize(
    ("k_fav", "k_other", "n", "delta", "confidence"),
    [
        (5_000, 1_000, 20_000, 0.0, 0.95),
        (5_000, 1_000, 20_000, 0.1, 0.95),  # delta takes a third of the favoured probability
        (300, 0, 50_000, 1e-3, 0.9),
        (40, 5, 1_000, 0.0, 0.99),
        (50, 49, 100, 0.2, 0.95),  # (p_low - delta) / p_high below 1: bound 0
        (20, 0, 1_000, 0.05, 0.95),  # p_low below delta: no evidence at all, bound 0
    ],
)
def test_bound_is_clopper_pearson_at_root_confidence_minus_delta(
    k_fav: int, k_other: int, n: int, delta: float, confidence: float
) -> None:
    # the oracle: one-sided exact Clopper-Pearson bounds from SciPy's beta quantiles, each at
    # level sqrt(confidence) (two independent samples), and log((p_low - delta) / p_high)
    each = math.sqrt(confidence)
    p_low = beta.ppf(1 - each, k_fav, n - k_fav + 1) if k_fav else 0.0
    p_high = beta.ppf(each, k_other + 1, n - k_other)
    expected = max(math.log((p_low - delta) / p_high), 0.0) if p_low > delta else 0.0
    lower, estimate = _bound(k_fav, k_other, n, delta, confidence)
    # conservative by the documented relative 1e-7 widening of each bound, no more
    assert expected - 1e-5 <= lower <= expected + 1e-12
    p_fav, p_other = k_fav / n, k_other / n
    plug_in = math.log((p_fav - delta) / p_other) if p_other and p_fav > delta else None
    if plug_in is not None:
        assert estimate == pytest.approx(max(plug_in, 0.0), rel=1e-12)


def _leak(rate: float):
    """A function that is exactly (0, rate)-DP: on input 0 it outputs 1 with probability
    ``rate`` (otherwise 0); on input 1 it always outputs 0."""

    def func(x: float, size: int, rng: object) -> np.ndarray:
        hit = bernoulli(rate, size, as_source(rng)) if x == 0 else np.zeros(size, dtype=bool)
        return hit.astype(np.int64)

    return func


def test_delta_is_subtracted_from_the_favoured_probability() -> None:
    # (0, 0.05)-DP claimed as ApproxDP(0.1, 0.05): true. Without the delta subtraction the
    # event {1} would give log(0.05 / (3 / 25,000)) > 6.
    res = audit(
        _leak(0.05), 0, 1, claimed=dp.ApproxDP(0.1, 0.05), samples=50_000, rng=1, progress=False
    )
    assert res.verdict == "pass" and res.epsilon_lower_bound == 0.0
    # ... and delta is not a free pass: leaking with probability 0.1 against a claimed 0.05
    # leaves p_fav - delta = 0.05 against p_other = 0, an unbounded privacy loss
    res = audit(
        _leak(0.1), 0, 1, claimed=dp.ApproxDP(0.1, 0.05), samples=50_000, rng=1, progress=False
    )
    assert res.verdict == "violation" and res.epsilon_lower_bound > 5


def test_events_are_chosen_on_the_selection_half_only() -> None:
    """A mechanism that ignores its input has epsilon 0. Each audit at 95% confidence flags
    it with probability at most 5%, so over 40 seeded audits at a claim of 0.01 the number of
    violations is below Bin(40, 0.05) stochastically: 7 or more has probability 0.009. An
    audit that picked the event on the draws it evaluates it on (the best of hundreds of
    thresholds, scored on the same draws) reports 14 of 40 here."""
    lap = dp.Laplace(epsilon=1.0)

    def ignores_input(x: float, size: int, rng: object) -> np.ndarray:
        return lap.sample(0.0, size, rng=rng)

    flagged = [
        audit(ignores_input, 0.0, 1.0, claimed=0.01, samples=5_000, rng=s, progress=False).verdict
        for s in range(40)
    ].count("violation")
    assert binom.sf(6, 40, 0.05) < 0.01  # the tolerance, from the 5% per audit
    assert flagged <= 6


#: a rare outcome: about one in the last batch (draws 21,504 to 60,000) of each input
RARE = Fraction(1, 40_000)
#: seeds where one input's last batch holds the rare outcome and the other's does not (the
#: audit before batch-independent labels reported a violation at each of them)
SPLIT_SEEDS = [2, 3, 4, 7]


@pytest.mark.parametrize("seed", SPLIT_SEEDS)
def test_rare_refusals_are_labelled_in_every_batch(seed: int) -> None:
    """Draws come in batches of growing size (1,024, 4,096, 16,384, then the rest); a batch
    with no refusal still says its draws were not refused. Both inputs refuse with
    probability 1/40,000 (epsilon 0): were the 'not refused' label missing from batches
    without a refusal, the event 'not refused' would separate the inputs by whole batches."""

    def rare(x: float, size: int, rng: object) -> np.ndarray:
        out = np.zeros(size)
        out[bernoulli(RARE, size, as_source(rng))] = np.nan
        return out

    res = audit(rare, 0.0, 1.0, claimed=0.1, samples=60_000, rng=seed, progress=False)
    assert res.verdict == "pass", res


@pytest.mark.parametrize("seed", SPLIT_SEEDS)
def test_a_rarely_released_key_is_absent_in_batches_without_it(seed: int) -> None:
    """A frame function releasing key 'k' with probability 1/40,000 on both inputs (epsilon
    0): the batches in which no draw released it must still say 'k' was absent."""

    def frames(x: float, size: int, rng: object) -> pl.DataFrame:
        hit = np.flatnonzero(bernoulli(RARE, size, as_source(rng)))
        draws = np.concatenate([np.arange(size), hit])
        keys = ["common"] * size + ["k"] * hit.size
        return pl.DataFrame({"draw": draws, "key": keys, "value": np.ones(draws.size)})

    res = audit(frames, 0.0, 1.0, claimed=0.1, samples=60_000, rng=seed, progress=False)
    assert res.verdict == "pass", res


# ----------------------------------------------------------------------------- limits


def _never(x: float, size: int, rng: object) -> np.ndarray:
    raise AssertionError("the audit drew outputs")


@pytest.mark.parametrize("confidence", [1e-300, 0.0, 0.25, 0.49, 1.0, 1.5])
def test_confidence_outside_one_half_to_one_is_refused_before_any_draw(confidence: float):
    """Below 1/2 the 'lower bound' is more often false than true: a correct mechanism would
    be flagged more often than not (and 1e-300 used to end in a division by zero)."""
    with pytest.raises(ParameterError, match=r"`confidence` must be a number in \[0\.5, 1\)"):
        audit(_never, 0.0, 1.0, claimed=1.0, confidence=confidence, samples=100, progress=False)


def test_confidence_one_half_is_accepted() -> None:
    lap = dp.Laplace(epsilon=1.0)
    res = audit(
        lambda x, size, rng: lap.sample(x, size, rng=rng),
        0.0,
        1.0,
        claimed=1.0,
        confidence=0.5,
        samples=2_000,
        rng=1,
        progress=False,
    )
    assert res.confidence == 0.5 and res.verdict == "pass"


def test_samples_beyond_max_memory_are_refused_before_any_draw() -> None:
    """At least 192 bytes per draw (12 times a float64 for each of the two inputs): 2**30
    bytes allow 5,592,405 draws, the default 4 GiB four times that, and 10**8 draws neither."""
    with pytest.raises(ParameterError, match=r"max_memory.* allows at most 5,592,405 draws"):
        audit(_never, 0.0, 1.0, claimed=1.0, samples=10**8, max_memory=2**30, progress=False)
    with pytest.raises(ParameterError, match=r"`samples` 100,000,000 would need about 18,311 MiB"):
        audit(_never, 0.0, 1.0, claimed=1.0, samples=10**8, progress=False)


def _wide(drawn: list[int]):
    """Outputs of 16 numbers (17 features with their sum): 17 times a number's memory."""
    lap = dp.Laplace(epsilon=1.0)

    def func(x: float, size: int, rng: object) -> np.ndarray:
        drawn.append(size)
        return np.repeat(lap.sample(x, size, rng=rng)[:, None], 16, axis=1)

    return func


def test_wide_outputs_are_measured_on_the_first_batch() -> None:
    """50,000 draws fit 10**8 bytes at 192 bytes per draw, not at 17 times that (3,264 bytes:
    12 x 17 float64 x 2 inputs): refused after the first batch of each input."""
    drawn: list[int] = []
    with pytest.raises(ParameterError, match="measured on the first 1,024 draws of each input"):
        audit(_wide(drawn), 0.0, 1.0, claimed=1.0, samples=50_000, max_memory=10**8, progress=False)
    assert drawn == [1024, 1024]
    # without `samples` the audit draws what fits instead: 10**8 // 3,264 per input
    drawn.clear()
    res = audit(_wide(drawn), 0.0, 1.0, claimed=1.0, max_memory=10**8, rng=1, progress=False)
    assert res.samples == sum(drawn) // 2 == 10**8 // 3_264 and not res.time_limited


class _Clock:
    """A fake clock for the time budget: the test says how long each piece of work took."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_sampling_leaves_the_analysis_its_share_of_the_time_budget(monkeypatch) -> None:
    """In fake time a draw costs 1 us per input and the analysis 20 us per draw in each event
    search (two: main and lattice), 10x the drawing. Drawing for half of a 1 s budget
    (about 250,000 draws) would leave some 10 s of analysis. The audit times its analysis on
    the first draws and stops drawing where the rest would not fit: the whole audit keeps to
    the budget and reports that it was time limited."""
    clock = _Clock()
    monkeypatch.setattr(core, "_clock", clock)
    select = core.select_event

    def slow_select(f0: list, f1: list, delta: float, z: float):
        clock.now += 20e-6 * max((f.values.size for f in f0 + f1), default=0) * 2
        return select(f0, f1, delta, z)

    monkeypatch.setattr(core, "select_event", slow_select)
    lap = dp.Laplace(epsilon=1.0)

    def func(x: float, size: int, rng: object) -> np.ndarray:
        clock.now += 1e-6 * size
        return lap.sample(x, size, rng=rng)

    res = audit(
        func, 0.0, 1.0, claimed=1.0, samples=1_000_000, time_budget=1.0, rng=1, progress=False
    )
    assert res.time_limited and res.samples < 1_000_000
    assert res.seconds <= 1.0  # fake seconds: drawing, the timing run and the analysis


def test_timing_the_analysis_changes_no_result(monkeypatch) -> None:
    """The analysis is timed on the draws so far (at 5,120 per input here) and never reads
    the random source: the audit gives what it gives without the timing run."""
    lap = dp.Laplace(epsilon=1.0)
    runs: list[int] = []
    analyse = core._analyse

    def counted(*args):
        runs.append(args[0].n)
        return analyse(*args)

    monkeypatch.setattr(core, "_analyse", counted)

    def run() -> AuditResult:
        res = audit(
            lambda x, size, rng: lap.sample(x, size, rng=rng),
            0.0,
            1.0,
            claimed=1.0,
            samples=20_000,
            rng=3,
            progress=False,
        )
        return replace(res, seconds=0.0)

    timed = run()
    monkeypatch.setattr(core, "_PILOT", 10**9)
    untimed = run()
    assert runs == [5_120, 20_000, 20_000]
    assert timed == untimed


# ------------------------------------------------------------ how the function is called


def test_every_calling_form_is_read_from_the_signature_and_reported() -> None:
    """A plain one-argument function, func(x, rng), the keyword-only rng of a mechanism's
    release, the batched form and a mechanism's sample(value, size, *, rng): each is
    called the way it is written (never handed a bit source it does not take), the result
    names the form and its text says whether a seeded rng reaches the function."""
    lap = dp.Laplace(epsilon=1.0)
    seen: dict[str, int] = {}

    def one(v):  # type: ignore[no-untyped-def]
        seen["one"] = seen.get("one", 0) + 1
        return lap.release(v)

    cases = [
        (one, "func(x)"),
        (lambda v, rng: lap.release(v, rng=rng), "func(x, rng)"),
        (lap.release, "func(x, rng=rng)"),
        (lambda v, size, rng: lap.sample(v, size, rng=rng), "func(x, size, rng)"),
        (lap.sample, "func(x, size, rng=rng)"),
    ]
    for func, form in cases:
        res = audit(func, 0.0, 1.0, claimed=1.0, samples=200, rng=3)
        assert (res.form, res.form_source) == (form, "signature")
        assert f"called as {form} (from its signature)" in str(res)
        assert ("does not make it reproducible" in str(res)) == (form == "func(x)")
        assert res.as_dict()["form"] == form
    assert seen["one"] == 2 * 200  # one call per draw, on each input
    # the forms that take the audit's bit source are reproducible from a seed
    a, b = (audit(lap.release, 0.0, 1.0, claimed=1.0, samples=200, rng=5) for _ in range(2))
    assert (a.event, a.counts) == (b.event, b.counts)


def test_forms_that_cannot_be_called_are_refused_before_any_draw() -> None:
    calls: list[object] = []

    def record(*args: object) -> float:
        calls.append(args)
        return 0.0

    with pytest.raises(TypeError, match="first positional parameter"):
        audit(lambda: 0.0, 0.0, 1.0, claimed=1.0, samples=50)
    with pytest.raises(TypeError, match="requires 4 positional parameters"):
        audit(lambda a, b, c, d: 0.0, 0.0, 1.0, claimed=1.0, samples=50)
    with pytest.raises(TypeError, match="takes 1 positional parameter"):
        audit(lambda v: 0.0, 0.0, 1.0, claimed=1.0, samples=50, batched=True)
    assert core.calling_form(lambda v, scale=1.0: 0.0).form == "func(x)"  # not given an rng
    assert core.calling_form(lambda v, rng=None: 0.0).form == "func(x, rng)"
    assert core.calling_form(record).form == "func(x, rng)"  # *args: as before
    assert core.calling_form(lambda v, rng: 0.0, batched=False).source == "batched=False"
    assert calls == []


def test_a_function_without_a_signature_is_assumed_per_draw_and_said_so() -> None:
    """A builtin has no readable signature: func(x, rng) is assumed (the result says so),
    and a failing call says the form was a guess and how to choose another."""

    class Opaque:
        __signature__ = property(lambda self: (_ for _ in ()).throw(ValueError("none")))

        def __call__(self, x: float, rng: object = None) -> float:
            return x

    res = audit(Opaque(), 0.0, 1.0, claimed=1.0, samples=50)
    assert (res.form, res.form_source) == ("func(x, rng)", "assumed")
    assert "assumed: its signature cannot be read" in str(res)

    class OpaqueOne:
        __signature__ = property(lambda self: (_ for _ in ()).throw(ValueError("none")))

        def __call__(self, x: float) -> float:
            return x

    with pytest.raises(TypeError, match="this form was assumed: wrap the function"):
        audit(OpaqueOne(), 0.0, 1.0, claimed=1.0, samples=50)
