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


_device = device    # get_device_module's argument has torch's name, ``device``


def get_device_module(device=None):
    """The module of a device type (``npusim.get_device_module("npu")`` is ``npusim.npu``); None: the current
    accelerator's, as torch's (a device type without a module of its own raises)."""
    top = sys.modules[__name__.rsplit(".", 1)[0]]
    if isinstance(device, _device):
        name = device.type
    elif isinstance(device, str):
        name = _device(device).type
    elif device is None:
        acc = top.accelerator.current_accelerator()
        name = "cpu" if acc is None else acc.type
    else:
        raise RuntimeError(f"Invalid value of device '{device}', expect {top.__name__}.device, str, or None")
    module = getattr(top, name, None)
    if module is None:
        raise RuntimeError(f"Device '{name}' does not have a corresponding module registered as "
                           f"'{top.__name__}.{name}'.")
    return module


def get_device(input) -> int:   # noqa: A002 - torch's argument name
    """The index of the device ``input`` is on; -1 for a cpu tensor."""
    top = sys.modules[__name__.rsplit(".", 1)[0]]
    if not isinstance(input, top.Tensor):
        raise TypeError(f"get_device(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    return input.get_device()
