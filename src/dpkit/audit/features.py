"""From raw outputs to features: the functions of an output that candidate events look at.

An audit draws outputs of a randomized function (floats, integers, chosen candidates, refused
releases, vectors, released DataFrames). Every output is mapped to a few *features*, each a
fixed function of the output alone:

* ``real`` features: a number per output (the value itself, a vector's coordinates and sum,
  a released frame's value per key, a residue modulo a power-of-two grid); ``NaN`` where
  the output has none (a refusal, an absent key). Events on them are thresholds.
* ``cat`` features: a category code per output (the distinct values of a discrete output,
  a chosen candidate, "refused", a histogram bin, a floating-point lattice cell, which keys a
  frame holds). Events on them are sets of categories.

The vocabularies (which categories exist, where the bins fall, which grid a residue is taken
modulo) are *fitted on the selection half only* (:meth:`Featurizer.fit`) and then applied
unchanged to the evaluation half, so the evaluation half stays independent of every choice
the audit makes; categories unseen when fitting map to code ``-1`` ("other"), which no event
contains.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Feature", "Featurizer", "Outputs", "lattice_cells", "to_outputs"]

#: At most this many categories per categorical feature (the most frequent when fitting).
MAX_CATEGORIES = 4096
#: A real feature with at most this many distinct values (when fitting) is also categorical.
DISCRETE_LIMIT = 512
#: Quantile bins of a real feature (a categorical feature of its own).
BINS = 48
#: Frames: at most this many keys get a presence and a value feature each.
MAX_KEYS = 64


@dataclass(frozen=True)
class Feature:
    """One feature over a batch of outputs: ``kind`` is ``"real"`` or ``"cat"``."""

    name: str
    kind: str
    values: np.ndarray
    labels: tuple[str, ...] = ()  # cat: the label of each code
    lattice: bool = False  # a floating-point lattice feature (cell, lowest bit, residue)


@dataclass
class Outputs:
    """A batch of outputs in a uniform shape: named raw columns, one row per draw.

    ``real`` maps names to float64 arrays (NaN = none); ``cat`` maps names to arrays of
    hashable labels (object dtype); ``floats`` lists the real columns whose float
    representation is meaningful (lattice features are computed for those). ``fill`` gives,
    for a categorical column, the label of a draw in a batch that lacks the column (a batch
    with no refusal has no ``refused`` column: its draws were not refused; a key no draw of a
    batch released was absent from all of them), so every draw's label is a function of that
    draw alone, whatever batch it came in; other missing columns are ``NaN`` / ``None``.
    """

    n: int
    real: dict[str, np.ndarray] = field(default_factory=dict)
    cat: dict[str, np.ndarray] = field(default_factory=dict)
    floats: tuple[str, ...] = ()
    fill: dict[str, Any] = field(default_factory=dict)

    @staticmethod
    def concat(parts: list[Outputs]) -> Outputs:
        if not parts:
            return Outputs(0)
        first = parts[0]
        real_names = sorted(set().union(*(p.real for p in parts)))
        cat_names = sorted(set().union(*(p.cat for p in parts)))
        fill: dict[str, Any] = {}
        for p in parts:
            fill.update(p.fill)
        real = {
            k: np.concatenate([p.real.get(k, np.full(p.n, np.nan)) for p in parts])
            for k in real_names
        }
        cat = {
            k: np.concatenate(
                [p.cat.get(k, np.full(p.n, fill.get(k), dtype=object)) for p in parts]
            )
            for k in cat_names
        }
        floats = tuple(dict.fromkeys(f for p in parts for f in p.floats))
        return Outputs(sum(p.n for p in parts), real, cat, floats or first.floats, fill)

    def take(self, idx: slice) -> Outputs:
        return Outputs(
            len(range(*idx.indices(self.n))),
            {k: v[idx] for k, v in self.real.items()},
            {k: v[idx] for k, v in self.cat.items()},
            self.floats,
            self.fill,
        )


def _is_frame(obj: Any) -> bool:
    mod = type(obj).__module__.split(".")[0]
    return mod in ("polars", "pandas", "pyarrow", "narwhals", "duckdb") and hasattr(obj, "columns")


def _values_of(items: list[Any]) -> list[Any]:
    """``Release`` records (or anything with ``value`` and ``refused``) to their values."""
    out = []
    for it in items:
        if hasattr(it, "refused") and hasattr(it, "value"):
            out.append(None if it.refused else it.value)
        elif hasattr(it, "frame") and _is_frame(it.frame):  # a Session measurement record
            out.append(it.frame)
        else:
            out.append(it)
    return out


def to_outputs(batch: Any, size: int | None = None) -> Outputs:
    """Normalise one batch of outputs (an array, a list of outputs, or a frame with ``draw``).

    ``size`` is the number of draws the batch holds (needed for frames, where a draw that
    released no row has no row).
    """
    if _is_frame(batch):
        from dpkit.audit._frames import frame_outputs

        return frame_outputs(batch, size)
    if isinstance(batch, np.ndarray) and batch.dtype != object:
        return _array_outputs(batch)
    items = _values_of(list(batch))
    if items and all(_is_frame(v) for v in items):
        from dpkit.audit._frames import frames_outputs

        return frames_outputs(items)
    if all(v is None or _is_number(v) for v in items):
        refused = np.array([v is None for v in items], dtype=bool)
        vals = np.array([np.nan if v is None else v for v in items], dtype=np.float64)
        if any(isinstance(v, float | np.floating) for v in items):
            out = _array_outputs(vals)
        else:
            out = _array_outputs(vals.astype(np.int64) if not refused.any() else vals)
        if refused.any():
            out.cat["refused"] = refused.astype(object)
        out.fill["refused"] = False
        return out
    if all(isinstance(v, np.ndarray) for v in items):
        return _array_outputs(np.stack(items))
    labels = np.empty(len(items), dtype=object)
    labels[:] = [v if _hashable(v) else repr(v) for v in items]
    return Outputs(len(items), cat={"output": labels})


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float | np.integer | np.floating) and not isinstance(
        v, bool | np.bool_
    )


def _hashable(v: Any) -> bool:
    try:
        hash(v)
    except TypeError:
        return False
    return True


def _array_outputs(arr: np.ndarray) -> Outputs:
    n = arr.shape[0] if arr.ndim else 1
    if arr.dtype.kind in "US" or arr.dtype == np.bool_:
        return Outputs(n, cat={"output": arr.reshape(n).astype(object)})
    if arr.ndim == 1:
        vals = arr.astype(np.float64)
        floats: tuple[str, ...] = ("output",) if arr.dtype.kind == "f" else ()
        out = Outputs(n, real={"output": vals}, floats=floats, fill={"refused": False})
        if arr.dtype.kind == "f" and np.isnan(vals).any():
            out.cat["refused"] = np.isnan(vals).astype(object)
        return out
    flat = arr.reshape(n, -1).astype(np.float64)
    real = {f"output[{j}]": flat[:, j] for j in range(min(flat.shape[1], 16))}
    real["sum(output)"] = flat.sum(axis=1)
    vec_floats = tuple(k for k in real if k != "sum(output)") if arr.dtype.kind == "f" else ()
    return Outputs(n, real=real, floats=vec_floats)


# ----------------------------------------------------------------------------- lattice cells


def lattice_cells(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Floating-point cells of float64 values: ``(binade, grain)`` as int64 pairs.

    ``binade`` is the exponent ``e`` with ``2**e <= |v| < 2**(e+1)`` (signed by the value's
    sign: ``e + 2048`` for negatives), ``grain`` the exponent of the value's lowest set bit,
    so ``v`` is an odd multiple of ``2**grain``. Values on a lattice ``g * Z`` (``g`` a
    power of two) all have ``grain >= log2(g)``; Mironov's attack separates inputs exactly
    when one input's outputs reach cells the other's cannot. Zero gets ``(-4096, -4096)``
    and NaN ``(-8192, -8192)``.
    """
    v = np.ascontiguousarray(values, dtype=np.float64)
    bits = v.view(np.uint64)
    expo = ((bits >> np.uint64(52)) & np.uint64(0x7FF)).astype(np.int64)
    mant = bits & np.uint64((1 << 52) - 1)
    normal = expo > 0
    mant |= np.where(normal, np.uint64(1 << 52), np.uint64(0))
    low = mant & (~mant + np.uint64(1))  # the lowest set bit, a power of two below 2**53
    # the exponent of a power of two below 2**53 is exact in its float64 representation
    tz = ((low.astype(np.float64).view(np.uint64) >> np.uint64(52)).astype(np.int64)) - 1023
    base = np.where(normal, expo - 1075, -1074)  # exponent of the mantissa's last bit
    grain = base + tz
    binade = expo - 1023
    sub = ~normal
    if sub.any():  # subnormals: the leading bit's exponent
        top = (mant[sub].astype(np.float64).view(np.uint64) >> np.uint64(52)).astype(np.int64)
        binade[sub] = top - 1023 - 1074
    binade += np.where(np.signbit(v), 2048, 0)
    zero = v == 0
    binade[zero], grain[zero] = -4096, -4096
    nan = np.isnan(v)
    binade[nan], grain[nan] = -8192, -8192
    return binade, grain


