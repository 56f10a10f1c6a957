"""Tensor-level kernels of convolution, pooling and upsampling.

``convolution`` (and its transposed form) and ``convolution_backward`` check
arguments as torch's ``_convolution`` does and run the im2col kernels of
``kernels.nn_conv``; conv1d / 2d / 3d and conv_transpose1d / 2d / 3d are
compositions over it that add and drop the batch dim of unbatched inputs.
Max / average / adaptive pooling (2-d and 3-d, adaptive max 2-d; the 1-d
forms run on a height-1 view) and nearest / bilinear upsampling each have a
forward and a backward op (torch's names), so the derivative formulas are
dispatched ops and work on every device.
"""
from __future__ import annotations

import math

import numpy as np

from ..core.dispatch.ops_namespace import aten
from ..kernels import nn_conv as KC
from ..kernels import nn_pooling as KP
from ..kernels.array_api import HALF_TYPES, namespace_of
from . import common as C

_BOOL = np.dtype(np.bool_)
_F32 = np.dtype(np.float32)

# torch's legacy tensor type names, used by convolution's dtype-mismatch message
_TENSOR_TYPE = {"float32": "torch.FloatTensor", "float64": "torch.DoubleTensor", "float16": "torch.HalfTensor",
                "bfloat16": "CPUBFloat16Type", "int64": "torch.LongTensor", "int32": "torch.IntTensor",
                "int16": "torch.ShortTensor", "int8": "torch.CharTensor", "uint8": "torch.ByteTensor",
                "bool": "torch.BoolTensor"}


def _int_list(v):
    """An int or a sequence of ints as a list of Python ints."""
    if isinstance(v, (list, tuple)):
        return [int(x) for x in v]
    return [int(v)]


def _shape(t):
    return list(t._a.shape)


def _dtype_name(a):
    return C.tname(a.dtype)


# --- convolution --------------------------------------------------------------------------------------------------

def _expand_param(values, name, dim):
    values = _int_list(values)
    if len(values) == 1:
        return values * dim
    if len(values) != dim:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {dim} values to match the "
                           f"convolution dimensions, but got {name}={values}")
    return values


def _conv_params(weight, stride, padding, dilation, transposed, output_padding, groups):
    dim = weight._a.ndim - 2
    if dim <= 0:
        raise RuntimeError("weight should have at least three dimensions")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    stride = _expand_param(stride, "stride", dim)
    padding = _expand_param(padding, "padding", dim)
    dilation = _expand_param(dilation, "dilation", dim)
    output_padding = _expand_param(output_padding, "output_padding", dim) if transposed else [0] * dim
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if any(p < 0 for p in output_padding):
        raise RuntimeError("negative output_padding is not supported")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d < 0 for d in dilation):
        raise RuntimeError("dilation should be greater than zero")
    if any(d == 0 for d in dilation):
        raise RuntimeError("non-positive dilation is not supported")
    return stride, padding, dilation, output_padding


def _check_shapes(x, w, bias, padding, dilation, transposed, groups):
    """torch's check_shape_forward, with its messages."""
    ws = list(w.shape)
    if w.ndim != x.ndim:
        raise RuntimeError(f"Expected {w.ndim}-dimensional input for {w.ndim}-dimensional weight {ws}, but got "
                           f"{x.ndim}-dimensional input of size {list(x.shape)} instead")
    if ws[0] < groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be at least {groups} at dimension 0, but got "
                           f"weight of size {ws} instead")
    if ws[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but "
                           f"got weight of size [{ws}] instead")
    if not transposed:
        if x.shape[1] != ws[1] * groups:
            raise RuntimeError(f"Given groups={groups}, weight of size {ws}, expected input{list(x.shape)} to have "
                               f"{ws[1] * groups} channels, but got {x.shape[1]} channels instead")
        if bias is not None and (bias.ndim != 1 or bias.shape[0] != ws[0]):
            raise RuntimeError(f"Given weight of size {ws}, expected bias to be 1-dimensional with {ws[0]} elements, "
                               f"but got bias of size {list(bias.shape)} instead")
        padded = [n + 2 * p for n, p in zip(x.shape[2:], padding)]
        kernel = [d * (k - 1) + 1 for k, d in zip(ws[2:], dilation)]
        if any(p < k for p, k in zip(padded, kernel)):
            raise RuntimeError(f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). Kernel "
                               f"size: ({' x '.join(map(str, kernel))}). Kernel size can't be greater than actual "
                               f"input size")
    else:
        if x.shape[1] != ws[0]:
            raise RuntimeError(f"Given transposed=1, weight of size {ws}, expected input{list(x.shape)} to have "
                               f"{ws[0]} channels, but got {x.shape[1]} channels instead")
        if bias is not None and (bias.ndim != 1 or bias.shape[0] != ws[1] * groups):
            raise RuntimeError(f"Given transposed=1, weight of size {ws}, expected bias to be 1-dimensional with "
                               f"{ws[1] * groups} elements, but got bias of size {list(bias.shape)} instead")


