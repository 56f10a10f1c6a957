"""``npusim.privateuse1``: the PrivateUse1 extension points, everything a third-party backend may use.

A backend plugs a device into npusim through these names only (``npusim/backend``,
the npu, does; an import-linter contract holds it to them), plus ``npusim.library``
for kernel registration, ``npusim.kernels`` for array kernels, and public ``npusim.*``
names. See ``docs/backend_api.md`` for a walk-through.

- The device type's name: ``rename_privateuse1_backend``, ``privateuse1_backend_name``, ``PRIVATEUSE1``
  (the type as core stores it).
- Its runtime: ``DeviceHooks`` / ``register_device_hooks`` / ``get_device_hooks`` (device count, current
  device, lazy init, array module, storage of new arrays), ``refuse_device_type`` (a forked child),
  ``register_host_read_hook`` (told before the host reads device memory: ``item``, ``tolist``, printing),
  ``refresh_storage_factories`` (the hooks' ``storage_factory`` answers differently from now on);
  ``register_device_module`` (``npusim.<name>``), ``generate_methods_for_privateuse1_backend``.
- Devices and streams: ``DeviceGuardImplInterface`` / ``register_guard_impl``; ``Stream`` and ``Event``
  to subclass; ``UntypedStorage`` to subclass for the storage factory (an instance made for an array sets
  its ``_root``, the array, and ``_device``; its ``__del__`` may return the memory to the backend).
- Random numbers: ``Generator``, ``register_generator``, ``register_default_generators``, ``DEFAULT_SEED``,
  ``seed_value``.
- Kernels: ``from_array`` / ``view_of_array`` / ``array_of`` / ``device_of`` / ``bump_version`` /
  ``replace_array`` (``tensors``); the device-generic kernels the framework has for every device
  (``generic_kernels``);
  autocast policies (``register_autocast_policies``); ``Library`` and ``fallthrough_kernel`` are in
  ``npusim.library``.
- Generated wrappers: ``npusim.privateuse1.codegen`` (the framework's code generator, ``user_stacklevel``).
- Archives: ``register_backend_meta_serialization``.
- Services: ``ProfilerHooks`` / ``register_profiler_hooks`` (kernel times, memory events),
  ``register_build_info`` (``npusim.__config__.show()``), ``register_collective_backends``
  (``npusim.distributed``, with ``npusim.privateuse1.distributed``), ``log_api_usage_once``.
"""
from __future__ import annotations

from .._device_module import _register_device_module as register_device_module
from ..core.autocast.state import register_autocast_policies
from ..core.c10.device import PRIVATEUSE1, privateuse1_backend_name, rename_privateuse1_backend
from ..core.c10.device_guard import DeviceGuardImplInterface, register_guard_impl
from ..core.c10.device_hooks import (
    DeviceHooks, get_device_hooks, refresh_storage_factories, refuse_device_type, register_device_hooks,
    register_host_read_hook,
)
from ..core.c10.generator import (
    DEFAULT_SEED, Generator, register_default_generators, register_generator, seed_value,
)
from ..core.c10.storage import UntypedStorage
from ..core.c10.stream import Event, Stream
from ..api.legacy_tensor_types import legacy_tensor_types
from ..api.legacy_storage_types import legacy_storage_types
from ..core.dispatch.api_usage import log_api_usage_once
from ..serialization.backend_meta import register_backend_meta_serialization
from ..utils.backend_registration import generate_methods_for_privateuse1_backend
from .hooks import (
    ProfilerHooks, build_info, get_profiler_hooks, register_build_info, register_collective_backends,
    register_profiler_hooks,
)
from .kernels import composite_kernels, generic_kernels
from .tensors import array_of, bump_version, device_of, from_array, replace_array, view_of_array

__all__ = [
    "PRIVATEUSE1", "privateuse1_backend_name", "rename_privateuse1_backend", "register_device_module",
    "generate_methods_for_privateuse1_backend",
    "DeviceHooks", "register_device_hooks", "get_device_hooks", "refuse_device_type", "register_host_read_hook",
    "refresh_storage_factories",
    "DeviceGuardImplInterface", "register_guard_impl", "Stream", "Event", "UntypedStorage",
    "Generator", "register_generator", "register_default_generators", "DEFAULT_SEED", "seed_value",
    "from_array", "view_of_array", "array_of", "device_of", "bump_version", "replace_array", "generic_kernels",
    "composite_kernels", "legacy_tensor_types",
    "register_autocast_policies", "register_backend_meta_serialization",
    "ProfilerHooks", "register_profiler_hooks", "get_profiler_hooks", "register_build_info", "build_info",
    "register_collective_backends",
    "log_api_usage_once",
]
__all__ += ["legacy_storage_types"]
