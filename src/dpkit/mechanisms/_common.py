"""Shared pieces of the mechanisms: input handling, the power-of-two grid, spending."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from dpkit._lattice import Values, parse_values, round_values
from dpkit.accounting.loss import PrivacyLoss
from dpkit.errors import ParameterError

__all__ = [
    "as_integers",
    "as_values",
    "check_size",
    "grid_round",
    "measured",
    "pow2_at_most",
    "restore_shape",
    "spend",
]

#: Largest |value / grid| a continuous mechanism accepts: the lattice coordinates and the noise
#: must fit comfortably in int64.
_MAX_LATTICE = 2.0**61


def spend(accountant: Any, privacy: PrivacyLoss, label: str, relation: str = "unbounded") -> None:
    """Charge ``privacy``, which holds under ``relation``, to ``accountant`` (if any) before
    any noise is drawn."""
    if accountant is not None:
        accountant.spend(privacy, label=label, relation=relation)


def check_size(owner: str, size: Any) -> int:
    """The number of releases a ``sample`` method draws: an int >= 1."""
    if isinstance(size, bool) or not isinstance(size, int | np.integer):
        raise TypeError(f"{owner}: `size` must be an int >= 1; got {size!r}")
    if int(size) < 1:
        raise ParameterError(f"{owner}: `size` must be an int >= 1; got {size!r}")
    return int(size)


def pow2_at_most(x: float) -> float:
    """The largest power of two ``<= x`` (exact: ``math.frexp`` reads the exponent)."""
    if not (x > 0 and math.isfinite(x)):
        raise ParameterError(f"grid: expected a finite positive number; got {x!r}")
    _m, e = math.frexp(x)  # x = m * 2**e with 0.5 <= m < 1
    return math.ldexp(1.0, e - 1)


def as_values(owner: str, value: Any) -> Values:
    """A release's input (:func:`dpkit._lattice.parse_values`): floats, or exact numbers.

    Python ints beyond ``2**53``, :class:`~fractions.Fraction` values and sequences of them
    keep their exact value; they are rounded to the lattice in exact arithmetic.
    """
    return parse_values(f"{owner}.release", value)


#: Largest |value| an integer mechanism accepts, so that value + noise stays in int64.
_MAX_INTEGER = 2**62


def as_integers(owner: str, value: Any, *, other: str) -> np.ndarray:
    """An int64 array from integers or integer-valued floats, ``|value| < 2**62``.

    ``other`` names the mechanism for real values (the hint of the type error).
    """
    if isinstance(value, bool | np.bool_):
        raise TypeError(f"{owner}.release: `value` must be an integer; got bool")
    arr = np.asarray(value)
    if arr.dtype == object and arr.size and all(isinstance(v, int) for v in arr.flat):
        if max(abs(int(v)) for v in arr.flat) >= _MAX_INTEGER:
            raise ParameterError(f"{owner}.release: |value| must be below 2**62")
        arr = arr.astype(np.int64)
    if np.issubdtype(arr.dtype, np.floating):
        if not (np.all(np.isfinite(arr)) and np.all(arr == np.rint(arr))):
            raise TypeError(
                f"{owner}.release: `value` must hold integers; use {other} for real values"
            )
    elif arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"{owner}.release: `value` must hold integers; got dtype {arr.dtype}")
    if arr.size and max(-float(arr.min()), float(arr.max())) >= _MAX_INTEGER:
        raise ParameterError(
            f"{owner}.release: |value| must be below 2**62 so that value + noise fits in int64"
        )
    return arr.astype(np.int64)


def grid_round(owner: str, values: Values, grid: float) -> np.ndarray:
    """Lattice coordinates ``round(values / grid)`` as int64 (``grid`` a power of two).

    Floats are divided exactly and rounded by ``rint``; exact inputs are rounded in rational
    arithmetic (:func:`dpkit._lattice.round_values`), both to nearest with ties to even.
    Rounding to nearest is monotone with error at most 1/2, so two inputs ``|u - v| <= D``
    land at most ``floor(D/grid) + 1`` lattice steps apart; mechanisms charge that in their
    sensitivity.
    """
    return round_values(f"{owner}.release", values, grid, limit=_MAX_LATTICE)


def restore_shape(lattice: np.ndarray, grid: float, scalar: bool) -> Any:
    """Map lattice points back to floats (a post-processing step, so no privacy cost)."""
    out = lattice.astype(np.float64)
    out *= grid  # a power of two: exact
    if scalar:
        return float(out.reshape(()))
    return out


def fraction(x: float) -> Fraction:
    return Fraction(x)


def measured(
    mech: Any,
    value: Any,
    alpha: float,
    rng: Any,
    accountant: Any,
    details: Any,
) -> Any:
    """The ``measure`` of a continuous mechanism: :meth:`release` wrapped in a ``Release``.

    ``mech`` has ``release``, ``accuracy(alpha, d)``, ``noise_scale(d)`` and ``privacy``;
    ``details(d)`` gives the mechanism's own entries. The interval is given for a scalar only
    (``value +- accuracy``, each coordinate's own for arrays is ``accuracy(alpha, d)``).
    """
    from dpkit.mechanisms.release import Release

    owner = type(mech).__name__
    out = mech.release(value, rng=rng, accountant=accountant)
    scalar = np.ndim(out) == 0
    d = max(int(np.size(out)), 1)
    half = mech.accuracy(alpha, d)
    return Release(
        value=out,
        mechanism=owner,
        privacy=mech.privacy,
        scale=mech.noise_scale(d),
        interval=(out - half, out + half) if scalar else None,
        alpha=alpha,
        details={**details(d), "half_width": half},
        relation=mech.relation,
    )
