"""The key-value semantics every store shares: one table of byte values and queues, safe across threads.

``HashStore`` uses a table directly, ``TCPStore``'s server keeps one for all its clients, and ``FileStore``
rebuilds one from its file's records (``changes`` then lists what an operation wrote, to append). The
blocking reads (``get``, ``wait``, a blocking ``queue_pop``) wait on a condition, bounded by a timeout.
"""
from __future__ import annotations

import threading
from collections import deque

from .errors import DistStoreError


class QueueEmptyError(DistStoreError):
    """``queue_pop(key, block=False)`` found the queue empty."""


class StoreTimeout(DistStoreError):
    """A blocking read ran past the store's timeout (the store words the message)."""

    def __init__(self, keys):
        super().__init__("Wait timeout")
        self.keys = list(keys)


def as_int(key: str, value: bytes) -> int:
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"add: the value of key '{key}' is not an integer: {bytes(value[:40])!r}") from None


class KeyValueTable:
    """Values by key, FIFO queues by key, and the condition that wakes blocked readers."""

    def __init__(self):
        self.values: dict[str, bytes] = {}
        self.queues: dict[str, deque] = {}
        self.changed = threading.Condition()
        self.changes = None     # a list while a FileStore records what an operation writes

    # --- writes (each recorded in ``changes`` as the file's record kinds: S set, D delete, Q push, P pop) ----
    def _put(self, key, value):
        self.values[key] = value
        if self.changes is not None:
            self.changes.append((b"S", key, value))

    def set(self, key: str, value: bytes) -> None:
        with self.changed:
            self._put(key, value)
            self.changed.notify_all()

    def multi_set(self, keys, values) -> None:
        with self.changed:
            for key, value in zip(keys, values):
                self._put(key, value)
            self.changed.notify_all()

    def add(self, key: str, amount: int) -> int:
        with self.changed:
            total = (as_int(key, self.values[key]) if key in self.values else 0) + amount
            self._put(key, str(total).encode())
            self.changed.notify_all()
            return total

    def append(self, key: str, value: bytes) -> None:
        with self.changed:
            self._put(key, self.values.get(key, b"") + value)
            self.changed.notify_all()

    def compare_set(self, key: str, expected: bytes, desired: bytes) -> bytes:
        """Set ``desired`` if the value is ``expected`` (a missing key counts as b""); return the value now."""
        with self.changed:
            current = self.values.get(key)
            if current is None:
                if expected:
                    return expected
            elif current != expected:
                return current
            self._put(key, desired)
            self.changed.notify_all()
            return desired

    def delete_key(self, key: str) -> bool:
        with self.changed:
            if key not in self.values:
                return False
            del self.values[key]
            if self.changes is not None:
                self.changes.append((b"D", key, b""))
            return True

    def queue_push(self, key: str, value: bytes) -> None:
        with self.changed:
            self.queues.setdefault(key, deque()).append(value)
            if self.changes is not None:
                self.changes.append((b"Q", key, value))
            self.changed.notify_all()

    def try_queue_pop(self, key: str):
        """The first value of the queue, or None when it is empty."""
        with self.changed:
            q = self.queues.get(key)
            if not q:
                return None
            value = q.popleft()
            if self.changes is not None:
                self.changes.append((b"P", key, b""))
            return value

    # --- reads --------------------------------------------------------------------------------------------
    def check(self, keys) -> bool:
        with self.changed:
            return all(k in self.values for k in keys)

    def num_keys(self) -> int:
        with self.changed:
            return len(self.values)

    def list_keys(self) -> list:
        with self.changed:
            return list(self.values)

    def queue_len(self, key: str) -> int:
        with self.changed:
            return len(self.queues.get(key, ()))

    def wait(self, keys, timeout_s: float) -> None:
        with self.changed:
            if not self.changed.wait_for(lambda: all(k in self.values for k in keys), timeout_s):
                raise StoreTimeout([k for k in keys if k not in self.values])

    def get(self, key: str, timeout_s: float) -> bytes:
        with self.changed:
            self.wait((key,), timeout_s)
            return self.values[key]

    def multi_get(self, keys, timeout_s: float) -> list:
        with self.changed:
            self.wait(keys, timeout_s)
            return [self.values[k] for k in keys]

    def queue_pop(self, key: str, block: bool, timeout_s: float) -> bytes:
        with self.changed:
            if block and not self.changed.wait_for(lambda: self.queues.get(key), timeout_s):
                raise StoreTimeout([key])
            value = self.try_queue_pop(key)
            if value is None:
                raise QueueEmptyError("queue is empty")
            return value

    # --- a FileStore's records ----------------------------------------------------------------------------
    def apply_record(self, kind: bytes, key: str, value: bytes) -> None:
        """Replay one record of a file (no notification: the FileStore holds the file lock)."""
        if kind == b"S":
            self.values[key] = value
        elif kind == b"D":
            self.values.pop(key, None)
        elif kind == b"Q":
            self.queues.setdefault(key, deque()).append(value)
        elif kind == b"P":
            q = self.queues.get(key)
            if q:
                q.popleft()
        else:
            raise ValueError(f"unknown record kind {kind!r}")
