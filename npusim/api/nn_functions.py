"""torch's top-level forms of aten's nn operators that take aten's own arguments: integer modes and reductions,
positional flags, aten's result tuples (``torch.native_dropout``, ``torch.convolution``, ``torch.grid_sampler``,
``torch.embedding_bag``, ``torch.ctc_loss``, ``torch.frobenius_norm``...).

Each calls the aten operator npusim has, or the ``nn.functional`` / ``linalg`` composition aten's operator
decomposes into, so gradients flow where torch's do. ``embedding_bag``'s three extra outputs are those of torch's
CPU kernel (offset2bag, bag_size, max_indices).
"""
from __future__ import annotations

import warnings

from ..core.c10 import dtype as D
from ..core.dispatch.ops_namespace import aten
from ..core.autograd.grad_mode import no_grad
from ..nn import functional as F
from ..nn.functional.convolution_tbc import conv_tbc
from ..nn.functional.vision import affine_grid_generator as _affine_grid_generator
from . import linalg as _linalg

__all__ = [
    "native_dropout", "feature_dropout", "feature_dropout_", "convolution", "conv_tbc", "embedding_bag",
    "embedding_renorm_", "grid_sampler", "grid_sampler_2d", "grid_sampler_3d", "affine_grid_generator", "ctc_loss",
    "max_pool1d_with_indices", "norm_except_dim", "frobenius_norm", "nuclear_norm",
]

_INTERPOLATION = {0: "bilinear", 1: "nearest", 2: "bicubic"}
_PADDING = {0: "zeros", 1: "border", 2: "reflection"}
_EMBEDDING_BAG_MODES = {0: "sum", 1: "mean", 2: "max"}


# --- dropout ---------------------------------------------------------------------------------------------------

def native_dropout(input, p, train):
    """native_dropout(input, p, train) -> (Tensor, Tensor): dropout's output and its boolean keep-mask. ``train``
    None counts as True in the forward (and, as in torch, the backward then scales by the mask alone)."""
    if train is not False and not input.is_floating_point():
        raise RuntimeError(f"result type Float can't be cast to the desired output type "
                           f"{D.SCALAR_TYPE_NAME[input.dtype]}")
    return tuple(aten.native_dropout.default(input, p, train))


def feature_dropout(input, p, train):
    """feature_dropout(input, p, train) -> Tensor: zeroes whole channels (dim 1 of (N, C, *)) with probability
    ``p`` and scales the rest by 1 / (1 - p) when ``train``."""
    return aten.feature_dropout.default(input, p, train)


def feature_dropout_(input, p, train):
    """feature_dropout_(input, p, train) -> Tensor: ``feature_dropout`` written into ``input``."""
    return aten.feature_dropout_.default(input, p, train)


# --- convolution -----------------------------------------------------------------------------------------------

def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    """convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups) -> Tensor:
    aten's one convolution, direct or transposed, of any spatial rank (one-element lists apply to every dim)."""
    return aten.convolution.default(input, weight, bias, list(stride), list(padding), list(dilation),
                                    transposed, list(output_padding), groups)


# --- embedding -------------------------------------------------------------------------------------------------

def _bag_of_each_index(indices, offsets, include_last_offset):
    """For every index, the bag it falls in (offsets are the bags' starts; the last one may be the end), and the
    number of bags: a running count of the starts passed, on the indices' device."""
    n = indices.numel()
    starts = (offsets[:-1] if include_last_offset else offsets).to(D.int64).to(indices.device).clamp(0, n)
    marks = aten.zeros.default([n + 1], dtype=D.int64, device=indices.device)
    marks.index_add_(0, starts[1:], aten.ones_like.default(starts[1:]))
    return marks[:n].cumsum(0), starts.numel()


