"""A certified maximum of ``sqrt(A(t)) - lam sqrt(B(t))`` over ``t`` in an interval.

``A`` and ``B`` are quadratics in ``t`` with non-negative leading coefficient, one pair per row
(in :mod:`dpkit.sensitivity._std_distance` they are the variances of two datasets holding
``a`` copies of ``t``), and ``0 <= lam <= 1``. The maximum over every row and every ``t`` in
``[lo, hi]`` is found by a vectorised branch-and-bound that trusts no root location:

- **The bound.** On ``[p, q]``, ``A`` is convex, so ``max A = max(A(p), A(q))``, and ``min B``
  is ``B`` at the vertex clamped into ``[p, q]``; the square root is monotone, so
  ``UB(p, q) = sqrt(max(A(p), A(q))) - lam sqrt(min B)`` is at least every value of the
  function on ``[p, q]`` (a difference-of-convex bound). It needs no Lipschitz constant and
  no smoothness: it holds at kinks (``B`` with a double root, where the quartic of critical
  points has a triple root and root finders lose ``u**(1/3)`` of accuracy).
- **The search.** One incumbent ``L`` for all rows: the largest value evaluated so far,
  seeded with both ends and any candidate points (the real parts of the quartic's roots: they
  make ``L`` nearly optimal at once, so that most rows are discarded at the first levels).
  Pairs ``(row, interval)`` with ``UB <= max(L, floor) + tol`` are dropped; the others are
  cut into ``SPLIT`` equal parts, the function is evaluated at the cut points (raising
  ``L``), and the parts go to the next level.
- **The certificate.** When no pair is left, every row's maximum over ``[lo, hi]`` is at most
  ``max(L, floor) + tol`` plus the float error of evaluating ``UB`` (:data:`BOUND_ERROR`),
  in the real arithmetic of the float coefficients. The cut points of a part are computed
  once and shared by its neighbours, so the parts cover ``[p, q]``.
- **Termination.** A part's width shrinks by ``SPLIT`` per level up to the rounding of the cut
  points (``ulp(W') / 2`` each), so after :data:`CAP` ``= 64`` levels it is at most
  ``w = 1.2 * 2**-52 W'``. On a part that narrow ``UB`` exceeds the value at ``p`` by at most
  ``sqrt(|A(q) - A(p)|) + lam sqrt(B(p) - min B) <= 2 sqrt(W' w) < 2**-24.8 W'`` (``|A'|,
  |B'| <= 2 c2 W' + |c1| <= W'`` on ``[lo, hi]``), less than ``tol``: in real arithmetic
  everything is pruned by then. Float noise could in principle keep parts alive; past
  ``CAP`` levels the largest remaining ``UB`` is returned, which is an upper bound on the
  maximum and exceeds it by at most ``tol + BOUND_ERROR * W'`` (the same bound on the
  other side), so the certificate holds both ways. In practice the search stops after a
  few levels (at most 4 for the 10^6 ages of the smooth-sensitivity benchmark).

Float error of the bound (:data:`BOUND_ERROR`, with ``|lo|, |hi| <= W'`` and ``u = 2**-53``):
the coefficients satisfy ``c2 <= 1/4``, ``|c1| <= W'/2``, ``|c0| <= 2 W'**2`` (variances of
values in ``[-W', W']`` with ``a`` of ``m`` records at ``t``: ``c2 = a (m - a) / m**2``,
``|c1| = 2 a |s0| / m**2``, ``c0 = q0 / m - s0**2 / m**2``), so Horner's rule at ``|t| <= W'``
is off by at most ``4.01 u (W'**2 / 4 + W'**2 / 2 + 2 W'**2) < 2**4 u W'**2``; ``max(., 0)``
does not increase that, and ``|sqrt(x') - sqrt(x)| <= sqrt(|x' - x|)`` turns it into
``2**2 sqrt(u) W'`` per square root, plus ``2 u W'`` for rounding the root (values below
``3 W'**2``). The vertex ``-c1 / (2 c2)`` is off by at most ``2 u |v|``; clamped into
``[p, q]`` it raises ``min B`` by at most ``c2 (2 u W')**2``, below ``(u W')**2``. The product
by ``lam`` (``lam`` itself rounded: ``2 u``) and the subtraction add ``2**3 u W'``.
Altogether below ``2**3 sqrt(u) W' + 2**5 u W' <= 2**-23 W' + 2**-48 W'``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["BOUND_ERROR", "CAP", "SPLIT", "TOL", "dc_maximum"]

#: parts per interval and level
SPLIT = 8
#: safety cap on the number of levels (see "Termination" above)
CAP = 64
#: pruning tolerance, relative to ``W' = max(|lo|, |hi|)``
TOL = 2.0**-24
#: float error of evaluating the bound, relative to ``W'`` (see the module docstring)
BOUND_ERROR = 2.0**-23 + 2.0**-48

Coefs = tuple[np.ndarray, np.ndarray, np.ndarray]


def _poly(c: Coefs, rows: np.ndarray, t: np.ndarray) -> np.ndarray:
    c2, c1, c0 = c
    return (c2[rows] * t + c1[rows]) * t + c0[rows]


def _value(a: Coefs, b: Coefs, lam: float, rows: np.ndarray, t: np.ndarray) -> np.ndarray:
    va = np.maximum(_poly(a, rows, t), 0.0)
    vb = np.maximum(_poly(b, rows, t), 0.0)
    return np.sqrt(va) - lam * np.sqrt(vb)


def _bound(
    a: Coefs, b: Coefs, lam: float, rows: np.ndarray, p: np.ndarray, q: np.ndarray
) -> np.ndarray:
    """``UB(p, q)`` per pair (the module docstring): at least the function on ``[p, q]``."""
    va = np.maximum(np.maximum(_poly(a, rows, p), _poly(a, rows, q)), 0.0)
    b2, b1 = b[0][rows], b[1][rows]
    with np.errstate(over="ignore"):  # a far vertex is clamped anyway
        vertex = np.divide(-b1, 2 * b2, out=p.copy(), where=b2 > 0)
    inside = np.minimum(np.maximum(vertex, p), q)
    vb = np.minimum(np.minimum(_poly(b, rows, p), _poly(b, rows, q)), _poly(b, rows, inside))
    return np.sqrt(va) - lam * np.sqrt(np.maximum(vb, 0.0))


def dc_maximum(
    a: Coefs,
    b: Coefs,
    lam: float,
    lo: float,
    hi: float,
    *,
    seed_rows: np.ndarray | None = None,
    seeds: np.ndarray | None = None,
    floor: float = -np.inf,
    tol: float | None = None,
) -> tuple[float, int]:
    """``max`` over rows and ``t`` in ``[lo, hi]`` of ``sqrt(A) - lam sqrt(B)``, certified.

    Returns ``(value, levels)``: ``value`` is the largest computed value of the function at a
    point of ``[lo, hi]`` (or, past :data:`CAP` levels, an upper bound), and the true maximum
    (in real arithmetic, with these coefficients) is at most ``max(value, floor) + tol +
    BOUND_ERROR * W'``; ``levels`` is how many levels the search took. ``seeds`` (clipped
    into ``[lo, hi]``) are extra points evaluated first for rows ``seed_rows``. The default
    ``tol`` is ``TOL * W'``.
    """
    wp = max(abs(lo), abs(hi))
    tol = TOL * wp if tol is None else tol
    nrows = a[0].size
    rows = np.arange(nrows)
    p = np.full(nrows, float(lo))
    q = np.full(nrows, float(hi))
    best = max(float(np.max(_value(a, b, lam, rows, p))), float(np.max(_value(a, b, lam, rows, q))))
    if seeds is not None and seed_rows is not None and seeds.size:
        ts = np.clip(seeds, lo, hi)
        best = max(best, float(np.max(_value(a, b, lam, seed_rows, ts))))
    frac = np.arange(1, SPLIT) / SPLIT  # exact binary fractions
    for level in range(CAP):
        ub = _bound(a, b, lam, rows, p, q)
        alive = ub > max(best, floor) + tol
        if not alive.any():
            return best, level
        rows, p, q = rows[alive], p[alive], q[alive]
        cuts = p[:, None] + (q - p)[:, None] * frac
        best = max(best, float(np.max(_value(a, b, lam, np.repeat(rows, SPLIT - 1), cuts.ravel()))))
        edges = np.concatenate((p[:, None], cuts, q[:, None]), axis=1)
        p = edges[:, :-1].ravel()
        q = edges[:, 1:].ravel()
        rows = np.repeat(rows, SPLIT)
    return max(best, float(np.max(_bound(a, b, lam, rows, p, q)))), CAP
