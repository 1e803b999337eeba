"""Bit sources: the only objects in dpkit that produce raw random bits.

Two sources share one generator, ChaCha20 (Bernstein 2008) from the ``cryptography`` package:

* :class:`SecureSource` (the default) keys every request with 32 fresh bytes from the
  operating system's CSPRNG (``os.urandom``); it is a cryptographic generator seeded from the
  OS, and ``secure`` is ``True``.
* :class:`SeededSource` derives the key from a user seed so runs repeat exactly; it is for
  tests and demos only and says so with ``secure=False``.

:func:`as_source` is the one normaliser of the ``rng`` keyword used everywhere in dpkit:
``None`` gives a fresh :class:`SecureSource`, an ``int`` or :class:`numpy.random.SeedSequence`
gives a :class:`SeededSource`, and an existing source passes through unchanged. NumPy's global
state is never read or seeded.
"""

from __future__ import annotations

import hashlib
import os
import struct
import threading
from typing import Any

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

__all__ = ["BitSource", "RngLike", "SecureSource", "SeededSource", "as_source"]

_U64 = np.dtype("<u8")


_SEGMENT_WORDS = 1 << 16
_ZEROS = memoryview(bytes(8 * _SEGMENT_WORDS))


def _chacha20_words(key: bytes, nonce: bytes, n: int) -> np.ndarray:
    """``n`` little-endian 64-bit words of ChaCha20 keystream under ``key`` and ``nonce``.

    The keystream is written straight into the result (encrypting a shared zero buffer
    segment by segment), so a request costs one allocation and no copies.
    """
    out = np.empty(n, dtype=_U64)
    if n == 0:
        return out
    enc = Cipher(algorithms.ChaCha20(key, nonce), mode=None).encryptor()
    view = memoryview(out.view(np.uint8))  # type: ignore[arg-type]
    for start in range(0, n, _SEGMENT_WORDS):
        stop = min(n, start + _SEGMENT_WORDS)
        enc.update_into(_ZEROS[: 8 * (stop - start)], view[8 * start : 8 * stop])
    return out


class BitSource:
    """A source of independent uniform 64-bit words.

    Subclasses implement :meth:`words`. Everything random in dpkit is built from these words
    by the exact samplers in :mod:`dpkit.samplers`.
    """

    secure: bool = False

    def words(self, n: int) -> np.ndarray:  # pragma: no cover - abstract
        """Return ``n`` independent uniform 64-bit words.

        Parameters
        ----------
        n : int
            How many words, >= 0.

        Returns
        -------
        numpy.ndarray
            ``n`` words of dtype ``uint64``, each uniform on ``[0, 2**64)``.

        Raises
        ------
        NotImplementedError
            On the base class: subclasses implement it.
        """
        raise NotImplementedError

    def bits(self, n: int, k: int) -> np.ndarray:
        """``n`` independent uniform integers in ``[0, 2**k)``: the top ``k`` bits of words.

        Parameters
        ----------
        n : int
            How many, >= 0.
        k : int
            Bits per integer, ``0 < k <= 64``.

        Returns
        -------
        numpy.ndarray
            ``n`` values of dtype ``uint64``.

        Raises
        ------
        ValueError
            ``k`` outside ``1..64``.
        """
        if not 0 < k <= 64:
            raise ValueError(f"bits: k must be in 1..64; got {k}")
        w = self.words(n)
        return w >> np.uint64(64 - k) if k < 64 else w


class SecureSource(BitSource):
    """The default source: ChaCha20 keystream under a fresh OS-random key per request.

    Each call to :meth:`words` reads 32 bytes from ``os.urandom`` (the kernel CSPRNG) as a
    ChaCha20 key and returns keystream under it, so no state is kept between requests that an
    attacker could recover from memory and use to predict later noise.
    """

    secure = True

    def words(self, n: int) -> np.ndarray:
        return _chacha20_words(os.urandom(32), bytes(16), int(n))

    def __repr__(self) -> str:
        return "SecureSource(secure=True)"


class SeededSource(BitSource):
    """A reproducible source for tests and demos: never use it to protect real data.

    The key is SHA-256 of the seed's entropy; each request uses the next 96-bit nonce, so the
    stream of words is a deterministic function of the seed and the sequence of requests.
    Thread-safe (the request counter is taken under a lock).

    Parameters
    ----------
    seed : int or numpy.random.SeedSequence
        The seed (an ``int >= 0``); :func:`as_source` builds one from ``rng=<int>``.

    Raises
    ------
    TypeError, ValueError
        From :class:`numpy.random.SeedSequence` for a seed that is not a non-negative int.
    """

    secure = False

    def __init__(self, seed: int | np.random.SeedSequence) -> None:
        ss = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
        state = ss.generate_state(8, dtype=np.uint32).tobytes()
        self._key = hashlib.sha256(b"dpkit.SeededSource" + state).digest()
        self._counter = 0
        self._lock = threading.Lock()
        self._seed_repr = repr(ss.entropy)

    def words(self, n: int) -> np.ndarray:
        with self._lock:
            c = self._counter
            self._counter += 1
        nonce = struct.pack("<IQI", 0, c, 0)  # 32-bit block counter = 0, then a 96-bit nonce
        return _chacha20_words(self._key, nonce, int(n))

    def __repr__(self) -> str:
        return f"SeededSource(entropy={self._seed_repr}, secure=False)"


#: What every ``rng=`` argument accepts: ``None`` (secure), an ``int`` or ``SeedSequence``
#: seed (reproducible, not private), or a ``BitSource``.
RngLike = BitSource | int | np.random.SeedSequence | None


def as_source(rng: Any) -> BitSource:
    """Normalise the ``rng`` keyword.

    ``None`` gives a fresh :class:`SecureSource`; an ``int >= 0`` or a
    :class:`numpy.random.SeedSequence` gives a :class:`SeededSource` (``secure=False``); a
    :class:`BitSource` passes through.
    """
    if rng is None:
        return SecureSource()
    if isinstance(rng, BitSource):
        return rng
    if isinstance(rng, bool | np.bool_):
        raise TypeError(
            "`rng`: a bool is not a seed; pass None (secure), an int seed or a BitSource"
        )
    if isinstance(rng, int | np.integer) and not isinstance(rng, np.timedelta64):
        if int(rng) < 0:
            from dpkit.errors import ParameterError

            raise ParameterError(f"`rng`: an integer seed must be >= 0; got {int(rng)}")
        return SeededSource(int(rng))
    if isinstance(rng, np.random.SeedSequence):
        return SeededSource(rng)
    if isinstance(rng, np.random.Generator | np.random.RandomState):
        raise TypeError(
            "`rng`: NumPy generators are not accepted (they are not cryptographically secure); "
            "pass None for secure noise, or an int seed for reproducible tests"
        )
    raise TypeError(
        f"`rng` must be None, an int seed, a numpy.random.SeedSequence or a dpkit BitSource; "
        f"got {type(rng).__name__}"
    )
