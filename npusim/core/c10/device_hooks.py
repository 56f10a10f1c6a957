"""What a device type's runtime tells the host framework.

This is the analogue of PyTorch's ``PrivateUse1HooksInterface`` plus the
per-device-type allocator (``c10::SetAllocator``): a backend registers one
``DeviceHooks`` object for its device type, and core asks it for the device
count, the current device, lazy initialisation and the storage of new arrays.
Core never imports a backend; without hooks a device type has no devices.
"""
from __future__ import annotations

import threading

from .device import CPU, PRIVATEUSE1, device, privateuse1_backend_name
from .device_context import current_default

__all__ = ["DeviceHooks", "register_device_hooks", "get_device_hooks", "resolve_device", "refuse_device_type",
           "check_access"]


class DeviceHooks:
    """Override what your runtime supports; the defaults describe an absent device."""

    def is_available(self) -> bool:
        return False

    def device_count(self) -> int:
        return 0

    def current_device(self) -> int:
        return 0

    def array_namespace(self, device):
        """The array module arrays of ``device`` live in (numpy for an emulated device)."""
        import numpy
        return numpy

    def lazy_init(self) -> None:
        """Called before the first tensor is made on this device type."""

    def storage_factory(self, device):
        """A function ``f(array) -> UntypedStorage`` that owns each new array made on ``device``.

        Consulted only when ``tracks_storage`` is true; core calls ``f`` for every
        new array so memory statistics and out-of-memory checks see it. Return
        None to let storages be made lazily, as on the cpu.
        """
        return None

    def check_allocation(self, nbytes: int, device) -> None:
        """Raise before an allocation of ``nbytes`` that cannot succeed."""

    def pinned_host_bytes(self, nbytes: int):
        """``nbytes`` of page-locked host memory as a NumPy uint8 array (``pin_memory``), or None where pinning is
        only a recorded property of ordinary memory (an emulated device)."""
        return None

    def record_stream(self, storage, stream) -> None:
        """``Tensor.record_stream``: ``stream`` uses ``storage``'s memory too; the allocator must not reuse it until
        the work queued on ``stream`` by the time it is freed is done (nothing to do where ops finish in order)."""

    tracks_storage = False


_HOOKS: dict[str, DeviceHooks] = {}
_lock = threading.Lock()


def register_device_hooks(device_type: str, hooks: DeviceHooks) -> None:
    """Register the runtime hooks of ``device_type`` (once per type)."""
    typ = device(device_type)._type
    if typ == "cpu":
        raise RuntimeError("the cpu device's hooks are built in and cannot be replaced")
    with _lock:
        if typ in _HOOKS:
            raise RuntimeError(f"device hooks for '{device_type}' are already registered")
        _HOOKS[typ] = hooks
    _refresh_device_objects()


def get_device_hooks(device_type: str) -> DeviceHooks | None:
    return _HOOKS.get(device(device_type)._type)


# --- refused device types (CUDA's "bad fork") ----------------------------------------------------------------

# device type -> a callable that raises why this process may not touch that type's memory. Empty in a normal
# process, so readers of device memory pay one truth test and the dispatcher nothing per call.
_REFUSED: dict = {}
_on_refuse: list = []


def refuse_device_type(device_type: str, check) -> None:
    """From now on, every access to the memory of ``device_type`` tensors calls ``check()``, which raises.

    A backend calls this in a child forked after its parent initialised the device
    (torch's CUDA then refuses every op and every read with "Cannot re-initialize
    CUDA in forked subprocess"). Ops served for the type's dispatch key raise,
    except views, which touch no memory; host reads (``item``, ``tolist``, printing)
    raise too. Called from a fork handler: it takes no lock.
    """
    _REFUSED[device(device_type)._type] = check
    for hook in _on_refuse:
        hook()


def on_refuse(hook) -> None:
    """Call ``hook()`` after ``refuse_device_type`` (the dispatcher drops the kernels it resolved)."""
    _on_refuse.append(hook)


