"""``npusim.distributed``: process groups and collectives across processes and machines (``torch.distributed``).

Ranks are processes started by an MPI launcher (``python -m npusim.distributed.run``
or ``mpiexec``). Backends register through the same public ``Backend.register_backend``
any third-party backend uses: this package registers ``mpi`` (mpi4py) for cpu tensors;
the npu backend, through ``npusim.privateuse1.register_collective_backends``, extends
``mpi`` to npu tensors and adds ``nccl`` (NVIDIA's collectives, for npu tensors on GPUs).
Importing this package is cheap: MPI starts only in ``init_process_group``.
"""
from __future__ import annotations

from .algorithms.grad_bucket import GradBucket
from .builtin_comm_hooks import BuiltinCommHookType
from .availability import is_backend_available, is_gloo_available, is_torchelastic_launched
from .backend import Backend, BackendConfig, BackendOptions, CollectiveBackend, get_default_backend_for_device
from .comm_profiling import record_comm
from .coalesced import all_gather_coalesced, all_reduce_coalesced
from .collectives import (
    all_gather, all_gather_into_tensor, all_gather_object, all_gather_single, all_reduce, all_to_all_single, barrier,
    broadcast, broadcast_object_list, gather, irecv, isend, recv, reduce, reduce_scatter_single,
    reduce_scatter_tensor, scatter, send,
)
from .debug import DebugLevel, get_debug_level, set_debug_level, set_debug_level_from_env
from .debugger import breakpoint
from .device_mesh import DeviceMesh, init_device_mesh
from .errors import DistBackendError, DistError, DistNetworkError, DistStoreError
from .file_store import FileStore
from .list_collectives import all_to_all, reduce_scatter
from .monitored_barrier import monitored_barrier
from .mpi_backend import create_mpi_backend
from .object_collectives import gather_object, scatter_object_list
from .object_p2p import recv_object_list, send_object_list
from .options import (
    AllgatherOptions, AllreduceCoalescedOptions, AllreduceOptions, AllToAllOptions, BarrierOptions, BroadcastOptions,
    GatherOptions, ReduceOptions, ReduceScatterOptions, ScatterOptions,
)
from .p2p import P2POp, batch_isend_irecv
from .process_group import (
    GroupMember, GroupName, ProcessGroup, default_pg_timeout, destroy_process_group, get_backend, get_backend_config,
    get_global_rank, get_group_rank, get_node_local_rank, get_pg_count, get_process_group_ranks, get_rank,
    get_world_size, group, init_process_group, is_available, is_initialized, is_mpi_available, is_nccl_available,
    new_group,
)
from .reduce_op import ReduceOp, supports_complex
from .reducer import Logger, Reducer
from .shrink import shrink_group
from .stores import HashStore, PrefixStore, QueueEmptyError, Store
from .subgroups import new_subgroups, new_subgroups_by_enumeration, split_group
from .tcp_store import TCPStore
from .url_rendezvous import register_rendezvous_handler
from .work import Work

from ..privateuse1.hooks import run_collective_registrations  # noqa: E402

Backend.register_backend(Backend.MPI, create_mpi_backend, extended_api=True, devices=["cpu"])
run_collective_registrations()      # the device backends' own (npu: mpi for its tensors, nccl)

__all__ = [
    "AllToAllOptions", "AllgatherOptions", "AllreduceCoalescedOptions", "AllreduceOptions", "Backend",
    "BackendConfig", "BackendOptions", "BarrierOptions", "BroadcastOptions", "CollectiveBackend", "DebugLevel",
    "DeviceMesh", "DistBackendError", "DistError", "DistNetworkError", "DistStoreError", "FileStore", "GatherOptions",
    "GradBucket", "GroupMember", "GroupName", "HashStore", "P2POp", "PrefixStore", "ProcessGroup", "QueueEmptyError",
    "ReduceOp", "ReduceOptions", "ReduceScatterOptions", "ScatterOptions", "Store", "TCPStore", "Work", "all_gather",
    "all_gather_coalesced", "all_gather_into_tensor", "all_gather_object", "all_gather_single", "all_reduce",
    "all_reduce_coalesced", "all_to_all", "all_to_all_single", "barrier", "batch_isend_irecv", "breakpoint",
    "broadcast", "broadcast_object_list", "default_pg_timeout", "destroy_process_group", "gather", "gather_object",
    "get_backend", "get_backend_config", "get_debug_level", "get_default_backend_for_device", "get_global_rank",
    "get_group_rank", "get_node_local_rank", "get_pg_count", "get_process_group_ranks", "get_rank", "get_world_size",
    "group", "init_device_mesh", "init_process_group", "irecv", "is_available", "is_backend_available",
    "is_gloo_available", "is_initialized", "is_mpi_available", "is_nccl_available", "is_torchelastic_launched",
    "isend", "monitored_barrier", "new_group", "new_subgroups", "new_subgroups_by_enumeration", "recv",
    "recv_object_list", "reduce", "reduce_scatter", "reduce_scatter_single", "reduce_scatter_tensor",
    "register_rendezvous_handler", "scatter", "scatter_object_list", "send", "send_object_list", "set_debug_level",
    "set_debug_level_from_env", "split_group", "supports_complex",
    "shrink_group", "BuiltinCommHookType", "record_comm", "Reducer", "Logger",
]
