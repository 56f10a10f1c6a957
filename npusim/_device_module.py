"""``npusim._register_device_module``: expose a backend's runtime module as ``npusim.<name>``."""
from __future__ import annotations

import sys

from .core.c10.device import device


def _register_device_module(device_type, module) -> None:
    """Register ``module`` as ``npusim.<device_type>`` (once per device type)."""
    device_type = device(device_type).type
    top = sys.modules[__name__.rsplit(".", 1)[0]]
    if hasattr(top, device_type):
        raise RuntimeError(f"The runtime module of '{device_type}' has already been registered with "
                           f"'{getattr(top, device_type)}'")
    setattr(top, device_type, module)
    sys.modules[f"{top.__name__}.{device_type}"] = module
