"""DistributedDataParallel communication hooks (``torch.distributed.algorithms.ddp_comm_hooks``).

``register_ddp_comm_hook(DDPCommHookType.FP16_COMPRESS, model, state)`` registers one of the default hooks
on a DDP model; ``DDPCommHookType.X.value(model=model, state=state)`` does the same.
"""
from __future__ import annotations

import sys
from enum import Enum
from functools import partial

from . import default_hooks as default

__all__ = ["DDPCommHookType", "register_ddp_comm_hook"]

if sys.version_info >= (3, 11):
    from enum import member as _enum_member   # a partial is not an enum member by itself from 3.13
else:
    def _enum_member(x):
        return x


def _ddp_comm_hook_wrapper(comm_hook, model, state):
    model.register_comm_hook(state, comm_hook)


class DDPCommHookType(Enum):
    """The built-in hooks, each as a partial that registers it: ``DDPCommHookType.ALLREDUCE.value(model=model,
    state=process_group)``."""

    ALLREDUCE = _enum_member(partial(_ddp_comm_hook_wrapper, comm_hook=default.allreduce_hook))
    FP16_COMPRESS = _enum_member(partial(_ddp_comm_hook_wrapper, comm_hook=default.fp16_compress_hook))
    BF16_COMPRESS = _enum_member(partial(_ddp_comm_hook_wrapper, comm_hook=default.bf16_compress_hook))


def register_ddp_comm_hook(comm_hook_type: DDPCommHookType, model, state=None):
    """Register the hook ``comm_hook_type`` names on the DDP ``model``; ``state`` is passed to the hook.

    Example::
        >>> register_ddp_comm_hook(DDPCommHookType.FP16_COMPRESS, model, state)
    """
    comm_hook_type.value(model=model, state=state)
