"""Matrix products: matmul and the special cases it reduces to (dot, mv, mm, bmm),
the fused forms (addmm, addmv, baddbmm) and outer (einsum, a composition of these, is in
``linalg_products_einsum.py``).

torch does not promote types in matrix products: the operands must share one
dtype, and each entry point words its shape and dtype errors its own way, in
its own order. ``matmul`` reports the errors of whichever special case torch
reduces it to, so its error path replays torch's choice (including the
"fold" of a batch into the rows of one large mm). The common path checks only
what it must and hands the arrays to ``npusim.kernels.linalg_products``.
"""
from __future__ import annotations

import math

import numpy as np

from ..core.c10 import dtype as D
from ..core.c10.device import CPU
from ..core.tensor import Tensor, _wrap_dim
from ..kernels import linalg_products as K
from ..kernels.array_api import namespace_of
from . import common as C

FROM_NP = C.FROM_NP
_BOOL = np.dtype(np.bool_)
_F32 = np.dtype(np.float32)
_make = C.make

def _cxx(dt) -> str:
    """c10's TypeMeta name of a NumPy dtype: some of torch's matmul messages print it, not the ScalarType name."""
    return C.CPP_NAME[dt.name]


_tname = C.tname


# --- operands ---------------------------------------------------------------------------------------

def _tensor(x) -> Tensor:
    """A Tensor argument; a Python number is torch's wrapped scalar (a 0-dim cpu tensor)."""
    if isinstance(x, Tensor):
        return x
    return _make(np.asarray(x), CPU)


def _device(first: Tensor, *others: Tensor):
    """The device of a matrix product: every operand must be on it (no cpu-scalar exception)."""
    dev = first._device
    for t in others:
        if t._device is not dev:
            C.raise_device_mismatch(dev, t._device)
    return dev


def _out_dtype_error(expected, got):
    raise RuntimeError(f"Expected out tensor to have dtype {_cxx(expected)}, but got {_cxx(got)} instead")


def _prepare_out(out, shape, dev):
    """Device check and resize (with torch's warning); dtypes were checked by the caller."""
    return C.prepare_out(out, shape, None, dev, check_cast=False)


def _write(out: Tensor, r):
    C.write_out(out, r)
    return out


# --- torch's checks, on shapes and NumPy dtypes (shared by the entry points and matmul) ------------------

def _check_dot(s1, s2, d1, d2):
    if len(s1) != 1 or len(s2) != 1:
        raise RuntimeError(f"1D tensors expected, but got {len(s1)}D and {len(s2)}D tensors")
    if d1 != d2:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found {_tname(d1)} and "
                           f"{_tname(d2)}")
    if s1[0] != s2[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{s1[0]}] and src [{s2[0]}] to have the "
                           f"same number of elements, but got {s1[0]} and {s2[0]} elements respectively")
    if d1 == _BOOL:
        C.not_implemented("dot", d1)


def _check_mv(ms, vs, md, vd, out=None, resized=False):
    """mat @ vec as torch's addmv sees it.

    ``out``: the out= dtype (mv.out) or None; ``resized``: whether out= has the wrong shape.
    torch passes a well-shaped out= as addmv's input, so its dtype is named first;
    otherwise the input is a fresh tensor of vec's dtype and out= gets the usual check.
    """
    if ms[1] != vs[0]:
        raise RuntimeError(f"size mismatch, got input ({ms[0]}), mat ({ms[0]}x{ms[1]}), vec ({vs[0]})")
    first = vd if out is None or resized else out
    if md != vd or first != vd:
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {_tname(first)}, "
                           f"{_tname(md)}, and {_tname(vd)}")
    if out is not None and out != vd:
        _out_dtype_error(vd, out)
    if md == _BOOL and ms[0] and ms[1]:
        C.not_implemented("addmv_impl_cpu", md)


def _check_mm(s1, s2, d1, d2, out=None):
    if s1[1] != s2[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({s1[0]}x{s1[1]} and {s2[0]}x{s2[1]})")
    if out is not None and out != d1:
        _out_dtype_error(d1, out)
    if d1 != d2:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {_cxx(d1)} != {_cxx(d2)}")
    if d1 == _BOOL and s1[0] and s1[1] and s2[1]:
        C.not_implemented("addmm_impl_cpu_", d1)


def _check_bmm(s1, s2, d1, d2, out=None, kernel="bmm"):
    if len(s1) != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if len(s2) != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if s2[0] != s1[0] or s2[1] != s1[2]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{s1[0]}, {s1[2]}] "
                           f"but got: [{s2[0]}, {s2[1]}].")
    if out is not None and out != d2:
        _out_dtype_error(d2, out)
    _bmm_dtype_checks(s1[0], s1[1], s1[2], s2[2], d1, d2, kernel)


