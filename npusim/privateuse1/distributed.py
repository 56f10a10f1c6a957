"""The collective-communication extension point: what a backend's process-group backend builds on.

Import this module only from the function given to ``register_collective_backends`` (it loads
``npusim.distributed``, which programs load on first use). A collective backend subclasses
``CollectiveBackend``, returns ``Work`` objects, and registers a factory with
``Backend.register_backend(name, factory, extended_api=True, devices=[...])``; it may
also name itself the preferred backend of a device type when usable, and say whether
its library is present (``Backend.preferred_device_backends``, ``Backend.availability``).
"""
from __future__ import annotations

from ..distributed.backend import Backend, BackendOptions, CollectiveBackend
from ..distributed.errors import DistBackendError
from ..distributed.mpi_backend import create_mpi_backend
from ..distributed.reduce_op import RedOpType
from ..distributed.work import Work, seconds_of

__all__ = ["Backend", "BackendOptions", "CollectiveBackend", "DistBackendError", "RedOpType", "Work",
           "seconds_of", "create_mpi_backend"]
