"""Released DataFrames as audit outputs: key presence, the set of keys, values per key.

A frame output is read through narwhals (Polars, pandas, PyArrow). Its columns split into
*key* columns and *value* columns: when some column ``c`` has ``c_low`` and ``c_high``
siblings (the Session's released frames), the value columns are those triples and every
other column is a key; otherwise the numeric columns are values and the rest keys. A batched
frame output holds every draw's rows with an integer column ``draw`` (``0 .. size - 1``).

Per draw the audit sees: which keys were released (one categorical feature: the set; and one
``present``/``absent`` feature per key), how many rows, and each value column per key
(``NaN`` where the key is absent).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpkit.audit.features import Outputs

__all__ = ["frame_outputs", "frames_outputs", "split_columns"]

#: Keys beyond this many (the most frequent are kept) get no feature of their own.
MAX_KEYS = 256


def split_columns(columns: list[str], numeric: set[str]) -> tuple[list[str], list[str]]:
    """``(keys, values)`` by the rule of the module docstring."""
    cols = [c for c in columns if c != "draw"]
    triples = [c for c in cols if f"{c}_low" in cols and f"{c}_high" in cols]
    if triples:
        values = [*triples, *(f"{c}_low" for c in triples), *(f"{c}_high" for c in triples)]
        return [c for c in cols if c not in values], triples
    return [c for c in cols if c not in numeric], [c for c in cols if c in numeric]


def frames_outputs(frames: list[Any]) -> Outputs:
    """One frame per draw: stack them with a ``draw`` column and read them as one batch."""
    import narwhals as nw

    parts = [
        nw.from_native(f, eager_only=True).with_columns(nw.lit(i).alias("draw"))
        for i, f in enumerate(frames)
    ]
    stacked = nw.concat(parts, how="vertical")
    return frame_outputs(stacked, len(frames))


def frame_outputs(frame: Any, size: int | None) -> Outputs:
    """A batch of draws held in one frame with a ``draw`` column (module docstring)."""
    import narwhals as nw

    df = nw.from_native(frame, eager_only=True)
    if "draw" not in df.columns:
        raise ValueError(
            "audit: a batched DataFrame output needs an integer column `draw` (0 .. size - 1) "
            "saying which draw each row belongs to"
        )
    draw = df["draw"].to_numpy().astype(np.int64)
    n = int(size) if size is not None else (int(draw.max()) + 1 if draw.size else 0)
    numeric = {c for c in df.columns if df.schema[c].is_numeric() and c != "draw"}
    keys, values = split_columns(list(df.columns), numeric)
    if keys:
        parts = [df[k].to_list() for k in keys]  # Python values: clean labels
        label = np.empty(draw.size, dtype=object)
        label[:] = [repr(t) if len(keys) > 1 else repr(t[0]) for t in zip(*parts, strict=True)]
    else:
        label = np.full(draw.size, "(total)", dtype=object)
    uniq, code, counts = np.unique(label.astype(str), return_inverse=True, return_counts=True)
    keep = np.sort(np.argsort(-counts, kind="stable")[:MAX_KEYS])
    remap = np.full(uniq.size, -1, dtype=np.int64)
    remap[keep] = np.arange(keep.size)
    kcode = remap[code.reshape(-1)]
    present = np.zeros((n, keep.size), dtype=bool)
    ok = kcode >= 0
    present[draw[ok], kcode[ok]] = True
    out = Outputs(n)
    out.real["rows released"] = np.bincount(draw, minlength=n).astype(np.float64)
    signature = np.empty(n, dtype=object)
    names = uniq[keep].tolist()
    signature[:] = (
        ["{" + ", ".join(names[j] for j in np.flatnonzero(row)) + "}" for row in present]
        if keep.size <= 16
        else [bytes(np.packbits(row)) for row in present]
    )
    out.cat["keys released"] = signature
    for j, name in enumerate(names):
        out.cat[f"key {name}"] = np.where(present[:, j], "present", "absent").astype(object)
    for v in values:
        col = df[v].to_numpy().astype(np.float64)
        for j, name in enumerate(names):
            vals = np.full(n, np.nan)
            sel = kcode == j
            vals[draw[sel]] = col[sel]
            out.real[f"{v}[{name}]"] = vals
    out.floats = tuple(k for k in out.real if k != "rows released")
    return out
