"""Making several groups at once: ``new_subgroups``, ``new_subgroups_by_enumeration`` and ``split_group``
(``torch.distributed``'s namesakes).

``new_subgroups*`` make each subgroup with ``new_group`` (every rank of the default group takes part in each).
``split_group`` splits one parent group into disjoint groups in a single collective over the parent's ranks only
(``MPI_Comm_split``); unlike torch's (an NCCL communicator split) it needs no ``device_id`` at init.
"""
from __future__ import annotations

import logging

from .backend import parse_backend_config
from .process_group import (
    ProcessGroup, _check_valid_timeout, _world, default_group, get_process_group_ranks, get_rank, get_world_size,
    new_group,
)
from .work import seconds_of

logger = logging.getLogger("npusim.distributed")


def new_subgroups_by_enumeration(ranks_per_subgroup_list, timeout=None, backend=None, pg_options=None,
                                 group_desc=None):
    """One group per list of global ranks (disjoint lists); returns ``(this rank's subgroup or None, all)``."""
    if ranks_per_subgroup_list is None or len(ranks_per_subgroup_list) == 0:
        raise ValueError("The arg 'ranks_per_subgroup_list' cannot be empty")
    subgroups = []
    cur_subgroup = None
    rank_to_ranks_dict = {}
    for ranks in ranks_per_subgroup_list:
        subgroup = new_group(ranks=ranks, timeout=timeout, backend=backend, pg_options=pg_options,
                             group_desc=group_desc)
        subgroups.append(subgroup)
        my_rank = get_rank()
        for rank in ranks:
            if rank in rank_to_ranks_dict:
                raise ValueError(f"Rank {rank} has appeared in both subgroup {rank_to_ranks_dict[rank]} and {ranks}")
            rank_to_ranks_dict[rank] = ranks
            if my_rank == rank:
                cur_subgroup = subgroup
                logger.info("Rank %s is assigned to subgroup %s", rank, ranks)
    return cur_subgroup, subgroups


def new_subgroups(group_size=None, group=None, timeout=None, backend=None, pg_options=None, group_desc=None):
    """Cut ``group``'s ranks (the default group's when None) into consecutive subgroups of ``group_size`` (the npu
    device count when None, as torch uses the CUDA device count); returns ``(this rank's subgroup, all)``."""
    if group_size is None:
        from .. import npu
        if not npu.is_available():
            raise ValueError("Default group size only takes effect when the npu is available.If your subgroup using "
                             "a backend that does not depend on the npu,please pass in 'group_size' correctly.")
        group_size = npu.device_count()
    if group_size <= 0:
        raise ValueError(f"The arg 'group_size' ({group_size}) must be positive")
    world_size = get_world_size(group=group)
    if world_size < group_size:
        raise ValueError(f"The arg 'group_size' ({group_size}) must not exceed the world size ({world_size})")
    if world_size % group_size != 0:
        raise ValueError(f"The world size ({world_size}) must be divisible by '{group_size=}'")
    ranks = get_process_group_ranks(group=group)
    ranks_per_subgroup_list = [ranks[i:i + group_size] for i in range(0, len(ranks), group_size)]
    return new_subgroups_by_enumeration(ranks_per_subgroup_list, timeout=timeout, backend=backend,
                                        pg_options=pg_options, group_desc=group_desc)


def _backend_subset(parent: ProcessGroup, backend) -> dict:
    """The parent's ``{device: backend}`` restricted to what ``backend`` asks for (names must match)."""
    if backend is None:
        return dict(parent._config)
    requested = parse_backend_config(str(backend))
    for device_type, requested_be in requested.items():
        if device_type not in parent._config:
            raise ValueError(f"Requested backend for device '{device_type}' is not present in the parent process "
                             f"group (parent backends: {parent._config})")
        if parent._config[device_type] != requested_be:
            raise ValueError(f"Backend mismatch for device '{device_type}': parent has "
                             f"'{parent._config[device_type]}', requested '{requested_be}'. Backend names must "
                             f"match exactly when filtering split_group backends.")
    return requested


def split_group(parent_pg=None, split_ranks=None, timeout=None, pg_options=None, group_desc=None, backend=None):
    """Split ``parent_pg`` (the default group when None) into the disjoint groups ``split_ranks`` (lists of
    ranks of the parent); every rank of the parent calls it with the same lists. Returns this rank's group, or
    None when no list holds it."""
    if split_ranks is None or len(split_ranks) == 0:
        raise ValueError("split_ranks cannot be None or empty")
    world = default_group()
    if not parent_pg:
        parent_pg = world
    if not isinstance(parent_pg, ProcessGroup) or parent_pg not in _world.groups:
        raise ValueError(f"Group {parent_pg} is not registered")
    global_rank = world.rank()
    if global_rank not in parent_pg._group_rank_of:
        raise ValueError(f"Global rank {global_rank} is not part of the parent group {parent_pg}")
    parent_group_rank = parent_pg._group_rank_of[global_rank]
    config = _backend_subset(parent_pg, backend)
    if timeout is None:
        timeout = parent_pg._timeout
    _check_valid_timeout(timeout)
    if pg_options is not None:
        raise ValueError("pg_options is not supported by the mpi and nccl backends")
    groups = []
    for ranks in split_ranks:
        if len(ranks) == 0:
            raise ValueError("the split group cannot be empty")
        if len(ranks) > world.size():
            raise ValueError("the split group's size should be less or equal to the world_size set by "
                             "init_process_group")
        if len(ranks) != len(set(ranks)):
            raise ValueError("the split group cannot have duplicate ranks")
        groups.append(sorted(int(r) for r in ranks))
    seen = {}
    for ranks in groups:
        for r in ranks:
            if not 0 <= r < parent_pg.size():
                raise ValueError(f"Rank {r} is out of range of the parent group (size {parent_pg.size()})")
            if r in seen:
                raise ValueError(f"Rank {r} has appeared in both split group {seen[r]} and {ranks}")
            seen[r] = ranks
    name = str(_world.group_count)
    _world.group_count += 1
    mine = next((g for g in groups if parent_group_rank in g), None)
    global_ranks = None if mine is None else [parent_pg._ranks[r] for r in mine]
    store = parent_pg._store.split_disjoint(groups, seconds_of(timeout), f"group {name} (ranks {global_ranks})")
    if store is None:
        return None
    pg = ProcessGroup(store, global_ranks, group_desc or name, timeout, config)
    pg.bound_device_id = getattr(world, "bound_device_id", None)
    _world.groups.append(pg)
    return pg