def embedding_bag(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
                  per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """embedding_bag(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
    per_sample_weights=None, include_last_offset=False, padding_idx=None) -> (output, offset2bag, bag_size,
    max_indices): aten's form of ``nn.functional.embedding_bag`` (weight first, ``mode`` 0 sum, 1 mean, 2 max) with
    the three bookkeeping outputs of torch's CPU kernel."""
    if mode not in _EMBEDDING_BAG_MODES:
        raise RuntimeError("`mode` must be sum, mean, or max.")
    name = _EMBEDDING_BAG_MODES[mode]
    output = F.embedding_bag(indices, weight, offsets, scale_grad_by_freq=scale_grad_by_freq, mode=name,
                             sparse=sparse, per_sample_weights=per_sample_weights,
                             include_last_offset=include_last_offset, padding_idx=padding_idx)
    with no_grad():
        return (output,) + _embedding_bag_bookkeeping(weight.detach(), indices.reshape(-1), offsets, name,
                                                      include_last_offset, padding_idx)


def _embedding_bag_bookkeeping(weight, flat, offsets, name, include_last_offset, padding_idx):
    """offset2bag, bag_size and max_indices as torch's CPU kernel fills them."""
    bags, count = _bag_of_each_index(flat, offsets, include_last_offset)
    long = dict(dtype=D.int64, device=flat.device)
    # torch's CPU sum fast path (float weights, no padding_idx) leaves offset2bag empty
    fast_sum = name == "sum" and weight.dtype in (D.float32, D.float16, D.bfloat16) and padding_idx is None
    offset2bag = aten.zeros.default([0], **long) if fast_sum else bags
    if name == "sum":
        return offset2bag, aten.zeros.default([count], **long), aten.zeros.default([count], **long)
    valid = flat != padding_idx if padding_idx is not None else aten.ones_like.default(flat, dtype=D.bool)
    bag_size = aten.zeros.default([count], **long).index_add_(0, bags, valid.to(D.int64))
    if name == "mean":
        return offset2bag, bag_size, bag_size.clone()
    # max: per bag and feature, the weight row of the first element holding the bag's maximum (0 when empty)
    n, dim = flat.numel(), weight.size(1)
    values = weight[flat]
    values = aten.where.self(valid.unsqueeze(1), values, aten.full_like.default(values, float("-inf")))
    spread = bags.unsqueeze(1).expand(n, dim)
    peak = aten.full.default([count, dim], float("-inf"), dtype=weight.dtype, device=weight.device)
    peak = peak.scatter_reduce(0, spread, values, "amax")
    position = aten.arange.default(n, **long).unsqueeze(1).expand(n, dim)
    holds = (values == peak[bags]) & valid.unsqueeze(1)
    first = aten.full.default([count, dim], n, **long).scatter_reduce(
        0, spread, aten.where.self(holds, position, aten.full_like.default(position, n)), "amin")
    empty = first == n
    rows = flat[first.clamp_max(max(n - 1, 0))] if n else first
    return offset2bag, bag_size, aten.where.self(empty, aten.zeros_like.default(first), rows)


def embedding_renorm_(input, indices, max_norm, norm_type):
    """embedding_renorm_(input, indices, max_norm, norm_type) -> Tensor: rescales in place the rows of ``input``
    named in ``indices`` whose ``norm_type``-norm exceeds ``max_norm`` to norm ``max_norm``."""
    return aten.embedding_renorm_.default(input, indices, max_norm, norm_type)


# --- sampling grids --------------------------------------------------------------------------------------------

def _check_grid_sampler_common(input, grid):
    if input.device != grid.device:
        raise RuntimeError(f"grid_sampler(): expected input and grid to be on same device, but input is on "
                           f"{input.device} and grid is on {grid.device}")
    if input.size(0) != grid.size(0):
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got input with "
                           f"sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if grid.size(-1) != input.dim() - 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {input.dim() - 2} in last dimension, but got "
                           f"grid with sizes {list(grid.shape)}")
    for i in range(2, input.dim()):
        if input.size(i) <= 0:
            raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial dimensions, but input has "
                               f"sizes {list(input.shape)} with dimension {i} being empty")


def _grid_sample(input, grid, interpolation_mode, padding_mode, align_corners):
    if interpolation_mode not in _INTERPOLATION:
        raise RuntimeError(f"grid_sampler(): unknown interpolation mode {interpolation_mode}")
    if padding_mode not in _PADDING:
        raise RuntimeError(f"grid_sampler(): unknown padding mode {padding_mode}")
    return F.grid_sample(input, grid, _INTERPOLATION[interpolation_mode], _PADDING[padding_mode], bool(align_corners))


def grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners):
    """grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners) -> Tensor: ``grid_sample`` of a
    4-D input, modes as integers (interpolation 0 bilinear, 1 nearest, 2 bicubic; padding 0 zeros, 1 border,
    2 reflection)."""
    _check_grid_sampler_common(input, grid)
    if input.dim() != 4 or grid.dim() != 4:
        raise RuntimeError(f"grid_sampler(): expected 4D input and grid with same number of dimensions, but got "
                           f"input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    return _grid_sample(input, grid, interpolation_mode, padding_mode, align_corners)


def grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners):
    """grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners) -> Tensor: ``grid_sample`` of a
    5-D input, modes as integers (interpolation 0 bilinear, 1 nearest; padding 0 zeros, 1 border, 2 reflection)."""
    _check_grid_sampler_common(input, grid)
    if input.dim() != 5 or grid.dim() != 5:
        raise RuntimeError(f"grid_sampler(): expected 5D input and grid with same number of dimensions, but got "
                           f"input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if interpolation_mode == 2:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    return _grid_sample(input, grid, interpolation_mode, padding_mode, align_corners)


def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    """grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners) -> Tensor: ``grid_sampler_2d`` for a
    4-D input, ``grid_sampler_3d`` otherwise."""
    if input.dim() == 4:
        return grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners)
    return grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners)


