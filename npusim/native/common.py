"""Shared machinery of the Tensor-level kernels ("native functions").

Kernels here unwrap tensors to arrays, decide result dtypes with torch's
promotion rules, check devices, call the array kernels of ``npusim.kernels``
and wrap results. The same functions serve the cpu device and the npu backend:
the array module comes from the arrays themselves.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from ..core.c10.user_frames import user_stacklevel
from ..core.c10 import dtype as D
from ..core import promotion
from ..core.c10.device import CPU
from ..core.c10.device_hooks import get_device_hooks
from ..core.c10.storage import array_address, array_root
from ..core.c10.scalar_conversion import checked_scalar  # noqa: F401 - re-exported for kernels
from ..core.tensor import Tensor, make, _wrap_dim  # noqa: F401 - re-exported for kernels
from ..kernels.array_api import BFLOAT16, as_array, namespace_of

_ndarray = np.ndarray
FROM_NP = D.FROM_NUMPY
PROMOTE = D._PROMOTE
_BOOL_NP = np.dtype(np.bool_)

# torch's ScalarType names, used in error messages
TORCH_NAME = D.SCALAR_TYPE_NAME


def tname(dt) -> str:
    if isinstance(dt, np.dtype):
        dt = FROM_NP[dt]
    return TORCH_NAME[dt]


def is_float(np_dt) -> bool:
    """Whether a NumPy dtype is one of torch's floating dtypes (bfloat16 included)."""
    return np_dt.kind == "f" or np_dt == BFLOAT16


def not_implemented(kernel_name, dt):
    """torch's error for a kernel with no implementation for a dtype (NumPy or npusim)."""
    raise NotImplementedError(f"\"{kernel_name}\" not implemented for '{tname(dt)}'")


def require_float(a, kernel_name):
    if not is_float(a.dtype):
        not_implemented(kernel_name, a.dtype)


# --- type promotion --------------------------------------------------------------

_scalar_dtype = promotion.scalar_result_dtype
result_type = promotion.result_type


# --- operands -----------------------------------------------------------------------

def scalar_operand(v, np_dt):
    """A Python number ready to combine with arrays of dtype ``np_dt`` (torch's casting).

    Integers out of the target range wrap around, as torch's kernels do with a
    wrapped number; only values no C++ integer can hold are refused.
    """
    if isinstance(v, np.generic):
        v = v.item()  # NumPy scalars act like Python numbers, not like typed arrays
    k = np_dt.kind
    if k == "f" or k == "c":
        return v
    if np_dt == BFLOAT16 or k == "V" and np_dt.names is None:   # ml_dtypes' floats: bfloat16, the float8 types
        return np_dt.type(v)
    if k in "iu":
        if isinstance(v, bool):
            return int(v)
        if isinstance(v, int):
            info = np.iinfo(np_dt)
            if info.min <= v <= info.max:
                return v
            if not (-2 ** 63 <= v < 2 ** 64):
                raise OverflowError("int too big to convert")
            return np.array(v, dtype=np.uint64 if v >= 2 ** 63 else np.int64).astype(np_dt)[()]
        return np_dt.type(v)  # float scalar into an integral computation truncates, as torch
    return bool(v)


# C++ names torch prints for a dtype in some messages (TypeMeta names in dtype checks).
CPP_NAME = {"bool": "bool", "uint8": "unsigned char", "int8": "signed char", "int16": "short int",
            "int32": "int", "int64": "long int", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
            "float32": "float", "float64": "double", "complex32": "c10::complex<c10::Half>",
            "complex64": "c10::complex<float>", "complex128": "c10::complex<double>"}


def array_operand(t: Tensor, np_dt, dev):
    """``t``'s array converted to ``np_dt``; a 0-dim cpu tensor may join another device's op."""
    a = t._a
    if t._device is not dev:
        if t._device is CPU and a.ndim == 0:
            return (a if a.dtype == np_dt else a.astype(np_dt))[()]
        raise_device_mismatch(dev, t._device)
    return a if a.dtype == np_dt else a.astype(np_dt)


def raise_device_mismatch(d1, d2):
    raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                       f"{d1} and {d2}!")


def common_device(*tensors):
    """The device an op on these tensors runs on: the first that is not a 0-dim cpu tensor."""
    first = None
    for t in tensors:
        if isinstance(t, Tensor):
            if first is None:
                first = t._device
            if t._device is not CPU or t._a.ndim:
                return t._device
    return CPU if first is None else first


def same_device(*tensors):
    """The device all these tensors are on (None entries skipped); torch's error for the first that differs."""
    dev = None
    for t in tensors:
        if isinstance(t, Tensor):
            if dev is None:
                dev = t._device
            elif t._device is not dev:
                raise_device_mismatch(dev, t._device)
    return dev


def check_devices(dev, *tensors):
    for t in tensors:
        if isinstance(t, Tensor) and t._device is not dev and not (t._device is CPU and t._a.ndim == 0):
            raise_device_mismatch(dev, t._device)


