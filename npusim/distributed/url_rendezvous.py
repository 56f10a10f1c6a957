"""``init_method`` URLs and their handlers (``torch.distributed.rendezvous``'s ``register_rendezvous_handler`` and
``rendezvous``): a handler turns a URL into ``(store, rank, world_size)``.

The built-in schemes are torch's: ``tcp://host:port`` (rank 0 serves a ``TCPStore`` there, the others connect),
``file:///path`` (a ``FileStore`` every rank opens) and ``env://`` (a ``TCPStore`` at ``MASTER_ADDR``:
``MASTER_PORT``). In npusim the ranks still find each other through MPI and move data over it: the store a URL
names is the group's key-value store (see ``store_rendezvous``), not its transport.
"""
from __future__ import annotations

import numbers
import os
from datetime import timedelta
from urllib.parse import urlparse, urlunparse

from .file_store import FileStore
from .tcp_store import TCPStore

__all__ = ["register_rendezvous_handler", "rendezvous"]

_rendezvous_handlers: dict = {}


def register_rendezvous_handler(scheme, handler):
    """Register ``handler`` (a generator function of ``(url, **kwargs)`` yielding ``(store, rank, world_size)``)
    for URLs of ``scheme``; a scheme registered twice is a RuntimeError, as torch's."""
    if scheme in _rendezvous_handlers:
        raise RuntimeError(f"Rendezvous handler for {scheme}:// already registered")
    _rendezvous_handlers[scheme] = handler


def query_to_dict(query: str) -> dict:
    """``"rank=0&world_size=1"`` as ``{"rank": "0", "world_size": "1"}``."""
    return {pair[0]: pair[1] for pair in (pair.split("=") for pair in filter(None, query.split("&")))}


def _rendezvous_helper(url: str, rank: int, world_size_opt, **kwargs):
    result = urlparse(url)
    if world_size_opt is None:
        world_size = -1
        if result.scheme == "env":
            rank = int(os.environ.get("RANK", rank))
            world_size = int(os.environ.get("WORLD_SIZE", world_size))
    else:
        world_size = world_size_opt
    if rank != -1 or world_size != -1 or world_size_opt is None:
        query_dict = query_to_dict(result.query)
        if "rank" in query_dict or "world_size" in query_dict:
            raise AssertionError(f"The url: {url} has node-specific arguments(rank, world_size) already.")
        if rank != -1:
            query_dict["rank"] = str(rank)
        if world_size != -1 or world_size_opt is None:
            query_dict["world_size"] = str(world_size)
        result = result._replace(query="&".join(f"{k}={v}" for k, v in query_dict.items()))
        url = urlunparse(result)
    if result.scheme not in _rendezvous_handlers:
        raise RuntimeError(f"No rendezvous handler for {result.scheme}://")
    return _rendezvous_handlers[result.scheme](url, **kwargs)


def rendezvous(url: str, rank: int = -1, world_size: int = -1, **kwargs):
    """The handler's iterator of ``(store, rank, world_size)`` for ``url`` (rank and world size added to its
    query), as torch's."""
    if not isinstance(url, (str, bytes)):
        raise RuntimeError(f"`url` must be a string. {type(url)}: {url}")
    if not isinstance(rank, numbers.Integral):
        raise RuntimeError(f"`rank` must be an integer. {rank}")
    if not isinstance(world_size, numbers.Integral):
        raise RuntimeError(f"`world_size` must be an integer. {world_size}")
    return _rendezvous_helper(url, rank, world_size, **kwargs)


def _rendezvous_error(msg: str) -> ValueError:
    return ValueError("Error initializing npusim.distributed using " + msg)


def _rank_and_size(query_dict: dict, error) -> tuple:
    if "rank" not in query_dict:
        raise error("rank parameter missing")
    if "world_size" not in query_dict:
        raise error("world size parameter missing")
    return int(query_dict["rank"]), int(query_dict["world_size"])


def _file_rendezvous_handler(url: str, **kwargs):
    def _error(msg):
        return _rendezvous_error("file:// rendezvous: " + msg)

    result = urlparse(url)
    if not result.path:
        raise _error("path missing")
    rank, world_size = _rank_and_size(query_to_dict(result.query), _error)
    yield FileStore(result.path, world_size), rank, world_size
    raise RuntimeError("Unable to perform rerendezvous using file:// method")


def tcp_store_for(hostname: str, port: int, rank: int, world_size: int, timeout) -> TCPStore:
    """Rank 0 serves the store, the others connect. The master does not wait for the workers here: the ranks
    meet over MPI right after (``store_rendezvous``), which bounds the wait and says who is missing."""
    if not 0 <= port < 2 ** 16:
        raise ValueError(f"port must have value from 0 to 65535 but was {port}.")
    return TCPStore(host_name=hostname, port=port, world_size=world_size, is_master=rank == 0, timeout=timeout,
                    wait_for_workers=False, multi_tenant=True)


def _tcp_rendezvous_handler(url: str, timeout: timedelta = timedelta(minutes=30), **kwargs):
    def _error(msg):
        return _rendezvous_error("tcp:// rendezvous: " + msg)

    result = urlparse(url)
    if result.port is None:
        raise _error("port number missing")
    rank, world_size = _rank_and_size(query_to_dict(result.query), _error)
    if result.hostname is None:
        raise AssertionError("hostname cannot be None")
    yield tcp_store_for(result.hostname, result.port, rank, world_size, timeout), rank, world_size
    raise RuntimeError("Unable to perform re-rendezvous using tcp:// method")


def master_from_env() -> tuple | None:
    """``(MASTER_ADDR, MASTER_PORT)`` when both are set, else None."""
    addr, port = os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT")
    if not addr or not port:
        return None
    return addr, int(port)


def _env_rendezvous_handler(url: str, timeout: timedelta = timedelta(minutes=30), **kwargs):
    def _error(msg):
        return _rendezvous_error("env:// rendezvous: " + msg)

    def _get_env_or_raise(env_var: str) -> str:
        value = os.environ.get(env_var)
        if not value:
            raise _error(f"environment variable {env_var} expected, but not set")
        return value

    query_dict = query_to_dict(urlparse(url).query)
    rank = int(query_dict["rank"]) if "rank" in query_dict else int(_get_env_or_raise("RANK"))
    world_size = int(query_dict["world_size"]) if "world_size" in query_dict else int(_get_env_or_raise("WORLD_SIZE"))
    master_addr = _get_env_or_raise("MASTER_ADDR")
    master_port = int(_get_env_or_raise("MASTER_PORT"))
    yield tcp_store_for(master_addr, master_port, rank, world_size, timeout), rank, world_size
    raise RuntimeError("Unable to perform re-rendezvous using env:// method")


register_rendezvous_handler("tcp", _tcp_rendezvous_handler)
register_rendezvous_handler("env", _env_rendezvous_handler)
register_rendezvous_handler("file", _file_rendezvous_handler)
