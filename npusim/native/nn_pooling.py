"""Tensor-level kernels of pooling and upsampling.

Max / average / adaptive pooling (2-d and 3-d, adaptive max 2-d and 3-d; the 1-d
forms run on a height-1 view) and nearest / bilinear upsampling each have a
forward and a backward op (torch's names), so the derivative formulas are
dispatched ops and work on every device. The array work is in ``kernels.nn_pooling``.
"""
from __future__ import annotations

import numpy as np

from ..core.c10.memory_format import array_format, array_in_format_of
from ..core.dispatch.ops_namespace import aten
from ..kernels import nn_pooling as KP
from ..kernels.array_api import namespace_of
from . import common as C

_BOOL = np.dtype(np.bool_)
_F32 = np.dtype(np.float32)

# --- pooling ------------------------------------------------------------------------------------------------------

def _like_format(r, like, dim):
    """``r`` in the memory format ``like`` (a batched input) suggests: torch's CPU kernels of these ops compute
    channels_last (3d) data in that layout, so their results have it too."""
    return array_in_format_of(r, like) if like.ndim == dim + 2 else r


_WORD = {2: "two", 3: "three"}


def _pool_tuple(values, dim, message, allow_empty=False):
    """One value or ``dim`` of them (or none, for a stride that defaults to the kernel size: then None)."""
    values = C.int_list(values)
    if len(values) == 0 and allow_empty:
        return None
    if len(values) not in (1, dim):
        raise RuntimeError(message)
    return values * dim if len(values) == 1 else values


def _pool_args(name, dim, kernel_size, stride, padding, dilation):
    """torch's kernel_size / stride / padding / dilation unpacking; avg_pool3d words its messages apart."""
    n = _WORD[dim]
    must = "must" if name == "avg_pool3d" else "must either"
    kernel = _pool_tuple(kernel_size, dim, f"{name}: kernel_size {must} be a single int, or a tuple of {n} ints")
    stride = _pool_tuple(stride, dim, f"{name}: stride {must} be omitted, a single int, or a tuple of {n} ints",
                         allow_empty=True) or kernel
    padding = _pool_tuple(padding, dim, f"{name}: padding {must} be a single int, or a tuple of {n} ints")
    if dilation is not None:
        dilation = _pool_tuple(dilation, dim, f"{name}: dilation must be either a single int, or a tuple of {n} ints")
    return kernel, stride, padding, dilation


def _pool_output_sizes(in_sizes, kernel, stride, padding, dilation, ceil_mode):
    """torch's pooling_output_shape for each pooled dim, with its checks."""
    out = []
    for n, k, s, p, d in zip(in_sizes, kernel, stride, padding, dilation):
        if s == 0:
            raise RuntimeError("stride should not be zero")
        if p < 0:
            raise RuntimeError(f"pad must be non-negative, but got pad: {p}")
        if p > ((k - 1) * d + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p}, "
                               f"kernel_size={k} and dilation={d}")
        out.append(KP.output_size(n, k, s, p, d, ceil_mode))
    return out


def _pool2d_shape_check(x, kernel, stride, padding, dilation, out_sizes):
    """torch's pool2d_shape_check."""
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = kernel, stride, padding, dilation
    if kh <= 0 or kw <= 0:
        raise RuntimeError(f"kernel size should be greater than zero, but got kH: {kh} kW: {kw}")
    if sh <= 0 or sw <= 0:
        raise RuntimeError(f"stride should be greater than zero, but got dH: {sh} dW: {sw}")
    if dh <= 0 or dw <= 0:
        raise RuntimeError(f"dilation should be greater than zero, but got dilationH: {dh} dilationW: {dw}")
    shape = x.shape
    valid = shape[1] != 0 and shape[2] != 0
    if not ((x.ndim == 3 and shape[0] != 0 and valid) or (x.ndim == 4 and valid and shape[3] != 0)):
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but "
                           f"got:{list(shape)}")
    if kw // 2 < pw or kh // 2 < ph:
        raise RuntimeError(f"pad should be smaller than or equal to half of kernel size, but got padW = {pw}, "
                           f"padH = {ph}, kW = {kw}, kH = {kh}")
    if out_sizes[0] < 1 or out_sizes[1] < 1:
        planes = shape[-3]
        raise RuntimeError(f"Given input size: ({planes}x{shape[-2]}x{shape[-1]}). Calculated output size: "
                           f"({planes}x{out_sizes[0]}x{out_sizes[1]}). Output size is too small")


