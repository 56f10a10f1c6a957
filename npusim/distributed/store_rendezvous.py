"""The key-value store of the default group: the one ``init_process_group(store=...)`` is given, or the one its
``init_method`` URL names, opened on every rank and checked to be one store shared by all of them.

MPI connects the ranks and carries every collective whatever store there is; the store is where the ranks (and
the user) keep small shared values: ``get_group_store()``, the keys a launcher or a library agrees on. Opening
it goes through MPI too, so a failure is told to every rank at once instead of leaving them waiting: rank 0
opens (or serves) the store first, the others then open theirs, and rank 0 writes a fresh token that every rank
must read back. A store that is not shared (a ``HashStore`` lives in one process; a ``FileStore`` path that is
not on a shared filesystem) fails that check on every rank, naming the ranks that could not read it.
"""
from __future__ import annotations

import errno
import secrets
import socket
from urllib.parse import urlparse, urlunparse

from .errors import DistError
from .stores import PrefixStore
from .url_rendezvous import master_from_env, query_to_dict, rendezvous

_TOKEN_KEY = "npusim/init_process_group/token"


def check_url(init_method: str, rank: int, world_size: int) -> None:
    """Argument errors of ``init_method`` seen before MPI starts: a scheme with no handler, a rank or world size
    in its query that is not MPI's, and (on rank 0, which serves a tcp store) an address not of this machine."""
    result = urlparse(init_method)
    query = query_to_dict(result.query)
    for name, value in (("rank", rank), ("world_size", world_size)):
        if name in query and value != -1 and int(query[name]) != value:
            raise ValueError(f"init_method={init_method!r} says {name}={query[name]}, but MPI gave this process "
                             f"{name} {value}: npusim's ranks get their rank and world size from the MPI launcher")
    address = (result.hostname, result.port) if result.scheme == "tcp" else None
    if result.scheme == "env" and master_from_env() is not None:
        address = master_from_env()
    if address is not None and address[0] is not None and rank in (-1, 0) and not _is_local(address[0]):
        raise ValueError(f"init_method={init_method!r}: rank 0 serves the key-value store at {address[0]}, which is "
                         f"not an address of this machine. npusim's ranks rendezvous through the MPI launcher, "
                         f"which starts rank 0 on the first machine it lists: name that machine's address (or "
                         f"leave init_method unset)")


def _is_local(host: str) -> bool:
    try:
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
            probe.bind((host, 0))
    except socket.gaierror:
        return True             # an unknown name: the store's own error says so, as torch's
    except OSError as e:
        return e.errno != errno.EADDRNOTAVAIL
    return True


def _without_rank_and_size(url: str) -> str:
    result = urlparse(url)
    query = {k: v for k, v in query_to_dict(result.query).items() if k not in ("rank", "world_size")}
    return urlunparse(result._replace(query="&".join(f"{k}={v}" for k, v in query.items())))


def _wants_store(init_method) -> bool:
    if init_method is None or init_method == "mpi://":
        return False
    return urlparse(init_method).scheme != "env" or master_from_env() is not None


def open_group_store(init_method, store, mpi_store, timeout):
    """The default group's key-value store on every rank (None when neither ``store`` nor a URL names one)."""
    if store is None and not _wants_store(init_method):
        return None
    rank, size = mpi_store.rank, mpi_store.size
    what = f"init_process_group on rank {rank} of {mpi_store.describe}"
    problem = None
    if store is None:
        url = _without_rank_and_size(init_method)
        outcome = None
        if rank == 0:
            try:
                store = next(rendezvous(url, 0, size, timeout=timeout))[0]
                outcome = ("ok", getattr(store, "port", None))
            except Exception as e:  # told to every rank, raised here as it is
                problem, outcome = e, ("error", f"{type(e).__name__}: {e}")
        outcome = mpi_store.broadcast_object(outcome, 0, what)
        if outcome[0] == "error":
            if problem is not None:
                raise problem
            raise DistError(f"init_process_group: rank 0 could not open the store of init_method="
                            f"{init_method!r}: {outcome[1]}")
        if rank != 0:
            parsed = urlparse(url)
            if parsed.scheme == "tcp" and parsed.port == 0:      # rank 0 picked a free port: MPI says which
                url = urlunparse(parsed._replace(netloc=f"{parsed.hostname}:{outcome[1]}"))
            try:
                store = next(rendezvous(url, rank, size, timeout=timeout))[0]
            except Exception as e:  # told to every rank below
                problem = e
        if store is not None:
            store = PrefixStore("default_pg", store)     # as torch: the group's keys apart from the user's
    _check_shared(store, mpi_store, rank, problem, what)
    return store


def _check_shared(store, mpi_store, rank: int, problem, what: str) -> None:
    token = None
    if rank == 0 and problem is None:
        token = secrets.token_hex(16)
        try:
            store.set(_TOKEN_KEY, token)
        except Exception as e:  # told to every rank below
            problem = e
    token = mpi_store.broadcast_object(token, 0, what)      # after rank 0's write
    seen = False
    if problem is None and token is not None:
        try:
            seen = store.check([_TOKEN_KEY]) and store.get(_TOKEN_KEY) == token.encode()
        except Exception as e:  # told to every rank below
            problem = e
    report = None if problem is None else f"{type(problem).__name__}: {problem}"
    everyone = mpi_store.all_gather_object((seen, report), what)
    if problem is not None:
        raise problem
    failed = [f"rank {r}: {text}" for r, (_, text) in enumerate(everyone) if text is not None]
    if failed:
        raise DistError(f"init_process_group: the store could not be opened on every rank ({'; '.join(failed)})")
    blind = [r for r, (ok, _) in enumerate(everyone) if not ok]
    if blind:
        raise DistError(f"init_process_group: the store is not shared by every rank: rank{'s' * (len(blind) > 1)} "
                        f"{', '.join(map(str, blind))} cannot read what rank 0 wrote into it (a HashStore lives in "
                        f"one process; a FileStore's file must be on a filesystem every rank sees)")
