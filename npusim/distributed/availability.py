"""Which backends this process can use, and how it was launched (``torch.distributed``'s ``is_*_available``,
``is_backend_available``, ``is_torchelastic_launched``)."""
from __future__ import annotations

import os

from .backend import Backend
from .process_group import is_mpi_available, is_nccl_available


def is_gloo_available() -> bool:
    """False: npusim has no gloo backend; ``mpi`` serves cpu tensors (and npu tensors in emulation) instead."""
    return False


_AVAILABILITY = {"mpi": is_mpi_available, "nccl": is_nccl_available, "gloo": is_gloo_available}


def _check_single_backend_availability(backend_name: str) -> bool:
    name = str(backend_name).lower()
    available = _AVAILABILITY.get(name) or Backend.availability.get(name)     # a plugin may say too
    if available is not None:
        return available()
    return name in Backend.backend_list


def is_backend_available(backend: str) -> bool:
    """Whether ``backend`` (a name, or pairs such as ``"cpu:mpi,npu:nccl"``) is built in and usable here, or
    registered through ``Backend.register_backend``."""
    if ":" in backend.lower():
        names = [pair.partition(":")[2].strip() for pair in backend.lower().split(",")]
        return all(_check_single_backend_availability(name) for name in names)
    return _check_single_backend_availability(backend)


def is_torchelastic_launched() -> bool:
    """Whether torchelastic (``torchrun``) started this process: ``TORCHELASTIC_RUN_ID`` is set, as torch checks.
    ``npusim.distributed.run`` does not set it."""
    return os.getenv("TORCHELASTIC_RUN_ID") is not None
