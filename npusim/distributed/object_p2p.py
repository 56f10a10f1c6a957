"""Picklable objects over point-to-point transfers: ``send_object_list`` and ``recv_object_list``
(``torch.distributed``'s namesakes).

As torch's, the sender sends one int64 tensor of the pickled sizes, then one uint8 tensor of the pickles; the
receiver's list must have as many entries as the sender's (a receive of another size fails loudly on the
receiver). ``recv_object_list`` unpickles what arrives with plain ``pickle`` (not a weights-only unpickler):
an object can run code while it is unpickled, so only receive from ranks you trust, as torch warns.
"""
from __future__ import annotations

import pickle

import numpy as np

from ..core.factories import tensor as make_tensor
from .collectives import _check_not_self_rank, irecv, isend, recv, send
from .p2p import P2POp, batch_isend_irecv
from .process_group import default_group, get_global_rank, resolve_group, to_group_rank, warn_not_in_group


def _object_device(pg, device):
    """Where the transfer tensors live: ``device``, else cpu when a backend serves cpu, else the npu."""
    if device is not None:
        return device
    return "cpu" if "cpu" in pg._config else "npu"


def _transfer(tensor, pg, group_peer: int, sending: bool, use_batch: bool):
    """Send or receive ``tensor``; returns the peer's global rank."""
    if use_batch:
        op = isend if sending else irecv
        batch_isend_irecv([P2POp(op, tensor, group_peer=group_peer, group=pg)]).pop().wait()
        return get_global_rank(pg, group_peer)
    if sending:
        send(tensor, group_dst=group_peer, group=pg)
        return get_global_rank(pg, group_peer)
    return recv(tensor, group=pg, group_src=group_peer)


def send_object_list(object_list, dst=None, group=None, device=None, group_dst=None, use_batch: bool = False):
    """Send the picklable objects of ``object_list`` to rank ``dst`` (or ``group_dst`` of ``group``), which
    receives them with ``recv_object_list``."""
    pg = default_group() if group is None else group
    if resolve_group(pg) is None:
        warn_not_in_group("send_object_list")
        return None
    peer = to_group_rank(pg, dst, group_dst)
    _check_not_self_rank(pg, peer, "destination")
    on = _object_device(pg, device)
    pickles = [pickle.dumps(obj) for obj in object_list]
    sizes = make_tensor(np.array([len(p) for p in pickles], dtype=np.int64), device=on)
    _transfer(sizes, pg, peer, True, use_batch)
    payload = make_tensor(np.frombuffer(b"".join(pickles), dtype=np.uint8).copy(), device=on)
    _transfer(payload, pg, peer, True, use_batch)
    return None


def recv_object_list(object_list, src=None, group=None, device=None, group_src=None, use_batch: bool = False):
    """Fill ``object_list`` (as many entries as were sent) with the objects rank ``src`` (or ``group_src``)
    sent with ``send_object_list``; returns the sender's global rank. Unpickles with plain pickle: only
    receive from ranks you trust."""
    pg = default_group() if group is None else group
    if resolve_group(pg) is None:
        warn_not_in_group("recv_object_list")
        return -1
    peer = to_group_rank(pg, src, group_src)
    _check_not_self_rank(pg, peer, "source")
    on = _object_device(pg, device)
    sizes = make_tensor(np.zeros(len(object_list), dtype=np.int64), device=on)
    rank_sizes = _transfer(sizes, pg, peer, False, use_batch)
    counts = [int(c) for c in sizes.cpu().numpy()]
    payload = make_tensor(np.zeros(sum(counts), dtype=np.uint8), device=on)
    rank_objects = _transfer(payload, pg, peer, False, use_batch)
    if rank_sizes != rank_objects:
        raise AssertionError("Mismatch in return ranks for object sizes and objects.")
    data = payload.cpu().numpy().tobytes()
    offset = 0
    for i, count in enumerate(counts):
        object_list[i] = pickle.loads(data[offset:offset + count])
        offset += count
    return rank_objects
