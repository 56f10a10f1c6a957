"""What the framework offers a backend's kernels: its device-generic kernels and array helpers.

npusim's native kernels are written against the array API, so they run on any
device whose arrays follow it (NumPy, CuPy). A backend registers them for its key
(possibly wrapped, possibly replacing some with its own) and writes its own kernels
with the helpers below, which raise torch's errors.
"""
from __future__ import annotations

from ..core.c10.dtype import SCALAR_TYPE_NAME, dtype as _dtype, from_numpy_dtype as _from_np
from ..native.common import broadcast_shapes as _broadcast_shapes, shape_error as _shape_error
from ..native.factories import _write
from ..native.registration import COMPOSITE, COMPOSITE_IMPLICIT, KERNELS

__all__ = ["generic_kernels", "composite_kernels", "check_broadcastable_to", "write_array", "scalar_type_name"]


def generic_kernels() -> dict:
    """``{aten overload name: kernel}``: the device-generic kernels, to register for a backend's key."""
    return KERNELS


def composite_kernels() -> tuple:
    """The device-independent compositions registered once for every backend: ``(explicit, implicit)``
    dicts of ``{name: kernel}`` (a backend marks them as needing no device switch, for one)."""
    return COMPOSITE, COMPOSITE_IMPLICIT


def check_broadcastable_to(dst, src) -> None:
    """Raise torch's error unless array ``src`` broadcasts to the shape of array ``dst``."""
    if src.shape != dst.shape and _broadcast_shapes(dst.shape, src.shape) != dst.shape:
        _shape_error(dst, src)


#: ``write_array(xp, dst, src)``: copy array ``src`` into array ``dst`` of array module ``xp``
#: (``npusim.kernels.array_api.namespace_of(dst)``), broadcasting and casting as ``copy_`` does, with torch's
#: error for a write into overlapping memory; large NumPy copies run on the intra-op threads.
write_array = _write


def scalar_type_name(dtype) -> str:
    """torch's name of a dtype in error messages (``"Float"``, ``"Long"``), from an npusim or array dtype."""
    return SCALAR_TYPE_NAME[dtype if isinstance(dtype, _dtype) else _from_np(dtype)]
