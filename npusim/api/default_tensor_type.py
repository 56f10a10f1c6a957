"""``npusim.set_default_tensor_type``: torch's deprecated way to set the default float dtype (and device) at once."""
from __future__ import annotations

import importlib
import warnings

from ..core.c10 import device_context
from ..core.c10.dtype import set_default_dtype
from .legacy_tensor_types import tensortype

# whether the default device now in effect was set here (a cpu type then puts the cpu back, as in torch)
_state = {"device_set": False}


def _import_dotted_name(name: str):
    # "torch.DoubleTensor" names npusim's type: a program run by ``python -m npusim run`` sees npusim as torch
    parts = name.split(".")
    if parts[0] == "torch":
        parts[0] = __name__.partition(".")[0]
    obj = importlib.import_module(parts[0])
    for part in parts[1:]:
        obj = getattr(obj, part)
    return obj


def set_default_tensor_type(t, /) -> None:
    """Deprecated (torch 2.1): use ``set_default_dtype`` and ``set_default_device``.

    Makes ``t`` (a floating legacy type such as ``npusim.DoubleTensor`` or ``npusim.npu.FloatTensor``, or its
    name) the default tensor type: its dtype becomes the default float dtype, and its device type the default
    device of factories (an npu type) or the cpu again (a cpu type after an npu one).
    """
    if isinstance(t, str):
        t = _import_dotted_name(t)
    warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "torch.set_default_dtype() and torch.set_default_device() as alternatives.", UserWarning,
                  stacklevel=2)
    if not isinstance(t, tensortype):
        raise TypeError("invalid type object: only floating-point types are supported as the default type")
    if not t.dtype.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    set_default_dtype(t.dtype)
    if t.device_type != "cpu":
        device_context.set_default_device(t.device_type)
        _state["device_set"] = True
    elif _state["device_set"]:
        device_context.set_default_device(None)
        _state["device_set"] = False


__all__ = ["set_default_tensor_type"]