def _bmm_dtype_checks(batch, n, k, p, d1, d2, kernel="bmm"):
    """torch's bmm checks dtypes only when there is something to multiply, and with words that
    depend on the size: a naive kernel below 400 multiply-adds per matrix, BLAS-backed mm above."""
    if not (batch and n and p and k) or (d1 == d2 and d1 != _BOOL):
        return
    if k * n * p < 400:
        if d1 == _BOOL:
            C.not_implemented(kernel, d1)
        raise RuntimeError(f"expected scalar type {_tname(d1)} but found {_tname(d2)}")
    if d1 != d2:
        if d2.kind == "f" and d2.itemsize >= 4:
            raise RuntimeError(f"expected scalar type {_tname(d2)} but found {_tname(d1)}")
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {_cxx(d1)} != {_cxx(d2)}")
    C.not_implemented("addmm_impl_cpu_", d1)


def _zeros(like, shape, dt):
    """The result of a product with nothing to multiply (torch's bmm then takes batch2's dtype)."""
    return namespace_of(like).zeros(shape, dt)


def _size(shape, dim):
    """``t.size(dim)`` with torch's IndexError (0-dim tensors have their own words)."""
    if not shape:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    return shape[_wrap_dim(dim, len(shape))]


def _check_expand(a, target):
    """torch's expand_size checks for the ``input`` of addmm / baddbmm (the same words as ``expand``)."""
    if len(target) < a.ndim:
        raise RuntimeError(f"expand(npusim.{_tname(a.dtype)}Tensor{{{list(a.shape)}}}, size={list(target)}): the "
                           f"number of sizes provided ({len(target)}) must be greater or equal to the number of "
                           f"dimensions in the tensor ({a.ndim})")
    lead = len(target) - a.ndim
    for i in reversed(range(a.ndim)):  # torch checks from the last dimension
        n = a.shape[i]
        if n != 1 and n != target[lead + i]:
            raise RuntimeError(f"The expanded size of the tensor ({target[lead + i]}) must match the existing size "
                               f"({n}) at non-singleton dimension {lead + i}.  Target sizes: {list(target)}.  "
                               f"Tensor sizes: {list(a.shape)}")


# --- matmul ---------------------------------------------------------------------------------------------------

def _matmul_shape(s1, s2):
    """The result shape of ``a @ b`` (NumPy's and torch's rules), or None when they do not fit."""
    if not s1 or not s2:
        return None
    if len(s2) == 1:
        k2, tail = s2[0], ()
    else:
        k2, tail = s2[-2], s2[-1:]
    if s1[-1] != k2:
        return None
    try:
        batch = np.broadcast_shapes(s1[:-2], s2[:-2])
    except ValueError:
        return None
    return batch + s1[-2:-1] + tail


def _mT(shape):
    return shape[:-2] + (shape[-1], shape[-2])


def _should_fold(s: Tensor, o: Tensor, has_out: bool) -> bool:
    """torch's choice to fold the batch of the larger operand into one mm / mv."""
    a, b = s._a, o._a
    if a.ndim >= b.ndim:
        shape, strides, dim_t2, t2_grad = a.shape, a.strides, b.ndim, o.requires_grad
    else:
        shape, strides, dim_t2, t2_grad = _mT(b.shape), _mT(b.strides), a.ndim, s.requires_grad
    if not (len(shape) >= 3 and dim_t2 <= 2):
        return False
    if t2_grad and not has_out:
        return True
    if a.ndim == 2:
        return False
    if math.prod(shape) == 0:
        return True
    return all(strides[i] == strides[i + 1] * shape[i + 1] for i in range(len(shape) - 2))


