"""Privacy-loss values: :class:`PureDP`, :class:`ApproxDP` and :class:`ZCDP`.

They are frozen, comparable and addable. Addition is sequential composition within a type
(Dwork and Roth 2014, Theorem 3.16 for (epsilon, delta); Bun and Steinke 2016, Lemma 2.3 for
zCDP). ``PureDP`` is the special case ``delta = 0`` of ``ApproxDP``, so the two mix freely and
give an ``ApproxDP``. zCDP does not mix with the others without an explicit conversion
(see :mod:`dpkit.accounting`), because every conversion loses something and the caller should
choose it.

Ordering is "at most as much privacy loss": ``a <= b`` when every parameter of ``a`` is at
most the one of ``b``. It is a partial order; values of different families (zCDP against
(epsilon, delta)) do not compare and raise :class:`TypeError`.

Examples
--------
>>> PureDP(1.0) + PureDP(0.5)
PureDP(epsilon=1.5)
>>> ApproxDP(1, 1e-6) <= ApproxDP(2, 1e-5)
True
>>> PureDP(0.5) + ApproxDP(1.0, 1e-6)
ApproxDP(epsilon=1.5, delta=1e-06)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Union

from dpkit._validate import check_delta, check_nonnegative
from dpkit.accounting.events import Event
from dpkit.errors import ParameterError

__all__ = [
    "ZCDP",
    "ApproxDP",
    "PrivacyLoss",
    "PureDP",
    "event_to_dict",
    "loss_from_dict",
    "loss_to_dict",
]


class _EpsilonDelta:
    """The partial order shared by PureDP and ApproxDP: parameter-wise "at most"."""

    __slots__ = ()

    def _pair(self) -> tuple[float, float]:  # pragma: no cover - overridden
        raise NotImplementedError

    def __le__(self, other: object) -> bool:
        return _le(self, other)

    def __ge__(self, other: object) -> bool:
        return _le(other, self)

    def __lt__(self, other: object) -> bool:
        return _le(self, other) and self != other

    def __gt__(self, other: object) -> bool:
        return _le(other, self) and self != other


@dataclass(frozen=True, slots=True)
class PureDP(_EpsilonDelta):
    """Pure epsilon-differential privacy (Dwork, McSherry, Nissim and Smith 2006).

    A mechanism is ``epsilon``-DP when, for neighbouring datasets ``x, x'`` and every set of
    outputs ``S``, ``P[M(x) in S] <= exp(epsilon) P[M(x') in S]``.

    Parameters
    ----------
    epsilon : float
        A finite number >= 0 (0 means no privacy loss at all).

    Raises
    ------
    TypeError
        ``epsilon`` is not a real number (a bool, a string, ...).
    ParameterError
        ``epsilon`` is negative, NaN or infinite.

    Examples
    --------
    >>> PureDP(0.5) + PureDP(0.25)
    PureDP(epsilon=0.75)
    >>> PureDP(0.5) <= ApproxDP(0.5, 1e-9)
    True
    """

    epsilon: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_nonnegative("PureDP", "epsilon", self.epsilon))

    def _pair(self) -> tuple[float, float]:
        return self.epsilon, 0.0

    def __add__(self, other: object) -> PrivacyLoss:
        if isinstance(other, PureDP):
            return PureDP(self.epsilon + other.epsilon)
        if isinstance(other, ApproxDP):
            return ApproxDP(self.epsilon + other.epsilon, other.delta)
        return NotImplemented


@dataclass(frozen=True, slots=True)
class ApproxDP(_EpsilonDelta):
    """Approximate (epsilon, delta)-differential privacy (Dwork, Kenthapadi et al. 2006).

    ``P[M(x) in S] <= exp(epsilon) P[M(x') in S] + delta`` for neighbouring datasets and every
    set of outputs ``S``. ``delta`` should be far below ``1/n`` for ``n`` records: a mechanism
    that publishes each record with probability ``delta`` satisfies ``(0, delta)``.

    Parameters
    ----------
    epsilon : float
        A finite number >= 0.
    delta : float
        A number with ``0 <= delta < 1``.

    Raises
    ------
    TypeError
        A parameter is not a real number.
    ParameterError
        ``epsilon`` negative or not finite; ``delta`` outside ``[0, 1)``; adding two values
        whose deltas sum to 1 or more.

    Examples
    --------
    >>> ApproxDP(1.0, 1e-6) + ApproxDP(0.5, 1e-6)
    ApproxDP(epsilon=1.5, delta=2e-06)
    """

    epsilon: float
    delta: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_nonnegative("ApproxDP", "epsilon", self.epsilon))
        object.__setattr__(self, "delta", check_delta("ApproxDP", self.delta))

    def _pair(self) -> tuple[float, float]:
        return self.epsilon, self.delta

    def __add__(self, other: object) -> PrivacyLoss:
        if isinstance(other, PureDP | ApproxDP):
            e, d = other._pair()
            total = self.delta + d
            if total >= 1:
                raise ParameterError(
                    f"ApproxDP: composed `delta` reaches {total!r}, which is no guarantee at all"
                )
            return ApproxDP(self.epsilon + e, total)
        return NotImplemented

    __radd__ = __add__


@dataclass(frozen=True, slots=True)
class ZCDP:
    """rho-zero-concentrated differential privacy (Bun and Steinke 2016).

    The Renyi divergence of order ``alpha`` between ``M(x)`` and ``M(x')`` is at most
    ``rho * alpha`` for every ``alpha > 1``. It adds up under composition and converts to
    ``(epsilon, delta)`` explicitly (:func:`dpkit.zcdp_to_approx`).

    Parameters
    ----------
    rho : float
        A finite number >= 0.

    Raises
    ------
    TypeError
        ``rho`` is not a real number; adding or comparing with an ``(epsilon, delta)`` value
        (convert one explicitly).
    ParameterError
        ``rho`` negative or not finite.

    Examples
    --------
    >>> ZCDP(0.125) + ZCDP(0.125)
    ZCDP(rho=0.25)
    """

    rho: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "rho", check_nonnegative("ZCDP", "rho", self.rho))

    def __add__(self, other: object) -> ZCDP:
        if isinstance(other, ZCDP):
            return ZCDP(self.rho + other.rho)
        if isinstance(other, PureDP | ApproxDP):
            raise TypeError(
                "cannot add ZCDP and (epsilon, delta) losses directly: convert one explicitly, "
                "for example dpkit.accounting.pure_to_zcdp(...) or zcdp_to_approx(...)"
            )
        return NotImplemented

    def __le__(self, other: object) -> bool:
        if isinstance(other, ZCDP):
            return self.rho <= other.rho
        return _incomparable(self, other)

    def __ge__(self, other: object) -> bool:
        if isinstance(other, ZCDP):
            return self.rho >= other.rho
        return _incomparable(self, other)

    def __lt__(self, other: object) -> bool:
        if isinstance(other, ZCDP):
            return self.rho < other.rho
        return _incomparable(self, other)

    def __gt__(self, other: object) -> bool:
        if isinstance(other, ZCDP):
            return self.rho > other.rho
        return _incomparable(self, other)


#: Any privacy-loss value: ``PureDP``, ``ApproxDP`` or ``ZCDP`` (what budgets, costs and
#: claims accept).
PrivacyLoss = Union[PureDP, ApproxDP, ZCDP]  # noqa: UP007 (runtime alias)


def _incomparable(a: object, b: object) -> bool:
    raise TypeError(
        f"cannot compare {type(a).__name__} with {type(b).__name__}: convert one explicitly"
    )


def _le(a: object, b: object) -> bool:
    if isinstance(a, PureDP | ApproxDP) and isinstance(b, PureDP | ApproxDP):
        ea, da = a._pair()
        eb, db = b._pair()
        return ea <= eb and da <= db
    return _incomparable(a, b)


def loss_to_dict(loss: PrivacyLoss) -> dict[str, Any]:
    """``{"type": "PureDP", "epsilon": ...}``: a loss as JSON data, as the ledger and the
    release records keep it (floats round-trip exactly through JSON)."""
    if isinstance(loss, PureDP):
        return {"type": "PureDP", "epsilon": loss.epsilon}
    if isinstance(loss, ApproxDP):
        return {"type": "ApproxDP", "epsilon": loss.epsilon, "delta": loss.delta}
    assert isinstance(loss, ZCDP)
    return {"type": "ZCDP", "rho": loss.rho}


def loss_from_dict(data: Mapping[str, Any]) -> PrivacyLoss:
    """Inverse of :func:`loss_to_dict`; ``KeyError`` for a missing field, ``ValueError``
    for an unknown type, and the loss's own errors for bad values."""
    kind = data["type"]
    if kind == "PureDP":
        return PureDP(data["epsilon"])
    if kind == "ApproxDP":
        return ApproxDP(data["epsilon"], data["delta"])
    if kind == "ZCDP":
        return ZCDP(data["rho"])
    raise ValueError(f"unknown loss type {kind!r}")


def event_to_dict(event: Event) -> dict[str, Any]:
    """``{"type": "Laplace", "scale": ..., ...}``: a privacy event as JSON data, its type's
    name then its fields in declaration order, as the ledger and the release records keep it
    (floats round-trip exactly through JSON)."""
    values = {f.name: getattr(event, f.name) for f in fields(event)}  # type: ignore[arg-type]
    return {"type": type(event).__name__, **values}
