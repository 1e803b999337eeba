"""Sensitivity figures: they draw what the numbers say, on the Agg backend."""

from __future__ import annotations

import builtins
import importlib
import sys

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from dpkit import sensitivity as sens
from dpkit.plot import median_neighbours, sensitivity_by_distance

UNIVERSE = [1, 2, 3, 10, 11]


def test_lines_carry_the_brute_force_values() -> None:
    fig, ax = plt.subplots()
    out = sensitivity_by_distance(["mean", "median"], UNIVERSE, size=3, distances=[1, 2, 3], ax=ax)
    assert out is ax
    lines = {line.get_label(): line for line in ax.lines}
    assert set(lines) == {
        "mean (bounded)",
        "mean (unbounded)",
        "median (bounded)",
        "median (unbounded)",
    }
    y = lines["median (unbounded)"].get_ydata()
    want = [
        sens.empirical_global("median", UNIVERSE, 3, distance=k, relation="unbounded")
        for k in (1, 2, 3)
    ]
    np.testing.assert_allclose(y, want)
    assert lines["median (bounded)"].get_linestyle() == "-"
    assert lines["median (unbounded)"].get_linestyle() == "--"
    plt.close(fig)


def test_many_distances_get_a_few_integer_ticks() -> None:
    rows = sens.sweep(["mean"], UNIVERSE, size=3, distances=range(1, 201), relations=["bounded"])
    ax = sensitivity_by_distance(rows=rows)
    ax.figure.canvas.draw()
    ticks = [t for t in ax.get_xticks() if 1 <= t <= 200]
    assert 3 <= len(ticks) <= 13  # not one label per k
    assert all(float(t).is_integer() for t in ticks)
    assert ax.lines[0].get_marker() in (None, "None", "")
    few = sensitivity_by_distance(["mean"], UNIVERSE, size=3, distances=[1, 2, 5])
    assert list(few.get_xticks()) == [1, 2, 5]  # few distances: each one labelled
    plt.close(ax.figure)
    plt.close(few.figure)


def test_local_variant_and_new_figure() -> None:
    ax = sensitivity_by_distance(["median"], UNIVERSE, data=[1, 2, 10], distances=[1, 2])
    assert "Local" in ax.get_title()
    y = ax.lines[0].get_ydata()
    np.testing.assert_allclose(
        y,
        [
            sens.empirical_local("median", [1, 2, 10], UNIVERSE, distance=k, relation="bounded")
            for k in (1, 2)
        ],
    )
    plt.close(ax.figure)


def test_median_neighbours_marks_the_largest_change() -> None:
    ax = median_neighbours([1, 2, 10], UNIVERSE, relation="bounded")
    ls = sens.empirical_local("median", [1, 2, 10], UNIVERSE, relation="bounded")
    assert ax.get_title().endswith(f"LS_1 = {ls:g}")
    points = np.concatenate(
        [
            c.get_offsets()[:, 1]
            for c in ax.collections
            if c.get_offsets().size
            and c.get_offsets().shape[1] == 2
            and c.get_label() != "largest change"
        ]
    )
    assert np.max(np.abs(points - 2.0)) == ls
    plt.close(ax.figure)


def test_missing_matplotlib_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def fake(name: str, *args: object, **kwargs: object) -> object:
        if name.startswith("matplotlib"):
            raise ImportError("no matplotlib")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake)
    for mod in [m for m in sys.modules if m.startswith("matplotlib")]:
        monkeypatch.delitem(sys.modules, mod)
    plot = importlib.import_module("dpkit.plot")
    with pytest.raises(ImportError, match=r"pip install 'dpkit\[plot\]'"):
        plot.sensitivity_by_distance(["mean"], UNIVERSE, size=2)
