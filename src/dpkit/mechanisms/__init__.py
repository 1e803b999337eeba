"""Noise mechanisms: small frozen values with ``release`` / ``select`` and ``.privacy``.

Every mechanism states its guarantee in its docstring, exposes it as ``.privacy``, draws all
randomness from the exact samplers of :mod:`dpkit.samplers` (secure by default), and spends
through ``accountant=`` before drawing noise.
"""

from dpkit.mechanisms.gaussian import (
    DiscreteGaussian,
    Gaussian,
    accuracy_to_gaussian_sigma,
    analytic_gaussian_sigma,
    classic_gaussian_sigma,
    discrete_gaussian_delta,
    gaussian_sigma_to_accuracy,
)
from dpkit.mechanisms.laplace import (
    Geometric,
    Laplace,
    accuracy_to_laplace_scale,
    laplace_scale_to_accuracy,
)
from dpkit.mechanisms.selection import Exponential, PermuteAndFlip, ReportNoisyMax
from dpkit.release import Release

__all__ = [
    "DiscreteGaussian",
    "Exponential",
    "Gaussian",
    "Geometric",
    "Laplace",
    "PermuteAndFlip",
    "Release",
    "ReportNoisyMax",
    "accuracy_to_gaussian_sigma",
    "accuracy_to_laplace_scale",
    "analytic_gaussian_sigma",
    "classic_gaussian_sigma",
    "discrete_gaussian_delta",
    "gaussian_sigma_to_accuracy",
    "laplace_scale_to_accuracy",
]
