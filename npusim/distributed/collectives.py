"""The collectives over tensors (``torch.distributed.all_reduce`` and the rest).

Each call checks its arguments as torch does, picks the backend serving the
tensor's device type, makes every rank agree that they run the same collective on
the same shapes (a mismatch raises on every rank instead of hanging or reading
garbage), then hands the backend the tensor's own array when it is contiguous, so
nothing is copied on the way to MPI or NCCL. Results are written into the tensors
(bumping their version) when the work completes. With ``async_op=True`` the call
returns the ``Work`` once the transfer has started; otherwise it waits.
"""
from __future__ import annotations

import numpy as np

from ..core.tensor import Tensor
from .debug import log_agreed
from .process_group import resolve_group, to_group_rank, warn_not_in_group
from .reduce_op import BITWISE_OPS, COMPLEX_OPS, RedOpType, ReduceOp, as_red_op
from .work import Work, on_device, seconds_of

_REAL_OF_COMPLEX = {"complex64": "float32", "complex128": "float64"}
# bool reductions as reductions of 0/1 bytes
_BOOL_OPS = {RedOpType.SUM: RedOpType.MAX, RedOpType.PRODUCT: RedOpType.MIN, RedOpType.MIN: RedOpType.MIN,
             RedOpType.MAX: RedOpType.MAX, RedOpType.BAND: RedOpType.BAND, RedOpType.BOR: RedOpType.BOR,
             RedOpType.BXOR: RedOpType.BXOR}


# --- argument checks (torch's wording) ---------------------------------------------------------------------------
def _check_single_tensor(param, name: str) -> None:
    if not isinstance(param, Tensor):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type npusim.Tensor\n"
                        f"             but got {type(param)} instead.")


def _check_tensor_list(param, name: str) -> None:
    if not isinstance(param, list):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type List[npusim.Tensor]\n"
                        f"             but got {type(param)} instead.")
    if not all(isinstance(p, Tensor) for p in param):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type List[npusim.Tensor]\n"
                        f"             but got {type(param)} with elements of type {[type(p) for p in param]}.")


def _ensure_same_dtype(*groups) -> None:
    last = None
    for t in (t for g in groups for t in (g if isinstance(g, list) else (g,))):
        name = _dtype_name(t.dtype)
        name = _REAL_OF_COMPLEX.get(name, name)   # complex and its element type may be mixed (torch)
        if last is None:
            last = (name, t.dtype)
        elif last[0] != name:
            raise ValueError(f"Invalid usage of tensors with different dtypesFound {last[1]} and  {t.dtype}")


def _check_same_device(op_name: str, first: Tensor, others) -> None:
    for t in others:
        if t.device != first.device:
            raise RuntimeError(f"{op_name}: all tensors must be on the same device, got {first.device} and "
                               f"{t.device}")


def _check_not_self_rank(pg, rank: int, rank_type: str) -> None:
    if pg.rank() == rank:
        raise ValueError(f"Invalid {rank_type} rank: {rank_type} rank should not be the same as the rank of the "
                         f"current process.")


def _check_reduction(op_name: str, tensor: Tensor, op: RedOpType) -> None:
    if op == RedOpType.PREMUL_SUM:
        raise ValueError(f"{op_name} does not support {op!r}: use SUM and scale the tensor")
    if tensor.is_complex() and op not in COMPLEX_OPS:
        raise ValueError(f"{op_name} does not support {op!r} on complex tensors")
    if op in BITWISE_OPS and tensor.is_floating_point():
        raise ValueError(f"{op_name} does not support {op!r} on floating-point tensors")
    if op == RedOpType.AVG and _dtype_name(tensor.dtype) == "bool":
        raise ValueError(f"{op_name} does not support {op!r} on bool tensors")


def _dtype_name(dtype) -> str:
    return str(dtype).rsplit(".", 1)[-1]


def _desc(t: Tensor) -> str:
    return f"{t.device.type} {_dtype_name(t.dtype)}{list(t.shape)}"


