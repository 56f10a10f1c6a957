"""torch.nn.functional's pooling: max, average, adaptive and power-average pooling, and max unpooling.

Each function has torch's signature and Python-side checks and calls the aten operator torch calls
(``max_pool2d_with_indices``, ``avg_pool3d``...); the operators check the rest with torch's messages.
"""
from __future__ import annotations

from ...core.autograd.grad_mode import is_grad_enabled
from ...core.c10 import dtype as D
from ...core.dispatch.ops_namespace import aten
from .activation import relu
from .arguments import (
    _bool_arg, _check_dim_range, _check_one_int, _check_tensor, _dtype_name, _int_list_arg, _is_int, _sizes,
)

__all__ = [
    "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d", "adaptive_max_pool1d",
    "adaptive_max_pool2d", "adaptive_max_pool3d", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
    "adaptive_avg_pool3d", "lp_pool1d", "lp_pool2d", "lp_pool3d", "max_unpool1d", "max_unpool2d", "max_unpool3d",
    "max_pool1d_with_indices", "max_pool2d_with_indices", "max_pool3d_with_indices",
    "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices", "adaptive_max_pool3d_with_indices",
]


# --- 1-d pooling ----------------------------------------------------------------------------------------------------
# As in torch, each 1-d pool is the 2-d one on a height-1 view (N, C, 1, L): the 2-d operator's checks,
# kernels and derivatives serve it, and its indices (h * W + w with h = 0) are already positions along L.

