"""Pinning a batch: every tensor in a (nested) batch copied to page-locked host memory, as torch's
``torch.utils.data._utils.pin_memory.pin_memory``. The DataLoader pins the batches it hands out when made with
``pin_memory=True`` and an accelerator is available (npusim's npu always is)."""
from __future__ import annotations

import collections.abc
import copy

from ...core.tensor import Tensor


def pin_memory(data, device=None):
    """``data`` with each tensor (and each object with a ``pin_memory()`` method) pinned; mappings, namedtuples
    and sequences keep their types where they can be rebuilt."""
    if isinstance(data, Tensor) or hasattr(data, "pin_memory"):
        return data.pin_memory()
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, collections.abc.Mapping):
        pinned = {k: pin_memory(v, device) for k, v in data.items()}
        try:
            if isinstance(data, collections.abc.MutableMapping):
                clone = copy.copy(data)     # the mapping type may carry more than its items
                clone.update(pinned)
                return clone
            return type(data)(pinned)
        except TypeError:
            return pinned
    if isinstance(data, tuple):
        if hasattr(data, "_fields"):        # a namedtuple
            return type(data)(*(pin_memory(v, device) for v in data))
        return type(data)(pin_memory(v, device) for v in data)
    if isinstance(data, collections.abc.Sequence):
        pinned = [pin_memory(v, device) for v in data]
        try:
            if isinstance(data, collections.abc.MutableSequence):
                clone = copy.copy(data)
                for i, v in enumerate(pinned):
                    clone[i] = v
                return clone
            return type(data)(pinned)
        except TypeError:
            return pinned
    return data
