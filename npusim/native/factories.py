"""Factories and the copy/fill family.

Factories have no tensor input: the dispatcher chose the backend from
``device``, and the array module comes from that device's hooks (NumPy for cpu).
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from ..core.c10 import dtype as D
from ..core.c10.device import CPU
from ..core.c10.device_guard import DeviceGuard, has_guard_impl
from ..core.c10.device_hooks import get_device_hooks, resolve_target_device
from ..core.c10.float8_rounding import to_float8
from ..core.c10.limited_dtypes import FLOAT8_NP, HOST_ONLY_NP
from ..core.c10.memory_format import check_rank, dense_order
from ..core.c10.storage import array_address, array_root
from ..core.c10.user_frames import user_stacklevel
from ..core.dispatch.ops_namespace import aten
from ..core.tensor import Tensor
from ..kernels import complex as KX
from ..kernels import factories as KC
from ..kernels import parallel as P
from ..kernels.array_api import HALF_TYPES, namespace_of
from . import common as C
from . import limited_dtype_support as LDS
from .views import _ints, dense_permutation, strided_view


_ndarray, _empty = np.ndarray, np.empty


def xp_for(dev):
    if dev is CPU:
        return np
    hooks = get_device_hooks(dev.type)
    return hooks.array_namespace(dev)


def _check_layout(layout):
    if layout not in (None, "strided") and getattr(layout, "name", None) != "strided":
        raise RuntimeError(f"npusim supports only the strided layout, got {layout}")


def _target(dtype, device, layout=None, default=None):
    _check_layout(layout)
    dev = resolve_target_device(device)
    dt = dtype if dtype is not None else (default if default is not None else D.get_default_dtype())
    if not isinstance(dt, D.dtype):
        raise TypeError(f"dtype must be npusim.dtype, not {type(dt).__name__}")
    return dt, dev


def _checked_shape(size):
    shape = _ints(size)
    for s in shape:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(shape)}")
    return shape


_U64_END, _INT64_MAX = 1 << 64, (1 << 63) - 1


def _check_storage_size(shape, itemsize) -> None:
    """torch's check of a new storage's size: the product of the sizes (in unsigned 64 bits, step by step) and
    its bytes (in int64) must not overflow, before any device is asked for the memory."""
    n = 1
    for s in shape:
        n *= s
        if n >= _U64_END:   # even with a later size of 0, as torch's step-by-step product
            break
    if n >= _U64_END or n * itemsize > _INT64_MAX:
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(shape)}")


def _check_complex32(xp, dt):
    """complex32 lives in NumPy's structured pair of float16, which CuPy lacks: no complex32 on a GPU (yet)."""
    if dt is D.complex32 and xp is not np:
        raise NotImplementedError("complex32 tensors on a device whose arrays are CuPy's are not supported by "
                                  "npusim (CuPy has no complex32); use complex64")


def _allocate(fill, shape, dt, dev):
    _check_storage_size(shape, dt.itemsize)
    hooks = None if dev is CPU else get_device_hooks(dev.type)
    if hooks is not None:
        hooks.check_allocation(math.prod(shape) * dt.itemsize, dev)
    xp = np if hooks is None else hooks.array_namespace(dev)
    _check_complex32(xp, dt)
    if xp is not np and dt.np in HOST_ONLY_NP:
        raise LDS.cupy_refusal(dt, dev)     # float8, float4 and the sub-byte integers: CuPy has no such types
    try:
        a = fill(xp, shape, dt.np)
    except MemoryError:
        raise RuntimeError(f"[enforce fail at alloc_cpu.cpp] DefaultCPUAllocator: can't allocate memory: you "
                           f"tried to allocate {math.prod(shape) * dt.itemsize} bytes.") from None
    return C.make(a, dev)


def empty(size, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    dt, dev = _target(dtype, device, layout)
    shape = _checked_shape(size)
    if memory_format is None or memory_format == "contiguous_format":
        return _allocate(lambda xp, s, d: xp.empty(s, d), shape, dt, dev)
    if memory_format == "preserve_format":
        raise RuntimeError("unsupported memory format Preserve")
    check_rank(len(shape), memory_format)
    cl = _CHANNELS_LAST[memory_format]
    t = _allocate(lambda xp, s, d: xp.empty(s, d), tuple(shape[i] for i in cl), dt, dev)
    t._a = t._a.transpose(tuple(int(i) for i in np.argsort(cl)))
    return t


def empty_strided(size, stride, dtype=None, layout=None, device=None, pin_memory=None):
    dt, dev = _target(dtype, device, layout)
    shape, stride = _checked_shape(size), _ints(stride, "stride")
    if len(shape) != len(stride):
        raise RuntimeError(f"dimensionality of sizes ({len(shape)}) must match dimensionality of strides "
                           f"({len(stride)})")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(shape)} and "
                           f"strides={list(stride)}")
    span = 0 if 0 in shape else 1 + sum((n - 1) * s for n, s in zip(shape, stride))
    t = _allocate(lambda xp, s, d: xp.empty((span,), d), (span,), dt, dev)
    t._a = strided_view(t._a, shape, tuple(s * dt.itemsize for s in stride))
    return t


