"""``BuiltinCommHookType``: the communication hooks DistributedDataParallel has built in
(``ddp._register_builtin_comm_hook(BuiltinCommHookType.FP16_COMPRESS)``), torch's C++ hooks. Here they are the
Python hooks of ``algorithms.ddp_comm_hooks.default_hooks`` that compute the same: ALLREDUCE divides the bucket by
the world size and all-reduces it, FP16_COMPRESS does so in float16 and casts back."""
from __future__ import annotations

import enum


class BuiltinCommHookType(enum.IntEnum):
    """A communication hook built into DistributedDataParallel (torch's values)."""

    ALLREDUCE = 1
    FP16_COMPRESS = 2

    def __str__(self):
        return f"BuiltinCommHookType.{self.name}"


def register_builtin_comm_hook(ddp, comm_hook_type) -> None:
    """Reduce ``ddp``'s buckets with the built-in hook ``comm_hook_type`` over its process group."""
    if not isinstance(comm_hook_type, BuiltinCommHookType):
        raise TypeError(f"_register_builtin_comm_hook(): incompatible function arguments: comm_hook_type must be "
                        f"a BuiltinCommHookType, not {type(comm_hook_type).__name__}")
    from .algorithms.ddp_comm_hooks import default_hooks
    hook = default_hooks.allreduce_hook if comm_hook_type is BuiltinCommHookType.ALLREDUCE else \
        default_hooks.fp16_compress_hook
    ddp.register_comm_hook(ddp.process_group, hook)


__all__ = ["BuiltinCommHookType"]