def _what(pg, op_name: str) -> str:
    return f"{op_name} on rank {pg.rank()} of {pg._describe()}"


def _agree(pg, op_name: str, signature: str) -> None:
    what = _what(pg, op_name)
    pg._store.check_agreement(what, signature)
    log_agreed(what, signature)


# --- buffers -----------------------------------------------------------------------------------------------
def _buffer(t: Tensor):
    """The contiguous array a backend reads and writes for ``t``: its own array when it is contiguous."""
    a = t._a
    if a.flags.c_contiguous:
        return a, True
    return a.copy(), False


def _written(t: Tensor, buf, own: bool):
    """What to run once ``buf`` holds ``t``'s new values."""
    def finish():
        if not own:
            t._a[...] = buf
        t._bump_version()
    return finish


def _split_into(tensors, out, m: int):
    """What to run once ``out`` holds one ``m``-element block per tensor of ``tensors``: copy each block in."""
    def finish():
        for i, t in enumerate(tensors):
            t._a[...] = out[i * m:(i + 1) * m].reshape(t._a.shape)
            t._bump_version()
    return finish


def _reducible(buf, op: RedOpType):
    """``buf`` and ``op`` as a plain numeric reduction: bool as bytes, complex as pairs of reals, AVG as SUM."""
    flat = buf.reshape(-1)
    if op == RedOpType.AVG:
        op = RedOpType.SUM
    if flat.dtype == np.bool_:
        return flat.view(np.uint8), _BOOL_OPS[op]
    if flat.dtype.kind == "c":
        return flat.view(flat.real.dtype), op
    return flat, op


def _divide(buf, n: int):
    """AVG after SUM: divide in place (integers truncate toward zero, as NCCL's average)."""
    def finish():
        if buf.dtype.kind in "iu":
            buf[...] = (buf / n).astype(buf.dtype)
        else:
            np.true_divide(buf, n, out=buf)
    return finish


def _flat_like(array, count: int):
    """A new 1-D array of ``count`` elements, of ``array``'s type (NumPy or CuPy) and dtype."""
    return np.empty_like(array, shape=(count,))


def _finish(work: Work, async_op: bool, device):
    work._device = device       # its completion writes into the tensors: on their device
    if async_op:
        return work
    work.wait()
    return None


