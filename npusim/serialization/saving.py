"""``npusim.save``: pickle the object, then write the archive (atomically when ``f`` is a path)."""
from __future__ import annotations

import os
import sys

import numpy as np

from ..core.dispatch.api_usage import log_api_usage_once
from ..core.c10.device import CPU
from ..core.c10.device_hooks import check_access, get_device_hooks
from .atomic_file import atomic_write, is_special_file, target_path
from .extra_files import files_to_write
from .pickler import pickle_object
from .zip_writer import ALIGNMENT, ZipWriter

FORMAT_VERSION = b"3\n"
MAX_RECORD_NAME = 0xFFFF  # zip headers store a name's length in 16 bits


def _note_api_usage(name: str) -> None:
    """Call site of the API-usage log for ``npusim.save`` (docs/api_usage_logging.md)."""
    log_api_usage_once(name)


def _host_bytes(storage):
    """A storage's bytes as a 1-D uint8 host array (no copy when the device keeps NumPy arrays)."""
    if storage.device is not CPU:
        check_access(storage.device)    # a forked child may not read its parent's device memory
        hooks = get_device_hooks(storage.device.type)
        if hooks is None or hooks.array_namespace(storage.device) is not np:
            storage = storage.cpu()
    return storage._bytes()


def _write_archive(out, archive_name: str, data_pkl: bytes, storages, extra: dict, *, sync_file=False) -> None:
    w = ZipWriter(out, archive_name, sync_file=sync_file)
    w.write_record("data.pkl", data_pkl)
    w.write_record(".format_version", b"1")
    w.write_record(".storage_alignment", str(ALIGNMENT).encode())
    w.write_record("byteorder", sys.byteorder.encode())
    for key, storage in storages.storages.items():
        w.write_record(f"data/{key}", _host_bytes(storage))
    for name, value in extra.items():
        w.write_record(f"extra/{name}", value)
    w.write_record("version", FORMAT_VERSION)
    w.finish()


def _check_record_names(archive_name: str, extra: dict) -> None:
    """Refuse extra-file names the zip format cannot hold, before anything is written."""
    for name in extra:
        full = f"{archive_name}/extra/{name}"
        try:
            n = len(full.encode("utf-8"))
        except UnicodeEncodeError:
            raise ValueError(f"invalid extra file name {name!r}: it cannot be encoded as UTF-8") from None
        if n > MAX_RECORD_NAME:
            raise RuntimeError(f"extra file name {name[:40]!r}... is too long: its zip record name takes {n} bytes "
                               f"encoded as UTF-8, but zip record names are limited to {MAX_RECORD_NAME} bytes")


def save(obj, f, _extra_files=None) -> None:
    """Save ``obj`` (tensors, storages, containers of them, state dicts...) to a path or binary file.

    The archive is a ZIP in PyTorch's layout (``torch.load`` reads it). Storages
    shared by several tensors are stored once. ``_extra_files`` maps names to
    str or bytes stored under ``extra/`` (with the files of the hook set by
    ``npusim.serialization.set_extra_files_hook``). Saving to a path is atomic:
    the previous file stays intact until the new one is complete on disk (a
    path that is not a regular file, such as a FIFO or ``/dev/null``, is
    written in place).
    """
    _note_api_usage("npusim.save")
    is_path = isinstance(f, (str, bytes, os.PathLike))
    if not is_path and not hasattr(f, "write"):
        raise AttributeError("expected 'f' to be string, path, or a file-like object with a 'write' attribute")
    extra = files_to_write(obj, _extra_files)
    path = target_path(f) if is_path else None
    archive_name = (os.path.splitext(os.path.basename(path))[0] or "archive") if is_path else "archive"
    _check_record_names(archive_name, extra)
    data_pkl, storages = pickle_object(obj)
    if is_path and is_special_file(path):
        with open(path, "wb") as out:  # a FIFO or device: replacing it with a file would destroy it
            _write_archive(out, archive_name, data_pkl, storages, extra)
    elif is_path:
        with atomic_write(path) as out:
            _write_archive(out, archive_name, data_pkl, storages, extra, sync_file=True)
    else:
        _write_archive(f, "archive", data_pkl, storages, extra)
        flush = getattr(f, "flush", None)
        if flush is not None:
            flush()