def _matmul_raise(s: Tensor, o: Tensor, out=None, out_shape=None):
    """Raise the error torch gives for ``s @ o`` (``out``: the out= dtype), following its dispatch."""
    a, b = s._a, o._a
    d1, d2 = a.ndim, b.ndim
    if d1 == 0 or d2 == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {d1}D and {d2}D")
    if d1 == 1 and d2 == 1:
        if out is not None and out != a.dtype:
            raise RuntimeError(f"result dtype {_tname(out)} does not match input dtype {_tname(a.dtype)}")
        _check_dot(a.shape, b.shape, a.dtype, b.dtype)
    elif d1 == 2 and d2 == 1:
        _check_mv(a.shape, b.shape, a.dtype, b.dtype, out, out_shape != a.shape[:1])
    elif d1 == 1 and d2 == 2:
        _check_mm((1, a.shape[0]), b.shape, a.dtype, b.dtype, out)
    elif d1 == 2 and d2 == 2:
        _check_mm(a.shape, b.shape, a.dtype, b.dtype, out)
    elif _should_fold(s, o, out is not None):
        if d2 > d1:  # torch folds other.mT and multiplies by self (transposed when a matrix)
            t1, t1d, t2d = _mT(b.shape), b.dtype, a.dtype
            t2 = a.shape[::-1] if d1 == 2 else a.shape
        else:
            t1, t1d, t2, t2d = a.shape, a.dtype, b.shape, b.dtype
        folded = (math.prod(t1[:-1]), t1[-1])
        if len(t2) == 2:
            _check_mm(folded, t2, t1d, t2d, out)
        else:
            _check_mv(folded, t2, t1d, t2d, out)
    else:
        n = a.shape[-2] if d1 > 1 else 1
        m2 = b.shape[-2] if d2 > 1 else b.shape[0]
        p = b.shape[-1] if d2 > 1 else 1
        batch = math.prod(C.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
        _check_bmm((batch, n, a.shape[-1]), (batch, m2, p), a.dtype, b.dtype, out)


_F64 = np.dtype(np.float64)
_ndarray = np.ndarray
_np_matmul = np.matmul


def matmul(self, other):
    if self.__class__ is Tensor and other.__class__ is Tensor:
        a, b = self._a, other._a
        dev = self._device
        # the common case, two float matrices of one dtype on one device that fit: what K.matmul computes,
        # without its dispatch on dtype and namespace
        if a.__class__ is _ndarray and b.__class__ is _ndarray and a.ndim == 2 and b.ndim == 2 and \
                a.dtype is b.dtype and (a.dtype is _F32 or a.dtype is _F64) and other._device is dev and \
                a.shape[1] == b.shape[0]:
            return _make(_np_matmul(a, b), dev)
    s, o = _tensor(self), _tensor(other)
    a, b = s._a, o._a
    dev = s._device
    if o._device is not dev:
        C.raise_device_mismatch(dev, o._device)
    if a.dtype != b.dtype or a.dtype == _BOOL:
        _matmul_raise(s, o)
        if a.dtype != b.dtype:
            return _make(_zeros(a, _matmul_shape(a.shape, b.shape), b.dtype), dev)
    try:
        r = K.matmul(a, b)
    except ValueError:
        _matmul_raise(s, o)
        raise
    return _make(r, dev)


def matmul_out(self, other, out=None):
    s, o = _tensor(self), _tensor(other)
    a, b = s._a, o._a
    dev = _device(s, o)
    shape = _matmul_shape(a.shape, b.shape)
    od = out._a.dtype if isinstance(out, Tensor) else None
    if shape is None or a.dtype != b.dtype or od != a.dtype or a.dtype == _BOOL:
        _matmul_raise(s, o, od, out._a.shape if od is not None else None)
    if a.ndim == 1 and b.ndim == 2:
        # torch writes through mm into a (1, p) output and squeezes it afterwards
        _prepare_out(out, (1,) + shape, dev)
        out._a = out._a.reshape(shape)
    else:
        _prepare_out(out, shape, dev)
    if a.dtype != b.dtype:
        out._a[...] = 0
    else:
        K.matmul(a, b, out=out._a)
    out._bump_version()
    return out


# --- the special cases ---------------------------------------------------------------------------------------

def mm(self, mat2):
    s, o = _tensor(self), _tensor(mat2)
    a, b = s._a, o._a
    dev = _device(s, o)
    _mm_checks(a, b)
    return _make(K.matmul(a, b), dev)


def _mm_checks(a, b, out=None):
    if a.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if b.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    _check_mm(a.shape, b.shape, a.dtype, b.dtype, out)


def mm_out(self, mat2, out=None):
    s, o = _tensor(self), _tensor(mat2)
    a, b = s._a, o._a
    dev = _device(s, o)
    _mm_checks(a, b, _out_dtype(out))
    _prepare_out(out, (a.shape[0], b.shape[1]), dev)
    K.matmul(a, b, out=out._a)
    out._bump_version()
    return out


def _out_dtype(out):
    if not isinstance(out, Tensor):
        raise TypeError(f"argument 'out' must be Tensor, not {type(out).__name__}")
    return out._a.dtype


def bmm(self, mat2):
    s, o = _tensor(self), _tensor(mat2)
    a, b = s._a, o._a
    dev = _device(s, o)
    _check_bmm(a.shape, b.shape, a.dtype, b.dtype)
    if a.dtype != b.dtype:
        return _make(_zeros(a, (a.shape[0], a.shape[1], b.shape[2]), b.dtype), dev)
    return _make(K.matmul(a, b), dev)


def bmm_out(self, mat2, out=None):
    s, o = _tensor(self), _tensor(mat2)
    a, b = s._a, o._a
    dev = _device(s, o)
    _check_bmm(a.shape, b.shape, a.dtype, b.dtype, _out_dtype(out))
    _prepare_out(out, (a.shape[0], a.shape[1], b.shape[2]), dev)
    if a.dtype != b.dtype:
        out._a[...] = 0
    else:
        K.matmul(a, b, out=out._a)
    out._bump_version()
    return out


def dot(self, tensor):
    s, o = _tensor(self), _tensor(tensor)
    a, b = s._a, o._a
    dev = _device(s, o)
    _check_dot(a.shape, b.shape, a.dtype, b.dtype)
    return _make(K.matmul(a, b), dev)


def vdot(self, tensor):
    """dot with the first vector conjugated (the identity for real dtypes)."""
    s, o = _tensor(self), _tensor(tensor)
    a, b = s._a, o._a
    dev = _device(s, o)
    _check_dot(a.shape, b.shape, a.dtype, b.dtype)
    return _make(K.matmul(a.conj() if a.dtype.kind == "c" else a, b), dev)


def dot_out(self, tensor, out=None):
    s, o = _tensor(self), _tensor(tensor)
    od = _out_dtype(out)
    if not (out._device is s._device is o._device):
        raise RuntimeError(f"dot: Expected the output and input tensors to be on the same device, but got the "
                           f"output tensor on {out._device}, the 'input' tensor on {s._device}, and the 'other' "
                           f"tensor on {o._device}")
    _prepare_out(out, (), out._device)
    a, b = s._a, o._a
    if od != a.dtype:
        raise RuntimeError(f"result dtype {_tname(od)} does not match input dtype {_tname(a.dtype)}")
    _check_dot(a.shape, b.shape, a.dtype, b.dtype)
    return _write(out, K.matmul(a, b))


def _mv_checks(a, b, out=None):
    if a.ndim == 0:
        _size(a.shape, 0)  # torch sizes the result from self.size(0) first
    if a.ndim != 2 or b.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {a.ndim}, {b.ndim}")
    if out is None:
        _check_mv(a.shape, b.shape, a.dtype, b.dtype)
    else:
        _check_mv(a.shape, b.shape, a.dtype, b.dtype, out._a.dtype, out._a.shape != a.shape[:1])


def mv(self, vec):
    s, o = _tensor(self), _tensor(vec)
    a, b = s._a, o._a
    dev = _device(s, o)
    _mv_checks(a, b)
    return _make(K.matmul(a, b), dev)


def mv_out(self, vec, out=None):
    s, o = _tensor(self), _tensor(vec)
    a, b = s._a, o._a
    dev = _device(s, o)
    _out_dtype(out)
    _mv_checks(a, b, out)
    _prepare_out(out, (a.shape[0],), dev)
    K.matmul(a, b, out=out._a)
    out._bump_version()
    return out


def outer(self, vec2):
    s, o = _tensor(self), _tensor(vec2)
    dev = _device(s, o)
    for t, name in ((s, "self"), (o, "vec2")):
        if t._a.ndim != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {t._a.ndim}-D")
    cd = C.result_type(s, o).np
    a, b = s._a, o._a
    return _make(K.outer(a if a.dtype == cd else a.astype(cd), b if b.dtype == cd else b.astype(cd)), dev)


# --- fused forms: beta * input + alpha * (product) -------------------------------------------------------------

def _inplace_coefficient(v, dt):
    """beta when torch scales input in place (``mul_``): the product must cast back to ``dt``."""
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    kind = D.int64 if isinstance(v, (int, np.integer)) else D.get_default_dtype()
    if not D.can_cast(kind, FROM_NP[dt]):
        raise RuntimeError(f"result type {C.TORCH_NAME[kind]} can't be cast to the desired output type "
                           f"{_tname(dt)}")
    return v


_C_TYPE = {"uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int", "int64": "int64_t"}
_F32_MAX = float(np.finfo(np.float32).max)


def _coefficient(v, dt):
    """beta / alpha as the kernel's scalar type, with torch's overflow check.

    Integral kernels truncate (``Scalar.to<int>()``); unsigned ones accept negative
    integers and wrap them. 16-bit floats compute in float32.
    """
    if dt.kind == "c":
        return complex(v)
    if isinstance(v, (complex, np.complexfloating)):   # a real kernel takes a complex number without its i part
        if v.imag:
            raise RuntimeError(f"value cannot be converted to type {_C_TYPE.get(dt.name, 'float')} without overflow")
        v = v.real
    is_int = isinstance(v, (int, np.integer))
    if is_int and not -2 ** 63 <= v < 2 ** 64:
        raise OverflowError("int too big to convert")
    if dt.kind in "iu":
        info = np.iinfo(dt)
        lowest = -info.max if dt.kind == "u" and is_int else info.min
        if not lowest <= v <= info.max:  # NaN fails this too
            raise RuntimeError(f"value cannot be converted to type {_C_TYPE[dt.name]} without overflow")
        return int(v) % (info.max + 1) if dt.kind == "u" else int(v)
    if dt != np.float64 and abs(v) > _F32_MAX and not math.isinf(v):
        raise RuntimeError("value cannot be converted to type float without overflow")
    return float(v)


def _fused(c, a, b, beta, alpha, shape, skip_zero_alpha):
    """``beta * c + alpha * (a @ b)`` in the operands' dtype; 16-bit floats in float32, rounded once.

    ``skip_zero_alpha``: torch's BLAS paths (addmm, addmv) never compute the product when
    ``alpha == 0``, so NaNs in the matrices do not reach the result there.
    """
    dt = a.dtype
    if not math.prod(shape):  # torch returns before it reads beta and alpha
        return _zeros(a, shape, dt)
    if a.shape[-1] == 0:  # nothing to multiply: torch zeroes the result or scales input in place
        return _zeros(a, shape, dt) if beta == 0 else K.scaled(c, _inplace_coefficient(beta, dt), shape, dt)
    beta, alpha = _coefficient(beta, dt), _coefficient(alpha, dt)
    if K.is_half(dt):
        a, b, c = K.converted(a, _F32), K.converted(b, _F32), K.converted(c, _F32)
        return K.converted(K.scale_add(K.matmul(a, b), c, beta, alpha), dt)
    if alpha == 0 and skip_zero_alpha:
        return K.scaled(c, beta, shape, dt)
    return K.scale_add(K.matmul(a, b), c, beta, alpha)


def _addmm_checks(c, a, b, out=None, inplace=False):
    if c.dtype != b.dtype:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got {_tname(c.dtype)} and {_tname(b.dtype)}")
    if a.dtype != b.dtype:
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got {_tname(a.dtype)} and "
                           f"{_tname(b.dtype)}")
    for arr, name in ((a, "mat1"), (b, "mat2")):
        if arr.ndim != 2:
            raise RuntimeError(f"{name} must be a matrix, got {arr.ndim}-D tensor")
    (n, k), p = a.shape, b.shape[1]
    if k != b.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({n}x{k} and {b.shape[0]}x{p})")
    if out is not None and out != a.dtype:
        _out_dtype_error(a.dtype, out)
    if inplace:
        if c.shape != (n, p):
            raise RuntimeError(f"Bad in-place call: input tensor size {list(c.shape)} and output tensor size "
                               f"{[n, p]} should match")
    else:
        _check_expand(c, (n, p))
    if a.dtype == _BOOL and n and p and k:
        C.not_implemented("addmm_impl_cpu_", a.dtype)
    return n, p


