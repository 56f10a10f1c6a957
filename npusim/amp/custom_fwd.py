"""``custom_fwd`` / ``custom_bwd``: autocast-aware forward and backward of custom autograd Functions.

``custom_fwd(device_type="npu", cast_inputs=npusim.float32)`` runs ``forward`` with autocast
off and its floating inputs on that device cast to ``cast_inputs`` (only inside an autocast
region); with ``cast_inputs=None`` the forward runs under the current autocast state.
``custom_bwd`` runs ``backward`` under the autocast state the forward saw.
"""
from __future__ import annotations

import collections.abc
import functools

import numpy as np

from ..core.autocast.state import autocast, get_autocast_dtype, is_autocast_enabled
from ..core.c10.device import device
from ..core.c10.dtype import float64
from ..core.tensor import Tensor

__all__ = ["custom_fwd", "custom_bwd"]


def _cast(value, device_type: str, dtype):
    """Cast floating tensors on ``device_type`` (not float64) inside ``value``'s containers to ``dtype``."""
    if isinstance(value, Tensor):
        eligible = value.is_floating_point() and value.device.type == device_type and value.dtype is not float64
        return value.to(dtype) if eligible else value
    if isinstance(value, (str, bytes, np.ndarray)):
        return value
    if isinstance(value, collections.abc.Mapping):
        return {_cast(k, device_type, dtype): _cast(v, device_type, dtype) for k, v in value.items()}
    if isinstance(value, collections.abc.Iterable):
        iterable = (_cast(v, device_type, dtype) for v in value)
        return type(value)(iterable) if isinstance(value, (list, tuple)) else iterable
    return value


def _check_device_type(device_type):
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    return device(device_type).type


def custom_fwd(fwd=None, *, device_type: str, cast_inputs=None):
    """Decorate the ``forward`` of a custom ``npusim.autograd.Function`` (torch.amp.custom_fwd)."""
    device_type = _check_device_type(device_type)
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        ctx = args[0]
        ctx._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            ctx._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        in_autocast = is_autocast_enabled(device_type)
        ctx._fwd_used_autocast = False
        if in_autocast:
            with autocast(device_type=device_type, enabled=False):
                return fwd(*_cast(args, device_type, cast_inputs), **_cast(kwargs, device_type, cast_inputs))
        return fwd(*args, **kwargs)

    return decorate_fwd


def custom_bwd(bwd=None, *, device_type: str):
    """Decorate the ``backward`` of a custom Function: it runs under the forward's autocast state."""
    device_type = _check_device_type(device_type)
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        ctx = args[0]
        with autocast(device_type=device_type, enabled=ctx._fwd_used_autocast, dtype=ctx._dtype):
            return bwd(*args, **kwargs)

    return decorate_bwd
