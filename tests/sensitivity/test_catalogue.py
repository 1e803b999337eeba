"""The sensitivity catalogue: values equal NumPy's; names and callables resolved; validation."""

from __future__ import annotations

import numpy as np
import pytest

from dpkit import ParameterError, queries


def test_catalogue_values_equal_numpy() -> None:
    rng = np.random.default_rng(2)
    x = rng.normal(size=101)
    assert queries.count(x) == 101
    assert queries.sum(x) == pytest.approx(x.sum())
    assert queries.mean(x) == pytest.approx(x.mean())
    assert queries.median(x) == np.median(x)
    assert queries.var(x) == pytest.approx(x.var())
    assert queries.std(x) == pytest.approx(x.std())
    assert queries.percentile(37.5)(x) == pytest.approx(np.percentile(x, 37.5))


def test_batch_rows_equal_rowwise() -> None:
    rng = np.random.default_rng(3)
    rows = rng.integers(0, 9, size=(20, 4)).astype(float)
    for q in (*queries.CATALOGUE.values(), queries.percentile(90), queries.histogram([0, 4, 9])):
        got = q.evaluate_rows(rows)
        want = np.stack([np.asarray(q(r)) for r in rows])
        np.testing.assert_allclose(got, want)


def test_resolve() -> None:
    assert queries.resolve("Median") is queries.median
    assert queries.resolve(queries.mean) is queries.mean
    assert queries.resolve("p90").q == pytest.approx(0.9)
    assert queries.resolve("percentile:50") is queries.median
    q = queries.resolve(np.max)
    assert q.kind == "custom" and q.min_size == 1
    with pytest.raises(ParameterError, match="unknown query 'average'"):
        queries.resolve("average")
    with pytest.raises(TypeError, match=r"must be a dpkit\.queries Statistic"):
        queries.resolve(3)


def test_empty_and_validation() -> None:
    assert queries.count([]) == 0.0
    assert queries.sum([]) == 0.0
    with pytest.raises(ParameterError, match="at least 1 value"):
        queries.mean([])
    with pytest.raises(ParameterError, match=r"`p` must be in \[0, 100\]"):
        queries.percentile(101)
    with pytest.raises(TypeError):
        queries.percentile(True)
    with pytest.raises(ParameterError, match="strictly increasing"):
        queries.histogram([0, 0, 1])
    with pytest.raises(ParameterError, match="min_size"):
        queries.custom(np.max, min_size=-1)


def test_immutable() -> None:
    with pytest.raises(AttributeError):
        queries.median.q = 0.3  # type: ignore[misc]


def test_the_catalogue_is_also_dpkit_queries() -> None:
    # one module under both names: the same statistics, the same class under both its names
    import dpkit
    from dpkit.sensitivity import catalogue

    assert dpkit.queries is queries is catalogue
    assert queries.Query is queries.Statistic
    assert isinstance(queries.median, queries.Query)
    assert "Query" not in queries.__all__  # Statistic is its name; Query answers too
