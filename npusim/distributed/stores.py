"""Key-value stores, torch.distributed's: ``Store``, ``HashStore``, ``PrefixStore`` (``FileStore`` and
``TCPStore`` in their own files).

A store is where processes put and wait for small values while they set up (addresses, counters, barriers).
Values are bytes (a str is stored as its UTF-8 bytes); every blocking read is bounded by the store's
``timeout`` and raises ``DistStoreError`` past it. A subclass implements ``_do(op, *args)``, the one place an
operation reaches its table (in this process, over TCP or in a file); ``Store`` itself checks the arguments
and gives torch's signatures.
"""
from __future__ import annotations

import time
from datetime import timedelta

from .errors import DistStoreError
from .store_table import KeyValueTable, QueueEmptyError, StoreTimeout

__all__ = ["Store", "HashStore", "PrefixStore", "QueueEmptyError"]

DEFAULT_TIMEOUT = timedelta(seconds=300)


def _key(fname: str, key) -> str:
    if not isinstance(key, str):
        raise TypeError(f"{fname}(): the key must be a str, not {type(key).__name__}")
    return key


def _value(fname: str, value) -> bytes:
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"{fname}(): the value must be a str or bytes, not {type(value).__name__}")


def _keys(fname: str, keys) -> list:
    if isinstance(keys, str):
        raise TypeError(f"{fname}(): expected a sequence of keys, not a str")
    return [_key(fname, k) for k in keys]


def _seconds(timeout) -> float:
    if isinstance(timeout, timedelta):
        return timeout.total_seconds()
    raise TypeError(f"timeout must be a datetime.timedelta, not {type(timeout).__name__}")


class Store:
    """The store interface. Subclass it and override the methods, or use a concrete store."""

    def __init__(self):
        self._timeout = DEFAULT_TIMEOUT

    # --- what a concrete store implements -------------------------------------------------------------
    def _do(self, op: str, *args):
        raise RuntimeError("Not implemented.")

    def _timeout_error(self, keys, timeout_s: float) -> DistStoreError:
        return DistStoreError("Wait timeout")

    def _blocking(self, op: str, keys, *args, timeout=None):
        timeout_s = _seconds(timeout) if timeout is not None else self._timeout.total_seconds()
        try:
            return self._do(op, *args, timeout_s)
        except StoreTimeout as e:
            raise self._timeout_error(e.keys or keys, timeout_s) from None

    # --- torch's API -------------------------------------------------------------------------------------
    @property
    def timeout(self) -> timedelta:
        return self._timeout

    def set_timeout(self, timeout: timedelta) -> None:
        _seconds(timeout)
        self._timeout = timeout

    def set(self, key: str, value) -> None:
        self._do("set", _key("set", key), _value("set", value))

    def get(self, key: str) -> bytes:
        key = _key("get", key)
        return self._blocking("get", [key], key)

    def add(self, key: str, value: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"add(): the amount must be an int, not {type(value).__name__}")
        return self._do("add", _key("add", key), value)

    def append(self, key: str, value) -> None:
        self._do("append", _key("append", key), _value("append", value))

    def compare_set(self, key: str, expected_value, desired_value) -> bytes:
        return self._do("compare_set", _key("compare_set", key), _value("compare_set", expected_value),
                        _value("compare_set", desired_value))

    def check(self, keys) -> bool:
        return self._do("check", _keys("check", keys))

    def wait(self, keys, timeout: timedelta | None = None) -> None:
        keys = _keys("wait", keys)
        self._blocking("wait", keys, keys, timeout=timeout)

    def delete_key(self, key: str) -> bool:
        return self._do("delete_key", _key("delete_key", key))

    def num_keys(self) -> int:
        return self._do("num_keys")

    def list_keys(self) -> list:
        return self._do("list_keys")

    def multi_get(self, keys) -> list:
        keys = _keys("multi_get", keys)
        return self._blocking("multi_get", keys, keys)

    def multi_set(self, keys, values) -> None:
        keys = _keys("multi_set", keys)
        values = [_value("multi_set", v) for v in values]
        if len(keys) != len(values):
            raise ValueError(f"multi_set(): {len(keys)} keys but {len(values)} values")
        self._do("multi_set", keys, values)

    def queue_push(self, key: str, value) -> None:
        self._do("queue_push", _key("queue_push", key), _value("queue_push", value))

    def queue_pop(self, key: str, block: bool = True) -> bytes:
        key = _key("queue_pop", key)
        return self._blocking("queue_pop", [key], key, bool(block))

    def queue_len(self, key: str) -> int:
        return self._do("queue_len", _key("queue_len", key))

    def has_extended_api(self) -> bool:
        return True

    def barrier(self, key: str, world_size: int, timeout: timedelta | None = None) -> None:
        """Wait until ``world_size`` callers reached the barrier named ``key``."""
        start = time.monotonic()
        if self.add(f"{key}/num", 1) >= world_size:
            self.set(f"{key}/last", "1")
        limit = timeout if timeout is not None else self._timeout
        left = max(limit.total_seconds() - (time.monotonic() - start), 0.0)
        self.wait([f"{key}/last"], timedelta(seconds=left))

    def clone(self) -> "Store":
        raise RuntimeError("Not implemented.")


