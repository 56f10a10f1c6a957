"""``npusim.npu.amp``: the npu's AMP names where torch keeps CUDA's (``torch.cuda.amp``).

As in torch 2.13, these device-specific spellings still work but are deprecated
in favour of the generic ones: ``npusim.npu.amp.autocast(...)`` is
``npusim.amp.autocast("npu", ...)``, ``npusim.npu.amp.GradScaler(...)`` is
``npusim.amp.GradScaler("npu", ...)``.
"""
from __future__ import annotations

import functools
import sys
import warnings

import npusim   # npusim.amp (device-generic) is in place before the backend registers
from ...privateuse1 import privateuse1_backend_name

float16 = npusim.float16
_custom_fwd = npusim.amp
_GradScaler = npusim.amp.GradScaler

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]


def _name() -> str:
    return privateuse1_backend_name()


class autocast(npusim.autocast):
    """See ``npusim.autocast``; ``npusim.npu.amp.autocast(args...)`` is deprecated."""

    def __init__(self, enabled: bool = True, dtype=float16, cache_enabled: bool = True):
        name = _name()
        warnings.warn(f"`npusim.{name}.amp.autocast(args...)` is deprecated. "
                      f"Please use `npusim.amp.autocast('{name}', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__(name, enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(_GradScaler):
    """See ``npusim.amp.GradScaler``; ``npusim.npu.amp.GradScaler(args...)`` is deprecated."""

    def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        name = _name()
        warnings.warn(f"`npusim.{name}.amp.GradScaler(args...)` is deprecated. "
                      f"Please use `npusim.amp.GradScaler('{name}', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__(name, init_scale=init_scale, growth_factor=growth_factor, backoff_factor=backoff_factor,
                         growth_interval=growth_interval, enabled=enabled)


def custom_fwd(fwd=None, *, cast_inputs=None):
    """``npusim.amp.custom_fwd(device_type="npu", ...)``; this spelling is deprecated."""
    name = _name()
    warnings.warn(f"`npusim.{name}.amp.custom_fwd(args...)` is deprecated. "
                  f"Please use `npusim.amp.custom_fwd(args..., device_type='{name}')` instead.", FutureWarning,
                  stacklevel=2)
    if fwd is None:
        return functools.partial(_custom_fwd.custom_fwd, device_type=name, cast_inputs=cast_inputs)
    return _custom_fwd.custom_fwd(fwd, device_type=name, cast_inputs=cast_inputs)


def custom_bwd(bwd=None):
    """``npusim.amp.custom_bwd(device_type="npu")``; this spelling is deprecated."""
    name = _name()
    warnings.warn(f"`npusim.{name}.amp.custom_bwd(args...)` is deprecated. "
                  f"Please use `npusim.amp.custom_bwd(args..., device_type='{name}')` instead.", FutureWarning,
                  stacklevel=2)
    if bwd is None:
        return functools.partial(_custom_fwd.custom_bwd, device_type=name)
    return _custom_fwd.custom_bwd(bwd, device_type=name)


def install() -> None:
    """Make this module ``npusim.<backend>.amp`` on the PrivateUse1 device module, if one is registered."""
    root = __name__.split(".")[0]
    device_module = getattr(sys.modules[root], _name(), None)
    if device_module is None:
        return
    me = sys.modules[__name__]
    device_module.amp = me
    sys.modules[f"{root}.{_name()}.amp"] = me
