"""Backward ops torch's autograd calls that npusim has no aten op for (npusim's own autograd computes these in
its formulas): written here on the npu's arrays (NumPy in emulation, CuPy on a GPU), so training stays on the
device. Half-precision inputs are computed in float32 and rounded back, as torch's CPU kernels accumulate."""
from __future__ import annotations

from npusim.kernels import nn_activation
from npusim.privateuse1 import from_array, get_device_hooks

from .adoption import NPUSIM_DEVICE, adopt, array_view
from .dtypes import NUMPY

_xp = get_device_hooks("npu").array_namespace(NPUSIM_DEVICE)


def _wide(a):
    return a.astype("float32") if a.dtype.kind == "f" and a.dtype.itemsize < 4 or a.dtype.kind == "V" or \
        a.dtype.name == "bfloat16" else a


def _result(a, dtype):
    return adopt(from_array(_xp.ascontiguousarray(a.astype(NUMPY[dtype], copy=False)), NPUSIM_DEVICE), dtype)


def threshold_backward(grad_output, self, threshold):
    g, x = array_view(grad_output), array_view(self)
    return _result(_xp.where(x <= threshold, _xp.zeros((), g.dtype), g), grad_output.dtype)


def _log_softmax_backward_data(grad_output, output, dim, input_dtype):
    g, y = _wide(array_view(grad_output)), _wide(array_view(output))
    return _result(g - _xp.exp(y) * g.sum(axis=dim, keepdims=True), input_dtype)


def _softmax_backward_data(grad_output, output, dim, input_dtype):
    g, y = _wide(array_view(grad_output)), _wide(array_view(output))
    return _result(y * (g - (g * y).sum(axis=dim, keepdims=True)), input_dtype)


def native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight, bias, output_mask):
    g, x = _wide(array_view(grad_out)), _wide(array_view(input))
    k = len(normalized_shape)
    norm_axes = tuple(range(x.ndim - k, x.ndim))
    batch_axes = tuple(range(x.ndim - k))
    mu, r = _wide(array_view(mean)), _wide(array_view(rstd))
    x_hat = (x - mu) * r
    gw = g * _wide(array_view(weight)) if weight is not None else g
    grad_input = grad_weight = grad_bias = None
    if output_mask[0]:
        grad_input = _result(r * (gw - gw.mean(axis=norm_axes, keepdims=True)
                                  - x_hat * (gw * x_hat).mean(axis=norm_axes, keepdims=True)), input.dtype)
    if output_mask[1] and weight is not None:
        grad_weight = _result((g * x_hat).sum(axis=batch_axes), weight.dtype)
    if output_mask[2] and bias is not None:
        grad_bias = _result(g.sum(axis=batch_axes), bias.dtype)
    return grad_input, grad_weight, grad_bias


def native_batch_norm_backward(grad_out, input, weight, running_mean, running_var, save_mean, save_invstd, train,
                               eps, output_mask):
    g, x = _wide(array_view(grad_out)), _wide(array_view(input))
    axes = (0,) + tuple(range(2, x.ndim))
    shape = (1, -1) + (1,) * (x.ndim - 2)
    if train:
        mean, invstd = _wide(array_view(save_mean)), _wide(array_view(save_invstd))
    else:
        mean = _wide(array_view(running_mean))
        invstd = 1.0 / _xp.sqrt(_wide(array_view(running_var)) + eps)
    w = _wide(array_view(weight)) if weight is not None else _xp.ones_like(mean)
    x_hat = (x - mean.reshape(shape)) * invstd.reshape(shape)
    sum_g = g.sum(axis=axes)
    sum_gx = (g * x_hat).sum(axis=axes)
    grad_input = grad_weight = grad_bias = None
    if output_mask[0]:
        if train:
            n = x.size // x.shape[1]
            gi = (w * invstd).reshape(shape) * (g - (sum_g / n).reshape(shape) - x_hat * (sum_gx / n).reshape(shape))
        else:
            gi = g * (w * invstd).reshape(shape)
        grad_input = _result(gi, input.dtype)
    if output_mask[1] and weight is not None:
        grad_weight = _result(sum_gx, weight.dtype)
    if output_mask[2]:
        grad_bias = _result(sum_g, weight.dtype if weight is not None else input.dtype)
    return grad_input, grad_weight, grad_bias


def tanh_backward(grad_output, output):
    g, y = _wide(array_view(grad_output)), _wide(array_view(output))
    return _result(g * (1 - y * y), grad_output.dtype)


