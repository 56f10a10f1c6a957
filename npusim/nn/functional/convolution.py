"""torch.nn.functional's convolutions and their im2col / col2im pair, ``unfold`` and ``fold``.

Each convolution has torch's signature and Python-side checks and calls the aten operator torch calls
(``conv2d``, ``conv_transpose2d``...); the operators check the rest with torch's messages. ``unfold`` and
``fold`` are composed from differentiable tensor ops, so autograd needs no new derivative formulas.
"""
from __future__ import annotations

import warnings

from ...core.c10 import dtype as D
from ...core.dispatch.ops_namespace import aten
from ...core.tensor import Tensor
from .arguments import _check_tensor, _floating_only, _is_int, _is_int_list, _sizes
from .padding import pad

__all__ = [
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "unfold", "fold",
]


# --- argument checks ------------------------------------------------------------------------------------------------

def _type_name(v) -> str:
    return "Tensor" if isinstance(v, Tensor) else type(v).__name__


def _invalid_arguments(fname, args, kwargs):
    got = [_type_name(a) for a in args] + [f"{k}={_type_name(v)}" for k, v in kwargs.items()]
    return TypeError(f"{fname}() received an invalid combination of arguments - got ({', '.join(got)})")


def _check_conv_args(fname, input, weight, bias, int_args, str_padding_ok):
    """torch's argument parser for conv*d: tensors where tensors go, ints (or tuples of ints) elsewhere."""
    bad = not isinstance(input, Tensor) or not isinstance(weight, Tensor) or \
        (bias is not None and not isinstance(bias, Tensor))
    for name, v in int_args.items():
        if name == "padding" and str_padding_ok and isinstance(v, str):
            continue
        if name == "groups":
            bad = bad or not _is_int(v)
        else:
            bad = bad or not _is_int_list(v)
    if bad:
        args = [input, weight] + ([bias] if bias is not None else [])
        raise _invalid_arguments(fname, args, {k: v for k, v in int_args.items() if not _is_int_list(v)})


def _as_list(v, n):
    return list(v) if isinstance(v, (list, tuple)) else [v] * n


def _int_arg(v):
    """An ``int[n]`` argument as the operator takes it: an int stays an int (it stands for n copies)."""
    return list(v) if isinstance(v, (list, tuple)) else v


