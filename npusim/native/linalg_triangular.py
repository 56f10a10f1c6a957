"""Triangular solves, LU (factor, unpack, solve), Householder products and the matrix exponential.

``KERNELS``: linalg_solve_triangular, linalg_lu_factor_ex, lu_unpack and linalg_matrix_exp, which check
what torch checks and hand the arrays to ``npusim.kernels.linalg_triangular``. ``COMPOSITE_IMPLICIT``:
the rest, made of dispatched ops (so their gradients come from the parts, as in torch).
"""
from __future__ import annotations

import numpy as np

from ..core.c10 import dtype as D
from ..core.dispatch.ops_namespace import aten
from ..kernels import device_checks as DC
from ..kernels import linalg_triangular as K
from ..kernels.array_api import namespace_of
from . import common as C
from .linalg_factorizations import check_float, check_matrix, raise_info

_make = C.make
_matmul = aten.matmul.default


def mT(t):
    return aten.transpose.int(t, -2, -1)


# --- kernels ------------------------------------------------------------------------------------------------------

def _check_same_dtype(a, b, fname, an="A", bn="B"):
    if a.dtype != b.dtype:
        raise RuntimeError(f"{fname}: Expected {an} and {bn} to have the same dtype, but found {an} of type "
                           f"{C.tname(a.dtype)} and {bn} of type {C.tname(b.dtype)} instead")


def _check_rhs(n, b, left, fname):
    if b.ndim < 2:
        raise RuntimeError(f"{fname}: The input tensor B must have at least 2 dimensions.")
    if (b.shape[-2] if left else b.shape[-1]) != n:
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(f"{fname}: Incompatible shapes of A and B for the equation {eq} ({n}x{n} and "
                           f"{b.shape[-2]}x{b.shape[-1]})")


def linalg_solve_triangular(self, B, *, upper, left=True, unitriangular=False):
    dev = C.same_device(self, B)
    a, b = self._a, B._a
    fname = "linalg.solve_triangular"
    check_matrix(a, fname)
    _check_rhs(a.shape[-1], b, left, fname)
    _check_same_dtype(a, b, fname)
    if not C.is_float(a.dtype) or a.dtype.itemsize == 2:
        C.not_implemented("triangular_solve_cpu", a.dtype)
    C.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    if left:
        x = K.solve_triangular(a, b, upper, unitriangular)
    else:   # X A = B  <=>  A^T X^T = B^T, the other triangle
        x = K.solve_triangular(a.swapaxes(-1, -2), b.swapaxes(-1, -2), not upper, unitriangular).swapaxes(-1, -2)
    return _make(namespace_of(x).ascontiguousarray(x), dev)


def _lu_factor_checks(A, pivot, fname="torch.lu_factor"):
    a = A._a
    if a.ndim < 2:
        raise RuntimeError(f"{fname}: Expected tensor with 2 or more dimensions. Got size: {list(a.shape)} instead")
    if not C.is_float(a.dtype) or a.dtype.itemsize == 2:
        C.not_implemented("lu_cpu", a.dtype)
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    return a


def _lu_factor_message(code):
    return (f"U[{code},{code}] is zero and using it on lu_solve would result in a division by zero. If you still "
            f"want to perform the factorization, consider calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, "
            f"pivot)")


