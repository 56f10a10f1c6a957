"""torch's ``ProcessGroup`` methods (``pg.allreduce(tensors, opts)`` and the rest): each takes a one-tensor list
(as torch's gloo and mpi backends ask), the options holder of ``options.py`` (or, for the reductions, a
``ReduceOp``), ranks of the group (``rootRank``), and returns the ``Work`` of the collective of the same name.

``opts.timeout`` bounds ``barrier``; the other collectives wait for the group's timeout. The collectives are
imported where they are called: they import ``process_group``, which builds ``ProcessGroup`` on this class.
"""
from __future__ import annotations

from .options import (
    UNSET_TIMEOUT, AllreduceCoalescedOptions, AllreduceOptions, BarrierOptions, BroadcastOptions, GatherOptions,
    ReduceOptions, ReduceScatterOptions, ScatterOptions,
)
from .reduce_op import ReduceOp, RedOpType


def _one(tensors, what: str):
    """The single tensor of ``tensors`` (a tensor or a list of one)."""
    if isinstance(tensors, (list, tuple)):
        if len(tensors) != 1:
            raise ValueError(f"ProcessGroup.{what} takes a list of one tensor, got {len(tensors)}")
        return tensors[0]
    return tensors


def _reduce_op(opts, default_type):
    """The ReduceOp of ``opts`` (an options holder, a ReduceOp, or None)."""
    if opts is None:
        return ReduceOp.SUM, default_type()
    if isinstance(opts, (ReduceOp, RedOpType)):
        holder = default_type()
        holder.reduceOp = opts
        return opts, holder
    return opts.reduceOp, opts


class ProcessGroupMethods:
    """Mixed into ``ProcessGroup``: the collectives as methods, as torch's ``ProcessGroup`` has them."""

    bound_device_id = None      # the device_id given to init_process_group (torch's), None when none was

    def monitored_barrier(self, timeout=None, wait_all_ranks: bool = False) -> None:
        from .monitored_barrier import monitored_barrier
        return monitored_barrier(group=self, timeout=timeout, wait_all_ranks=wait_all_ranks)

    def allreduce(self, tensors, opts=None):
        from .collectives import all_reduce
        op, _ = _reduce_op(opts, AllreduceOptions)
        return all_reduce(_one(tensors, "allreduce"), op=op, group=self, async_op=True)

    def allreduce_coalesced(self, tensors, opts=None):
        from .coalesced import reduce_coalesced
        op, _ = _reduce_op(opts, AllreduceCoalescedOptions)
        return reduce_coalesced(list(tensors), op, self, "work")

    def broadcast(self, tensors, opts=None, root: int | None = None):
        from .collectives import broadcast
        if isinstance(opts, int):           # broadcast(tensor, root), as torch's overload
            opts, root = None, opts
        opts = opts or BroadcastOptions()
        group_src = opts.rootRank if root is None else root
        return broadcast(_one(tensors, "broadcast"), group=self, async_op=True, group_src=group_src)

    def reduce(self, tensors, opts=None):
        from .collectives import reduce
        opts = opts or ReduceOptions()
        return reduce(_one(tensors, "reduce"), op=opts.reduceOp, group=self, async_op=True, group_dst=opts.rootRank)

    def allgather(self, output_tensors, input_tensors, opts=None):
        from .collectives import all_gather
        outputs = output_tensors[0] if output_tensors and isinstance(output_tensors[0], (list, tuple)) \
            else output_tensors
        return all_gather(list(outputs), _one(input_tensors, "allgather"), group=self, async_op=True)

    def allgather_coalesced(self, output_lists, input_list, opts=None):
        from .coalesced import gather_coalesced
        return gather_coalesced([list(o) for o in output_lists], list(input_list), self, "work")

    def _allgather_base(self, output, input, opts=None):
        from .collectives import all_gather_into_tensor
        return all_gather_into_tensor(output, input, group=self, async_op=True)

    def gather(self, output_tensors, input_tensors, opts=None):
        from .collectives import gather
        opts = opts or GatherOptions()
        outputs = list(output_tensors[0]) if output_tensors else None
        return gather(_one(input_tensors, "gather"), outputs, group=self, async_op=True, group_dst=opts.rootRank)

    def scatter(self, output_tensors, input_tensors, opts=None):
        from .collectives import scatter
        opts = opts or ScatterOptions()
        inputs = list(input_tensors[0]) if input_tensors else None
        return scatter(_one(output_tensors, "scatter"), inputs, group=self, async_op=True, group_src=opts.rootRank)

    def reduce_scatter(self, output_tensors, input_tensors, opts=None):
        from .list_collectives import reduce_scatter
        opts = opts or ReduceScatterOptions()
        return reduce_scatter(_one(output_tensors, "reduce_scatter"), list(input_tensors[0]), op=opts.reduceOp,
                              group=self, async_op=True)

    def _reduce_scatter_base(self, outputTensor, inputTensor, opts=None):  # noqa: N803 - torch's names
        from .collectives import reduce_scatter_tensor
        opts = opts or ReduceScatterOptions()
        return reduce_scatter_tensor(outputTensor, inputTensor, op=opts.reduceOp, group=self, async_op=True)

    def alltoall(self, output_tensors, input_tensors, opts=None):
        from .list_collectives import all_to_all
        return all_to_all(list(output_tensors), list(input_tensors), group=self, async_op=True)

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        from .collectives import all_to_all_single
        return all_to_all_single(output, input, list(output_split_sizes) or None, list(input_split_sizes) or None,
                                 group=self, async_op=True)

    def barrier(self, opts=None):
        from .collectives import barrier
        opts = opts or BarrierOptions()
        timeout = None if opts.timeout == UNSET_TIMEOUT else opts.timeout
        return barrier(group=self, async_op=True, timeout=timeout)

    def send(self, tensors, dstRank: int, tag: int = 0):  # noqa: N803 - torch's names
        from .collectives import isend
        return isend(_one(tensors, "send"), group=self, tag=tag, group_dst=dstRank)

    def recv(self, tensors, srcRank: int, tag: int = 0):  # noqa: N803 - torch's names
        from .collectives import irecv
        return irecv(_one(tensors, "recv"), group=self, tag=tag, group_src=srcRank)

