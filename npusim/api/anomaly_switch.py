"""torch's top-level anomaly-mode switches: ``is_anomaly_enabled``, ``is_anomaly_check_nan_enabled`` and
``set_anomaly_enabled`` (the state ``npusim.autograd.detect_anomaly`` sets for a block)."""
from __future__ import annotations

import builtins

from ..core.autograd import anomaly_mode
from ..core.autograd.anomaly_mode import is_anomaly_check_nan_enabled, is_anomaly_enabled


def set_anomaly_enabled(enabled, check_nan=True) -> None:
    """set_anomaly_enabled(enabled, check_nan=True) -> None

    Turn anomaly detection on or off for the process (no warning, no restoring: ``autograd.detect_anomaly`` is
    the scoped form). ``check_nan`` makes the engine check every gradient for NaN while it is on.
    """
    for pos, (name, value) in enumerate((("enabled", enabled), ("check_nan", check_nan)), 1):
        if value.__class__ is not builtins.bool:
            raise TypeError(f"set_anomaly_enabled(): argument '{name}' (position {pos}) must be bool, not "
                            f"{type(value).__name__}")
    anomaly_mode._set(enabled, check_nan)


is_anomaly_enabled.__doc__ = is_anomaly_enabled.__doc__ or "Whether anomaly detection is on."
is_anomaly_check_nan_enabled.__doc__ = is_anomaly_check_nan_enabled.__doc__ or \
    "Whether anomaly detection checks gradients for NaN (when it is on)."

__all__ = ["is_anomaly_enabled", "is_anomaly_check_nan_enabled", "set_anomaly_enabled"]
