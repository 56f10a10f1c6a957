"""The user's allow-list for ``weights_only`` loading (torch.serialization's safe-globals API).

Each entry is a class or function, or a ``(obj, "module.qualname")`` pair
naming it as the checkpoint spells it. The built-in allow-list (tensors,
storages, dtypes, devices, containers) lives in ``allowed_globals``.
"""
from __future__ import annotations

import threading

_marked: list = []   # in insertion order, without duplicates
_lock = threading.Lock()


def _check_entry(entry):
    if isinstance(entry, tuple):
        if len(entry) != 2:
            raise ValueError(f"Expected tuple of length 2 (global, str of callable full path), but got tuple of "
                             f"length: {len(entry)}")
        if type(entry[1]) is not str:
            raise TypeError(f"Expected second item in tuple to be str of callable full path, but got: "
                            f"{type(entry[1])}")
        return entry
    if not (hasattr(entry, "__module__") and hasattr(entry, "__qualname__")):
        raise TypeError(f"add_safe_globals expects classes, functions or (global, 'module.name') tuples, got "
                        f"{entry!r}")
    return entry


def _as_list(safe_globals, fname):
    if not isinstance(safe_globals, (list, tuple, set, frozenset)):
        raise TypeError(f"{fname} expects a list of globals, got {type(safe_globals).__name__}")
    return [_check_entry(e) for e in safe_globals]


def add_safe_globals(safe_globals) -> None:
    """Mark the given globals as safe for ``weights_only`` load."""
    entries = _as_list(safe_globals, "add_safe_globals")
    with _lock:
        for e in entries:
            if e not in _marked:
                _marked.append(e)


def get_safe_globals() -> list:
    """The globals added with ``add_safe_globals`` (or an active ``safe_globals`` context)."""
    with _lock:
        return list(_marked)


def clear_safe_globals() -> None:
    """Forget every global added with ``add_safe_globals``."""
    with _lock:
        _marked.clear()


class safe_globals:
    """Context manager that allows the given globals for ``weights_only`` load while it is active."""

    def __init__(self, safe_globals):
        self.safe_globals = _as_list(safe_globals, "safe_globals")
        self._added = []

    def __enter__(self):
        with _lock:
            self._added = [e for e in self.safe_globals if e not in _marked]
            _marked.extend(self._added)
        return self

    def __exit__(self, *exc):
        with _lock:
            for e in self._added:
                if e in _marked:
                    _marked.remove(e)
        self._added = []
        return False


def user_allowed_globals() -> dict:
    """``{"module.qualname": obj}`` for the user's entries."""
    out = {}
    with _lock:
        entries = list(_marked)
    for e in entries:
        if isinstance(e, tuple):
            out[e[1]] = e[0]
        else:
            out[f"{e.__module__}.{e.__qualname__}"] = e
    return out
