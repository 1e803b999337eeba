"""Exact, vectorised samplers over a secure bit source: the only layer that touches raw bits.

Every sampler takes ``rng``: ``None`` for a fresh secure source (ChaCha20 keyed from the OS
CSPRNG), an ``int`` or :class:`numpy.random.SeedSequence` for a reproducible source marked
``secure=False``, or an existing :class:`BitSource`.

The kernels (``draw_discrete_laplace``, ``draw_discrete_gaussian``, their ``*_blocks``
forms, ``uniform_one``, ``random_signs``, ``bernoulli_exp_pairs``) are the same samplers
without the boundary checks, for dpkit's own layers that hold a :class:`BitSource` and
checked their parameters from public figures (the noise core, :mod:`dpkit.noise`, and the
selection mechanisms): they are not re-exported from :mod:`dpkit`.
"""

from dpkit.samplers._discrete import (
    MAX_NOISE_SCALE,
    bernoulli,
    bernoulli_exp,
    bernoulli_exp_int,
    bernoulli_exp_pairs,
    discrete_gaussian,
    discrete_gaussian_blocks,
    discrete_laplace,
    discrete_laplace_blocks,
    draw_discrete_gaussian,
    draw_discrete_laplace,
    geometric,
    permutation,
    permutations,
    random_signs,
    uniform_int,
    uniform_one,
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
    "bernoulli_exp_pairs",
    "discrete_gaussian",
    "discrete_gaussian_blocks",
    "discrete_laplace",
    "discrete_laplace_blocks",
    "draw_discrete_gaussian",
    "draw_discrete_laplace",
    "geometric",
    "permutation",
    "permutations",
    "random_signs",
    "uniform_int",
    "uniform_one",
]