def zeros(size, dtype=None, layout=None, device=None, pin_memory=None):
    dt, dev = _target(dtype, device, layout)
    return _allocate(lambda xp, s, d: xp.zeros(s, d), _checked_shape(size), dt, dev)


def ones(size, dtype=None, layout=None, device=None, pin_memory=None):
    dt, dev = _target(dtype, device, layout)
    if dt is D.complex32:   # NumPy's ones would set both parts of the float16 pair
        return _allocate(KX.ones, _checked_shape(size), dt, dev)
    return _allocate(lambda xp, s, d: xp.ones(s, d), _checked_shape(size), dt, dev)


def _fill_scalar(value, np_dt, numel):
    """``value`` converted for a fill of ``numel`` elements: torch fills a single element without its range check
    for 16-bit floats (an overflowing value becomes inf), and checks every other fill."""
    return C.checked_scalar(value, np_dt, check_reduced_float=numel != 1)


def full(size, fill_value, dtype=None, layout=None, device=None, pin_memory=None):
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    default = C._scalar_dtype(fill_value) if dtype is None else None
    dt, dev = _target(dtype, device, layout, default)
    shape = _checked_shape(size)
    v = _fill_scalar(fill_value, dt.np, math.prod(shape))
    if dt is D.complex32:
        return _allocate(lambda xp, s, d: KX.full(xp, s, v, d), shape, dt, dev)
    return _allocate(lambda xp, s, d: xp.full(s, v, d), shape, dt, dev)


def scalar_tensor(s, dtype=None, layout=None, device=None, pin_memory=None):
    """A 0-dim tensor; 16-bit floats take overflowing values as inf (torch converts through float)."""
    if isinstance(s, Tensor):
        s = s.item()
    dt, dev = _target(dtype, device, layout)
    v = np.array(float(s)).astype(dt.np) if dt.np in HALF_TYPES else C.checked_scalar(s, dt.np)
    return _allocate(lambda xp, shape, d: xp.asarray(v).reshape(shape), (), dt, dev)


def _like(self, dtype, layout, device, memory_format):
    _check_layout(layout)
    dt = self.dtype if dtype is None else dtype
    dev = self._device if device is None else resolve_target_device(device)
    return dt, dev


_CHANNELS_LAST = {"channels_last": (0, 2, 3, 1), "channels_last_3d": (0, 2, 3, 4, 1)}


def _like_array(xp, self, dt, memory_format, fill):
    _check_complex32(xp, dt)
    a = self._a
    shape = a.shape
    cl = _CHANNELS_LAST.get(memory_format) if memory_format is not None else None
    if cl is not None:
        check_rank(a.ndim, memory_format)
        base = fill(xp, tuple(shape[i] for i in cl), dt.np)
        return base.transpose(tuple(int(i) for i in np.argsort(cl)))
    if memory_format in (None, "preserve_format") and not a.flags.c_contiguous:
        perm = tuple(range(a.ndim - 1, -1, -1)) if a.flags.f_contiguous else dense_permutation(a)
        if perm is None:   # not dense: torch's infer_dense_strides order
            perm = dense_order(a.shape, a.strides)
        base = fill(xp, tuple(shape[i] for i in perm), dt.np)
        inv = np.argsort(perm)
        return base.transpose(tuple(int(i) for i in inv))
    return fill(xp, shape, dt.np)