def _pooled_length(n, k, s, p, d, ceil_mode):
    """torch's pooling_output_shape: with ceil_mode the last window must start inside the input or left pad."""
    out = (n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= n + p:
        out -= 1
    return out


def _check_max_pool1d(input, kernel, stride, padding, dilation, ceil_mode):
    """aten::max_pool1d's own checks (its indices-returning sibling leaves them to max_pool2d)."""
    shape = input.shape
    if not ((input.dim() == 2 and shape[0] != 0 and shape[1] != 0)
            or (input.dim() == 3 and shape[1] != 0 and shape[2] != 0)):
        raise RuntimeError(f"max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for "
                           f"input, but got:{list(shape)}")
    if len(kernel) != 1:
        raise RuntimeError(f"max_pool1d() kernel_size must be an int, list of ints or tuple of ints of size 1 but "
                           f"got size {len(kernel)}")
    if len(stride) > 1:
        raise RuntimeError(f"max_pool1d() stride must be None, an int, list of ints, or tuple of ints of size 1 but "
                           f"got size {len(stride)}")
    if len(padding) != 1:
        raise RuntimeError(f"max_pool1d() padding must be an int, list of ints, or tuple of ints of size 1 but got "
                           f"size {len(padding)}")
    if len(dilation) != 1:
        raise RuntimeError(f"max_pool1d() dilation must be an int, list of ints or tuple of ints of size 1 but got "
                           f"size {len(dilation)}")
    (k,), (p,), (d,) = kernel, padding, dilation
    s = stride[0] if stride else k
    if k <= 0:
        raise RuntimeError(f"max_pool1d() kernel_size must be greater than zero, but got {k}")
    if s <= 0:
        raise RuntimeError(f"max_pool1d() stride must be greater than zero, but got {s}")
    if p < 0:
        raise RuntimeError(f"max_pool1d() padding must be non-negative, but got {p}")
    if p > k // 2:
        raise RuntimeError(f"max_pool1d() padding should be at most half of kernel size, but got padding={p} and "
                           f"kernel_size={k}")
    if d <= 0:
        raise RuntimeError(f"max_pool1d() dilation must be greater than zero, but got {d}")
    out = _pooled_length(shape[-1], k, s, p, d, ceil_mode)
    if out <= 0:
        raise RuntimeError(f"max_pool1d() Invalid computed output size: {out}")


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Max over windows along the last dim of (N, C, L) or (C, L) input; with ``return_indices`` also the
    position in L of each maximum."""
    fname = "max_pool1d_with_indices" if return_indices else "max_pool1d"
    _check_tensor(input, fname)
    kernel = _int_list_arg(kernel_size, fname, "kernel_size", 2)
    stride = [] if stride is None else _int_list_arg(stride, fname, "stride", 3)
    padding = _int_list_arg(padding, fname, "padding", 4)
    dilation = _int_list_arg(dilation, fname, "dilation", 5)
    _bool_arg(ceil_mode, fname, "ceil_mode", 6)
    if not return_indices:
        _check_max_pool1d(input, kernel, stride, padding, dilation, ceil_mode)
        # torch's CPU kernel without indices takes floating inputs only; it is used when no gradient is needed
        needs_indices = input.requires_grad and is_grad_enabled()
        if input.device.type == "cpu" and not needs_indices and not input.is_floating_point():
            raise NotImplementedError(f"\"max_pool1d_impl\" not implemented for '{D.SCALAR_TYPE_NAME[input.dtype]}'")
    stride = stride or kernel
    _check_dim_range(input, "max_pool1d", 2, 4)
    for name, values in (("kernel_size", kernel), ("stride", stride), ("padding", padding), ("dilation", dilation)):
        _check_one_int(values, "max_pool1d", name)
    out, indices = aten.max_pool2d_with_indices.default(aten.unsqueeze.default(input, -2), [1, kernel[0]],
                                                        [1, stride[0]], [0, padding[0]], [1, dilation[0]], ceil_mode)
    out = aten.squeeze.dim(out, -2)
    if return_indices:
        return out, aten.squeeze.dim(indices, -2)
    return out


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """Mean over windows along the last dim of (N, C, L) or (C, L) input (padding counts in the divisor when
    ``count_include_pad``)."""
    fname = "avg_pool1d"
    _check_tensor(input, fname)
    kernel = _int_list_arg(kernel_size, fname, "kernel_size", 2)
    stride = [] if stride is None else _int_list_arg(stride, fname, "stride", 3)
    padding = _int_list_arg(padding, fname, "padding", 4)
    _bool_arg(ceil_mode, fname, "ceil_mode", 5)
    _bool_arg(count_include_pad, fname, "count_include_pad", 6)
    stride = stride or kernel
    _check_dim_range(input, fname, 2, 4)
    for name, values in (("kernel_size", kernel), ("stride", stride), ("padding", padding)):
        _check_one_int(values, fname, name)
    out = aten.avg_pool2d.default(aten.unsqueeze.default(input, -2), [1, kernel[0]], [1, stride[0]],
                                  [0, padding[0]], ceil_mode, count_include_pad)
    return aten.squeeze.dim(out, -2)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """Max over the windows that split L into ``output_size`` nearly equal parts; with ``return_indices`` also
    the position in L of each maximum."""
    _check_tensor(input, "adaptive_max_pool1d")
    size = _int_list_arg(output_size, "adaptive_max_pool1d", "output_size", 2)
    out, indices = aten.adaptive_max_pool1d.default(input, size)
    return (out, indices) if return_indices else out


def adaptive_avg_pool1d(input, output_size):
    """Mean over the windows that split L into ``output_size`` nearly equal parts."""
    fname = "adaptive_avg_pool1d"
    _check_tensor(input, fname)
    size = _int_list_arg(output_size, fname, "output_size", 2)
    _check_dim_range(input, fname, 2, 4)
    _check_one_int(size, fname, "output_size")
    out = aten.adaptive_avg_pool2d.default(aten.unsqueeze.default(input, -2), [1, size[0]])
    return aten.squeeze.dim(out, -2)


# --- 2-d and 3-d pooling --------------------------------------------------------------------------------------------

def _pool_list(v):
    return list(v) if isinstance(v, (list, tuple)) else [v]


def _max_pool(with_indices, without, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    stride = [] if stride is None else _pool_list(stride)
    args = (input, _pool_list(kernel_size), stride, _pool_list(padding), _pool_list(dilation), ceil_mode)
    if return_indices:
        out, indices = with_indices(*args)
        return out, indices
    return without(*args)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Max over kH x kW windows; with ``return_indices`` also the flat index (h * W + w) of each maximum."""
    return _max_pool(aten.max_pool2d_with_indices.default, aten.max_pool2d.default, input, kernel_size, stride,
                     padding, dilation, ceil_mode, return_indices)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Max over kD x kH x kW windows; with ``return_indices`` also the flat index (d * H * W + h * W + w)."""
    return _max_pool(aten.max_pool3d_with_indices.default, aten.max_pool3d.default, input, kernel_size, stride,
                     padding, dilation, ceil_mode, return_indices)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """Average over kH x kW windows (the padding counts in the divisor when ``count_include_pad``)."""
    stride = [] if stride is None else _pool_list(stride)
    return aten.avg_pool2d.default(input, _pool_list(kernel_size), stride, _pool_list(padding), ceil_mode,
                                   count_include_pad, divisor_override)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """Average over kD x kH x kW windows (the padding counts in the divisor when ``count_include_pad``)."""
    stride = [] if stride is None else _pool_list(stride)
    return aten.avg_pool3d.default(input, _pool_list(kernel_size), stride, _pool_list(padding), ceil_mode,
                                   count_include_pad, divisor_override)


def _list_with_default(out_size, defaults):
    if isinstance(out_size, int):
        return out_size
    if len(defaults) <= len(out_size):
        raise ValueError(f"Input dimension should be at least {len(out_size) + 1}")
    return [v if v is not None else d for v, d in zip(out_size, list(defaults)[-len(out_size):])]


def adaptive_avg_pool2d(input, output_size):
    """Average over the windows that split H and W into ``output_size`` nearly equal parts (None keeps a size)."""
    output_size = _list_with_default(output_size, input.size())
    return aten.adaptive_avg_pool2d.default(input, output_size if _is_int(output_size) else list(output_size))


def adaptive_avg_pool3d(input, output_size):
    """Average over the windows that split D, H and W into ``output_size`` nearly equal parts (None keeps a size)."""
    output_size = _list_with_default(output_size, input.size())
    return aten.adaptive_avg_pool3d.default(input, output_size if _is_int(output_size) else list(output_size))


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Max over the windows that split H and W into ``output_size`` nearly equal parts (None keeps a size); with
    ``return_indices`` also the flat index (h * W + w) of each maximum."""
    output_size = _list_with_default(output_size, input.size())
    out, indices = aten.adaptive_max_pool2d.default(input, output_size if _is_int(output_size) else list(output_size))
    return (out, indices) if return_indices else out


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """Max over the windows that split D, H and W into ``output_size`` nearly equal parts (None keeps a size); with
    ``return_indices`` also the flat index (d * H * W + h * W + w) of each maximum."""
    output_size = _list_with_default(output_size, input.size())
    out, indices = aten.adaptive_max_pool3d.default(input, output_size if _is_int(output_size) else list(output_size))
    return (out, indices) if return_indices else out


# --- power-average pooling ------------------------------------------------------------------------------------------

def _lp_finish(out, window, norm_type):
    return (aten.sign.default(out) * relu(aten.abs.default(out))).mul(window).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum over each window of x^p)^(1/p); p = inf is max pooling of |x|."""
    if isinstance(norm_type, (int, float)):
        if norm_type == float("inf"):
            return max_pool1d(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
        if norm_type == -float("inf"):
            return -max_pool1d(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if stride is not None:
        out = avg_pool1d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    else:
        out = avg_pool1d(input.pow(norm_type), kernel_size, padding=0, ceil_mode=ceil_mode)
    return _lp_finish(out, kernel_size, norm_type)


def _window_volume(kernel_size, n):
    sizes = list(kernel_size) if isinstance(kernel_size, (list, tuple)) else [kernel_size] * n
    vol = 1
    for s in sizes:
        vol *= s
    return vol


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    if isinstance(norm_type, (int, float)):
        if norm_type == float("inf"):
            return max_pool2d(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
        if norm_type == -float("inf"):
            return -max_pool2d(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    out = avg_pool2d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return _lp_finish(out, _window_volume(kernel_size, 2), norm_type)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    if isinstance(norm_type, (int, float)):
        if norm_type == float("inf"):
            return max_pool3d(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
        if norm_type == -float("inf"):
            return -max_pool3d(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    out = avg_pool3d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return _lp_finish(out, _window_volume(kernel_size, 3), norm_type)


# --- max unpooling --------------------------------------------------------------------------------------------------

def _tuple(v, n):
    return tuple(v) if isinstance(v, (list, tuple)) else (v,) * n


def _unpool_output_size(input, kernel_size, stride, padding, output_size):
    input_size = input.size()
    default_size = [(input_size[-len(kernel_size) + d] - 1) * stride[d] + kernel_size[d] - 2 * padding[d]
                    for d in range(len(kernel_size))]
    if output_size is None:
        ret = default_size
    else:
        if len(output_size) == len(kernel_size) + 2:
            output_size = output_size[2:]
        if len(output_size) != len(kernel_size):
            raise ValueError(f"output_size should be a sequence containing {len(kernel_size)} or "
                             f"{len(kernel_size) + 2} elements, but it has a length of '{len(output_size)}'")
        for d in range(len(kernel_size)):
            min_size = default_size[d] - stride[d]
            max_size = default_size[d] + stride[d]
            if not min_size < output_size[d] < max_size:
                raise ValueError(f'invalid output_size "{output_size}" (dim {d} must be between {min_size} and '
                                 f'{max_size})')
        ret = output_size
    for d in range(len(kernel_size)):
        if ret[d] < 0:
            raise ValueError(f"max_unpooling: output_size must contain non-negative spatial dimensions, but got "
                             f"output_size[{d}]={ret[d]}")
    return list(ret)


def _max_unpool(input, indices, output_size):
    """Scatter each value to its flat index in a zero plane (2d) or volume (3d), per sample and channel.

    The spatial rank comes from ``output_size``; the checks and messages are torch's for that rank.
    """
    rank = len(output_size)
    if indices.dtype is not D.int64:
        # torch words this one differently for the two ranks
        raise RuntimeError("elements in indices should be type int64" + (
            f" but got: {_dtype_name(indices)}" if rank == 2 else ""))
    nd = input.dim()
    if nd not in (rank + 1, rank + 2):
        raise RuntimeError(f"Input to max_unpooling{rank}d should be a {rank + 1}d or {rank + 2}d Tensor, but got a "
                           f"tensor with {nd} dimensions.")
    if input.shape != indices.shape:
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor ({_sizes(input)}) "
                           f"but got indices tensor with shape: {_sizes(indices)}")
    for i in range(1, nd):
        if input.size(i) <= 0:
            raise RuntimeError(f"max_unpooling{rank}d_forward_out_cpu(): Expected input to have non-zero size for "
                               f"non-batch dimensions, but got {_sizes(input)} with dimension {i} being empty.")
    batched = nd == rank + 2
    x = input if batched else input.unsqueeze(0)
    idx = indices if batched else indices.unsqueeze(0)
    n, c = x.size(0), x.size(1)
    flat_idx = idx.reshape(n, c, -1)
    plane = 1
    for size in output_size:
        plane *= size
    if flat_idx.numel():
        bad = (flat_idx < 0) | (flat_idx >= plane)
        if bool(bad.any()):  # torch names the first bad index in memory order
            raise RuntimeError(f"Found an invalid max index: {int(flat_idx[bad][0].item())} (output volumes are of "
                               f"size {'x'.join(map(str, output_size))})")
    zeros = aten.zeros.default([n, c, plane], dtype=input.dtype, device=input.device)
    out = zeros.scatter(2, flat_idx, x.reshape(n, c, -1)).reshape(n, c, *output_size)
    return out if batched else out.squeeze(0)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool1d: each value goes back to its index, zeros elsewhere."""
    kernel_size = _tuple(kernel_size, 1)
    stride = _tuple(stride, 1) if stride is not None else kernel_size
    padding = _tuple(padding, 1)
    size = _unpool_output_size(input, kernel_size, stride, padding, output_size)
    return _max_unpool(input.unsqueeze(-1), indices.unsqueeze(-1), size + [1]).squeeze(-1)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool2d: each value goes back to its flat index h * W + w, zeros elsewhere."""
    kernel_size = _tuple(kernel_size, 2)
    stride = _tuple(stride, 2) if stride is not None else kernel_size
    padding = _tuple(padding, 2)
    size = _unpool_output_size(input, kernel_size, stride, padding, output_size)
    return _max_unpool(input, indices, size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool3d: each value goes back to its flat index d * H * W + h * W + w."""
    kernel_size = _tuple(kernel_size, 3)
    stride = _tuple(stride, 3) if stride is not None else kernel_size
    padding = _tuple(padding, 3)
    size = _unpool_output_size(input, kernel_size, stride, padding, output_size)
    return _max_unpool(input, indices, size)


def _always_with_indices(pool, name):
    """torch's ``*_with_indices``: the pool with its indices, whatever ``return_indices`` says."""
    def with_indices(input, *args, return_indices=False, **kwargs):
        return pool(input, *args, return_indices=True, **kwargs)
    with_indices.__name__ = with_indices.__qualname__ = name
    with_indices.__doc__ = f"``{pool.__name__}`` with ``return_indices=True``: ``(output, indices)``."
    return with_indices


max_pool1d_with_indices = _always_with_indices(max_pool1d, "max_pool1d_with_indices")
max_pool2d_with_indices = _always_with_indices(max_pool2d, "max_pool2d_with_indices")
max_pool3d_with_indices = _always_with_indices(max_pool3d, "max_pool3d_with_indices")
adaptive_max_pool1d_with_indices = _always_with_indices(adaptive_max_pool1d, "adaptive_max_pool1d_with_indices")
adaptive_max_pool2d_with_indices = _always_with_indices(adaptive_max_pool2d, "adaptive_max_pool2d_with_indices")
adaptive_max_pool3d_with_indices = _always_with_indices(adaptive_max_pool3d, "adaptive_max_pool3d_with_indices")