class HashStore(Store):
    """A store in this process's memory, shared by its threads (and by its clones)."""

    def __init__(self, _table: KeyValueTable | None = None):
        super().__init__()
        self._table = _table if _table is not None else KeyValueTable()

    def _do(self, op, *args):
        return getattr(self._table, op)(*args)

    def clone(self) -> "HashStore":
        c = HashStore(self._table)
        c._timeout = self._timeout
        return c


class PrefixStore(Store):
    """A view of ``store`` where every key is ``"<prefix>/<key>"``: groups share one store without clashing."""

    def __init__(self, prefix: str, store: Store):
        super().__init__()
        if not isinstance(store, Store):
            raise TypeError(f"PrefixStore(): store must be a Store, not {type(store).__name__}")
        self._prefix = _key("PrefixStore", prefix)
        self._store = store
        self._timeout = store.timeout

    @property
    def underlying_store(self) -> Store:
        return self._store

    def _k(self, key: str) -> str:
        return f"{self._prefix}/{key}"

    def set_timeout(self, timeout: timedelta) -> None:
        super().set_timeout(timeout)
        self._store.set_timeout(timeout)

    def set(self, key, value):
        self._store.set(self._k(_key("set", key)), value)

    def get(self, key):
        return self._store.get(self._k(_key("get", key)))

    def add(self, key, value):
        return self._store.add(self._k(_key("add", key)), value)

    def append(self, key, value):
        self._store.append(self._k(_key("append", key)), value)

    def compare_set(self, key, expected_value, desired_value):
        return self._store.compare_set(self._k(_key("compare_set", key)), expected_value, desired_value)

    def check(self, keys):
        return self._store.check([self._k(k) for k in _keys("check", keys)])

    def wait(self, keys, timeout=None):
        self._store.wait([self._k(k) for k in _keys("wait", keys)], timeout)

    def delete_key(self, key):
        return self._store.delete_key(self._k(_key("delete_key", key)))

    def num_keys(self):
        return self._store.num_keys()       # torch's: the underlying store's count

    def list_keys(self):
        head = self._prefix + "/"
        return [k[len(head):] for k in self._store.list_keys() if k.startswith(head)]

    def multi_get(self, keys):
        return self._store.multi_get([self._k(k) for k in _keys("multi_get", keys)])

    def multi_set(self, keys, values):
        self._store.multi_set([self._k(k) for k in _keys("multi_set", keys)], values)

    def queue_push(self, key, value):
        self._store.queue_push(self._k(_key("queue_push", key)), value)

    def queue_pop(self, key, block=True):
        return self._store.queue_pop(self._k(_key("queue_pop", key)), block)

    def queue_len(self, key):
        return self._store.queue_len(self._k(_key("queue_len", key)))

    def clone(self):
        return PrefixStore(self._prefix, self._store.clone())
