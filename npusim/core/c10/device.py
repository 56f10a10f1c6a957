"""``npusim.device`` and the PrivateUse1 device-type name.

Device objects are interned and immutable: ``device("npu", 0) is
device("npu:0")``, so kernels compare devices by identity. The PrivateUse1 type
is stored as ``"privateuseone"`` and shown under the name given to
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
_renamed = False          # rename_privateuse1_backend was called (even with "privateuseone")
_rename_lock = threading.Lock()
_DEVICE_STRING = re.compile(r"([a-zA-Z_]+)(?::(0|[1-9][0-9]*))?")
_MAX_INDEX = 2 ** 15


def privateuse1_backend_name() -> str:
    """The name PrivateUse1 devices go by (``"privateuseone"`` until renamed)."""
    return _backend_name


def rename_privateuse1_backend(backend_name: str) -> None:
    """Give the PrivateUse1 device type a user-facing name; once per process (same name again is fine)."""
    global _backend_name, _renamed
    if not isinstance(backend_name, str):
        raise RuntimeError(f"_rename_privateuse1_backend expects a str, but got {type(backend_name).__name__}")
    with _rename_lock:
        if _renamed:
            if _backend_name == backend_name:
                return
            raise RuntimeError(
                f"torch.register_privateuse1_backend() has already been set! Current backend: {_backend_name}")
        if backend_name in KNOWN_TYPES and backend_name != PRIVATEUSE1:
            raise RuntimeError(f"Cannot register privateuse1 backend with in-tree device name: {backend_name}")
        if not re.fullmatch(r"[a-zA-Z_]+", backend_name):
            # device strings could never name it (torch's parser takes letters and '_' only)
            raise RuntimeError(f"Invalid privateuse1 backend name '{backend_name}': a device type name is made "
                               f"of letters and '_' only")
        _backend_name = backend_name
        _renamed = True
        _STRING_CACHE.clear()


# Device type names that stand for another type ("cuda" -> the PrivateUse1 type): set by
# ``python -m npusim run --device-map`` so that a program written for one device runs on another.
_TYPE_MAP: dict = {}


def map_device_type(name: str, target) -> None:
    """Make devices of type ``name`` mean devices of type ``target`` from now on (``target=None`` undoes it).

    ``map_device_type("cuda", "npu")``: ``device("cuda:1")`` is ``device("npu:1")``, and everything that takes
    a device or a device type (``.to``, factories, ``autocast``, ``GradScaler``) follows. Only a type that has
    no backend here can be mapped, onto one that has."""
    if not isinstance(name, str) or name not in KNOWN_TYPES or name in ("cpu", PRIVATEUSE1, "meta"):
        raise ValueError(f"map_device_type: cannot map the device type {name!r}: only a type npusim has no "
                         f"backend for (cuda, xpu, mps, ...) can stand for another")
    with _rename_lock:
        if target is None:
            _TYPE_MAP.pop(name, None)
        else:
            canonical = _canonical_type(target) if isinstance(target, str) else None
            if canonical not in ("cpu", PRIVATEUSE1):
                raise ValueError(f"map_device_type: {target!r} is not a device type with a backend here "
                                 f"(cpu or {_backend_name})")
            _TYPE_MAP[name] = canonical
        _STRING_CACHE.clear()


def mapped_device_types() -> dict:
    """The device-type map in force: ``{"cuda": "npu"}`` under ``--device-map cuda=npu``."""
    return {name: (_backend_name if t == PRIVATEUSE1 else t) for name, t in _TYPE_MAP.items()}


def _canonical_type(name: str) -> str:
    if _TYPE_MAP:
        name = _TYPE_MAP.get(name, name)
        if name == PRIVATEUSE1:
            return name
    if name == _backend_name:
        return PRIVATEUSE1
    if name in KNOWN_TYPES:
        return name
    raise RuntimeError("Expected one of " + ", ".join(_valid_type_names())
                       + f" device type at start of device string: {name}")


def _valid_type_names():
    """torch's list of device types, with the PrivateUse1 backend's own name (npu) after privateuseone: torch
    lists only the latter, which would not tell a user that "npu" is the name to use."""
    if _backend_name == PRIVATEUSE1:
        return KNOWN_TYPES
    return [*KNOWN_TYPES, _backend_name]


def _parse(s: str):
    if not s:
        raise RuntimeError("Device string must not be empty")
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


def _invalid_combination(args, bad=False) -> TypeError:
    got = ", ".join(type(a).__name__ for a in args)
    why = f"      didn't match because some of the arguments have invalid types: (!{got}!)\n" if bad else ""
    return TypeError(f"device() received an invalid combination of arguments - got ({got}), but expected one of:\n"
                     f" * (npusim.device device)\n{why} * (str type, int index = -1)\n")


def _check_index(index) -> int:
    if isinstance(index, bool) or not isinstance(index, int):
        raise TypeError(f"device(): argument 'index' (position 2) must be int, not {type(index).__name__}")
    if index < 0:
        raise RuntimeError("Device index must not be negative")
    if index >= _MAX_INDEX:
        raise RuntimeError(f"Device index {index} is out of range")
    return int(index)


_CACHE: dict = {}          # (type, index) -> device
_STRING_CACHE: dict = {}   # "npu:0" -> device; cleared when the PrivateUse1 name changes
_cache_lock = threading.Lock()
_MISSING = object()


class device:
    """A device: a type (``"cpu"``, ``"npu"``, ...) and an optional index.

    ``device("npu:1")``, ``device("npu", 1)``, ``device(1)`` (the accelerator,
    i.e. the renamed PrivateUse1 backend).
    """

    __slots__ = ("_type", "index", "_key", "_ks", "_grad_ks", "__weakref__")

    def __new__(cls, type=_MISSING, index=None, *extra):  # noqa: A002 - torch's parameter name
        if index is None and not extra:
            if type.__class__ is str:
                d = _STRING_CACHE.get(type)
                if d is not None:
                    return d
                typ, index = _parse(type)
                d = _STRING_CACHE[type] = _intern(typ, index)
                return d
            if type.__class__ is device:
                return type
        if extra or type is _MISSING:
            args = ((type,) if type is not _MISSING else ()) + ((index,) if index is not None else ()) + extra
            raise _invalid_combination(args)
        if isinstance(type, str):
            typ, parsed = _parse(type)
            if parsed is not None:
                raise RuntimeError(f"type (string) must not include an index because index was passed "
                                   f"explicitly: {type}")
            return _intern(typ, _check_index(index))
        if isinstance(type, device):
            raise TypeError("device(): argument 'type' (position 1) must be str, not npusim.device")
        if isinstance(type, int) and not isinstance(type, bool) and index is None:
            if type < 0:
                raise RuntimeError("Device index must not be negative")
            if not _renamed:
                raise RuntimeError("Cannot access accelerator device when none is available.")
            return _intern(PRIVATEUSE1, _check_index(type))
        raise _invalid_combination((type,) if index is None else (type, index), bad=True)

    @property
    def type(self) -> str:
        return _backend_name if self._type == PRIVATEUSE1 else self._type

    def __setattr__(self, name, value):
        if name in ("type", "index"):
            raise AttributeError(f"attribute '{name}' of 'npusim.device' objects is not writable")
        raise AttributeError(f"'npusim.device' object has no attribute '{name}'")

    __delattr__ = __setattr__

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

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __enter__(self):
        from .device_context import push_default_device
        push_default_device(self)
        return self

    def __exit__(self, *exc):
        from .device_context import pop_default_device
        pop_default_device()
        return False


def _intern(typ: str, index) -> device:
    """The one device object for ``(typ, index)``."""
    key = (typ, index)
    d = _CACHE.get(key)
    if d is None:
        with _cache_lock:
            d = _CACHE.get(key)
            if d is None:
                d = object.__new__(device)
                bk = BACKEND_KEY_OF_TYPE.get(typ)
                ks = (1 << bk) if bk is not None else 0
                setter = object.__setattr__
                setter(d, "_type", typ)
                setter(d, "index", index)
                setter(d, "_key", bk)
                setter(d, "_ks", ks)
                setter(d, "_grad_ks", ks | (1 << AUTOGRAD_OF[bk]) if bk is not None else 0)
                _CACHE[key] = d
    return d


CPU = device("cpu")


def as_device(d) -> device:
    """Accept a device, a device string or an accelerator index."""
    if d.__class__ is device:
        return d
    if d is None:
        raise TypeError("expected a device, got None")
    return device(d)
