"""Bit sources and the rng normaliser."""

from __future__ import annotations

import numpy as np
import pytest

from dpkit.samplers import BitSource, SecureSource, SeededSource, as_source


def test_none_gives_a_secure_source() -> None:
    src = as_source(None)
    assert isinstance(src, SecureSource)
    assert src.secure is True


def test_seed_gives_reproducible_insecure_source() -> None:
    a, b = as_source(7), as_source(np.random.SeedSequence(7))
    assert a.secure is False and b.secure is False
    assert np.array_equal(a.words(5), b.words(5))
    assert np.array_equal(as_source(7).words(4), as_source(7).words(4))
    assert not np.array_equal(as_source(7).words(4), as_source(8).words(4))
    assert "secure=False" in repr(a)


def test_existing_source_passes_through() -> None:
    src = SeededSource(1)
    assert as_source(src) is src


def test_secure_requests_differ() -> None:
    src = SecureSource()
    assert not np.array_equal(src.words(4), src.words(4))


@pytest.mark.parametrize(
    ("rng", "exc"),
    [
        (True, TypeError),
        (-1, ValueError),
        (1.5, TypeError),
        ("seed", TypeError),
        (np.random.default_rng(0), TypeError),
    ],
)
def test_bad_rng_is_rejected(rng: object, exc: type[Exception]) -> None:
    with pytest.raises(exc, match="rng"):
        as_source(rng)


def test_words_are_uniform_bits() -> None:
    # 2**20 words: each of the 64 bit positions is 1 with frequency 1/2; the standard error
    # is 0.5 / 1024 ~ 4.9e-4, so 6 sigma = 0.003 bounds all 64 positions at once.
    w = SeededSource(3).words(1 << 20)
    bits = np.unpackbits(w.view(np.uint8)).reshape(-1, 64).mean(axis=0)
    assert np.all(np.abs(bits - 0.5) < 0.003)
    assert isinstance(SeededSource(3), BitSource)


def test_large_requests_span_segments_without_repeats() -> None:
    w = SeededSource(5).words(3 * 65536 + 17)
    assert np.unique(w).size == w.size
