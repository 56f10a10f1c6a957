"""``TypedStorage``: an UntypedStorage seen as elements of one dtype (torch's deprecated storage class).

``Tensor.storage()`` returns one; so do the legacy constructors (``npusim.FloatStorage(3)``, see
``legacy_storage_types.py``). As in torch, every public use warns once per process that TypedStorage is
deprecated (``_set_always_warn_typed_storage_removal(True)`` makes it warn every time); the methods npusim calls
itself are the underscored ones, which never warn.
"""
from __future__ import annotations

import builtins
import collections.abc
import copy
import warnings

from ..core.c10 import dtype as D
from ..core.c10.device import device as _device, privateuse1_backend_name
from ..core.c10.storage import UntypedStorage

# torch.storage._dtype_to_storage_type_map: the dtypes that have a legacy <type>Storage class (no new ones are
# added there: newer dtypes are plain TypedStorages)
STORAGE_NAMES = {D.float64: "DoubleStorage", D.float32: "FloatStorage", D.float16: "HalfStorage",
                 D.int64: "LongStorage", D.int32: "IntStorage", D.int16: "ShortStorage", D.int8: "CharStorage",
                 D.uint8: "ByteStorage", D.bool: "BoolStorage", D.bfloat16: "BFloat16Storage",
                 D.complex128: "ComplexDoubleStorage", D.complex64: "ComplexFloatStorage"}

_always_warn_typed_storage_removal = False
_has_warned = False


def _get_always_warn_typed_storage_removal():
    return _always_warn_typed_storage_removal


def _set_always_warn_typed_storage_removal(always_warn):
    global _always_warn_typed_storage_removal
    if not isinstance(always_warn, bool):
        raise AssertionError(f"always_warn must be bool, got {type(always_warn).__name__}")
    _always_warn_typed_storage_removal = always_warn


def _warn_typed_storage_removal(stacklevel=2):
    global _has_warned
    if _always_warn_typed_storage_removal or not _has_warned:
        message = ("TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be the only "
                   "storage class. This should only matter to you if you are using storages directly.  To access "
                   "UntypedStorage directly, use tensor.untyped_storage() instead of tensor.storage()")
        warnings.warn(message, UserWarning, stacklevel=stacklevel + 1)
        _has_warned = True


def _reset_warn_typed_storage_removal():
    global _has_warned
    _has_warned = False


def _device_type_name(device_type: str) -> str:
    from ..core.c10.device import PRIVATEUSE1
    return privateuse1_backend_name() if device_type == PRIVATEUSE1 else device_type


def _isint(x) -> bool:
    import numpy as np
    return isinstance(x, (int, np.integer))


def _tensor_over(untyped, dtype):
    """A 1-D tensor of ``dtype`` over all of ``untyped``'s whole elements."""
    import npusim
    return npusim.tensor([], dtype=dtype, device=untyped.device).set_(untyped)


def _storage_from_sequence(sequence, dtype, device):
    import npusim
    return npusim.tensor(sequence, dtype=dtype, device=device).untyped_storage()


