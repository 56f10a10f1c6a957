"""Plugging npusim's npu into torch, once per process: the name, hooks, guard, device module and kernels."""
from __future__ import annotations

import torch

_installed = False
_libraries: list = []       # torch drops a Library's registrations when the object dies
served_ops: list = []


def install() -> None:
    global _installed
    if _installed:
        return
    name = torch._C._get_privateuse1_backend_name()
    if name not in ("privateuseone", "npu"):
        raise ImportError(f"npusim.torch_backend: PrivateUse1 is already the '{name}' backend in this process")
    if name != "npu":
        torch.utils.rename_privateuse1_backend("npu")    # before the modules below name torch.device("npu")

    import npusim
    npusim.npu.init()    # its mode (emulation or a GPU) decides the array module the kernels below bind

    from . import (
        amp_kernels, array_kernels, autocast, backward_kernels, copy, device_module, factories, fallback,
        fast_kernels, kernels, optimizer_kernels, refusals, rnn_cells, views,
    )
    from .hooks import NpuDeviceGuard, NpuHooks

    # torch.utils.backend_registration._setup_privateuseone_for_python_backend's steps, after the rename
    torch.utils.generate_methods_for_privateuse1_backend()
    torch._register_device_module("npu", device_module)
    torch._C._acc.register_python_privateuseone_hook(NpuHooks())
    torch._C._acc.register_python_privateuseone_device_guard(NpuDeviceGuard())
    aten = torch.library.Library("aten", "IMPL")
    everything = torch.library.Library("_", "IMPL")
    _libraries.extend([aten, everything])
    general = kernels.adapters()
    own = {**fast_kernels.kernels(general), **array_kernels.KERNELS}   # in place of npusim's for these ops
    for qual, fn in {**general, **own}.items():
        aten.impl(qual, fn, "PrivateUse1")
    served_ops.extend(general)
    views.register(aten)
    factories.register(aten)
    copy.register(aten)
    rnn_cells.register(aten)
    backward_kernels.register(aten)
    amp_kernels.register(aten)
    optimizer_kernels.register(aten)
    fallback.register(everything)
    autocast.register(aten, everything)
    refusals.install()
    _installed = True
