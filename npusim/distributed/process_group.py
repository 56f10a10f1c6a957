"""Process groups: the default (world) group, subgroups, and the calls that make, query and destroy them.

``init_process_group`` finds this process's rank and the world size through MPI
(the launcher's environment says whether one is needed), checks that every rank
asked for the same backends, and makes one backend instance per backend named,
serving the device types the config maps to it.
"""
from __future__ import annotations

import warnings
from datetime import timedelta
from typing import NewType
from urllib.parse import urlparse

from .backend import Backend, BackendOptions, create_backend, parse_backend_config
from .comm_profiling import profiled
from .process_group_methods import ProcessGroupMethods
from .rendezvous import INSTALL_HINT, Store, launcher_env, load_mpi, mpi_available
from .store_rendezvous import check_url, open_group_store
from .stores import PrefixStore
from .url_rendezvous import _rendezvous_handlers
from .work import seconds_of

default_pg_timeout = timedelta(minutes=30)

GroupName = NewType("GroupName", str)       # a process group's name, as torch types it

_NOT_INITIALIZED = "Default process group has not been initialized, please make sure to call init_process_group."


class ProcessGroup(ProcessGroupMethods):
    """A set of ranks that run collectives together (``torch.distributed.ProcessGroup``), with torch's collective
    methods taking option holders (``pg.allreduce([t], opts)``)."""

    def __init__(self, store: Store, global_ranks: list, name: str, timeout: timedelta, config: dict):
        self._store = store
        self._ranks = list(global_ranks)
        self._group_rank_of = {g: i for i, g in enumerate(self._ranks)}
        self._name = name
        self._timeout = timeout
        self._config = dict(config)
        self._backends = {}
        self._destroyed = False
        self._kv_store = None       # the key-value store (the default group's comes from init_process_group)
        instances = {}
        for device_type, backend_name in self._config.items():
            if backend_name not in instances:
                options = BackendOptions(store, store.rank, store.size, timeout, name, list(self._ranks))
                instances[backend_name] = create_backend(backend_name, options)
            self._backends[device_type] = instances[backend_name]

    # --- torch's ProcessGroup API ------------------------------------------------------------------------------
    def rank(self) -> int:
        return self._store.rank

    def size(self) -> int:
        return self._store.size

    def name(self) -> str:
        return self._name

    @property
    def group_name(self) -> str:
        return self._name

    def get_group_store(self):
        """The group's key-value store: ``init_process_group``'s ``store`` (or the one its ``init_method`` names),
        under a prefix of the group's name for a subgroup."""
        world = _world.default_pg
        if self._kv_store is None and world is not None and world._kv_store is not None and self is not world:
            self._kv_store = PrefixStore(self._name, world._kv_store)
        if self._kv_store is None:
            raise RuntimeError("this process group has no key-value store: npusim's groups meet through MPI; pass "
                               "init_process_group a store= or an init_method URL to have one")
        return self._kv_store

    def _get_backend(self, device):
        """The backend instance serving ``device`` (a device or its type name)."""
        device_type = device if isinstance(device, str) else device.type
        backend = self._backends.get(device_type)
        if backend is None:
            raise RuntimeError(f"No backend type associated with device type {device_type}")
        if backend.aborted is not None:
            self._store.abort(backend.aborted)        # the whole group stops, whichever backend timed out
        if self._store.aborted is not None:
            raise self._store.aborted_error(f"rank {self.rank()}")
        return profiled(backend)            # its collectives are profiler events while a profiler records

    def _describe(self) -> str:
        return self._store.describe

    def __repr__(self):
        pairs = ",".join(f"{d}:{b}" for d, b in self._config.items())
        return f"<npusim.distributed.ProcessGroup {self._name} ranks={self._ranks} backend={pairs}>"

    # --- teardown ----------------------------------------------------------------------------------------
    def _shutdown(self) -> None:
        if self._destroyed:
            return
        self._destroyed = True
        for backend in dict.fromkeys(self._backends.values()):
            backend.shutdown()
        self._store.free()
        self._kv_store = None       # a TCPStore rank 0 serves stops with its last reference