def linalg_lu_factor_ex(A, *, pivot=True, check_errors=False):
    a = _lu_factor_checks(A, pivot)
    lu, piv, info = K.lu_factor(a)
    if check_errors:
        raise_info(info, "torch.linalg.lu_factor", _lu_factor_message)
    dev = A._device
    return _make(lu, dev), _make(piv, dev), _make(info, dev)


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):  # noqa: N803 - torch's names
    dev = C.same_device(LU_data, LU_pivots)
    lu, piv = LU_data._a, LU_pivots._a
    if lu.ndim < 2:
        raise RuntimeError(f"torch.lu_unpack: Expected tensor with 2 or more dimensions. Got size: "
                           f"{list(lu.shape)} instead")
    m, n = lu.shape[-2:]
    k = min(m, n)
    xp = namespace_of(lu)
    empty = xp.zeros((0,), lu.dtype)
    if unpack_data:
        low = xp.tril(lu[..., :, :k], -1) + xp.eye(m, k, dtype=lu.dtype)
        up = xp.triu(lu[..., :k, :])
    else:
        low, up = empty, empty
    if not unpack_pivots:
        return _make(empty, dev), _make(low, dev), _make(up, dev)
    if piv.dtype != np.int32:
        raise RuntimeError("torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of torch.int32 dtype.\n"
                           "Note: this function is intended to be used with the output produced by "
                           "torch.linalg.lu_factor")
    if piv.shape[-1:] != (k,) or piv.ndim < 1:
        raise RuntimeError(f"torch.lu_unpack: Expected LU_pivots.size(-1) to be {k} (min(LU.size(-2), "
                           f"LU.size(-1))), but got {piv.shape[-1] if piv.ndim else 0}")
    if piv.size and DC.deferred(piv):   # as torch's CUDA kernel: asserted on the device, reported later
        piv = DC.clamp(piv, 1, m + 1, DC.LU_PIVOTS)
    elif piv.size and not K.valid_pivots(piv, m):
        raise RuntimeError("pivots passed to lu_unpack must be between 1 and LU.size(-2) inclusive.Did you properly "
                           "pass the result of lu_factor?")
    perm = K.pivots_to_permutation(piv, m)
    p = K.permutation_matrix(perm, lu.dtype)
    batch = np.broadcast_shapes(lu.shape[:-2], piv.shape[:-1])
    p = xp.ascontiguousarray(xp.broadcast_to(p, batch + (m, m)))
    return _make(p, dev), _make(low, dev), _make(up, dev)


def linalg_matrix_exp(self):
    a = self._a
    check_matrix(a, "linalg.matrix_exp")
    check_float(a, "linalg.matrix_exp", None)
    C.check_capacity(a.size * a.itemsize, self._device)     # an expanded input's result holds every element
    return _make(K.matrix_exp(a), self._device)


KERNELS = {
    "linalg_solve_triangular": linalg_solve_triangular,
    "linalg_lu_factor_ex": linalg_lu_factor_ex,
    "lu_unpack": lu_unpack,
    "linalg_matrix_exp": linalg_matrix_exp,
}


# --- compositions -------------------------------------------------------------------------------------------------

def triangular_solve(self, A, upper=True, transpose=False, unitriangular=False):  # noqa: N803 - torch's names
    """The legacy solver: X with op(A) X = B (B = self), and a copy of A."""
    if self.dim() < 2:
        raise RuntimeError(f"torch.triangular_solve: Expected b to have at least 2 dimensions, but it has "
                           f"{self.dim()} dimensions instead")
    if A.dim() < 2:
        raise RuntimeError(f"torch.triangular_solve: Expected A to have at least 2 dimensions, but it has "
                           f"{A.dim()} dimensions instead")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"A must be batches of square matrices, but they are {A.shape[-2]} by {A.shape[-1]} "
                           f"matrices")
    if A.shape[-1] != self.shape[-2]:
        raise RuntimeError(f"Incompatible matrix sizes for triangular_solve: each A matrix is {A.shape[-2]} by "
                           f"{A.shape[-1]} but each b matrix is {self.shape[-2]} by {self.shape[-1]}")
    coef = mT(A) if transpose else A
    x = aten.linalg_solve_triangular.default(coef, self, upper=upper != transpose, left=True,
                                             unitriangular=unitriangular)
    batch = list(np.broadcast_shapes(tuple(A.shape[:-2]), tuple(self.shape[:-2])))
    clone = aten.clone.default(aten.expand.default(A, batch + list(A.shape[-2:])))
    return x, clone


def linalg_lu_factor(A, *, pivot=True):  # noqa: N803
    lu, piv, info = aten.linalg_lu_factor_ex.default(A, pivot=pivot, check_errors=False)
    raise_info(info._a, "torch.linalg.lu_factor", _lu_factor_message)
    return lu, piv


def linalg_lu(A, *, pivot=True):  # noqa: N803
    if A.dim() < 2:
        raise RuntimeError(f"linalg.lu: Expected tensor with 2 or more dimensions. Got size: {list(A.shape)} "
                           f"instead")
    lu, piv, _ = aten.linalg_lu_factor_ex.default(A, pivot=pivot)
    return aten.lu_unpack.default(lu, piv, True, True)


