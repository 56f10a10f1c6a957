"""``npusim.load``: open the archive, check its records, restore storages, unpickle the tree."""
from __future__ import annotations

import io
import mmap as _mmap
import os
import pickle
import sys
import warnings

import numpy as np

from ..core.dispatch.api_usage import log_api_usage_once
from ..core.c10.storage import UntypedStorage
from . import locations as L
from .allowed_globals import builtin_globals, unsupported_torch_global
from .errors import ArchiveError, UnpicklingError
from .extra_files import check_requested
from .rebuild import loaded_typed_storage
from .restricted_unpickler import DisallowedGlobal, RestrictedUnpickler, map_global
from .torch_names import StorageType, UntypedStorageType
from .zip_reader import ZipReader

MAX_FORMAT_VERSION = 10  # the newest archive format torch 2.13 reads (kMaxSupportedFileFormatVersion)
MMAP_ALIGNMENT = 64

_UNSAFE_MESSAGE = ("Re-running `npusim.load` with `weights_only` set to `False` will likely succeed, but it can "
                   "result in arbitrary code execution. Do it only if you got the file from a trusted source.")


def _note_api_usage(name: str) -> None:
    """Call site of the API-usage log for ``npusim.load`` (docs/api_usage_logging.md)."""
    log_api_usage_once(name)


def weights_only_message(message: str) -> str:
    return ("Weights only load failed. This file can still be loaded, to do so you have two options, do those "
            f"steps only if you trust the source of the checkpoint. \n\t(1) {_UNSAFE_MESSAGE}\n\t(2) Alternatively, "
            "to load with `weights_only=True` please check the recommended steps in the following error message."
            f"\n\tWeightsUnpickler error: {message}")


