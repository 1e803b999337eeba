"""The audit's own mutation tests: broken variants must be flagged, correct ones must pass.

Each broken variant has a privacy loss far above its claim (a halved noise scale doubles
epsilon; a float Laplace identifies its input through its low bits; noise scaled to the local
sensitivity releases the exact value on one input; a key held by one person released without
a threshold appears with probability 1 vs 0), so at the stated 95% confidence the audit must
report a lower bound above the claim; the correct counterparts at the same sizes must not.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import dpkit as dp
from dpkit.audit import audit, targets
from dpkit.audit.neighbours import unit_pairs
from dpkit.samplers import as_source

N = 50_000


def _naive_float_laplace(x: float, size: int, rng: object) -> np.ndarray:
    """The textbook floating-point Laplace mechanism, x + b * sign * log(u): Mironov's target."""
    w = as_source(rng).words(2 * size)
    u = ((w[:size] >> np.uint64(11)).astype(np.float64) + 1.0) * 2.0**-53  # uniform in (0, 1]
    sign = np.where((w[size:] >> np.uint64(63)) == 1, 1.0, -1.0)
    return x - sign * np.log(u)


def test_halved_noise_scale_is_a_violation():
    # Laplace at scale 1/2 for sensitivity 1 is 2-DP: the claim of 1 is broken by 1
    lap = dp.Laplace(epsilon=2.0)
    res = audit(
        lambda x, s, rng: lap.sample(x, s, rng=rng),
        0.0,
        1.0,
        claimed=1.0,
        samples=N,
        rng=1,
        progress=False,
    )
    assert res.verdict == "violation" and res.epsilon_lower_bound > 1.5


def test_halved_scale_inside_the_real_laplace_is_a_violation(monkeypatch):
    # the mutation lives in dpkit's own code path: the lattice scale t halved
    from dpkit.mechanisms.laplace import Laplace

    original = Laplace._lattice_scale
    monkeypatch.setattr(
        Laplace, "_lattice_scale", lambda self, d: (original(self, d)[0], original(self, d)[1] / 2)
    )
    res = targets.cases("laplace")[0].run(samples=N, rng=2, progress=False)
    assert res.verdict == "violation"


def test_float_laplace_fails_the_lattice_test():
    res = audit(_naive_float_laplace, 0.0, 1.0, claimed=1.0, samples=N, rng=3, progress=False)
    assert res.verdict == "violation" and res.epsilon_lower_bound > 3
    assert res.lattice is not None and not res.lattice.consistent
    # outputs of input 0 reach cells (finer lowest bits near 0) that input 1's never reach
    assert res.lattice.lowest_bit[0] < res.lattice.lowest_bit[1]
    assert res.lattice.exclusive[0] > 0.1


def test_dpkit_laplace_passes_the_lattice_test():
    lap = dp.Laplace(epsilon=1.0)
    res = audit(
        lambda x, s, rng: lap.sample(x, s, rng=rng),
        0.0,
        1.0,
        claimed=1.0,
        samples=N,
        rng=3,
        progress=False,
    )
    assert res.verdict == "pass" and res.lattice is not None and res.lattice.consistent
    assert res.lattice.lowest_bit[0] == res.lattice.lowest_bit[1]


def _local_sensitivity_median(x: np.ndarray, size: int, rng: object) -> np.ndarray:
    """Broken framework: Laplace noise scaled to the median's *local* sensitivity."""
    from dpkit.sensitivity import local

    ls = local("median", x, relation="unbounded", bounds=(0, 1))
    lap = dp.Laplace(epsilon=1.0, sensitivity=max(float(ls), 1e-9))
    return lap.sample(float(np.median(x)), size, rng=rng)


