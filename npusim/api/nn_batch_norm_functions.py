"""torch's native normalisation ops and batch norm's distributed building blocks.

- ``native_batch_norm`` / ``native_layer_norm`` / ``native_group_norm``: the aten operators behind the norms, with
  their result tuples (output and the statistics backward uses) and their gradients.
- ``batch_norm_stats``, ``batch_norm_gather_stats(_with_counts)``, ``batch_norm_elemt``,
  ``batch_norm_backward_reduce``, ``batch_norm_backward_elemt``, ``batch_norm_update_stats``: the steps of
  ``SyncBatchNorm`` (per-rank statistics, their combination across ranks, the normalisation, and backward's
  per-channel sums and elementwise step), with torch's CUDA kernels' formulas. Torch has CPU kernels only for
  ``batch_norm_update_stats``; here every one runs on every device. Like torch's, they have no derivative: their
  results carry no gradient.

Statistics are kept in float32 for 16-bit inputs (CUDA's accumulate type); per channel means over dim 1 of
(N, C, *).
"""
from __future__ import annotations

from ..core.autograd.grad_mode import is_grad_enabled, no_grad
from ..core.c10 import dtype as D
from ..core.dispatch.ops_namespace import aten
from ..core.tensor import Tensor
from .operators import _copy_into

__all__ = [
    "native_batch_norm", "native_layer_norm", "native_group_norm", "batch_norm_stats", "batch_norm_elemt",
    "batch_norm_gather_stats", "batch_norm_gather_stats_with_counts", "batch_norm_backward_reduce",
    "batch_norm_backward_elemt", "batch_norm_update_stats",
]

_HALF = (D.float16, D.bfloat16)


def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, *, out=None):
    """native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, *, out=None) ->
    (output, save_mean, save_invstd): batch norm over dim 1 of (N, C, *); in training the batch's mean and
    1 / sqrt(var + eps) are returned and the running statistics updated in place. ``out`` is a tuple of three
    tensors that receive the results."""
    if out is not None:
        if not isinstance(out, (tuple, list)) or len(out) != 3 or not all(isinstance(t, Tensor) for t in out):
            got = type(out).__name__ if not isinstance(out, Tensor) else "Tensor"
            raise TypeError(f"native_batch_norm(): argument 'out' must be tuple of Tensors, not {got}")
        if is_grad_enabled() and any(t is not None and t.requires_grad for t in (input, weight, bias)):
            raise RuntimeError("native_batch_norm(): functions with out=... arguments don't support automatic "
                               "differentiation, but one of the arguments requires grad.")
    results = aten.native_batch_norm.default(input, weight, bias, running_mean, running_var, training, momentum, eps)
    if out is None:
        return tuple(results)
    return tuple(_copy_into(o, r) for o, r in zip(out, results))


def native_layer_norm(input, normalized_shape, weight, bias, eps):
    """native_layer_norm(input, normalized_shape, weight, bias, eps) -> (output, mean, rstd): layer norm over the
    last ``len(normalized_shape)`` dims; mean and rstd keep those dims with size 1."""
    if isinstance(normalized_shape, int):
        normalized_shape = [normalized_shape]
    return tuple(aten.native_layer_norm.default(input, list(normalized_shape), weight, bias, eps))


def native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    """native_group_norm(input, weight, bias, N, C, HxW, group, eps) -> (output, mean, rstd): group norm of an
    (N, C, *) input whose spatial dims hold HxW elements; mean and rstd are (N, group)."""
    return tuple(aten.native_group_norm.default(input, weight, bias, N, C, HxW, group, eps))


# --- SyncBatchNorm's steps ---------------------------------------------------------------------------------------

def _stat_dtype(t):
    return D.float32 if t.dtype in _HALF else t.dtype


def _to(t, dtype):
    return t if t.dtype is dtype else t.to(dtype)


def _channel_view(t, input):
    """A per-channel vector shaped to broadcast against (N, C, *) ``input``."""
    return t.reshape([1, -1] + [1] * (input.dim() - 2))


def _reduce_dims(input):
    return [0] + list(range(2, input.dim()))


def _check_input(input, name):
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if input.dim() < 2:   # the kernels read size(1) first
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got 1)")


def batch_norm_stats(input, eps):
    """batch_norm_stats(input, eps) -> (mean, invstd): each channel's mean and 1 / sqrt(biased var + eps) over the
    other dims of (N, C, *) ``input``."""
    _check_input(input, "batch_norm_stats")
    with no_grad():
        x = _to(input, _stat_dtype(input))
        dims = _reduce_dims(input)
        mean = x.mean(dims)
        var = (x - _channel_view(mean, x)).square().mean(dims)
        return mean, (var + eps).rsqrt()


def batch_norm_elemt(input, weight, bias, mean, invstd, eps):
    """batch_norm_elemt(input, weight, bias, mean, invstd, eps) -> Tensor: (input - mean) * invstd * weight + bias per
    channel (``eps`` is not used: ``invstd`` already holds it)."""
    _check_input(input, "batch_norm_elemt")
    with no_grad():
        dt = _stat_dtype(input)
        out = (_to(input, dt) - _channel_view(_to(mean, dt), input)) * _channel_view(_to(invstd, dt), input)
        if weight is not None:
            out = out * _channel_view(_to(weight, dt), input)
        if bias is not None:
            out = out + _channel_view(_to(bias, dt), input)
        return _to(out, input.dtype)