# --- collectives ------------------------------------------------------------------------------------------
def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``tensor`` across the group; every rank gets the result in place."""
    _check_single_tensor(tensor, "tensor")
    pg = resolve_group(group)
    if pg is None:
        warn_not_in_group("all_reduce")
        return None
    op = as_red_op(op)
    _check_reduction("all_reduce", tensor, op)
    with on_device(tensor.device):
        backend = pg._get_backend(tensor.device)
        _agree(pg, "all_reduce", f"all_reduce({op.name}, {_desc(tensor)})")
        buf, own = _buffer(tensor)
        array, plain_op = _reducible(buf, op)
        work = backend.allreduce(array, plain_op)
        if op == RedOpType.AVG:
            work.then(_divide(buf, pg.size()))
        work.then(_written(tensor, buf, own))
        work._result = [tensor]
        return _finish(work, async_op, tensor.device)


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    """Copy ``tensor`` of rank ``src`` (a global rank; or ``group_src``) into ``tensor`` on every rank."""
    pg = resolve_group(group)
    if pg is None:
        _check_single_tensor(tensor, "tensor")
        warn_not_in_group("broadcast")
        return None
    root = to_group_rank(pg, src, group_src)
    _check_single_tensor(tensor, "tensor")
    with on_device(tensor.device):
        backend = pg._get_backend(tensor.device)
        _agree(pg, "broadcast", f"broadcast(src={root}, {_desc(tensor)})")
        buf, own = _buffer(tensor)
        work = backend.broadcast(buf, root)
        if pg.rank() != root:
            work.then(_written(tensor, buf, own))
        work._result = [tensor]
        return _finish(work, async_op, tensor.device)


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    """Reduce ``tensor`` across the group into ``tensor`` of rank ``dst``."""
    pg = resolve_group(group)
    if pg is None:
        _check_single_tensor(tensor, "tensor")
        warn_not_in_group("reduce")
        return None
    root = to_group_rank(pg, dst, group_dst)
    _check_single_tensor(tensor, "tensor")
    op = as_red_op(op)
    _check_reduction("reduce", tensor, op)
    with on_device(tensor.device):
        backend = pg._get_backend(tensor.device)
        _agree(pg, "reduce", f"reduce({op.name}, dst={root}, {_desc(tensor)})")
        buf, own = _buffer(tensor)
        array, plain_op = _reducible(buf, op)
        work = backend.reduce(array, root, plain_op)
        if pg.rank() == root:
            if op == RedOpType.AVG:
                work.then(_divide(buf, pg.size()))
            work.then(_written(tensor, buf, own))
        work._result = [tensor]
        return _finish(work, async_op, tensor.device)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Gather ``tensor`` of every rank into ``tensor_list`` (one tensor per rank) on every rank."""
    _check_tensor_list(tensor_list, "tensor_list")
    _check_single_tensor(tensor, "tensor")
    _ensure_same_dtype(tensor_list, tensor)
    pg = resolve_group(group)
    if pg is None:
        warn_not_in_group("all_gather")
        return None
    n = pg.size()
    if len(tensor_list) != n:
        raise RuntimeError(f"all_gather: invalid output tensor list (expected length {n}, got {len(tensor_list)})")
    for i, t in enumerate(tensor_list):
        if t.numel() != tensor.numel():
            raise RuntimeError(f"all_gather: invalid tensor size at index {i} (expected {tuple(tensor.shape)}, got "
                               f"{tuple(t.shape)})")
    _check_same_device("all_gather", tensor, tensor_list)
    with on_device(tensor.device):
        backend = pg._get_backend(tensor.device)
        _agree(pg, "all_gather", f"all_gather({_desc(tensor)})")
        src, _ = _buffer(tensor)
        m = src.size
        out = _flat_like(src, n * m)
        work = backend.allgather(out, src)
        work.then(_split_into(tensor_list, out, m))
        work._result = list(tensor_list)
        return _finish(work, async_op, tensor.device)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """Gather ``input_tensor`` of every rank into ``output_tensor`` (rank order along dim 0, or stacked)."""
    return _gather_into_tensor("all_gather_into_tensor", output_tensor, input_tensor, group, async_op)


def all_gather_single(output_tensor, input_tensor, group=None, async_op=False):
    """``all_gather_into_tensor`` under its torch 2.13 name."""
    return _gather_into_tensor("all_gather_single", output_tensor, input_tensor, group, async_op)


