"""The npu backend, plugged in exactly as the PrivateUse1 tutorial describes.

Importing this package:
1. renames PrivateUse1 to ``npu`` (``rename_privateuse1_backend``),
2. registers the runtime's device hooks (device count, current device, memory) and
   its random generators,
3. registers kernels for the PrivateUse1 key through ``Library("aten", "IMPL")``,
   leaving some ops out on purpose so they run through
4. the boxed CPU fallback, ``Library("_", "IMPL").fallback(..., "PrivateUse1")``,
5. registers the runtime module as ``npusim.npu`` (``_register_device_module``),
6. generates ``Tensor.npu()``, ``Tensor.is_npu``, ``Storage.npu()``... (``generate_methods_for_privateuse1_backend``).

It uses only what a third-party backend could use.
"""
from __future__ import annotations

from .._device_module import _register_device_module
from ..core.device_hooks import register_device_hooks
from ..core.generator import register_default_generators, register_generator
from ..library import Library
from ..native.registration import register_kernels
from ..utils import generate_methods_for_privateuse1_backend, rename_privateuse1_backend
from . import copy_kernels, device_module
from .fallback import cpu_fallback
from .generator import defaults as _default_generators
from .generator import make_generator
from .hooks import NpuHooks
from .memory import memory
from .runtime import runtime

# Ops deliberately left to the CPU fallback, so it is exercised and documented.
FALLBACK_OPS = ("sort", "argsort", "topk", "_unique2", "unique_dim", "unique_consecutive", "nonzero",
                "masked_select", "einsum")

rename_privateuse1_backend("npu")
register_device_hooks("npu", NpuHooks(memory))
runtime.on_init(memory.init)
runtime.on_init(_default_generators.init)
register_generator("npu", make_generator)
register_default_generators("npu", _default_generators.get)

_aten_npu = Library("aten", "IMPL")
register_kernels(_aten_npu, "PrivateUse1", exclude=FALLBACK_OPS + tuple(copy_kernels.KERNELS))
for _name, _fn in copy_kernels.KERNELS.items():
    _aten_npu.impl(_name, _fn, "PrivateUse1")

_fallback_lib = Library("_", "IMPL")
_fallback_lib.fallback(cpu_fallback, "PrivateUse1")

_register_device_module("npu", device_module)
generate_methods_for_privateuse1_backend(for_tensor=True, for_module=True, for_storage=True)
