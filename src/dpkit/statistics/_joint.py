"""JointExp (Gillenwater, Joseph and Kulesza, ICML 2021), sampled exactly.

The mechanism: one exponential mechanism over *all* ``m`` outputs at once. An output is an
ordered ``m``-tuple of lattice points with base weight ``prod mu(o_j)`` (the support-aware
base measure of :mod:`dpkit.mechanisms.quantile_em`); its utility is

    u(o) = - sum_{j=1}^{m+1} | c(o_(j)) - c(o_(j-1)) - n (q_j - q_{j-1}) |

on the sorted tuple, with ``c(t) = #{x < t}``, ``c(o_(0)) = 0``, ``c(o_(m+1)) = n``,
``q_0 = 0``, ``q_{m+1} = 1``. Adding one record raises ``c`` by one for the outputs above it
and every target ``n dq_j`` by ``dq_j``, so ``u`` moves by at most
``Delta = 2 (1 - min_j dq_j)``; drawing ``o`` with probability ``∝ mu(o) exp(epsilon u / (2
Delta))`` is ``epsilon``-DP (McSherry and Talwar 2007) and sorting is post-processing.

Sampling. The utility depends on the tuple only through the cells (gaps between data values,
or data values) of its sorted entries, so the law of the sorted cells is
``prod_cells mu_i**k_i / k_i! * exp(epsilon u / (2 Delta))`` (``k_i`` outputs in cell ``i``;
``1/k!`` counts the orderings), and the points inside a cell are independent draws of
``mu`` restricted to it. A dynamic programme over (output, cell, run length in the cell) gives
the normalising sums; the sliding sums it needs run in the log domain with prefix sums and a
segment tree, so every quantity is a sum of positive terms known to about ``1e-9`` relative.

Exactness. Those floats only build a *proposal*: the cells are drawn backwards from integer
weights (exact probabilities ``p / P``), and the whole configuration is accepted with
probability ``target / (M * proposal)``, ``M = exp(log Z_hat) (1 + 2**-10)``, decided by
:func:`~dpkit.samplers.heavy_tailed.bernoulli_exp_scaled` on exact rationals. The accepted
configuration has exactly the target law whenever that ratio is at most 1, which the float
accuracy gives with a wide margin and which is *checked* exactly on every draw (an
:class:`~dpkit.errors.InternalError`, never a silent bias). Floats affect only the speed.
The log-weights reach about ``epsilon n / Delta``, so their absolute float error grows with
it: the slack is ``max(2**-10, exp(2 b) - 1)`` for a bound ``b`` on that error
(:func:`_slack`), and the mechanism runs at ``min(epsilon, EPSILON_CAP)``, which is still
``epsilon``-DP (a smaller epsilon is a stronger guarantee) and keeps ``b`` small for any
data that fits in memory. At the cap one unit of spread costs a factor ``exp(-2500)`` or
less, which no ratio of two cells' base masses (below ``2**53``) can offset, so capping
changes no release in practice; without it, epsilon near ``1e12`` left the proposal too
coarse for the exact check, which then raised after the budget was spent.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from typing import Any

import numpy as np

from dpkit.errors import InternalError
from dpkit.mechanisms.quantile_em import Counts, Measure, cells, sample_in_ranges
from dpkit.samplers import uniform_int
from dpkit.samplers.heavy_tailed import bernoulli_exp_scaled

__all__ = ["joint_exp", "joint_exp_samples", "joint_sensitivity"]

_SLACK = Fraction(1, 1024)  # least slack: M = Z_hat (1 + slack)
#: JointExp runs at ``min(epsilon, EPSILON_CAP)`` (module docstring).
EPSILON_CAP = Fraction(10_000)
_MAX_TRIES = 1000


def joint_sensitivity(levels: list[Fraction]) -> Fraction:
    """``2 (1 - min dq)`` over the gaps ``q_1, q_2 - q_1, ..., 1 - q_m``."""
    edges = [Fraction(0), *levels, Fraction(1)]
    return 2 * (1 - min(b - a for a, b in itertools.pairwise(edges)))


def _window_logsumexp(values: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``log sum exp(values[lo_i .. hi_i])`` per query (inclusive; ``-inf`` when empty),
    by a segment tree of pairwise ``logaddexp`` (positive sums only)."""
    size = 1
    while size < values.size:
        size *= 2
    tree = np.full(2 * size, -np.inf)
    tree[size : size + values.size] = values
    level = size
    while level > 1:
        half = level // 2
        tree[half:level] = np.logaddexp(
            tree[level : 2 * level : 2], tree[level + 1 : 2 * level : 2]
        )
        level = half
    res = np.full(lo.size, -np.inf)
    left = lo.astype(np.int64) + size
    right = hi.astype(np.int64) + size + 1
    while True:
        live = left < right
        if not np.any(live):
            break
        take_l = live & (left & 1 == 1)
        res[take_l] = np.logaddexp(res[take_l], tree[left[take_l]])
        left = np.where(take_l, left + 1, left)
        take_r = live & (right & 1 == 1)
        right = np.where(take_r, right - 1, right)
        res[take_r] = np.logaddexp(res[take_r], tree[right[take_r]])
        left >>= 1
        right >>= 1
    return res