class TypedStorage:
    """Elements of one dtype over an UntypedStorage (``torch.TypedStorage``)."""

    is_sparse = False
    dtype: D.dtype

    @property
    def _dtype(self):
        return self.dtype

    @property
    def filename(self):
        """The file this storage maps when made by ``from_file(..., shared=True)``, else None."""
        return self._untyped_storage.filename

    def fill_(self, value):
        _warn_typed_storage_removal()
        self._setitem(slice(0, self._size()), value)
        return self

    def __new__(cls, *args, wrap_storage=None, dtype=None, device=None, _internal=False):
        if not _internal:
            _warn_typed_storage_removal()
        if cls is _LegacyStorage:
            raise RuntimeError("Only child classes of _LegacyStorage can be instantiated")
        if cls is TypedStorage:
            return super().__new__(cls)
        arg_error_msg = (f"{cls}.__new__ received an invalid combination of arguments. Expected one of:\n"
                         " * no arguments\n * (int size)\n * (Sequence data)\n * (*, UntypedStorage wrap_storage)")
        if device is not None:
            raise RuntimeError(arg_error_msg + "\nKeyword argument 'device' cannot be specified")
        if dtype is not None:
            raise RuntimeError(arg_error_msg + "\nKeyword argument 'dtype' cannot be specified")
        cls_device = _device_type_name(cls._device_type)
        if wrap_storage is None:
            if len(args) > 1:
                raise RuntimeError(arg_error_msg + "\nToo many positional arguments")
            if len(args) == 1 and not _isint(args[0]) and not isinstance(args[0], collections.abc.Sequence):
                raise TypeError(arg_error_msg + f"\nArgument type not recognized: {type(args[0])}")
            return TypedStorage(*args, dtype=cls.dtype, device=cls_device, _internal=True)
        if len(args) != 0:
            raise RuntimeError(arg_error_msg + "\nNo positional arguments should be given when using 'wrap_storage'")
        if not isinstance(wrap_storage, UntypedStorage):
            raise TypeError(arg_error_msg + f"\nArgument 'wrap_storage' must be UntypedStorage, but got "
                            f"{type(wrap_storage)}")
        if wrap_storage.device.type != cls_device:
            raise RuntimeError(arg_error_msg + f"\nDevice of 'wrap_storage' must be {cls_device}, but got "
                               f"{wrap_storage.device.type}")
        return TypedStorage(wrap_storage=wrap_storage, dtype=cls.dtype, _internal=True)

    def __init__(self, *args, device=None, dtype=None, wrap_storage=None, _internal=False):
        if not _internal:
            _warn_typed_storage_removal()
        arg_error_msg = ("TypedStorage.__init__ received an invalid combination of arguments. Expected one of:\n"
                         " * (*, npusim.device device, npusim.dtype dtype)\n"
                         " * (int size, *, npusim.device device, npusim.dtype dtype)\n"
                         " * (Sequence data, *, npusim.device device, npusim.dtype dtype)\n"
                         " * (*, UntypedStorage wrap_storage, npusim.dtype dtype)")
        if wrap_storage is not None:
            if len(args) != 0:
                raise RuntimeError(arg_error_msg + "\nNo positional arguments should be given when using "
                                   "'wrap_storage'")
            if dtype is None:
                raise RuntimeError(arg_error_msg + "\nArgument 'dtype' must be specified")
            if not isinstance(dtype, D.dtype):
                raise TypeError(arg_error_msg + f"\nArgument 'dtype' must be npusim.dtype, not {type(dtype)}")
            if device is not None:
                raise RuntimeError(arg_error_msg + "\nArgument 'device' should not be specified when 'wrap_storage' "
                                   "is given")
            self.dtype = dtype
            if not isinstance(wrap_storage, UntypedStorage):
                raise TypeError(arg_error_msg + f"\nArgument 'wrap_storage' must be UntypedStorage, but got "
                                f"{type(wrap_storage)}")
            self._untyped_storage = wrap_storage
            return
        self.dtype = D.get_default_dtype() if dtype is None else dtype
        device = _device("cpu" if device is None else device)
        if len(args) == 0:
            self._untyped_storage = UntypedStorage(device=device)
        elif len(args) == 1:
            if _isint(args[0]):
                self._untyped_storage = UntypedStorage(builtins.int(args[0]) * self._element_size(), device=device)
            elif isinstance(args[0], collections.abc.Sequence):
                self._untyped_storage = _storage_from_sequence(args[0], self.dtype, device)
            else:
                raise TypeError(arg_error_msg + f"\nArgument type not recognized: {type(args[0])}")
        else:
            raise RuntimeError(arg_error_msg + "\nToo many positional arguments")

    def untyped(self):
        """The internal :class:`npusim.UntypedStorage`."""
        _warn_typed_storage_removal()
        return self._untyped_storage

    def _new_wrapped_storage(self, untyped_storage):
        if type(self) is TypedStorage:
            return TypedStorage(wrap_storage=untyped_storage, dtype=self.dtype, _internal=True)
        return type(self)(wrap_storage=untyped_storage)

    def __len__(self):
        _warn_typed_storage_removal()
        return self._size()

    def _maybe_wrap_index(self, idx, is_stop=False):
        if idx is None:
            return self._size() if is_stop else 0
        if type(idx) is not builtins.int:
            raise TypeError(f"can't index a {type(self)} with {type(idx)}")
        n = self._size()
        if is_stop:
            if idx > n or idx < -n:
                raise IndexError(f"index {idx} out of range for storage of size {n}")
            return idx if idx > 0 else idx % n
        if idx >= n or idx < -n:
            raise IndexError(f"index {idx} out of range for storage of size {n}")
        return idx % n

    def __setitem__(self, idx, value):
        _warn_typed_storage_removal()
        return self._setitem(idx, value)

    def _setitem(self, idx, value):
        if not isinstance(idx, (builtins.int, slice)):
            raise RuntimeError(f"can't index a {type(self)} with {type(idx)}")
        if isinstance(value, (TypedStorage, UntypedStorage)):
            raise RuntimeError(f"cannot set item with value type {type(value)}")
        _tensor_over(self._untyped_storage, self.dtype)[idx] = value

    def __getitem__(self, idx):
        _warn_typed_storage_removal()
        return self._getitem(idx)

    def _getitem(self, idx):
        # as torch's: slices of a TypedStorage were views once and are refused now
        if isinstance(idx, slice):
            raise RuntimeError("slices are only supported in UntypedStorage.__getitem__")
        if not isinstance(idx, builtins.int):
            raise RuntimeError(f"can't index a {type(self)} with {type(idx)}")
        idx_wrapped = self._maybe_wrap_index(idx)
        return _tensor_over(self._untyped_storage, self.dtype)[idx_wrapped].item()

    def copy_(self, source, non_blocking=None):
        _warn_typed_storage_removal()
        src = source._untyped_storage if isinstance(source, TypedStorage) else source
        self._untyped_storage.copy_(src, bool(non_blocking))
        return self

    def nbytes(self):
        _warn_typed_storage_removal()
        return self._nbytes()

    def _nbytes(self):
        return self._untyped_storage.nbytes()

    def type(self, dtype=None, non_blocking=False):
        _warn_typed_storage_removal()
        if dtype is None:
            legacy_class = self._get_legacy_storage_class()
            if legacy_class is not None:
                return legacy_class.qualified_name
            return "npusim.storage.TypedStorage"
        return self._untyped_storage.type(dtype, non_blocking)

    def to(self, *, device, non_blocking=False):
        """A copy on ``device`` (self's elements, same dtype); a new wrapper of the same memory when already there."""
        _warn_typed_storage_removal()
        return self._new_wrapped_storage(self._untyped_storage.to(device=_device(device), non_blocking=non_blocking))

    def element_size(self):
        _warn_typed_storage_removal()
        return self._element_size()

    def _element_size(self):
        return self.dtype.itemsize

    def get_device(self) -> int:
        _warn_typed_storage_removal()
        return self._untyped_storage.get_device()

    def __str__(self):
        _warn_typed_storage_removal()
        info_str = f"[npusim.storage.TypedStorage(dtype={self.dtype}, device={self.device}) of size {self._size()}]"
        values = _tensor_over(self._untyped_storage, self.dtype).tolist()
        return " " + "\n ".join(str(v) for v in values) + "\n" + info_str

    def __repr__(self):
        _warn_typed_storage_removal()
        return str(self)

    def __iter__(self):
        _warn_typed_storage_removal()
        return iter(_tensor_over(self._untyped_storage, self.dtype).tolist())

    def __copy__(self):
        _warn_typed_storage_removal()
        return self._new_wrapped_storage(copy.copy(self._untyped_storage))

    def __deepcopy__(self, memo):
        _warn_typed_storage_removal()
        return self._deepcopy(memo)

    def _deepcopy(self, memo):
        return self._new_wrapped_storage(copy.deepcopy(self._untyped_storage, memo))

    def __sizeof__(self):
        _warn_typed_storage_removal()
        return super().__sizeof__() + self._nbytes()

    def clone(self):
        """A copy of this storage."""
        _warn_typed_storage_removal()
        return self._new_wrapped_storage(self._untyped_storage.clone())

    def tolist(self):
        """A list of the elements of this storage."""
        _warn_typed_storage_removal()
        return _tensor_over(self._untyped_storage, self.dtype).tolist()

    def cpu(self):
        """A cpu copy of this storage (a new wrapper of the same memory when it is on the cpu)."""
        _warn_typed_storage_removal()
        return self._new_wrapped_storage(self._untyped_storage.cpu())

    def is_pinned(self, device=None):
        """Whether this cpu storage is in page-locked host memory."""
        _warn_typed_storage_removal()
        return self._untyped_storage.is_pinned(device)

    def pin_memory(self, device=None):
        """A copy of this cpu storage in page-locked host memory, unless it already is."""
        _warn_typed_storage_removal()
        return self._new_wrapped_storage(self._untyped_storage.pin_memory(device=device))

    def share_memory_(self):
        """See :meth:`npusim.UntypedStorage.share_memory_`."""
        _warn_typed_storage_removal()
        return self._share_memory_()

    def _share_memory_(self):
        self._untyped_storage.share_memory_()
        return self

    def _new_shared(self, size, *, device=None):
        """A new storage of ``size`` elements of this dtype in shared memory."""
        untyped = UntypedStorage._new_shared(size * self._element_size(), device=_device(device or "cpu"))
        return TypedStorage(wrap_storage=untyped, dtype=self.dtype, _internal=True)

    @property
    def device(self):
        _warn_typed_storage_removal()
        return self._untyped_storage.device

    def size(self):
        _warn_typed_storage_removal()
        return self._size()

    def _size(self):
        return self._untyped_storage.nbytes() // self._element_size()

    def pickle_storage_type(self):
        _warn_typed_storage_removal()
        return self._pickle_storage_type()

    def _pickle_storage_type(self):
        try:
            return STORAGE_NAMES[self.dtype]
        except KeyError as e:
            raise KeyError(f"dtype {self.dtype} is not recognized") from e

    def __reduce__(self):
        return _rebuild_typed_storage, (self._untyped_storage, self.dtype)

    def data_ptr(self):
        _warn_typed_storage_removal()
        return self._data_ptr()

    def _data_ptr(self):
        return self._untyped_storage.data_ptr()

    def resizable(self):
        _warn_typed_storage_removal()
        return self._untyped_storage.resizable()

    def resize_(self, size):
        _warn_typed_storage_removal()
        self._resize_(size)

    def _resize_(self, size):
        self._untyped_storage.resize_(size * self._element_size())

    @classmethod
    def from_buffer(cls, *args, **kwargs):
        _warn_typed_storage_removal()
        return cls._from_buffer(*args, **kwargs)

    @classmethod
    def _from_buffer(cls, *args, dtype=None, device=None, **kwargs):
        if cls is TypedStorage:
            dtype = D.get_default_dtype() if dtype is None else dtype
            device = _device("cpu" if device is None else device)
            if device.type != "cpu":
                raise RuntimeError(f"TypedStorage.from_buffer: Not available for device {device.type}")
        else:
            if dtype is not None or len(args) == 5:
                raise RuntimeError("from_buffer: 'dtype' can only be specified in UntypedStorage.from_buffer and "
                                   "TypedStorage.from_buffer")
            if device is not None:
                raise RuntimeError("from_buffer: 'device' can only be specified in UntypedStorage.from_buffer and "
                                   "TypedStorage.from_buffer")
            dtype = cls.dtype
        untyped = UntypedStorage.from_buffer(*args, dtype=dtype, **kwargs)
        return TypedStorage(wrap_storage=untyped, dtype=dtype, _internal=True)

    def _to(self, dtype):
        return _converted(self._untyped_storage, self.dtype, dtype)

    @classmethod
    def from_file(cls, filename, shared, size):
        """from_file(filename, shared=False, size=0) -> Storage

        A cpu storage of ``size`` elements mapped from a file: ``shared=True`` writes changes to the file (made,
        or grown, to fit), ``shared=False`` keeps them in memory and needs a file of at least ``size`` elements.
        """
        _warn_typed_storage_removal()
        if cls is TypedStorage:
            raise RuntimeError("from_file can only be called on derived classes")
        untyped = UntypedStorage.from_file(filename, shared, size * cls.dtype.itemsize)
        return cls(wrap_storage=untyped)

    def is_shared(self):
        _warn_typed_storage_removal()
        return self._is_shared()

    def _is_shared(self):
        return self._untyped_storage.is_shared()

    def _get_legacy_storage_class(self):
        name = STORAGE_NAMES.get(self.dtype)
        if name is None:
            return None
        import npusim
        dev_type = self._untyped_storage.device.type
        if dev_type == "cpu":
            module = npusim
        elif dev_type == privateuse1_backend_name():
            module = getattr(npusim, dev_type, None)
        else:
            return None
        return getattr(module, name, None)


