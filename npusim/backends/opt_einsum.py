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


def _set_enabled(_enabled) -> None:
    global enabled
    if not is_available() and _enabled:
        raise ValueError(f"opt_einsum is not available, so setting `enabled` to {_enabled} will not reap the "
                         "benefits of calculating an optimal path for einsum. torch.einsum will fall back to "
                         "contracting from left to right. To enable this optimal path calculation, please install "
                         "opt-einsum.")
    enabled = _enabled


def _set_strategy(_strategy) -> None:
    global strategy
    if not is_available():
        raise ValueError(f"opt_einsum is not available, so setting `strategy` to {_strategy} will not be "
                         "meaningful. torch.einsum will bypass path calculation and simply contract from left to "
                         "right. Please install opt_einsum or unset `strategy`.")
    if not enabled:
        raise ValueError(f"opt_einsum is not enabled, so setting a `strategy` to {_strategy} will not be meaningful. "
                         "torch.einsum will bypass path calculation and simply contract from left to right. Please "
                         "set `enabled` to `True` as well or unset `strategy`.")
    if _strategy not in ["auto", "greedy", "optimal"]:
        raise ValueError(f"`strategy` must be one of the following: [auto, greedy, optimal] but is {_strategy}")
    strategy = _strategy


def set_flags(_enabled=None, _strategy=None):
    """Set ``enabled`` and ``strategy`` now, checked as torch checks them; returns the old ``(enabled, strategy)``."""
    orig_flags = (enabled, None if not is_available() else strategy)
    if _enabled is not None:
        _set_enabled(_enabled)
    if _strategy is not None:
        _set_strategy(_strategy)
    return orig_flags