def _logsumexp_rows(x: np.ndarray) -> np.ndarray:
    """Row-wise ``log sum exp`` (shift by the row maximum; ``-inf`` rows stay ``-inf``)."""
    top = np.max(x, axis=1)
    safe = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return safe + np.log(np.sum(np.exp(x - safe[:, None]), axis=1))


def _transition(s_prev: np.ndarray, cf: np.ndarray, lam: float, t: float) -> np.ndarray:
    """``log sum_{i' < i} exp(s_prev[i'] - lam |cf_i - cf_i' - t|)`` for every cell ``i``."""
    idx = np.arange(cf.size)
    # last i' < i with cf_i' <= cf_i - t (for t = 0, an empty data set, cf_i itself qualifies:
    # the cap keeps the predecessors strictly before i, as the backward step draws them)
    k = np.minimum(np.searchsorted(cf, cf - t, side="right") - 1, idx - 1)
    pa = np.logaddexp.accumulate(s_prev + lam * cf)
    part_a = np.where(k >= 0, pa[np.maximum(k, 0)] - lam * (cf - t), -np.inf)
    part_b = _window_logsumexp(s_prev - lam * cf, k + 1, idx - 1) - lam * (t - cf)
    return np.logaddexp(part_a, part_b)


def _proposal(logw: np.ndarray, source: Any) -> tuple[int, int, int]:
    """Index drawn from integer weights built from ``logw``: ``(index, p, P)``, exact ``p/P``."""
    top = float(np.max(logw))
    if not math.isfinite(top):
        raise InternalError("joint_exp: every proposal weight is zero")
    s = 62 - max(logw.size, 2).bit_length() - 1
    v = np.exp(logw - top) * ((1 + 2.0**-20) * 2.0**s)
    p = np.ceil(v).astype(np.int64) + 1
    cum = np.cumsum(p)
    total = int(cum[-1])
    u = int(uniform_int(total, 1, source)[0])
    i = int(np.searchsorted(cum, u, side="right"))
    return i, int(p[i]), total


def joint_exp(
    counts: Counts,
    measure: Measure,
    levels: list[Fraction],
    epsilon: Fraction,
    source: Any,
) -> list[int]:
    """Lattice points for ``levels`` by JointExp, sorted (module docstring)."""
    return joint_exp_samples(counts, measure, levels, epsilon, source, 1)[0]