def _describe_binade(b: int) -> str:
    if b == -4096:
        return "{0}"
    if b == -8192:
        return "none"
    sign = "-" if b >= 1024 else ""
    e = b - 2048 if b >= 1024 else b
    return f"{sign}[2^{e}, 2^{e + 1})"


# ----------------------------------------------------------------------------- featurizer


@dataclass(frozen=True)
class _Vocab:
    """Category codes: numeric (a sorted array of keys) or object (a dict)."""

    keys: np.ndarray | None
    table: dict[Any, int] | None
    labels: tuple[str, ...]

    def encode(self, raw: np.ndarray) -> np.ndarray:
        if self.keys is not None:
            vals = np.asarray(raw, dtype=self.keys.dtype)
            if self.keys.size == 0:
                return np.full(vals.shape[0], -1, dtype=np.int64)
            pos = np.searchsorted(self.keys, vals)
            pos = np.minimum(pos, self.keys.size - 1)
            hit = self.keys[pos] == vals
            return np.where(hit, pos, -1).astype(np.int64)
        table = self.table or {}
        return np.fromiter((table.get(v, -1) for v in raw.tolist()), np.int64, raw.shape[0])


def _numeric_vocab(vals: np.ndarray, label: Any) -> _Vocab:
    keys, counts = np.unique(vals, return_counts=True)
    if keys.size > MAX_CATEGORIES:
        keep = np.sort(np.argsort(-counts, kind="stable")[:MAX_CATEGORIES])
        keys = keys[keep]
    return _Vocab(keys, None, tuple(label(k) for k in keys.tolist()))


