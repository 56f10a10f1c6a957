"""The stand-in's ndarray: a NumPy array kept behind CuPy's rules.

The array lives in host memory, but nothing lets it pass for a NumPy array:
implicit conversion raises CuPy's TypeError, NumPy arrays are refused as
operands, results that NumPy gives as scalars come back as 0-d arrays, and
every host sync (``int``, ``float``, ``bool``, ``item``, ``tolist``, ``get``,
printing, data-dependent output shapes) and host-to-device copy is counted.
Each array belongs to one device and every operation checks that its arrays
are on the current device, as CuPy's kernels do.
"""
from __future__ import annotations

import json
import os
import threading
import weakref

import numpy as np

NAMES = json.load(open(os.path.join(os.path.dirname(__file__), "_cupy14_names.json")))
NDARRAY_NAMES = frozenset(NAMES["ndarray"])


class Counts(threading.local):
    """What a GPU would have had to stop for or copy."""

    def __init__(self):
        self.host_syncs = 0        # device-to-host reads that wait for the device
        self.h2d_copies = 0        # host-to-device copies
        self.sync_sites = []       # (what, stack summary) of the last syncs, to say where they came from


COUNTS = Counts()
RECORD_SITES = os.environ.get("CUPY_STANDIN_RECORD_SITES") == "1"


def count_sync(what):
    COUNTS.host_syncs += 1
    if RECORD_SITES:
        import traceback
        frames = [f for f in traceback.extract_stack()[:-2] if "cupy_standin" not in f.filename]
        COUNTS.sync_sites.append((what, [f"{f.filename}:{f.lineno} {f.name}" for f in frames[-6:]]))


def count_h2d():
    COUNTS.h2d_copies += 1


# --- devices -------------------------------------------------------------------------------------------
DEVICE_COUNT = int(os.environ.get("CUPY_STANDIN_DEVICES", "2"))


class _Current(threading.local):
    device = 0


CURRENT = _Current()


def check_device(arrays):
    """CuPy's kernels refuse arrays that are not on the current device."""
    cur = CURRENT.device
    for a in arrays:
        if a._dev != cur:
            raise ValueError(f"Array device must be same as the current device: array device = {a._dev} "
                             f"while current = {cur}")


