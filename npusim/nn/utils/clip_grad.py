"""Gradient clipping: ``clip_grad_norm_`` (by the total norm) and ``clip_grad_value_`` (elementwise).

``foreach`` is accepted for torch's signature; every device takes the same per-tensor path.
"""
from __future__ import annotations

import types
import warnings

from ...core.autograd.grad_mode import no_grad
from ...core.factories import tensor
from ...api.operators import stack
from ...core.dispatch.ops_namespace import aten
from ...core.tensor import Tensor

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_"]


@no_grad()
def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The ``norm_type``-norm of all the tensors together, as if concatenated into one vector."""
    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    norm_type = float(norm_type)
    if len(tensors) == 0:
        return tensor(0.0)
    first_device = tensors[0].device
    norms = [aten.linalg_vector_norm.default(t, norm_type).to(first_device) for t in tensors]
    total_norm = aten.linalg_vector_norm.default(stack(norms), norm_type)
    if error_if_nonfinite and bool(total_norm.isnan() | total_norm.isinf()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so it "
                           f"cannot be clipped. To disable this error and scale the gradients by the non-finite norm "
                           f"anyway, set `error_if_nonfinite=False`")
    return total_norm


@no_grad()
def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scale the gradients by min(1, max_norm / (total_norm + 1e-6)), in place."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    grads = [p.grad for p in parameters if p.grad is not None]
    max_norm = float(max_norm)
    if len(grads) == 0:
        return
    clip_coef_clamped = (max_norm / (total_norm + 1e-6)).clamp(max=1.0)
    coef_on = {}
    for g in grads:
        coef = coef_on.get(g.device)
        if coef is None:
            coef = coef_on[g.device] = clip_coef_clamped.to(g.device)
        g.mul_(coef)


@no_grad()
def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Clip the parameters' gradients so their total norm is at most ``max_norm``; returns the total norm."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    else:
        is_generator = isinstance(parameters, types.GeneratorType)
        parameters = list(parameters)
        if is_generator and len(parameters) == 0:
            warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.", stacklevel=3)
    grads = [p.grad for p in parameters if p.grad is not None]
    total_norm = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total_norm, foreach)
    return total_norm


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Deprecated alias of :func:`clip_grad_norm_`."""
    warnings.warn("`npusim.nn.utils.clip_grad_norm` is now deprecated in favor of `npusim.nn.utils.clip_grad_norm_`.",
                  FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


@no_grad()
def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient element into [-clip_value, clip_value], in place."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    clip_value = float(clip_value)
    grads = [p.grad for p in parameters if p.grad is not None]
    for grad in grads:
        grad.clamp_(min=-clip_value, max=clip_value)
