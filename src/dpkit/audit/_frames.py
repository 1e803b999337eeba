"""Released DataFrames as audit outputs: key presence, the set of keys, values per key.

A frame output is read through narwhals (Polars, pandas, PyArrow). Its columns split into
*key* columns and *value* columns: when some column ``c`` has ``c_low`` and ``c_high``
siblings (the Session's released frames), the value columns are those triples and every
other column is a key; otherwise the numeric columns are values and the rest keys. A batched
frame output holds every draw's rows with an integer column ``draw`` (``0 .. size - 1``).

Per draw the audit sees: which keys were released (one categorical feature: the set; and one
``present``/``absent`` feature per key), how many rows, and each value column per key
(``NaN`` where the key is absent), and each value column summed over the keys the draw released
(a joint feature: one person's rows in several groups move every group's sum the same way). A
draw's features depend on its own rows only, never on the
other draws of its batch (batches differ in size and in which keys some draw released).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpkit.audit.features import Outputs

__all__ = ["frame_outputs", "frames_outputs", "split_columns"]

#: At most this many distinct keys in one batch (each gets features of its own).
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
    """A batch of draws held in one frame with a ``draw`` column (module docstring).

    Every feature of a draw depends on that draw's rows alone, not on the batch: a key gets
    ``present`` / ``absent`` features in the batches where some draw released it, and
    :class:`~dpkit.audit.features.Outputs` fills ``absent`` in the others; the set of keys a
    draw released is labelled by its sorted key labels.
    """
    import narwhals as nw
    import polars as pl

    df = nw.from_native(frame, eager_only=True).to_polars()
    if "draw" not in df.columns:
        raise ValueError(
            "audit: a batched DataFrame output needs an integer column `draw` (0 .. size - 1) "
            "saying which draw each row belongs to"
        )
    draw = df["draw"].to_numpy().astype(np.int64)
    n = int(size) if size is not None else (int(draw.max()) + 1 if draw.size else 0)
    numeric = {c for c, t in df.schema.items() if t.is_numeric() and c != "draw"}
    keys, values = split_columns(list(df.columns), numeric)
    code = np.zeros(df.height, dtype=np.int64)  # each row's key, indexing `names`
    names = ["(total)"]
    if keys and df.height:
        groups = (
            df.select(keys)
            .with_row_index("__dpkit_row")
            .group_by(keys, maintain_order=True)
            .agg(pl.col("__dpkit_row"))
            .with_row_index("__dpkit_key")
        )
        rows = groups.select("__dpkit_key", "__dpkit_row").explode("__dpkit_row")
        code[rows["__dpkit_row"].to_numpy().astype(np.int64)] = rows["__dpkit_key"].to_numpy()
        names = [repr(t) if len(keys) > 1 else repr(t[0]) for t in groups.select(keys).rows()]
    if len(names) > MAX_KEYS:
        raise ValueError(
            f"audit: a batch of frames released {len(names)} distinct keys; the audit reads "
            f"at most {MAX_KEYS} (audit a query with fewer groups)"
        )
    out = Outputs(n)
    out.real["rows released"] = np.bincount(draw, minlength=n).astype(np.float64)
    label = np.asarray(names, dtype=object)[code] if df.height else np.zeros(0, dtype=object)
    sets = (
        pl.DataFrame({"draw": draw, "key": label.astype(str)})
        .group_by("draw")
        .agg(pl.col("key").sort().str.join(", "))
    )
    signature = np.full(n, "{}", dtype=object)
    signature[sets["draw"].to_numpy()] = ["{" + k + "}" for k in sets["key"].to_list()]
    out.cat["keys released"] = signature
    for j, name in enumerate(names):
        sel = code == j
        present = np.zeros(n, dtype=bool)
        present[draw[sel]] = True
        out.cat[f"key {name}"] = np.where(present, "present", "absent").astype(object)
        out.fill[f"key {name}"] = "absent"
        for v in values:
            vals = np.full(n, np.nan)
            vals[draw[sel]] = df[v].to_numpy()[sel].astype(np.float64)
            out.real[f"{v}[{name}]"] = vals
    for v in values:  # summed over the draw's keys (a joint feature; in every batch, even
        # one with a single key, so that it never depends on the batch)
        col = df[v].to_numpy().astype(np.float64)
        out.real[f"{v}[all keys]"] = np.bincount(draw, weights=col, minlength=n)
    # the lattice test reads float columns only: an integer (a count) has one representation
    floating = [v for v in values if df.schema[v].is_float()]
    out.floats = tuple(k for k in out.real if any(k.startswith(f"{v}[") for v in floating))
    return out
