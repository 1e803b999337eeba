"""The :class:`~dpkit.release.Release` record, importable from its former path.

The record lives in :mod:`dpkit.release`, below the mechanisms, so that every layer can
return one; ``dpkit.mechanisms.release.Release``, ``dpkit.mechanisms.Release`` and
``dpkit.Release`` are the same class.
"""

from dpkit.release import Release

__all__ = ["Release"]