# --- memory ----------------------------------------------------------------------------------------------
def _parse_size(text):
    units = {"": 1, "B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}
    for u in ("KiB", "MiB", "GiB", "B"):
        if text.endswith(u):
            return int(float(text[:-len(u)]) * units[u])
    return int(text)


CAPACITY = _parse_size(os.environ.get("CUPY_STANDIN_DEVICE_MEMORY", "8GiB"))


def allocate(nbytes, device):
    """Memory for a new array through the allocator CuPy would call (``cupy.cuda.set_allocator``)."""
    if nbytes == 0:
        return None
    from .cuda import memory as M
    prev = CURRENT.device
    CURRENT.device = device
    try:
        return M.current_allocator()(nbytes)
    finally:
        CURRENT.device = prev


# --- the array -----------------------------------------------------------------------------------------------
class Flags:
    """CuPy's flags: no ``writeable`` (CuPy arrays are always writable)."""
    __slots__ = ("_a", "_owndata")

    def __init__(self, a, owndata):
        self._a, self._owndata = a, owndata

    c_contiguous = property(lambda self: self._a.flags.c_contiguous)
    f_contiguous = property(lambda self: self._a.flags.f_contiguous)
    owndata = property(lambda self: self._owndata)

    def __getitem__(self, key):
        return {"C_CONTIGUOUS": self.c_contiguous, "F_CONTIGUOUS": self.f_contiguous,
                "OWNDATA": self.owndata}[key]


def _unsupported(x):
    return TypeError(f"Unsupported type {type(x)}")


class ndarray:
    """cupy.ndarray over a host NumPy array."""
    __slots__ = ("_np", "_mem", "_dev", "_own", "_base", "__weakref__")
    __array_priority__ = 100

    def __init__(self, shape, dtype=float, memptr=None, strides=None, order="C"):
        dtype = np.dtype(dtype)
        if isinstance(shape, (int, np.integer)):
            shape = (int(shape),)
        shape = tuple(int(s) for s in shape)
        nbytes = int(np.prod(shape, dtype=object)) * dtype.itemsize
        if memptr is None:
            mem = allocate(nbytes, CURRENT.device)
            arr = np.empty(shape, dtype, order=order)
            _init(self, arr, mem, CURRENT.device, True)
        else:
            raise NotImplementedError("the CuPy stand-in builds arrays on external memory only through from_dlpack")

    # -- metadata (no sync) --
    shape = property(lambda self: self._np.shape)
    dtype = property(lambda self: self._np.dtype)
    ndim = property(lambda self: self._np.ndim)
    size = property(lambda self: self._np.size)
    itemsize = property(lambda self: self._np.itemsize)
    nbytes = property(lambda self: self._np.nbytes)
    strides = property(lambda self: self._np.strides)
    flags = property(lambda self: Flags(self._np, self._own))

    @property
    def base(self):
        return self._base

    @property
    def data(self):
        from .cuda.memory import MemoryPointer
        return MemoryPointer(self._mem, self._np.__array_interface__["data"][0], self._dev)

    @property
    def device(self):
        from .cuda import Device
        return Device(self._dev)

    @property
    def T(self):
        return view_of(self, self._np.T)

    @property
    def mT(self):
        return view_of(self, np.swapaxes(self._np, -1, -2))

    def _get_real(self):
        return view_of(self, self._np.real) if self.dtype.kind == "c" else self

    def _set_real(self, v):
        self._np.real = unwrap_operand(v)
    real = property(_get_real, _set_real)

    @property
    def imag(self):
        return view_of(self, self._np.imag) if self.dtype.kind == "c" else wrap_new(np.zeros_like(self._np), self._dev)

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": self.dtype.str, "descr": self.dtype.descr,
                "data": (self._np.__array_interface__["data"][0], False),
                "strides": None if self._np.flags.c_contiguous else self.strides, "version": 3}

    # -- conversions CuPy refuses or makes explicit --
    def __array__(self, dtype=None, copy=None):
        raise TypeError("Implicit conversion to a NumPy array is not allowed. Please use `.get()` to construct "
                        "a NumPy array explicitly.")

    def get(self, stream=None, order="C", out=None, blocking=True):
        count_sync("get")
        if out is not None:
            if not isinstance(out, np.ndarray):
                raise TypeError("Only numpy.ndarray can be obtained from cupy.ndarray")
            np.copyto(out, self._np)
            return out
        # CuPy's get() returns a C-ordered (order='C') or F-ordered copy: strides are not kept
        return np.array(self._np, order=order, copy=True)

    def set(self, arr, stream=None):
        if not isinstance(arr, np.ndarray):
            raise TypeError(f"Only numpy.ndarray can be set to cupy.ndarray, got {type(arr)}")
        if arr.shape != self.shape:
            raise ValueError("Shape mismatch. Old shape: {}, new shape: {}".format(self.shape, arr.shape))
        if arr.dtype != self.dtype:
            raise TypeError("{} array cannot be set to {} array".format(arr.dtype, self.dtype))
        count_h2d()
        np.copyto(self._np, arr)

    def item(self, *args):
        count_sync("item")
        return self._np.item(*args)

    def tolist(self):
        count_sync("tolist")
        return self._np.tolist()

    def tobytes(self, order="C"):
        count_sync("tobytes")
        return self._np.tobytes(order)

    def __int__(self):
        count_sync("int")
        return int(self._np)

    def __float__(self):
        count_sync("float")
        return float(self._np)

    def __complex__(self):
        count_sync("complex")
        return complex(self._np)

    def __bool__(self):
        count_sync("bool")
        return bool(self._np)

    def __repr__(self):
        count_sync("repr")
        return repr(self._np).replace("array(", "array(", 1)

    def __str__(self):
        count_sync("str")
        return str(self._np)

    def __format__(self, spec):
        count_sync("format")
        return format(self._np, spec)

    __hash__ = None

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    def __copy__(self):
        return self.copy()

    def __deepcopy__(self, memo):
        return self.copy()

    def __reduce__(self):
        count_sync("pickle")
        return (_rebuild, (np.array(self._np), self._dev))

    # -- DLPack: the capsule carries CUDA's device type --
    def __dlpack_device__(self):
        return (2, self._dev)

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        from ._dlpack import to_capsule
        return to_capsule(self)

    def toDlpack(self):
        return self.__dlpack__()

    # -- NumPy protocols, routed as CuPy routes them --
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        from . import _ufuncs
        cu = _ufuncs.UFUNCS.get(ufunc.__name__)
        if cu is None:
            return NotImplemented
        if method == "__call__":
            return cu(*inputs, **kwargs)
        return getattr(cu, method)(*inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        import cupy
        mod = func.__module__.split(".")[1:] if func.__module__ else []
        target = cupy
        for part in mod:
            if part in ("_core", "core", "lib", "_function_base_impl", "_fromnumeric", "_shape_base_impl",
                        "numeric", "fromnumeric", "multiarray") or part.startswith("_"):
                continue
            target = getattr(target, part, None)
            if target is None:
                return NotImplemented
        fn = getattr(target, func.__name__, None)
        if fn is None:
            return NotImplemented
        return fn(*args, **kwargs)

    # -- indexing --
    def __getitem__(self, key):
        key = unwrap_index(key, self)
        if any(isinstance(k, np.ndarray) for k in (key if isinstance(key, tuple) else (key,))):
            check_device([self])     # advanced indexing runs a kernel
        r = self._np[key]
        if np.isscalar(r) or isinstance(r, np.generic):
            r = self._np[key + (Ellipsis,) if isinstance(key, tuple) else (key, Ellipsis)]
        return wrap_result(r, [self])

    def __setitem__(self, key, value):
        key = unwrap_index(key, self)
        if isinstance(value, np.ndarray):
            count_h2d()
            v = value
        elif isinstance(value, ndarray):
            check_device([value])
            v = value._np
        elif isinstance(value, (list, tuple)):
            count_h2d()
            v = np.asarray(value)
        else:
            v = value
        check_device([self])
        with np.errstate(all="ignore"):
            self._np[key] = v

    # -- methods that exist on cupy.ndarray --
    def __getattr__(self, name):
        if name in NDARRAY_NAMES and hasattr(np.ndarray, name):
            meth = getattr(self._np, name)

            def bound(*args, **kwargs):
                return call_numpy(meth, args, kwargs, [self], name)
            return bound
        raise AttributeError(f"'cupy.ndarray' object has no attribute '{name}'")

    def astype(self, dtype, order="K", casting=None, subok=None, copy=True):
        check_device([self])
        dtype = np.dtype(dtype)
        if not copy and dtype == self.dtype:
            return self
        with np.errstate(all="ignore"):
            r = self._np.astype(dtype, order=order, copy=True)
        return wrap_new(r, self._dev)

    def copy(self, order="C"):
        check_device([self])
        return wrap_new(self._np.copy(order=order), self._dev)

    def view(self, dtype=None, array_class=None):
        if dtype is None:
            return view_of(self, self._np.view())
        return view_of(self, self._np.view(dtype))

    def fill(self, value):
        check_device([self])
        if isinstance(value, ndarray):
            value = value._np
        self._np.fill(value)

    def reduced_view(self, dtype=None):
        return view_of(self, self._np)

    def scatter_add(self, slices, value):
        from ._ufuncs import UFUNCS
        UFUNCS["add"].at(self, slices, value)

    def nonzero(self):
        count_sync("nonzero")
        return tuple(wrap_new(i, self._dev) for i in np.nonzero(self._np))


ndarray.__module__ = "cupy"


def _rebuild(arr, dev):
    return wrap_new(arr, dev)


def _init(obj, arr, mem, dev, own, base=None):
    obj._np, obj._mem, obj._dev, obj._own, obj._base = arr, mem, dev, own, base


def wrap_new(arr, dev):
    """A new device array that owns fresh memory holding ``arr``."""
    if isinstance(arr, np.generic):
        arr = np.asarray(arr)
    if not arr.flags.writeable:
        arr = arr.copy()
    obj = ndarray.__new__(ndarray)
    _init(obj, arr, allocate(arr.nbytes, dev), dev, True)
    return obj


def view_of(base, arr):
    """A view of ``base``'s memory."""
    if not arr.flags.writeable:   # NumPy marks some views read-only; CuPy's never are
        arr = np.lib.stride_tricks.as_strided(arr, arr.shape, arr.strides, writeable=True) \
            if arr.base is not None else arr.copy()
    obj = ndarray.__new__(ndarray)
    _init(obj, arr, base._mem, base._dev, False, base if base._base is None else base._base)
    return obj


def wrap_result(r, inputs):
    """NumPy's result as CuPy would give it: arrays (views keep their base's memory), 0-d for scalars."""
    if isinstance(r, np.ndarray):
        for a in inputs:
            if isinstance(a, ndarray) and a._np.size and r.size and np.may_share_memory(r, a._np):
                return view_of(a, r)
        dev = next((a._dev for a in inputs if isinstance(a, ndarray)), CURRENT.device)
        return wrap_new(r, dev)
    if isinstance(r, np.generic):
        dev = next((a._dev for a in inputs if isinstance(a, ndarray)), CURRENT.device)
        return wrap_new(np.asarray(r), dev)
    if isinstance(r, tuple):
        return tuple(wrap_result(x, inputs) for x in r)
    if isinstance(r, list):
        return [wrap_result(x, inputs) for x in r]
    return r


def unwrap_operand(x):
    """An argument of a cupy function as NumPy sees it; NumPy arrays are refused."""
    if isinstance(x, ndarray):
        return x._np
    if isinstance(x, np.ndarray):
        raise _unsupported(x)
    if isinstance(x, (list, tuple)):
        return type(x)(unwrap_operand(v) for v in x)
    return x


def arrays_in(args, out=None):
    if out is None:
        out = []
    for x in args:
        if isinstance(x, ndarray):
            out.append(x)
        elif isinstance(x, (list, tuple)):
            arrays_in(x, out)
    return out


def unwrap_index(key, owner):
    """An index as NumPy takes it; device index arrays stay on the device, host ones are copied up."""
    def one(k):
        if isinstance(k, ndarray):
            check_device([k])
            if k.dtype == np.bool_:
                count_sync("boolean mask")   # the result's size depends on the mask's values
            return k._np
        if isinstance(k, np.ndarray):
            count_h2d()
            return k
        if isinstance(k, list):
            count_h2d()
            return np.asarray(k)
        if isinstance(k, str):
            raise IndexError("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and integer or "
                             "boolean arrays are valid indices")
        return k
    if isinstance(key, tuple):
        return tuple(one(k) for k in key)
    return one(key)


def call_numpy(fn, args, kwargs, inputs, name):
    """Run ``fn`` on unwrapped arguments, on the current device, and wrap its result."""
    uargs = [unwrap_operand(a) for a in args]
    ukw = {k: unwrap_operand(v) for k, v in kwargs.items()}
    arrs = arrays_in(list(args) + list(kwargs.values())) + [a for a in inputs if isinstance(a, ndarray)]
    with np.errstate(all="ignore"):
        r = fn(*uargs, **ukw)
    # a view (reshape, transpose, ...) launches nothing, so CuPy checks no device for it; anything else runs
    # a kernel on the current device
    if not (isinstance(r, np.ndarray) and any(a._np.size and np.may_share_memory(r, a._np) for a in arrs)):
        check_device(arrs)
    return wrap_result(r, arrs)


# --- operators: every one goes through the ufunc of its name, as CuPy's do ---------------------------------
def _binary(uname, reflected=False, inplace=False):
    def op(self, other):
        from ._ufuncs import UFUNCS
        if isinstance(other, np.ndarray):
            raise _unsupported(other)
        if uname not in UFUNCS:    # matmul is a function in CuPy, not a ufunc
            import cupy
            fn = getattr(cupy, uname)
            if inplace:
                return fn(self, other, out=self)
            return fn(other, self) if reflected else fn(self, other)
        u = UFUNCS[uname]
        if inplace:
            return u(self, other, out=self)
        return u(other, self) if reflected else u(self, other)
    return op


for _py, _u in (("add", "add"), ("sub", "subtract"), ("mul", "multiply"), ("truediv", "true_divide"),
                ("floordiv", "floor_divide"), ("mod", "remainder"), ("pow", "power"), ("and", "bitwise_and"),
                ("or", "bitwise_or"), ("xor", "bitwise_xor"), ("lshift", "left_shift"), ("rshift", "right_shift"),
                ("matmul", "matmul")):
    setattr(ndarray, f"__{_py}__", _binary(_u))
    setattr(ndarray, f"__r{_py}__", _binary(_u, reflected=True))
    setattr(ndarray, f"__i{_py}__", _binary(_u, inplace=True))
for _py, _u in (("lt", "less"), ("le", "less_equal"), ("gt", "greater"), ("ge", "greater_equal"),
                ("eq", "equal"), ("ne", "not_equal")):
    setattr(ndarray, f"__{_py}__", _binary(_u))


def _unary(uname):
    def op(self):
        from ._ufuncs import UFUNCS
        return UFUNCS[uname](self)
    return op


ndarray.__neg__ = _unary("negative")
ndarray.__pos__ = _unary("positive")
ndarray.__abs__ = _unary("absolute")
ndarray.__invert__ = _unary("invert")
ndarray.__hash__ = None
