"""torch.nn.functional's shrink activations, RReLU, im2col/col2im, bags of embeddings, LRN, power-average pooling,
max unpooling and channel shuffle, composed from differentiable tensor ops (gather, index_select, scatter,
pooling), so autograd needs no new derivative formulas. Argument checks and messages are torch's.
This module reads ``functional``'s helpers, so ``functional`` imports it last.
"""
from __future__ import annotations

import warnings

from ..core.c10 import dtype as D
from ..core.autograd.grad_mode import no_grad
from ..core.factories import tensor as _tensor
from ..core.dispatch.ops_namespace import aten
from . import functional as F

__all__ = [
    "hardshrink", "softshrink", "rrelu", "rrelu_", "unfold", "fold", "embedding_bag", "local_response_norm",
    "lp_pool1d", "lp_pool2d", "lp_pool3d", "max_unpool1d", "max_unpool2d", "channel_shuffle",
]

_DTYPE_MAX = {D.float16: 65504.0, D.bfloat16: 3.3895313892515355e38, D.float32: 3.4028234663852886e38,
              D.float64: 1.7976931348623157e308}


def _type_name(t) -> str:
    return D.SCALAR_TYPE_NAME[t.dtype]


def _floating_only(input, kernel):
    if not input.is_floating_point():
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_type_name(input)}'")


def _sizes(t) -> str:
    return str(list(t.shape))


# --- activations --------------------------------------------------------------------------------------------

def hardshrink(input, lambd=0.5):
    """0 where -lambd <= x <= lambd, x elsewhere (NaN stays NaN)."""
    F._check_tensor(input, "hardshrink")
    _floating_only(input, "hardshrink_cpu")
    inside = (input >= -lambd) & (input <= lambd)
    return aten.masked_fill.Scalar(input, inside, 0)


def softshrink(input, lambd=0.5):
    """x - lambd above lambd, x + lambd below -lambd, 0 between (x * 0, so -0 and NaN as torch's)."""
    F._check_tensor(input, "softshrink")
    _floating_only(input, "softshrink_check")
    hi = _DTYPE_MAX[input.dtype]
    if not 0 <= lambd <= hi:
        raise RuntimeError(f"lambda must be in range [0, {hi:g}] for input dtype {_type_name(input)}, but found "
                           f"{lambd:g}")
    middle = aten.where.self(input < -lambd, input + lambd, input * 0)
    return aten.where.self(input > lambd, input - lambd, middle)


def _rrelu(input, lower, upper, training, inplace):
    F._check_tensor(input, "rrelu_" if inplace else "rrelu")
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    if not training:
        return F.leaky_relu(input, (lower + upper) / 2, inplace)
    _floating_only(input, "rrelu_with_noise_out_cpu")
    # Negative (and zero) inputs are scaled by a slope drawn from U(lower, upper) by the default generator.
    with no_grad():
        slope = aten.empty_like.default(input).uniform_(lower, upper)
        factor = aten.where.self(input <= 0, slope, aten.ones_like.default(input))
    return input.mul_(factor) if inplace else input * factor


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    return _rrelu(input, lower, upper, training, inplace)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    return _rrelu(input, lower, upper, training, True)


# --- im2col / col2im ------------------------------------------------------------------------------------------

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
    F._check_tensor(input, "im2col")
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
    padded = F.pad(batched, [padding[1], padding[1], padding[0], padding[0]])
    wp = w + 2 * padding[1]
    index = _window_index(out_hw, wp, kernel, dilation, stride, input.device)
    cols = padded.reshape(n, c, -1).index_select(2, index)
    out = cols.reshape(n, c * kernel[0] * kernel[1], out_hw[0] * out_hw[1])
    return out if nd == 4 else out.squeeze(0)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """col2im, the adjoint of unfold: (N, C * kh * kw, L) -> (N, C, H, W), overlapping values summed."""
    F._check_tensor(input, "col2im")
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


# --- embedding bags --------------------------------------------------------------------------------------------