def linalg_lu_solve(LU, pivots, B, *, left=True, adjoint=False):  # noqa: N803
    """X from A = P L U: AX = B (XA = B when not ``left``; A^T in place of A when ``adjoint``)."""
    fname = "linalg.lu_solve"
    if LU.dim() < 2:
        raise RuntimeError(f"{fname}: The input tensor LU must have at least 2 dimensions.")
    _check_rhs(LU.shape[-1], B._a, left, fname) if LU.shape[-1] == LU.shape[-2] else None
    check_matrix(LU._a, "torch.linalg.lu_solve")
    _check_same_dtype(LU._a, B._a, fname, "LU", "B")
    if pivots.dtype is not D.int32:
        raise RuntimeError(f"{fname}: pivots should be a Tensor of scalar type torch.int32")
    if pivots.dim() < 1 or pivots.shape[-1] != LU.shape[-1]:
        raise RuntimeError(f"{fname}: Number of pivots per batch should be same as the dimension of the matrix")
    check_float(LU._a, fname, "lu_solve_cpu")
    p, low, up = aten.lu_unpack.default(LU, pivots, True, True)

    def tri(a, b, upper, left_, unit=False):
        return aten.linalg_solve_triangular.default(a, b, upper=upper, left=left_, unitriangular=unit)
    if left and not adjoint:        # X = U^-1 L^-1 P^T B
        return tri(up, tri(low, _matmul(mT(p), B), False, True, True), True, True)
    if left:                        # A^T X = B: X = P L^-T U^-T B
        return _matmul(p, tri(mT(low), tri(mT(up), B, False, True), True, True, True))
    if not adjoint:                 # X A = B: X = B U^-1 L^-1 P^T
        return _matmul(tri(low, tri(up, B, True, False), False, False, True), mT(p))
    # X A^T = B: X = B P L^-T U^-T
    return tri(mT(up), tri(mT(low), _matmul(B, p), True, False, True), False, False)


def lu_solve(self, LU_data, LU_pivots):  # noqa: N803
    return linalg_lu_solve(LU_data, LU_pivots, self)


def linalg_householder_product(input, tau):  # noqa: A002 - torch's name
    """The first n columns of H_1 ... H_k, H_i = I - tau_i v_i v_i^T with v_i = (0.., 1, input[i+1:, i])."""
    fname = "torch.linalg.householder_product"
    if input.dim() < 2:
        raise RuntimeError(f"{fname}: input must have at least 2 dimensions.")
    m, n = input.shape[-2], input.shape[-1]
    if m < n:
        raise RuntimeError(f"{fname}: input.shape[-2] must be greater than or equal to input.shape[-1]")
    if tau.dim() >= 1 and n < tau.shape[-1]:
        raise RuntimeError(f"{fname}: input.shape[-1] must be greater than or equal to tau.shape[-1]")
    if input.dim() - tau.dim() != 1:
        raise RuntimeError(f"{fname}: Expected tau to have one dimension less than input, but got tau.ndim equal "
                           f"to {tau.dim()} and input.ndim is equal to {input.dim()}")
    if input.dim() > 2 and tuple(input.shape[:-2]) != tuple(tau.shape[:-1]):
        raise RuntimeError(f"{fname}: Expected batch dimensions of tau to be equal to input.shape[:-2], but got "
                           f"{list(tau.shape[:-1])}")
    if tau.dtype is not input.dtype:
        raise RuntimeError(f"{fname}: tau dtype {C.tname(tau._a.dtype)} does not match input dtype "
                           f"{C.tname(input._a.dtype)}")
    check_float(input._a, fname, "orgqr_cpu")
    k = tau.shape[-1]
    kw = {"dtype": input.dtype, "device": input.device}
    q = aten.expand.default(aten.eye.m(m, n, **kw), list(input.shape[:-2]) + [m, n])
    rows = aten.arange.default(m, **kw)
    for i in range(k - 1, -1, -1):
        below = aten.gt.Scalar(rows, i)
        col = aten.select.int(input, -1, i)
        v = aten.add.Tensor(aten.mul.Tensor(col, below), aten.eq.Scalar(rows, i))   # (..., m)
        t = aten.unsqueeze.default(aten.unsqueeze.default(aten.select.int(tau, -1, i), -1), -1)
        v = aten.unsqueeze.default(v, -1)
        q = aten.sub.Tensor(q, _matmul(aten.mul.Tensor(v, t), _matmul(mT(v), q)))
    return aten.clone.default(q) if k == 0 else q


def orgqr(self, input2):
    return linalg_householder_product(self, input2)


def matrix_exp(self):
    return aten.linalg_matrix_exp.default(self)


COMPOSITE_IMPLICIT = {
    "triangular_solve": triangular_solve, "linalg_lu_factor": linalg_lu_factor, "linalg_lu": linalg_lu,
    "linalg_lu_solve": linalg_lu_solve, "lu_solve": lu_solve, "linalg_householder_product": linalg_householder_product,
    "orgqr": orgqr, "matrix_exp": matrix_exp,
}