class _World:
    """The process-wide state: the default group and every group made since."""

    def __init__(self):
        self.default_pg = None
        self.groups = []            # every live group, the default one first
        self.group_count = 0


_world = _World()


class _GroupMemberMeta(type):
    @property
    def WORLD(cls):  # noqa: N802 - torch's name
        return _world.default_pg


class GroupMember(metaclass=_GroupMemberMeta):
    """``GroupMember.WORLD`` (the default group, None before init) and ``NON_GROUP_MEMBER``."""

    NON_GROUP_MEMBER = -100


class group(metaclass=_GroupMemberMeta):  # noqa: N801 - torch's name
    """``group.WORLD``: the default group."""


# --- lookups used by every call ----------------------------------------------------------------------------
def default_group() -> ProcessGroup:
    pg = _world.default_pg
    if pg is None:
        raise ValueError(_NOT_INITIALIZED)
    return pg


def resolve_group(group_arg):
    """The ProcessGroup a call runs on, or None when this rank is not a member of it."""
    if group_arg is None:
        return default_group()
    if group_arg is GroupMember.NON_GROUP_MEMBER:
        return None
    if not isinstance(group_arg, ProcessGroup):
        raise TypeError(f"group must be a npusim.distributed.ProcessGroup, got {type(group_arg).__name__}")
    if group_arg._destroyed:
        raise ValueError(f"Invalid process group specified: {group_arg!r} has been destroyed")
    default_group()
    return group_arg


def warn_not_in_group(op_name: str) -> None:
    global_rank = -1 if _world.default_pg is None else _world.default_pg.rank()
    warnings.warn(f"Running {op_name} on global rank {global_rank} which does not belong to the given group.",
                  stacklevel=3)


def to_group_rank(pg: ProcessGroup, global_rank=None, group_rank=None, default=None) -> int:
    """torch's ``_canonicalize_group_rank``: a global rank or a group rank, as a group rank."""
    if group_rank is not None:
        if global_rank is not None:
            raise ValueError("Can't specify both group_rank and global_rank")
        if not isinstance(group_rank, int) or not 0 <= group_rank < pg.size():
            raise ValueError(f"Group rank {group_rank} is not part of group {pg!r}")
        return group_rank
    if global_rank is None:
        if default is None:
            raise ValueError("Must specify global_rank or group_rank")
        global_rank = default
    rank = pg._group_rank_of.get(global_rank)
    if rank is None:
        raise ValueError(f"Global rank {global_rank} is not part of group {pg!r}")
    return rank


# --- the public calls ----------------------------------------------------------------------------------------
def is_available() -> bool:
    """The package works in every process; a group of more than one process also needs mpi4py."""
    return True


def is_mpi_available() -> bool:
    return mpi_available()


def is_nccl_available() -> bool:
    available = Backend.availability.get(Backend.NCCL)
    return available is not None and available()


def is_initialized() -> bool:
    return _world.default_pg is not None


def _check_valid_timeout(timeout) -> None:
    if not isinstance(timeout, timedelta):
        raise TypeError(f"Expected timeout argument to be of type datetime.timedelta, got {timeout}")


def _world_comm(world_size: int, rank: int, need_mpi: bool):
    """COMM_WORLD (checked against the sizes the caller gave), or None for a single process without MPI."""
    env = launcher_env()
    launched_size = env["world_size"] if env is not None else 1
    if not need_mpi and world_size in (-1, 1) and launched_size == 1:
        if rank not in (-1, 0):
            raise ValueError(f"rank {rank} is out of range for a world of 1 process")
        return None
    if not mpi_available():
        raise RuntimeError(INSTALL_HINT)
    MPI = load_mpi()
    comm = MPI.COMM_WORLD
    size, me = comm.Get_size(), comm.Get_rank()
    if world_size not in (-1, size):
        raise ValueError(f"init_process_group(world_size={world_size}), but MPI started {size} process"
                         f"{'es' if size != 1 else ''}: launch the script with "
                         f"`python -m npusim.distributed.run --nproc-per-node {world_size} script.py` "
                         f"(or `mpiexec -n {world_size} python script.py`)")
    if rank not in (-1, me):
        raise ValueError(f"init_process_group(rank={rank}), but MPI gave this process rank {me}: leave rank "
                         f"unset (the launcher assigns it)")
    return comm


