"""Collectives over picklable objects that move data to or from one rank: ``gather_object`` and
``scatter_object_list`` (``torch.distributed``'s namesakes).

Objects travel pickled, over the group's rendezvous communicator (as ``broadcast_object_list`` and
``all_gather_object`` do), so they work whatever backends serve the group's tensors. The ranks first agree
on the call (a different collective on another rank raises on every rank); an argument error seen on one
rank only (the list the destination passes, an object that cannot be pickled) is raised there and
reported to the others as a ``DistError``, instead of leaving them waiting.
"""
from __future__ import annotations

import pickle

import numpy as np

from .agreement import agree_or_raise
from .collectives import _what
from .process_group import resolve_group, to_group_rank, warn_not_in_group
from .rendezvous import load_mpi


def _gather_bytes(store, data: bytes, root: int, what: str):
    """Every rank's ``data`` on rank ``root`` (a list, in rank order); None on the other ranks."""
    if store.size == 1:
        return [data]
    sizes = store.all_gather_ints([len(data)], what)[:, 0]
    MPI = load_mpi()
    mine = np.frombuffer(data, dtype=np.uint8)
    if store.rank != root:
        store._wait([store.comm.Igatherv([mine, MPI.BYTE], None, root=root)], what)
        return None
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    everything = np.empty(int(offsets[-1]), dtype=np.uint8)
    spec = [everything, (sizes.tolist(), offsets[:-1].tolist()), MPI.BYTE]
    store._wait([store.comm.Igatherv([mine, MPI.BYTE], spec, root=root)], what)
    return [everything[offsets[r]:offsets[r + 1]].tobytes() for r in range(store.size)]


def _scatter_bytes(store, pieces, root: int, what: str) -> bytes:
    """``pieces[r]`` of rank ``root`` (one ``bytes`` per rank) on each rank ``r``."""
    if store.size == 1:
        return pieces[0]
    MPI = load_mpi()
    size = np.zeros(1, dtype=np.int64)
    if store.rank == root:
        sizes = np.array([len(p) for p in pieces], dtype=np.int64)
        store._wait([store.comm.Iscatter([sizes, MPI.INT64_T], [size, MPI.INT64_T], root=root)], what)
        offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        everything = np.frombuffer(b"".join(pieces), dtype=np.uint8)
        send = [everything, (sizes.tolist(), offsets.tolist()), MPI.BYTE]
    else:
        store._wait([store.comm.Iscatter(None, [size, MPI.INT64_T], root=root)], what)
        send = None
    mine = np.empty(int(size[0]), dtype=np.uint8)
    store._wait([store.comm.Iscatterv(send, [mine, MPI.BYTE], root=root)], what)
    return mine.tobytes()


def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None):
    """Gather ``obj`` of every rank into ``object_gather_list`` on rank ``dst`` (global rank 0 by default).

    ``object_gather_list`` must be given on the destination (its first ``world_size`` entries are replaced)
    and must be None (or empty) on the other ranks.
    """
    pg = resolve_group(group)
    if dst is None and group_dst is None:
        dst = 0
    if pg is None:
        warn_not_in_group("gather_object")
        return None
    root = to_group_rank(pg, dst, group_dst)
    is_root = pg.rank() == root
    problem = None
    if is_root and not object_gather_list:
        problem = ValueError("Argument ``gather_list`` must be specified on destination rank.")
    elif not is_root and object_gather_list:
        problem = ValueError("Argument ``gather_list`` must NOT be specified on non-destination ranks.")
    data = b""
    if problem is None:
        try:
            data = pickle.dumps(obj)
        except Exception as e:  # an object that cannot be pickled: this rank's error, the others are told
            problem = e
    agree_or_raise(pg, "gather_object", f"gather_object(dst={root})", problem)
    gathered = _gather_bytes(pg._store, data, root, _what(pg, "gather_object"))
    if not is_root:
        return None
    for i, payload in enumerate(gathered):
        # a list shorter than the group fills what it can, then raises IndexError (as torch)
        object_gather_list[i] = pickle.loads(payload)
    return None


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None, src=None, group=None,
                        group_src=None):
    """Give rank i ``scatter_object_input_list[i]`` of rank ``src`` (global rank 0 by default), stored as the
    first element of its ``scatter_object_output_list``. The input list is ignored on the other ranks."""
    pg = resolve_group(group)
    if src is None and group_src is None:
        src = 0
    if pg is None:
        warn_not_in_group("scatter_object_list")
        return None
    root = to_group_rank(pg, src, group_src)
    is_root = pg.rank() == root
    n = pg.size()
    problem = None
    pieces = None
    if not isinstance(scatter_object_output_list, list) or len(scatter_object_output_list) < 1:
        problem = ValueError("Expected argument scatter_object_output_list to be a list of size at least 1.")
    elif is_root:
        if scatter_object_input_list is None:
            problem = ValueError("source rank must provide non-None scatter_object_input_list")
        else:
            try:
                pieces = [pickle.dumps(o) for o in scatter_object_input_list]
            except Exception as e:  # an object that cannot be pickled
                problem = e
            else:
                if len(pieces) != n:
                    problem = RuntimeError(f"scatter_object_list: Incorrect input list size {len(pieces)}. Input "
                                           f"list size should be {n}, same as size of the process group.")
    agree_or_raise(pg, "scatter_object_list", f"scatter_object_list(src={root})", problem)
    payload = _scatter_bytes(pg._store, pieces, root, _what(pg, "scatter_object_list"))
    scatter_object_output_list[0] = pickle.loads(payload)
    return None
