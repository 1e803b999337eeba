"""Real values on a power-of-two lattice, with integer noise added block by block.

A mechanism on real values releases ``g * (round(x / g) + Z)``: each value rounded to the
nearest point of the lattice ``g Z`` (``g`` a power of two fixed by public parameters, the
rounding charged in the sensitivity by :mod:`dpkit.noise.calibration`), plus an exact draw
``Z`` of a law of :mod:`dpkit.noise.laws`, mapped back to floats. The output is a function
of the noisy lattice point only, so no floating-point artefact of the input survives
(Mironov 2012).

:class:`LatticeValues` does it in two steps around the spend: :meth:`LatticeValues.of`
checks the values against the lattice before anything is spent (the only failure), and
:meth:`LatticeValues.plus_noise` draws and writes the release. The noise is drawn block by
block (:meth:`~dpkit.noise.laws.DiscreteLaplaceLaw.blocks`), and each block is rounded,
added and written out while it is in cache: a release of ``n`` floats holds its ``n``
outputs and a few blocks of 65,536 values, never the whole lattice or noise as separate
arrays. The values, blocks and words are those of rounding every value, drawing
``law.draw(n)`` and adding, so a seed gives the same release either way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dpkit._lattice import Values, round_values
from dpkit.noise.laws import Law
from dpkit.samplers import BitSource

__all__ = ["MAX_LATTICE", "LatticeValues", "grid_round", "restore_shape"]

#: Largest ``|value / grid|`` a real-valued mechanism accepts: the lattice coordinates and the
#: noise must fit comfortably in int64.
MAX_LATTICE = 2.0**61


def grid_round(owner: str, values: Values, grid: float) -> np.ndarray:
    """Lattice coordinates ``round(values / grid)`` as int64 (``grid`` a power of two).

    Floats are divided exactly and rounded by ``rint``; exact inputs are rounded in rational
    arithmetic (:func:`dpkit._lattice.round_values`), both to nearest with ties to even.
    Rounding to nearest is monotone with error at most 1/2, so two inputs ``|u - v| <= D``
    land at most ``floor(D/grid) + 1`` lattice steps apart; mechanisms charge that in their
    sensitivity.
    """
    return round_values(f"{owner}.release", values, grid, limit=MAX_LATTICE)


def restore_shape(lattice: np.ndarray, grid: float, scalar: bool) -> Any:
    """Map lattice points back to floats (a post-processing step, so no privacy cost)."""
    out = lattice.astype(np.float64)
    out *= grid  # a power of two: exact
    if scalar:
        return float(out.reshape(()))
    return out


@dataclass(frozen=True, slots=True)
class LatticeValues:
    """Values checked for the lattice ``grid``, ready for :meth:`plus_noise`.

    ``floats`` holds real values still to be rounded (flattened, rounded block by block);
    ``points`` holds lattice coordinates already rounded (exact inputs, rounded in rational
    arithmetic when checked). One of them is ``None``.
    """

    grid: float
    shape: tuple[int, ...]
    scalar: bool
    floats: np.ndarray | None
    points: np.ndarray | None

    @classmethod
    def of(cls, owner: str, values: Values, grid: float) -> LatticeValues:
        """``values`` checked for ``grid``: ``|value / grid| < 2**61``
        (:data:`MAX_LATTICE`), else the ParameterError of :func:`grid_round`. Nothing is
        drawn or spent; floats are not copied (their range is read with ``min`` and
        ``max``)."""
        if values.floats is None:  # exact numbers: rounded now, in rational arithmetic
            points = grid_round(owner, values, grid).ravel()
            return cls(grid, values.shape, values.scalar, None, points)
        flat = values.floats.reshape(-1)
        if flat.size:
            top = max(-float(flat.min()), float(flat.max())) / grid  # exact, or inf
            if top >= MAX_LATTICE:  # refused as grid_round refuses it (only this path copies)
                extreme = flat[[int(np.argmax(np.abs(flat)))]]
                grid_round(owner, Values(extreme, None, (1,), False), grid)
        return cls(grid, values.shape, values.scalar, flat, None)

    @property
    def size(self) -> int:
        """The number of values."""
        held = self.floats if self.floats is not None else self.points
        return 0 if held is None else int(held.size)

    def _add_points(self, z: np.ndarray, start: int, scratch: _Scratch) -> None:
        """Add to ``z`` the lattice coordinates of flat positions ``[start, start + z.size)``
        of the values repeated (within one repetition or across several)."""
        n = self.size
        done = 0
        while done < z.size:
            i = (start + done) % n
            j = min(n, i + z.size - done)
            part = z[done : done + j - i]
            if self.points is not None:
                part += self.points[i:j]
            else:
                assert self.floats is not None
                scaled, points = scratch.take(j - i)
                np.divide(self.floats[i:j], self.grid, out=scaled)  # exact: a power of two
                np.rint(scaled, out=scaled)
                points[...] = scaled  # integer-valued floats below 2**61: exact
                part += points
            done += j - i

    def plus_noise(self, noise: Law, size: int | None, source: BitSource) -> Any:
        """``grid * (round(value / grid) + Z)`` with ``Z`` drawn from ``noise``.

        ``size=None``: one release, a float for a scalar and a float64 array of the values'
        shape otherwise. ``size=k``: ``k`` independent releases, shape ``(k, *shape)``.
        The draws are ``noise.draw(k * n)`` in order (row by row), taken block by block.
        """
        reps = 1 if size is None else size
        n = self.size
        total = reps * n
        out = np.empty(total, dtype=np.float64)
        scratch = _Scratch()
        pos = 0
        for z in noise.blocks(total, source):
            m = z.size
            if m:
                self._add_points(z, pos, scratch)  # the block is the caller's to change
                np.multiply(z, self.grid, out=out[pos : pos + m])  # a power of two: exact
            pos += m
        if size is None:
            if self.scalar:
                return float(out.reshape(()))
            return out.reshape(self.shape)
        return out.reshape((size, *self.shape))


class _Scratch:
    """Two buffers reused by every block of one release (fresh large arrays page-fault)."""

    def __init__(self) -> None:
        self.scaled = np.empty(0, dtype=np.float64)
        self.points = np.empty(0, dtype=np.int64)

    def take(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        if self.scaled.size < k:
            self.scaled = np.empty(k, dtype=np.float64)
            self.points = np.empty(k, dtype=np.int64)
        return self.scaled[:k], self.points[:k]
