"""The result records share one protocol: privacy, relation and read-only details."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import numpy as np
import polars as pl
import pytest

import dpkit as dp
from dpkit.release import Release, Released


def _records() -> dict[str, object]:
    data = np.arange(200, dtype=np.float64)
    session = dp.Session(pl.DataFrame({"x": data}), budget=dp.PureDP(10.0))
    return {
        "Release (mechanism)": dp.Laplace(epsilon=1.0).measure(1.0, rng=1),
        "Release (framework)": dp.inverse_sensitivity(
            data, "median", epsilon=1.0, bounds=(0, 200), rng=1
        ),
        "QuantileRelease": dp.statistics.quantiles(
            data, [0.5], epsilon=1.0, bounds=(0, 200), rng=1
        ),
        "BoundsRelease": dp.statistics.private_bounds(data, epsilon=1.0, rng=1),
        "ContributionBound": dp.statistics.contribution_bound([1, 2, 3] * 50, epsilon=1.0, rng=1),
        "QueryRelease": session.query().agg(dp.count()).measure(epsilon=1.0, rng=1),
    }


@pytest.mark.parametrize("name", list(_records()))
def test_every_result_record_is_released(name: str) -> None:
    record = _records()[name]
    assert isinstance(record, Released)
    assert record.privacy is not None  # type: ignore[attr-defined]
    assert record.relation in ("unbounded", "bounded")  # type: ignore[attr-defined]
    details = record.details  # type: ignore[attr-defined]
    assert isinstance(details, Mapping)
    assert isinstance(details, MappingProxyType)  # read-only


def test_release_has_one_class_under_every_path() -> None:
    from dpkit.mechanisms.release import Release as OldPath

    assert dp.Release is Release
    assert dp.mechanisms.Release is Release
    assert OldPath is Release


def test_a_plain_value_is_not_released() -> None:
    assert not isinstance(1.0, Released)
    assert not isinstance({"privacy": dp.PureDP(1.0)}, Released)