def test_noise_from_local_sensitivity_is_a_violation():
    # 7 zeros and 5 ones: local sensitivity 0 (no single add/remove moves the median), so the
    # release is the exact 0; without one zero it is 0.5, noise at scale 0.5: epsilon infinite
    x0 = np.array([0.0] * 7 + [1.0] * 5)
    x1 = np.array([0.0] * 6 + [1.0] * 5)
    res = audit(_local_sensitivity_median, x0, x1, claimed=1.0, samples=N, rng=4, progress=False)
    assert res.verdict == "violation" and res.epsilon_lower_bound > 3


def test_a_framework_on_the_same_pair_passes():
    x0 = np.array([0.0] * 7 + [1.0] * 5)
    x1 = np.array([0.0] * 6 + [1.0] * 5)
    from dpkit.frameworks.smooth import smooth_sensitivity_sample

    def smooth(x: np.ndarray, size: int, rng: object) -> np.ndarray:
        return smooth_sensitivity_sample(
            x, "median", epsilon=1.0, delta=1e-5, bounds=(0, 1), size=size, rng=rng
        )

    res = audit(smooth, x0, x1, claimed=dp.ApproxDP(1.0, 1e-5), samples=N, rng=4, progress=False)
    assert res.verdict == "pass"


# ----------------------------------------------------------------------------- group-by

PEOPLE = pl.DataFrame(
    {
        "id": [1, 1, 2, 2, 3, 3, 4, 5, 5, 6],
        "city": ["a", "a", "a", "b", "b", "b", "a", "b", "a", "c"],
    }
)


def _group_by_count(threshold: float | None):
    """Per-city count (rows bounded to 1 per person and city) + geometric noise of scale 1/eps;
    a city is released when its noisy count passes ``threshold`` (None: always, the bug)."""
    geo = dp.Geometric(epsilon=1.0)

    def release(frame: pl.DataFrame, size: int, rng: object) -> pl.DataFrame:
        counts = frame.unique(["id", "city"]).group_by("city").len().sort("city")
        noisy = geo.sample(counts["len"].to_numpy(), size, rng=rng)  # (size, cities)
        long = pl.DataFrame(
            {
                "draw": np.repeat(np.arange(size), counts.height),
                "city": np.tile(counts["city"].to_numpy(), size),
                "count": noisy.ravel(),
            }
        )
        return long if threshold is None else long.filter(pl.col("count") >= threshold)

    return release


def test_group_by_releasing_a_lone_persons_key_is_a_violation():
    pair = unit_pairs(PEOPLE, "id", group_by="city")[1]  # person 6, alone in city c
    assert "alone in group city=c" in pair.description
    res = audit(
        _group_by_count(None),
        pair.x0,
        pair.x1,
        claimed=dp.ApproxDP(1.0, 1e-5),
        samples=5_000,
        rng=5,
        progress=False,
    )
    assert res.verdict == "violation"
    assert "'c'" in res.event or "keys released" in res.event  # city c's presence or count


def test_group_by_with_a_threshold_passes():
    # geometric noise of scale 1 on a count of 1 passes T = 1 + ln(1 / (2 delta)) (+1 margin)
    # with probability below delta: the lone person's key is (epsilon, delta)-private
    pair = unit_pairs(PEOPLE, "id", group_by="city")[1]
    t = 2 + np.log(1 / (2 * 1e-5))
    res = audit(
        _group_by_count(t),
        pair.x0,
        pair.x1,
        claimed=dp.ApproxDP(1.0, 1e-5),
        samples=5_000,
        rng=5,
        progress=False,
    )
    assert res.verdict == "pass"


@pytest.mark.parametrize("engine", ["polars", "pandas"])
def test_unit_pairs_on_polars_and_pandas(engine):
    import pandas as pd

    frame = PEOPLE if engine == "polars" else pd.DataFrame(PEOPLE.to_dict(as_series=False))
    pairs = unit_pairs(frame, "id", group_by="city")
    assert [len(p.x1) for p in pairs] == [8, 9]  # person 1 (2 rows) and person 6 (1 row)
    assert type(pairs[0].x1) is type(frame)