def broadcast_shapes(*shapes):
    """Torch's broadcasting with torch's error message.

    As torch's infer_size, the shapes join in turn and each pair is compared from the last dim, so the
    error names the first mismatch from the right, numbered in the shape broadcast so far.
    """
    out = []
    for s in shapes:
        if len(s) > len(out):
            out[:0] = [1] * (len(s) - len(out))
        ndim = len(out)
        for i in range(1, len(s) + 1):
            n, cur = s[-i], out[-i]
            if cur == 1:
                out[-i] = n
            elif n != 1 and n != cur:
                raise RuntimeError(f"The size of tensor a ({cur}) must match the size of tensor b ({n}) "
                                   f"at non-singleton dimension {ndim - i}")
    return tuple(out)


def shape_error(*operands):
    """Raise torch's broadcasting error for operands NumPy refused to broadcast."""
    broadcast_shapes(*[tuple(x.shape) for x in operands if hasattr(x, "shape")])
    raise RuntimeError("shapes cannot be broadcast: "
                       + ", ".join(str(list(x.shape)) for x in operands if hasattr(x, "shape")))


# --- results ---------------------------------------------------------------------------

def wrap(r, dev) -> Tensor:
    """Tensor around a fresh result array (NumPy's 0-d scalars become arrays)."""
    if r.__class__ is not _ndarray:
        r = as_array(r)
    return make(r, dev)


def check_inplace(self: Tensor, result_dt: D.dtype, result_shape):
    """torch's checks before writing a result into ``self``: the shape first, then the dtype."""
    if tuple(result_shape) != self._a.shape:
        raise RuntimeError(f"output with shape {list(self._a.shape)} doesn't match the broadcast shape "
                           f"{list(result_shape)}")
    if not D.can_cast(result_dt, FROM_NP[self._a.dtype]):
        raise RuntimeError(f"result type {TORCH_NAME[result_dt]} can't be cast to the desired output type "
                           f"{tname(self._a.dtype)}")


def prepare_out(out: Tensor, shape, dt: D.dtype, dev, *, check_cast=True):
    """Validate ``out=`` and resize it to ``shape`` (warning like torch when it had elements)."""
    if not isinstance(out, Tensor):
        raise TypeError(f"argument 'out' must be Tensor, not {type(out).__name__}")
    if out._device is not dev:
        raise RuntimeError(f"Expected out tensor to have device {dev}, but got {out._device} instead")
    if check_cast and not D.can_cast(dt, FROM_NP[out._a.dtype]):
        raise RuntimeError(f"result type {TORCH_NAME[dt]} can't be cast to the desired output type "
                           f"{tname(out._a.dtype)}")
    shape = tuple(shape)
    if out._a.shape != shape:
        resize_out(out, shape)
    return out


def resize_out(out: Tensor, shape):
    if out._a.size != 0:
        warnings.warn(
            f"An output with one or more elements was resized since it had shape {list(out._a.shape)}, which "
            f"does not match the required output shape {list(shape)}. This behavior is deprecated, and in a "
            f"future PyTorch release outputs will not be resized unless they have zero elements. You can "
            f"explicitly reuse an out tensor t by resizing it, inplace, to zero elements with t.resize_(0).",
            UserWarning, stacklevel=user_stacklevel())
    resize_in_storage(out, shape)


# Results below this many bytes are never worth checking early: NumPy making them is harmless.
_EARLY_CHECK = 1 << 20


def check_capacity(nbytes: int, device) -> None:
    """Raise ``device``'s out-of-memory error before a kernel makes a result (or temporary) of ``nbytes``.

    NumPy allocates a kernel's result before the device's accounting sees it, so a kernel whose result can
    outgrow its inputs (a copy of an expanded view, a product of sizes) calls this first with the bytes it is
    about to allocate; an oversized request then fails as the device's OutOfMemoryError instead of taking (or
    failing to take) that much host memory."""
    if nbytes > _EARLY_CHECK and device is not CPU:
        hooks = get_device_hooks(device.type)
        if hooks is not None:
            hooks.check_allocation(nbytes, device)


def resize_in_storage(t: Tensor, shape) -> None:
    """torch's resize_: ``t`` becomes a contiguous ``shape`` tensor starting at its storage offset. A storage
    that holds that many elements is kept (a view stays a view of its base); a smaller one is replaced by a
    larger copy of its bytes, which the tensor's views do not share (NumPy memory cannot grow in place)."""
    a = t._a
    shape = tuple(shape)
    nbytes = math.prod(shape) * a.itemsize
    root = array_root(a)
    start = array_address(a) - array_address(root) if a.size and root.size else 0
    if not root.flags.c_contiguous or start % a.itemsize:
        start = 0   # memory that no byte view reaches: the tensor starts a storage of its own
        root = a.reshape(-1)[:0]
    need = start + nbytes
    if t._device is not CPU:   # a storage the device cannot hold fails before any memory is taken
        get_device_hooks(t._device.type).check_allocation(need - root.nbytes, t._device)
    if need <= root.nbytes:
        t._a = _byte_view(root)[start:need].view(a.dtype).reshape(shape)
        return
    xp = namespace_of(a)
    grown = xp.empty(need, np.uint8)
    if root.nbytes:
        grown[:root.nbytes] = _byte_view(root)
    replace_array(t, grown[start:].view(a.dtype).reshape(shape))


