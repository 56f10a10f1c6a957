"""The errors of ``npusim.save`` / ``npusim.load``.

Every problem with an archive's bytes surfaces as one of these two, with a
message that says what is wrong: ``ArchiveError`` for the ZIP container and its
records, ``UnpicklingError`` for the pickled object tree (``data.pkl``).
"""
from __future__ import annotations

import pickle


class ArchiveError(RuntimeError):
    """The file is not a readable archive: bad ZIP structure, missing or truncated records, bad sizes."""


class UnpicklingError(pickle.UnpicklingError):
    """``data.pkl`` is malformed, or names something the safe (``weights_only``) loader does not allow."""
