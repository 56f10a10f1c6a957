"""Rebuilding tensors from loaded storages: npusim's versions of torch's ``_rebuild_*`` functions.

Archives call ``torch._utils._rebuild_tensor_v2(storage, offset, size,
stride, requires_grad, backward_hooks[, metadata])`` and friends; loading maps
those names to the functions here. Every argument is checked before a tensor
is made: sizes and strides are non-negative ints and the tensor lies inside its
storage, so a corrupt archive yields an error instead of a bad view.
"""
from __future__ import annotations

import numpy as np

from ..core.c10 import dtype as _dt
from ..core.c10.device import device as _device
from ..core.c10.device_hooks import get_device_hooks
from ..api.typed_storage import TypedStorage
from ..core.c10.storage import UntypedStorage
from ..core.tensor import Size, Tensor, make_alias, tensor_over_storage
from .backend_meta import set_tensor_metadata
from .errors import UnpicklingError

_MAX_DIMS = 64
_MAX_NUMEL = 1 << 62


def loaded_typed_storage(storage: UntypedStorage, dtype, name: str) -> TypedStorage:
    """A loaded storage seen as elements of one dtype (what torch's typed persistent ids describe): a TypedStorage,
    as torch.load gives; ``name`` (its record) names it in errors."""
    typed = TypedStorage(wrap_storage=storage, dtype=dtype, _internal=True)
    typed._name = name
    return typed


def _int_tuple(value, what: str) -> tuple:
    if not isinstance(value, (tuple, list)):
        raise UnpicklingError(f"tensor {what} must be a tuple of ints, got {type(value).__name__}")
    if len(value) > _MAX_DIMS:
        raise UnpicklingError(f"tensor {what} has {len(value)} dimensions; at most {_MAX_DIMS} are supported")
    out = []
    for v in value:
        if type(v) is not int or v < 0:
            raise UnpicklingError(f"tensor {what} must hold non-negative ints, got {v!r}" if type(v) is int
                                  else f"tensor {what} must hold non-negative ints, got {type(v).__name__}")
        out.append(v)
    return tuple(out)


def tensor_from_storage(storage, storage_offset, size, stride, dtype=None) -> Tensor:
    """A tensor over ``storage`` (a TypedStorage, or an UntypedStorage with ``dtype``), checked to fit."""
    if isinstance(storage, TypedStorage):
        st, dtype = storage._untyped_storage, storage.dtype if dtype is None else dtype
        name = getattr(storage, "_name", "storage")
    elif isinstance(storage, UntypedStorage):
        st, name = storage, "storage"
        if dtype is None:
            dtype = _dt.uint8
    else:
        raise UnpicklingError(f"a tensor must be rebuilt from a storage, got {type(storage).__name__}")
    if not isinstance(dtype, _dt.dtype):
        raise UnpicklingError(f"tensor dtype must be an npusim dtype, got {type(dtype).__name__}")
    size = _int_tuple(size, "size")
    stride = _int_tuple(stride, "stride")
    if len(size) != len(stride):
        raise UnpicklingError(f"tensor size {list(size)} and stride {list(stride)} have different lengths")
    if type(storage_offset) is not int or storage_offset < 0:
        raise UnpicklingError(f"tensor storage offset must be a non-negative int, got {storage_offset!r}"
                              if type(storage_offset) is int else
                              f"tensor storage offset must be a non-negative int, got {type(storage_offset).__name__}")
    itemsize = dtype.itemsize
    capacity = st.nbytes() // itemsize
    numel = 1
    for n in size:
        numel *= n
    if numel > _MAX_NUMEL:
        raise UnpicklingError(f"tensor size {list(size)} has {numel} elements, more than any tensor can hold")
    if numel:
        needed = storage_offset + 1 + sum((n - 1) * s for n, s in zip(size, stride))
        if needed > capacity:
            raise UnpicklingError(f"tensor of size {list(size)}, stride {list(stride)} and storage offset "
                                  f"{storage_offset} needs {needed} {dtype.name} elements, but its storage ({name}) "
                                  f"holds {capacity}")
    else:
        storage_offset = min(storage_offset, capacity)  # an empty tensor reads nothing
    base = tensor_over_storage(st)
    raw = base._a
    byte_strides = tuple(s * itemsize for s in stride)
    if raw.__class__ is np.ndarray:
        arr = np.ndarray(size, dtype.np, buffer=raw, offset=storage_offset * itemsize, strides=byte_strides)
    else:  # a device's own arrays: a strided view of the same memory, by the array module its backend names
        xp = get_device_hooks(base.device.type).array_namespace(base.device)
        typed = raw[: capacity * itemsize].view(dtype.np)
        arr = xp.lib.stride_tricks.as_strided(typed[storage_offset:], size, byte_strides)
    t = make_alias(arr, base)
    t._vc = None  # its own version counter, as a tensor made by set_() has
    return t


def _finish(t: Tensor, requires_grad, metadata) -> Tensor:
    if metadata:
        if not isinstance(metadata, dict):
            raise UnpicklingError(f"tensor metadata must be a dict, got {type(metadata).__name__}")
        if metadata.get("neg"):
            raise UnpicklingError("the archive marks a tensor with torch's negative bit (a lazy negation), which "
                                  "npusim does not support: save it after resolving the bit (tensor.resolve_neg())")
        if metadata.get("conj") and t.is_complex():
            t = t.conj_physical()   # torch's lazy conjugate bit; npusim has none, so the values are conjugated
        set_tensor_metadata(t, metadata)
    if requires_grad:
        if requires_grad is not True:
            raise UnpicklingError(f"requires_grad must be a bool, got {type(requires_grad).__name__}")
        t.requires_grad_(True)
    return t


