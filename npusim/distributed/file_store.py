"""``FileStore``: a store in a file that every process of one machine (or a shared filesystem) opens.

The file is a log of records, each ``kind (1 byte) | key length (4) | key | value length (8) | value``
(kinds: S set, D delete, Q queue push, P queue pop). An operation takes an exclusive ``flock`` on the file,
replays the records it has not seen into its table, runs, and appends what it wrote; blocking reads poll.
A file that is not such a log (truncated, or written by something else) is a ``DistStoreError`` naming the
file and offset; nothing of it is trusted beyond its lengths.
"""
from __future__ import annotations

import fcntl
import os
import struct
import time

from .errors import DistStoreError
from .store_table import KeyValueTable, StoreTimeout
from .stores import Store

__all__ = ["FileStore"]

_HEAD = struct.Struct(">cI")
_VLEN = struct.Struct(">Q")
_POLL_S = 0.01


class FileStore(Store):
    """A store kept in the file ``file_name`` (created if missing). ``world_size`` is accepted as torch's."""

    def __init__(self, file_name: str, world_size: int = -1):
        super().__init__()
        if not isinstance(file_name, (str, os.PathLike)):
            raise TypeError(f"FileStore(): file_name must be a str, not {type(file_name).__name__}")
        self.path = os.fspath(file_name)
        self.world_size = world_size
        if os.path.isdir(self.path):
            raise DistStoreError(f"FileStore(): {self.path} is a directory, not a file")
        self._table = KeyValueTable()
        self._offset = 0
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        os.close(fd)

    def _refresh(self, f) -> None:
        """Replay the records past what this store has read (the whole file again if it shrank)."""
        size = os.fstat(f.fileno()).st_size
        if size < self._offset:
            self._table, self._offset = KeyValueTable(), 0
        f.seek(self._offset)
        data = f.read(size - self._offset)
        pos = 0
        while pos < len(data):
            start = pos
            try:
                kind, klen = _HEAD.unpack_from(data, pos)
                pos += _HEAD.size
                key = data[pos:pos + klen].decode("utf-8", "surrogatepass")
                if len(data) < pos + klen + _VLEN.size:
                    raise ValueError("truncated")
                pos += klen
                (vlen,) = _VLEN.unpack_from(data, pos)
                pos += _VLEN.size
                if len(data) < pos + vlen:
                    raise ValueError("truncated")
                value = data[pos:pos + vlen]
                pos += vlen
                self._table.apply_record(kind, key, value)
            except (struct.error, ValueError, UnicodeDecodeError) as e:
                raise DistStoreError(f"FileStore: {self.path} is not a store's file (a bad record at byte "
                                     f"{self._offset + start}: {e})") from None
        self._offset += len(data)

    def _locked(self, op, *args):
        with open(self.path, "r+b") as f:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX)
            try:
                self._refresh(f)
                t = self._table
                t.changes = []
                try:
                    result = getattr(t, op)(*args)
                finally:
                    changes, t.changes = t.changes, None
                if changes:
                    f.seek(0, os.SEEK_END)
                    f.write(b"".join(_record(*c) for c in changes))
                    f.flush()
                    self._offset = f.tell()
                return result
            finally:
                fcntl.flock(f.fileno(), fcntl.LOCK_UN)

    def _do(self, op, *args):
        if op not in ("get", "wait", "multi_get", "queue_pop"):
            return self._locked(op, *args)
        *rest, timeout_s = args
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                # poll without blocking in the table; the deadline is kept here
                return self._locked(op, *rest, 0.0)
            except StoreTimeout:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(_POLL_S)

    def clone(self) -> "FileStore":
        c = FileStore(self.path, self.world_size)
        c._timeout = self._timeout
        return c

    def __repr__(self):
        return f"FileStore({self.path!r})"


def _record(kind: bytes, key: str, value: bytes) -> bytes:
    k = key.encode("utf-8", "surrogatepass")
    return _HEAD.pack(kind, len(k)) + k + _VLEN.pack(len(value)) + value
