"""The names archives use for dtypes, storage types and rebuild functions: PyTorch's.

An archive written by ``npusim.save`` must load with ``torch.load``, so its
pickle names what torch names (``torch FloatStorage``, ``torch._utils
_rebuild_tensor_v2``, ``torch float32``) even though torch is never imported.
Stand-in functions play those globals while pickling; loading maps the same
names back to npusim objects.
"""
from __future__ import annotations

from ..core.c10 import dtype as _dt
from ..api.typed_storage import STORAGE_NAMES

# npusim dtype <-> torch's legacy typed-storage class name (torch.storage._dtype_to_storage_type_map); complex32 has
# no legacy storage class in torch: its tensors are saved with _rebuild_tensor_v3
STORAGE_NAME_OF_DTYPE = STORAGE_NAMES
DTYPE_OF_STORAGE_NAME = {name: dt for dt, name in STORAGE_NAME_OF_DTYPE.items()}

# torch storage types and dtypes npusim cannot represent: named in the error instead of "not allowed"
UNSUPPORTED_STORAGE_NAMES = {
    "QInt8Storage": "qint8", "QInt32Storage": "qint32", "QUInt8Storage": "quint8", "QUInt4x2Storage": "quint4x2",
    "QUInt2x4Storage": "quint2x4",
}
UNSUPPORTED_DTYPE_NAMES = frozenset({
    "qint8", "qint32", "quint8", "quint4x2", "quint2x4", "bits8", "bits16", "bits1x8", "bits2x4", "bits4x2",
})


def _torch_global(module: str, name: str):
    """A stand-in for the torch global ``module.name``, importable from this module.

    The pickler saves it like any function (``GLOBAL npusim.serialization.torch_names <attr>``);
    ``pickler.py`` then rewrites that opcode to ``GLOBAL module name``. It is never called.
    """
    attr = f"torch_global__{module.replace('.', '_')}__{name}"

    def stand_in(*args, **kwargs):
        raise TypeError(f"{module}.{name} is a name written into archives, not a function")

    stand_in.__name__ = stand_in.__qualname__ = attr
    stand_in.__module__ = __name__
    stand_in.torch_module, stand_in.torch_name = module, name
    globals()[attr] = stand_in
    return stand_in


REBUILD_TENSOR_V2 = _torch_global("torch._utils", "_rebuild_tensor_v2")
REBUILD_TENSOR_V3 = _torch_global("torch._utils", "_rebuild_tensor_v3")
REBUILD_PARAMETER = _torch_global("torch._utils", "_rebuild_parameter")
REBUILD_PARAMETER_WITH_STATE = _torch_global("torch._utils", "_rebuild_parameter_with_state")
REBUILD_FROM_TYPE_V2 = _torch_global("torch._tensor", "_rebuild_from_type_v2")
TORCH_TENSOR = _torch_global("torch", "Tensor")
TORCH_SIZE = _torch_global("torch", "Size")
TORCH_DEVICE = _torch_global("torch", "device")
TORCH_UNTYPED_STORAGE = _torch_global("torch.storage", "UntypedStorage")   # where torch.save names it
STORAGE_TYPE_NAME = {dt: _torch_global("torch", name) for dt, name in STORAGE_NAME_OF_DTYPE.items()}


def is_torch_global(obj) -> bool:
    return getattr(obj, "__module__", None) == __name__ and hasattr(obj, "torch_module")


class StorageType:
    """What ``torch.<X>Storage`` unpickles to: it only carries the dtype (torch.serialization.StorageType)."""

    __slots__ = ("dtype", "name")

    def __init__(self, name: str, dtype):
        self.name = name
        self.dtype = dtype

    def __repr__(self):
        return f"StorageType(dtype={self.dtype})"


STORAGE_TYPES = {name: StorageType(name, dt) for name, dt in DTYPE_OF_STORAGE_NAME.items()}


class UntypedStorageType:
    """What ``torch.UntypedStorage`` unpickles to inside a storage's persistent id (bytes, dtype uint8)."""

    __slots__ = ()
    dtype = _dt.uint8
    name = "UntypedStorage"

    def __repr__(self):
        return "UntypedStorage"


UNTYPED_STORAGE_TYPE = UntypedStorageType()
