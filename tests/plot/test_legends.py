"""Every legend dpkit draws has an explicit place: matplotlib's ``loc="best"`` searches all
positions against every artist and warns ("can be slow") when that takes long, which under
a loaded machine turns a figure (and a test run with warnings as errors) into a failure."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")
import matplotlib.legend
import matplotlib.pyplot as plt

import dpkit

SRC = Path(dpkit.__file__).parent


def _legend_calls() -> Iterator[tuple[str, int, ast.Call]]:
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "legend"
            ):
                yield str(path.relative_to(SRC)), node.lineno, node


def test_every_legend_call_in_the_package_names_its_location() -> None:
    calls = list(_legend_calls())
    assert calls, "no legend call found: the scan looks in the wrong place"
    unplaced = []
    for where, line, call in calls:
        loc = next((k.value for k in call.keywords if k.arg == "loc"), None)
        if loc is None or (isinstance(loc, ast.Constant) and loc.value in ("best", 0)):
            unplaced.append(f"{where}:{line}")
    assert not unplaced, f"legends without an explicit loc: {unplaced}"


@pytest.fixture
def no_best_search(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make matplotlib's search for the best legend position an error."""

    def refuse(self: object, *args: object, **kwargs: object) -> None:
        raise AssertionError("a legend searched for its best position (loc='best')")

    monkeypatch.setattr(matplotlib.legend.Legend, "_find_best_position", refuse)


def _render(ax: object) -> None:
    fig = ax.figure  # type: ignore[attr-defined]
    fig.canvas.draw()  # the legend is placed when the figure is drawn
    plt.close(fig)


@pytest.mark.usefixtures("no_best_search")
def test_the_comparison_figure_places_its_legend() -> None:
    from dpkit.compare import compare
    from dpkit.plot import plot_comparison

    c = compare(np.arange(200.0), "median", bounds=(0, 200), trials=20, rng=0)
    _render(plot_comparison(c))


@pytest.mark.usefixtures("no_best_search")
def test_the_sensitivity_figures_place_their_legends() -> None:
    from dpkit.plot import median_neighbours, sensitivity_by_distance

    _render(sensitivity_by_distance(["mean", "median"], [1, 2, 3, 10, 11], size=3))
    _render(median_neighbours([1, 2, 10], [1, 2, 3, 10, 11], relation="unbounded"))


@pytest.mark.usefixtures("no_best_search")
def test_the_demo_noise_histogram_places_its_legend(tmp_path: Path) -> None:
    from dpkit.report.demo_mechanisms import _histogram

    rng = np.random.default_rng(0)
    _histogram(tmp_path / "noise.png", rng.laplace(size=500), rng.normal(size=500))
    assert (tmp_path / "noise.png").exists()