def rebuild_tensor(storage, storage_offset, size, stride):
    """torch._utils._rebuild_tensor"""
    return tensor_from_storage(storage, storage_offset, size, stride)


def rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks, metadata=None):
    """torch._utils._rebuild_tensor_v2 (backward hooks are not restored, as in torch)."""
    t = tensor_from_storage(storage, storage_offset, size, stride)
    return _finish(t, requires_grad, metadata)


def rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype, metadata=None):
    """torch._utils._rebuild_tensor_v3: an untyped storage plus the dtype."""
    t = tensor_from_storage(storage, storage_offset, size, stride, dtype)
    return _finish(t, requires_grad, metadata)


def _parameter_class():
    from ..nn.parameter import Parameter
    return Parameter


def rebuild_parameter(data, requires_grad, backward_hooks):
    """torch._utils._rebuild_parameter"""
    if not isinstance(data, Tensor):
        raise UnpicklingError(f"a Parameter must be rebuilt from a tensor, got {type(data).__name__}")
    return _parameter_class()(data, bool(requires_grad))


def rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    """torch._utils._rebuild_parameter_with_state"""
    return set_obj_state(rebuild_parameter(data, requires_grad, backward_hooks), state)


def rebuild_from_type_v2(func, new_type, args, state):
    """torch._tensor._rebuild_from_type_v2: ``func(*args)`` as ``new_type``, then its attributes."""
    if not isinstance(args, tuple):
        raise UnpicklingError(f"rebuild arguments must be a tuple, got {type(args).__name__}")
    if not (isinstance(new_type, type) and issubclass(new_type, Tensor)):
        raise UnpicklingError(f"tensors can only be rebuilt as npusim.Tensor subclasses, got {new_type!r}")
    if func not in _TENSOR_REBUILDERS:
        raise UnpicklingError("_rebuild_from_type_v2 can only call a tensor rebuild function "
                              f"(torch._utils._rebuild_*), got {getattr(func, '__name__', type(func).__name__)}")
    ret = func(*args)
    if not isinstance(ret, Tensor):
        raise UnpicklingError(f"the rebuild function returned {type(ret).__name__}, not a tensor")
    if type(ret) is not new_type:
        if new_type is _parameter_class():
            ret = new_type(ret, ret.requires_grad)
        else:
            ret.__class__ = new_type
    return set_obj_state(ret, state)


_TENSOR_REBUILDERS = (rebuild_tensor, rebuild_tensor_v2, rebuild_tensor_v3, rebuild_parameter,
                      rebuild_parameter_with_state)


def set_obj_state(obj, state):
    """Set the attributes a tensor was saved with (torch._utils._set_obj_state), never its own fields."""
    if state is None:
        return obj
    if isinstance(state, tuple):
        if len(state) != 2:
            raise UnpicklingError(f"Invalid serialized state: a tuple of {len(state)} items, expected 2")
        dict_state, slots_state = state
    else:
        dict_state, slots_state = state, None
    for part in (dict_state, slots_state):
        if not part:
            continue
        if not isinstance(part, dict):
            raise UnpicklingError(f"Invalid serialized state: expected a dict of attributes, got {type(part).__name__}")
        for k, v in part.items():
            if type(k) is not str or k.startswith("__") or hasattr(type(obj), k):
                shown = k if type(k) is str else type(k).__name__
                raise UnpicklingError(f"Invalid serialized state: attribute {shown!r} of {type(obj).__name__} "
                                      "cannot be set from an archive")
            setattr(obj, k, v)
    return obj


# --- small constructors the safe loader allows, each refusing arguments that could do harm ----------------

def make_size(dims=()):
    """torch.Size(dims)"""
    return Size(_int_tuple(dims, "Size") if not isinstance(dims, Size) else dims)


def make_device(*args):
    """torch.device(type[, index])"""
    if not args or len(args) > 2 or not isinstance(args[0], str) or (len(args) == 2 and type(args[1]) is not int):
        raise UnpicklingError("torch.device expects (str type[, int index])")
    return _device(*args)


def codecs_encode(obj, encoding="utf-8", errors="strict"):
    """_codecs.encode as protocol 2 uses it for bytes: text in one of a few byte encodings."""
    if not isinstance(obj, str) or encoding not in ("latin1", "latin-1", "utf-8", "utf8", "ascii"):
        raise UnpicklingError("_codecs.encode may only encode str as latin1/utf-8/ascii in an archive")
    return obj.encode(encoding, errors if errors in ("strict", "surrogatepass") else "strict")


def make_bytearray(data=b"", encoding="latin1"):
    if not isinstance(data, (bytes, str)):
        raise UnpicklingError(f"bytearray may only be built from bytes in an archive, got {type(data).__name__}")
    return bytearray(codecs_encode(data, encoding)) if isinstance(data, str) else bytearray(data)


def _iterable_arg(data, what):
    if not isinstance(data, (list, tuple, set, frozenset)):
        raise UnpicklingError(f"{what} may only be built from a list in an archive, got {type(data).__name__}")
    return data


def make_set(data=()):
    return set(_iterable_arg(data, "set"))


def make_frozenset(data=()):
    return frozenset(_iterable_arg(data, "frozenset"))


def make_complex(real=0.0, imag=0.0):
    if not all(isinstance(v, (int, float)) for v in (real, imag)):
        raise UnpicklingError("complex may only be built from two numbers in an archive")
    return complex(real, imag)
