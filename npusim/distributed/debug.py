"""The debug level of the package (``torch.distributed``'s ``DebugLevel``, ``get_debug_level``, ``set_debug_level``,
``set_debug_level_from_env``), read from ``TORCH_DISTRIBUTED_DEBUG`` (``OFF``, ``INFO`` or ``DETAIL``) as torch's.

Where torch checks that the ranks run the same collective only at ``DETAIL``, npusim checks it at every level
(docs/distributed.md, "Failures are loud"). ``DETAIL`` adds a record of every collective each rank agrees on,
with its shapes, to the ``npusim.distributed`` logger (at INFO): the trail that shows where ranks diverged.
"""
from __future__ import annotations

import enum
import logging
import os

logger = logging.getLogger("npusim.distributed")

ENV_VAR = "TORCH_DISTRIBUTED_DEBUG"


class DebugLevel(enum.Enum):
    """``OFF``, ``INFO`` and ``DETAIL`` (values 0, 1, 2, as torch's)."""

    OFF = 0
    INFO = 1
    DETAIL = 2

    def __int__(self):
        return self.value


_level = None       # read from the environment at first use


def set_debug_level(level) -> None:
    """Set the debug level (a ``DebugLevel``)."""
    global _level
    if not isinstance(level, DebugLevel):
        raise TypeError(f"set_debug_level(): expected a npusim.distributed.DebugLevel, got {level!r}")
    _level = level


def set_debug_level_from_env() -> None:
    """Set the debug level from ``TORCH_DISTRIBUTED_DEBUG`` (OFF when it is not set; any case)."""
    value = os.environ.get(ENV_VAR, "OFF").upper()
    if value not in DebugLevel.__members__:
        raise ValueError(f"The value of {ENV_VAR} must be OFF, INFO, or DETAIL.")
    set_debug_level(DebugLevel[value])


def get_debug_level() -> DebugLevel:
    """The debug level (``TORCH_DISTRIBUTED_DEBUG``'s until one is set)."""
    if _level is None:
        set_debug_level_from_env()
    return _level


def log_agreed(what: str, signature: str) -> None:
    """At ``DETAIL``: record a collective every rank agreed on."""
    if get_debug_level() is DebugLevel.DETAIL:
        logger.info("%s: %s", what, signature)