def _check_init_method(init_method, rank: int, world_size: int) -> None:
    if not isinstance(init_method, str):
        raise RuntimeError(f"`url` must be a string. {type(init_method)}: {init_method}")
    scheme = urlparse(init_method).scheme
    if scheme not in _rendezvous_handlers and scheme != "mpi":
        raise RuntimeError(f"No rendezvous handler for {scheme}://")
    env = launcher_env()
    check_url(init_method, env["rank"] if env is not None else 0, env["world_size"] if env is not None else 1)


def _ranks_text(size: int) -> str:
    return "rank 0" if size == 1 else f"ranks 0..{size - 1}"


def init_process_group(backend=None, init_method=None, timeout=None, world_size: int = -1, rank: int = -1,
                       store=None, group_name: str = "", pg_options=None, device_id=None) -> None:
    """Join the default process group (``torch.distributed.init_process_group``).

    Rank and world size come from MPI (the launcher), and must match ``rank``/``world_size`` when given.
    ``store`` (with ``rank`` and ``world_size``, as torch asks) or an ``init_method`` URL (``tcp://host:port``,
    ``file:///path``, ``env://`` with ``MASTER_ADDR``/``MASTER_PORT``) gives the group a key-value store, checked
    to be shared by every rank; MPI still carries the collectives.
    ``backend``: None (mpi for cpu tensors; for npu tensors nccl when the npu runs on a GPU, else mpi),
    ``"mpi"``, ``"nccl"``, a registered name, or pairs such as ``"cpu:mpi,npu:nccl"``.
    """
    if _world.default_pg is not None:
        raise ValueError("trying to initialize the default process group twice!")
    if not (store is None or init_method is None):
        raise AssertionError("Cannot specify both init_method and store.")
    if store is not None:
        if not world_size > 0:
            raise AssertionError("world_size must be positive if using store")
        if not rank >= 0:
            raise AssertionError("rank must be non-negative if using store")
    if timeout is None:
        timeout = default_pg_timeout
    _check_valid_timeout(timeout)
    if init_method is not None:
        _check_init_method(init_method, rank, world_size)
    if pg_options is not None:
        raise ValueError("pg_options is not supported by the mpi and nccl backends")
    config = parse_backend_config(backend)
    need_mpi = Backend.MPI in config.values()
    comm = _world_comm(world_size, rank, need_mpi)
    size = comm.Get_size() if comm is not None else 1
    mpi_store = Store(comm.Dup() if comm is not None else None, seconds_of(timeout),
                      f"group 0 ({_ranks_text(size)})")
    spec = ",".join(f"{d}:{b}" for d, b in sorted(config.items()))
    try:
        mpi_store.check_agreement("init_process_group", f"init_process_group(backend={spec})")
        kv_store = open_group_store(init_method, store, mpi_store, timeout)
        pg = ProcessGroup(mpi_store, list(range(mpi_store.size)), "0", timeout, config)
    except BaseException:
        mpi_store.free()
        raise
    pg._kv_store = kv_store
    if device_id is not None:
        pg.bound_device_id = device_id
    _world.default_pg = pg
    _world.groups = [pg]
    _world.group_count = 1


def destroy_process_group(group=None) -> None:
    """Destroy ``group``, or every group (the default one included) when ``group`` is None."""
    if group is None or group is GroupMember.WORLD:
        if _world.default_pg is None:
            raise AssertionError("Process group cannot be None")
        for pg in reversed(_world.groups):
            pg._shutdown()
        _world.__init__()
        return
    if group is GroupMember.NON_GROUP_MEMBER:
        return
    if not isinstance(group, ProcessGroup) or group not in _world.groups:
        raise ValueError("Invalid process group specified")
    group._shutdown()
    _world.groups.remove(group)


