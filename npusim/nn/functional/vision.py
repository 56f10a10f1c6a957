"""torch.nn.functional's image rearrangements and resampling: pixel and channel shuffles, ``interpolate``,
``affine_grid`` and ``grid_sample``."""
from __future__ import annotations

import itertools
import math
import warnings

from ...core.dispatch.ops_namespace import aten
from .arguments import _check_tensor, _int_arg, _is_int, _sizes
from .pooling import adaptive_avg_pool2d

__all__ = [
    "pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "interpolate", "affine_grid", "grid_sample",
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


# --- affine_grid and grid_sample ------------------------------------------------------------------------------------
# Composites of differentiable ops (linspace, matmul, floor, gather, where), so autograd and the npu need nothing new.
# A grid's last dimension holds (x, y[, z]): x indexes the input's last dimension (W), y the one before it, and so on.

def _base_coordinates(steps, align_corners, like):
    """The normalised centres of ``steps`` pixels along one dimension: -1 and 1 are the corner pixels' centres with
    ``align_corners``, their outer edges without it."""
    if steps <= 1:
        return like.new_zeros(max(steps, 0))
    line = aten.linspace.default(-1.0, 1.0, steps, dtype=like.dtype, device=like.device)
    return line if align_corners else line * ((steps - 1) / steps)


def affine_grid(theta, size, align_corners=None):
    """The sampling grid of a batch of affine maps: (N, 2, 3) and size (N, C, H, W) -> (N, H, W, 2); (N, 3, 4) and
    size (N, C, D, H, W) -> (N, D, H, W, 3)."""
    _check_tensor(theta, "affine_grid")
    if align_corners is None:
        warnings.warn("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. "
                      "Please specify align_corners=True if the old behavior is desired. See the documentation of "
                      "grid_sample for details.")
        align_corners = False
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = list(size)
    if len(size) == 4:
        if theta.dim() != 3 or tuple(theta.shape[-2:]) != (2, 3):
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {tuple(size)}. "
                             f"Got {tuple(theta.shape)}.")
    elif len(size) == 5:
        if theta.dim() != 3 or tuple(theta.shape[-2:]) != (3, 4):
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size {tuple(size)}. "
                             f"Got {tuple(theta.shape)}.")
    else:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {tuple(size)}.")
    if align_corners and min(size[2:]) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
                      "align_corners=True. This is not an intended use case of affine_grid. See the documentation "
                      "of affine_grid for details.")
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {tuple(size)}")
    return affine_grid_generator(theta, size, align_corners)


def affine_grid_generator(theta, size, align_corners):
    """aten's affine_grid_generator (torch.affine_grid_generator): affine_grid's grid without its checks; base
    coordinates (x, y[, z], 1) times theta^T."""
    size = [int(s) for s in size]
    n, spatial = size[0], size[2:]
    # base[..., k] is the coordinate along spatial dimension -1-k, then a 1 for the translation column
    axes = [_base_coordinates(s, align_corners, theta) for s in spatial]
    shape = [1] * len(spatial)
    columns = []
    for k in range(len(spatial)):
        dim = len(spatial) - 1 - k
        view = list(shape)
        view[dim] = spatial[dim]
        columns.append(axes[dim].reshape(view).expand(*spatial))
    columns.append(theta.new_ones(spatial))
    base = aten.stack.default(columns, -1).reshape(1, -1, len(spatial) + 1)
    grid = aten.matmul.default(base, theta.transpose(1, 2))            # (N, prod(spatial), dims)
    return grid.reshape(n, *spatial, len(spatial))


def _unnormalize(coord, size, align_corners):
    if align_corners:
        return (coord + 1) * ((size - 1) / 2)
    return ((coord + 1) * size - 1) / 2


def _reflect(coord, twice_low, twice_high):
    """Reflect ``coord`` into [twice_low / 2, twice_high / 2] by folding it back at the ends, as aten does."""
    if twice_low == twice_high:
        return coord * 0
    low = twice_low / 2
    span = (twice_high - twice_low) / 2
    coord = (coord - low).abs()
    extra = coord.fmod(span)
    flips = (coord / span).floor()
    even = flips.fmod(2) == 0
    return aten.where.self(even, extra + low, span - extra + low)


def _source_coordinate(coord, size, padding_mode, align_corners):
    coord = _unnormalize(coord, size, align_corners)
    if padding_mode == "border":
        coord = coord.clamp(0, size - 1)
    elif padding_mode == "reflection":
        coord = _reflect(coord, 0, 2 * (size - 1)) if align_corners else _reflect(coord, -1, 2 * size - 1)
        coord = coord.clamp(0, size - 1)
    return coord


