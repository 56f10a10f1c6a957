"""torch.linalg ops (and their older top-level names) that decompose into the decomposition ops.

As torch's CompositeImplicitAutograd kernels, each is made of dispatched ops, so
autograd sees the decompositions (with their formulas) and the products around them.
"""
from __future__ import annotations

import math

import numpy as np

from ..core.autograd.forward_mode import may_require_grad
from ..core.c10 import dtype as D
from ..core.dispatch.ops_namespace import aten
from . import common as C
from .linalg_factorizations import check_float, check_matrix

_matmul = aten.matmul.default


def mT(t):
    return aten.transpose.int(t, -2, -1)


def linalg_inv(A):
    return aten.linalg_inv_ex.default(A, check_errors=True)[0]


def linalg_solve(A, B, *, left=True):
    return aten.linalg_solve_ex.default(A, B, left=left, check_errors=True)[0]


def linalg_cholesky(self, *, upper=False):
    return aten.linalg_cholesky_ex.default(self, upper=upper, check_errors=True)[0]


def cholesky(self, upper=False):
    return linalg_cholesky(self, upper=upper)


def cholesky_solve(self, input2, upper=False):
    """B = self, L = input2: solve (L L^T) X = B with two solves."""
    if self.dim() < 2:
        raise RuntimeError("b should have at least 2 dimensions, but has 1 dimensions instead")
    if input2.dim() < 2:
        raise RuntimeError(f"u should have at least 2 dimensions, but has {input2.dim()} dimensions instead")
    if self.dtype is not input2.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type {C.TORCH_NAME[self.dtype]} "
                           f"and A of type {C.TORCH_NAME[input2.dtype]} instead.")
    low = mT(input2) if upper else input2
    y = linalg_solve(low, self)
    return linalg_solve(mT(low), y)


def cholesky_inverse(self, upper=False):
    check_matrix(self._a, "cholesky_inverse", argname="input")
    low = mT(self) if upper else self
    return linalg_inv(_matmul(low, mT(low)))


def det(self):
    return aten.linalg_det.default(self)


def slogdet(self):
    return aten.linalg_slogdet.default(self)


def logdet(self):
    """log det: NaN for a negative determinant, -inf for a zero one (torch's logdet)."""
    check_matrix(self._a, "logdet")
    sign, logabs = aten.linalg_slogdet.default(self)
    nan = aten.full_like.default(logabs, math.nan)
    return aten.where.self(aten.lt.Scalar(sign, 0), nan, logabs)


def inverse(self):
    return linalg_inv(self)


def qr(self, some=True):
    return aten.linalg_qr.default(self, "reduced" if some else "complete")


def linalg_eigh(self, UPLO="L"):  # noqa: N803 - torch's name
    return aten._linalg_eigh.default(self, UPLO, True)


def linalg_eigvalsh(self, UPLO="L"):  # noqa: N803
    # eigenvectors are needed for the gradient, as in torch
    return aten._linalg_eigh.default(self, UPLO, may_require_grad(self))[0]


def linalg_svd(A, full_matrices=True, *, driver=None):
    return aten._linalg_svd.default(A, full_matrices, True, driver=driver)


def linalg_svdvals(A, *, driver=None):
    return aten._linalg_svd.default(A, False, may_require_grad(A), driver=driver)[1]


def svd(self, some=True, compute_uv=True):
    """torch.svd: V rather than Vh; without ``compute_uv``, U and V are zero matrices."""
    if compute_uv:
        u, s, vh = aten._linalg_svd.default(self, not some, True)
        return u, s, mT(vh)
    s = linalg_svdvals(self)
    m, n = self.shape[-2], self.shape[-1]
    batch = list(self.shape[:-2])
    zeros = aten.zeros.default
    return (zeros(batch + [m, m], dtype=self.dtype, device=self.device), s,
            zeros(batch + [n, n], dtype=self.dtype, device=self.device))


def _tolerance(s_max, a, atol, rtol):
    """max(atol, rtol * largest singular value), with torch's default rtol eps * max(m, n) when neither is given."""
    if rtol is None:
        rtol = 0.0 if atol is not None and atol > 0 else _eps(a) * max(a.shape[-2], a.shape[-1])
    atol = 0.0 if atol is None else atol
    return aten.clamp_min.default(aten.mul.Scalar(s_max, rtol), atol)


def _eps(a):
    return float(np.finfo(C.np_dtype(a.dtype)).eps)


def _check_pinv_input(self, fname):
    if self.dim() < 2 or not self.dtype.is_floating_point or self.dtype.itemsize == 2:
        dt = C.TORCH_NAME[self.dtype]
        raise RuntimeError(f"{fname}({dt}{{{list(self.shape)}}}): expected a tensor with 2 or more dimensions of "
                           f"float, double, cfloat or cdouble types")


def linalg_pinv(self, *, atol=None, rtol=None, hermitian=False):
    """The pseudo-inverse: V diag(1/s) U^T over the singular values above the tolerance."""
    _check_pinv_input(self, "linalg.pinv")
    if 0 in self.shape[-2:]:
        return aten.zeros.default(list(self.shape[:-2]) + [self.shape[-1], self.shape[-2]], dtype=self.dtype,
                                  device=self.device)
    if hermitian:
        w, v = aten._linalg_eigh.default(self, "L", True)
        absw = aten.abs.default(w)
        tol = _tolerance(aten.amax.default(absw, [-1], True), self, atol, rtol)
        inv_w = aten.where.self(aten.gt.Tensor(absw, tol), aten.reciprocal.default(w), aten.zeros_like.default(w))
        return _matmul(aten.mul.Tensor(v, aten.unsqueeze.default(inv_w, -2)), mT(v))
    u, s, vh = aten._linalg_svd.default(self, False, True)
    tol = _tolerance(aten.narrow.default(s, -1, 0, 1), self, atol, rtol)
    inv_s = aten.where.self(aten.gt.Tensor(s, tol), aten.reciprocal.default(s), aten.zeros_like.default(s))
    return _matmul(aten.mul.Tensor(mT(vh), aten.unsqueeze.default(inv_s, -2)), mT(u))


