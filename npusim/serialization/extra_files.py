"""Extra files in archives: ``_extra_files`` and the process-wide hook.

``npusim.save(obj, f, _extra_files={"producer_info.json": "..."})`` stores each
entry as ``<archive>/extra/<name>``; a hook set with ``set_extra_files_hook``
(the analogue of ``SetExportModuleExtraFilesHook``) adds files to every archive
the process writes. Explicit ``_extra_files`` win over the hook on a name clash.
"""
from __future__ import annotations

import threading
from collections.abc import Mapping

_hook = None
_lock = threading.Lock()


def set_extra_files_hook(fn):
    """Call ``fn(obj)`` on every save; it returns ``{name: str | bytes}`` to add under ``extra/``.

    ``None`` removes the hook. Returns the hook it replaces (or None).
    """
    global _hook
    if fn is not None and not callable(fn):
        raise TypeError(f"set_extra_files_hook expects a callable or None, got {type(fn).__name__}")
    with _lock:
        previous, _hook = _hook, fn
    return previous


def get_extra_files_hook():
    return _hook


def check_name(name) -> str:
    """A file name under ``extra/``: a non-empty relative path without '..' parts."""
    if not isinstance(name, str):
        raise TypeError(f"extra file names must be str, got {type(name).__name__}")
    parts = name.split("/")
    if (not name or name.startswith("/") or "\\" in name or "\x00" in name
            or any(p in ("", ".", "..") for p in parts)):
        raise ValueError(f"invalid extra file name {name!r}: use a non-empty relative path without '.', '..', "
                         "backslashes or empty parts")
    return name


def as_bytes(name, value) -> bytes:
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"extra file {name!r} must be str or bytes, got {type(value).__name__}")


def files_to_write(obj, extra_files) -> dict:
    """``{name: bytes}`` for one save: the hook's files, then ``extra_files`` over them."""
    files = {}
    hook = _hook
    if hook is not None:
        produced = hook(obj)
        if produced is not None:
            if not isinstance(produced, Mapping):
                raise TypeError(f"the extra-files hook must return a dict of name -> str or bytes, got "
                                f"{type(produced).__name__}")
            for name, value in produced.items():
                files[check_name(name)] = as_bytes(name, value)
    if extra_files is not None:
        if not isinstance(extra_files, Mapping):
            raise TypeError(f"_extra_files must be a dict of name -> str or bytes, got {type(extra_files).__name__}")
        for name, value in extra_files.items():
            files[check_name(name)] = as_bytes(name, value)
    return files


def check_requested(extra_files) -> None:
    if not isinstance(extra_files, dict):
        raise TypeError(f"_extra_files must be a dict whose keys name the files to read, got "
                        f"{type(extra_files).__name__}")
    for name in extra_files:
        check_name(name)
