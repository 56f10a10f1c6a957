"""torch.nn.functional's image rearrangements and resampling: pixel and channel shuffles, ``interpolate``."""
from __future__ import annotations

import math

from ...core.dispatch.ops_namespace import aten
from .arguments import _check_tensor, _int_arg, _is_int, _sizes
from .pooling import adaptive_avg_pool2d

__all__ = [
    "pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "interpolate",
]


def pixel_shuffle(input, upscale_factor):
    """(*, C * r^2, H, W) -> (*, C, H * r, W * r): each channel group of r^2 becomes an r x r block."""
    _check_tensor(input, "pixel_shuffle")
    r = _int_arg(upscale_factor, "pixel_shuffle", "upscale_factor", 2)
    if input.dim() < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.dim()} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    *batch, c, h, w = input.shape
    if c % (r * r) != 0:
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    n = len(batch)
    blocks = input.reshape(*batch, c // (r * r), r, r, h, w)
    # (oc, r_h, r_w, h, w) -> (oc, h, r_h, w, r_w): each pixel's block lands beside it
    blocks = blocks.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return blocks.reshape(*batch, c // (r * r), h * r, w * r)


def pixel_unshuffle(input, downscale_factor):
    """The inverse of pixel_shuffle: (*, C, H * r, W * r) -> (*, C * r^2, H, W)."""
    _check_tensor(input, "pixel_unshuffle")
    r = _int_arg(downscale_factor, "pixel_unshuffle", "downscale_factor", 2)
    if input.dim() < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.dim()} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    *batch, c, h, w = input.shape
    if h % r != 0:
        raise RuntimeError(f"pixel_unshuffle expects height to be divisible by downscale_factor, but "
                           f"input.size(-2)={h} is not divisible by {r}")
    if w % r != 0:
        raise RuntimeError(f"pixel_unshuffle expects width to be divisible by downscale_factor, but "
                           f"input.size(-1)={w} is not divisible by {r}")
    n = len(batch)
    blocks = input.reshape(*batch, c, h // r, r, w // r, r)
    # (c, oh, r_h, ow, r_w) -> (c, r_h, r_w, oh, ow): each r x r block becomes r^2 channels
    blocks = blocks.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return blocks.reshape(*batch, c * r * r, h // r, w // r)


def channel_shuffle(input, groups):
    """(N, g * k, *) -> (N, k * g, *): channel i of group j moves to position i * g + j."""
    _check_tensor(input, "channel_shuffle")
    groups = _int_arg(groups, "channel_shuffle", "groups", 2)
    if input.dim() <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with sizes {_sizes(input)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    c = input.size(1)
    if c % groups != 0:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    n, rest = input.size(0), list(input.shape[2:])
    grouped = input.reshape(n, groups, c // groups, *rest)
    return grouped.transpose(1, 2).reshape(list(input.shape))


# --- resampling -----------------------------------------------------------------------------------------------------

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