def _check_dtypes(x, w, bias, transposed):
    if x.dtype != w.dtype:
        if x.dtype == _F32 or x.dtype in HALF_TYPES:
            raise RuntimeError(f"Input type ({_TENSOR_TYPE[x.dtype.name]}) and weight type "
                               f"({_TENSOR_TYPE[w.dtype.name]}) should be the same or input should be a MKLDNN "
                               f"tensor and weight is a dense tensor")
        raise RuntimeError(f"expected scalar type {_dtype_name(x)} but found {_dtype_name(w)}")
    if bias is not None and bias.dtype != x.dtype:
        raise RuntimeError(f"Input type ({C.CPP_NAME[x.dtype.name]}) and bias type ({C.CPP_NAME[bias.dtype.name]}) "
                           f"should be the same")
    if x.dtype == _BOOL:
        C.not_implemented(_bool_kernel_name(x.ndim - 2, transposed), x.dtype)


def _bool_kernel_name(dim, transposed):
    """The CPU kernel torch names when it refuses bool (a 1-d transposed convolution runs as a 2-d one)."""
    if transposed:
        return f"slow_conv_transpose{max(dim, 2)}d_out_cpu"
    return "compute_columns3d" if dim == 3 else f"slow_conv{dim}d_cpu"


def _check_output_padding(output_padding, stride, dilation):
    if all(op < s or op < d for op, s, d in zip(output_padding, stride, dilation)):
        return
    if len(stride) == 1:   # torch runs a 1-d transposed convolution as a 2-d one of height 1
        output_padding, stride, dilation = [0] + output_padding, [1] + stride, [1] + dilation
    if len(stride) == 2:
        (oph, opw), (sh, sw), (dh, dw) = output_padding, stride, dilation
        raise RuntimeError(f"output padding must be smaller than either stride or dilation, but got "
                           f"output_padding_height: {oph} output_padding_width: {opw} stride_height: {sh} "
                           f"stride_width: {sw} dilation_height: {dh} dilation_width: {dw}")
    if len(stride) != 3:
        raise RuntimeError(f"output padding must be smaller than either stride or dilation, but got output_padding="
                           f"{output_padding}, stride={stride}, dilation={dilation}")
    (opd, oph, opw), (sd, sh, sw), (dd, dh, dw) = output_padding, stride, dilation
    raise RuntimeError(f"output padding must be smaller than either stride or dilation, but got "
                       f"output_padding_depth: {opd} output_padding_height: {oph} output_padding_width: {opw} "
                       f"stride_depth: {sd} stride_height: {sh} stride_width: {sw} dilation_depth: {dd} "
                       f"dilation_height: {dh} dilation_width: {dw}")


