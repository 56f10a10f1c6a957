"""``all_reduce_coalesced`` and ``all_gather_coalesced``: one collective over a list of tensors packed into one
buffer (``torch.distributed``'s namesakes, deprecated there and kept for the code that still calls them).

The tensors may differ in shape; they share one dtype (a complex tensor counts as its real type, as torch's,
and travels as pairs of reals). With ``async_op=True`` the calls return a ``Future`` (as torch's), whose
``wait()`` unpacks the results into the tensors.
"""
from __future__ import annotations

import warnings

from ..core.tensor import Tensor
from .agreement import agree_or_raise
from .collectives import (
    _check_reduction, _check_same_device, _check_tensor_list, _desc, _divide, _ensure_same_dtype, _flat_like,
    _reducible,
)
from .list_collectives import _backend_for
from .process_group import resolve_group, warn_not_in_group
from .reduce_op import RedOpType, ReduceOp, as_red_op, supports_complex
from .work import on_device

_DEPRECATED = ("`npusim.distributed.{}` will be deprecated. If you must use it, please revisit our documentation "
               "later at https://pytorch.org/docs/main/distributed.html#collective-functions")


def _real_flat(array):
    """``array`` as a 1-D array of reals (a complex array as its pairs of reals)."""
    flat = array.reshape(-1)
    return flat.view(flat.real.dtype) if flat.dtype.kind == "c" else flat


def _pack(tensors):
    flats = [_real_flat(t._a) for t in tensors]
    packed = _flat_like(flats[0], sum(f.size for f in flats))
    offset = 0
    for f in flats:
        packed[offset:offset + f.size] = f
        offset += f.size
    return packed, [f.size for f in flats]


def _unpack_into(tensors, packed, counts, start: int = 0) -> None:
    offset = start
    for t, count in zip(tensors, counts):
        chunk = packed[offset:offset + count]
        t._a[...] = (chunk.view(t._a.dtype) if t._a.dtype.kind == "c" else chunk).reshape(t._a.shape)
        t._bump_version()
        offset += count


def _done(work, async_op, device):
    """``async_op``: True (a Future, as torch's), False (wait; None), or ``"work"`` (the Work, for ProcessGroup)."""
    work._device = device
    if async_op == "work":
        return work
    if async_op:
        return work.get_future()
    work.wait()
    return None


def all_reduce_coalesced(tensors, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduce every tensor of ``tensors`` across the group, in place, with one collective."""
    warnings.warn(_DEPRECATED.format("all_reduce_coalesced"), FutureWarning, stacklevel=2)
    return reduce_coalesced(tensors, op, group, async_op)


def reduce_coalesced(tensors, op, group, async_op):
    """``all_reduce_coalesced`` without the deprecation warning."""
    if isinstance(tensors, Tensor):
        tensors = [tensors]
    _check_tensor_list(tensors, "tensor")
    _ensure_same_dtype(tensors)
    pg = resolve_group(group)
    if pg is None:
        warn_not_in_group("all_reduce_coalesced")
        return None
    op = as_red_op(op)
    if any(t.is_complex() for t in tensors) and not supports_complex(op):
        raise ValueError(f"all_reduce does not support {op} on complex tensors")
    if not tensors:
        raise ValueError("all_reduce_coalesced: the tensor list is empty")
    first = tensors[0]
    for t in tensors:
        _check_reduction("all_reduce_coalesced", t, op)
    problem = None
    try:
        _check_same_device("all_reduce_coalesced", first, tensors[1:])
    except RuntimeError as e:
        problem = e
    with on_device(first.device):
        backend, problem = _backend_for(pg, first, problem)
        agree_or_raise(pg, "all_reduce_coalesced",
                       f"all_reduce_coalesced({op.name}, {', '.join(_desc(t) for t in tensors)})", problem)
        packed, counts = _pack(tensors)
        array, plain_op = _reducible(packed, op)
        work = backend.allreduce(array, plain_op)
        if op == RedOpType.AVG:
            work.then(_divide(packed, pg.size()))
        work.then(lambda: _unpack_into(tensors, packed, counts))
        work._result = list(tensors)
        return _done(work, async_op, first.device)


def all_gather_coalesced(output_tensor_lists, input_tensor_list, group=None, async_op: bool = False):
    """Gather every rank's ``input_tensor_list`` with one collective: ``output_tensor_lists[r]`` (a list shaped as
    ``input_tensor_list``) receives rank r's tensors."""
    warnings.warn(_DEPRECATED.format("all_gather_coalesced"), FutureWarning, stacklevel=2)
    return gather_coalesced(output_tensor_lists, input_tensor_list, group, async_op)


def gather_coalesced(output_tensor_lists, input_tensor_list, group, async_op):
    """``all_gather_coalesced`` without the deprecation warning."""
    pg = resolve_group(group)
    if pg is None:
        warn_not_in_group("all_gather_coalesced")
        return None
    _check_tensor_list(input_tensor_list, "input_tensor_list")
    _ensure_same_dtype(input_tensor_list)
    if not isinstance(output_tensor_lists, list):
        raise TypeError("Invalid function argument: output_tensor_lists should be a list")
    for output_tensor_list in output_tensor_lists:
        _check_tensor_list(output_tensor_list, "output_tensor_lists")
        _ensure_same_dtype(output_tensor_list)
    if not input_tensor_list:
        raise ValueError("all_gather_coalesced: the input tensor list is empty")
    n = pg.size()
    problem = None
    if len(output_tensor_lists) != n:
        problem = RuntimeError("all_gather_coalesced: output lists should be equal to world size")
    else:
        for r, outputs in enumerate(output_tensor_lists):
            if [t.numel() for t in outputs] != [t.numel() for t in input_tensor_list]:
                problem = RuntimeError(f"all_gather_coalesced: output_tensor_lists[{r}] must hold tensors of the "
                                       f"sizes of input_tensor_list ({[tuple(t.shape) for t in input_tensor_list]}),"
                                       f" got {[tuple(t.shape) for t in outputs]}")
                break
    first = input_tensor_list[0]
    if problem is None:
        try:
            _check_same_device("all_gather_coalesced", first,
                               input_tensor_list[1:] + [t for ts in output_tensor_lists for t in ts])
        except RuntimeError as e:
            problem = e
    with on_device(first.device):
        backend, problem = _backend_for(pg, first, problem)
        agree_or_raise(pg, "all_gather_coalesced",
                       f"all_gather_coalesced({', '.join(_desc(t) for t in input_tensor_list)})", problem)
        src, counts = _pack(input_tensor_list)
        m = src.size
        out = _flat_like(src, n * m)
        work = backend.allgather(out, src)

        def unpack():
            for r, outputs in enumerate(output_tensor_lists):
                _unpack_into(outputs, out, counts, r * m)
        work.then(unpack)
        work._result = [t for ts in output_tensor_lists for t in ts]
        return _done(work, async_op, first.device)
