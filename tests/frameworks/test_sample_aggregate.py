"""Sample-and-aggregate: exact chunk count, uniform partition, noise scale, errors."""

from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

import dpkit
from dpkit.frameworks import chunk_outputs, sample_and_aggregate
from dpkit.frameworks.sample_aggregate import sample_and_aggregate_sample
from dpkit.samplers.heavy_tailed import rounded_laplace


@pytest.mark.parametrize(("n", "chunks"), [(10, 3), (32561, 600), (7, 7), (5, 1), (601, 600)])
def test_uses_exactly_chunks_parts_covering_every_record_once(n: int, chunks: int) -> None:
    seen: list[np.ndarray] = []

    def record(part: np.ndarray) -> float:
        seen.append(part.copy())
        return float(part.size)

    rel = sample_and_aggregate(
        np.arange(n, dtype=float),
        record,
        chunks=chunks,
        output_bounds=(0, n),
        epsilon=1.0,
        rng=0,
    )
    assert len(seen) == chunks
    assert rel.details["chunks"] == chunks
    allrec = np.sort(np.concatenate(seen))
    assert np.array_equal(allrec, np.arange(n, dtype=float))
    sizes = sorted(p.size for p in seen)
    assert sizes[-1] - sizes[0] <= 1 and sizes[0] >= 1
    assert rel.details["chunk_sizes"] == (sizes[0], sizes[-1])
    # the noise is calibrated to the parts actually used
    assert rel.details["sensitivity"] == pytest.approx(n / chunks)


def test_partition_is_uniformly_random() -> None:
    # 4 records into 2 parts of 2: three pairings, each with probability 1/3
    counts: Counter[frozenset] = Counter()
    for seed in range(1500):
        parts: list[frozenset] = []

        def grab(part: np.ndarray, parts: list = parts) -> float:
            parts.append(frozenset(part.tolist()))
            return 0.0

        chunk_outputs(np.arange(4.0), grab, chunks=2, output_bounds=(0, 1), rng=seed)
        counts[frozenset(parts)] += 1
    obs = np.array(list(counts.values()))
    assert len(counts) == 3
    # chi-square, 2 dof, level 1e-3
    assert stats.chisquare(obs).pvalue > 1e-3


def test_fast_string_path_equals_callable_path() -> None:
    x = np.random.default_rng(0).normal(40, 10, 1003)
    a, _ = chunk_outputs(x, "mean", chunks=17, output_bounds=(20, 60), rng=5)
    b, _ = chunk_outputs(x, np.mean, chunks=17, output_bounds=(20, 60), rng=5)
    assert np.allclose(np.sort(a), np.sort(b))
    c, _ = chunk_outputs(x, "median", chunks=17, output_bounds=(20, 60), rng=5)
    d, _ = chunk_outputs(x, np.median, chunks=17, output_bounds=(20, 60), rng=5)
    assert np.allclose(np.sort(c), np.sort(d))


def test_outputs_are_clipped_and_nonfinite_outputs_neutralised() -> None:
    outs, bad = chunk_outputs(
        np.arange(10.0),
        lambda p: np.nan if p.min() == 0 else 1e9,
        chunks=5,
        output_bounds=(0, 10),
        rng=0,
    )
    assert bad == 1
    assert sorted(outs.tolist()) == [5.0, 10.0, 10.0, 10.0, 10.0]


def test_noise_is_laplace_with_scale_range_over_chunks() -> None:
    # all parts give the same output, so the release is that value plus the noise alone
    x = np.full(200, 3.0)
    vals = np.array(
        [
            sample_and_aggregate(
                x, np.mean, chunks=20, output_bounds=(0, 10), epsilon=0.5, rng=s
            ).value
            for s in range(400)
        ]
    )
    scale = (10 / 20) / 0.5
    # KS against Laplace(3, scale) at level 1e-3; a scale off by 25% fails at n = 400
    assert stats.kstest(vals, "laplace", args=(3.0, scale)).pvalue > 1e-3
    rel = sample_and_aggregate(x, np.mean, chunks=20, output_bounds=(0, 10), epsilon=0.5)
    assert rel.scale == pytest.approx(scale, rel=1e-8)
    assert rel.privacy == dpkit.PureDP(0.5)


def _rounded_laplace_logpmf(h: float, k: np.ndarray) -> np.ndarray:
    """``log P[round(X / g) = k]`` for ``X ~ Laplace(b)``, ``h = g / b``, in closed form: the
    Laplace mass of ``[(k - 1/2) g, (k + 1/2) g)`` is ``1 - e**(-h/2)`` at 0 and
    ``e**(-(|k| - 1/2) h) (1 - e**-h) / 2`` elsewhere."""
    rest = math.log(0.5) - (np.abs(k) - 0.5) * h + math.log(-math.expm1(-h))
    return np.where(k == 0, math.log(-math.expm1(-h / 2)), rest)