def _like_factory(fill, dense=None):
    """The ``*_like`` kernel filling with ``fill(xp, shape, np_dtype)``; ``dense(shape, np_dtype)`` (NumPy's, for
    zeros and ones) lets the common case (a dense NumPy array, self's dtype and device: an autograd seed, a zeroed
    buffer) make its result without the general path's helpers."""
    def like(self, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
        a = self._a
        if (dense is not None and dtype is None and device is None and layout is None
                and a.__class__ is _ndarray and memory_format in (None, "preserve_format") and a.flags.c_contiguous
                and a.dtype not in KX.COMPLEX32_SET):
            dev = self._device
            hooks = None if dev is CPU else get_device_hooks(dev.type)
            if hooks is None or hooks.array_namespace(dev) is np:
                if hooks is not None:
                    hooks.check_allocation(a.size * a.dtype.itemsize, dev)
                return C.make(dense(a.shape, a.dtype), dev)
        dt, dev = _like(self, dtype, layout, device, memory_format)
        xp = xp_for(dev)
        if xp is not np and dt.np in HOST_ONLY_NP:
            raise LDS.cupy_refusal(dt, dev)
        hooks = None if dev is CPU else get_device_hooks(dev.type)
        if hooks is not None:
            hooks.check_allocation(self._a.size * dt.itemsize, dev)
            if dev is not self._device and has_guard_impl(dev.type):
                # dispatched on self's device: the new array belongs on ``dev`` (torch's empty_like calls
                # empty(), whose kernel runs under dev's guard)
                with DeviceGuard(dev):
                    return C.make(_like_array(xp, self, dt, memory_format, fill), dev)
        return C.make(_like_array(xp, self, dt, memory_format, fill), dev)
    return like


empty_like = _like_factory(lambda xp, s, d: xp.empty(s, d))
def _dense_ones(shape, np_dt):
    r = _empty(shape, np_dt)
    r.fill(1)   # np.ones's own two steps, without its Python wrapper
    return r


zeros_like = _like_factory(lambda xp, s, d: xp.zeros(s, d), np.zeros)
ones_like = _like_factory(lambda xp, s, d: KX.ones(xp, s, d) if d in KX.COMPLEX32_SET else xp.ones(s, d),
                          _dense_ones)


def full_like(self, fill_value, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    dt, dev = _like(self, dtype, layout, device, memory_format)
    v = _fill_scalar(fill_value, dt.np, self.numel())
    fill = (lambda xp, s, d: KX.full(xp, s, v, d)) if dt is D.complex32 else (lambda xp, s, d: xp.full(s, v, d))
    return C.make(_like_array(xp_for(dev), self, dt, memory_format, fill), dev)


def eye(n, m=None, dtype=None, layout=None, device=None, pin_memory=None):
    if n < 0:
        raise RuntimeError(f"n must be greater or equal to 0, got {n}")
    if m is not None and m < 0:
        raise RuntimeError(f"m must be greater or equal to 0, got {m}")
    dt, dev = _target(dtype, device, layout)
    m = n if m is None else m
    return _allocate(lambda xp, s, d: xp.eye(n, m, dtype=d), (n, m), dt, dev)


def _number(v, name):
    if isinstance(v, Tensor):
        return v.item()
    if not isinstance(v, (int, float, np.number)) or isinstance(v, complex):
        raise TypeError(f"arange(): argument '{name}' must be Number, not {type(v).__name__}")
    return v.item() if isinstance(v, np.generic) else v


def arange(start, end=None, step=1, dtype=None, layout=None, device=None, pin_memory=None):
    if end is None:
        start, end = 0, start
    start, end, step = _number(start, "start"), _number(end, "end"), _number(step, "step")
    if dtype is None:
        dtype = D.get_default_dtype() if any(isinstance(v, float) for v in (start, end, step)) else D.int64
    dt, dev = _target(dtype, device, layout)
    if dt is D.bool:
        raise NotImplementedError("\"arange_cpu\" not implemented for 'Bool'")
    n = KC.arange_length_int64(start, end, step) if dt is D.int64 else KC.arange_length(start, end, step)
    if not dt.is_floating_point:   # the kernel reads float numbers as int64 after the size is known
        KC.check_int64_values(*(v for v in (start, end, step) if isinstance(v, float)))
    return _allocate(lambda xp, s, d: KC.arange(xp, start, step, n, d), (n,), dt, dev)


def arange_out(start, end, step=1, out=None):
    r = arange(start, end, step, dtype=out.dtype, device=out._device)
    return C.finish_out(out, r._a, r.dtype, r._device)


def linspace(start, end, steps, dtype=None, layout=None, device=None, pin_memory=None):
    start, end = _number(start, "start"), _number(end, "end")
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    dt, dev = _target(dtype, device, layout)
    if steps <= 1:   # torch's kernel runs from two steps on: one step is fill_(start), none checks nothing
        return full((steps,), start if steps else 0, dtype=dt, device=dev)
    if dt is D.bool:
        raise NotImplementedError("\"linspace_cpu\" not implemented for 'Bool'")
    # the ends are converted to the result dtype first (refusing overflow), as torch's kernel does
    start, end = (C.checked_scalar(v, dt.np).item() for v in (start, end))
    return _allocate(lambda xp, s, d: KC.linspace(xp, start, end, steps, d), (steps,), dt, dev)


# --- copy and fill ---------------------------------------------------------------------

def copy_(self, src, non_blocking=False):
    """Same-device copy with broadcasting and dtype conversion (the npu backend adds transfers)."""
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_(): argument 'src' (position 1) must be Tensor, not {type(src).__name__}")
    if src._device is not self._device:
        raise RuntimeError(f"copy_: no kernel copies from {src._device} to {self._device} on this backend")
    dst = self._a
    s = src._a
    if s.shape != dst.shape:
        try:
            np.broadcast_shapes(s.shape, dst.shape)
        except ValueError:
            C.shape_error(dst, s)
        if C.broadcast_shapes(dst.shape, s.shape) != dst.shape:
            C.shape_error(dst, s)
    if src is self or (dst is s):
        return self
    xp = namespace_of(dst)
    _write(xp, dst, s)
    self._bump_version()
    return self


def warn_if_discarding(src_dt, dst_dt) -> None:
    if KX.discards_imaginary(src_dt, dst_dt):
        warnings.warn(KX.DISCARDS_IMAGINARY, UserWarning, stacklevel=user_stacklevel())


def _write(xp, dst, src):
    src_dt = getattr(src, "dtype", dst.dtype)
    if KX.is_complex(src_dt) or dst.dtype in KX.COMPLEX32_SET:
        warn_if_discarding(src_dt, dst.dtype)
        return KX.write(dst, src)   # complex32 part by part; complex to real keeps the real part
    if dst.dtype in FLOAT8_NP and (src_dt != dst.dtype or not hasattr(src, "dtype")):
        src = to_float8(src, dst.dtype)     # torch's rounding into float8 (core/c10/float8_rounding.py)
    try:
        if xp is np:
            P.copyto(dst, src, "unsafe")   # large copies run on the intra-op threads
        else:
            xp.copyto(dst, src, casting="unsafe")
    except ValueError as e:
        if "read-only" in str(e):
            C.raise_overlap()
        raise


def _fill(xp, dst, value):
    """Write one value everywhere; an expanded tensor may be filled (every alias gets the same value)."""
    if not getattr(dst.flags, "writeable", True) and xp is np:
        root = array_root(dst)
        if root.flags.writeable and (root.flags.c_contiguous or root.flags.f_contiguous):
            offset = array_address(dst) - array_address(root)
            dst = np.ndarray(dst.shape, dst.dtype, buffer=root.reshape(-1, order="A").view(np.uint8),
                             offset=offset, strides=dst.strides)
    _write(xp, dst, value)


def fill_(self, value):
    if isinstance(value, Tensor):
        if value._a.ndim != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{value._a.ndim} dimensions.")
        if value._device is self._device:   # torch copies a same-device value: a plain cast, unchecked
            a = self._a
            _fill(namespace_of(a), a, value._a.copy())   # a copy, as the value may be a view of self
            self._bump_version()
            return self
        value = value.item()
    a = self._a
    _fill(namespace_of(a), a, _fill_scalar(value, a.dtype, a.size))
    self._bump_version()
    return self


def zero_(self):
    a = self._a
    _fill(namespace_of(a), a, 0)
    self._bump_version()
    return self


def local_scalar_dense(self):
    a = self._a
    if a.size != 1:
        raise RuntimeError(f"a Tensor with {a.size} elements cannot be converted to Scalar")
    if a.dtype in KX.COMPLEX32_SET:
        a = KX.widen(a)
    v = a.reshape(()).item() if a.__class__ is np.ndarray else a.reshape(()).get().item()
    if a.dtype == C.BFLOAT16:
        v = float(v)
    return v


def resize_(self, size, memory_format=None):
    shape = _checked_shape(size)
    if shape == self._a.shape:
        return self
    C.resize_in_storage(self, shape)
    self._bump_version()
    return self


def to_copy(self, dtype=None, layout=None, device=None, pin_memory=None, non_blocking=False,
            memory_format=None):
    """``_to_copy``: a new tensor on ``device`` with ``dtype``, filled through ``copy_``."""
    dt = self.dtype if dtype is None else dtype
    dev = self._device if device is None else resolve_target_device(device)
    if dev is self._device and memory_format in (None, "preserve_format"):
        a = self._a
        C.check_capacity(a.size * dt.itemsize, dev)     # an expanded view's copy holds every element
        if dt.is_complex or KX.is_complex(a.dtype):
            warn_if_discarding(a.dtype, dt.np)
            r = KX.cast(a, dt.np)
        elif dt.np in FLOAT8_NP and a.dtype != dt.np:
            r = to_float8(a, dt.np)     # torch's rounding (ml_dtypes' differs past e4m3fn's range, and for e8m0)
        else:
            r = P.astype(a, dt.np)
        return C.make(r, dev)
    out = aten.empty_like.default(self, dtype=dt, device=dev, memory_format=memory_format)
    aten.copy_.default(out, self, non_blocking)
    return out


# _to_copy is a kernel in its own right on every device (CompositeExplicitAutograd): it builds on empty_like and copy_
COMPOSITE = {"_to_copy": to_copy}