class StorageLoader:
    """Turns persistent ids into storages: reads each ``data/<key>`` once and puts it where it belongs."""

    def __init__(self, reader: ZipReader, map_location, byteorder: str, mapped=None):
        self._reader = reader
        self._map_location = map_location
        self._swap = byteorder != sys.byteorder
        self._mapped = mapped
        self._cache: dict[str, tuple] = {}
        self._targets: dict = {}  # location tag -> checked target device

    def persistent_load(self, pid):
        if not isinstance(pid, tuple) or len(pid) != 5:
            raise UnpicklingError(f"a storage's persistent id must be a tuple ('storage', type, key, location, numel), "
                                  f"got {type(pid).__name__} of length {len(pid) if isinstance(pid, tuple) else '-'}")
        typename, storage_type, key, location, numel = pid
        if isinstance(typename, bytes):
            typename = typename.decode("ascii", "replace")
        if typename != "storage":
            raise UnpicklingError(f"Only persistent_load of storage is allowed, but got {typename!r}")
        if not isinstance(storage_type, (StorageType, UntypedStorageType)):
            raise UnpicklingError(f"a storage's persistent id must name a storage type, got "
                                  f"{type(storage_type).__name__}")
        if isinstance(key, bytes):
            key = key.decode("ascii", "replace")
        if isinstance(location, bytes):
            location = location.decode("ascii", "replace")
        if type(key) is not str or type(location) is not str:
            raise UnpicklingError("a storage's key and location must be strings")
        if type(numel) is not int or numel < 0:
            raise UnpicklingError(f"a storage's element count must be a non-negative int, got {numel!r}"
                                  if type(numel) is int else
                                  f"a storage's element count must be a non-negative int, got {type(numel).__name__}")
        dtype = storage_type.dtype
        cached = self._cache.get(key)
        if cached is None:
            storage = self._load_storage(key, dtype, numel, location)
            self._cache[key] = (storage, dtype)
        else:
            storage, first_dtype = cached
            if first_dtype is not dtype:
                raise ArchiveError(f"storage data/{key} is used both as {first_dtype.name} and as {dtype.name}: "
                                   "the archive is corrupt")
        if isinstance(storage_type, UntypedStorageType):
            return storage
        return loaded_typed_storage(storage, dtype, f"data/{key}")

    def _load_storage(self, key: str, dtype, numel: int, location: str) -> UntypedStorage:
        name = f"data/{key}"
        rec = self._reader.record(name)
        nbytes = numel * dtype.itemsize
        if not nbytes <= rec.size < nbytes + dtype.itemsize:
            raise ArchiveError(f"record {name} holds {rec.size} bytes, but the pickle describes a storage of {numel} "
                               f"{dtype.name} elements ({nbytes} bytes): the archive is corrupt")
        map_location = self._map_location
        target = None
        if not callable(map_location):
            target = self._targets.get(location)
            if target is None:
                target = self._targets[location] = L.target_device(L.mapped_location(map_location, location))
        host, fresh = self._read(rec)
        if self._swap and dtype.itemsize > 1:
            usable = (rec.size // dtype.itemsize) * dtype.itemsize
            host[:usable].view(f"u{dtype.itemsize}").byteswap(inplace=True)
        if target is not None:
            return L.storage_on(host, target, adopt=fresh)
        cpu_storage = L.storage_on(host, L.CPU, adopt=fresh)
        result = map_location(cpu_storage, location)
        if result is None:
            return L.storage_on(host, L.target_device(location), adopt=False)
        return L.check_restored(result, location)

    def _read(self, rec):
        """The record's bytes as a 1-D uint8 array, and whether that array is a fresh copy."""
        if self._mapped is not None:
            start = self._reader.data_offset(rec)
            if rec.method != 0:
                raise ArchiveError(f"mmap=True needs uncompressed records, but record {rec.name} is compressed: load "
                                   "with mmap=False")
            if start % MMAP_ALIGNMENT:
                raise ArchiveError(f"mmap=True needs records aligned to {MMAP_ALIGNMENT} bytes (as npusim.save and "
                                   f"torch.save write them), but record {rec.name} starts at offset {start}: load "
                                   "with mmap=False")
            if rec.size == 0:
                return np.empty(0, np.uint8), True
            return np.frombuffer(self._mapped, np.uint8, count=rec.size, offset=start), False
        self._reader.check_readable(rec)  # sizes and offsets hold before anything is allocated
        host = np.empty(rec.size, np.uint8)
        self._reader.read_into(rec, memoryview(host))
        return host, True


class TrustedUnpickler(pickle.Unpickler):
    """``weights_only=False``: any global, with torch's names mapped to npusim's."""

    def __init__(self, file, persistent_load):
        super().__init__(file, encoding="utf-8")
        self._persistent_load = persistent_load

    def persistent_load(self, pid):
        return self._persistent_load(pid)

    def find_class(self, module, name):
        mapped_module, mapped_name = map_global(module, name)
        full = f"{mapped_module}.{mapped_name}"
        obj = builtin_globals().get(full)
        if obj is not None:
            return obj
        unsupported = unsupported_torch_global(full)
        if unsupported is not None:
            raise unsupported
        if mapped_module == "torch" or mapped_module.startswith("torch."):
            raise UnpicklingError(f"the archive needs the PyTorch global {full}, which npusim cannot map")
        return super().find_class(module, name)


def _open(f):
    """``(binary file, should_close, description, path or None)``."""
    if isinstance(f, (str, bytes, os.PathLike)):
        path = os.fspath(f)
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        return open(path, "rb"), True, f"'{path}'", path
    if not (hasattr(f, "read") and hasattr(f, "seek")):
        raise AttributeError(f"'{type(f).__name__}' object has no attribute 'seek'. You can only npusim.load from a "
                             "file that is seekable. Please pre-load the data into a buffer like io.BytesIO and try "
                             "to load from it instead.")
    seekable = getattr(f, "seekable", None)
    if seekable is not None and not seekable():
        raise io.UnsupportedOperation("You can only npusim.load from a file that is seekable. Please pre-load the "
                                      "data into a buffer like io.BytesIO and try to load from it instead.")
    return f, False, "the file object", None


def _check_records(reader: ZipReader) -> str:
    """Validate the format records; return the byte order of the data."""
    if reader.has("constants.pkl"):
        raise ArchiveError("this is a TorchScript archive (torch.jit.save), which npusim.load does not read")
    version_name = "version" if reader.has("version") else ".data/version"
    if not reader.has(version_name):
        raise ArchiveError("the archive has no 'version' record: it was not written by npusim.save or torch.save, "
                           "or it is corrupt")
    raw = reader.read(version_name)
    try:
        version = int(raw.decode("ascii").strip())
    except (UnicodeDecodeError, ValueError):
        raise ArchiveError(f"the archive's version record is not a number: {raw[:32]!r}") from None
    if not 1 <= version <= MAX_FORMAT_VERSION:
        raise ArchiveError(f"the archive has format version {version}; npusim.load reads versions 1 to "
                           f"{MAX_FORMAT_VERSION}")
    if not reader.has("data.pkl"):
        raise ArchiveError("the archive has no 'data.pkl' record: it was not written by npusim.save or "
                           "torch.save, or it is corrupt")
    if not reader.has("byteorder"):
        return "little"
    order = reader.read("byteorder")
    if order not in (b"little", b"big"):
        raise ArchiveError(f"Unknown endianness type: {order[:32].decode('latin-1')!r} (the byteorder record must "
                           "be 'little' or 'big')")
    return order.decode("ascii")


_TRUE_VALUES = ("1", "y", "yes", "true")


def _environment_says(setting: str) -> bool:
    """torch's switch ``TORCH_<setting>`` or npusim's ``NPUSIM_<setting>`` is on."""
    return any(os.environ.get(prefix + setting, "0").lower() in _TRUE_VALUES for prefix in ("TORCH_", "NPUSIM_"))


def _resolve_weights_only(weights_only):
    """The weights_only in force: the argument (default True), overridden as torch's environment switches do."""
    not_given = weights_only is None
    force_on = _environment_says("FORCE_WEIGHTS_ONLY_LOAD")
    force_off = _environment_says("FORCE_NO_WEIGHTS_ONLY_LOAD")
    if force_on and force_off:
        raise RuntimeError("Only one of `TORCH_FORCE_WEIGHTS_ONLY_LOAD` or `TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD` "
                           "should be set, but both were set.")
    if force_on:
        return True
    if force_off and not_given:   # an explicit argument wins over the environment, as in torch
        warnings.warn("Environment variable TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD detected, since the`weights_only` "
                      "argument was not explicitly passed to `npusim.load`, forcing weights_only=False.",
                      UserWarning, stacklevel=3)
        return False
    return True if not_given else weights_only


def load(f, map_location=None, weights_only=None, _extra_files=None, mmap=False):
    """Load an object saved with ``npusim.save`` or ``torch.save`` from a path or binary file.

    ``map_location``: a str or ``npusim.device`` (where every storage goes), a
    dict remapping location tags (``{"npu:1": "npu:0"}``), or a callable
    ``fn(storage, location)`` returning a storage or None. ``weights_only``
    (True when not given; ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1`` or ``NPUSIM_FORCE_NO_WEIGHTS_ONLY_LOAD=1`` make
    it False when not given, ``..._FORCE_WEIGHTS_ONLY_LOAD=1`` make it True always, as torch's): only tensors, storages, dtypes, devices, primitive
    containers and globals allowed with ``npusim.serialization.add_safe_globals``
    are loaded; False runs arbitrary pickled code, so use it only for files you
    trust. ``_extra_files``: a dict whose keys name files under ``extra/``;
    their stored bytes are filled in. ``mmap``: map tensor data from the file
    instead of reading it (``f`` must be a path).
    """
    _note_api_usage("npusim.load")
    L.check_map_location(map_location)
    if _extra_files is not None:
        check_requested(_extra_files)
    weights_only = _resolve_weights_only(weights_only)
    if not isinstance(weights_only, bool):
        raise TypeError(f"weights_only must be a bool, got {type(weights_only).__name__}")
    mmap = bool(mmap)
    if mmap and not isinstance(f, (str, bytes, os.PathLike)):
        raise ValueError("f must be a file path in order to use the mmap argument")
    file, should_close, description, path = _open(f)
    try:
        reader = ZipReader(file, description)
        byteorder = _check_records(reader)
        extra = {}
        if _extra_files is not None:
            for name in _extra_files:
                rel = "extra/" + name
                if not reader.has(rel):
                    stored = sorted(n[len("extra/"):] for n in reader.names() if n.startswith("extra/"))
                    raise ArchiveError(f"the archive has no extra file {name!r} (its extra files: "
                                       f"{', '.join(stored) if stored else 'none'})")
                extra[name] = reader.read(rel)
        mapped = None
        if mmap:
            if reader.file_size == 0:
                raise ArchiveError(f"{description} is empty")
            mapped = _mmap.mmap(file.fileno(), 0, access=_mmap.ACCESS_COPY)
        loader = StorageLoader(reader, map_location, byteorder, mapped)
        data = reader.read("data.pkl")
        if weights_only:
            try:
                result = RestrictedUnpickler(data, loader.persistent_load).load()
            except DisallowedGlobal as e:
                raise UnpicklingError(weights_only_message(str(e))) from None
        else:
            try:
                result = TrustedUnpickler(io.BytesIO(data), loader.persistent_load).load()
            except EOFError:
                raise UnpicklingError("data.pkl is truncated: it ends before its STOP opcode") from None
    finally:
        if should_close:
            file.close()
    if _extra_files is not None:
        _extra_files.update(extra)
    return result