def _object_vocab(labels: np.ndarray) -> _Vocab:
    counts: dict[Any, int] = {}
    for v in labels.tolist():
        if v is not None:
            counts[v] = counts.get(v, 0) + 1
    chosen = sorted(counts, key=lambda v: -counts[v])[:MAX_CATEGORIES]
    table = {v: i for i, v in enumerate(chosen)}
    return _Vocab(None, table, tuple(_label(v) for v in chosen))


def _label(v: Any) -> str:
    if isinstance(v, float) and v.is_integer() and abs(v) < 2**53:
        return str(int(v))
    return repr(v) if isinstance(v, str) else str(v)


class Featurizer:
    """Features of outputs, with vocabularies fitted on the selection half (module docstring)."""

    def __init__(self) -> None:
        self._cats: dict[str, _Vocab] = {}
        self._values: dict[str, _Vocab] = {}
        self._cells: dict[str, tuple[_Vocab, _Vocab]] = {}
        self._bins: dict[str, np.ndarray] = {}
        self._grids: dict[str, float] = {}
        self._real: tuple[str, ...] = ()
        self._fill: dict[str, Any] = {}
        self.floats: tuple[str, ...] = ()

    def fit(self, *halves: Outputs) -> Featurizer:
        """Fit vocabularies, bins, lattice cells and residue grids on the selection halves."""
        pooled = Outputs.concat(list(halves))
        self._real = tuple(sorted(pooled.real))
        self._fill = dict(pooled.fill)
        self.floats = tuple(pooled.floats)
        for name, labels in sorted(pooled.cat.items()):
            self._cats[name] = _object_vocab(labels)
        for name in self._real:
            vals = pooled.real[name]
            vals = vals[~np.isnan(vals)]
            if vals.size == 0:
                continue
            distinct = np.unique(vals)
            if distinct.size <= DISCRETE_LIMIT:
                self._values[name] = _numeric_vocab(vals, lambda v, nm=name: f"{nm} == {_label(v)}")
            else:
                qs = np.quantile(vals, np.linspace(0, 1, BINS + 1)[1:-1])
                self._bins[name] = np.unique(qs)
        for name in self.floats:
            binade, grain = lattice_cells(pooled.real[name])
            cell = _numeric_vocab(
                _pair(binade, grain),
                lambda k: "|output| in {} with lowest bit 2^{}".format(*_unpair(k)),
            )
            lowest = _numeric_vocab(grain, lambda g: f"lowest bit 2^{g}")
            self._cells[name] = (cell, lowest)
            grids = [g for h in halves if (g := _finest_gap(h.real.get(name))) is not None]
            if grids:
                self._grids[name] = min(grids)
        return self

    def transform(self, out: Outputs, *, lattice_only: bool = False) -> list[Feature]:
        """The features of a batch of outputs (the fitted vocabularies, unchanged)."""
        feats: list[Feature] = []
        if not lattice_only:
            for name in self._real:
                vals = out.real.get(name, np.full(out.n, np.nan))
                feats.append(Feature(name, "real", vals))
                if name in self._values:
                    voc = self._values[name]
                    feats.append(Feature(f"{name} value", "cat", voc.encode(vals), voc.labels))
                if name in self._bins:
                    edges = self._bins[name]
                    codes = np.searchsorted(edges, vals, side="left").astype(np.int64)
                    codes[np.isnan(vals)] = -1
                    feats.append(Feature(f"{name} bin", "cat", codes, _bin_labels(name, edges)))
            for name, voc in self._cats.items():
                # a batch (or input) without the column: its draws take the column's fill
                raw = out.cat.get(name, np.full(out.n, self._fill.get(name), dtype=object))
                feats.append(Feature(name, "cat", voc.encode(raw), voc.labels))
        for name in self.floats:
            vals = out.real.get(name, np.full(out.n, np.nan))
            feats.extend(self._lattice_features(name, vals))
        return feats

    def _lattice_features(self, name: str, vals: np.ndarray) -> list[Feature]:
        cell, lowest = self._cells[name]
        binade, grain = lattice_cells(vals)
        feats = [
            Feature(
                f"lattice cell of {name}",
                "cat",
                cell.encode(_pair(binade, grain)),
                cell.labels,
                True,
            ),
            Feature(f"lowest bit of {name}", "cat", lowest.encode(grain), lowest.labels, True),
        ]
        if name in self._grids:
            g = self._grids[name]
            with np.errstate(invalid="ignore"):
                res = np.fmod(vals, g) / g  # fmod of floats is exact
            feats.append(Feature(f"{name} modulo 2^{int(np.log2(g))}", "real", res, (), True))
        return feats


def _pair(binade: np.ndarray, grain: np.ndarray) -> np.ndarray:
    return (binade + 16384) * 32768 + (grain + 16384)


def _unpair(code: Any) -> tuple[str, int]:
    b, g = divmod(int(code), 32768)
    return _describe_binade(b - 16384), g - 16384


def _bin_labels(name: str, edges: np.ndarray) -> tuple[str, ...]:
    pts = [-np.inf, *edges.tolist(), np.inf]
    return tuple(f"{name} in ({pts[i]:.6g}, {pts[i + 1]:.6g}]" for i in range(len(pts) - 1))


def _finest_gap(vals: np.ndarray | None) -> float | None:
    """The largest power of two at most the smallest gap between distinct finite values."""
    if vals is None:
        return None
    v = np.unique(vals[np.isfinite(vals)])
    if v.size < 16:
        return None
    gaps = np.diff(v)
    gaps = gaps[gaps > 0]
    if gaps.size == 0:
        return None
    return float(2.0 ** np.floor(np.log2(float(gaps.min()))))
