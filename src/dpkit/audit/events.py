"""Candidate events, chosen on the selection half and evaluated on the evaluation half.

For a feature of the outputs (:mod:`dpkit.audit.features`) the candidates are

* real features: the thresholds ``f >= t`` and ``f <= t``, with ``t`` at quantiles of the
  pooled selection sample (dense in both tails, where a privacy violation shows first);
* categorical features (discrete values, histogram bins, lattice cells, keys): the unions of
  the ``k`` cells with the largest estimated ratio ``P_0 / P_1`` (and the smallest), for every
  ``k``. For a fixed partition these are the events a likelihood-ratio test would use
  (Neyman-Pearson), so they contain the best event of the partition.

Each candidate is tried in both directions (it is likelier under input 0, or under input 1)
and scored on the selection half by an approximate lower bound on epsilon (a normal
approximation to the Clopper-Pearson bounds, cheap for thousands of candidates). The best
one is then evaluated, once, with exact Clopper-Pearson bounds on the held-out half
(:func:`dpkit.audit.audit`). The score only decides which event is tried; it never enters the
reported bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpkit.audit.features import Feature

__all__ = ["Event", "select_event"]

#: Thresholds tried per real feature and unions per categorical feature (at most).
THRESHOLDS = 400


@dataclass(frozen=True)
class Event:
    """A set of outputs, defined by one feature: ``f >= t``, ``f <= t`` or ``f in cells``.

    ``favours`` is the input (0 or 1) under which the event was likelier on the selection
    half: the bound is ``log((P_favoured[E] - delta) / P_other[E])``.
    """

    feature: str
    kind: str  # "ge", "le" or "in"
    threshold: float = math.nan
    cells: tuple[int, ...] = ()
    favours: int = 0
    description: str = ""

    def indicator(self, feats: list[Feature]) -> np.ndarray:
        """Which outputs (of a featurized batch) lie in the event."""
        f = next(x for x in feats if x.name == self.feature)
        if self.kind == "ge":
            with np.errstate(invalid="ignore"):
                return f.values >= self.threshold
        if self.kind == "le":
            with np.errstate(invalid="ignore"):
                return f.values <= self.threshold
        return np.isin(f.values, np.asarray(self.cells, dtype=np.int64))


def approx_bound(
    k_num: np.ndarray, n_num: int, k_den: np.ndarray, n_den: int, delta: float, z: float
) -> np.ndarray:
    """Approximate ``log((p_num_low - delta) / p_den_high)`` for arrays of counts.

    Wilson-type bounds with ``z`` standard errors; only used to *choose* an event.
    """
    kn = k_num.astype(np.float64)
    kd = k_den.astype(np.float64)
    low = np.maximum(kn - z * np.sqrt(kn) - z * z / 2, 0.0) / n_num
    high = (kd + z * np.sqrt(kd + 1.0) + z * z) / n_den
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log((low - delta) / high)
    return np.where(low > delta, out, -np.inf)


def _threshold_candidates(f0: np.ndarray, f1: np.ndarray) -> np.ndarray:
    pooled = np.sort(np.concatenate([f0[~np.isnan(f0)], f1[~np.isnan(f1)]]))
    m = pooled.size
    if m == 0:
        return pooled
    k = THRESHOLDS // 4
    tail = np.unique(np.geomspace(1, max(m / 2, 1), k).astype(np.int64))
    pos = np.concatenate([tail - 1, m - tail, np.linspace(0, m - 1, THRESHOLDS // 2)])
    pos = np.clip(pos.astype(np.int64), 0, m - 1)
    return np.unique(pooled[pos])


def _real_candidates(
    name: str, f0: np.ndarray, f1: np.ndarray, delta: float, z: float
) -> tuple[float, Event | None]:
    ts = _threshold_candidates(f0, f1)
    if ts.size == 0:
        return -math.inf, None
    s0 = np.sort(f0[~np.isnan(f0)])
    s1 = np.sort(f1[~np.isnan(f1)])
    n0, n1 = f0.size, f1.size
    ge0 = s0.size - np.searchsorted(s0, ts, side="left")
    ge1 = s1.size - np.searchsorted(s1, ts, side="left")
    le0 = np.searchsorted(s0, ts, side="right")
    le1 = np.searchsorted(s1, ts, side="right")
    best, best_ev = -math.inf, None
    for kind, c0, c1 in (("ge", ge0, ge1), ("le", le0, le1)):
        for fav, (a, na, b, nb) in enumerate(((c0, n0, c1, n1), (c1, n1, c0, n0))):
            score = approx_bound(a, na, b, nb, delta, z)
            i = int(np.argmax(score))
            if score[i] > best:
                best = float(score[i])
                op = ">=" if kind == "ge" else "<="
                best_ev = Event(name, kind, float(ts[i]), (), fav, f"{name} {op} {ts[i]:.17g}")
    return best, best_ev


def _cat_candidates(
    feat0: Feature, f0: np.ndarray, f1: np.ndarray, delta: float, z: float
) -> tuple[float, Event | None]:
    """Unions of cells ranked by their ratio on one half of the selection sample and scored
    on the other half (cross-fitting): ranking and scoring on the same draws would favour
    rare cells whose ratio is extreme by chance."""
    m = len(feat0.labels)
    if m == 0 or f0.size < 4:
        return -math.inf, None
    h0, h1 = f0.size // 2, f1.size // 2

    def counts(v: np.ndarray) -> np.ndarray:
        return np.bincount(v[v >= 0], minlength=m)[:m]

    a0, a1 = counts(f0[:h0]), counts(f1[:h1])  # ranking half
    b0, b1 = counts(f0[h0:]), counts(f1[h1:])  # scoring half
    n0, n1 = f0.size - h0, f1.size - h1
    best, best_ev = -math.inf, None
    for fav, (ra, rb, ca, na, cb, nb) in enumerate(
        ((a0, a1, b0, n0, b1, n1), (a1, a0, b1, n1, b0, n0))
    ):
        ratio = (ra + 0.5) / (rb + 0.5)
        order = np.argsort(-ratio, kind="stable")[:THRESHOLDS]
        score = approx_bound(np.cumsum(ca[order]), na, np.cumsum(cb[order]), nb, delta, z)
        i = int(np.argmax(score))
        if score[i] > best:
            best = float(score[i])
            cells = tuple(sorted(int(c) for c in order[: i + 1]))
            best_ev = Event(feat0.name, "in", math.nan, cells, fav, _describe(feat0, cells))
    return best, best_ev


def _describe(feat: Feature, cells: tuple[int, ...]) -> str:
    names = [feat.labels[c] for c in cells]
    if len(names) == 1:
        return (
            names[0]
            if names[0].startswith(("output", "|", "key", feat.name))
            else (f"{feat.name} = {names[0]}")
        )
    shown = "; ".join(names[:3]) + ("; ..." if len(names) > 3 else "")
    return f"{feat.name}: one of {len(names)} cells ({shown})"


def select_event(
    feats0: list[Feature], feats1: list[Feature], delta: float, z: float
) -> tuple[float, Event | None]:
    """The candidate with the best approximate bound on the selection half, and its score."""
    best, best_ev = -math.inf, None
    for a, b in zip(feats0, feats1, strict=True):
        if a.kind == "real":
            score, ev = _real_candidates(a.name, a.values, b.values, delta, z)
        else:
            score, ev = _cat_candidates(a, a.values, b.values, delta, z)
        if ev is not None and score > best:
            best, best_ev = score, ev
    return best, best_ev
