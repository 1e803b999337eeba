"""Privacy-loss values, their composition and conversions, and the budget accountant."""

from dpkit.accounting.loss import ZCDP, ApproxDP, PrivacyLoss, PureDP

__all__ = ["ZCDP", "ApproxDP", "PrivacyLoss", "PureDP"]