def _gather_into_tensor(op_name, output_tensor, input_tensor, group, async_op):
    _check_single_tensor(input_tensor, "input_tensor")
    _check_single_tensor(output_tensor, "output_tensor")
    _ensure_same_dtype(output_tensor, input_tensor)
    pg = resolve_group(group)
    if pg is None:
        warn_not_in_group(op_name)
        return None
    n = pg.size()
    if output_tensor.numel() != n * input_tensor.numel():
        raise RuntimeError(f"{op_name}: output tensor size must be equal to world_size ({n}) times "
                           f"input tensor size ({input_tensor.numel()}), got {output_tensor.numel()}")
    _check_same_device(op_name, input_tensor, [output_tensor])
    with on_device(input_tensor.device):
        backend = pg._get_backend(input_tensor.device)
        _agree(pg, op_name, f"{op_name}({_desc(input_tensor)})")
        src, _ = _buffer(input_tensor)
        out, own = _buffer(output_tensor)
        work = backend.allgather(out, src)
        work.then(_written(output_tensor, out, own))
        work._result = [output_tensor]
        return _finish(work, async_op, input_tensor.device)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``input`` across the group and give rank i the i-th of its ``world_size`` equal chunks."""
    return _reduce_scatter_tensor("reduce_scatter_tensor", output, input, op, group, async_op)


def reduce_scatter_single(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """``reduce_scatter_tensor`` under its torch 2.13 name."""
    return _reduce_scatter_tensor("reduce_scatter_single", output, input, op, group, async_op)


def _reduce_scatter_tensor(op_name, output, input, op, group, async_op):
    _check_single_tensor(output, "output")
    _check_single_tensor(input, "input")
    _ensure_same_dtype(output, input)
    pg = resolve_group(group)
    if pg is None:
        warn_not_in_group(op_name)
        return None
    op = as_red_op(op)
    _check_reduction(op_name, input, op)
    n = pg.size()
    if input.numel() != n * output.numel():
        raise RuntimeError(f"{op_name}: input tensor size must be equal to world_size ({n}) times "
                           f"output tensor size ({output.numel()}), got {input.numel()}")
    _check_same_device(op_name, input, [output])
    with on_device(input.device):
        backend = pg._get_backend(input.device)
        _agree(pg, op_name, f"{op_name}({op.name}, {_desc(input)})")
        src, _ = _buffer(input)
        out, own = _buffer(output)
        src_array, plain_op = _reducible(src, op)
        out_array, _ = _reducible(out, op)
        work = backend.reduce_scatter(out_array, src_array, plain_op)
        if op == RedOpType.AVG:
            work.then(_divide(out, n))
        work.then(_written(output, out, own))
        work._result = [output]
        return _finish(work, async_op, input.device)


def _check_list_for_root(op_name, tensors, is_root: bool, arg: str, role: str) -> None:
    if is_root:
        if not tensors:
            raise ValueError(f"Argument ``{arg}`` must be specified on {role} rank.")
    elif tensors:
        raise ValueError(f"Argument ``{arg}`` must NOT be specified on non-{role} ranks.")


def _check_root_list(op_name: str, kind: str, tensors, tensor, n: int) -> None:
    """The root's list of gather/scatter: one tensor per rank, each the size of ``tensor``, on its device."""
    if len(tensors) != n:
        raise RuntimeError(f"{op_name}: Incorrect {kind} list size {len(tensors)}. {kind.capitalize()} list size "
                           f"should be {n}, same as size of the process group.")
    for i, t in enumerate(tensors):
        if t.numel() != tensor.numel():
            raise RuntimeError(f"{op_name}: invalid tensor size at index {i} (expected {tuple(tensor.shape)}, got "
                               f"{tuple(t.shape)})")
    _check_same_device(op_name, tensor, tensors)


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
    """Gather ``tensor`` of every rank into ``gather_list`` on rank ``dst`` (global rank 0 by default)."""
    _check_single_tensor(tensor, "tensor")
    if gather_list:
        _check_tensor_list(gather_list, "gather_list")
    else:
        gather_list = []
    _ensure_same_dtype(tensor, gather_list)
    pg = resolve_group(group)
    if pg is None:
        warn_not_in_group("gather")
        return None
    root = to_group_rank(pg, dst, group_dst, default=0 if group_dst is None else None)
    is_root = pg.rank() == root
    _check_list_for_root("gather", gather_list, is_root, "gather_list", "destination")
    n = pg.size()
    if is_root:
        _check_root_list("gather", "output", gather_list, tensor, n)
    with on_device(tensor.device):
        backend = pg._get_backend(tensor.device)
        _agree(pg, "gather", f"gather(dst={root}, {_desc(tensor)})")
        src, _ = _buffer(tensor)
        m = src.size
        out = _flat_like(src, n * m) if is_root else None
        work = backend.gather(out, src, root)
        if is_root:
            work.then(_split_into(gather_list, out, m))
            work._result = list(gather_list)
        return _finish(work, async_op, tensor.device)


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):
    """Give rank i the i-th tensor of ``scatter_list`` of rank ``src`` (global rank 0 by default)."""
    _check_single_tensor(tensor, "tensor")
    if scatter_list:
        _check_tensor_list(scatter_list, "scatter_list")
    else:
        scatter_list = []
    _ensure_same_dtype(tensor, scatter_list)
    pg = resolve_group(group)
    if src is None and group_src is None:
        src = 0
    if pg is None:
        warn_not_in_group("scatter")
        return None
    root = to_group_rank(pg, src, group_src)
    is_root = pg.rank() == root
    _check_list_for_root("scatter", scatter_list, is_root, "scatter_list", "source")
    n = pg.size()
    if is_root:
        _check_root_list("scatter", "input", scatter_list, tensor, n)
    with on_device(tensor.device):
        backend = pg._get_backend(tensor.device)
        _agree(pg, "scatter", f"scatter(src={root}, {_desc(tensor)})")
        out, own = _buffer(tensor)
        source = None
        if is_root:
            source = _flat_like(out, n * out.size)
            m = out.size
            for i, t in enumerate(scatter_list):
                source[i * m:(i + 1) * m] = t._a.reshape(-1)
        work = backend.scatter(out, source, root)
        work.then(_written(tensor, out, own))
        work._result = [tensor]
        return _finish(work, async_op, tensor.device)


