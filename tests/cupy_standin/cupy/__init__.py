"""A strict stand-in for CuPy 14, for running npusim's cuda mode on machines without a GPU.

Test-only: it lives with the tests and is never installed with npusim. Put its
folder first on ``PYTHONPATH`` and ``import cupy`` finds it; npusim's runtime
then probes two GPUs and runs in cuda mode with no special case.

It holds code to CuPy's rules where code usually trips on a real GPU: its
arrays are not NumPy arrays and refuse implicit conversion; NumPy arrays are
refused as operands; only the names CuPy 14 exports exist (the list was read
from CuPy 14.2 and lives in ``_cupy14_names.json``); ufuncs take only the
dtypes CuPy's loop tables have (bfloat16 where CuPy 14 has it); results are
0-d arrays, never scalars; host syncs and host-to-device copies are counted
(``cupy._standin_counts()``); kernels from CUDA source run their own body,
compiled for the host. Data lives in host memory, so values are NumPy's.
"""
from __future__ import annotations

import builtins as _builtins
import sys as _sys
import types as _types

import numpy as _np

from . import _core
from ._core import NAMES as _NAMES, ndarray
from ._ufuncs import UFUNCS as _UFUNCS, ufunc
from ._kernels import ElementwiseKernel, RawKernel, RawModule, ReductionKernel
from . import cuda, _dlpack

_NPUSIM_STANDIN = True
__version__ = "14.2.0"

_K = _core
# Functions whose bfloat16 support in CuPy 14 is not established (cuBLAS/cuSOLVER/thrust paths, scans):
# the stand-in refuses bfloat16 there, so npusim computes those in float32 as torch's opmath does.
_NO_BFLOAT16 = frozenset("""matmul dot vdot inner outer tensordot einsum kron sort argsort lexsort partition
argpartition searchsorted cumsum cumprod nancumsum nancumprod bincount histogram unique median percentile quantile
clip""".split())


def _standin_counts():
    """Host syncs and host-to-device copies counted so far on this thread."""
    c = _core.COUNTS
    return {"host_syncs": c.host_syncs, "h2d_copies": c.h2d_copies}


def _standin_reset_counts():
    c = _core.COUNTS
    c.host_syncs = c.h2d_copies = 0
    c.sync_sites = []


def _standin_sync_sites():
    return list(_core.COUNTS.sync_sites)


def _is_bf16(x):
    return isinstance(x, ndarray) and x.dtype.char == "E"


def _function(name, np_fn):
    refuses_bf16 = name in _NO_BFLOAT16

    def fn(*args, **kwargs):
        if refuses_bf16 and _builtins.any(_is_bf16(a) for a in _K.arrays_in(list(args) + list(kwargs.values()))):
            raise TypeError(f"cupy.{name} does not support bfloat16 in this CuPy version (stand-in)")
        return _K.call_numpy(np_fn, args, kwargs, [], name)
    fn.__name__ = fn.__qualname__ = name
    return fn


def _sync_function(name, np_fn):
    """Functions whose output size depends on the data: CuPy reads a count back from the device."""
    inner = _function(name, np_fn)

    def fn(*args, **kwargs):
        _core.count_sync(name)
        return inner(*args, **kwargs)
    fn.__name__ = name
    return fn


# --- creation -------------------------------------------------------------------------------------------------
def _from_host(obj, dtype=None, order="K", copy=True):
    _core.count_h2d()
    arr = _np.array(obj, dtype=dtype, order=order if order in "CFKA" else "K", copy=True)
    if arr.dtype == object:
        raise ValueError("Unsupported dtype object")
    return _core.wrap_new(arr, _core.CURRENT.device)


def array(obj, dtype=None, copy=True, order="K", subok=False, ndmin=0, blocking=False):
    if isinstance(obj, ndarray):
        if obj._dev != _core.CURRENT.device or copy or (dtype is not None and _np.dtype(dtype) != obj.dtype):
            r = _core.wrap_new(_np.array(obj._np, dtype=dtype, order=order, copy=True), _core.CURRENT.device)
        else:
            r = obj
    elif isinstance(obj, (list, tuple)) and _builtins.any(isinstance(x, ndarray) for x in _K.arrays_in(obj)):
        return stack([asarray(x, dtype) for x in obj]) if obj else _from_host(obj, dtype)
    else:
        r = _from_host(obj, dtype, order)
    while r.ndim < ndmin:
        r = r[None]
    return r


def asarray(a, dtype=None, order=None, blocking=False):
    if isinstance(a, ndarray) and a._dev == _core.CURRENT.device and (dtype is None or _np.dtype(dtype) == a.dtype):
        return a
    return array(a, dtype=dtype, copy=False, order=order or "K")


asanyarray = asarray


def ascontiguousarray(a, dtype=None):
    if not isinstance(a, ndarray):
        return array(a, dtype=dtype, order="C")
    if a.flags.c_contiguous and (dtype is None or _np.dtype(dtype) == a.dtype):
        return a
    _core.check_device([a])
    return _core.wrap_new(_np.ascontiguousarray(a._np, dtype=dtype), a._dev)


