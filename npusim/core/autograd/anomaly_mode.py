"""Anomaly detection: ``detect_anomaly`` / ``set_detect_anomaly`` (torch's global anomaly mode).

When on, the engine checks every gradient a node returns for NaN (with
``check_nan``), and error messages about tensors changed in place point at the
failing operation instead of suggesting anomaly mode.
"""
from __future__ import annotations

import warnings

from .grad_mode import _DecoratorContextManager

_state = {"enabled": False, "check_nan": True}


def is_anomaly_enabled() -> bool:
    return _state["enabled"]


def is_anomaly_check_nan_enabled() -> bool:
    return _state["check_nan"]


def _set(enabled, check_nan):
    _state["enabled"] = bool(enabled)
    _state["check_nan"] = bool(check_nan)


class detect_anomaly(_DecoratorContextManager):
    """Context manager (and decorator) that turns anomaly detection on."""

    def __init__(self, check_nan: bool = True):
        self.check_nan = check_nan
        self.prev = None
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and should only be "
                      "enabled for debugging.", UserWarning, stacklevel=2)

    def __enter__(self):
        self.prev = (_state["enabled"], _state["check_nan"])
        _set(True, self.check_nan)

    def __exit__(self, *exc):
        _set(*self.prev)
        return False

    def clone(self):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return self.__class__(self.check_nan)


class set_detect_anomaly:
    """Turn anomaly detection on or off now; as a context manager, restore the old state on exit.

    Not a decorator (as in torch): it takes effect when built, so decorating a function would leave it set.
    """

    def __init__(self, mode: bool, check_nan: bool = True):
        self.prev = (_state["enabled"], _state["check_nan"])
        _set(mode, check_nan)

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        _set(*self.prev)
        return False


def check_nan(node, grads) -> None:
    """Anomaly mode: a node that returns NaN gradients is reported by name."""
    for i, g in enumerate(grads):
        if g is not None and bool(g.isnan().any()):
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.")
