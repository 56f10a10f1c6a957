"""Tensor-level kernels of convolution.

``convolution`` (and its transposed form) and ``convolution_backward`` check
arguments as torch's ``_convolution`` does and run the im2col kernels of
``kernels.nn_conv``; conv1d / 2d / 3d and conv_transpose1d / 2d / 3d are
compositions over it that add and drop the batch dim of unbatched inputs.
The backward is an op of its own (torch's name), so the derivative formula is
a dispatched op and works on every device.
"""
from __future__ import annotations

import math

import numpy as np

from ..core.c10.memory_format import array_format, array_in_format
from ..core.dispatch.ops_namespace import aten
from ..kernels import nn_conv as KC
from ..kernels.array_api import HALF_TYPES
from . import common as C

_BOOL = np.dtype(np.bool_)
_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)

# torch's legacy tensor type names, used by convolution's dtype-mismatch message
_TENSOR_TYPE = {"float32": "torch.FloatTensor", "float64": "torch.DoubleTensor", "float16": "torch.HalfTensor",
                "bfloat16": "CPUBFloat16Type", "int64": "torch.LongTensor", "int32": "torch.IntTensor",
                "int16": "torch.ShortTensor", "int8": "torch.CharTensor", "uint8": "torch.ByteTensor",
                "bool": "torch.BoolTensor"}


def _dtype_name(a):
    return C.tname(a.dtype)


# --- convolution --------------------------------------------------------------------------------------------------

def _expand_param(values, name, dim):
    values = C.int_list(values)
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


def _conv_format(x, w):
    """The memory format torch's CPU convolution computes in (its results and gradients have it): channels_last
    when the input or the weight suggests it; for 3-d, only where a kernel has that layout (not float64)."""
    nd = x.ndim
    if nd == 4 or (nd == 5 and x.dtype != _F64):
        fmt = array_format(x)
        return fmt if fmt != "contiguous_format" else array_format(w)
    return "contiguous_format"


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
        return C.make(array_in_format(KC.forward(x, w, b, stride, padding, dilation, groups), _conv_format(x, w)),
                      dev)
    _check_output_padding(output_padding, stride, dilation)
    sizes = KC.transposed_output_sizes(x.shape[2:], w.shape[2:], stride, padding, dilation, output_padding)
    if any(s < 1 for s in sizes):
        raise RuntimeError(f"Given input size per channel: ({' x '.join(map(str, x.shape[2:]))}). Calculated output "
                           f"size per channel: ({' x '.join(map(str, sizes))}). Output size is too small")
    C.check_capacity(x.shape[0] * w.shape[1] * groups * math.prod(sizes) * x.itemsize, dev)
    y = KC.backward_input(x, w, sizes, stride, padding, dilation, groups)
    if b is not None:
        y += b.reshape((1, -1) + (1,) * (y.ndim - 2)).astype(y.dtype, copy=False)
    return C.make(array_in_format(y, _conv_format(x, w)), dev)


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
    fmt = _conv_format(x, w)
    if fmt != "contiguous_format":
        gi, gw = (None if a is None else array_in_format(a, fmt) for a in (gi, gw))
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


KERNELS = {"convolution": convolution, "convolution_backward": convolution_backward}

# Ops that decompose into other ops (CompositeImplicitAutograd): autograd comes from the parts.
COMPOSITE_IMPLICIT = {
    "conv1d": conv1d, "conv2d": conv2d, "conv3d": conv3d, "conv_transpose1d": conv_transpose1d,
    "conv_transpose2d.input": conv_transpose2d, "conv_transpose3d.input": conv_transpose3d,
}