def refusal(device_type: str):
    """The ``check`` a refused device type raises with, or None."""
    return _REFUSED.get(device_type) if _REFUSED else None


def check_access(dev) -> None:
    """Raise if this process may not touch the memory of tensors on ``dev`` (see ``refuse_device_type``)."""
    if _REFUSED:
        check = _REFUSED.get(dev._type)
        if check is not None:
            check()


# --- host reads of device memory (item, tolist, printing) ------------------------------------------------------

# device type -> fn(device), called before the host reads a tensor of that type (a synchronizing operation: the
# backend's sync debug mode and graph capture check it). Empty unless a backend asked, so readers pay one test.
_HOST_READ_HOOKS: dict = {}


def register_host_read_hook(device_type: str, fn) -> None:
    """Call ``fn(device)`` before every host read of a ``device_type`` tensor's memory (None: stop)."""
    typ = device(device_type)._type
    if fn is None:
        _HOST_READ_HOOKS.pop(typ, None)
    else:
        _HOST_READ_HOOKS[typ] = fn


def host_read(dev) -> None:
    """Tell ``dev``'s backend the host is about to read its memory (see ``register_host_read_hook``)."""
    if _HOST_READ_HOOKS:
        fn = _HOST_READ_HOOKS.get(dev._type)
        if fn is not None:
            fn(dev)


def _refresh_device_objects():
    _FACTORIES.clear()


# id(device) -> storage factory for devices whose new arrays must be reported (None: none). Devices are
# interned and never freed, so their ids are stable keys, and hashing an int is cheaper than a device.
_FACTORIES: dict = {}


def refresh_storage_factories() -> None:
    """Ask the backends for their storage factories again (a backend whose factory changed calls it)."""
    _FACTORIES.clear()


def storage_factory(dev):
    """The function that makes the storage of a new array on ``dev``, or None."""
    try:
        return _FACTORIES[id(dev)]
    except KeyError:
        h = _HOOKS.get(dev._type)
        f = h.storage_factory(dev) if (h is not None and h.tracks_storage) else None
        if f is not None or (h is not None and getattr(h, "initialized", True)):
            _FACTORIES[id(dev)] = f
        return f


def resolve_target_device(dev) -> device:
    """Parse and validate a device argument for a new tensor (None -> the default device, cpu unless set)."""
    if dev is None:
        d = current_default()
        return CPU if d is None else resolve_device(d)
    if dev is CPU:
        return CPU
    return resolve_device(dev)


def no_backend_hint(type_name: str) -> str:
    """What to do when a program asks for a device type npusim has no backend for (a "cuda" program, mostly)."""
    accel = privateuse1_backend_name()
    if accel == "privateuseone" or _HOOKS.get("privateuseone") is None:
        return ""
    return (f": npusim's accelerator is '{accel}'; to run a program written for '{type_name}' on it, run it "
            f"with `python -m npusim run --device-map {type_name}={accel} SCRIPT`")


def resolve_device(d) -> device:
    """A concrete device for a new tensor: index filled in and checked against the count."""
    d = d if d.__class__ is device else device(d)
    if d is CPU:
        return d
    typ = d._type
    if typ == "cpu":
        return CPU  # "cpu:0" tensors report device "cpu", as in torch
    hooks = _HOOKS.get(typ)
    name = d.type
    if hooks is None:
        if typ == PRIVATEUSE1:
            raise RuntimeError(f"no backend is registered for the '{name}' device type "
                               f"(PrivateUse1 is named '{privateuse1_backend_name()}')")
        raise RuntimeError(f"npusim has no backend for the '{name}' device type" + no_backend_hint(name))
    hooks.lazy_init()
    idx = d.index
    if idx is None:
        return device(typ if typ != PRIVATEUSE1 else name, hooks.current_device())
    count = hooks.device_count()
    if idx >= count:
        raise RuntimeError(f"Invalid device {d}: the {name} backend has {count} device"
                           f"{'s' if count != 1 else ''} (valid indices 0..{count - 1})")
    return d