def _same_padding(input, weight, stride, dilation, dim):
    """torch's padding='same': total d * (k - 1) per dim, the odd element on the right (by padding the
    input once when the split is not symmetric)."""
    if weight.dim() not in (input.dim(), input.dim() + 1):   # batched or unbatched input
        raise RuntimeError(f"Expected {weight.dim()}-dimensional input for {weight.dim()}-dimensional weight"
                           f"{list(weight.shape)}, but got {input.dim()}-dimensional input of size "
                           f"{list(input.shape)} instead")
    strides, dilations = _as_list(stride, dim), _as_list(dilation, dim)
    if len(strides) not in (1, dim):
        raise RuntimeError(f"stride cannot broadcast to {dim} dimensions")
    if len(dilations) not in (1, dim):
        raise RuntimeError(f"dilation cannot broadcast to {dim} dimensions")
    if any(s != 1 for s in strides):
        raise RuntimeError("padding='same' is not supported for strided convolutions")
    dilations = dilations * dim if len(dilations) == 1 else dilations
    left, extra = [], []
    for i in range(dim):
        total = dilations[i] * (weight.shape[i + 2] - 1)
        left.append(total // 2)
        extra.append(total - 2 * (total // 2))
    if any(extra):
        warnings.warn("Using padding='same' with even kernel lengths and odd dilation may require a zero-padded "
                      "copy of the input be created", UserWarning, stacklevel=4)
        pad = []
        for e in reversed(extra):   # constant_pad_nd lists the last dim first
            pad += [0, e]
        input = aten.constant_pad_nd.default(input, pad, 0)
    return input, left


# --- convolutions ---------------------------------------------------------------------------------------------------

def _conv(fname, dim, op, input, weight, bias, stride, padding, dilation, groups):
    _check_conv_args(fname, input, weight, bias, {"stride": stride, "padding": padding, "dilation": dilation,
                                                  "groups": groups}, True)
    if isinstance(padding, str):
        if padding == "valid":
            padding = 0
        elif padding == "same":
            input, padding = _same_padding(input, weight, stride, dilation, dim)
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    return op(input, weight, bias, _int_arg(stride), _int_arg(padding), _int_arg(dilation), groups)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-d convolution over (N, C, L) or unbatched (C, L) input; ``padding`` may be 'valid' or 'same'."""
    return _conv("conv1d", 1, aten.conv1d.default, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-d convolution over (N, C, H, W) or unbatched (C, H, W) input; ``padding`` may be 'valid' or 'same'."""
    return _conv("conv2d", 2, aten.conv2d.default, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-d convolution over (N, C, D, H, W) or unbatched (C, D, H, W) input; ``padding`` may be 'valid' or 'same'."""
    return _conv("conv3d", 3, aten.conv3d.default, input, weight, bias, stride, padding, dilation, groups)


def _conv_transpose(fname, op, input, weight, bias, stride, padding, output_padding, groups, dilation):
    _check_conv_args(fname, input, weight, bias, {"stride": stride, "padding": padding,
                                                  "output_padding": output_padding, "groups": groups,
                                                  "dilation": dilation}, False)
    return op(input, weight, bias, _int_arg(stride), _int_arg(padding), _int_arg(output_padding), groups,
              _int_arg(dilation))


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed 1-d convolution (the gradient of conv1d with respect to its input); weight (C_in, C_out / g, k)."""
    return _conv_transpose("conv_transpose1d", aten.conv_transpose1d.default, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed 2-d convolution; weight (C_in, C_out / groups, kH, kW)."""
    return _conv_transpose("conv_transpose2d", aten.conv_transpose2d.input, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed 3-d convolution; weight (C_in, C_out / groups, kD, kH, kW)."""
    return _conv_transpose("conv_transpose3d", aten.conv_transpose3d.input, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


# --- im2col / col2im ------------------------------------------------------------------------------------------------

def _pair_arg(v, name):
    if isinstance(v, (list, tuple)):
        if len(v) != 2:
            raise RuntimeError(f"It is expected {name} equals to 2, but got size {len(v)}")
        return int(v[0]), int(v[1])
    return int(v), int(v)


def _check_window(kernel, dilation, padding, stride, pad_check=True):
    if kernel[0] <= 0 or kernel[1] <= 0:
        raise RuntimeError(f"kernel size should be greater than zero, but got kernel_height: {kernel[0]} "
                           f"kernel_width: {kernel[1]}")
    if dilation[0] <= 0 or dilation[1] <= 0:
        raise RuntimeError(f"dilation should be greater than zero, but got dilation_height: {dilation[0]} "
                           f"dilation_width: {dilation[1]}")
    if pad_check and (padding[0] < 0 or padding[1] < 0):
        raise RuntimeError(f"padding should be non-negative, but got pad_height: {padding[0]} "
                           f"pad_width: {padding[1]}")
    if stride[0] <= 0 or stride[1] <= 0:
        raise RuntimeError(f"stride should be greater than zero, but got stride_height: {stride[0]} "
                           f"stride_width: {stride[1]}")


def _blocks(size, k, d, p, s):
    return (size + 2 * p - (d * (k - 1) + 1)) // s + 1


def _window_index(out_hw, padded_w, kernel, dilation, stride, device):
    """Flat positions in the padded (Hp * Wp) plane of every (kernel offset, block) pair, kernel-major:
    row i * kw + j, column oh * OW + ow holds (oh * sh + i * dh) * Wp + ow * sw + j * dw."""
    def axis(n, step, dim):     # step * arange(n) along dimension ``dim`` of (kh, kw, OH, OW)
        shape = [1, 1, 1, 1]
        shape[dim] = n
        return aten.arange.default(n, dtype=D.int64, device=device).mul_(step).reshape(shape)

    # built by broadcasting on the device: one element per (kernel offset, block), no per-position Python work
    rows = axis(out_hw[0], stride[0], 2).add(axis(kernel[0], dilation[0], 0)).mul_(padded_w)
    cols = axis(out_hw[1], stride[1], 3).add(axis(kernel[1], dilation[1], 1))
    return rows.add(cols).reshape(-1)


def _fmt2(v):
    return f"({v[0]}, {v[1]})"


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """im2col: (N, C, H, W) -> (N, C * kh * kw, L), each column one sliding block (also unbatched (C, H, W))."""
    _check_tensor(input, "im2col")
    kernel, dilation = _pair_arg(kernel_size, "kernel_size"), _pair_arg(dilation, "dilation")
    padding, stride = _pair_arg(padding, "padding"), _pair_arg(stride, "stride")
    _check_window(kernel, dilation, padding, stride)
    nd = input.dim()
    valid_dims = input.size(1) != 0 and input.size(2) != 0
    if not ((nd == 3 and input.size(0) != 0 and valid_dims) or (nd == 4 and valid_dims and input.size(3) != 0)):
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero "
                           f"dimensions for input, but got: {_sizes(input)}")
    h, w = input.size(-2), input.size(-1)
    out_hw = (_blocks(h, kernel[0], dilation[0], padding[0], stride[0]),
              _blocks(w, kernel[1], dilation[1], padding[1], stride[1]))
    if out_hw[0] < 1 or out_hw[1] < 1:
        raise RuntimeError(f"Given input with spatial size ({h}, {w}), kernel_size={_fmt2(kernel)}, "
                           f"dilation={_fmt2(dilation)}, padding={_fmt2(padding)}, calculated shape of the array of "
                           f"sliding blocks as {_fmt2(out_hw)}, but its components must be at least one.")
    _floating_only(input, "im2col_out_cpu")
    batched = input if nd == 4 else input.unsqueeze(0)
    n, c = batched.size(0), batched.size(1)
    padded = pad(batched, [padding[1], padding[1], padding[0], padding[0]])
    wp = w + 2 * padding[1]
    index = _window_index(out_hw, wp, kernel, dilation, stride, input.device)
    cols = padded.reshape(n, c, -1).index_select(2, index)
    out = cols.reshape(n, c * kernel[0] * kernel[1], out_hw[0] * out_hw[1])
    return out if nd == 4 else out.squeeze(0)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """col2im, the adjoint of unfold: (N, C * kh * kw, L) -> (N, C, H, W), overlapping values summed."""
    _check_tensor(input, "col2im")
    out_size = _pair_arg(output_size, "output_size")
    kernel, dilation = _pair_arg(kernel_size, "kernel_size"), _pair_arg(dilation, "dilation")
    padding, stride = _pair_arg(padding, "padding"), _pair_arg(stride, "stride")
    _check_window(kernel, dilation, padding, stride, pad_check=False)
    nd = input.dim()
    if not (nd in (2, 3) and input.size(-2) != 0 and input.size(-1) != 0):
        raise RuntimeError(f"Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero "
                           f"dimensions for input, but got: {_sizes(input)}")
    planes, length = input.size(-2), input.size(-1)
    k = kernel[0] * kernel[1]
    if planes % k != 0:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product of kernel_size, but "
                           f"got input.size(1)={planes} and kernel_size={_fmt2(kernel)}.")
    blocks = (_blocks(out_size[0], kernel[0], dilation[0], padding[0], stride[0]),
              _blocks(out_size[1], kernel[1], dilation[1], padding[1], stride[1]))
    where = (f"Given output_size={_fmt2(out_size)}, kernel_size={_fmt2(kernel)}, dilation={_fmt2(dilation)}, "
             f"padding={_fmt2(padding)}, stride={_fmt2(stride)}, ")
    if length != blocks[0] * blocks[1]:
        raise RuntimeError(f"{where}expected size of input's dimension 2 to match the calculated number of sliding "
                           f"blocks {blocks[0]} * {blocks[1]} = {blocks[0] * blocks[1]}, but got "
                           f"input.size(2)={length}.")
    if blocks[0] < 1 or blocks[1] < 1:
        raise RuntimeError(f"{where}calculated shape of the array of sliding blocks as {_fmt2(blocks)}, which is "
                           f"too small (non-positive)")
    _floating_only(input, "col2im_out_cpu")
    batched = input if nd == 3 else input.unsqueeze(0)
    n, c = batched.size(0), planes // k
    hp, wp = out_size[0] + 2 * padding[0], out_size[1] + 2 * padding[1]
    index = _window_index(blocks, wp, kernel, dilation, stride, input.device)
    src = batched.reshape(n, c, k * length)
    plane = aten.zeros.default([n, c, hp * wp], dtype=input.dtype, device=input.device)
    plane = plane.scatter_add(2, index.reshape(1, 1, -1).expand(n, c, k * length), src)
    out = plane.reshape(n, c, hp, wp)[:, :, padding[0]:padding[0] + out_size[0], padding[1]:padding[1] + out_size[1]]
    return out if nd == 3 else out.squeeze(0)
