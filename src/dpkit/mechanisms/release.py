"""The :class:`Release` record: a noisy value together with what produced it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from dpkit.accounting.loss import PrivacyLoss

__all__ = ["Release"]


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
