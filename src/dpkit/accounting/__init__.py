"""Privacy-loss values, their composition and conversions, and the budget accountant.

* :mod:`~dpkit.accounting.loss` — :class:`PureDP`, :class:`ApproxDP`, :class:`ZCDP`.
* :mod:`~dpkit.accounting.conversions` — :func:`pure_to_zcdp`, :func:`bounded_range_to_zcdp`,
  :func:`zcdp_to_approx` (standard and Canonne-Kamath-Steinke), :func:`approx_to_zcdp`.
* :mod:`~dpkit.accounting.composition` — :func:`sequential_composition`,
  :func:`parallel_composition`, :func:`advanced_composition`.
* :mod:`~dpkit.accounting.accountant` — :class:`Accountant`, which refuses any spend that would
  exceed its budget and can keep every spend in a durable SQLite ledger.
* :mod:`~dpkit.accounting.events` — what a release is, for accounting: ``Laplace``,
  ``Gaussian``, ``Exponential``, ``SubsampledGaussian``, ``SubsampledLaplace``,
  ``RandomizedResponse``, ``KeySelection``, ``Approx``, ``Zcdp``.
* :mod:`~dpkit.accounting.tight` — :func:`compose`: a ledger of events composed by every
  analysis that applies (exact Gaussian, privacy-loss distributions, Renyi DP, zCDP, advanced,
  basic), returning a :class:`Composition` with the tightest valid epsilon.
"""

from dpkit.accounting import events
from dpkit.accounting.accountant import Accountant, Spend
from dpkit.accounting.composition import (
    advanced_composition,
    parallel_composition,
    sequential_composition,
)
from dpkit.accounting.conversions import (
    approx_to_zcdp,
    bounded_range_to_zcdp,
    pure_to_zcdp,
    zcdp_to_approx,
)
from dpkit.accounting.loss import ZCDP, ApproxDP, PrivacyLoss, PureDP
from dpkit.accounting.tight import Composition, compose

__all__ = [
    "ZCDP",
    "Accountant",
    "ApproxDP",
    "Composition",
    "PrivacyLoss",
    "PureDP",
    "Spend",
    "advanced_composition",
    "approx_to_zcdp",
    "bounded_range_to_zcdp",
    "compose",
    "events",
    "parallel_composition",
    "pure_to_zcdp",
    "sequential_composition",
    "zcdp_to_approx",
]