def batch_norm_gather_stats_with_counts(input, mean, invstd, running_mean, running_var, momentum, eps, counts):
    """batch_norm_gather_stats_with_counts(input, mean, invstd, running_mean, running_var, momentum, eps, counts) ->
    (mean, invstd): the statistics of the whole batch from each rank's (one row of ``mean`` / ``invstd`` per rank,
    ``counts`` elements each); updates the running statistics in place (the variance unbiased)."""
    with no_grad():
        dt = mean.dtype
        n = _to(counts, dt).reshape(-1, 1)
        total = n.sum(0)
        global_mean = (mean * n).sum(0) / total
        # each rank's biased variance back from its invstd, then the spread of the ranks' means around the total's
        var = invstd.reciprocal().square() - eps
        m2 = (n * (var + (mean - global_mean).square())).sum(0)
        biased = m2 / total
        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_(_to(global_mean * momentum, running_mean.dtype))
        if running_var is not None:
            running_var.mul_(1 - momentum).add_(_to(m2 / (total - 1) * momentum, running_var.dtype))
        return global_mean, (biased + eps).rsqrt()


def batch_norm_gather_stats(input, mean, invstd, running_mean, running_var, momentum, eps, count):
    """batch_norm_gather_stats(input, mean, invstd, running_mean, running_var, momentum, eps, count) ->
    (mean, invstd): ``batch_norm_gather_stats_with_counts`` with ``count`` elements on every rank."""
    counts = aten.full.default([mean.size(0)], float(count), dtype=mean.dtype, device=mean.device)
    return batch_norm_gather_stats_with_counts(input, mean, invstd, running_mean, running_var, momentum, eps, counts)


def batch_norm_update_stats(input, running_mean, running_var, momentum):
    """batch_norm_update_stats(input, running_mean, running_var, momentum) -> (mean, var): each channel's mean and
    biased variance; the running statistics are updated in place (the variance unbiased)."""
    _check_input(input, "batch_norm_update_stats")
    with no_grad():
        x = _to(input, _stat_dtype(input))
        dims = _reduce_dims(input)
        mean = x.mean(dims)
        var = (x - _channel_view(mean, x)).square().mean(dims)
        n = input.numel() // max(input.size(1), 1)
        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_(_to(mean * momentum, running_mean.dtype))
        if running_var is not None:
            unbiased = var * (n / (n - 1)) if n > 1 else var * float("nan")   # 0 / 0, as torch's
            running_var.mul_(1 - momentum).add_(_to(unbiased * momentum, running_var.dtype))
        return mean, var


def batch_norm_backward_reduce(grad_out, input, mean, invstd, weight, input_g, weight_g, bias_g):
    """batch_norm_backward_reduce(grad_out, input, mean, invstd, weight, input_g, weight_g, bias_g) ->
    (sum_dy, sum_dy_xmu, grad_weight, grad_bias): per channel sum(grad_out) and sum(grad_out * (input - mean)),
    and from them weight's and bias's gradients; each is None when its flag is False."""
    _check_input(input, "batch_norm_backward_reduce")
    with no_grad():
        dt = _stat_dtype(input)
        dims = _reduce_dims(input)
        g = _to(grad_out, dt)
        sum_dy = g.sum(dims)
        sum_dy_xmu = (g * (_to(input, dt) - _channel_view(_to(mean, dt), input))).sum(dims)
        param_dtype = input.dtype if weight is None else weight.dtype
        grad_weight = _to(sum_dy_xmu * _to(invstd, dt), param_dtype) if weight_g else None
        grad_bias = _to(sum_dy, param_dtype) if bias_g else None
        if not input_g:
            sum_dy = sum_dy_xmu = None
        else:
            sum_dy, sum_dy_xmu = _to(sum_dy, mean.dtype), _to(sum_dy_xmu, mean.dtype)
        return sum_dy, sum_dy_xmu, grad_weight, grad_bias


def batch_norm_backward_elemt(grad_out, input, mean, invstd, weight, sum_dy, sum_dy_xmu, count):
    """batch_norm_backward_elemt(grad_out, input, mean, invstd, weight, sum_dy, sum_dy_xmu, count) -> Tensor: the
    input's gradient, (grad_out - sum_dy / n - (input - mean) * invstd^2 * sum_dy_xmu / n) * invstd * weight, with
    ``sum_dy`` / ``sum_dy_xmu`` summed over every rank and n the total of ``count`` (each rank's elements)."""
    _check_input(input, "batch_norm_backward_elemt")
    with no_grad():
        dt = _stat_dtype(input)
        n = _to(count.sum(), dt)            # a 0-d tensor: no host read on the device
        inv = _channel_view(_to(invstd, dt), input)
        mean_dy = _channel_view(_to(sum_dy, dt), input) / n
        projection = _channel_view(_to(sum_dy_xmu, dt), input) / n * inv * inv
        scale = inv if weight is None else inv * _channel_view(_to(weight, dt), input)
        x = _to(input, dt)
        grad = (_to(grad_out, dt) - mean_dy - (x - _channel_view(_to(mean, dt), input)) * projection) * scale
        return _to(grad, input.dtype)
