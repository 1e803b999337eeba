"""The exact moves of a percentile's rank under one neighbour step.

Shared by :mod:`.at_distance` (the float pass over a percentile's candidate shapes),
:mod:`._exact_diagonal` (its exact recomputation) and :mod:`.percentile_distance` (the same
moves in int64): a module of its own, below all three, so none imports another to get it.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

__all__ = ["exact_moves"]


def exact_moves(
    q: float, m: np.ndarray, relation: str, small: bool = False
) -> list[tuple[np.ndarray, ...]]:
    """The moves of :func:`dpkit.sensitivity.at_distance._move_intervals` in exact arithmetic:
    per move ``(t, W0, W1, allowed)``.

    With ``q = Qn / D`` (``D`` a power of two, ``q`` a float), every interval end is an
    integer over ``D``; ``t = floor(start)`` and the weights ``w0 = W0 / D`` (the part of the
    interval in ``[t, t + 1]``) and ``w1 = W1 / D`` (the part in ``[t + 1, t + 2]``) are exact
    (``W0``, ``W1`` Python ints in object arrays; int64 with ``small=True``, for a ``D`` so
    small that ``Qn m`` cannot overflow, as :mod:`.percentile_distance` asks).
    """
    qf = Fraction(q)
    qn, den = qf.numerator, qf.denominator
    mo = m.astype(np.int64) if small else m.astype(object)
    hn = qn * (mo - 1)
    every = np.ones(m.shape, dtype=bool)
    if relation == "bounded":
        ends = [(hn, hn + den, every), (hn - den, hn, every)]
    else:
        qm = qn * mo
        h2 = qn * np.maximum(mo - 2, 0)
        big = m >= 2
        ends = [(hn, qm, every), (qm - den, hn, every), (hn, h2 + den, big), (h2, hn, big)]
    out: list[tuple[np.ndarray, ...]] = []
    for n_start, n_end, allowed in ends:
        t = n_start // den
        t1 = (t + 1) * den
        w0 = np.minimum(n_end, t1) - n_start
        w1 = np.maximum(n_end - t1, 0)
        out.append((t.astype(np.int64), w0, w1, allowed))
    return out