def _pool3d_shape_check(x, kernel, stride, padding, dilation, out_sizes, fn_name, check_input_size):
    """torch's pool3d_shape_check (``check_input_size`` for average pooling)."""
    (kt, kh, kw), (st, sh, sw), (pt, ph, pw), (dt, dh, dw) = kernel, stride, padding, dilation
    if kt <= 0 or kh <= 0 or kw <= 0:
        raise RuntimeError(f"kernel size should be greater than zero, but got kT: {kt} kH: {kh} kW: {kw}")
    if st <= 0 or sh <= 0 or sw <= 0:
        raise RuntimeError(f"stride should be greater than zero, but got dT: {st} dH: {sh} dW: {sw}")
    if dt <= 0 or dh <= 0 or dw <= 0:
        raise RuntimeError(f"dilation should be greater than zero, but got dilationT: {dt} dilationH: {dh} "
                           f"dilationW: {dw}")
    shape = list(x.shape)
    for i, n in enumerate(shape):
        if n <= 0 and not (x.ndim == 5 and i == 0):   # only the batch may be empty
            raise RuntimeError(f"{fn_name}: Expected input's non-batch dimensions to have positive length, but "
                               f"input has a shape of {shape} and non-batch dimension {n} has length zero!")
    it, ih, iw = shape[-3:]
    if check_input_size and (it < kt or ih < kh or iw < kw):
        raise RuntimeError(f"input image (T: {it} H: {ih} W: {iw}) smaller than kernel size (kT: {kt} kH: {kh} "
                           f"kW: {kw})")
    if kt // 2 < pt or kw // 2 < pw or kh // 2 < ph:
        raise RuntimeError(f"pad should be smaller than or equal to half of kernel size, but got kT: {kt} kW: {kw} "
                           f"kH: {kh} padT: {pt} padW: {pw} padH: {ph}")
    if any(o < 1 for o in out_sizes):
        planes = shape[-4]
        raise RuntimeError(f"Given input size: ({planes}x{it}x{ih}x{iw}). Calculated output size: "
                           f"({planes}x{out_sizes[0]}x{out_sizes[1]}x{out_sizes[2]}). Output size is too small")


def _check_pool_rank(x, dim):
    if x.ndim not in (dim + 1, dim + 2):
        raise RuntimeError(f"non-empty {dim + 1}D or {dim + 2}D (batch mode) tensor expected for input")


def _max_pool_setup(dim, self, kernel_size, stride, padding, dilation, ceil_mode):
    name = f"max_pool{dim}d"
    kernel, stride, padding, dilation = _pool_args(name, dim, kernel_size, stride, padding, dilation)
    x = self._a
    _check_pool_rank(x, dim)
    out_sizes = _pool_output_sizes(x.shape[-dim:], kernel, stride, padding, dilation, ceil_mode)
    if dim == 2:
        _pool2d_shape_check(x, kernel, stride, padding, dilation, out_sizes)
    else:
        _pool3d_shape_check(x, kernel, stride, padding, dilation, out_sizes,
                            "max_pool3d_with_indices_out_cpu_template()", False)
    if x.dtype == _BOOL:
        C.not_implemented(name, x.dtype)
    return kernel, stride, padding, dilation, out_sizes


def _max_pool_with_indices(dim, self, kernel_size, stride, padding, dilation, ceil_mode):
    """Max over each window and the flat index (h * W + w, or t * H * W + ...) of the maximum in its input plane."""
    kernel, stride, padding, dilation, out_sizes = _max_pool_setup(dim, self, kernel_size, stride, padding, dilation,
                                                                   ceil_mode)
    x = self._a
    values, indices = KP.max_pool(x, kernel, stride, padding, dilation, out_sizes)
    return C.make(_like_format(values, x, dim), self._device), C.make(_like_format(indices, x, dim), self._device)


