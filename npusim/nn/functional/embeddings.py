"""torch.nn.functional's lookups: ``one_hot``, ``embedding`` and ``embedding_bag``."""
from __future__ import annotations

import warnings

from ...core.autograd.grad_mode import no_grad
from ...core.c10 import dtype as D
from ...core.dispatch.ops_namespace import aten
from ...core.factories import tensor as _tensor
from .arguments import _check_tensor, _dtype_name

__all__ = [
    "one_hot", "embedding", "embedding_bag",
]


def one_hot(tensor, num_classes=-1):
    _check_tensor(tensor, "one_hot")
    return aten.one_hot.default(tensor, num_classes)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    """Rows of ``weight`` picked by the indices in ``input``; the ``padding_idx`` row gets no gradient."""
    _check_tensor(weight, "embedding", "weight", 1)
    _check_tensor(input, "embedding", "indices", 2)
    if sparse:
        raise NotImplementedError("embedding(sparse=True): npusim has no sparse tensors; use sparse=False for "
                                  "a dense gradient")
    num = weight.size(0) if weight.dim() else 0
    if padding_idx is not None:
        if padding_idx > 0:
            if padding_idx >= num:
                raise AssertionError("Padding_idx must be within num_embeddings")
        elif padding_idx < 0:
            if padding_idx < -num:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx = num + padding_idx
    else:
        padding_idx = -1
    if max_norm is not None:
        input = input.contiguous()
        with no_grad():
            aten.embedding_renorm_.default(weight, input, max_norm, norm_type)
    return aten.embedding.default(weight, input, padding_idx, scale_grad_by_freq, sparse)


# --- bags of embeddings ---------------------------------------------------------------------------------------------

def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode="mean",
                  sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """Sum, mean or max of each bag of embedding rows; a 2-D input is one bag per row, a 1-D input is cut
    into bags at ``offsets``. Entries equal to ``padding_idx`` take no part; empty bags give zeros."""
    _check_tensor(input, "embedding_bag")
    _check_tensor(weight, "embedding_bag", "weight", 2)
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
    return f"torch.{where}{_dtype_name(t)}Tensor"
