"""The result records of dpkit: :class:`Release` and the :class:`Released` protocol.

Every private result carries what a reader needs to publish it: the guarantee it holds
(``privacy``), the neighbour relation that guarantee is stated for (``relation``) and public
figures about how it was produced (``details``, read-only). :class:`Released` names that
shape; the records of every layer follow it:

* :class:`Release`: one noisy value (a mechanism, a framework, a moment of an array);
* :class:`dpkit.statistics.QuantileRelease`, :class:`dpkit.statistics.BoundsRelease` and
  :class:`dpkit.statistics.ContributionBound`: quantiles, chosen bounds, a chosen
  contribution bound;
* :class:`dpkit.session.QueryRelease`: a released frame.

This module sits below the mechanisms (it needs only the privacy-loss values), so every
layer above can return a :class:`Release` without importing a mechanism.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

from dpkit.accounting.loss import PrivacyLoss

__all__ = ["Release", "Released"]


@runtime_checkable
class Released(Protocol):
    """What every dpkit result record offers: its guarantee, its relation, public details.

    Attributes
    ----------
    privacy
        The privacy-loss value (:class:`~dpkit.accounting.PureDP`,
        :class:`~dpkit.accounting.ApproxDP` or :class:`~dpkit.accounting.ZCDP`) the record
        was charged.
    relation
        The neighbour relation the guarantee holds under: ``"unbounded"`` (add or remove one
        record or privacy unit) or ``"bounded"`` (replace one). ``None`` only for a
        :class:`Release` built by hand.
    details
        Read-only public figures: parameters and noisy quantities, safe to publish with the
        result.
    """

    @property
    def privacy(self) -> PrivacyLoss: ...

    @property
    def relation(self) -> str | None: ...

    @property
    def details(self) -> Mapping[str, Any]: ...


@dataclass(frozen=True, slots=True)
class Release:
    """A differentially private result and its metadata.

    Attributes
    ----------
    value
        The released value (float, array, chosen candidate), or ``None`` when ``refused``.
    mechanism
        Name of the mechanism or framework that produced it.
    privacy
        The privacy cost of producing it (charged whether or not it was refused).
    scale
        The noise scale actually used (Laplace b, Gaussian sigma, ...), or ``None``.
    interval
        A ``(1 - alpha)`` confidence interval for the true value around ``value``, or ``None``.
    alpha
        The ``alpha`` of ``interval``.
    refused
        ``True`` when a framework (such as propose-test-release) declined to release.
    details
        Framework-specific figures that are safe to publish with the value: public
        parameters and noisy quantities (noisy distance and threshold for PTR, beta, chunk
        count, ...), read-only.
    diagnostics
        Figures computed from the data *without* noise, for study and teaching (the smooth
        sensitivity and the noise scale it implies, PTR's true distance, the loss of the
        sampled inverse-sensitivity output, ...). They are NOT differentially private:
        never publish them. Read-only; empty for the mechanisms.
    relation
        The neighbour relation the guarantee ``privacy`` holds under: ``"unbounded"`` (add or
        remove one record) or ``"bounded"`` (replace one record; ``n`` public). A record is a
        row, or all rows of one person when a privacy unit is set. ``None`` only for records
        built by hand.
    """

    value: Any
    mechanism: str
    privacy: PrivacyLoss
    scale: float | None = None
    interval: tuple[float, float] | None = None
    alpha: float | None = None
    refused: bool = False
    details: Mapping[str, Any] = field(default_factory=dict)
    diagnostics: Mapping[str, Any] = field(default_factory=dict)
    relation: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "details", MappingProxyType(dict(self.details)))
        object.__setattr__(self, "diagnostics", MappingProxyType(dict(self.diagnostics)))
