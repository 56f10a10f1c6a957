"""The collectives that take one tensor per rank in a list: ``all_to_all`` and ``reduce_scatter``
(``torch.distributed``'s namesakes).

Each packs its list into one contiguous buffer and runs the backend's ``alltoall`` or ``reduce_scatter``
on it, as ``all_to_all_single`` and ``reduce_scatter_tensor`` do, then unpacks the result into the output
tensors when the work completes. The ranks agree on the call first; an argument error of one rank only
(a list of the wrong length, a tensor of the wrong size) is raised there and reported to the others.
"""
from __future__ import annotations

import numpy as np

from .agreement import agree_or_raise
from .collectives import (
    _buffer, _check_reduction, _check_same_device, _check_single_tensor, _check_tensor_list, _desc, _divide,
    _dtype_name, _ensure_same_dtype, _finish, _flat_like, _reducible, _what, _written,
)
from .process_group import resolve_group, warn_not_in_group
from .reduce_op import RedOpType, ReduceOp, as_red_op
from .work import on_device


def _pack(tensors):
    """The tensors' values, one after the other, in one new 1-D array of their array type."""
    flats = [t._a.reshape(-1) for t in tensors]
    packed = _flat_like(flats[0], sum(f.size for f in flats))
    offset = 0
    for f in flats:
        packed[offset:offset + f.size] = f
        offset += f.size
    return packed


def _backend_for(pg, t, problem):
    """The backend serving ``t``'s device, and ``problem`` (or the error of finding no backend)."""
    if problem is not None:
        return None, problem
    try:
        return pg._get_backend(t.device), None
    except RuntimeError as e:     # no backend for this device type on this rank: the others are told
        return None, e


def _check_one_per_rank(op_name: str, tensors, n: int, which: str) -> None:
    if len(tensors) != n:
        raise RuntimeError(f"{op_name}: {which} tensor list size {len(tensors)} does not match world size {n}")


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    """Send ``input_tensor_list[j]`` to rank j; ``output_tensor_list[i]`` receives rank i's tensor for this rank.

    Tensors may differ in size from peer to peer, as long as what rank i sends to rank j is what rank j
    expects from rank i.
    """
    pg = resolve_group(group)
    if pg is None:
        warn_not_in_group("all_to_all")
        return None
    _check_tensor_list(output_tensor_list, "output_tensor_list")
    _check_tensor_list(input_tensor_list, "input_tensor_list")
    _ensure_same_dtype(output_tensor_list, input_tensor_list)
    n = pg.size()
    problem = None
    try:
        _check_one_per_rank("all_to_all", input_tensor_list, n, "input")
        _check_one_per_rank("all_to_all", output_tensor_list, n, "output")
        _check_same_device("all_to_all", input_tensor_list[0], input_tensor_list[1:] + output_tensor_list)
    except RuntimeError as e:
        problem = e
    first = input_tensor_list[0] if input_tensor_list else output_tensor_list[0] if output_tensor_list else None
    if first is None:      # two empty lists (a group has at least one rank, so this is the size error)
        agree_or_raise(pg, "all_to_all", "all_to_all()", problem)
    with on_device(first.device):
        backend, problem = _backend_for(pg, first, problem)
        agree_or_raise(pg, "all_to_all", f"all_to_all({first.device.type} {_dtype_name(first.dtype)})", problem)
        send_counts = [t.numel() for t in input_tensor_list]
        recv_counts = [t.numel() for t in output_tensor_list]
        counts = pg._store.all_gather_ints(send_counts + recv_counts, _what(pg, "all_to_all"))
        sends, recvs = counts[:, :n], counts[:, n:]
        bad = np.argwhere(sends != recvs.T)
        if bad.size:
            i, j = (int(v) for v in bad[0])
            raise RuntimeError(f"all_to_all: rank {i} sends {sends[i, j]} elements to rank {j}, but rank {j} expects "
                               f"{recvs[j, i]} from rank {i} (check the sizes of input_tensor_list and "
                               f"output_tensor_list)")
        src = _pack(input_tensor_list)
        out = _flat_like(src, sum(recv_counts))
        work = backend.alltoall(out, src, recv_counts, send_counts)

        def unpack():
            offset = 0
            for t, count in zip(output_tensor_list, recv_counts):
                t._a[...] = out[offset:offset + count].reshape(t._a.shape)
                t._bump_version()
                offset += count
        work.then(unpack)
        work._result = list(output_tensor_list)
        return _finish(work, async_op, first.device)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``input_list`` (one tensor per rank) across the group; rank i gets the reduction of every rank's
    ``input_list[i]`` in ``output``."""
    _check_single_tensor(output, "output")
    _check_tensor_list(input_list, "input_list")
    _ensure_same_dtype(output, input_list)
    pg = resolve_group(group)
    if pg is None:
        warn_not_in_group("reduce_scatter")
        return None
    op = as_red_op(op)
    _check_reduction("reduce_scatter", output, op)
    n = pg.size()
    problem = None
    if len(input_list) != n:
        problem = RuntimeError(f"reduce_scatter: invalid input tensor list size, must be world size ({n}), got "
                               f"{len(input_list)}")
    else:
        for i, t in enumerate(input_list):
            if t.dtype != output.dtype:
                problem = ValueError(f"Invalid usage of tensors with different dtypesFound {output.dtype} and  "
                                     f"{t.dtype}")
            elif t.numel() != output.numel():
                problem = RuntimeError(f"reduce_scatter: invalid tensor size at index {i} (expected "
                                       f"{tuple(output.shape)}, got {tuple(t.shape)})")
            if problem is not None:
                break
        else:
            try:
                _check_same_device("reduce_scatter", output, input_list)
            except RuntimeError as e:
                problem = e
    with on_device(output.device):
        backend, problem = _backend_for(pg, output, problem)
        agree_or_raise(pg, "reduce_scatter", f"reduce_scatter({op.name}, {_desc(output)})", problem)
        out, own = _buffer(output)
        m = out.size
        src = _flat_like(out, n * m)
        for i, t in enumerate(input_list):
            src[i * m:(i + 1) * m] = t._a.reshape(-1)
        src_array, plain_op = _reducible(src, op)
        out_array, _ = _reducible(out, op)
        work = backend.reduce_scatter(out_array, src_array, plain_op)
        if op == RedOpType.AVG:
            work.then(_divide(out, n))
        work.then(_written(output, out, own))
        work._result = [output]
        return _finish(work, async_op, output.device)
