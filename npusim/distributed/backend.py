"""The backend registry (``Backend.register_backend``) and what a backend implements.

This is the "distributed collective communication" integration point of the
PrivateUse1 path: a backend registers a factory under a name, with the device
types it serves, through the same public API torch offers out-of-tree backends.
The built-in ``mpi`` (cpu and npu tensors) and ``nccl`` (npu tensors on NVIDIA
GPUs) backends register themselves this way too.

A backend moves arrays, never tensors: the collectives layer checks the call,
hands the backend contiguous arrays of the tensor's device (NumPy on cpu and the
emulated npu, CuPy on a GPU) with bool, complex and ``AVG`` already reduced to
plain numeric reductions, and writes results back into the tensors.
"""
from __future__ import annotations

import warnings
from collections import namedtuple
from dataclasses import dataclass, field

from ..core.c10.device import device as as_device


class Backend(str):
    """An enum-like class of backend names (``torch.distributed.Backend``).

    ``Backend("MPI")`` returns ``"mpi"``; ``Backend.register_backend`` adds one.
    """

    UNDEFINED = "undefined"
    MPI = "mpi"
    NCCL = "nccl"

    _BackendPlugin = namedtuple("_BackendPlugin", ["creator_fn", "extended_api"])

    _plugins: dict = {}

    backend_list = [UNDEFINED, MPI, NCCL]

    # the backend a device type gets when init_process_group names none
    default_device_backend_map: dict = {}

    backend_capability: dict = {}

    # device type -> (backend name, usable): the backend a device type gets instead of its default when
    # ``usable()`` says so in this process (the npu's nccl when the npu runs on a GPU)
    preferred_device_backends: dict = {}

    # backend name -> ``available()``: whether the library it needs is present (``is_nccl_available``)
    availability: dict = {}

    def __new__(cls, name: str):
        if not isinstance(name, str):
            raise ValueError("Backend constructor parameter must be string-ish")
        value = getattr(Backend, name.upper(), Backend.UNDEFINED)
        if value == Backend.UNDEFINED:
            value = name.lower()
        return value

    @classmethod
    def register_backend(cls, name, func, extended_api: bool = False, devices=None) -> None:
        """Register ``func`` as the factory of backend ``name`` for the device types ``devices``.

        ``func(store, group_rank, group_size, timeout)`` (or ``func(options)`` with ``extended_api=True``, where
        ``options`` is a ``BackendOptions``) returns a ``CollectiveBackend``. Without ``devices`` the backend
        is assumed to serve cpu and npu tensors (with a warning, as torch).
        """
        if not hasattr(Backend, name.upper()):
            setattr(Backend, name.upper(), name.lower())
        if name.lower() not in Backend.backend_list:
            Backend.backend_list.append(name.lower())
        if devices is not None:
            for device in [devices] if isinstance(devices, str) else devices:
                Backend.default_device_backend_map.setdefault(device, name.lower())
        if devices is None:
            warnings.warn(f"Device capability of {name} unspecified, assuming `cpu` and `npu`. Please specify it "
                          f"via the `devices` argument of `register_backend`.", stacklevel=2)
            Backend.backend_capability[name.lower()] = ["cpu", "npu"]
        elif isinstance(devices, str):
            Backend.backend_capability[name.lower()] = [devices]
        else:
            Backend.backend_capability[name.lower()] = list(devices)
        Backend._plugins[name.upper()] = Backend._BackendPlugin(func, extended_api)


@dataclass
class BackendOptions:
    """What an ``extended_api`` factory receives (torch's ``DistributedBackendOptions``)."""

    store: object
    group_rank: int
    group_size: int
    timeout: object
    group_id: str
    global_ranks_in_group: list = field(default_factory=list)


def create_backend(name: str, options: BackendOptions):
    """Instantiate the registered backend ``name`` for one process group."""
    plugin = Backend._plugins.get(name.upper())
    if plugin is None:
        raise ValueError(f"Invalid backend: '{name}'. Registered backends: "
                         f"{', '.join(b for b in Backend.backend_list if b != Backend.UNDEFINED)}")
    if plugin.extended_api:
        backend = plugin.creator_fn(options)
    else:
        backend = plugin.creator_fn(options.store, options.group_rank, options.group_size, options.timeout)
    if not isinstance(backend, CollectiveBackend):
        raise TypeError(f"the factory of backend '{name}' returned {type(backend).__name__}, not a "
                        f"npusim.distributed.CollectiveBackend")
    return backend


