"""Pickling an object tree the way ``torch.save`` does, without torch.

Tensors reduce to ``torch._utils._rebuild_tensor_v2(storage, offset, size,
stride, requires_grad, OrderedDict()[, metadata])``; each storage becomes a
persistent id ``('storage', torch.<X>Storage, key, location, numel)`` and its
bytes go to ``data/<key>`` once, however many tensors view it. Dtypes, devices
and sizes are written as ``torch.float32``, ``torch.device``, ``torch.Size``.
Protocol 2, like torch.
"""
from __future__ import annotations

import io
import pickle
import types
from collections import OrderedDict

from ..api.typed_storage import TypedStorage
from ..core.c10 import dtype as _dt
from ..core.c10 import limited_dtypes as _limited
from ..core.c10.device import CPU, device as _device
from ..core.c10.storage import UntypedStorage
from ..core.tensor import Size, Tensor
from .backend_meta import get_tensor_metadata
from . import torch_names as N

PROTOCOL = 2


def location_tag(storage: UntypedStorage) -> str:
    """Where a storage lives, as archives record it: ``cpu``, ``npu:0``."""
    dev = storage.device
    if dev is CPU:
        return "cpu"
    return dev.type if dev.index is None else f"{dev.type}:{dev.index}"


class _StorageRef:
    """A tensor's storage seen as its dtype (becomes a typed persistent id)."""

    __slots__ = ("storage", "dtype")

    def __init__(self, storage, dtype):
        self.storage = storage
        self.dtype = dtype


