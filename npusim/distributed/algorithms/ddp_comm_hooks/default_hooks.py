"""The default DDP communication hooks (``torch.distributed.algorithms.ddp_comm_hooks.default_hooks``).

A hook gets ``(state, bucket)`` (the state is a process group here, or None for the default group) and
returns a future of the bucket's new gradients. The bucket arrives undivided: these hooks divide by the
group's size before the all-reduce (dividing first keeps float16 sums from overflowing).
"""
# no ``from __future__ import annotations``: DistributedDataParallel.register_comm_hook compares the
# annotations of a hook with the objects themselves, as torch does
from collections.abc import Callable
from typing import Any

from .... import distributed as dist
from ....core.c10 import dtype as _dtype
from ....core.runtime.futures import Future
from ....core.tensor import Tensor

__all__ = ["allreduce_hook", "bf16_compress_hook", "bf16_compress_wrapper", "fp16_compress_hook",
           "fp16_compress_wrapper"]


def _group(process_group):
    return process_group if process_group is not None else dist.group.WORLD


def _allreduce_fut(process_group: dist.ProcessGroup, tensor: Tensor) -> Future[Tensor]:
    """Average ``tensor`` over the group, in place; a future of it."""
    group_to_use = _group(process_group)
    tensor.div_(group_to_use.size())     # divide first: no overflow in float16
    return dist.all_reduce(tensor, group=group_to_use, async_op=True).get_future().then(lambda fut: fut.value()[0])


def allreduce_hook(process_group: dist.ProcessGroup, bucket: dist.GradBucket) -> Future[Tensor]:
    """All-reduce the bucket and divide by the group's size: DDP's behaviour without a hook.

    Example::
        >>> ddp_model.register_comm_hook(process_group, allreduce_hook)
    """
    return _allreduce_fut(process_group, bucket.buffer())


def _compress_hook(dtype, process_group: dist.ProcessGroup, bucket: dist.GradBucket) -> Future[Tensor]:
    group_to_use = _group(process_group)
    world_size = group_to_use.size()
    buffer = bucket[0] if isinstance(bucket, tuple) else bucket.buffer()
    compressed_tensor = buffer.to(dtype).div_(world_size)

    def decompress(fut):
        decompressed_tensor = buffer
        value = fut if isinstance(fut, Tensor) else fut.value()[0]
        decompressed_tensor.copy_(value)      # in place, into the bucket's dtype
        return decompressed_tensor

    fut = dist.all_reduce(compressed_tensor, group=group_to_use, async_op=True).get_future()
    return fut.then(decompress)


def fp16_compress_hook(process_group: dist.ProcessGroup, bucket: dist.GradBucket) -> Future[Tensor]:
    """Cast the bucket to float16 divided by the group's size, all-reduce, cast back into the bucket's dtype.

    Example::
        >>> ddp_model.register_comm_hook(process_group, fp16_compress_hook)
    """
    return _compress_hook(_dtype.float16, process_group, bucket)


def bf16_compress_hook(process_group: dist.ProcessGroup, bucket: dist.GradBucket) -> Future[Tensor]:
    """Cast the bucket to bfloat16 divided by the group's size, all-reduce, cast back into the bucket's dtype.

    Example::
        >>> ddp_model.register_comm_hook(process_group, bf16_compress_hook)
    """
    return _compress_hook(_dtype.bfloat16, process_group, bucket)


def _run_compressed(dtype, hook, hook_state, bucket):
    bucket.set_buffer(bucket.buffer().to(dtype))     # the hook sees a 16-bit bucket
    fut = hook(hook_state, bucket)

    def decompress(fut):
        decompressed_tensor = bucket.buffer()
        decompressed_tensor.copy_(fut.value())
        return decompressed_tensor       # DDP casts it into the gradients' dtype as it copies them out

    return fut.then(decompress)


def fp16_compress_wrapper(
    hook: Callable[[Any, dist.GradBucket], Future[Tensor]],
) -> Callable[[Any, dist.GradBucket], Future[Tensor]]:
    """Run ``hook`` on the bucket cast to float16; its result goes back into the gradients' dtype.

    ``fp16_compress_hook`` is ``fp16_compress_wrapper(allreduce_hook)``.
    """
    def fp16_compress_wrapper_hook(hook_state, bucket: dist.GradBucket) -> Future[Tensor]:
        return _run_compressed(_dtype.float16, hook, hook_state, bucket)
    return fp16_compress_wrapper_hook


def bf16_compress_wrapper(
    hook: Callable[[Any, dist.GradBucket], Future[Tensor]],
) -> Callable[[Any, dist.GradBucket], Future[Tensor]]:
    """Run ``hook`` on the bucket cast to bfloat16; its result goes back into the gradients' dtype.

    ``bf16_compress_hook`` is ``bf16_compress_wrapper(allreduce_hook)``.
    """
    def bf16_compress_wrapper_hook(hook_state, bucket: dist.GradBucket) -> Future[Tensor]:
        return _run_compressed(_dtype.bfloat16, hook, hook_state, bucket)
    return bf16_compress_wrapper_hook