def _split_counts(op_name, t: Tensor, splits, n: int, which: str) -> list:
    """Elements per rank along dim 0 of ``t``."""
    if t.dim() == 0:
        raise RuntimeError(f"{op_name}: the {which} tensor must have at least one dimension")
    rows = t.shape[0]
    per_row = t.numel() // rows if rows else 0
    if not splits:
        if rows % n:
            raise RuntimeError(f"{op_name}: dim 0 of the {which} tensor ({rows}) does not divide equally across "
                               f"the group size ({n}); pass {which}_split_sizes")
        return [rows // n * per_row] * n
    splits = [int(s) for s in splits]
    if len(splits) != n:
        raise RuntimeError(f"{op_name}: {which}_split_sizes has {len(splits)} entries, the group has {n} ranks")
    if any(s < 0 for s in splits) or sum(splits) != rows:
        raise RuntimeError("Split sizes doesn't match total dim 0 size")
    return [s * per_row for s in splits]


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None, group=None,
                      async_op=False):
    """Split ``input`` along dim 0, send piece j to rank j, and concatenate what arrives into ``output``."""
    pg = resolve_group(group)
    if pg is None:
        warn_not_in_group("all_to_all_single")
        return None
    _check_single_tensor(output, "output")
    _check_single_tensor(input, "input")
    _ensure_same_dtype(output, input)
    n = pg.size()
    send_counts = _split_counts("all_to_all_single", input, input_split_sizes, n, "input")
    recv_counts = _split_counts("all_to_all_single", output, output_split_sizes, n, "output")
    _check_same_device("all_to_all_single", input, [output])
    with on_device(input.device):
        backend = pg._get_backend(input.device)
        _agree(pg, "all_to_all_single", f"all_to_all_single({input.device.type} {_dtype_name(input.dtype)})")
        counts = pg._store.all_gather_ints(send_counts + recv_counts, _what(pg, "all_to_all_single"))
        sends, recvs = counts[:, :n], counts[:, n:]
        bad = np.argwhere(sends != recvs.T)
        if bad.size:
            i, j = (int(v) for v in bad[0])
            raise RuntimeError(f"all_to_all_single: rank {i} sends {sends[i, j]} elements to rank {j}, but rank {j} "
                               f"expects {recvs[j, i]} from rank {i} (check input_split_sizes and output_split_sizes)")
        src, _ = _buffer(input)
        out, own = _buffer(output)
        work = backend.alltoall(out, src, recv_counts, send_counts)
        work.then(_written(output, out, own))
        work._result = [output]
        return _finish(work, async_op, input.device)


