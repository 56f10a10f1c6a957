"""``TCPStore``: a store served over TCP by the master process, used by every process that connects to it.

The master (``is_master=True``) runs a server thread with one table and a thread per connection; every
store, the master's own included, is a client. A connection that sends anything malformed is dropped
without disturbing the others. ``wait_for_workers`` makes the master wait until ``world_size`` stores
have connected.
"""
from __future__ import annotations

import socket
import threading
import time
import weakref
from datetime import timedelta

from .errors import DistNetworkError, DistStoreError
from .store_table import KeyValueTable, QueueEmptyError, StoreTimeout
from .store_wire import OK, QUEUE_EMPTY, REFUSED, TIMEOUT, VALUE_ERROR, WireError, encode, recv_frame
from .stores import DEFAULT_TIMEOUT, Store, _seconds

__all__ = ["TCPStore"]

# each op's argument types, checked on the server before the table sees them
_SIGNATURES = {
    "set": (str, bytes), "get": (str, float), "add": (str, int), "append": (str, bytes),
    "compare_set": (str, bytes, bytes), "check": (list,), "wait": (list, float), "delete_key": (str,),
    "num_keys": (), "list_keys": (), "multi_get": (list, float), "multi_set": (list, list),
    "queue_push": (str, bytes), "queue_pop": (str, bool, float), "queue_len": (str,), "hello": (),
}
_LIST_ITEMS = {"check": (str,), "wait": (str,), "multi_get": (str,), "multi_set": (str, bytes)}


def _valid(op, args) -> bool:
    types = _SIGNATURES.get(op)
    if types is None or len(args) != len(types):
        return False
    for i, (a, t) in enumerate(zip(args, types)):
        if t is int and (a.__class__ is bool or not isinstance(a, int)):
            return False
        if t is float and not (isinstance(a, float) and 0 <= a < 1e9):
            return False
        if not isinstance(a, t):
            return False
        if t is list:
            item = _LIST_ITEMS[op][i]
            if not all(isinstance(x, item) for x in a):
                return False
    return op != "multi_set" or len(args[0]) == len(args[1])


