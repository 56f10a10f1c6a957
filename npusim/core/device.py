"""``npusim.device`` and the PrivateUse1 device-type name.

Device objects are interned: ``device("npu", 0) is device("npu:0")``, so kernels
compare devices by identity. The PrivateUse1 type is stored as
``"privateuseone"`` and shown under the name given to
``rename_privateuse1_backend``.
"""
from __future__ import annotations

import re
import threading

from .dispatch_keys import AUTOGRAD_OF, DispatchKey

__all__ = ["device", "rename_privateuse1_backend", "privateuse1_backend_name"]

PRIVATEUSE1 = "privateuseone"
# The device types torch.device accepts, in torch's order (its error message lists them).
KNOWN_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga",
               "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia", PRIVATEUSE1)
BACKEND_KEY_OF_TYPE = {"cpu": DispatchKey.CPU, "cuda": DispatchKey.CUDA, "meta": DispatchKey.Meta,
                       PRIVATEUSE1: DispatchKey.PrivateUse1}

_backend_name = PRIVATEUSE1
_rename_lock = threading.Lock()
_DEVICE_STRING = re.compile(r"([a-zA-Z_]+)(?::(0|[1-9][0-9]*))?")
_MAX_INDEX = 2 ** 15


def privateuse1_backend_name() -> str:
    """The name PrivateUse1 devices go by (``"privateuseone"`` until renamed)."""
    return _backend_name


def rename_privateuse1_backend(backend_name: str) -> None:
    """Give the PrivateUse1 device type a user-facing name; once per process."""
    global _backend_name
    if not isinstance(backend_name, str) or not backend_name.isidentifier():
        raise RuntimeError(f"Invalid backend name {backend_name!r}: it must be a Python identifier")
    with _rename_lock:
        if _backend_name == backend_name:
            return
        if _backend_name != PRIVATEUSE1:
            raise RuntimeError(
                f"torch.register_privateuse1_backend() has already been set! Current backend: {_backend_name}")
        if backend_name in KNOWN_TYPES:
            raise RuntimeError(f"Cannot rename the PrivateUse1 backend to the built-in device type "
                               f"'{backend_name}'")
        _backend_name = backend_name


def _canonical_type(name: str) -> str:
    if name == _backend_name:
        return PRIVATEUSE1
    if name in KNOWN_TYPES:
        return name
    raise RuntimeError("Expected one of " + ", ".join(KNOWN_TYPES)
                       + f" device type at start of device string: {name}")


def _parse(s: str):
    m = _DEVICE_STRING.fullmatch(s)
    if m is None:
        head = re.match(r"[a-zA-Z_]+", s)
        if head is not None:
            _canonical_type(head.group())  # an unknown type name gets torch's "Expected one of" error
        raise RuntimeError(f"Invalid device string: '{s}'")
    typ = _canonical_type(m.group(1))
    idx = m.group(2)
    if idx is not None:
        if len(idx) > 5 or int(idx) >= _MAX_INDEX:
            raise RuntimeError(f"Could not parse device index '{idx}' in device string '{s}'")
        idx = int(idx)
    return typ, idx


_CACHE: dict = {}
_cache_lock = threading.Lock()


class device:
    """A device: a type (``"cpu"``, ``"npu"``, ...) and an optional index.

    ``device("npu:1")``, ``device("npu", 1)``, ``device(1)`` (the accelerator).
    """

    __slots__ = ("_type", "index", "_key", "_ks", "_grad_ks", "__weakref__")

    def __new__(cls, type=None, index=None):  # noqa: A002 - torch's parameter name
        if isinstance(type, device) and index is None:
            return type
        if isinstance(type, int) and not isinstance(type, bool) and index is None:
            if type < 0:
                raise RuntimeError("Device index must not be negative")
            typ, index = (PRIVATEUSE1 if _backend_name != PRIVATEUSE1 else "cpu"), type
        elif isinstance(type, str):
            typ, parsed = _parse(type)
            if index is not None:
                if parsed is not None:
                    raise RuntimeError(f"type (string) must not include an index because index was passed "
                                       f"explicitly: {type}")
                if isinstance(index, bool) or not isinstance(index, int):
                    raise TypeError(f"device(): argument 'index' (position 2) must be int, not "
                                    f"{index.__class__.__name__}")
                if index < 0:
                    raise RuntimeError("Device index must not be negative")
                if index >= _MAX_INDEX:
                    raise RuntimeError(f"Device index {index} is out of range")
            else:
                index = parsed
        else:
            raise TypeError(f"device() received an invalid combination of arguments - got "
                            f"({type.__class__.__name__}), but expected one of: (str type, int index = None) "
                            f"or (int index)")
        key = (typ, index)
        d = _CACHE.get(key)
        if d is None:
            with _cache_lock:
                d = _CACHE.get(key)
                if d is None:
                    d = object.__new__(cls)
                    d._type = typ
                    d.index = index
                    bk = BACKEND_KEY_OF_TYPE.get(typ)
                    d._key = bk
                    d._ks = (1 << bk) if bk is not None else 0
                    d._grad_ks = d._ks | (1 << AUTOGRAD_OF[bk]) if bk is not None else 0
                    _CACHE[key] = d
        return d

    @property
    def type(self) -> str:
        return _backend_name if self._type == PRIVATEUSE1 else self._type

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other):
        if isinstance(other, device):
            return self is other
        return NotImplemented

    def __hash__(self):
        return hash((self._type, self.index))

    def __reduce__(self):
        return (device, (self.type, self.index) if self.index is not None else (self.type,))

    def __enter__(self):
        from .device_context import push_default_device
        push_default_device(self)
        return self

    def __exit__(self, *exc):
        from .device_context import pop_default_device
        pop_default_device()
        return False


CPU = device("cpu")


def as_device(d) -> device:
    """Accept a device, a device string or an accelerator index."""
    if d.__class__ is device:
        return d
    if d is None:
        raise TypeError("expected a device, got None")
    return device(d)
