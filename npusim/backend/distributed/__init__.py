"""The npu's process-group backends, registered when ``npusim.distributed`` is first imported.

The built-in ``mpi`` backend serves npu tensors too (NumPy arrays on the emulation,
CuPy arrays on a GPU); ``nccl`` (``nccl.py``) serves them on NVIDIA GPUs and is the
npu's default when the npu runs on a GPU and CuPy has NCCL.
"""
from __future__ import annotations


def register() -> None:
    """Register ``mpi`` for npu tensors and ``nccl`` (``npusim.privateuse1.register_collective_backends``)."""
    from ...privateuse1 import privateuse1_backend_name
    from ...privateuse1.distributed import Backend, create_mpi_backend
    from .nccl import create_nccl_backend, nccl_available, nccl_usable

    name = privateuse1_backend_name()
    mpi_devices = list(Backend.backend_capability.get(Backend.MPI, ()))
    Backend.register_backend(Backend.MPI, create_mpi_backend, extended_api=True, devices=mpi_devices + [name])
    Backend.register_backend(Backend.NCCL, create_nccl_backend, extended_api=True, devices=[name])
    Backend.preferred_device_backends[name] = (Backend.NCCL, nccl_usable)
    Backend.availability[Backend.NCCL] = nccl_available
