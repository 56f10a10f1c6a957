"""Where loaded storages go: location tags, ``map_location``, device checks.

Each storage in an archive is tagged with the device it was saved from
(``cpu``, ``npu:0``). ``map_location`` works as in ``torch.load``: a string or
``npusim.device`` sends every storage there, a dict remaps tags, a callable
gets ``(cpu_storage, tag)`` and returns a storage or None (meaning "as tagged").
Restoring to a device that does not exist is a clear error that suggests
``map_location``.
"""
from __future__ import annotations

import numpy as np

from ..core.c10.device import CPU, device as _device
from ..core.c10.device_hooks import get_device_hooks, resolve_device
from ..core.c10.storage import UntypedStorage
from ..core.tensor import make

_SUGGEST_CPU = ("If you are running on a CPU-only machine, please use npusim.load with "
                "map_location=npusim.device('cpu') to map your storages to the CPU.")


def check_map_location(map_location) -> None:
    if map_location is None or isinstance(map_location, (str, bytes, _device, dict)) or callable(map_location):
        return
    raise TypeError(f"map_location must be a str, an npusim.device, a dict or a callable, got "
                    f"{type(map_location).__name__}")


def target_device(location) -> _device:
    """The device a location tag names, checked to exist here."""
    if isinstance(location, bytes):
        location = location.decode("ascii", "replace")
    if isinstance(location, _device):
        dev = location
    else:
        if not isinstance(location, str):
            raise RuntimeError(f"a storage location must be a device string, got {type(location).__name__}")
        try:
            dev = _device(location)
        except (RuntimeError, TypeError):
            raise RuntimeError(f"don't know how to restore data location of npusim.UntypedStorage (tagged with "
                               f"{location!r}): use map_location to load it onto an npusim device, e.g. "
                               "map_location='cpu'") from None
    if dev.type == "cpu":
        return CPU
    name = dev.type
    hooks = get_device_hooks(name)
    if hooks is None:
        raise RuntimeError(f"Attempting to deserialize object on a {name.upper()} device but npusim has no {name} "
                           f"backend. {_SUGGEST_CPU}")
    if not hooks.is_available():
        raise RuntimeError(f"Attempting to deserialize object on a {name.upper()} device but "
                           f"npusim.{name}.is_available() is False. {_SUGGEST_CPU}")
    index = dev.index if dev.index is not None else hooks.current_device()
    count = hooks.device_count()
    if index >= count:
        raise RuntimeError(f"Attempting to deserialize object on {name.upper()} device {index} but "
                           f"npusim.{name}.device_count() is {count}. Please use npusim.load with map_location to "
                           "map your storages to an existing device.")
    return resolve_device(_device(name, index))


def storage_on(host: np.ndarray, dev: _device, *, adopt: bool) -> UntypedStorage:
    """A storage on ``dev`` holding the bytes of ``host`` (a 1-D uint8 array).

    ``adopt``: ``host`` is a fresh array nobody else holds, so a device whose
    arrays are NumPy arrays (the cpu, the emulated npu) takes it without a copy.
    """
    if dev is CPU:
        return UntypedStorage._wrap(host, CPU)
    hooks = get_device_hooks(dev.type)
    if adopt and hooks is not None and hooks.array_namespace(dev) is np:
        return make(host, dev).untyped_storage()
    return UntypedStorage._wrap(host, CPU).to(device=dev)


def mapped_location(map_location, location: str):
    """The location a storage goes to when ``map_location`` is not a callable."""
    if map_location is None:
        return location
    if isinstance(map_location, dict):
        return map_location.get(location, location)
    if isinstance(map_location, bytes):
        return map_location.decode("ascii", "replace")
    return map_location  # a str or an npusim.device


def check_restored(result, location) -> UntypedStorage:
    if not isinstance(result, UntypedStorage):
        raise TypeError(f"map_location returned {type(result).__name__} for a storage tagged {location!r}: it must "
                        "return an npusim.UntypedStorage (e.g. storage, storage.npu(0)) or None")
    return result
