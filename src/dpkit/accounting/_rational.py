"""Exact bookkeeping helpers: rationals for sums, directed rounding back to floats.

Every float is a dyadic rational, so ``Fraction(x)`` is exact and sums of Fractions never
round. Going back to floats, anything reported as *spent* is rounded up and anything reported
as *remaining* is rounded down, so a caller who spends exactly ``remaining`` always fits.
Values computed with ``log``/``sqrt``/``exp`` (conversions, advanced composition) are pushed
up by a few units in the last place to cover the floating-point error of those functions.
"""

from __future__ import annotations

import math
from fractions import Fraction

__all__ = [
    "ceil_float",
    "finite_up",
    "floor_float",
    "fraction_from_text",
    "fraction_to_text",
    "round_up",
]

#: Units in the last place added to a value computed with transcendental functions. CPython's
#: ``math.log``, ``math.sqrt``, ``math.exp`` and ``math.expm1`` are within 1 ulp; the formulas
#: here chain at most five such operations, so 8 ulps is a safe upper bound on the error.
_ULPS = 8


_MAX = Fraction(2**1024)  # every finite float is below 2**1024


def ceil_float(x: Fraction) -> float:
    """The smallest float >= ``x`` (``Fraction.__float__`` rounds to nearest; fix it up).

    ``inf`` when ``x`` exceeds every finite float (callers refuse it, naming the parameter).
    """
    if abs(x) >= _MAX:
        return math.inf if x > 0 else -float.fromhex("0x1.fffffffffffffp+1023")
    f = float(x)
    if Fraction(f) < x:
        f = math.nextafter(f, math.inf)
    return f


def floor_float(x: Fraction) -> float:
    """The largest float <= ``x`` (the largest finite float when ``x`` exceeds them all)."""
    if abs(x) >= _MAX:
        return float.fromhex("0x1.fffffffffffffp+1023") if x > 0 else -math.inf
    f = float(x)
    if Fraction(f) > x:
        f = math.nextafter(f, -math.inf)
    return f


def finite_up(owner: str, x: Fraction, what: str) -> float:
    """:func:`ceil_float` of ``x``, refused with a ParameterError when it overflows."""
    f = ceil_float(x)
    if not math.isfinite(f):
        from dpkit.errors import ParameterError

        raise ParameterError(f"{owner}: {what} exceeds the largest float (about 1.8e308)")
    return f


def round_up(x: float, ulps: int = _ULPS) -> float:
    """``x`` moved up by ``ulps`` units in the last place (0 stays 0)."""
    if x == 0:
        return 0.0
    for _ in range(ulps):
        x = math.nextafter(x, math.inf)
    return x


def fraction_to_text(x: Fraction) -> str:
    """Lossless text form ``"numerator/denominator"`` for storage."""
    return f"{x.numerator}/{x.denominator}"


def fraction_from_text(text: str) -> Fraction:
    """Inverse of :func:`fraction_to_text`; raises ``ValueError`` on anything else."""
    num, sep, den = text.partition("/")
    if not sep or not num.lstrip("-").isdigit() or not den.isdigit() or int(den) == 0:
        raise ValueError(f"not an exact rational: {text!r}")
    return Fraction(int(num), int(den))