def new_group(ranks=None, timeout=None, backend=None, pg_options=None, use_local_synchronization=False,
              group_desc=None, device_id=None, sort_ranks=True):
    """A group of the listed global ranks; every rank of the default group must call it.

    Returns ``GroupMember.NON_GROUP_MEMBER`` on ranks left out.
    """
    world = default_group()
    world_size = world.size()
    if timeout is None:
        timeout = world._timeout
    _check_valid_timeout(timeout)
    if ranks is None:
        ranks = list(range(world_size))
    ranks = [int(r) for r in ranks]
    if sort_ranks:
        ranks = sorted(ranks)
    if len(set(ranks)) != len(ranks):
        raise ValueError(f"ranks list must not contain duplicate entries, got {ranks}")
    if len(ranks) > world_size:
        raise ValueError("the new group's world size should be less or equal to the world size set by "
                         "init_process_group")
    for r in ranks:
        if not 0 <= r < world_size:
            raise ValueError(f"Rank {r} is out of range. Valid ranks are 0 to {world_size - 1} "
                             f"(world_size={world_size})")
    config = parse_backend_config(backend) if backend is not None else world._config
    name = str(_world.group_count)
    _world.group_count += 1
    sub_store = world._store.split(ranks, seconds_of(timeout), f"group {name} (ranks {ranks})")
    if sub_store is None:
        return GroupMember.NON_GROUP_MEMBER
    pg = ProcessGroup(sub_store, ranks, group_desc or name, timeout, config)
    _world.groups.append(pg)
    return pg


def get_rank(group=None) -> int:
    """This process's rank in ``group`` (the default group when None); -1 when it is not a member."""
    pg = resolve_group(group)
    return -1 if pg is None else pg.rank()


def get_world_size(group=None) -> int:
    """The number of ranks in ``group``; -1 when this process is not a member."""
    pg = resolve_group(group)
    return -1 if pg is None else pg.size()


def get_backend(group=None) -> str:
    pg = resolve_group(group)
    if pg is None:
        raise ValueError("Invalid process group specified")
    names = list(dict.fromkeys(pg._config.values()))
    if len(names) == 1:
        return Backend(names[0])
    return ",".join(f"{d}:{b}" for d, b in pg._config.items())


def get_process_group_ranks(group) -> list:
    pg = resolve_group(group)
    if pg is None:
        raise ValueError("Invalid process group specified")
    return list(pg._ranks)


def get_global_rank(group, group_rank: int) -> int:
    pg = resolve_group(group)
    if pg is None or not 0 <= group_rank < pg.size():
        raise ValueError(f"Group rank {group_rank} is not part of group {group!r}")
    return pg._ranks[group_rank]


def get_group_rank(group, global_rank: int) -> int:
    pg = resolve_group(group)
    if pg is None or global_rank not in pg._group_rank_of:
        raise ValueError(f"Global rank {global_rank} is not part of group {group!r}")
    return pg._group_rank_of[global_rank]


def get_node_local_rank(fallback_rank=None) -> int:
    """This process's rank among the ranks on its machine, from the launcher's environment."""
    env = launcher_env()
    if env is not None:
        return env["local_rank"]
    if fallback_rank is not None:
        return int(fallback_rank)
    raise RuntimeError("LOCAL_RANK is not in the environment. Consider passing fallback_rank to allow "
                       "`get_node_local_rank` to work, assuming you are not running in a multi-device context "
                       "and want the code to run locally instead.")


def get_pg_count() -> int:
    """How many process groups this process has made since ``init_process_group`` (the default one included)."""
    return _world.group_count


def get_backend_config(group=None) -> str:
    """The group's backend per device type, as ``"cpu:mpi,npu:mpi"``."""
    pg = resolve_group(group)
    if pg is None:
        raise ValueError("Invalid process group specified")
    return ",".join(f"{d}:{b}" for d, b in pg._config.items())