def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    """N-d convolution (cross-correlation) or, with ``transposed``, its transpose; batched input only."""
    dev = C.same_device(input, weight, bias)
    stride, padding, dilation, output_padding = _conv_params(weight, stride, padding, dilation, transposed,
                                                             output_padding, groups)
    x, w = input._a, weight._a
    b = bias._a if bias is not None else None
    _check_shapes(x, w, b, padding, dilation, transposed, groups)
    _check_dtypes(x, w, b, transposed)
    if not transposed:
        sizes = KC.output_sizes(x.shape[2:], w.shape[2:], stride, padding, dilation)
        C.check_capacity(x.shape[0] * w.shape[0] * math.prod(sizes) * x.itemsize, dev)
        return C.make(KC.forward(x, w, b, stride, padding, dilation, groups), dev)
    _check_output_padding(output_padding, stride, dilation)
    sizes = KC.transposed_output_sizes(x.shape[2:], w.shape[2:], stride, padding, dilation, output_padding)
    if any(s < 1 for s in sizes):
        raise RuntimeError(f"Given input size per channel: ({' x '.join(map(str, x.shape[2:]))}). Calculated output "
                           f"size per channel: ({' x '.join(map(str, sizes))}). Output size is too small")
    C.check_capacity(x.shape[0] * w.shape[1] * groups * math.prod(sizes) * x.itemsize, dev)
    y = KC.backward_input(x, w, sizes, stride, padding, dilation, groups)
    if b is not None:
        y += b.reshape((1, -1) + (1,) * (y.ndim - 2)).astype(y.dtype, copy=False)
    return C.make(y, dev)


def convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed,
                         output_padding, groups, output_mask):
    """(grad_input, grad_weight, grad_bias) of ``convolution``; entries whose mask is False are None."""
    dev = C.same_device(grad_output, input, weight)
    stride, padding, dilation, output_padding = _conv_params(weight, stride, padding, dilation, transposed,
                                                             output_padding, groups)
    g, x, w = grad_output._a, input._a, weight._a
    gi = gw = gb = None
    if transposed:
        # a transposed convolution is the input gradient of a convolution: the roles swap
        if output_mask[0]:
            gi = KC.forward(g, w, None, stride, padding, dilation, groups)
        if output_mask[1]:
            gw = KC.backward_weight(x, g, w.shape[2:], stride, padding, dilation, groups)
    else:
        if output_mask[0]:
            gi = KC.backward_input(g, w, x.shape[2:], stride, padding, dilation, groups)
        if output_mask[1]:
            gw = KC.backward_weight(g, x, w.shape[2:], stride, padding, dilation, groups)
    if output_mask[2]:
        gb = KC.backward_bias(g)
    return tuple(None if a is None else C.make(a, dev) for a in (gi, gw, gb))


def _batchify(input, name, dim):
    """(input with a batch dim, whether one was added), refusing other ranks with torch's message."""
    nd = input.dim()
    if nd == dim + 1:
        return aten.unsqueeze.default(input, 0), True
    if nd == dim + 2:
        return input, False
    raise RuntimeError(f"Expected {dim + 1}D (unbatched) or {dim + 2}D (batched) input to {name}, but got input of "
                       f"size: {list(input.shape)}")


def _sized(v, dim):
    """An ``int[dim]`` argument: a single int stands for ``dim`` copies (a list is checked by convolution)."""
    return [int(v)] * dim if not isinstance(v, (list, tuple)) else [int(x) for x in v]