def pinverse(self, rcond=1e-15):
    _check_pinv_input(self, "pinverse")
    return linalg_pinv(self, rtol=rcond)


def linalg_matrix_rank(self, *, atol=None, rtol=None, hermitian=False):
    """How many singular values (eigenvalue magnitudes, when hermitian) exceed the tolerance (int64)."""
    if self.dim() < 2:
        raise RuntimeError("torch.linalg.matrix_rank: The input tensor input must have at least 2 dimensions.")
    check_float(self._a, "torch.linalg.matrix_rank", "linalg_svd_cpu")
    if 0 in self.shape[-2:]:
        return aten.zeros.default(list(self.shape[:-2]), dtype=_int64(), device=self.device)
    if hermitian:
        s = aten.abs.default(aten._linalg_eigh.default(self, "L", False)[0])
    else:
        s = aten._linalg_svd.default(self, False, False)[1]
    tol = _tolerance(aten.amax.default(s, [-1], True), self, atol, rtol)
    return aten.sum.dim_IntList(aten.gt.Tensor(s, tol), [-1])


def _int64():
    return D.int64


def linalg_matrix_power(self, n):
    """A^n by repeated squaring; a negative n inverts first (integer matrices take only n >= 0)."""
    check_matrix(self._a, "linalg.matrix_power")
    if n == 0:
        eye = aten.eye.default(self.shape[-1], dtype=self.dtype, device=self.device)
        return aten.clone.default(aten.expand.default(eye, list(self.shape)))
    a = linalg_inv(self) if n < 0 else self
    n = abs(n)
    if n == 1:
        return aten.clone.default(a)
    result = None
    while n:
        if n & 1:
            result = a if result is None else _matmul(result, a)
        n >>= 1
        if n:
            a = _matmul(a, a)
    return result


def matrix_power(self, n):
    return linalg_matrix_power(self, n)


def linalg_lstsq(self, b, rcond=None, *, driver=None):
    """Least squares as the CPU default driver 'gelsy' reports it: the solution and the rank; residuals and
    singular values are empty."""
    if driver not in (None, "gels", "gelsy", "gelsd", "gelss"):
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    if self.dim() < 2:
        raise RuntimeError("torch.linalg.lstsq: input must have at least 2 dimensions.")
    if b.dim() < 1:
        raise RuntimeError("torch.linalg.lstsq: other must have at least 1 dimension.")
    if self.dtype is not b.dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same dtype, but got "
                           f"input's dtype {C.TORCH_NAME[self.dtype]} and other's dtype {C.TORCH_NAME[b.dtype]}")
    vector = b.dim() == self.dim() - 1
    bm = aten.unsqueeze.default(b, -1) if vector else b
    if self.shape[-2] != bm.shape[-2]:
        raise RuntimeError(f"torch.linalg.lstsq: input.size(-2) should match other.size(-{1 if vector else 2})")
    check_float(self._a, "torch.linalg.lstsq", "linalg_lstsq_cpu")
    rtol = rcond if rcond is not None and rcond > 0 else None
    x = _matmul(linalg_pinv(self, rtol=rtol), bm)
    if vector:
        x = aten.squeeze.dim(x, -1)
    empty = aten.zeros.default([0], dtype=self.dtype, device=self.device)
    rank = linalg_matrix_rank(aten.detach.default(self), rtol=rtol)
    return x, empty, rank, aten.clone.default(empty)


def linalg_multi_dot(tensors):
    """The product of a chain of matrices; the first and last may be vectors (multiplied left to right)."""
    n = len(tensors)
    if n < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {n}")
    for i, t in enumerate(tensors):
        if t.dim() not in (1, 2) or (0 < i < n - 1 and t.dim() != 2):
            if i == 0:
                raise RuntimeError(f"multi_dot(): the first tensor must be 1D or 2D but got {t.dim()}D")
            if i == n - 1:
                raise RuntimeError(f"multi_dot(): the last tensor must be 1D or 2D but got {t.dim()}D")
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.dim()}D")
    r = tensors[0]
    for t in tensors[1:]:
        r = _matmul(r, t)
    return r


COMPOSITE_IMPLICIT = {
    "linalg_inv": linalg_inv, "inverse": inverse, "det": det, "logdet": logdet, "slogdet": slogdet,
    "linalg_solve": linalg_solve, "linalg_cholesky": linalg_cholesky, "cholesky": cholesky,
    "cholesky_solve": cholesky_solve, "cholesky_inverse": cholesky_inverse, "qr": qr,
    "linalg_eigh": linalg_eigh, "linalg_eigvalsh": linalg_eigvalsh, "linalg_svd": linalg_svd,
    "linalg_svdvals": linalg_svdvals, "svd": svd, "linalg_pinv.atol_rtol_float": linalg_pinv,
    "pinverse": pinverse, "linalg_matrix_rank.atol_rtol_float": linalg_matrix_rank,
    "linalg_matrix_power": linalg_matrix_power, "matrix_power": matrix_power, "linalg_lstsq": linalg_lstsq,
    "linalg_multi_dot": linalg_multi_dot,
}
