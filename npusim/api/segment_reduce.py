"""``torch.segment_reduce``: reductions over consecutive segments of a dimension, their lengths (or offsets) given.

A composition over ``scatter_reduce`` (each element scattered to its segment's slot), so it is differentiable on
every device, with torch's gradients: a maximum's or minimum's gradient shared among the elements that tie for
it, a product's exact at zeros. ``initial`` joins every segment's reduction (a mean divides the sum with it by
the segment's own length); an empty segment is ``initial``, or the reduction's identity (0 for sum, 1 for prod,
NaN for mean, -inf / inf for max / min).
"""
from __future__ import annotations

import math

from ..core.c10 import dtype as D
from ..core.dispatch.ops_namespace import aten
from ..core.tensor import Tensor

__all__ = ["segment_reduce"]

_SCATTER = {"sum": "sum", "prod": "prod", "mean": "sum", "max": "amax", "min": "amin"}
_REDUCE_NAMES = {"amax": "max", "amin": "min"}
_EMPTY = {"sum": 0.0, "prod": 1.0, "mean": math.nan, "max": -math.inf, "min": math.inf}
_FLOATING = (D.float16, D.bfloat16, D.float32, D.float64)


def _check(data, reduce, lengths, indices, offsets, axis):
    name = _REDUCE_NAMES.get(reduce, reduce)
    if name not in _SCATTER:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    if indices is not None:
        raise RuntimeError("segment_reduce(): indices based reduction is not supported yet.")
    if lengths is None and offsets is None:
        raise RuntimeError("segment_reduce(): Either lengths or offsets must be defined.")
    nd = data.dim()
    if not -nd <= axis < nd:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {axis})")
    axis = axis % nd
    segments = lengths if lengths is not None else offsets
    if segments.dtype not in (D.int32, D.int64):
        kernel = "lengths" if lengths is not None else "offsets"
        raise NotImplementedError(f'"_segment_reduce_{kernel}_cpu_kernel1" not implemented for '
                                  f"'{D.SCALAR_TYPE_NAME[segments.dtype]}'")
    if data.dtype not in _FLOATING:
        raise NotImplementedError(f"\"_segment_reduce_cpu\" not implemented for '{D.SCALAR_TYPE_NAME[data.dtype]}'")
    if segments.dim() - 1 != axis:
        raise RuntimeError(f"segment_reduce(): Expected axis to be the last dimension of "
                           f"{'lengths' if lengths is not None else 'offsets'} but got {axis}.")
    return name, axis


def segment_reduce(data, reduce, *, lengths=None, indices=None, offsets=None, axis=0, unsafe=False, initial=None):
    """segment_reduce(data, reduce, *, lengths=None, indices=None, offsets=None, axis=0, unsafe=False,
    initial=None) -> Tensor: ``reduce`` ('sum', 'mean', 'max', 'min' or 'prod') over consecutive segments of
    ``data`` along ``axis``; ``lengths`` (or ``offsets``, one more than the segments) has data's leading dims up to
    ``axis`` and the segments along its last. ``unsafe`` skips the check that the lengths cover the axis."""
    if not isinstance(data, Tensor):
        raise TypeError(f"segment_reduce(): argument 'data' (position 1) must be Tensor, not {type(data).__name__}")
    name, axis = _check(data, reduce, lengths, indices, offsets, axis)
    size = data.size(axis)
    lead = list(data.shape[:axis])
    rest = list(data.shape[axis + 1:])
    rows = math.prod(lead)
    if lengths is not None:
        count = lengths.size(-1)
        table = lengths.reshape(rows, count).cpu()
        if bool((table < 0).any()):
            raise RuntimeError("lengths contains negative value!")
        start = aten.zeros.default([rows, 1], dtype=table.dtype)
        covered = table.sum(-1)
        if not unsafe and bool((covered != size).any()):
            raise RuntimeError("segment_reduce(): Expected all rows of lengths along axis to sum to "
                               "data.size(lengths.dim()-1) when !unsafe.")
    else:
        # offsets: segment k of a row spans offsets[k]..offsets[k+1]; what lies outside offsets[0]..offsets[-1]
        # takes no part (torch checks nothing else)
        count = offsets.size(-1) - 1
        bounds = offsets.reshape(rows, count + 1).cpu()
        table = bounds[:, 1:] - bounds[:, :-1]
        if bool((table < 0).any()):
            raise RuntimeError("Expected segment_length >= 0 to be true, but got false.  (Could this error message "
                               "be improved?  If so, please report an enhancement request to PyTorch.)")
        start = bounds[:, :1]
        covered = bounds[:, -1] - bounds[:, 0]
    if bool((start.reshape(-1) + covered > size).any()) or bool((start < 0).any()):
        raise RuntimeError("segment_reduce(): the segments of a row reach past data.size(axis)")
    # every element's slot: row r's slots are r * (count + 2) + 0..count+1, slot 0 for what comes before the first
    # segment and slot count + 1 for what the segments leave at the row's end (both dropped afterwards)
    tail = (size - start.reshape(-1) - covered).reshape(rows, 1)
    per_row = aten.cat.default([start.reshape(rows, 1), table, tail], 1).reshape(-1)
    slots = aten.repeat_interleave.Tensor(per_row.to(D.int64)).to(data.device)
    flat = data.reshape([rows * size] + rest)
    index = slots.reshape([rows * size] + [1] * len(rest)).expand(flat.shape)
    target = aten.zeros.default([rows * (count + 2)] + rest, dtype=data.dtype, device=data.device)
    reduced = target.scatter_reduce(0, index, flat, _SCATTER[name], include_self=False)
    reduced = reduced.reshape([rows, count + 2] + rest)[:, 1:count + 1]
    seg_lengths = table.to(data.dtype).to(data.device).reshape([rows, count] + [1] * len(rest))
    empty = seg_lengths == 0
    if initial is not None:
        if name == "sum":
            reduced = reduced + initial
        elif name == "prod":
            reduced = reduced * initial
        elif name == "mean":
            reduced = (reduced + initial) / seg_lengths
        elif name == "max":
            reduced = reduced.clamp_min(initial)
        else:
            reduced = reduced.clamp_max(initial)
    elif name == "mean":
        reduced = reduced / seg_lengths
    fill = _EMPTY[name] if initial is None else initial
    reduced = aten.where.self(empty, aten.full_like.default(reduced, fill), reduced)
    return reduced.reshape(lead + [count] + rest)
