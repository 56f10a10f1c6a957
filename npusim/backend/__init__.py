"""The npu backend, plugged in exactly as the PrivateUse1 tutorial describes.

Importing this package:
1. renames PrivateUse1 to ``npu`` (``rename_privateuse1_backend``),
2. registers the runtime's device hooks (device count, current device, memory), its
   random generators, its device/stream guard, and what the profiler, ``npusim.__config__``
   and ``npusim.distributed`` ask of it (kernel times and memory events, build lines, the
   ``mpi`` and ``nccl`` process-group backends for npu tensors),
3. registers kernels for the PrivateUse1 key through ``Library("aten", "IMPL")``,
   leaving some ops out on purpose so they run through
4. the boxed CPU fallback, ``Library("_", "IMPL").fallback(..., "PrivateUse1")``,
5. registers the runtime module as ``npusim.npu`` (``register_device_module``),
6. generates ``Tensor.npu()``, ``Tensor.is_npu``, ``Storage.npu()``... (``generate_methods_for_privateuse1_backend``),
7. registers its backend-metadata serialization and its autocast policies and ``npusim.npu.amp`` (``amp``).

It uses only what a third-party backend could use: ``npusim.privateuse1``, ``npusim.library``,
``npusim.kernels`` and npusim's public names (an import-linter contract in pyproject.toml checks it).
"""
from __future__ import annotations

from ..library import Library
from ..privateuse1 import (
    composite_kernels, generate_methods_for_privateuse1_backend, generic_kernels, register_build_info,
    register_collective_backends, register_default_generators, register_device_hooks, register_device_module,
    register_generator, register_guard_impl, register_profiler_hooks, rename_privateuse1_backend,
)
from . import copy_kernels, device_module, distributed, graphs
from .build_info import build_info
from .capacity import with_capacity_checks
from .cupy_kernels import HOT_OPS, HotKernels
from . import autograd_overrides  # noqa: F401  (AutogradPrivateUse1 kernels of selu and gelu)
from .fallback import cpu_fallback
from .generator import defaults as _default_generators
from .generator import make_generator
from .guard import impl as _guard_impl
from .hooks import NpuHooks
from .memory import memory
from .profiler_hooks import NpuProfilerHooks
from .runtime import runtime

KERNELS = generic_kernels()
COMPOSITE, COMPOSITE_IMPLICIT = composite_kernels()

# Ops deliberately left to the CPU fallback, so it is exercised and documented (declared in the op table).
from .op_table import FALLBACK_OPS  # noqa: E402

rename_privateuse1_backend("npu")
register_device_hooks("npu", NpuHooks(memory))
runtime.on_init(memory.init)
runtime.on_init(_default_generators.init)
register_generator("npu", make_generator)
register_default_generators("npu", _default_generators.get)
register_guard_impl("npu", _guard_impl)
register_profiler_hooks("npu", NpuProfilerHooks())
register_build_info(build_info)
register_collective_backends(distributed.register)   # mpi for npu tensors, nccl: when npusim.distributed loads

# kernels whose result can outgrow their inputs check the device's capacity before NumPy allocates
_npu_kernels = with_capacity_checks(KERNELS)
_aten_npu = Library("aten", "IMPL")
for _name, _fn in _npu_kernels.items():
    if _name.split(".")[0] not in FALLBACK_OPS and _name not in copy_kernels.KERNELS and _name not in HOT_OPS:
        _aten_npu.impl(_name, _fn, "PrivateUse1")
for _name, _fn in copy_kernels.KERNELS.items():
    _aten_npu.impl(_name, _fn, "PrivateUse1")
_hot_kernels = HotKernels(_npu_kernels)     # CuPy versions of a few hot ops replace these in cuda mode
runtime.on_init(_hot_kernels.on_runtime_init)
# what a graph capture records: the npu's kernels as registered (graphs.py wraps them while it captures)
graphs.record_kernels(lambda: {**COMPOSITE,
                               **{n: f for n, f in _npu_kernels.items() if n.split(".")[0] not in FALLBACK_OPS},
                               **copy_kernels.KERNELS, **_hot_kernels.active})

# the npu's own kernels read the device from their inputs: in emulation they need no device switch
_guard_impl.mark_device_generic(KERNELS.values())
_guard_impl.mark_device_generic(_npu_kernels.values())
_guard_impl.mark_device_generic(COMPOSITE.values())
_guard_impl.mark_device_generic(COMPOSITE_IMPLICIT.values())
_guard_impl.mark_device_generic(copy_kernels.KERNELS.values())
# The CPU fallback keeps the device guard, even in emulation: user CPU kernels it runs see the inputs'
# device as current, exactly as they would in cuda mode.

_fallback_lib = Library("_", "IMPL")
_fallback_lib.fallback(cpu_fallback, "PrivateUse1")

register_device_module("npu", device_module)
generate_methods_for_privateuse1_backend(for_tensor=True, for_module=True, for_storage=True)
from . import serialization_hooks  # noqa: E402,F401  (npu backend metadata in archives; needs the name 'npu')
from . import amp  # noqa: E402  (AutocastPrivateUse1 policies, npusim.npu.amp; needs the device module)
amp.register()
