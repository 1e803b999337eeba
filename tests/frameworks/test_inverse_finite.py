"""The brute-force inverse-sensitivity mechanism: true distances, capped."""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from dpkit.errors import ParameterError
from dpkit.frameworks import inverse_sensitivity_finite


def _oracle(
    x: list[Any], func: Callable, outs: list[Any], universe: list[Any], cap: int, relation: str
) -> tuple[int, ...]:
    """min(distance to each preimage, cap) by breadth-first search over the neighbour graph.

    Unbounded: add any universe value or remove a present record (never the empty dataset);
    bounded: replace one record. Independent of the implementation's enumeration.
    """
    start = tuple(sorted(x))
    seen = {start}
    frontier = [start]
    best = [cap] * len(outs)
    for dist in range(cap):
        for y in frontier:
            val = func(y)
            for j, t in enumerate(outs):
                if val == t:
                    best[j] = min(best[j], dist)
        nxt = []
        for y in frontier:
            steps: list[tuple[Any, ...]] = []
            if relation == "unbounded":
                steps += [tuple(sorted((*y, v))) for v in universe]
                steps += [y[:i] + y[i + 1 :] for i in range(len(y)) if len(y) > 1]
            else:
                steps += [
                    tuple(sorted((*y[:i], v, *y[i + 1 :]))) for i in range(len(y)) for v in universe
                ]
            for z in steps:
                if z not in seen:
                    seen.add(z)
                    nxt.append(z)
        frontier = nxt
    return tuple(best)


def _law(losses: tuple[int, ...], eps: float) -> np.ndarray:
    w = np.array([math.exp(-eps * v / 2) if v >= 0 else 0.0 for v in losses])
    return w / w.sum()


def _mean(y: tuple[Any, ...]) -> Fraction:
    return Fraction(sum(y), len(y))


def test_issue_example_neighbours_share_a_support_and_respect_epsilon() -> None:
    # func = mean on {0, 1}: output 1/3 needs the dataset [0, 0, 1]; before the fix [0] only
    # searched sizes 1..2 and gave 1/3 probability 0, while [0, 1] (sizes 1..4) gave it 0.19
    outs = sorted({Fraction(a, a + b) for a in range(5) for b in range(5) if a + b})
    outs.append(Fraction(7, 1000))  # reached by no dataset this side of 1000 records
    eps = 1.0
    laws = {}
    for x in ([0], [0, 1]):
        rel = inverse_sensitivity_finite(
            x, _mean, outs, [0, 1], epsilon=eps, relation="unbounded", max_loss=6, rng=0
        )
        losses = rel.diagnostics["losses"]
        assert losses == _oracle(x, _mean, outs, [0, 1], 6, "unbounded")
        assert min(losses) >= 0  # every output has a finite loss: one support for all inputs
        laws[len(x)] = _law(losses, eps)
    assert laws[1][outs.index(Fraction(1, 3))] > 0
    # exact ratio check over every output (float rounding of the law: 1e-12 relative)
    ratio = laws[1] / laws[2]
    assert np.all(ratio <= math.exp(eps) * (1 + 1e-12))
    assert np.all(1 / ratio <= math.exp(eps) * (1 + 1e-12))


_FUNCS: list[Callable[[tuple[Any, ...]], Any]] = [
    _mean,
    max,
    min,
    len,
    lambda y: sum(y) % 3,
    lambda y: y[(len(y) - 1) // 2],
    lambda y: round(_mean(y) * 2) / 2,
]


@pytest.mark.parametrize("relation", ["unbounded", "bounded"])
def test_losses_match_brute_force_and_neighbours_respect_epsilon(relation: str) -> None:
    rng = np.random.default_rng(11)
    eps = 0.8
    for _ in range(60):
        universe = sorted(rng.choice(5, size=int(rng.integers(2, 4)), replace=False).tolist())
        x = sorted(rng.choice(universe, size=int(rng.integers(1, 4))).tolist())
        func = _FUNCS[int(rng.integers(len(_FUNCS)))]
        cap = int(rng.integers(2, 5))
        outs = sorted({func(tuple(rng.choice(universe, size=k))) for k in (1, 2, 3, 5)}, key=str)
        outs.append("never")  # no dataset gives it
        rel = inverse_sensitivity_finite(
            x, func, outs, universe, epsilon=eps, relation=relation, max_loss=cap, rng=0
        )
        assert rel.diagnostics["losses"] == _oracle(x, func, outs, universe, cap, relation)
        assert rel.relation == relation and rel.details["max_loss"] == cap
        law = _law(rel.diagnostics["losses"], eps)
        # a random neighbour: add or remove a record (unbounded) or replace one (bounded)
        i, v = int(rng.integers(len(x))), int(rng.choice(universe))
        if relation == "bounded":
            y = sorted([*x[:i], v, *x[i + 1 :]])
        elif len(x) > 1 and rng.random() < 0.5:
            y = x[:i] + x[i + 1 :]
        else:
            y = sorted([*x, v])
        other = inverse_sensitivity_finite(
            y, func, outs, universe, epsilon=eps, relation=relation, max_loss=cap, rng=0
        )
        ratio = law / _law(other.diagnostics["losses"], eps)
        assert np.all(ratio <= math.exp(eps) * (1 + 1e-12))
        assert np.all(1 / ratio <= math.exp(eps) * (1 + 1e-12))


def test_uncapped_bounded_keeps_its_exact_distances() -> None:
    rel = inverse_sensitivity_finite(
        [1, 2, 2], lambda y: y[len(y) // 2], [1, 2, 3, 9], [1, 2, 3], epsilon=1.0, rng=0
    )
    assert rel.diagnostics["losses"] == (1, 0, 2, -1)  # 9: no dataset of size 3, ever


def test_unbounded_needs_a_cap_and_limits_are_checked_first() -> None:
    with pytest.raises(ParameterError, match="max_loss"):
        inverse_sensitivity_finite([0], _mean, [0], [0, 1], epsilon=1.0, relation="unbounded")
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ParameterError, match="max_loss"):
            inverse_sensitivity_finite(
                [0], _mean, [0], [0, 1], epsilon=1.0, relation="unbounded", max_loss=bad
            )
    calls = []

    def counting(y: tuple[Any, ...]) -> int:
        calls.append(y)
        return len(y)

    with pytest.raises(ParameterError, match="max_datasets"):
        inverse_sensitivity_finite(
            list(range(10)),
            counting,
            [0],
            list(range(12)),
            epsilon=1.0,
            relation="unbounded",
            max_loss=12,
            max_datasets=10_000,
        )
    assert calls == []  # refused before evaluating anything
