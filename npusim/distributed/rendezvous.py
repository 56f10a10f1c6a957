"""Where this process stands in the job, and the rendezvous its process groups agree through.

An MPI launcher (``mpiexec``, or ``python -m npusim.distributed.run`` on top of it)
starts the ranks and tells each one its rank and the world size in the environment;
MPI connects them. A ``Store`` is what the ranks of one group use to agree before
they move data (the role torch's Store plays): a check that every rank runs the same
collective on the same shapes, and small object exchanges (NCCL's unique id,
``broadcast_object_list``...), over an MPI communicator of its own. Every wait is
bounded by the group's timeout. mpi4py is imported only once a group needs it.
"""
from __future__ import annotations

import atexit
import hashlib
import importlib.util
import os
import pickle
import sys
import time

import numpy as np

from .errors import DistBackendError, DistError
from .work import poll_until

INSTALL_HINT = ("npusim.distributed needs mpi4py and an MPI library to run on more than one process: "
                "pip install 'npusim[distributed]' (or: pip install mpi4py mpich)")

# rank, world size, local rank, local world size, as each launcher names them (most specific first)
_LAUNCHER_ENV = (
    ("PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"),          # MPICH's hydra, Intel MPI
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
     "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"),            # Open MPI
    ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"),                 # torchrun-style
)


def launcher_env() -> dict | None:
    """``{"rank", "world_size", "local_rank", "local_world_size"}`` from the launcher's environment, or None."""
    env = os.environ
    for rank, size, local_rank, local_size in _LAUNCHER_ENV:
        if rank in env and size in env:
            try:
                r, n = int(env[rank]), int(env[size])
                lr = int(env.get(local_rank, r))
                ln = int(env.get(local_size, n))
            except ValueError:
                raise ValueError(f"the launcher's environment is not understood: {rank}={env[rank]!r}, "
                                 f"{size}={env[size]!r} must be integers") from None
            return {"rank": r, "world_size": n, "local_rank": lr, "local_world_size": ln}
    return None


def mpi_available() -> bool:
    return importlib.util.find_spec("mpi4py") is not None


def load_mpi():
    """``mpi4py.MPI`` (initialising MPI on first use), or a RuntimeError that says how to install it."""
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise RuntimeError(INSTALL_HINT) from e
    return MPI


# --- ending the job when a group is broken ----------------------------------------------------------------
_abort_reason = None


def abort_job_at_exit(reason: str) -> None:
    """After a timeout the MPI library cannot finish cleanly (MPI_Finalize would wait for the missing rank):
    at exit, end the whole job instead, so the launcher stops every rank at once."""
    global _abort_reason
    if _abort_reason is None:
        _abort_reason = reason
        atexit.register(_abort_job)


def _abort_job() -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    if "mpi4py.MPI" not in sys.modules:
        return
    first_line = _abort_reason.splitlines()[0]
    print(f"npusim.distributed: ending the MPI job, a process group was aborted: {first_line}",
          file=sys.stderr, flush=True)
    # the launcher relays this line through a pipe of its own, and the abort kills the relay at once: give it
    # a moment, or the one line that says why the job ended can be lost
    time.sleep(0.25)
    sys.modules["mpi4py.MPI"].COMM_WORLD.Abort(1)


def _digest(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=7).digest(), "little")


