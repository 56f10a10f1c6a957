"""``npusim.FatalError``: torch's exception for an error the process cannot recover from."""
from __future__ import annotations


class FatalError(Exception):
    """An unrecoverable internal error (torch raises it for c10's fatal errors)."""


FatalError.__module__ = "npusim"

__all__ = ["FatalError"]
