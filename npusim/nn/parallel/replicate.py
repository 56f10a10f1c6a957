"""``replicate``: copies of a module on several devices whose parameters stay in the autograd graph of the
original's (``torch.nn.parallel.replicate``).

Each replica is a shallow copy of every submodule, with its parameters and buffers replaced by copies on the
replica's device made with ``Tensor.to``; a parameter's copy is differentiable, so the gradients of all replicas
sum into the original parameter's ``.grad``. On the original's own device the replica uses the original tensors,
as torch's does (in-place buffer updates there, such as batch norm's running statistics, are kept).
"""
from __future__ import annotations

from collections import OrderedDict

from ...core.autograd.grad_mode import is_grad_enabled, no_grad
from ..modules.module import Module

__all__ = ["replicate"]


def _replica_of(module):
    replica = module.__new__(type(module))
    replica.__dict__ = module.__dict__.copy()
    # parameters become plain attributes (torch's replicas have none of their own), buffers and children are copied
    replica.__dict__["_parameters"] = OrderedDict()
    replica.__dict__["_buffers"] = module._buffers.copy()
    replica.__dict__["_modules"] = module._modules.copy()
    replica.__dict__["_is_replica"] = True
    return replica


def _copies(tensors, devices, detach):
    """``result[j][i]``: tensor i on device j (the tensor itself where it already lives there)."""
    result = []
    for dev in devices:
        row = []
        for t in tensors:
            if t.device == dev:
                row.append(t)
            elif detach:
                with no_grad():
                    row.append(t.to(dev))
            else:
                row.append(t.to(dev))
        result.append(row)
    return result


def replicate(network, devices, detach=False):
    """One copy of ``network`` per device of ``devices`` (indices or devices)."""
    from .scatter_gather import _as_device
    devices = [_as_device(d) for d in devices]
    if not devices:
        return []
    modules = list(network.modules())
    module_index = {id(m): i for i, m in enumerate(modules)}
    params = list(network.parameters())
    param_index = {id(p): i for i, p in enumerate(params)}
    buffers = list(network.buffers())
    buffer_index = {id(b): i for i, b in enumerate(buffers)}
    grad_on = is_grad_enabled() and not detach
    param_copies = _copies(params, devices, detach=not grad_on)
    # a buffer that requires grad keeps its graph, as torch's does; the others are detached copies
    by_buffer = [_copies([b], devices, detach=not (grad_on and b.requires_grad)) for b in buffers]

    replicas = [[_replica_of(m) for m in modules] for _ in devices]
    for i, module in enumerate(modules):
        for j in range(len(devices)):
            replica = replicas[j][i]
            for key, child in module._modules.items():
                replica._modules[key] = None if child is None else replicas[j][module_index[id(child)]]
            for key, param in module._parameters.items():
                value = None if param is None else param_copies[j][param_index[id(param)]]
                object.__setattr__(replica, key, value)
            for key, buf in module._buffers.items():
                if buf is None:
                    replica._buffers[key] = None
                else:
                    replica._buffers[key] = by_buffer[buffer_index[id(buf)]][j][0]
    return [replicas[j][0] for j in range(len(devices))]