def parse_backend_config(backend) -> dict:
    """``{device_type: backend_name}`` for init_process_group's ``backend``: None (the defaults), a name, or
    ``"cpu:mpi,npu:nccl"`` (as torch's BackendConfig)."""
    if backend is None:
        config = dict(Backend.default_device_backend_map)
        for device, (name, usable) in Backend.preferred_device_backends.items():
            if device in config and usable():
                config[device] = name
        return config
    if not isinstance(backend, str):
        raise TypeError(f"backend must be a string such as 'mpi', 'nccl' or 'cpu:mpi,npu:nccl', got "
                        f"{type(backend).__name__}")
    text = backend.lower().strip()
    if ":" not in text:
        name = Backend(text)
        if name == Backend.UNDEFINED or name.upper() not in Backend._plugins:
            raise ValueError(f"Invalid backend: '{backend}'")
        return {device: name for device in Backend.backend_capability[name]}
    config = {}
    for pair in text.split(","):
        device, sep, name = (p.strip() for p in pair.partition(":"))
        if not sep or not device or not name:
            raise ValueError(f"Invalid backend string '{backend}': expected pairs such as 'cpu:mpi,npu:nccl'")
        if name.upper() not in Backend._plugins:
            raise ValueError(f"Invalid backend: '{name}'")
        if device not in Backend.backend_capability[name]:
            raise ValueError(f"backend '{name}' does not support device type '{device}' (it serves "
                             f"{', '.join(Backend.backend_capability[name])})")
        config[device] = name
    return config


class CollectiveBackend:
    """What a backend implements: collectives over contiguous arrays of its device, each returning a ``Work``.

    Arrays are written in place. Ranks (``root``, ``src``, ``dst``) are ranks within the group. Reductions
    (``op``: a ``ReduceOp`` of SUM, PRODUCT, MIN, MAX, BAND, BOR or BXOR) arrive on real numeric dtypes only.
    ``alltoall`` counts are in elements, one per rank. ``recv`` with ``src=None`` receives from any rank
    (the work's ``source_rank()`` says which). A timed-out work calls ``abort``.
    """

    name = Backend.UNDEFINED

    def __init__(self, rank: int, size: int, timeout_s: float):
        self._rank = rank
        self._size = size
        self.timeout_s = timeout_s
        self.aborted = None

    def rank(self) -> int:
        return self._rank

    def size(self) -> int:
        return self._size

    def abort(self, reason: str) -> None:
        """Stop using this backend: pending transfers may never finish."""
        if self.aborted is None:
            self.aborted = reason

    def shutdown(self) -> None:
        """Release the backend's resources (the group is being destroyed)."""

    def _unsupported(self, what):
        raise NotImplementedError(f"backend '{self.name}' does not implement {what}")

    def allreduce(self, array, op):
        self._unsupported("all_reduce")

    def broadcast(self, array, root):
        self._unsupported("broadcast")

    def reduce(self, array, root, op):
        self._unsupported("reduce")

    def allgather(self, output, input):
        self._unsupported("all_gather")

    def reduce_scatter(self, output, input, op):
        self._unsupported("reduce_scatter")

    def gather(self, output, input, root):
        self._unsupported("gather")

    def scatter(self, output, input, root):
        self._unsupported("scatter")

    def alltoall(self, output, input, output_counts, input_counts):
        self._unsupported("all_to_all")

    def send(self, array, dst, tag):
        self._unsupported("send")

    def recv(self, array, src, tag):
        self._unsupported("recv")

    def barrier(self):
        self._unsupported("barrier")


class BackendConfig:
    """The backend of each device type of a group (``torch.distributed.BackendConfig``): built from a backend
    string as ``init_process_group`` reads it; ``repr`` gives ``"cpu:mpi,npu:mpi"``."""

    def __init__(self, backend):
        text = str(backend)
        self.device_backend_map = {device: Backend(name) for device, name in
                                   parse_backend_config(None if text == Backend.UNDEFINED else text).items()}

    def __repr__(self):
        return ",".join(f"{device}:{backend}" for device, backend in self.device_backend_map.items())

    def get_device_backend_map(self) -> dict:
        return self.device_backend_map


def get_default_backend_for_device(device) -> str:
    """The backend a device type gets when ``init_process_group`` names none (``"mpi"`` for cpu)."""
    device_type = as_device(device).type if isinstance(device, str) else device.type
    name = Backend.default_device_backend_map.get(device_type)
    if name is None:
        raise ValueError(f"Default backend not registered for device : {device}")
    return name
