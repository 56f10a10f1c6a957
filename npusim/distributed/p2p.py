"""Batched point-to-point transfers: ``P2POp`` and ``batch_isend_irecv`` (``torch.distributed``'s namesakes).

A batch starts every send and receive of the list without blocking, so their order in the list never
deadlocks (a receive listed before its send works). Several transfers between the same two ranks in the
same direction match in list order. Each transfer is an ``isend``/``irecv``: a receive of the wrong size
fails loudly, and a transfer whose peer never shows up fails at the group's timeout.
"""
from __future__ import annotations

from .collectives import _check_single_tensor, irecv, isend
from .process_group import default_group, get_global_rank, get_group_rank, get_rank


def _check_op(op) -> None:
    if op not in [isend, irecv]:
        raise ValueError("Invalid ``op``. Expected ``op`` to be of type ``npusim.distributed.isend`` or "
                         "``npusim.distributed.irecv``.")


def _canonicalize_group_rank(group, global_rank=None, group_rank=None, return_global=False) -> int:
    """torch's helper of the same name: a global or a group rank, as a group rank (or a global one)."""
    if group_rank is not None:
        if global_rank is not None:
            raise ValueError("Can't specify both group_rank and global_rank")
        if return_global:
            return get_global_rank(group, group_rank)
        return group_rank
    if global_rank is None:
        raise ValueError("Must specify global_rank or group_rank")
    if return_global:
        return global_rank
    return get_group_rank(group, global_rank)


class P2POp:
    """One point-to-point operation for ``batch_isend_irecv``.

    ``op``: ``npusim.distributed.isend`` or ``npusim.distributed.irecv``; ``tensor``: what to send or where to
    receive; ``peer`` (a global rank) or ``group_peer`` (a rank of ``group``): the other side; ``group``: the
    process group (the default one when None); ``tag``: matches a send with its receive.
    """

    def __new__(cls, op, tensor, peer=None, group=None, tag=0, group_peer=None):
        _check_op(op)
        _check_single_tensor(tensor, "tensor")
        return object.__new__(cls)

    def __init__(self, op, tensor, peer=None, group=None, tag=0, group_peer=None):
        self.op = op
        self.tensor = tensor
        self.group = default_group() if group is None else group
        self.peer = _canonicalize_group_rank(self.group, peer, group_peer, return_global=True)
        self.tag = tag
        self.group_peer = _canonicalize_group_rank(self.group, peer, group_peer)

    def __repr__(self):
        my_group_rank = get_rank(self.group)
        op_name = self.op.__name__
        group_name = self.group.group_name if self.group else "default_pg"
        if "send" in op_name:
            s, d = my_group_rank, self.group_peer
        elif "recv" in op_name:
            s, d = self.group_peer, my_group_rank
        else:
            return super().__repr__()
        return (f"P2POp({op_name} pg={group_name}, group_src={s}, group_dst={d},  {self.tensor.shape}, "
                f"{self.tensor.dtype})")


def _check_p2p_op_list(p2p_op_list) -> None:
    if not isinstance(p2p_op_list, list) or not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise ValueError("Invalid ``p2p_op_list``. Each op is expected to to be of type "
                         "``npusim.distributed.P2POp``.")
    group = p2p_op_list[0].group        # an empty list raises IndexError, as torch
    if not all(group == p.group for p in p2p_op_list):
        raise ValueError("All ops need to use the same group.")


def batch_isend_irecv(p2p_op_list) -> list:
    """Start every operation of ``p2p_op_list`` (``P2POp`` s of one group); returns their ``Work`` s, in order."""
    _check_p2p_op_list(p2p_op_list)
    works = []
    for p in p2p_op_list:
        peer = {"group_dst": p.group_peer} if p.op is isend else {"group_src": p.group_peer}
        work = p.op(p.tensor, group=p.group, tag=p.tag, **peer)
        if work:
            works.append(work)
    return works
