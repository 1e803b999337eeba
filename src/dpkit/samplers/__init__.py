"""Exact, vectorised samplers over a secure bit source: the only layer that touches raw bits.

Every sampler takes ``rng``: ``None`` for a fresh secure source (ChaCha20 keyed from the OS
CSPRNG), an ``int`` or :class:`numpy.random.SeedSequence` for a reproducible source marked
``secure=False``, or an existing :class:`BitSource`.
"""

from dpkit.samplers._discrete import (
    MAX_NOISE_SCALE,
    bernoulli,
    bernoulli_exp,
    bernoulli_exp_int,
    discrete_gaussian,
    discrete_laplace,
    geometric,
    permutation,
    permutations,
    uniform_int,
)
from dpkit.samplers._source import BitSource, RngLike, SecureSource, SeededSource, as_source

__all__ = [
    "MAX_NOISE_SCALE",
    "BitSource",
    "RngLike",
    "SecureSource",
    "SeededSource",
    "as_source",
    "bernoulli",
    "bernoulli_exp",
    "bernoulli_exp_int",
    "discrete_gaussian",
    "discrete_laplace",
    "geometric",
    "permutation",
    "permutations",
    "uniform_int",
]