def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode="mean",
                  sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """Sum, mean or max of each bag of embedding rows; a 2-D input is one bag per row, a 1-D input is cut
    into bags at ``offsets``. Entries equal to ``padding_idx`` take no part; empty bags give zeros."""
    F._check_tensor(input, "embedding_bag")
    F._check_tensor(weight, "embedding_bag", "weight", 2)
    if weight.dtype is D.int64 and input.is_floating_point():
        warnings.warn("Argument order of nn.functional.embedding_bag was changed. Usage `embedding_bag(weight, "
                      "input, ...)` is deprecated, and should now be `embedding_bag(input, weight, ...)`.",
                      stacklevel=2)
        weight, input = input, weight
    if per_sample_weights is not None and input.size() != per_sample_weights.size():
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, then it "
                         f"must have the same shape as the input ({input.shape})")
    if weight.dim() != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.dim()}")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError(f"if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             f"fixed length sequences. However, found offsets of type {type(offsets)}")
        starts = list(range(0, input.numel(), input.size(1))) if input.size(1) else [0] * input.size(0)
        include_last_offset = False
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        starts = None
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max":
        if scale_grad_by_freq:
            raise ValueError("max mode does not support scaling the gradient by the frequency")
        if sparse:
            raise ValueError("max mode does not support sparse weights")
    if sparse:
        raise NotImplementedError("embedding_bag(sparse=True): npusim has no sparse tensors; use sparse=False for "
                                  "a dense gradient")
    if scale_grad_by_freq:
        raise NotImplementedError("embedding_bag(scale_grad_by_freq=True) is not supported by npusim")
    if max_norm is not None:
        with no_grad():
            aten.embedding_renorm_.default(weight, input.contiguous(), max_norm, norm_type)
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
                                  f"GitHub.")
    if input.dtype not in (D.int64, D.int32):
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {_legacy_type(input)} instead (while checking arguments for "
                           f"embedding_bag)")
    num = weight.size(0)
    if padding_idx is not None:
        if not -num <= padding_idx < num:
            raise RuntimeError(f"padding_idx must be within the number of embeddings, {-num} through {num - 1}, but "
                               f"got {padding_idx}")
        padding_idx %= num
    ids = [int(v) for v in input.tolist()]
    for i, v in enumerate(ids):
        if not 0 <= v < num:
            raise RuntimeError(f"Index {i} of input takes value {v} which is not in the valid range [0, {num})")
    if starts is None:
        starts = [int(v) for v in offsets.tolist()]
        if include_last_offset and not starts:
            raise RuntimeError("include_last_offset: number of offset should be at least 1")
        if starts and starts[0] != 0:
            raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start "
                               f"from position 0. However, got {starts[0]}\n[ {_legacy_type(offsets)}{{}} ]")
        if starts and starts[-1] > len(ids):
            raise RuntimeError(f"offsets[-1] can not be greater than input's length {len(ids)} but got offsets[-1] "
                               f"of {starts[-1]}")
        if any(b < a for a, b in zip(starts, starts[1:])):
            raise RuntimeError("offsets have to be a non-decreasing sequence")
    ends = starts[1:] + [len(ids)]
    if include_last_offset:
        starts, ends = starts[:-1], ends[:-1]
    # Each bag becomes a row of `width` slots naming an entry of the input; empty slots and padding entries
    # point past the end, at a filler row (0 for sum and mean, -inf for max) appended to the looked-up rows.
    bags = [[i for i in range(a, b) if ids[i] != padding_idx] for a, b in zip(starts, ends)]
    width = max([len(b) for b in bags] + [1])
    filler = len(ids)
    slots = [b + [filler] * (width - len(b)) for b in bags]
    dim = weight.size(1)
    dev = weight.device
    rows = aten.embedding.default(weight, input.to(D.int64), -1, False, False)
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.unsqueeze(1)
    fill = float("-inf") if mode == "max" else 0.0
    rows = aten.cat.default([rows, aten.full.default([1, dim], fill, dtype=rows.dtype, device=dev)])
    slot_index = _tensor(slots, dtype=D.int64, device=dev).reshape(-1)
    gathered = rows.index_select(0, slot_index).reshape(len(bags), width, dim)
    if mode == "max":
        out = gathered.max(1)[0]
        empty = _tensor([not b for b in bags], dtype=D.bool, device=dev).reshape(len(bags), 1)
        return aten.masked_fill.Scalar(out, empty, 0)
    out = gathered.sum(1)
    if mode == "mean":
        counts = _tensor([max(len(b), 1) for b in bags], dtype=out.dtype, device=dev).reshape(len(bags), 1)
        out = out / counts
    return out


def _legacy_type(t) -> str:
    where = "" if t.device.type == "cpu" else f"{t.device.type}."
    return f"torch.{where}{_type_name(t)}Tensor"


# --- normalisation and pooling ---------------------------------------------------------------------------------

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
        div = F.pad(div, (0, 0, size // 2, (size - 1) // 2))
        div = F.avg_pool2d(div, (size, 1), stride=1).squeeze(1)
    else:
        sizes = input.size()
        div = div.reshape(sizes[0], 1, sizes[1], sizes[2], -1)
        div = F.pad(div, (0, 0, 0, 0, size // 2, (size - 1) // 2))
        div = F.avg_pool3d(div, (size, 1, 1), stride=1).squeeze(1)
        div = div.reshape(sizes)
    div = div.mul(alpha).add(k).pow(beta)
    return input / div


def _lp_finish(out, window, norm_type):
    return (aten.sign.default(out) * F.relu(aten.abs.default(out))).mul(window).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum over each window of x^p)^(1/p); p = inf is max pooling of |x|."""
    if isinstance(norm_type, (int, float)):
        if norm_type == float("inf"):
            return F.max_pool1d(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
        if norm_type == -float("inf"):
            return -F.max_pool1d(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if stride is not None:
        out = F.avg_pool1d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    else:
        out = F.avg_pool1d(input.pow(norm_type), kernel_size, padding=0, ceil_mode=ceil_mode)
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
            return F.max_pool2d(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
        if norm_type == -float("inf"):
            return -F.max_pool2d(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    out = F.avg_pool2d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return _lp_finish(out, _window_volume(kernel_size, 2), norm_type)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    if isinstance(norm_type, (int, float)):
        if norm_type == float("inf"):
            return F.max_pool3d(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
        if norm_type == -float("inf"):
            return -F.max_pool3d(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    out = F.avg_pool3d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return _lp_finish(out, _window_volume(kernel_size, 3), norm_type)


# --- max unpooling ------------------------------------------------------------------------------------------------

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
            f" but got: {_type_name(indices)}" if rank == 2 else ""))
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


__all__ += ["max_unpool3d"]


# --- channel shuffle -------------------------------------------------------------------------------------------

def channel_shuffle(input, groups):
    """(N, g * k, *) -> (N, k * g, *): channel i of group j moves to position i * g + j."""
    F._check_tensor(input, "channel_shuffle")
    groups = F._int_arg(groups, "channel_shuffle", "groups", 2)
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