def sigmoid_backward(grad_output, output):
    g, y = _wide(array_view(grad_output)), _wide(array_view(output))
    return _result(g * y * (1 - y), grad_output.dtype)


def silu_backward(grad_output, self):
    g, x = _wide(array_view(grad_output)), _wide(array_view(self))
    s = 1 / (1 + _xp.exp(-x))
    return _result(g * s * (1 + x * (1 - s)), grad_output.dtype)


def gelu_backward(grad_output, self, *, approximate="none"):
    # npusim's own array kernel of its gelu formula (float32 opmath for half types, as torch's CPU kernel)
    g = nn_activation.gelu_backward(array_view(grad_output), array_view(self), approximate)
    return _result(g, self.dtype)


def elu_backward(grad_output, alpha, scale, input_scale, is_result, self_or_result):
    """torch's kernel: from the input ``x``, ``g * input_scale * alpha * scale * exp(x * input_scale)`` where
    ``x <= 0``; from the result ``y`` of an in-place elu, ``g * input_scale * (y + alpha * scale)`` there."""
    g, x = _wide(array_view(grad_output)), _wide(array_view(self_or_result))
    neg_coef, pos_coef, in_coef = float(alpha) * float(scale), float(scale), float(input_scale)
    if is_result:
        negative = g * in_coef * (x + neg_coef)
    else:
        negative = g * in_coef * neg_coef * _xp.exp(x * in_coef)
    return _result(_xp.where(x <= 0, negative, g * pos_coef), grad_output.dtype)


def softplus_backward(grad_output, self, beta, threshold):
    """``g`` where ``beta * x > threshold`` (softplus is x there), ``g * sigmoid(beta * x)`` elsewhere."""
    g, x = _wide(array_view(grad_output)), _wide(array_view(self))
    bx = x * float(beta)
    z = _xp.exp(bx)
    return _result(_xp.where(bx > float(threshold), g, g * z / (z + 1)), grad_output.dtype)


_MEAN = 1    # torch's Reduction::Mean


def mse_loss_backward(grad_output, self, target, reduction):
    """``2 * (x - t) * g``, over the number of elements for a mean."""
    x, t, g = _wide(array_view(self)), _wide(array_view(target)), _wide(array_view(grad_output))
    norm = 2.0 / x.size if reduction == _MEAN and x.size else 2.0
    d = _xp.broadcast_to(norm * (x - t) * g, x.shape)
    return _result(d, self.dtype)


def native_group_norm_backward(grad_out, input, mean, rstd, weight, N, C, HxW, group, output_mask):
    """Layer norm's gradient within each group of ``C // group`` channels of a sample; the weight's and bias's
    gradients per channel."""
    n, c, hw, groups = int(N), int(C), int(HxW), int(group)
    g = _wide(array_view(grad_out)).reshape(n, c, hw)
    x = _wide(array_view(input)).reshape(n, c, hw)
    mu = _wide(array_view(mean)).reshape(n, groups, 1, 1)
    r = _wide(array_view(rstd)).reshape(n, groups, 1, 1)
    per_group = c // groups
    x_hat = ((x.reshape(n, groups, per_group, hw) - mu) * r).reshape(n, c, hw)
    grad_input = grad_weight = grad_bias = None
    if output_mask[0]:
        gw = g * _wide(array_view(weight)).reshape(1, c, 1) if weight is not None else g
        gw4, xh4 = gw.reshape(n, groups, per_group, hw), x_hat.reshape(n, groups, per_group, hw)
        axes = (2, 3)
        gi = r * (gw4 - gw4.mean(axis=axes, keepdims=True) - xh4 * (gw4 * xh4).mean(axis=axes, keepdims=True))
        grad_input = _result(gi.reshape(input.shape), input.dtype)
    param_dtype = weight.dtype if weight is not None else input.dtype
    if output_mask[1]:
        grad_weight = _result((g * x_hat).sum(axis=(0, 2)), param_dtype)
    if output_mask[2]:
        grad_bias = _result(g.sum(axis=(0, 2)), param_dtype)
    return grad_input, grad_weight, grad_bias


def register(lib) -> None:
    for fn in (threshold_backward, _log_softmax_backward_data, _softmax_backward_data, native_layer_norm_backward,
               native_batch_norm_backward, tanh_backward, sigmoid_backward, silu_backward, gelu_backward,
               elu_backward, softplus_backward, mse_loss_backward, native_group_norm_backward):
        lib.impl(fn.__name__, fn, "PrivateUse1")
