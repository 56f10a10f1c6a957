"""``npusim.nn.functional``'s convolution, pooling, normalisation and resampling functions.

Each function has torch.nn.functional's signature and Python-side checks and
calls the aten operator torch calls (``conv2d``, ``max_pool2d_with_indices``,
``batch_norm``, ``upsample_bilinear2d``...); the operators check the rest with
torch's messages. Re-exported by ``npusim.nn.functional``.
"""
from __future__ import annotations

import math
import numbers
import warnings

from ..core.dispatch.ops_namespace import aten
from ..core.tensor import Tensor

__all__ = [
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "max_pool2d",
    "max_pool3d", "avg_pool2d", "avg_pool3d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool2d",
    "layer_norm", "rms_norm", "batch_norm", "group_norm", "interpolate", "normalize",
]


# --- argument checks ----------------------------------------------------------------------------------------------

def _type_name(v) -> str:
    return "Tensor" if isinstance(v, Tensor) else type(v).__name__


def _invalid_arguments(fname, args, kwargs):
    got = [_type_name(a) for a in args] + [f"{k}={_type_name(v)}" for k, v in kwargs.items()]
    return TypeError(f"{fname}() received an invalid combination of arguments - got ({', '.join(got)})")


def _is_int(v) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _is_int_list(v) -> bool:
    return _is_int(v) or (isinstance(v, (list, tuple)) and all(_is_int(x) for x in v))


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


# --- pooling ------------------------------------------------------------------------------------------------------

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


__all__ += ["adaptive_max_pool3d"]


# --- normalisation ------------------------------------------------------------------------------------------------

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


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """input / max(||input||_p over ``dim``, eps)."""
    dims = list(dim) if isinstance(dim, (list, tuple)) else [dim]
    denom = aten.clamp_min.default(aten.linalg_vector_norm.default(input, p, dims, True), eps)
    denom = aten.expand.default(denom, list(input.shape))
    if out is None:
        return aten.div.Tensor(input, denom)
    return aten.div.out(input, denom, out=out)


# --- resampling ---------------------------------------------------------------------------------------------------

_MODES = "nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact"


def _resample_sizes(input, size, scale_factor, mode, recompute_scale_factor):
    """torch's interpolate: exactly one of ``size`` / ``scale_factor``, one entry per spatial dim; returns
    (output sizes, scale factors passed on to the kernel or None)."""
    dim = input.dim() - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError(f"Input and output must have the same number of spatial dimensions, but got input "
                                 f"with spatial dimensions of {list(input.shape[2:])} and output size of {size}. "
                                 f"Please provide input tensor in (N, C, d1, d2, ...,dK) format and output size in "
                                 f"(o1, o2, ...,oK) format.")
            if not all(_is_int(s) for s in size):
                raise TypeError(f"expected size to be one of int or Tuple[int] or Tuple[int, int] or "
                                f"Tuple[int, int, int], but got size with types {[type(s) for s in size]}")
            output_size, scales = list(size), None
        else:
            output_size, scales = [size] * dim, None
    elif scale_factor is not None:
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != dim:
                raise ValueError(f"Input and scale_factor must have the same number of spatial dimensions, but got "
                                 f"input with spatial dimensions of {list(input.shape[2:])} and scale_factor of "
                                 f"shape {scale_factor}. Please provide input tensor in (N, C, d1, d2, ...,dK) "
                                 f"format and scale_factor in (s1, s2, ...,sK) format.")
            scales = [float(s) for s in scale_factor]
        else:
            scales = [float(scale_factor)] * dim
        output_size = None
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if mode == "area" and output_size is None:
        recompute_scale_factor = True
    if recompute_scale_factor:
        output_size = [math.floor(float(n) * s) for n, s in zip(input.shape[2:], scales)]
        scales = None
    if output_size is None:
        # the .vec overloads: floor(in * scale), and the scale itself drives the source index
        output_size = [int(n * s) for n, s in zip(input.shape[2:], scales)]
    return output_size, scales


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None, recompute_scale_factor=None,
                antialias=False):
    """Resample the spatial dims to ``size`` (or by ``scale_factor``).

    Supported: 'nearest' on 3-D and 4-D input, 'linear' on 3-D input, 'bilinear' and 'area' on 4-D input
    (``align_corners`` for the linear modes).
    """
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    output_size, scales = _resample_sizes(input, size, scale_factor, mode, recompute_scale_factor)
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and input.dim() == 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires a "
                         "4-D tensor as input")
    nd = input.dim()
    scales_hw = [None, None] if scales is None else list(scales)
    if mode == "nearest" and nd == 4:
        return aten.upsample_nearest2d.default(input, output_size, *scales_hw)
    if mode == "nearest" and nd == 3:
        # one spatial dim: a 2-d resampling of height 1
        row = aten.unsqueeze.default(input, 2)
        out = aten.upsample_nearest2d.default(row, [1] + output_size, None, None if scales is None else scales[0])
        return aten.squeeze.dim(out, 2)
    if mode == "linear" and nd == 3:
        # one spatial dim: a 2-d resampling of height 1 (its vertical weights are the identity)
        row = aten.unsqueeze.default(input, 2)
        out = aten.upsample_bilinear2d.default(row, [1] + output_size, align_corners, None,
                                               None if scales is None else scales[0])
        return aten.squeeze.dim(out, 2)
    if mode == "bilinear" and nd == 4:
        if antialias:
            raise NotImplementedError("interpolate(antialias=True) is not supported by npusim")
        return aten.upsample_bilinear2d.default(input, output_size, align_corners, *scales_hw)
    if mode == "area" and nd == 4:
        return adaptive_avg_pool2d(input, output_size)
    for name, want in (("bilinear", 4), ("trilinear", 5), ("linear", 3)):
        if mode == name and nd in (3, 4, 5) and nd != want:
            raise NotImplementedError(f"Got {nd}D input, but {name} mode needs {want}D input")
    if nd in (3, 4, 5) and mode in _MODES.split(" | "):
        raise NotImplementedError(f"interpolate(mode='{mode}') on {nd}-D input is not supported by npusim; supported: "
                                  f"'nearest' (3-D, 4-D), 'linear' (3-D), 'bilinear' and 'area' (4-D)")
    raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {nd}D) for the modes: "
                              f"{_MODES} (got {mode})")