def joint_exp_samples(
    counts: Counts,
    measure: Measure,
    levels: list[Fraction],
    epsilon: Fraction,
    source: Any,
    size: int,
) -> list[list[int]]:
    """``size`` independent JointExp draws (the dynamic programme is shared)."""
    lat = counts.lattice
    c = cells(counts, measure, lat.lo, lat.hi)
    live = c.mass > 0
    mass = c.mass[live]
    below = c.below[live]
    start, stop = c.start[live], c.stop[live]
    n, m = c.n, len(levels)
    edges = [Fraction(0), *levels, Fraction(1)]
    dq = [b - a for a, b in itertools.pairwise(edges)]
    targets = [n * d for d in dq]  # T_1 .. T_{m+1}
    lam_exact = min(epsilon, EPSILON_CAP) / (2 * joint_sensitivity(levels))
    lam = float(lam_exact)
    cf = below.astype(np.float64)
    logmu = np.log(mass)
    tf = [float(t) for t in targets]
    # forward: a[j][:, r] = log A_{j+1}(i, r + 1), runs of r + 1 outputs in cell i
    a: list[np.ndarray] = [(logmu - lam * np.abs(cf - tf[0]))[:, None]]
    for j in range(1, m):
        prev = a[-1]
        s_prev = _logsumexp_rows(prev)
        cur = np.empty((cf.size, j + 1))
        cur[:, 0] = logmu + _transition(s_prev, cf, lam, tf[j])
        cur[:, 1:] = prev + (logmu - lam * tf[j])[:, None] - np.log(np.arange(2, j + 2))[None, :]
        a.append(cur)
    end = -lam * np.abs(n - cf - tf[m])
    final = a[-1] + end[:, None]
    log_z = float(_logsumexp_rows(final.reshape(1, -1))[0])
    slack = _slack(lam, n, m, cf.size, float(np.max(np.abs(logmu))))
    out: list[list[int]] = []
    tries = 0
    while len(out) < size:
        tries += 1
        if tries > _MAX_TRIES * size:  # pragma: no cover - acceptance is about 0.999
            raise InternalError("joint_exp: the exact rejection step accepts nothing")
        path, q_prob = _backward(a, final, cf, lam, tf, source)
        if _accept(path, q_prob, mass, below, targets, n, lam_exact, log_z, slack, source):
            cells_of = np.array(path, dtype=np.int64)  # cell per output, increasing
            pts = sample_in_ranges(measure, start[cells_of], stop[cells_of], source)
            out.append(sorted(int(v) for v in pts))
    return out


def _slack(lam: float, n: int, m: int, k: int, logmu: float) -> Fraction:
    """``max(2**-10, exp(2 b) - 1)``: ``b`` bounds the float error of a log-weight.

    Every log-weight and the log normaliser come from at most ``(m + 1) (2 log2 k + 8)``
    float operations (``k`` cells; the segment tree's depth is ``log2 k``) on values of
    magnitude at most ``V = 2 lam n + |log mu| + 64``; allowing 4 units in the last place of
    ``V`` per operation gives ``b``. The proposal and ``Z_hat`` may each be off by ``b``,
    hence ``2 b``. A data-dependent slack changes only the acceptance rate, never the law,
    and the exact check in :func:`_accept` still guards the bound.
    """
    ops = (m + 1) * (2 * max(k, 2).bit_length() + 8)
    magnitude = 2 * lam * n + logmu + 64
    b = ops * 4 * math.ulp(magnitude)
    return max(_SLACK, Fraction(math.expm1(2 * b)))


def _backward(
    a: list[np.ndarray],
    final: np.ndarray,
    cf: np.ndarray,
    lam: float,
    tf: list[float],
    source: Any,
) -> tuple[list[int], Fraction]:
    """Cells of the sorted outputs drawn backwards from the proposal; its exact probability."""
    m = len(a)
    _k_cells, runs = final.shape
    idx, p, total = _proposal(final.ravel(), source)
    prob = Fraction(p, total)
    i, r = divmod(idx, runs)
    path = [i]
    for j in range(m - 1, 0, -1):  # choose output j (0-based j - 1) given output j + 1
        if r > 0:  # the run continues in the same cell
            r -= 1
            path.append(i)
            continue
        prev = a[j - 1][:i]  # cells i' < i, runs 1 .. j
        logw = prev + (-lam * np.abs(cf[i] - cf[:i] - tf[j]))[:, None]
        idx, p, total = _proposal(logw.ravel(), source)
        prob *= Fraction(p, total)
        i, r = divmod(idx, prev.shape[1])
        path.append(i)
    path.reverse()
    return path, prob


def _accept(
    path: list[int],
    q_prob: Fraction,
    mass: np.ndarray,
    below: np.ndarray,
    targets: list[Fraction],
    n: int,
    lam: Fraction,
    log_z: float,
    slack: Fraction,
    source: Any,
) -> bool:
    """Exact acceptance ``target(config) / (M Q(config))`` (module docstring)."""
    weight = Fraction(1)
    for cell in set(path):
        k = path.count(cell)
        weight *= Fraction(int(mass[cell]) ** k, math.factorial(k))
    cs = [0, *(int(below[i]) for i in path), n]
    spread = sum(abs(cs[j + 1] - cs[j] - targets[j]) for j in range(len(targets)))
    x = lam * spread + Fraction(log_z)
    r = weight / ((1 + slack) * q_prob)
    return bernoulli_exp_scaled(x, r, source)
