"""``parameters_to_vector`` / ``vector_to_parameters``: all parameters as one flat vector and back."""
from __future__ import annotations

from ...core.c10.device import privateuse1_backend_name
from ...api.operators import cat
from ...core.tensor import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def parameters_to_vector(parameters):
    """One 1-D tensor holding every parameter's values, in order."""
    param_device = None
    vec = []
    for param in parameters:
        param_device = _check_param_device(param, param_device)
        vec.append(param.view(-1))
    return cat(vec)


def vector_to_parameters(vec, parameters):
    """Point each parameter's data at its slice of ``vec`` (the inverse of :func:`parameters_to_vector`)."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected npusim.Tensor, but got: {_typename(vec)}")
    param_device = None
    pointer = 0
    for param in parameters:
        param_device = _check_param_device(param, param_device)
        num_param = param.numel()
        param.data = vec[pointer:pointer + num_param].view_as(param).data
        pointer += num_param


def _typename(obj):
    module = type(obj).__module__
    name = type(obj).__qualname__
    return name if module in ("builtins", "__builtin__") else f"{module}.{name}"


def _check_param_device(param, old_param_device):
    # Accelerator parameters are compared by device index; CPU ones all count as index -1.
    indexed = param.device.type in ("cuda", privateuse1_backend_name())
    if old_param_device is None:
        return param.get_device() if indexed else -1
    if indexed:
        warn = param.get_device() != old_param_device
    else:
        warn = old_param_device != -1
    if warn:
        raise TypeError("Found two parameters on different devices, this is currently not supported.")
    return old_param_device
