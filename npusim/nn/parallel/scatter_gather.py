"""``scatter``, ``scatter_kwargs`` and ``gather``: split a batch across devices and join the results
(``torch.nn.parallel.scatter_gather``).

Tensors are cut into chunks along ``dim`` (one per device, fewer when the batch is smaller) and copied with
``Tensor.to``, so autograd carries each chunk's gradient back to the whole; tuples, lists and dicts are split
element-wise; any other object goes to every device as it is. ``gather`` concatenates on the target device, again
through differentiable copies.
"""
from __future__ import annotations

import warnings

from ...core.c10.device import device as _device
from ...core.tensor import Tensor

__all__ = ["scatter", "scatter_kwargs", "gather"]


def _as_device(target):
    if isinstance(target, _device):
        return target
    if isinstance(target, int):
        from ... import accelerator
        return _device(accelerator.current_accelerator().type, target)
    return _device(target)


def _is_namedtuple(obj):
    return isinstance(obj, tuple) and hasattr(obj, "_asdict") and hasattr(obj, "_fields")


def scatter(inputs, target_gpus, dim=0):
    """Slices tensors into approximately equal chunks on ``target_gpus``; other objects are duplicated."""
    devices = [_as_device(d) for d in target_gpus]

    def scatter_map(obj):
        if isinstance(obj, Tensor):
            return tuple(chunk.to(dev) for chunk, dev in zip(obj.chunk(len(devices), dim), devices))
        if _is_namedtuple(obj):
            return [type(obj)(*args) for args in zip(*map(scatter_map, obj))]
        if isinstance(obj, tuple) and len(obj) > 0:
            return list(zip(*map(scatter_map, obj)))
        if isinstance(obj, list) and len(obj) > 0:
            return [list(i) for i in zip(*map(scatter_map, obj))]
        if isinstance(obj, dict) and len(obj) > 0:
            return [type(obj)(i) for i in zip(*map(scatter_map, obj.items()))]
        return [obj for _ in devices]

    # scatter_map is recursive: clear its closure cell afterwards so the function is not kept alive by a cycle
    try:
        return scatter_map(inputs)
    finally:
        scatter_map = None  # noqa: F841


def scatter_kwargs(inputs, kwargs, target_gpus, dim=0):
    """Scatter positional and keyword arguments alike, padding the shorter list with empty ones."""
    scattered_inputs = scatter(inputs, target_gpus, dim) if inputs else []
    scattered_kwargs = scatter(kwargs, target_gpus, dim) if kwargs else []
    if len(scattered_inputs) < len(scattered_kwargs):
        scattered_inputs.extend(() for _ in range(len(scattered_kwargs) - len(scattered_inputs)))
    elif len(scattered_kwargs) < len(scattered_inputs):
        scattered_kwargs.extend({} for _ in range(len(scattered_inputs) - len(scattered_kwargs)))
    return tuple(scattered_inputs), tuple(scattered_kwargs)


def gather(outputs, target_device, dim=0):
    """Gathers tensors from different devices on ``target_device`` (-1 means the cpu), concatenating along
    ``dim``; tuples, lists and dicts are gathered element-wise, ``None`` stays ``None``."""
    target = _device("cpu") if target_device == -1 else _as_device(target_device)

    def gather_map(outputs):
        out = outputs[0]
        if isinstance(out, Tensor):
            if dim == 0 and all(o.dim() == 0 for o in outputs):
                warnings.warn("Was asked to gather along dimension 0, but all input tensors were scalars; will "
                              "instead unsqueeze and return a vector.")
                outputs = [o.reshape(1) for o in outputs]
            from ...api.operators import cat
            return cat([o.to(target) for o in outputs], dim)
        if out is None:
            return None
        if isinstance(out, dict):
            if not all(len(out) == len(d) for d in outputs):
                raise ValueError("All dicts must have the same number of keys")
            return type(out)((k, gather_map([d[k] for d in outputs])) for k in out)
        if _is_namedtuple(out):
            return type(out)._make(map(gather_map, zip(*outputs)))
        return type(out)(map(gather_map, zip(*outputs)))

    try:
        return gather_map(outputs)
    finally:
        gather_map = None  # noqa: F841