def max_pool2d_with_indices(self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return _max_pool_with_indices(2, self, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool3d_with_indices(self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return _max_pool_with_indices(3, self, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool2d(self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return aten.max_pool2d_with_indices.default(self, kernel_size, stride, padding, dilation, ceil_mode)[0]


def max_pool3d(self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return aten.max_pool3d_with_indices.default(self, kernel_size, stride, padding, dilation, ceil_mode)[0]


def _max_pool_backward(dim, grad_output, self, indices, keep_format=True):
    """Each output gradient added at its recorded input position (max and adaptive max pooling alike); laid out
    as ``self`` (not for adaptive 3-d, whose torch kernel has no channels_last form)."""
    dev = C.same_device(grad_output, self, indices)
    g = KP.max_pool_backward(grad_output._a, indices._a, self._a.shape[-dim:])
    return C.make(_like_format(g, self._a, dim) if keep_format else g, dev)


def max_pool2d_with_indices_backward(grad_output, self, kernel_size, stride, padding, dilation, ceil_mode, indices):
    return _max_pool_backward(2, grad_output, self, indices)


def max_pool3d_with_indices_backward(grad_output, self, kernel_size, stride, padding, dilation, ceil_mode, indices):
    return _max_pool_backward(3, grad_output, self, indices)


def _avg_pool_setup(dim, self, kernel_size, stride, padding, ceil_mode, divisor_override):
    name = f"avg_pool{dim}d"
    kernel, stride, padding, _ = _pool_args(name, dim, kernel_size, stride, padding, None)
    x = self._a
    if dim == 3:
        _check_pool_rank(x, dim)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    if dim == 2:
        for d in (-3, -2, -1):
            C._wrap_dim(d, x.ndim)   # torch reads the plane count and sizes first: IndexError below 3 dims
    ones = [1] * dim
    out_sizes = _pool_output_sizes(x.shape[-dim:], kernel, stride, padding, ones, ceil_mode)
    if dim == 2:
        _pool2d_shape_check(x, kernel, stride, padding, ones, out_sizes)
        if not (C.is_float(x.dtype) or x.dtype == np.dtype(np.int64)):
            C.not_implemented(name, x.dtype)
    else:
        _pool3d_shape_check(x, kernel, stride, padding, ones, out_sizes, "avg_pool3d()", True)
        # torch's CPU kernel takes float, double and int64 only (no 16-bit floats)
        if x.dtype not in (_F32, np.dtype(np.float64), np.dtype(np.int64)):
            C.not_implemented("avg_pool3d_out_frame", x.dtype)
    return kernel, stride, padding, out_sizes


def _avg_pool(dim, self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    kernel, stride, padding, out_sizes = _avg_pool_setup(dim, self, kernel_size, stride, padding, ceil_mode,
                                                         divisor_override)
    r = KP.avg_pool(self._a, kernel, stride, padding, out_sizes, count_include_pad, divisor_override)
    return C.make(_like_format(r, self._a, 2) if dim == 2 else r, self._device)   # 3-d: contiguous, as torch


def avg_pool2d(self, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    return _avg_pool(2, self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def avg_pool3d(self, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    return _avg_pool(3, self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def _avg_pool_backward(dim, grad_output, self, kernel_size, stride, padding, count_include_pad, divisor_override):
    dev = C.same_device(grad_output, self)
    kernel, stride, padding, _ = _pool_args(f"avg_pool{dim}d", dim, kernel_size, stride, padding, None)
    gx = KP.avg_pool_backward(grad_output._a, self._a.shape[-dim:], kernel, stride, padding, count_include_pad,
                              divisor_override)
    return C.make(_like_format(gx, self._a, 2) if dim == 2 else gx, dev)


def avg_pool2d_backward(grad_output, self, kernel_size, stride, padding, ceil_mode, count_include_pad,
                        divisor_override):
    return _avg_pool_backward(2, grad_output, self, kernel_size, stride, padding, count_include_pad,
                              divisor_override)


def avg_pool3d_backward(grad_output, self, kernel_size, stride, padding, ceil_mode, count_include_pad,
                        divisor_override):
    return _avg_pool_backward(3, grad_output, self, kernel_size, stride, padding, count_include_pad,
                              divisor_override)


def _output_size_arg(output_size, dim, message):
    output_size = [output_size] * dim if isinstance(output_size, int) else C.int_list(output_size)
    if len(output_size) != dim:
        raise RuntimeError(message)
    return output_size


def adaptive_avg_pool2d(self, output_size):
    """Average over adaptive windows; a 1 x 1 output is the mean over the last two dims, as in torch."""
    output_size = _output_size_arg(output_size, 2, "adaptive_avg_pool2d: output_size must be 2")
    if output_size[0] < 0 or output_size[1] < 0:
        raise RuntimeError(f"adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 but "
                           f"received {{{output_size[0]}, {output_size[1]}}}")
    if output_size == [1, 1]:
        out = aten.mean.dim(self, [-1, -2], True)
        if self.dim() == 4 and array_format(self._a) == "channels_last":
            # as torch: the (N, C, 1, 1) result takes channels_last strides (the same memory, read alike)
            n, c = out.shape[:2]
            out._a = out._a.reshape(n, 1, 1, c).transpose(0, 3, 1, 2)
        return out
    return aten._adaptive_avg_pool2d.default(self, output_size)


def adaptive_avg_pool3d(self, output_size):
    """Average over adaptive windows; a 1 x 1 x 1 output is the mean over the last three dims, as in torch."""
    output_size = _output_size_arg(output_size, 3, "adaptive_avg_pool3d: output_size must be 3")
    if any(o < 0 for o in output_size):
        t, h, w = output_size   # torch's message spaces the two commas differently
        raise RuntimeError(f"adaptive_avg_pool3d: elements of output_size must be greater than or equal to 0 but "
                           f"received {{{t}, {h},{w}}}")
    if output_size == [1, 1, 1]:
        return aten.mean.dim(self, [-1, -2, -3], True)
    return aten._adaptive_avg_pool3d.default(self, output_size)


def _adaptive_avg_pool(dim, self, output_size):
    name = f"adaptive_avg_pool{dim}d"
    output_size = _output_size_arg(output_size, dim, f"{name}: output_size must be {dim}")
    x = self._a
    if x.ndim not in (dim + 1, dim + 2):
        raise RuntimeError(f"{name}(): Expected {dim + 1}D or {dim + 2}D tensor, but got {list(x.shape)}")
    for i in range(-dim, 0):
        if x.shape[i] <= 0:
            raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch dimensions, but input "
                               f"has sizes {list(x.shape)} with dimension {i + x.ndim} being empty")
    if not C.is_float(x.dtype):
        C.not_implemented(name if dim == 2 else f"{name}_cpu", x.dtype)
    r = _adaptive_apply(x, x.shape[-dim:], output_size, False)
    return C.make(_like_format(r, x, 2) if dim == 2 else r, self._device)   # 3-d: contiguous, as torch


def _adaptive_avg_pool2d(self, output_size):
    return _adaptive_avg_pool(2, self, output_size)


def _adaptive_avg_pool3d(self, output_size):
    return _adaptive_avg_pool(3, self, output_size)


def _adaptive_apply(a, in_sizes, out_sizes, transpose):
    xp = namespace_of(a)
    mats = [KP.adaptive_avg_matrix(n, o, np.float64, xp) for n, o in zip(in_sizes, out_sizes)]
    if transpose:
        mats = [m.T for m in mats]
    return KP.resample(a, *mats)


def _adaptive_avg_pool_backward(dim, grad_output, self):
    dev = C.same_device(grad_output, self)
    g = grad_output._a
    r = _adaptive_apply(g, self._a.shape[-dim:], g.shape[-dim:], True)
    return C.make(_like_format(r, self._a, 2) if dim == 2 else r, dev)


def _adaptive_avg_pool2d_backward(grad_output, self):
    return _adaptive_avg_pool_backward(2, grad_output, self)


def _adaptive_avg_pool3d_backward(grad_output, self):
    return _adaptive_avg_pool_backward(3, grad_output, self)


def _check_nonempty_planes(x, name):
    for i in range(1, x.ndim):
        if x.shape[i] <= 0:
            raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch dimensions, but input "
                               f"has sizes {list(x.shape)} with dimension {i} being empty")


def _adaptive_max_pool(dim, self, output_size, kernel_name):
    """Max over adaptive windows of the last ``dim`` dims and the flat index of each maximum there."""
    name = f"adaptive_max_pool{dim}d"
    x = self._a
    if x.ndim not in (dim + 1, dim + 2):
        raise RuntimeError(f"{name}(): Expected {dim + 1}D or {dim + 2}D tensor, but got: {list(x.shape)}")
    _check_nonempty_planes(x, name)
    output_size = _output_size_arg(output_size, dim, f"{name}(): internal error: output_size.size() must be {dim}")
    shape = list(x.shape[:-dim]) + output_size
    for n in output_size:
        if n < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {n}: {shape}")
    if not C.is_float(x.dtype):
        C.not_implemented(kernel_name, x.dtype)
    values, indices = KP.adaptive_max_pool(x, output_size)
    if dim == 2:   # 3-d: contiguous, as torch
        values, indices = _like_format(values, x, 2), _like_format(indices, x, 2)
    return C.make(values, self._device), C.make(indices, self._device)


def adaptive_max_pool2d(self, output_size):
    """Max over adaptive windows and the flat index (h * W + w) of each maximum in its input plane."""
    return _adaptive_max_pool(2, self, output_size, "adaptive_max_pool2d")


def adaptive_max_pool2d_backward(grad_output, self, indices):
    return _max_pool_backward(2, grad_output, self, indices)


def adaptive_max_pool3d(self, output_size):
    """Max over adaptive windows and the flat index (d * H * W + h * W + w) of each maximum in its input volume."""
    return _adaptive_max_pool(3, self, output_size, "adaptive_max_pool3d_cpu")


def adaptive_max_pool3d_backward(grad_output, self, indices):
    return _max_pool_backward(3, grad_output, self, indices, keep_format=False)


def adaptive_max_pool1d(self, output_size):
    """adaptive_max_pool2d on a height-1 view, as in torch (its indices are positions along L)."""
    if not 2 <= self.dim() < 4:
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {self.dim()}-dimensional tensor for argument #1 "
                           f"'self' (while checking arguments for adaptive_max_pool1d)")
    _check_nonempty_planes(self._a, "adaptive_max_pool1d")
    output_size = C.int_list(output_size)
    if len(output_size) != 1:
        raise RuntimeError(f"adaptive_max_pool1d() argument 'output_size' should contain one int (got "
                           f"{len(output_size)})")
    values, indices = aten.adaptive_max_pool2d.default(aten.unsqueeze.default(self, -2), [1, output_size[0]])
    return aten.squeeze.dim(values, -2), aten.squeeze.dim(indices, -2)


# --- upsampling ---------------------------------------------------------------------------------------------------

def _upsample_check(output_size, input_size):
    output_size = C.int_list(output_size)
    input_size = C.int_list(input_size)
    if len(output_size) != 2:
        raise RuntimeError(f"It is expected output_size equals to 2, but got size {len(output_size)}")
    if len(input_size) != 4:
        raise RuntimeError(f"It is expected input_size equals to 4, but got size {len(input_size)}")
    (h, w), (oh, ow) = input_size[2:], output_size
    if h <= 0 or w <= 0 or oh <= 0 or ow <= 0:
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input (H: {h}, W: {w}) output "
                           f"(H: {oh}, W: {ow})")
    return output_size, input_size


def _upsample_input(self, output_size, kernel_name, allow_uint8):
    output_size, _ = _upsample_check(output_size, list(self._a.shape))
    a = self._a
    if a.ndim == 4 and a.shape[1] == 0 and a.shape[0] != 0:
        raise RuntimeError(f"Non-empty 4D data tensor expected but got a tensor with sizes {list(a.shape)}")
    if not (C.is_float(a.dtype) or (allow_uint8 and a.dtype == np.dtype(np.uint8))):
        if a.dtype == np.dtype(np.uint8):
            raise NotImplementedError(f"{kernel_name.split('_channels')[0]}: uint8 input is not supported by npusim "
                                      f"(torch rounds it with its own fixed-point weights); convert to float first")
        C.not_implemented(kernel_name, a.dtype)
    return output_size


def _nearest_matrices(xp, in_sizes, out_sizes, scales):
    return [KP.nearest_matrix(n, o, s, np.float64, xp) for n, o, s in zip(in_sizes, out_sizes, scales)]


def _linear_dtype(a):
    return np.float64 if a.dtype == np.dtype(np.float64) else np.float32


def _linear_matrices(a, in_sizes, out_sizes, align_corners, scales):
    xp = namespace_of(a)
    return [KP.linear_matrix(n, o, align_corners, s, _linear_dtype(a), xp)
            for n, o, s in zip(in_sizes, out_sizes, scales)]


def upsample_nearest2d(self, output_size, scales_h=None, scales_w=None):
    output_size = _upsample_input(self, output_size, "upsample_nearest2d_channels_last", True)
    a = self._a
    hi, wi = (KP.nearest_indices(n, o, s, namespace_of(a))
              for n, o, s in zip(a.shape[-2:], output_size, (scales_h, scales_w)))
    return C.make(_like_format(KP.nearest_2d(a, hi, wi), a, 2), self._device)


def upsample_nearest2d_backward(grad_output, output_size, input_size, scales_h=None, scales_w=None):
    output_size, input_size = _upsample_check(output_size, input_size)
    g = grad_output._a
    mh, mw = _nearest_matrices(namespace_of(g), input_size[2:], output_size, (scales_h, scales_w))
    return C.make(_like_format(KP.resample(g, mh.T, mw.T), g, 2), grad_output._device)   # grad_output's, as torch


def upsample_bilinear2d(self, output_size, align_corners, scales_h=None, scales_w=None):
    output_size = _upsample_input(self, output_size, "upsample_bilinear2d_channels_last", False)
    a = self._a
    mh, mw = _linear_matrices(a, a.shape[-2:], output_size, align_corners, (scales_h, scales_w))
    return C.make(_like_format(KP.resample(a, mh, mw), a, 2), self._device)


def upsample_bilinear2d_backward(grad_output, output_size, input_size, align_corners, scales_h=None, scales_w=None):
    output_size, input_size = _upsample_check(output_size, input_size)
    g = grad_output._a
    mh, mw = _linear_matrices(g, input_size[2:], output_size, align_corners, (scales_h, scales_w))
    return C.make(_like_format(KP.resample(g, mh.T, mw.T), g, 2), grad_output._device)


KERNELS = {
    "max_pool2d_with_indices": max_pool2d_with_indices,
    "max_pool2d_with_indices_backward": max_pool2d_with_indices_backward,
    "max_pool3d_with_indices": max_pool3d_with_indices,
    "max_pool3d_with_indices_backward": max_pool3d_with_indices_backward,
    "avg_pool2d": avg_pool2d, "avg_pool2d_backward": avg_pool2d_backward,
    "avg_pool3d": avg_pool3d, "avg_pool3d_backward": avg_pool3d_backward,
    "_adaptive_avg_pool2d": _adaptive_avg_pool2d, "_adaptive_avg_pool2d_backward": _adaptive_avg_pool2d_backward,
    "_adaptive_avg_pool3d": _adaptive_avg_pool3d, "_adaptive_avg_pool3d_backward": _adaptive_avg_pool3d_backward,
    "adaptive_max_pool2d": adaptive_max_pool2d, "adaptive_max_pool2d_backward": adaptive_max_pool2d_backward,
    "adaptive_max_pool3d": adaptive_max_pool3d, "adaptive_max_pool3d_backward": adaptive_max_pool3d_backward,
    "upsample_nearest2d": upsample_nearest2d, "upsample_nearest2d_backward": upsample_nearest2d_backward,
    "upsample_bilinear2d": upsample_bilinear2d, "upsample_bilinear2d_backward": upsample_bilinear2d_backward,
}

# Ops that decompose into other ops (CompositeImplicitAutograd): autograd comes from the parts.
COMPOSITE_IMPLICIT = {
    "max_pool2d": max_pool2d, "max_pool3d": max_pool3d, "adaptive_avg_pool2d": adaptive_avg_pool2d,
    "adaptive_avg_pool3d": adaptive_avg_pool3d, "adaptive_max_pool1d": adaptive_max_pool1d,
}
