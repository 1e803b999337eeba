"""dpkit.compare: every method runs, costs are honest, errors are measured against the truth."""

from __future__ import annotations

import numpy as np
import pytest

import dpkit
from dpkit.compare import METHODS, compare


@pytest.fixture(scope="module")
def ages() -> np.ndarray:
    return dpkit.datasets.load_adult()["Age"].to_numpy().astype(float)


def test_mean_comparison_on_adult(ages: np.ndarray) -> None:
    c = compare(ages, "mean", bounds=(0, 100), delta=1 / ages.size**2, trials=200, rng=0)
    assert [r.method for r in c.results] == list(METHODS)
    assert c["inverse_sensitivity"].neighbours == "bounded"  # the mean's loss: replace-one
    assert c.truth == pytest.approx(38.58164675532078)
    for r in c.results:
        assert r.values.shape == (200,)
        assert r.privacy <= dpkit.ApproxDP(1.0, 1 / ages.size**2)
    # global: Laplace sum (scale 100/0.5) over count: error about 200/32561 per trial
    g = np.abs(c.errors("global"))
    assert 0.001 < np.median(g) < 0.02
    # sample-and-aggregate with 600 parts: noise scale (100/600)/1, median |Lap| = 0.115
    s = np.abs(c.errors("sample_and_aggregate"))
    assert 0.05 < np.median(s) < 0.25
    assert c["sample_and_aggregate"].details["chunks"] == 600
    table = c.table()
    assert "propose-test-release" in table and "true value 38.58" in table


def test_median_comparison_includes_inverse_sensitivity(ages: np.ndarray) -> None:
    c = compare(ages, "median", bounds=(0, 100), trials=100, rng=1)
    assert c["inverse_sensitivity"].privacy == dpkit.PureDP(1.0)
    # Adult's median 37 is surrounded by ties: the continuous mechanism lands within 1 of it
    assert np.max(np.abs(c.errors("inverse_sensitivity"))) <= 1.0
    # global sensitivity of the median is the whole range: errors of tens of years
    assert np.median(np.abs(c.errors("global"))) > 10


def test_ptr_refusals_are_counted_not_scored() -> None:
    x = np.array([0.0, 100.0] * 5)  # tiny data near high sensitivity: PTR mostly refuses
    c = compare(x, "mean", bounds=(0, 100), trials=300, methods=["ptr"], ptr_bound=0.01, rng=2)
    assert c["ptr"].refused > 0.9
    assert c.errors("ptr").size == round(300 * (1 - c["ptr"].refused))


def test_summary_rows_and_errors() -> None:
    x = np.random.default_rng(0).normal(50, 10, 3000)
    c = compare(x, "median", bounds=(0, 100), trials=50, rng=3, methods=["global", "smooth"])
    rows = c.summary()
    assert [r["method"] for r in rows] == ["global", "smooth"]
    assert rows[1]["median_abs_error"] < rows[0]["median_abs_error"]
    with pytest.raises(KeyError):
        c["ptr"]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"statistic": "var"}, "statistic"),
        ({"methods": ["magic"]}, "magic"),
        ({"trials": 0}, "trials"),
        ({"delta": 0.0}, "delta"),
        ({"bounds": (1, 0)}, "lower < upper"),
    ],
)
def test_bad_input(kwargs: dict, match: str) -> None:
    args = {"data": [1.0, 2.0, 3.0], "statistic": "median", "bounds": (0, 10), "trials": 5}
    args.update(kwargs)
    with pytest.raises(dpkit.ParameterError, match=match):
        compare(**args)


def test_plot_draws_one_histogram_per_method() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from dpkit.plot import plot_comparison

    x = np.random.default_rng(0).normal(50, 10, 2000)
    c = compare(x, "median", bounds=(0, 100), trials=30, rng=4)
    ax = plot_comparison(c)
    assert len(ax.patches) == len(c.results)
    assert len(ax.get_legend().get_texts()) == len(c.results)
    plt.close(ax.figure)
