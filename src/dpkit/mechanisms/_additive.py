"""What the additive noise mechanisms share: reading their input and the ``measure`` template.

The calibration of their noise (the lattice, the scale), its draws and its accuracy are the
noise core's (:mod:`dpkit.noise`); a mechanism validates its parameters, reads the value
(:func:`as_values` for reals, :func:`as_integers` for integers), spends, and asks the core
for the release.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from dpkit._lattice import Values, parse_values
from dpkit._validate import as_real_array
from dpkit.errors import ParameterError
from dpkit.release import Release

__all__ = ["as_integers", "as_values", "float_down", "measured", "sqrt_down"]


def float_down(x: Fraction | int) -> float:
    """The largest float ``<= x`` (a noise parameter for an accounting event: rounded so
    the event is never less private than the noise drawn)."""
    f = float(x)
    return f if Fraction(f) <= x else math.nextafter(f, 0.0)


def sqrt_down(x: Fraction | int) -> float:
    """A float ``<= sqrt(x)``, within an ulp or two."""
    f = math.sqrt(x)
    while f > 0 and Fraction(f) ** 2 > x:
        f = math.nextafter(f, 0.0)
    return f


def as_values(owner: str, value: Any) -> Values:
    """A release's input (:func:`dpkit._lattice.parse_values`): floats, or exact numbers.

    Python ints beyond ``2**53``, :class:`~fractions.Fraction` values and sequences of them
    keep their exact value; they are rounded to the lattice in exact arithmetic.
    """
    return parse_values(f"{owner}.release", value)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


#: Largest |value| an integer mechanism accepts, so that value + noise stays in int64.
_MAX_INTEGER = 2**62


def as_integers(owner: str, value: Any, *, other: str) -> np.ndarray:
    """An int64 array from integers or integer-valued floats, ``|value| < 2**62``.

    ``other`` names the mechanism for real values (the hint of the type error).
    """
    if isinstance(value, bool | np.bool_):
        raise TypeError(f"{owner}.release: `value` must be an integer; got bool")
    if isinstance(value, np.ma.MaskedArray | str | bytes):
        as_real_array(f"{owner}.release", "value", value)  # refuses them, naming `value`
    try:
        arr = np.asarray(value)
    except (ValueError, RecursionError):
        as_real_array(f"{owner}.release", "value", value)  # a ragged or nested list: refused
        raise  # pragma: no cover - as_real_array raised
    if arr.dtype == object and arr.size and all(_is_int(v) for v in arr.flat):
        if max(abs(int(v)) for v in arr.flat) >= _MAX_INTEGER:
            raise ParameterError(f"{owner}.release: `value` must be below 2**62 in magnitude")
        arr = arr.astype(np.int64)
    if np.issubdtype(arr.dtype, np.floating):
        if not (np.all(np.isfinite(arr)) and np.all(arr == np.rint(arr))):
            raise TypeError(
                f"{owner}.release: `value` must hold integers; use {other} for real values"
            )
    elif arr.dtype.kind not in "iu":  # bool, time deltas, objects, complex: refused
        raise TypeError(f"{owner}.release: `value` must hold integers; got dtype {arr.dtype}")
    if arr.size and max(-float(arr.min()), float(arr.max())) >= _MAX_INTEGER:
        raise ParameterError(
            f"{owner}.release: `value` must be below 2**62 in magnitude so that value + noise "
            "fits in int64"
        )
    return arr.astype(np.int64)


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
    owner = type(mech).__name__
    mech.accuracy(alpha, 1)  # validate `alpha` before anything is spent
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