def affine_grid_generator(theta, size, align_corners):
    """affine_grid_generator(theta, size, align_corners) -> Tensor: the sampling grid of the affine maps ``theta``
    (N, 2, 3) or (N, 3, 4) for an output of ``size`` (N, C, H, W) or (N, C, D, H, W), without affine_grid's
    argument checks."""
    if len(size) not in (4, 5):
        raise RuntimeError("AffineGridGenerator needs 4d (spatial) or 5d (volumetric) inputs.")
    spatial = len(size) - 2
    if theta.dim() != 3 or theta.size(1) != spatial or theta.size(2) != spatial + 1 or theta.size(0) != size[0]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{size[0]}, "
                           f"{spatial + 1}] but got: [{theta.size(0) if theta.dim() else 0}, "
                           f"{theta.size(2) if theta.dim() == 3 else 0}].")
    return _affine_grid_generator(theta, size, align_corners)


# --- losses, pooling -------------------------------------------------------------------------------------------

def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=1, zero_infinity=False):
    """ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=1, zero_infinity=False) ->
    Tensor: ``nn.functional.ctc_loss`` with aten's integer reduction (0 none, 1 mean, 2 sum; any other is none);
    the lengths may be lists or tensors."""
    name = {1: "mean", 2: "sum"}.get(int(reduction), "none")
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, name, zero_infinity)


def max_pool1d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """max_pool1d_with_indices(input, kernel_size, stride=[], padding=0, dilation=1, ceil_mode=False) ->
    (Tensor, Tensor): 1-d max pooling and the position of each maximum; an empty ``stride`` is the kernel size."""
    if isinstance(stride, (list, tuple)) and len(stride) == 0:
        stride = None
    return tuple(F.max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices=True))


# --- norms -----------------------------------------------------------------------------------------------------

def norm_except_dim(v, pow=2, dim=0):
    """norm_except_dim(v, pow=2, dim=0) -> Tensor: the ``pow``-norm of ``v`` over every dim but ``dim``, kept with
    size-1 dims (weight norm's ``g``); ``dim`` -1 is the norm of the whole tensor."""
    if dim == -1:
        return v.norm(pow)
    if dim == 0:
        shape = [1] * v.dim()
        shape[0] = v.size(0)
        return v.contiguous().view(v.size(0), -1).norm(pow, 1).view(shape)
    if dim == v.dim() - 1:
        shape = [1] * v.dim()
        shape[-1] = v.size(-1)
        return v.contiguous().view(-1, v.size(-1)).norm(pow, 0).view(shape)
    return norm_except_dim(v.transpose(0, dim), pow, 0).transpose(0, dim)


def _dims(dim):
    return [dim] if isinstance(dim, int) else list(dim)


def frobenius_norm(input, dim, keepdim=False, *, out=None):
    """frobenius_norm(input, dim, keepdim=False, *, out=None) -> Tensor: the 2-norm over at most two ``dim``
    (every dim when empty); deprecated in torch for ``linalg.vector_norm``."""
    dims = _dims(dim)
    if len(dims) > 2:
        raise RuntimeError(f"Expected at most 2 dimensions, but got {len(dims)} dimensions instead.")
    warnings.warn("at::frobenius_norm is deprecated and it is just left for JIT compatibility. It will be removed in "
                  "a future PyTorch release. Please use `linalg.vector_norm(A, 2., dim, keepdim)` instead",
                  stacklevel=2)
    return _linalg.vector_norm(input, 2, dims, keepdim, out=out)


def nuclear_norm(input, dim=None, keepdim=False, *, out=None):
    """nuclear_norm(input, keepdim=False, *, out=None) or nuclear_norm(input, dim, keepdim=False, *, out=None) ->
    Tensor: the sum of singular values of the matrices over ``dim`` (the last two dims by default); deprecated in
    torch for ``linalg.matrix_norm(A, 'nuc')``."""
    if isinstance(dim, bool):           # the (input, keepdim) overload
        dim, keepdim = None, dim
    dims = [-2, -1] if dim is None else _dims(dim)
    warnings.warn("at::nuclear_norm is deprecated and it is just left for JIT compatibility. It will be removed in a "
                  "future PyTorch release. Please use `linalg.matrix_norm(A, 'nuc', dim, keepdim)` instead",
                  stacklevel=2)
    return _linalg.matrix_norm(input, "nuc", tuple(dims), keepdim, out=out)
