"""torch.backends.opt_einsum: whether einsum may ask the opt_einsum package for a contraction order (stored)."""
from __future__ import annotations

import importlib.util
import sys

from ._flags import switched

_AVAILABLE = importlib.util.find_spec("opt_einsum") is not None
enabled = _AVAILABLE
strategy = "auto" if _AVAILABLE else None


def is_available() -> bool:
    """Whether the opt_einsum package is installed."""
    return _AVAILABLE


def get_opt_einsum():
    """The opt_einsum module, or None when it is not installed."""
    return importlib.import_module("opt_einsum") if _AVAILABLE else None


def flags(enabled=None, strategy=None):
    """Set the switches for a ``with`` block, as torch.backends.opt_einsum.flags does."""
    module = sys.modules[__name__]
    values = {}
    if enabled is not None:
        values["enabled"] = enabled
    if strategy is not None:
        values["strategy"] = strategy
    return switched(module, **values)