class SavedStorages:
    """The storages an archive holds: one key per allocation, in first-use order."""

    def __init__(self):
        self._key_of_root: dict[int, str] = {}
        self.storages: dict[str, UntypedStorage] = {}
        self._dtypes: dict[str, object] = {}

    def persistent_id(self, storage: UntypedStorage, dtype, typed: bool):
        root_id = id(storage._root)
        key = self._key_of_root.get(root_id)
        if key is None:
            key = self._key_of_root[root_id] = str(len(self._key_of_root))
            self.storages[key] = storage
            self._dtypes[key] = dtype
        elif self._dtypes[key] is not dtype:
            raise RuntimeError("Cannot save multiple tensors or storages that view the same data as different types")
        storage_type = N.STORAGE_TYPE_NAME[dtype] if typed else N.TORCH_UNTYPED_STORAGE
        return ("storage", storage_type, key, location_tag(storage), storage.nbytes() // dtype.itemsize)


def _tensor_state(t: Tensor):
    """The attributes torch would pickle with a tensor (its __dict__ without the backend metadata)."""
    d = t.__dict__
    if not d:
        return None
    state = {k: v for k, v in d.items() if k != "_backend_meta"}
    return state or None


_plain_classes = frozenset({str, int, float, bool, type(None), tuple, list, dict, OrderedDict, bytes, Tensor,
                            _device, _dt.dtype, Size})


class _TorchReductions:
    """torch's reductions of tensors, storages, devices and sizes (shared by both picklers)."""

    def _setup(self, storages: SavedStorages):
        self._storages = storages
        self._parameter_class = None
        self.used_globals = set()  # the torch stand-ins written (each appears once: later uses hit the memo)

    def _use(self, stand_in):
        self.used_globals.add(stand_in)
        return stand_in

    def persistent_id(self, obj):  # called for every object: keep the miss cheap
        cls = obj.__class__
        if cls is _StorageRef:
            pid = self._storages.persistent_id(obj.storage, obj.dtype, True)
        elif cls in _plain_classes:
            return None
        elif isinstance(obj, UntypedStorage):
            pid = self._storages.persistent_id(obj, _dt.uint8, False)
        elif isinstance(obj, TypedStorage) and obj.dtype in N.STORAGE_TYPE_NAME:   # saved as torch saves one
            pid = self._storages.persistent_id(obj._untyped_storage, obj.dtype, True)
        else:
            return None
        self._use(pid[1])
        return pid

    def reducer_override(self, obj):
        if isinstance(obj, Tensor):
            return self._reduce_tensor(obj)
        cls = obj.__class__
        if cls is _device:
            return (self._use(N.TORCH_DEVICE), (obj.type,) if obj.index is None else (obj.type, obj.index))
        if cls is Size:
            return (self._use(N.TORCH_SIZE), (tuple(obj),))
        if cls is _dt.dtype:
            return self._reduce_dtype(obj)
        return NotImplemented

    def _reduce_dtype(self, obj):
        return NotImplemented

    def _reduce_tensor(self, t: Tensor):
        param_cls = self._parameter_class
        if param_cls is None:
            from ..nn.parameter import Parameter
            param_cls = self._parameter_class = Parameter
        state = _tensor_state(t)
        if isinstance(t, param_cls):
            args = (t.detach(), t.requires_grad, OrderedDict())
            if state is None:
                return (self._use(N.REBUILD_PARAMETER), args)
            return (self._use(N.REBUILD_PARAMETER_WITH_STATE), args + (state,))
        stride = t.stride()
        if stride and min(stride) < 0:  # torch has no negative strides: store such a view as a copy
            t = t.contiguous()
            stride = t.stride()
        rebuild = N.REBUILD_TENSOR_V2
        if t.dtype in _limited.SUB_BYTE_INTS + _limited.SUB_BYTE_UINTS:   # torch cannot save them either
            raise KeyError(f"dtype {t.dtype} is not recognized")
        if t.dtype in N.STORAGE_TYPE_NAME:
            args = (_StorageRef(t.untyped_storage(), t.dtype), t.storage_offset(), tuple(t.shape), stride,
                    t.requires_grad, OrderedDict())
        else:   # a dtype without a legacy storage class (complex32): torch's v3, an untyped storage plus the dtype
            rebuild = N.REBUILD_TENSOR_V3
            args = (t.untyped_storage(), t.storage_offset(), tuple(t.shape), stride, t.requires_grad, OrderedDict(),
                    t.dtype)
        metadata = get_tensor_metadata(t)
        if metadata:
            args += (metadata,)
        if type(t) is Tensor and state is None:
            return (self._use(rebuild), args)
        new_type = self._use(N.TORCH_TENSOR) if type(t) is Tensor else type(t)
        return (self._use(N.REBUILD_FROM_TYPE_V2), (self._use(rebuild), new_type, args, state))


class _FastPickler(_TorchReductions, pickle.Pickler):
    """The C pickler. Stand-ins are saved under their own module's name and renamed afterwards."""

    def __init__(self, file, storages):
        pickle.Pickler.__init__(self, file, protocol=PROTOCOL)
        self._setup(storages)
        self.used_dtypes = set()

    def _reduce_dtype(self, obj):
        self.used_dtypes.add(obj)
        return obj.name  # a bare global: npusim.core.c10.dtype.<name>, renamed to torch.<name>


class _PortablePickler(_TorchReductions, pickle._Pickler):
    """The pure-Python pickler, which writes torch's names directly (slower; used when renaming is ambiguous)."""

    dispatch = dict(pickle._Pickler.dispatch)

    def __init__(self, file, storages):
        pickle._Pickler.__init__(self, file, protocol=PROTOCOL)
        self._setup(storages)

    def _write_global(self, obj, module: str, name: str):
        self.write(pickle.GLOBAL + module.encode("utf-8") + b"\n" + name.encode("utf-8") + b"\n")
        self.memoize(obj)

    def _save_function(self, obj):
        if N.is_torch_global(obj):
            self._write_global(obj, obj.torch_module, obj.torch_name)
        else:
            self.save_global(obj)

    def _save_dtype(self, obj):
        self._write_global(obj, "torch", obj.name)

    dispatch[types.FunctionType] = _save_function
    dispatch[_dt.dtype] = _save_dtype


def _global_opcode(module: str, name: str) -> bytes:
    return pickle.GLOBAL + module.encode("utf-8") + b"\n" + name.encode("utf-8") + b"\n"


_RENAMES = {}  # the GLOBAL opcode of each stand-in (and npusim dtype) -> torch's
for _obj in vars(N).values():
    if N.is_torch_global(_obj):
        _RENAMES[_obj] = (_global_opcode(N.__name__, _obj.__name__), _global_opcode(_obj.torch_module, _obj.torch_name))
for _d in _dt.ALL_DTYPES + _limited.LIMITED_DTYPES:
    _RENAMES[_d] = (_global_opcode(_dt.__name__, _d.name), _global_opcode("torch", _d.name))


def _renamed(data: bytes, used) -> bytes | None:
    """``data`` with each stand-in's GLOBAL renamed to torch's, or None when that would be ambiguous.

    Each used stand-in must appear exactly once (the memo serves later uses) and
    an unused one not at all; otherwise some string in the object happens to
    hold the same bytes, and a plain byte replacement could change it.
    """
    for obj, (ours, torchs) in _RENAMES.items():
        n = data.count(ours)
        if n != (1 if obj in used else 0):
            return None
        if n:
            data = data.replace(ours, torchs)
    return data


def pickle_object(obj):
    """``(data.pkl bytes, SavedStorages)`` for ``obj``."""
    buf = io.BytesIO()
    storages = SavedStorages()
    fast = _FastPickler(buf, storages)
    fast.dump(obj)
    data = _renamed(buf.getvalue(), fast.used_globals | fast.used_dtypes)
    if data is not None:
        return data, storages
    buf = io.BytesIO()
    storages = SavedStorages()
    _PortablePickler(buf, storages).dump(obj)
    return buf.getvalue(), storages