# --- point to point -----------------------------------------------------------------------------------------
def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Start sending ``tensor`` to rank ``dst``; returns the ``Work``."""
    _check_single_tensor(tensor, "tensor")
    pg = resolve_group(group)
    if pg is None:
        warn_not_in_group("isend")
        return None
    peer = to_group_rank(pg, dst, group_dst)
    with on_device(tensor.device):
        backend = pg._get_backend(tensor.device)
        buf, _ = _buffer(tensor)
        return backend.send(buf, peer, tag)


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    """Start receiving into ``tensor`` from rank ``src`` (any rank when None); returns the ``Work``."""
    _check_single_tensor(tensor, "tensor")
    pg = resolve_group(group)
    if pg is None:
        warn_not_in_group("irecv")
        return None
    peer = None if src is None and group_src is None else to_group_rank(pg, src, group_src)
    with on_device(tensor.device):
        backend = pg._get_backend(tensor.device)
        buf, own = _buffer(tensor)
        work = backend.recv(buf, peer, tag)
        work.then(_written(tensor, buf, own))
        work._result = [tensor]
        work._device = tensor.device
        return work


def send(tensor, dst=None, group=None, tag=0, group_dst=None) -> None:
    """Send ``tensor`` to rank ``dst`` and wait until it is out."""
    pg = resolve_group(group)
    if pg is not None:
        _check_not_self_rank(pg, to_group_rank(pg, dst, group_dst), "destination")
    work = isend(tensor, dst=dst, group=group, tag=tag, group_dst=group_dst)
    if work is not None:
        work.wait()


def recv(tensor, src=None, group=None, tag=0, group_src=None) -> int:
    """Receive into ``tensor`` from rank ``src`` (any rank when None); returns the sender's global rank."""
    work = irecv(tensor, src=src, group=group, tag=tag, group_src=group_src)
    if work is None:
        return -1
    work.wait()
    pg = resolve_group(group)
    if src is None:
        sender = work.source_rank() if group_src is None else group_src
        _check_not_self_rank(pg, sender, "source")
        return pg._ranks[sender]
    return src


def barrier(group=None, async_op=False, device_ids=None, timeout=None):
    """Wait until every rank of the group has reached the barrier."""
    pg = resolve_group(group)
    if pg is None:
        warn_not_in_group("barrier")
        return None
    limit = None if timeout is None else seconds_of(timeout)
    pg._store.check_agreement(_what(pg, "barrier"), "barrier()", limit)
    work = Work(_what(pg, "barrier"))
    work.is_completed()
    return work if async_op else None


# --- objects ---------------------------------------------------------------------------------------------------
def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None):
    """Replace ``object_list``'s entries with those of rank ``src`` (picklable objects)."""
    pg = resolve_group(group)
    if src is None and group_src is None:
        src = 0
    if pg is None:
        warn_not_in_group("broadcast_object_list")
        return None
    root = to_group_rank(pg, src, group_src)
    _agree(pg, "broadcast_object_list", f"broadcast_object_list(src={root}, {len(object_list)} objects)")
    objects = pg._store.broadcast_object(list(object_list) if pg.rank() == root else None, root,
                                         _what(pg, "broadcast_object_list"))
    if pg.rank() != root:
        for i, obj in enumerate(objects):
            object_list[i] = obj
    return None


def all_gather_object(object_list, obj, group=None):
    """Fill ``object_list`` (one entry per rank) with ``obj`` of every rank."""
    pg = resolve_group(group)
    if pg is None:
        warn_not_in_group("all_gather_object")
        return None
    _agree(pg, "all_gather_object", "all_gather_object()")
    gathered = pg._store.all_gather_object(obj, _what(pg, "all_gather_object"))
    if len(object_list) < len(gathered):
        raise ValueError(f"all_gather_object: object_list has {len(object_list)} entries, but the group has "
                         f"{len(gathered)} ranks")
    for i, value in enumerate(gathered):
        object_list[i] = value
    return None
