"""torch.nn.functional's normalisations: layer, RMS, batch, group, instance and local response norm,
and ``normalize``.
"""
from __future__ import annotations

from ...core.autograd.grad_mode import is_grad_enabled, no_grad
from ...core.dispatch.ops_namespace import aten
from .arguments import _check_tensor, _is_int, _no_grad_arg
from .padding import pad
from .pooling import avg_pool2d, avg_pool3d

__all__ = [
    "layer_norm", "rms_norm", "batch_norm", "group_norm", "instance_norm", "local_response_norm", "normalize",
]


def _verify_batch_size(size):
    prod = size[0]
    for n in list(size)[2:]:
        prod *= n
    if prod == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {size}")


def _check_shape_arg(fname, normalized_shape):
    if not isinstance(normalized_shape, (list, tuple)) or not all(_is_int(s) for s in normalized_shape):
        raise TypeError(f"{fname}(): argument 'normalized_shape' (position 2) must be tuple of ints, not "
                        f"{type(normalized_shape).__name__}")
    return list(normalized_shape)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalise over the trailing ``normalized_shape`` dims, then scale by ``weight`` and shift by ``bias``."""
    shape = _check_shape_arg("layer_norm", normalized_shape)
    return aten.layer_norm.default(input, shape, weight, bias, eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x^2) + eps) over the trailing dims, times ``weight``; eps None is the dtype's epsilon."""
    shape = _check_shape_arg("rms_norm", normalized_shape)
    return aten.rms_norm.default(input, shape, weight, eps)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    """Normalise each channel (dim 1) by the batch statistics in training (updating the running ones in place
    with ``momentum`` and the unbiased variance) or by the running statistics in evaluation."""
    if training:
        _verify_batch_size(input.size())
    return aten.batch_norm.default(input, weight, bias, running_mean, running_var, training, momentum, eps, True)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalise each group of channels of each sample, then apply the per-channel affine."""
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.dim()}")
    _verify_batch_size([input.size(0) * input.size(1) // num_groups, num_groups] + list(input.size()[2:]))
    return aten.group_norm.default(input, num_groups, weight, bias, eps, True)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    """Normalise each channel of each sample over its spatial dims.

    As aten does it: batch norm of the input viewed as (1, N * C, ...), with the per-channel weight, bias and
    running statistics repeated per sample; the running statistics then take the mean over the samples.
    """
    if use_input_stats:
        size = input.size()
        spatial = 1
        for n in list(size)[2:]:
            spatial *= n
        if spatial == 1:
            raise ValueError(f"Expected more than 1 spatial element when training, got input size {size}")
    _check_tensor(input, "instance_norm")
    if not use_input_stats and (running_mean is None or running_var is None):
        raise RuntimeError("Expected running_mean and running_var to be defined when use_input_stats is false")
    if input.dim() == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    if input.dim() == 1:
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got 1)")
    if is_grad_enabled():
        _no_grad_arg(running_mean, "running_mean", "native_batch_norm")
        _no_grad_arg(running_var, "running_var", "native_batch_norm")
    b, c = input.size(0), input.size(1)

    def per_sample(t):
        return None if t is None else aten.repeat.default(t, [b])

    mean_rep, var_rep = per_sample(running_mean), per_sample(running_var)
    folded = aten.reshape.default(input.contiguous(), [1, b * c] + list(input.shape[2:]))
    out = aten.batch_norm.default(folded, per_sample(weight), per_sample(bias), mean_rep, var_rep, use_input_stats,
                                  momentum, eps, True)
    if use_input_stats:   # only batch statistics move the running ones
        with no_grad():
            if running_mean is not None:
                running_mean.copy_(aten.mean.dim(aten.reshape.default(mean_rep, [b, c]), [0]))
            if running_var is not None:
                running_var.copy_(aten.mean.dim(aten.reshape.default(var_rep, [b, c]), [0]))
    return aten.reshape.default(out, list(input.shape))


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """x / (k + alpha * mean of x^2 over ``size`` neighbouring channels)^beta."""
    dim = input.dim()
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality                          input (got {dim} "
                         f"dimensions)")
    if input.numel() == 0:
        return input
    div = input.mul(input)
    if dim == 3:
        div = div.unsqueeze(1)
        div = pad(div, (0, 0, size // 2, (size - 1) // 2))
        div = avg_pool2d(div, (size, 1), stride=1).squeeze(1)
    else:
        sizes = input.size()
        div = div.reshape(sizes[0], 1, sizes[1], sizes[2], -1)
        div = pad(div, (0, 0, 0, 0, size // 2, (size - 1) // 2))
        div = avg_pool3d(div, (size, 1, 1), stride=1).squeeze(1)
        div = div.reshape(sizes)
    div = div.mul(alpha).add(k).pow(beta)
    return input / div


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """input / max(||input||_p over ``dim``, eps)."""
    dims = list(dim) if isinstance(dim, (list, tuple)) else [dim]
    denom = aten.clamp_min.default(aten.linalg_vector_norm.default(input, p, dims, True), eps)
    denom = aten.expand.default(denom, list(input.shape))
    if out is None:
        return aten.div.Tensor(input, denom)
    return aten.div.out(input, denom, out=out)