def _excerpts(signatures: list, width: int = 240) -> list:
    """Long signatures (a whole model's shapes) cut to the part around their first difference."""
    if all(len(s) <= width for s in signatures):
        return signatures
    first = signatures[0]
    start = min(next((i for i, (a, b) in enumerate(zip(first, s)) if a != b), min(len(first), len(s)))
                for s in signatures[1:]) if len(signatures) > 1 else 0
    start = max(0, start - width // 3)
    return [("..." if start else "") + s[start:start + width] + ("..." if start + width < len(s) else "")
            for s in signatures]


class Store:
    """Agreement and object exchange among the ranks of one group (MPI-backed; trivial for a group of one).

    ``describe`` names the group in messages; ``timeout_s`` bounds every wait.
    """

    def __init__(self, comm, timeout_s: float, describe: str):
        self.comm = comm
        self.rank = comm.Get_rank() if comm is not None else 0
        self.size = comm.Get_size() if comm is not None else 1
        self.timeout_s = timeout_s
        self.describe = describe
        self.aborted = None

    # --- waiting -------------------------------------------------------------------------------------------
    def _wait(self, requests, what: str, timeout_s: float | None = None) -> None:
        if self.aborted is not None:
            raise self.aborted_error(what)
        testall = load_mpi().Request.Testall
        limit = self.timeout_s if timeout_s is None else timeout_s
        poll_until(lambda: testall(requests), limit, lambda: self._timed_out(what, limit))

    def _timed_out(self, what: str, limit: float) -> None:
        msg = (f"{what} timed out after {limit:g} s waiting for the other ranks: a rank may have exited, "
               f"crashed, or be stuck in other code. The group is aborted: its later calls fail at once.")
        self.abort(msg)
        raise DistBackendError(msg)

    def aborted_error(self, what: str) -> DistBackendError:
        return DistBackendError(f"{what}: {self.describe} was aborted after an earlier failure: "
                                f"{self.aborted.split('. ')[0]}")

    def abort(self, reason: str) -> None:
        if self.aborted is None:
            self.aborted = reason
            if self.comm is not None:
                abort_job_at_exit(reason)

    # --- agreement -----------------------------------------------------------------------------------------
    def check_agreement(self, what: str, signature: str, timeout_s: float | None = None) -> None:
        """Raise on every rank unless all ranks of the group pass the same ``signature`` (a collective and its
        shapes): MPI would otherwise truncate, misread or hang on mismatched calls."""
        if self.size == 1:
            if self.aborted is not None:
                raise self.aborted_error(what)
            return
        MPI = load_mpi()
        h = _digest(signature)
        probe = np.array([h, -h], dtype=np.int64)
        self._wait([self.comm.Iallreduce(MPI.IN_PLACE, probe, MPI.MAX)], what, timeout_s)
        if probe[0] == h and probe[1] == -h:
            return
        signatures = self.all_gather_object(signature, what)
        listing = ", ".join(f"rank {r} runs {s}" for r, s in enumerate(_excerpts(signatures)))
        raise DistError(f"Detected mismatch between collectives on ranks of {self.describe}: {listing}. "
                        f"Every rank must call the same collectives in the same order, with tensors of the "
                        f"same shape and dtype.")

    def all_gather_ints(self, values, what: str) -> np.ndarray:
        """Every rank's ``values`` (the same count on each), as a (size, count) int64 array."""
        mine = np.asarray(values, dtype=np.int64).reshape(-1)
        if self.size == 1:
            return mine.reshape(1, -1)
        gathered = np.empty(self.size * mine.size, dtype=np.int64)
        self._wait([self.comm.Iallgather(mine, gathered)], what)
        return gathered.reshape(self.size, mine.size)

    # --- object exchange -------------------------------------------------------------------------------------
    def broadcast_object(self, obj, src: int, what: str = "broadcast_object"):
        if self.size == 1:
            return obj
        if self.rank == src:
            data = np.frombuffer(bytearray(pickle.dumps(obj)), dtype=np.uint8)
            count = np.array([data.size], dtype=np.int64)
        else:
            count = np.zeros(1, dtype=np.int64)
        self._wait([self.comm.Ibcast(count, root=src)], what)
        if self.rank != src:
            data = np.empty(int(count[0]), dtype=np.uint8)
        self._wait([self.comm.Ibcast(data, root=src)], what)
        return obj if self.rank == src else pickle.loads(data.tobytes())

    def all_gather_object(self, obj, what: str = "all_gather_object") -> list:
        if self.size == 1:
            return [obj]
        data = pickle.dumps(obj)
        sizes = np.zeros(self.size, dtype=np.int64)
        self._wait([self.comm.Iallgather(np.array([len(data)], dtype=np.int64), sizes)], what)
        width = int(sizes.max())
        mine = np.zeros(width, dtype=np.uint8)
        mine[:len(data)] = np.frombuffer(data, dtype=np.uint8)
        gathered = np.empty(width * self.size, dtype=np.uint8)
        self._wait([self.comm.Iallgather(mine, gathered)], what)
        return [pickle.loads(gathered[r * width:r * width + int(sizes[r])].tobytes()) for r in range(self.size)]

    # --- subgroups -------------------------------------------------------------------------------------------
    def split(self, ranks: list, timeout_s: float, describe: str):
        """A Store for the ranks listed (ranks of this store's group); None on the ranks left out.
        Every rank of this group must call it with the same ``ranks``."""
        self.check_agreement("new_group", f"new_group(ranks={ranks})")
        if self.comm is None:
            return Store(None, timeout_s, describe) if ranks == [0] else None
        comm = self.comm.Create(self.comm.Get_group().Incl(ranks))
        if comm == load_mpi().COMM_NULL:
            return None
        return Store(comm, timeout_s, describe)

    def split_disjoint(self, groups: list, timeout_s: float, describe: str):
        """A Store for the group of ``groups`` (disjoint lists of this store's ranks) that holds this rank; None
        when none does. Only this store's ranks take part; each must pass the same ``groups``."""
        self.check_agreement("split_group", f"split_group({groups})")
        mine = next((i for i, g in enumerate(groups) if self.rank in g), None)
        if self.comm is None:
            return None if mine is None else Store(None, timeout_s, describe)
        MPI = load_mpi()
        comm = self.comm.Split(MPI.UNDEFINED if mine is None else mine, self.rank)
        if comm == MPI.COMM_NULL:
            return None
        return Store(comm, timeout_s, describe)

    def free(self) -> None:
        if self.comm is not None and self.aborted is None:
            self.comm.Free()
        self.comm = None