def test_neighbouring_datasets_privacy_loss_within_epsilon() -> None:
    # x and x' differ in one record whose part output moves from 0 to 10; with 5 parts (one
    # record each, so the partition cannot change the outputs) the mean moves by 2, the
    # sensitivity (upper - lower) / chunks. Computed here, not read from the release:
    eps, lower, upper, chunks = 1.0, 0.0, 10.0, 5
    sens = (upper - lower) / chunks
    g = 2.0 ** (math.floor(math.log2(sens / eps)) - 30)  # the frameworks' output grid
    b = (sens + g) / eps  # the mean rounded to g moves by at most sens + g
    x = np.zeros(5)
    y = x.copy()
    y[0] = 10.0
    # 1. coupling: each release is the grid-rounded mean plus K g, K from dpkit's exact
    # rounded-Laplace sampler at ratio b / g, drawn after the partition's permutation from
    # the same bits. The draws are ~1e9 grid units: a sensitivity 10% low, an epsilon 10%
    # high or a dropped grid charge changes them all.
    for data, mean in ((x, 0.0), (y, 2.0)):
        for seed in range(20):
            rel = sample_and_aggregate(
                data,
                np.mean,
                chunks=chunks,
                output_bounds=(lower, upper),
                epsilon=eps,
                rng=seed,
                clamp=False,  # the noise law itself (clamping is post-processing)
            )
            source = dpkit.samplers.SeededSource(seed)
            dpkit.samplers.permutation(data.size, source)
            k = rounded_laplace(Fraction(b) / Fraction(g), 1, source)[0]
            assert rel.value == (round(mean / g) + int(k)) * g
            # and the scale exactly (a grid charge of 2**-30 relative is invisible in draws)
            assert rel.scale == float((Fraction(sens) + Fraction(g)) / Fraction(eps))
    # 2. that law is epsilon-DP on this pair, and nearly tight: the log ratio of the two
    # output laws is at most shift / b = 2 / (2 + g) < epsilon everywhere, reached in the tails
    shift = round(sens / g)
    ks = np.arange(-40, 41) * round(b / g) // 4
    ratio = _rounded_laplace_logpmf(g / b, ks) - _rounded_laplace_logpmf(g / b, ks - shift)
    assert 0.99 * eps < np.abs(ratio).max() <= eps
    # 3. empirically too: 1200 draws each, bins of mass >= 0.05 have log-ratio standard
    # error <= sqrt(2 / 60) = 0.18; allow 3 of them
    args = dict(chunks=5, output_bounds=(0, 10), epsilon=eps, clamp=False)
    a = [sample_and_aggregate(x, np.mean, **args, rng=s).value for s in range(1200)]
    c = [sample_and_aggregate(y, np.mean, **args, rng=10_000 + s).value for s in range(1200)]
    edges = np.linspace(-4, 6, 11)
    ha = np.histogram(a, edges)[0] / 1200
    hc = np.histogram(c, edges)[0] / 1200
    keep = (ha >= 0.05) & (hc >= 0.05)
    assert keep.sum() >= 3
    assert np.abs(np.log(ha[keep] / hc[keep])).max() <= eps + 3 * math.sqrt(2 / 60)
    assert abs(np.mean(c) - np.mean(a) - 2.0) < 0.3  # the shift is visible


def test_median_aggregator_and_accountant() -> None:
    acct = dpkit.Accountant(dpkit.PureDP(10.0), relation="bounded")  # replace-one guarantee
    x = np.random.default_rng(1).normal(50, 5, 2000)
    rel = sample_and_aggregate(
        x,
        np.mean,
        chunks=100,
        output_bounds=(0, 100),
        epsilon=1.0,
        aggregator="median",
        rng=3,
        accountant=acct,
    )
    assert [(s.cost, s.label) for s in acct.history] == [
        (dpkit.PureDP(1.0), "sample_and_aggregate")
    ]
    assert abs(rel.value - 50) < 3


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"chunks": 11}, dpkit.ParameterError, "chunks"),
        ({"chunks": 0}, dpkit.ParameterError, "chunks"),
        ({"chunks": 2.5}, TypeError, "chunks"),
        ({"output_bounds": (80, 20)}, dpkit.ParameterError, "lower < upper"),
        ({"output_bounds": None}, dpkit.ParameterError, "output_bounds"),
        ({"epsilon": -1}, dpkit.ParameterError, "epsilon"),
        ({"data": [1.0, np.nan] * 5}, dpkit.ParameterError, "NaN"),
        ({"data": []}, dpkit.ParameterError, "empty"),
        ({"aggregator": "sum"}, dpkit.ParameterError, "aggregator"),
        ({"func": 3}, TypeError, "callable"),
    ],
)
def test_bad_input_gets_a_clear_error(kwargs: dict, exc: type, match: str) -> None:
    args = {
        "data": np.arange(10.0),
        "func": np.mean,
        "chunks": 2,
        "output_bounds": (0, 10),
        "epsilon": 1.0,
    }
    args.update(kwargs)
    with pytest.raises(exc, match=match):
        sample_and_aggregate(**args)


