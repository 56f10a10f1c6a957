"""torch's legacy storage classes: ``npusim.FloatStorage(3)``, ``npusim.npu.LongStorage([1, 2])``, and
``isinstance(t.storage(), npusim.FloatStorage)`` (true for a float32 TypedStorage on the cpu).

Each class is a constructor for one dtype on one device type; what it makes is a plain ``TypedStorage`` (as in
torch), which its metaclass recognises by dtype and device type.
"""
from __future__ import annotations

from .typed_storage import STORAGE_NAMES, _LegacyStorage


def legacy_storage_types(device_type: str, module: str = "npusim") -> dict:
    """``{"FloatStorage": <class>, ...}`` for storages on ``device_type`` (``"cpu"``, or ``PRIVATEUSE1`` for the
    backend's, whatever it is named), to be attributes of the module named ``module`` (so they pickle)."""
    return {name: type(_LegacyStorage)(name, (_LegacyStorage,), {
        "dtype": dt, "_device_type": device_type, "__module__": module,
        "__doc__": f"The legacy constructor of {dt} storages (a TypedStorage of that dtype)."})
        for dt, name in STORAGE_NAMES.items()}


_CPU = legacy_storage_types("cpu")
DoubleStorage = _CPU["DoubleStorage"]
FloatStorage = _CPU["FloatStorage"]
HalfStorage = _CPU["HalfStorage"]
LongStorage = _CPU["LongStorage"]
IntStorage = _CPU["IntStorage"]
ShortStorage = _CPU["ShortStorage"]
CharStorage = _CPU["CharStorage"]
ByteStorage = _CPU["ByteStorage"]
BoolStorage = _CPU["BoolStorage"]
BFloat16Storage = _CPU["BFloat16Storage"]
ComplexDoubleStorage = _CPU["ComplexDoubleStorage"]
ComplexFloatStorage = _CPU["ComplexFloatStorage"]
__all__ = list(STORAGE_NAMES.values())


def default_storage_class():
    """torch.Storage: the legacy storage class of the default dtype (FloatStorage unless it was changed)."""
    from ..core.c10.dtype import get_default_dtype
    return globals()[STORAGE_NAMES[get_default_dtype()]]
