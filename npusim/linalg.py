"""``npusim.linalg``: torch.linalg's norms and products, as thin wrappers over the aten ops.

Matrix norms that need singular values (ord 2, -2 and 'nuc') are not computed:
they raise NotImplementedError.
"""
from __future__ import annotations

import math

from .core import dtype as D
from .core.functional import _copy_into, matmul
from .core.ops_namespace import aten
from .core.tensor import _wrap_dim

__all__ = ["vector_norm", "matrix_norm", "norm", "vecdot", "matmul", "cross"]


def _dims(dim):
    """An int or a sequence of ints as a list (None stays None)."""
    if dim is None:
        return None
    return [dim] if isinstance(dim, int) else list(dim)


def _finish(r, out):
    return r if out is None else _copy_into(out, r)


def _check_float(x, fname):
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"linalg.{fname}: Expected a floating point or complex tensor as input. Got "
                           f"{D.SCALAR_TYPE_NAME[x.dtype]}")


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):  # noqa: A002 - torch's names
    """The ``ord``-norm of ``x`` over ``dim`` (every element when None), computed in ``dtype`` when given."""
    return _finish(aten.linalg_vector_norm.default(x, ord, _dims(dim), keepdim, dtype=dtype), out)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):  # noqa: A002, N803
    """The ``ord``-norm of the matrices over the two dims ``dim``: 'fro', 1, -1, inf or -inf."""
    if A.dim() < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    if isinstance(ord, str):
        if ord not in ("fro", "nuc"):
            raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    elif abs(ord) not in (1, 2, math.inf):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord:g} not supported.")
    dims = list(dim)
    if len(dims) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(str(d) for d in dims)}")
    d0, d1 = _wrap_dim(dims[0], A.dim()), _wrap_dim(dims[1], A.dim())
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dims[0]}, {dims[1]})")
    _check_float(A, "matrix_norm")
    if ord == "fro":
        r = aten.linalg_vector_norm.default(A, 2, [d0, d1], keepdim, dtype=dtype)
    elif ord == "nuc" or abs(ord) == 2:
        raise NotImplementedError(f"linalg.matrix_norm: ord={ord!r} needs singular values, which npusim does not "
                                  f"compute")
    else:
        # 1-norms: the largest (or smallest) column sum of |A|; inf-norms the same over rows
        if abs(ord) == math.inf:
            d0, d1 = d1, d0
        if not keepdim and d0 < d1:
            d1 -= 1   # the sum below removes d0 first
        sums = aten.linalg_vector_norm.default(A, 1, [d0], keepdim, dtype=dtype)
        if ord > 0 and sums.shape[d1] == 0:
            r = aten.sum.dim_IntList(sums, [d1], keepdim)   # torch's largest of no sums is 0 (the smallest fails)
        else:
            r = (aten.amax.default if ord > 0 else aten.amin.default)(sums, [d1], keepdim)
    return _finish(r, out)


def norm(A, ord=None, dim=None, keepdim=False, *, out=None, dtype=None):  # noqa: A002, N803
    """A vector norm, or a matrix norm when ``ord`` is given for two dims (or for a 2-D input without ``dim``)."""
    dims = _dims(dim)
    if dims is not None:
        if len(dims) not in (1, 2):
            raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got {dims}")
    elif ord is not None and A.dim() not in (1, 2):
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got "
                           f"{A.dim()}D.")
    if isinstance(ord, str) or (ord is not None and (dims is None and A.dim() == 2 or dims is not None and
                                                      len(dims) == 2)):
        return matrix_norm(A, ord, [0, 1] if dims is None else dims, keepdim, dtype=dtype, out=out)
    return vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype, out=out)


def vecdot(x, y, *, dim=-1, out=None):
    """The dot products of the vectors along ``dim`` (the other dims broadcast)."""
    if x.dtype is not y.dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found x of type "
                           f"{D.SCALAR_TYPE_NAME[x.dtype]} and y of type {D.SCALAR_TYPE_NAME[y.dtype]} instead")
    _check_float(x, "vecdot")
    return _finish(aten.sum.dim_IntList(aten.mul.Tensor(x, y), [dim]), out)


def cross(input, other, *, dim=-1, out=None):  # noqa: A002 - torch's name
    """The cross product of 3-vectors along ``dim`` (the other dims broadcast)."""
    return _finish(aten.cross.default(input, other, dim), out)