# D04: object and string arrays were not validated: strings parsed as numbers, None and inf
# accepted inside object arrays, and an unparseable string or a huge int failed after the
# spend with a message quoting the record.
NON_NUMERIC = {
    "numeric strings": ["1", "2", "3", "4"] * 10,
    "unparseable string": np.array(["1.0", "123456.789", "abc"] * 10),
    "bytes": np.array([b"1", b"2"] * 10),
    "None in an object array": np.array([1.0, None, 3.0, 4.0] * 10, dtype=object),
    "inf in an object array": np.array([1.0, float("inf"), 3.0, 4.0] * 10, dtype=object),
    "nan in an object array": np.array([1.0, float("nan"), 3.0, 4.0] * 10, dtype=object),
    "int too large for a float": [10**400, 1, 2, 3] * 10,
    "string in an object array": np.array([1.0, "987654.321", 3.0] * 10, dtype=object),
    "bool in an object array": np.array([1.0, True, 3.0] * 10, dtype=object),
}


@pytest.mark.parametrize("func", ["mean", "median", np.mean])
@pytest.mark.parametrize("aggregator", ["mean", "median"])
@pytest.mark.parametrize("case", sorted(NON_NUMERIC))
def test_non_numeric_records_are_refused_before_the_spend(
    case: str, aggregator: str, func: object
) -> None:
    data = NON_NUMERIC[case]
    acct = dpkit.Accountant(dpkit.PureDP(5.0), relation="bounded")
    with pytest.raises((TypeError, dpkit.ParameterError)) as info:
        sample_and_aggregate(
            data,
            func,  # type: ignore[arg-type]
            chunks=2,
            output_bounds=(0.0, 100.0),
            epsilon=1.0,
            aggregator=aggregator,
            rng=1,
            accountant=acct,
        )
    assert acct.history == ()
    assert info.value.__class__ in (TypeError, dpkit.ParameterError)
    text = str(info.value)
    assert text.startswith("sample_and_aggregate: `data`")
    for value in ("abc", "123456", "987654", "10000000000"):
        assert value not in text  # never a record's value
    with pytest.raises((TypeError, dpkit.ParameterError)):
        chunk_outputs(data, func, chunks=2, output_bounds=(0.0, 100.0), rng=1)  # type: ignore[arg-type]
    with pytest.raises((TypeError, dpkit.ParameterError)):
        sample_and_aggregate_sample(
            data,
            func,
            chunks=2,
            output_bounds=(0.0, 100.0),
            epsilon=1.0,
            rng=1,  # type: ignore[arg-type]
        )


def test_nonfinite_object_arrays_are_refused_like_float_arrays() -> None:
    args = {"chunks": 2, "output_bounds": (0.0, 100.0), "epsilon": 1.0, "rng": 1}
    for bad in (None, float("nan"), float("inf"), 10**400):
        with pytest.raises(dpkit.ParameterError, match="must be finite; found 10 NaN"):
            sample_and_aggregate(np.array([1.0, bad, 3.0, 4.0] * 10, dtype=object), "mean", **args)
    with pytest.raises(dpkit.ParameterError, match="must be finite; found 10 NaN"):
        sample_and_aggregate(np.array([1.0, np.nan, 3.0, 4.0] * 10), "mean", **args)


def test_object_arrays_of_numbers_release_like_the_float_array() -> None:
    x = np.arange(40.0)
    as_objects = np.array(
        [int(v) if i % 2 else Fraction(int(v)) for i, v in enumerate(x)], dtype=object
    )
    for func in ("mean", "median", np.mean):
        for aggregator in ("mean", "median"):
            args = {
                "chunks": 4,
                "output_bounds": (0.0, 40.0),
                "epsilon": 1.0,
                "aggregator": aggregator,
                "rng": 7,
            }
            a = sample_and_aggregate(x, func, **args)  # type: ignore[arg-type]
            b = sample_and_aggregate(as_objects, func, **args)  # type: ignore[arg-type]
            assert a.value == b.value


def test_structured_records_with_a_string_func_are_refused_before_the_spend() -> None:
    recs = np.array([(1, 2.0)] * 10, dtype=[("a", "i4"), ("b", "f8")])
    acct = dpkit.Accountant(dpkit.PureDP(5.0), relation="bounded")
    with pytest.raises(TypeError, match="needs 1-D numeric data"):
        sample_and_aggregate(
            recs, "mean", chunks=2, output_bounds=(0, 10), epsilon=1.0, rng=1, accountant=acct
        )
    assert acct.history == ()
    # a callable that reads the fields still works on records
    rel = sample_and_aggregate(
        recs, lambda p: p["b"].mean(), chunks=2, output_bounds=(0, 10), epsilon=1.0, rng=1
    )
    assert rel.details["nonfinite_outputs"] == 0