def _gather_corners(flat, sizes, corners):
    """Sum of weight * input at integer corner positions; ``corners`` is a list of (indices per dim, weight), each
    index of shape (N, P); positions outside the input count as zero."""
    n, c = flat.shape[0], flat.shape[1]
    total = None
    for indices, weight in corners:
        inside = None
        linear = None
        for index, size in zip(indices, sizes):
            ok = (index >= 0) & (index <= size - 1)
            inside = ok if inside is None else inside & ok
            clamped = index.clamp(0, size - 1)
            linear = clamped if linear is None else linear * size + clamped
        linear = linear.long().unsqueeze(1).expand(n, c, linear.shape[-1])
        values = flat.gather(2, linear)
        weight = aten.where.self(inside, weight, weight * 0).unsqueeze(1)
        term = values * weight
        total = term if total is None else total + term
    return total


def _cubic_weights(t, a=-0.75):
    """Keys' cubic convolution weights of the four taps at offsets -1, 0, 1, 2 for a fraction ``t``."""
    def near(x):
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Sample ``input`` (N, C, H, W) or (N, C, D, H, W) at the normalised positions of ``grid`` (N, Ho, Wo, 2) or
    (N, Do, Ho, Wo, 3); ``mode`` bilinear, nearest or bicubic (4-D only); ``padding_mode`` zeros, border or
    reflection."""
    _check_tensor(input, "grid_sample")
    _check_tensor(grid, "grid_sample")
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', "
                         f"but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. "
                      "Please specify align_corners=True if the old behavior is desired. See the documentation of "
                      "grid_sample for details.")
        align_corners = False
    if input.dim() not in (4, 5):
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, but "
                           f"got input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    dims = input.dim() - 2
    if grid.dim() != input.dim() or grid.shape[-1] != dims:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {dims} in last dimension, but got grid with "
                           f"sizes {list(grid.shape)}")
    if grid.shape[0] != input.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got input with "
                           f"sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if input.device != grid.device:
        raise RuntimeError(f"grid_sampler(): expected input and grid to be on same device, but input is on "
                           f"{input.device} and grid is on {grid.device}")
    if mode == "bicubic" and dims != 2:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    n, c = input.shape[0], input.shape[1]
    sizes = list(input.shape[2:])                       # (D,) H, W
    out_spatial = list(grid.shape[1:-1])
    flat = input.reshape(n, c, -1)
    points = grid.reshape(n, -1, dims)
    # coords[d] is the source coordinate along spatial dim d (grid component dims - 1 - d)
    raw = [points[..., dims - 1 - d] for d in range(dims)]
    if mode == "bicubic":
        # aten takes the four taps from the unclipped coordinate and pads each tap on its own
        coords = [_unnormalize(r, s, align_corners) for r, s in zip(raw, sizes)]
        bases = [x.floor() for x in coords]
        weights = [_cubic_weights(x - b) for x, b in zip(coords, bases)]
        total = None
        for i in range(4):
            for j in range(4):
                taps = [bases[0] + (i - 1), bases[1] + (j - 1)]
                taps = [_pad_tap(t, s, padding_mode, align_corners) for t, s in zip(taps, sizes)]
                term = _gather_corners(flat, sizes, [(taps, weights[0][i] * weights[1][j])])
                total = term if total is None else total + term
        return total.reshape(n, c, *out_spatial)
    coords = [_source_coordinate(r, s, padding_mode, align_corners) for r, s in zip(raw, sizes)]
    if mode == "nearest":
        indices = [x.round().detach() for x in coords]
        # a weight of one that keeps the grid in the graph: its gradient is zero, as aten's, rather than None
        ones = raw[0] * 0 + 1
        return _gather_corners(flat, sizes, [(indices, ones)]).reshape(n, c, *out_spatial)
    lows = [x.floor().detach() for x in coords]
    fractions = [x - low for x, low in zip(coords, lows)]
    corners = []
    for corner in itertools.product((0, 1), repeat=dims):
        indices, weight = [], None
        for d, bit in enumerate(corner):
            indices.append(lows[d] + bit)
            w = fractions[d] if bit else 1 - fractions[d]
            weight = w if weight is None else weight * w
        corners.append((indices, weight))
    return _gather_corners(flat, sizes, corners).reshape(n, c, *out_spatial)


def _pad_tap(tap, size, padding_mode, align_corners):
    """A bicubic tap's integer position after padding: kept as is (zeros), clamped (border) or reflected."""
    if padding_mode == "border":
        return tap.clamp(0, size - 1)
    if padding_mode == "reflection":
        tap = _reflect(tap, 0, 2 * (size - 1)) if align_corners else _reflect(tap, -1, 2 * size - 1)
        return tap.clamp(0, size - 1)
    return tap
