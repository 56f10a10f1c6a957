"""Matrix products over NumPy or CuPy arrays.

Callers check shapes and dtypes (and raise torch's errors) before calling in;
these functions only compute. 16-bit floats are multiplied in float32 and
rounded once, as torch's CPU kernels do: NumPy's own float16 matmul is slow and
rounds every partial sum. ``matmul`` hands strided operands straight to
``xp.matmul``, which passes transposed layouts to BLAS without copying.
"""
from __future__ import annotations

import numpy as np

from . import out_destination as _od
from . import parallel as P
from .array_api import namespace_of

_F32 = np.dtype(np.float32)
_ndarray = np.ndarray


def is_half(dt) -> bool:
    """float16 or bfloat16 (the only 2-byte dtypes that are not integers)."""
    return dt.itemsize == 2 and dt.kind not in "iu"


def converted(a, dt):
    """``a.astype(dt)``: NumPy's 16-bit float conversions run one element at a time, so large arrays are
    split over the intra-op threads (the same values, computed in parallel)."""
    return P.astype(a, dt) if a.__class__ is _ndarray else a.astype(dt)


def matmul(a, b, out=None):
    """``a @ b`` with NumPy's 1-D and batch-broadcast rules (0-d results stay arrays)."""
    xp = namespace_of(a)
    dt = a.dtype
    if is_half(dt):
        r = converted(xp.asarray(xp.matmul(converted(a, _F32), converted(b, _F32))), dt)
        if out is None:
            return r
        xp.copyto(out, r)
        return out
    if out is None and _od._tls.array is not None:
        out = _destination(a, b)
    if out is None:
        return xp.asarray(xp.matmul(a, b))
    return xp.matmul(a, b, out=out)


def _destination(a, b):
    """The offered ``out=`` array (kernels/out_destination.py) when it is exactly this product's shape and dtype."""
    if a.__class__ is not _ndarray or b.__class__ is not _ndarray or a.ndim < 2 or b.ndim < 2 or a.dtype != b.dtype:
        return None
    try:
        shape = tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2])) + (a.shape[-2], b.shape[-1])
    except ValueError:
        return None
    return _od.take(shape, a.dtype)


def scale_add(prod, c, beta, alpha):
    """``beta * c + alpha * prod``, computed into ``prod`` (a fresh array).

    ``beta == 0`` never reads ``c``, so its NaNs do not reach the result (torch's
    rule); ``c`` broadcasts to ``prod``'s shape.
    """
    xp = namespace_of(prod)
    if alpha != 1:
        xp.multiply(prod, alpha, out=prod)
    if beta != 0:
        xp.add(prod, c if beta == 1 else xp.multiply(c, beta), out=prod)
    return prod


def scaled(c, beta, shape, dtype):
    """``beta * c`` broadcast to ``shape`` (zeros when ``beta == 0``): the product term vanished."""
    xp = namespace_of(c)
    if beta == 0:
        return xp.zeros(shape, dtype)
    r = xp.empty(shape, dtype)
    xp.multiply(xp.broadcast_to(c, shape), beta, out=r, casting="unsafe")
    return r


def outer(a, b):
    """Every product ``a[i] * b[j]`` (1-D inputs of one dtype)."""
    xp = namespace_of(a)
    return xp.multiply(a[:, None], b)
