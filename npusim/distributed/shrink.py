"""``shrink_group``: a smaller group without some ranks (failed ones, typically), made by the remaining ranks alone.

Only the ranks that stay call it: MPI makes the new communicator among them (``MPI_Comm_create_group``, collective
over its members only), and the group's backends are made anew over it, as any group's are. The old group is
dropped without a collective (its excluded ranks may be gone). Shrinking the default group makes the new group
the default one, with the remaining ranks renumbered 0..n-1, and drops every other group, whose ranks no longer
mean the same processes (torch's rules).
"""
from __future__ import annotations

import logging

from .process_group import ProcessGroup, _world, default_group, get_process_group_ranks
from .rendezvous import Store, load_mpi
from .work import seconds_of

SHRINK_DEFAULT = 0
SHRINK_ABORT = 1
_TAG = 0x5348          # the MPI tag of the communicator-creating exchange ("SH")

logger = logging.getLogger(__name__)


def _validate_inputs(ranks_to_exclude, shrink_flags) -> None:
    if not isinstance(ranks_to_exclude, list):
        raise TypeError(f"ranks_to_exclude must be a list, but got {type(ranks_to_exclude).__name__}. "
                        f"Example: [1, 3, 5] to exclude ranks 1, 3, and 5.")
    if not ranks_to_exclude:
        raise ValueError("ranks_to_exclude cannot be empty. To shrink a group, you must specify at least one rank to "
                         "exclude. Example: [failed_rank_id]")
    if not isinstance(shrink_flags, int) or shrink_flags not in (SHRINK_DEFAULT, SHRINK_ABORT):
        raise ValueError(f"Invalid shrink_flags value: {shrink_flags}. Must be one of: SHRINK_DEFAULT "
                         f"({SHRINK_DEFAULT}) or SHRINK_ABORT ({SHRINK_ABORT}). Use SHRINK_ABORT to abort ongoing "
                         f"operations before shrinking.")


def _excluded_set(ranks_to_exclude, group_size: int, current_rank: int) -> set:
    excluded = set()
    for i, rank in enumerate(ranks_to_exclude):
        if not isinstance(rank, int):
            raise TypeError(f"All elements in ranks_to_exclude must be integers. Element at index {i} is "
                            f"{type(rank).__name__}: {rank}")
        if not 0 <= rank < group_size:
            raise ValueError(f"Rank {rank} at index {i} is out of bounds for group size {group_size}. Valid ranks "
                             f"are in range [0, {group_size - 1}].")
        if rank in excluded:
            raise ValueError(f"Duplicate rank {rank} found in ranks_to_exclude at index {i}. Each rank can only be "
                             f"excluded once.")
        excluded.add(rank)
    if len(excluded) >= group_size:
        raise ValueError(f"Cannot exclude all {group_size} ranks from process group. At least one rank must remain. "
                         f"Excluding {len(excluded)} ranks.")
    if current_rank in excluded:
        raise RuntimeError(f"Current rank {current_rank} is in the exclusion list and should not call shrink_group(). "
                           f"Only non-excluded ranks should participate in the shrinking operation. Excluded ranks "
                           f"should terminate their processes instead.")
    return excluded


def _shrunk_store(store: Store, keep: list, timeout_s: float, describe: str) -> Store:
    """A Store over ``keep`` (ranks of ``store``'s group), made by those ranks only."""
    if store.comm is None:
        return Store(None, timeout_s, describe)
    load_mpi()
    comm = store.comm.Create_group(store.comm.Get_group().Incl(keep), _TAG)
    return Store(comm, timeout_s, describe)


def _drop(pg: ProcessGroup) -> None:
    """Forget a group without a collective: its communicators are left to MPI's finalisation."""
    reason = "the group was shrunk"
    pg._store.aborted = reason
    for backend in dict.fromkeys(pg._backends.values()):
        backend.aborted = reason
    pg._shutdown()
    if pg in _world.groups:
        _world.groups.remove(pg)


def shrink_group(ranks_to_exclude: list, group: ProcessGroup | None = None, shrink_flags: int = SHRINK_DEFAULT,
                 pg_options=None) -> ProcessGroup:
    """A new group of ``group``'s ranks (the default group when None) but those in ``ranks_to_exclude`` (ranks of
    ``group``). Only the remaining ranks call it; an excluded rank that does gets a RuntimeError. The old group is
    dropped; shrinking the default group makes the result the default group and drops every other group.
    ``SHRINK_ABORT`` may be passed (MPI has no operations of the old group left to abort once every rank has
    waited for its own); ``pg_options`` are not supported by the mpi and nccl backends (ValueError).
    """
    _validate_inputs(ranks_to_exclude, shrink_flags)
    world = default_group()
    target = group if group is not None else world
    if not isinstance(target, ProcessGroup) or target not in _world.groups:
        raise ValueError(f"Group {target} is not registered")
    size = target.size()
    if size <= 1:
        raise ValueError(f"Cannot shrink a process group with size {size}. Group must have at least 2 ranks to "
                         f"support shrinking.")
    excluded = _excluded_set(ranks_to_exclude, size, target.rank())
    if pg_options is not None:
        raise ValueError("pg_options is not supported by the mpi and nccl backends")
    keep = [r for r in range(size) if r not in excluded]
    is_default = target is world
    name = str(_world.group_count)
    _world.group_count += 1
    timeout = target._timeout
    global_ranks = list(range(len(keep))) if is_default else [get_process_group_ranks(target)[r] for r in keep]
    store = _shrunk_store(target._store, keep, seconds_of(timeout), f"group {name} (ranks {global_ranks})")
    new_pg = ProcessGroup(store, global_ranks, name, timeout, target._config)
    new_pg.bound_device_id = getattr(target, "bound_device_id", None)
    new_pg._kv_store = target._kv_store if is_default else None
    if is_default:
        others = [pg for pg in _world.groups if pg is not target]
        if others:
            logger.warning("Shrinking default group will destroy %d other process groups: %s. This is necessary "
                           "because shrinking the default group reassigns global ranks, making existing groups "
                           "inconsistent.", len(others), ", ".join(pg.name() for pg in others))
        for pg in others:
            _drop(pg)
    _drop(target)
    if is_default:
        _world.default_pg = new_pg
        _world.groups.insert(0, new_pg)
    else:
        _world.groups.append(new_pg)
    return new_pg


__all__ = ["shrink_group"]