def _conversion(dtype_name: str):
    def convert(self):
        _warn_typed_storage_removal()
        return self._to(getattr(D, dtype_name))
    return convert


def _untyped_conversion(dtype_name: str):
    def convert(self):
        return _untyped_to(self, getattr(D, dtype_name))
    return convert


def _untyped_to(storage, dtype):
    """The bytes of ``storage`` converted, each to an element of ``dtype`` (a TypedStorage; a copy)."""
    return _converted(storage, D.uint8, dtype)


def _converted(untyped, source_dtype, dtype):
    """The elements of ``source_dtype`` in ``untyped`` converted to ``dtype``: a new TypedStorage (a copy, also
    where the conversion changes nothing)."""
    if not isinstance(dtype, D.dtype):
        raise TypeError(f"Argument 'dtype' must be npusim.dtype, not {type(dtype)}")
    converted = _tensor_over(untyped, source_dtype).to(dtype)
    out = TypedStorage(wrap_storage=converted.untyped_storage(), dtype=dtype, _internal=True)
    if out._data_ptr() == untyped.data_ptr():
        out = out._new_wrapped_storage(untyped.clone())
    return out


# TypedStorage.double() & co., and the same casts of an UntypedStorage's bytes (torch's _StorageBase methods)
_CASTS = {"double": "float64", "float": "float32", "half": "float16", "long": "int64", "int": "int32",
          "short": "int16", "char": "int8", "byte": "uint8", "bool": "bool", "bfloat16": "bfloat16",
          "complex_double": "complex128", "complex_float": "complex64"}