def _sized(np_fn):
    def make(shape, dtype=float, order="C", *args):
        dtype = _np.dtype(dtype)
        n = 1
        for s in (shape if isinstance(shape, (tuple, list)) else (shape,)):
            n *= int(s)
        mem = _core.allocate(n * dtype.itemsize, _core.CURRENT.device)   # capacity first, as a GPU would
        arr = np_fn(shape, *args, dtype=dtype, order=order)
        obj = ndarray.__new__(ndarray)
        _core._init(obj, arr, mem, _core.CURRENT.device, True)
        return obj
    return make


empty = _sized(_np.empty)
zeros = _sized(_np.zeros)
ones = _sized(_np.ones)


def full(shape, fill_value, dtype=None, order="C"):
    if isinstance(fill_value, ndarray):
        fill_value = fill_value._np
    if dtype is None:
        dtype = _np.array(fill_value).dtype
    return _sized(lambda s, v, dtype, order: _np.full(s, v, dtype=dtype, order=order))(shape, dtype, order,
                                                                                          fill_value)


def asnumpy(a, stream=None, order="C", out=None, blocking=True):
    if isinstance(a, ndarray):
        return a.get(order=order, out=out)
    return _np.asarray(a, order=order)


def get_array_module(*args):
    import sys
    for a in args:
        if isinstance(a, ndarray):
            return sys.modules[__name__]
    return _np


def from_dlpack(x, *, device=None, copy=None):
    return _dlpack.from_dlpack(x)


fromDlpack = from_dlpack


def fuse(*args, **kwargs):
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return args[0]
    return lambda f: f


def may_share_memory(a, b, max_work=None):
    return bool(isinstance(a, ndarray) and isinstance(b, ndarray) and a._dev == b._dev
                and _np.may_share_memory(a._np, b._np))


def shares_memory(a, b, max_work=None):
    return bool(isinstance(a, ndarray) and isinstance(b, ndarray) and a._dev == b._dev
                and _np.shares_memory(a._np, b._np))


def where(condition, x=None, y=None):
    if x is None and y is None:
        return nonzero(condition)
    return _function("where", _np.where)(condition, x, y)


def get_default_memory_pool():
    return cuda.memory._pool


def is_available():
    return cuda.is_available()


_SPECIAL = {"array", "asarray", "asanyarray", "ascontiguousarray", "empty", "zeros", "ones", "full", "asnumpy",
            "get_array_module", "from_dlpack", "fromDlpack", "fuse", "may_share_memory", "shares_memory", "where",
            "get_default_memory_pool", "is_available"}
_SYNCING = {"nonzero", "flatnonzero", "argwhere", "unique", "bincount", "extract", "compress", "trim_zeros",
            "histogram", "unravel_index", "ravel_multi_index"}   # the last two check bounds on the host

_g = globals()
for _name, _kind in _NAMES["kinds"].items():
    if _name in _g or _name in _SPECIAL:
        continue
    if _kind == "ufunc" and _name in _UFUNCS:
        _g[_name] = _UFUNCS[_name]
    elif _kind == "function" and hasattr(_np, _name):
        _g[_name] = (_sync_function if _name in _SYNCING else _function)(_name, getattr(_np, _name))
    elif _kind in ("type", "value") and hasattr(_np, _name):
        _g[_name] = getattr(_np, _name)


class _Namespace:
    """A CuPy submodule made of NumPy's functions of the same names."""

    def __init__(self, name, np_mod, names):
        self.__name__ = f"cupy.{name}"
        for n in names:
            if hasattr(np_mod, n):
                obj = getattr(np_mod, n)
                setattr(self, n, _function(f"{name}.{n}", obj) if callable(obj) and not isinstance(obj, type)
                        else obj)


linalg = _Namespace("linalg", _np.linalg, _NAMES["linalg"])
for _n in ("matmul",):
    setattr(linalg, _n, _g[_n])
# cupy.linalg's batched LU helper (cuBLAS/cuSOLVER getrf), importable by its module path as in CuPy
from . import _vendor_linalg  # noqa: E402
linalg._decomposition = _types.ModuleType("cupy.linalg._decomposition")
linalg._decomposition._lu_factor = _vendor_linalg.lu_factor_batched
_sys.modules["cupy.linalg"] = linalg
_sys.modules["cupy.linalg._decomposition"] = linalg._decomposition
fft = _Namespace("fft", _np.fft, _NAMES["fft"])


class _Lib:
    pass


lib = _Lib()


def _as_strided(x, shape=None, strides=None):
    if not isinstance(x, ndarray):
        raise _K._unsupported(x)
    return _core.view_of(x, _np.lib.stride_tricks.as_strided(x._np, shape, strides, writeable=True))


def _sliding_window_view(x, window_shape, axis=None):
    return _core.view_of(x, _np.lib.stride_tricks.sliding_window_view(x._np, window_shape, axis, writeable=True))


lib.stride_tricks = _Namespace("lib.stride_tricks", _np.lib.stride_tricks, ())
lib.stride_tricks.as_strided = _as_strided
lib.stride_tricks.sliding_window_view = _sliding_window_view

del _g, _name, _kind, _n
