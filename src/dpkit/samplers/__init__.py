"""Exact, vectorised samplers over a secure bit source: the only layer that touches raw bits."""

from dpkit.samplers._source import BitSource, RngLike, SecureSource, SeededSource, as_source

__all__ = ["BitSource", "RngLike", "SecureSource", "SeededSource", "as_source"]