for _method, _dtype_name in _CASTS.items():
    _fn = _conversion(_dtype_name)
    _fn.__name__ = _fn.__qualname__ = _method
    _fn.__doc__ = f"Casts this storage to {_dtype_name} type."
    setattr(TypedStorage, _method, _fn)
    _ufn = _untyped_conversion(_dtype_name)
    _ufn.__name__ = _ufn.__qualname__ = _method
    _ufn.__doc__ = f"Casts this storage's bytes to {_dtype_name} type."
    setattr(UntypedStorage, _method, _ufn)
UntypedStorage._to = _untyped_to


def _rebuild_typed_storage(untyped, dtype):
    return TypedStorage(wrap_storage=untyped, dtype=dtype, _internal=True)


class _LegacyStorageMeta(type):
    """The class of the legacy storage classes: ``isinstance(s, npusim.FloatStorage)`` asks the dtype and device
    type of a TypedStorage."""

    dtype: D.dtype

    def __instancecheck__(cls, instance):
        if type(instance) is TypedStorage:
            return (_device_type_name(cls._device_type) == instance._untyped_storage.device.type
                    and cls.dtype == instance.dtype)
        return False

    @property
    def qualified_name(cls) -> str:
        """``npusim.FloatStorage``, ``npusim.npu.FloatStorage``: the name it is reached by (the backend's follows
        its name, which may change after the class is made)."""
        where = "" if cls._device_type == "cpu" else f"{_device_type_name(cls._device_type)}."
        return f"npusim.{where}{cls.__name__}"

    def __repr__(cls):
        return f"<class '{cls.qualified_name}'>"


class _LegacyStorage(TypedStorage, metaclass=_LegacyStorageMeta):
    @classmethod
    def _new_shared(cls, size):
        """A new storage of ``size`` elements in shared memory."""
        return cls(wrap_storage=UntypedStorage._new_shared(size * cls.dtype.itemsize))


TypedStorage.__module__ = "npusim.storage"