def _byte_view(a):
    return a.reshape(-1).view(np.uint8)


def replace_array(t: Tensor, a):
    """Give ``t`` new memory (resize_ semantics): a fresh storage, views are left behind."""
    fresh = make(a, t._device)
    t._a = a
    t._st = fresh._st
    t._base = None


def write_out(out: Tensor, r):
    """Copy a computed result array into ``out`` (already validated and sized)."""
    o = out._a
    if r is o:   # the kernel computed into out's own array (an out= destination): nothing to copy
        out._bump_version()
        return out
    xp = namespace_of(o)
    if r.__class__ is not _ndarray:
        r = as_array(r)
    if o.__class__ is not _ndarray and has_internal_overlap(o):
        raise_overlap()
    try:
        xp.copyto(o, r, casting="unsafe")
    except ValueError as e:
        if "read-only" in str(e):
            raise_overlap()
        raise
    out._bump_version()
    return out


def raise_overlap():
    """torch's error for writing into a tensor whose elements share memory (an expanded tensor)."""
    raise RuntimeError("unsupported operation: more than one element of the written-to tensor refers to a single "
                       "memory location. Please clone() the tensor before performing the operation.")


def has_internal_overlap(a) -> bool:
    """torch's MemOverlap::Yes: a dim of size > 1 with stride 0 (an expanded view).

    NumPy arrays say so with their read-only flag (set by expand); device arrays have no such flag, so
    their strides are read instead; an empty array has no element to share (CuPy gives it zero strides)."""
    if a.size == 0:
        return False
    for n, s in zip(a.shape, a.strides):
        if s == 0 and n > 1:
            return True
    return False


def check_writable(t: Tensor):
    """Refuse in-place writes into broadcast views before computing anything."""
    a = t._a
    if a.__class__ is _ndarray or isinstance(a, _ndarray):
        if not a.flags.writeable:
            raise_overlap()
    elif has_internal_overlap(a):
        raise_overlap()


def finish_out(out: Tensor, r, dt: D.dtype, dev):
    """out= variant of an op whose result array ``r`` has torch dtype ``dt``."""
    prepare_out(out, r.shape, dt, dev)
    return write_out(out, r)


def finish_inplace(self: Tensor, r, dt: D.dtype):
    """In-place variant: check and copy ``r`` into ``self``."""
    check_inplace(self, dt, r.shape)
    return write_out(self, r)


def int_list(v):
    """An int or a sequence of ints as a list of Python ints."""
    if isinstance(v, (list, tuple)):
        return [int(x) for x in v]
    return [int(v)]


def dims_arg(dim, ndim):
    """Normalise an int / list of ints / None dim argument to a sorted tuple of axes (None = all)."""
    if dim is None:
        return None
    if isinstance(dim, (list, tuple)):
        if len(dim) == 0:
            return None
        axes = []
        for d in dim:   # in order, as torch: a repeat is reported before a later dim out of range
            a = _wrap_dim(d, ndim)
            if a in axes:
                raise RuntimeError(f"dim {a} appears multiple times in the list of dims")
            axes.append(a)
        return tuple(axes)
    return (_wrap_dim(dim, ndim),)


def np_dtype(dt) -> np.dtype:
    """npusim dtype (or None) -> NumPy dtype (or None)."""
    if dt is None:
        return None
    if isinstance(dt, D.dtype):
        return dt.np
    raise TypeError(f"dtype must be npusim.dtype, not {type(dt).__name__}")


# --- argument checks shared by the sorting and structure kernels ----------------------------------------------------

# torch's structured out= checks name dtypes by their C++ types
_CPP_NAME = {np.dtype(np.bool_): "bool", np.dtype(np.uint8): "unsigned char", np.dtype(np.int8): "signed char",
             np.dtype(np.int16): "short int", np.dtype(np.int32): "int", np.dtype(np.int64): "long int",
             np.dtype(np.float16): "c10::Half", BFLOAT16: "c10::BFloat16", np.dtype(np.float32): "float",
             np.dtype(np.float64): "double"}


def is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def int_arg(v, op, name, pos):
    """An int argument, as torch's argument parser takes it (a 1-element integral tensor too)."""
    if is_int(v):
        return int(v)
    if isinstance(v, Tensor) and v.numel() == 1 and not v.is_floating_point() and v.dtype.np != np.bool_:
        return int(v.item())
    raise TypeError(f"{op}(): argument '{name}' (position {pos}) must be int, not {type(v).__name__}")


def sized_dim(dim, ndim):
    """A dim whose size the op reads: torch refuses any dim of a 0-dim tensor here."""
    if ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    return _wrap_dim(dim, ndim)


def exact_out(out, shape, np_dt, dev):
    """torch's structured out= rules: same dtype exactly, same device, then resize."""
    if isinstance(out, Tensor) and out._a.dtype != np_dt:
        raise RuntimeError(f"Expected out tensor to have dtype {_CPP_NAME[np_dt]}, but got "
                           f"{_CPP_NAME[out._a.dtype]} instead")
    return prepare_out(out, shape, None, dev, check_cast=False)