class _Server:
    """The master's server: a listening socket, a table, one thread per client."""

    def __init__(self, host: str, port: int):
        self.table = KeyValueTable()
        self.joined = 0
        self.closed = False
        self.conns: set = set()
        try:
            self.sock = socket.create_server((host, port), reuse_port=False)
        except OSError as e:
            raise DistNetworkError(f"The server socket has failed to listen on {host}:{port}: {e.strerror or e}") \
                from None
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, name="npusim-tcpstore-server", daemon=True).start()

    def _accept(self):
        while not self.closed:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.conns.add(conn)
            threading.Thread(target=self._serve, args=(conn,), name="npusim-tcpstore-client", daemon=True).start()

    def _serve(self, conn):
        try:
            while not self.closed:
                request = recv_frame(conn)
                if not request or not isinstance(request[0], str) or not _valid(request[0], request[1:]):
                    conn.sendall(encode(REFUSED, "malformed request"))
                    return
                conn.sendall(self._run(request[0], request[1:]))
        except (OSError, ConnectionError, WireError):
            pass
        finally:
            self.conns.discard(conn)
            conn.close()

    def _run(self, op, args) -> bytes:
        t = self.table
        try:
            if op == "hello":
                with t.changed:
                    self.joined += 1
                    t.changed.notify_all()
                return encode(OK, None)
            return encode(OK, getattr(t, op)(*args))
        except StoreTimeout as e:
            return encode(TIMEOUT, e.keys)
        except QueueEmptyError:
            return encode(QUEUE_EMPTY, None)
        except ValueError as e:
            return encode(VALUE_ERROR, str(e))

    def wait_for_workers(self, world_size: int, timeout_s: float) -> None:
        t = self.table
        with t.changed:
            if not t.changed.wait_for(lambda: self.joined >= world_size, timeout_s):
                raise DistStoreError(f"Timed out after {timeout_s:g} seconds waiting for clients. "
                                     f"{self.joined}/{world_size} clients joined.")

    def close(self):
        self.closed = True
        self.sock.close()
        for conn in list(self.conns):
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class TCPStore(Store):
    """A store over TCP: ``TCPStore(host_name, port, world_size=None, is_master=False,
    timeout=timedelta(seconds=300), wait_for_workers=True, multi_tenant=False, master_listen_fd=None,
    use_libuv=True)``. The master serves on ``port`` (0: any free port, see ``.port``)."""

    def __init__(self, host_name: str, port: int, world_size: int | None = None, is_master: bool = False,
                 timeout: timedelta = DEFAULT_TIMEOUT, wait_for_workers: bool = True, multi_tenant: bool = False,
                 master_listen_fd: int | None = None, use_libuv: bool = True):
        super().__init__()
        if not isinstance(host_name, str):
            raise TypeError(f"TCPStore(): host_name must be a str, not {type(host_name).__name__}")
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port < 65536:
            raise ValueError(f"TCPStore(): port must be an int in [0, 65535], got {port!r}")
        if master_listen_fd is not None:
            raise ValueError("TCPStore(): master_listen_fd is not supported; pass the port instead")
        self._timeout = timeout
        timeout_s = _seconds(timeout)
        self.host = host_name
        self._server = _Server(host_name, port) if is_master else None
        self.port = self._server.port if is_master else port
        self._lock = threading.Lock()
        self._sock = None
        try:
            self._connect(timeout_s)
            self._request("hello")
            if is_master and wait_for_workers and world_size is not None and world_size > 0:
                self._server.wait_for_workers(world_size, timeout_s)
        except BaseException:
            self._close()
            raise
        # the server lives as long as the master's store object
        self._finalizer = weakref.finalize(self, TCPStore._shut, self._sock, self._server)

    @property
    def libuvBackend(self) -> bool:     # noqa: N802 - torch's name
        return False

    def _connect(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                self._sock = socket.create_connection((self.host, self.port),
                                                      timeout=max(deadline - time.monotonic(), 0.01))
                self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                return
            except OSError as e:
                if time.monotonic() >= deadline:
                    raise DistNetworkError(
                        f"The client socket has timed out after {timeout_s * 1000:g}ms while trying to connect to "
                        f"({self.host}, {self.port}): {e.strerror or e}") from None
                time.sleep(0.05)

    def _request(self, op, *args, wait_s: float | None = None):
        message = encode(op, *args)
        limit = (wait_s if wait_s is not None else self._timeout.total_seconds()) + 30.0
        with self._lock:
            if self._sock is None:
                raise DistNetworkError("the TCPStore's connection is closed")
            try:
                self._sock.settimeout(limit)
                self._sock.sendall(message)
                reply = recv_frame(self._sock)
            except (OSError, ConnectionError, WireError) as e:
                raise DistNetworkError(f"TCPStore {op}: the connection to {self.host}:{self.port} failed: {e}. "
                                       f"Did the master's store shut down?") from None
        status, value = (reply + [None, None])[:2]
        if status == OK:
            return value
        if status == TIMEOUT:
            raise StoreTimeout(value or [])
        if status == QUEUE_EMPTY:
            raise QueueEmptyError("queue is empty")
        if status == VALUE_ERROR:
            raise ValueError(value)
        raise DistStoreError(f"TCPStore {op}: the server refused the request ({value})")

    def _do(self, op, *args):
        blocking = op in ("get", "wait", "multi_get", "queue_pop")
        return self._request(op, *args, wait_s=args[-1] if blocking else None)

    def _timeout_error(self, keys, timeout_s):
        return DistStoreError(f"wait timeout after {timeout_s * 1000:g}ms, keys: "
                              + ", ".join("/" + k for k in keys))

    def clone(self) -> "TCPStore":
        """Another connection to the same server (for another thread, as torch's clone)."""
        c = TCPStore.__new__(TCPStore)
        Store.__init__(c)
        c._timeout, c.host, c.port, c._server = self._timeout, self.host, self.port, None
        c._lock = threading.Lock()
        c._sock = None
        c._connect(self._timeout.total_seconds())
        c._finalizer = weakref.finalize(c, TCPStore._shut, c._sock, None)
        c._keep_server = self      # the master's store (and so its server) outlives its clones
        return c

    def _close(self):
        TCPStore._shut(self._sock, self._server)
        self._sock = None

    @staticmethod
    def _shut(sock, server):
        if sock is not None:
            sock.close()
        if server is not None:
            server.close()

    def __repr__(self):
        role = "master" if self._server is not None else "client"
        return f"TCPStore({role}, {self.host}:{self.port})"
