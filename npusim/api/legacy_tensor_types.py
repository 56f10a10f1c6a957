"""torch's legacy tensor types: ``npusim.FloatTensor(2, 3)``, ``npusim.npu.LongTensor([1, 2])``, and
``isinstance(t, npusim.FloatTensor)`` (true for a float32 tensor on the cpu).

Each type is a constructor for one dtype on one device type, as old PyTorch code uses them: sizes give an
uninitialised tensor, a sequence gives a tensor of its values, a tensor of the same type gives a view of it.
"""
from __future__ import annotations

from ..core.c10 import dtype as D
from ..core.c10.device import PRIVATEUSE1, device as _device, privateuse1_backend_name
from ..core.tensor import Size, Tensor

NAMES = {D.bool: "BoolTensor", D.uint8: "ByteTensor", D.int8: "CharTensor", D.int16: "ShortTensor",
         D.int32: "IntTensor", D.int64: "LongTensor", D.float16: "HalfTensor", D.bfloat16: "BFloat16Tensor",
         D.float32: "FloatTensor", D.float64: "DoubleTensor"}


class tensortype(type):
    """The class of the legacy types (torch's ``torch.tensortype``)."""

    @property
    def device_type(cls) -> str:
        # the PrivateUse1 backend's types follow its name, which may change after they are made
        return privateuse1_backend_name() if cls._device_type == PRIVATEUSE1 else cls._device_type

    @property
    def qualified_name(cls) -> str:
        where = "" if cls._device_type == "cpu" else f"{cls.device_type}."
        return f"npusim.{where}{cls.__name__}"

    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype and obj.device.type == cls.device_type

    def __call__(cls, *args, device=None):
        import npusim
        if device is not None and _device(device).type != cls.device_type:
            raise RuntimeError(f"legacy constructor expects device type: {cls.device_type} but device type: "
                               f"{_device(device).type} was passed")
        where = device if device is not None else cls.device_type
        if not args:
            return npusim.empty(0, dtype=cls.dtype, device=where)
        if len(args) == 1 and isinstance(args[0], Tensor) and not isinstance(args[0], Size):
            t = args[0]
            if not isinstance(t, cls):
                raise TypeError(f"expected {cls.qualified_name} (got {t.type()})")
            return t.view(t.shape)
        if all(isinstance(a, int) and not isinstance(a, bool) for a in args) or \
                (len(args) == 1 and isinstance(args[0], Size)):
            return npusim.empty(*args, dtype=cls.dtype, device=where)
        if len(args) == 1 and not isinstance(args[0], (int, float, bool, complex, str)):
            return npusim.tensor(args[0], dtype=cls.dtype, device=where)
        raise TypeError(f"new(): data must be a sequence (got {type(args[0]).__name__})")

    def __repr__(cls):
        return f"<class '{cls.qualified_name}'>"


def legacy_tensor_types(device_type: str, module: str = "npusim") -> dict:
    """``{"FloatTensor": <type>, ...}`` for tensors on ``device_type`` (``"cpu"``, or ``PRIVATEUSE1`` for
    the backend's, whatever it is named), to be attributes of the module named ``module`` (so they pickle)."""
    where = "the cpu" if device_type == "cpu" else "the accelerator"
    return {name: tensortype(name, (), {"dtype": dt, "_device_type": device_type, "__module__": module,
                                        "__doc__": f"Legacy constructor of {dt} tensors on {where}: sizes give an "
                                                   f"uninitialised tensor, a sequence its values; "
                                                   f"``isinstance(t, {name})`` tests dtype and device."})
            for dt, name in NAMES.items()}


_CPU_TYPES = legacy_tensor_types("cpu")
BoolTensor = _CPU_TYPES["BoolTensor"]
ByteTensor = _CPU_TYPES["ByteTensor"]
CharTensor = _CPU_TYPES["CharTensor"]
ShortTensor = _CPU_TYPES["ShortTensor"]
IntTensor = _CPU_TYPES["IntTensor"]
LongTensor = _CPU_TYPES["LongTensor"]
HalfTensor = _CPU_TYPES["HalfTensor"]
BFloat16Tensor = _CPU_TYPES["BFloat16Tensor"]
FloatTensor = _CPU_TYPES["FloatTensor"]
DoubleTensor = _CPU_TYPES["DoubleTensor"]
__all__ = list(NAMES.values())
