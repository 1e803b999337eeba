"""Shared pieces of the mechanisms: input handling, the power-of-two grid, spending."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from dpkit._lattice import Values, parse_values, round_values
from dpkit._validate import as_real_array, check_int
from dpkit.errors import ParameterError

__all__ = [
    "as_integers",
    "as_values",
    "below_step_note",
    "check_size",
    "grid_round",
    "measured",
    "pow2_at_most",
    "restore_shape",
    "zero_noise_probability",
]

#: Largest |value / grid| a continuous mechanism accepts: the lattice coordinates and the noise
#: must fit comfortably in int64.
_MAX_LATTICE = 2.0**61


def check_size(owner: str, size: Any) -> int:
    """The number of releases a ``sample`` method draws: an int >= 1."""
    return check_int(owner, "size", size, minimum=1)


#: Finest and coarsest lattice spacing a mechanism uses. Finest: a normal float, so that
#: ``value / grid`` of an ordinary value does not overflow. Coarsest: lattice points up to
#: ``2**63`` (value plus noise, in int64) map back to finite floats, so a release is never
#: infinite (``2**63 * 2**959 < 2**1023``).
MIN_GRID = 2.0**-1022
MAX_GRID = 2.0**959


def pow2_at_most(x: float) -> float:
    """The largest power of two ``<= x`` (exact: ``math.frexp`` reads the exponent).

    ``x`` must be a finite positive float (callers check their parameters first, see
    :func:`lattice_grid`).
    """
    if not (x > 0 and math.isfinite(x)):  # pragma: no cover - callers check first
        raise ParameterError(f"pow2_at_most: expected a finite positive number; got {x!r}")
    _m, e = math.frexp(x)  # x = m * 2**e with 0.5 <= m < 1
    return math.ldexp(1.0, e - 1)


def lattice_grid(owner: str, x: float, *, params: str) -> float:
    """The lattice spacing: the largest power of two ``<= x``, within [MIN_GRID, MAX_GRID].

    ``x`` is derived from public parameters (the sensitivity, the noise scale); ``params``
    names them for the message, for example ``"`sensitivity`=1e+308"``. A spacing outside
    the range would make the lattice underflow (values cannot be placed on it) or its points
    overflow (releases would be infinite), so it is refused before anything is spent.
    """
    if not (math.isfinite(x) and x >= MIN_GRID):
        raise ParameterError(
            f"{owner}: {params} is too small: the lattice this mechanism rounds to would "
            f"have a spacing of {x:.3g}, below the smallest normal float (2**-1022); rescale "
            "the values (for example to other units) so the sensitivity is not so tiny"
        )
    g = pow2_at_most(x)
    if g > MAX_GRID:
        raise ParameterError(
            f"{owner}: {params} is too large: released values (on a lattice of spacing "
            f"{g:.3g}) could overflow a float to infinity; rescale the values (for example "
            "to other units) so the sensitivity is below about 1e290"
        )
    return g


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
    from dpkit.release import Release

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


def zero_noise_probability(kind: str, scale: float | Fraction) -> float:
    """``P[Z = 0]`` for the lattice noise: discrete Laplace of scale ``t`` steps
    (``kind="laplace"``: ``(1 - q) / (1 + q) = tanh(1 / (2 t))``, ``q = exp(-1/t)``) or
    discrete Gaussian of variance ``V`` steps squared (``"gaussian"``: ``1 / sum_k
    exp(-k**2 / (2 V))``, by Poisson summation ``1 / (sqrt(2 pi V) (1 + 2 exp(-2 pi**2 V) +
    ...))`` for ``V >= 1``, where the omitted terms are below ``1e-30``).

    Examples
    --------
    >>> round(zero_noise_probability("laplace", 1.0), 4), zero_noise_probability("laplace", 1e-300)
    (0.4621, 1.0)
    """
    s = float(scale)
    if kind == "laplace":
        return math.tanh(0.5 / s) if s > 0 else 1.0
    if s >= 1:
        return 1 / (math.sqrt(2 * math.pi * s) * (1 + 2 * math.exp(-2 * math.pi**2 * s)))
    k = np.arange(1, 41, dtype=np.float64)
    return float(1 / (1 + 2 * np.exp(-(k * k) / (2 * s)).sum()))


def below_step_note(kind: str, scale: float | Fraction) -> dict[str, str]:
    """``{"note": ...}`` when the noise is below the lattice step (zero at least half the
    time), else ``{}``: such a release is, more often than not, the exact (lattice-rounded)
    value, and its interval can have width 0; epsilon is so large that the noise hides
    almost nothing (a valid guarantee, a weak one)."""
    p = zero_noise_probability(kind, scale)
    if p < 0.5:
        return {}
    return {
        "note": (
            f"noise below the lattice step: it is zero with probability {p:.6g}, so the "
            "release is the exact (lattice-rounded) value that often and its interval can "
            "have width 0; the privacy parameter is so large that the noise hides almost "
            "nothing"
        )
    }