def addmm(self, mat1, mat2, *, beta=1, alpha=1):
    c, m1, m2 = _tensor(self), _tensor(mat1), _tensor(mat2)
    dev = _device(c, m1, m2)
    shape = _addmm_checks(c._a, m1._a, m2._a)
    return _make(_fused(c._a, m1._a, m2._a, beta, alpha, shape, True), dev)


def addmm_out(self, mat1, mat2, *, beta=1, alpha=1, out=None):
    c, m1, m2 = _tensor(self), _tensor(mat1), _tensor(mat2)
    dev = _device(c, m1, m2)
    shape = _addmm_checks(c._a, m1._a, m2._a, _out_dtype(out))
    r = _fused(c._a, m1._a, m2._a, beta, alpha, shape, True)
    _prepare_out(out, shape, dev)
    return _write(out, r)


def addmm_(self, mat1, mat2, *, beta=1, alpha=1):
    m1, m2 = _tensor(mat1), _tensor(mat2)
    _device(self, m1, m2)
    shape = _addmm_checks(self._a, m1._a, m2._a, inplace=True)
    return _write(self, _fused(self._a, m1._a, m2._a, beta, alpha, shape, True))


def addmv(self, mat, vec, *, beta=1, alpha=1):
    c, m, v = _tensor(self), _tensor(mat), _tensor(vec)
    dev = _device(c, m, v)
    ca, ma, va = c._a, m._a, v._a
    if not (ma.ndim == 2 and va.ndim == 1 and ca.ndim <= 1):
        raise RuntimeError(f"vector + matrix @ vector expected, got {ca.ndim}, {ma.ndim}, {va.ndim}")
    n, k = ma.shape
    if k != va.shape[0] or (n != ca.size and ca.size != 1):
        raise RuntimeError(f"size mismatch, got input ({_size(ca.shape, 0)}), mat ({n}x{k}), vec ({va.shape[0]})")
    if not (ma.dtype == va.dtype == ca.dtype):
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {_tname(ca.dtype)}, "
                           f"{_tname(ma.dtype)}, and {_tname(va.dtype)}")
    if ma.size == 0 and beta != 0:
        # torch's shortcut for an empty matrix multiplies input by beta into the (n,) result,
        # which that resizes (with its warning) to input's shape
        r = _make(_zeros(ca, (n,), ca.dtype), dev)
        if ca.shape != (n,):
            C.resize_out(r, ca.shape)
        return _write(r, K.scaled(ca, _coefficient(beta, ca.dtype), ca.shape, ca.dtype))
    if ma.dtype == _BOOL and ma.size:
        C.not_implemented("addmv_impl_cpu", ma.dtype)
    return _make(_fused(ca, ma, va, beta, alpha, (n,), True), dev)