def _conv_nd(name, dim, input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    x, unbatched = _batchify(input, name, dim)
    out = aten.convolution.default(x, weight, bias, _sized(stride, dim), _sized(padding, dim), _sized(dilation, dim),
                                   transposed, _sized(output_padding, dim), groups)
    return aten.squeeze.dim(out, 0) if unbatched else out


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv_nd("conv1d", 1, input, weight, bias, stride, padding, dilation, False, [0], groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv_nd("conv2d", 2, input, weight, bias, stride, padding, dilation, False, [0], groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv_nd("conv3d", 3, input, weight, bias, stride, padding, dilation, False, [0], groups)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _conv_nd("conv_transpose1d", 1, input, weight, bias, stride, padding, dilation, True, output_padding,
                    groups)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _conv_nd("conv_transpose2d", 2, input, weight, bias, stride, padding, dilation, True, output_padding,
                    groups)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _conv_nd("conv_transpose3d", 3, input, weight, bias, stride, padding, dilation, True, output_padding,
                    groups)


# --- pooling ------------------------------------------------------------------------------------------------------

_WORD = {2: "two", 3: "three"}


def _pool_tuple(values, dim, message, allow_empty=False):
    """One value or ``dim`` of them (or none, for a stride that defaults to the kernel size: then None)."""
    values = _int_list(values)
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
    values, indices = KP.max_pool(self._a, kernel, stride, padding, dilation, out_sizes)
    return C.make(values, self._device), C.make(indices, self._device)


def max_pool2d_with_indices(self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return _max_pool_with_indices(2, self, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool3d_with_indices(self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return _max_pool_with_indices(3, self, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool2d(self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return aten.max_pool2d_with_indices.default(self, kernel_size, stride, padding, dilation, ceil_mode)[0]


def max_pool3d(self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return aten.max_pool3d_with_indices.default(self, kernel_size, stride, padding, dilation, ceil_mode)[0]


def _max_pool_backward(dim, grad_output, self, indices):
    """Each output gradient added at its recorded input position (max and adaptive max pooling alike)."""
    dev = C.same_device(grad_output, self, indices)
    return C.make(KP.max_pool_backward(grad_output._a, indices._a, self._a.shape[-dim:]), dev)


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
    return C.make(r, self._device)


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
    return C.make(gx, dev)


def avg_pool2d_backward(grad_output, self, kernel_size, stride, padding, ceil_mode, count_include_pad,
                        divisor_override):
    return _avg_pool_backward(2, grad_output, self, kernel_size, stride, padding, count_include_pad,
                              divisor_override)


def avg_pool3d_backward(grad_output, self, kernel_size, stride, padding, ceil_mode, count_include_pad,
                        divisor_override):
    return _avg_pool_backward(3, grad_output, self, kernel_size, stride, padding, count_include_pad,
                              divisor_override)


def _output_size_arg(output_size, dim, message):
    output_size = [output_size] * dim if isinstance(output_size, int) else _int_list(output_size)
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
        return aten.mean.dim(self, [-1, -2], True)
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
    return C.make(_adaptive_apply(x, x.shape[-dim:], output_size, False), self._device)


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
    return C.make(_adaptive_apply(g, self._a.shape[-dim:], g.shape[-dim:], True), dev)


def _adaptive_avg_pool2d_backward(grad_output, self):
    return _adaptive_avg_pool_backward(2, grad_output, self)


def _adaptive_avg_pool3d_backward(grad_output, self):
    return _adaptive_avg_pool_backward(3, grad_output, self)


def _check_nonempty_planes(x, name):
    for i in range(1, x.ndim):
        if x.shape[i] <= 0:
            raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch dimensions, but input "
                               f"has sizes {list(x.shape)} with dimension {i} being empty")


def adaptive_max_pool2d(self, output_size):
    """Max over adaptive windows and the flat index (h * W + w) of each maximum in its input plane."""
    x = self._a
    if x.ndim not in (3, 4):
        raise RuntimeError(f"adaptive_max_pool2d(): Expected 3D or 4D tensor, but got: {list(x.shape)}")
    _check_nonempty_planes(x, "adaptive_max_pool2d")
    output_size = _output_size_arg(output_size, 2, "adaptive_max_pool2d(): internal error: output_size.size() "
                                                   "must be 2")
    shape = list(x.shape[:-2]) + output_size
    for n in output_size:
        if n < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {n}: {shape}")
    if not C.is_float(x.dtype):
        C.not_implemented("adaptive_max_pool2d", x.dtype)
    values, indices = KP.adaptive_max_pool(x, output_size)
    return C.make(values, self._device), C.make(indices, self._device)


def adaptive_max_pool2d_backward(grad_output, self, indices):
    return _max_pool_backward(2, grad_output, self, indices)


def adaptive_max_pool1d(self, output_size):
    """adaptive_max_pool2d on a height-1 view, as in torch (its indices are positions along L)."""
    if not 2 <= self.dim() < 4:
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {self.dim()}-dimensional tensor for argument #1 "
                           f"'self' (while checking arguments for adaptive_max_pool1d)")
    _check_nonempty_planes(self._a, "adaptive_max_pool1d")
    output_size = _int_list(output_size)
    if len(output_size) != 1:
        raise RuntimeError(f"adaptive_max_pool1d() argument 'output_size' should contain one int (got "
                           f"{len(output_size)})")
    values, indices = aten.adaptive_max_pool2d.default(aten.unsqueeze.default(self, -2), [1, output_size[0]])
    return aten.squeeze.dim(values, -2), aten.squeeze.dim(indices, -2)


# --- upsampling ---------------------------------------------------------------------------------------------------

def _upsample_check(output_size, input_size):
    output_size = _int_list(output_size)
    input_size = _int_list(input_size)
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
    return C.make(KP.nearest_2d(a, hi, wi), self._device)


def upsample_nearest2d_backward(grad_output, output_size, input_size, scales_h=None, scales_w=None):
    output_size, input_size = _upsample_check(output_size, input_size)
    g = grad_output._a
    mh, mw = _nearest_matrices(namespace_of(g), input_size[2:], output_size, (scales_h, scales_w))
    return C.make(KP.resample(g, mh.T, mw.T), grad_output._device)


def upsample_bilinear2d(self, output_size, align_corners, scales_h=None, scales_w=None):
    output_size = _upsample_input(self, output_size, "upsample_bilinear2d_channels_last", False)
    a = self._a
    mh, mw = _linear_matrices(a, a.shape[-2:], output_size, align_corners, (scales_h, scales_w))
    return C.make(KP.resample(a, mh, mw), self._device)


def upsample_bilinear2d_backward(grad_output, output_size, input_size, align_corners, scales_h=None, scales_w=None):
    output_size, input_size = _upsample_check(output_size, input_size)
    g = grad_output._a
    mh, mw = _linear_matrices(g, input_size[2:], output_size, align_corners, (scales_h, scales_w))
    return C.make(KP.resample(g, mh.T, mw.T), grad_output._device)


KERNELS = {
    "convolution": convolution, "convolution_backward": convolution_backward,
    "max_pool2d_with_indices": max_pool2d_with_indices,
    "max_pool2d_with_indices_backward": max_pool2d_with_indices_backward,
    "max_pool3d_with_indices": max_pool3d_with_indices,
    "max_pool3d_with_indices_backward": max_pool3d_with_indices_backward,
    "avg_pool2d": avg_pool2d, "avg_pool2d_backward": avg_pool2d_backward,
    "avg_pool3d": avg_pool3d, "avg_pool3d_backward": avg_pool3d_backward,
    "_adaptive_avg_pool2d": _adaptive_avg_pool2d, "_adaptive_avg_pool2d_backward": _adaptive_avg_pool2d_backward,
    "_adaptive_avg_pool3d": _adaptive_avg_pool3d, "_adaptive_avg_pool3d_backward": _adaptive_avg_pool3d_backward,
    "adaptive_max_pool2d": adaptive_max_pool2d, "adaptive_max_pool2d_backward": adaptive_max_pool2d_backward,
    "upsample_nearest2d": upsample_nearest2d, "upsample_nearest2d_backward": upsample_nearest2d_backward,
    "upsample_bilinear2d": upsample_bilinear2d, "upsample_bilinear2d_backward": upsample_bilinear2d_backward,
}

# Ops that decompose into other ops (CompositeImplicitAutograd): autograd comes from the parts.
COMPOSITE_IMPLICIT = {
    "conv1d": conv1d, "conv2d": conv2d, "conv3d": conv3d, "conv_transpose1d": conv_transpose1d,
    "conv_transpose2d.input": conv_transpose2d, "conv_transpose3d.input": conv_transpose3d,
    "max_pool2d": max_pool2d, "max_pool3d": max_pool3d, "adaptive_avg_pool2d": adaptive_avg_pool2d,
    "adaptive_avg_pool3d": adaptive_avg_pool3d, "adaptive_max_pool1d": adaptive_max_pool1d,
}
