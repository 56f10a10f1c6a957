"""DLPack for the stand-in: capsules of its own arrays come back as device arrays; host ones are refused."""
from __future__ import annotations

import weakref

from . import _core as K

# capsule id -> the array it was made from (a capsule cannot hold a Python attribute)
_exported = weakref.WeakValueDictionary()


class _Export:
    __slots__ = ("array", "capsule", "__weakref__")


_keep = {}


def to_capsule(a):
    capsule = a._np.__dlpack__()
    _keep[id(capsule)] = (capsule, a)     # both alive while the consumer holds the capsule
    if len(_keep) > 4096:
        _keep.pop(next(iter(_keep)))
    return capsule


def from_dlpack(x):
    if isinstance(x, K.ndarray):
        K.check_device([x])
        return K.view_of(x, x._np)
    if hasattr(x, "__dlpack_device__"):
        kind, index = x.__dlpack_device__()
        if kind != 2:
            raise ValueError("CuPy can only import DLPack tensors on CUDA devices (device type "
                             f"{int(kind)} given)")
        cap = x.__dlpack__()
    else:
        cap = x
    kept = _keep.get(id(cap))
    if kept is None or kept[0] is not cap:
        raise ValueError("the CuPy stand-in imports only DLPack capsules of its own (CUDA) arrays")
    return K.view_of(kept[1], kept[1]._np)