def baddbmm(self, batch1, batch2, *, beta=1, alpha=1):
    c, b1, b2 = _tensor(self), _tensor(batch1), _tensor(batch2)
    dev = _device(c, b1, b2)
    ca, a, b = c._a, b1._a, b2._a
    shape = (_size(a.shape, 0), _size(a.shape, 1), _size(b.shape, 2))
    _check_expand(ca, shape)
    if ca.dtype != a.dtype:
        raise RuntimeError(f"Input dtypes must be the same, got: input {_cxx(ca.dtype)}, batch1: {_cxx(a.dtype)}, "
                           f"batch2: {_cxx(b.dtype)}")
    _check_bmm(a.shape, b.shape, a.dtype, b.dtype, kernel="baddbmm")
    if a.dtype != b.dtype:  # nothing to multiply: torch computes in batch2's dtype
        ca, a = ca.astype(b.dtype), a.astype(b.dtype)
    return _make(_fused(ca, a, b, beta, alpha, shape, False), dev)


KERNELS = {
    "matmul": matmul, "matmul.out": matmul_out,
    "mm": mm, "mm.out": mm_out,
    "bmm": bmm, "bmm.out": bmm_out,
    "addmm": addmm, "addmm.out": addmm_out, "addmm_": addmm_,
    "dot": dot, "dot.out": dot_out, "vdot": vdot,
    "outer": outer,
    "mv": mv, "mv.out": mv_out,
    "addmv": addmv,
    "baddbmm": baddbmm,
}
