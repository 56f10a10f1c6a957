"""Kernels of the matrix decompositions and solvers: det, slogdet, inv_ex, solve_ex, cholesky_ex, qr, eigh, svd.

Each checks what torch checks, in torch's order and words, and hands the arrays to
``npusim.kernels.linalg_factorizations``. Failed factorizations are reported through
``info`` (int32, one per matrix) and raise ``LinAlgError`` when ``check_errors``.
"""
from __future__ import annotations

import numpy as np

from ..core.linalg_errors import LinAlgError
from ..core.tensor import Tensor
from ..kernels import linalg_factorizations as K
from . import common as C

_make = C.make


def check_float(a, fname, low_precision_kernel):
    """torch's dtype checks of a linalg input: floating only, and no 16-bit floats."""
    if not C.is_float(a.dtype):
        raise RuntimeError(f"{fname}: Expected a floating point or complex tensor as input. Got {C.tname(a.dtype)}")
    if a.dtype.itemsize == 2:
        if low_precision_kernel is None:
            raise RuntimeError(f"{fname}: Low precision dtypes not supported. Got {C.tname(a.dtype)}")
        C.not_implemented(low_precision_kernel, a.dtype)


def check_matrix(a, fname, square=True, argname="A"):
    if a.ndim < 2:
        raise RuntimeError(f"{fname}: The input tensor {argname} must have at least 2 dimensions.")
    if square and a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"{fname}: A must be batches of square matrices, but they are {a.shape[-2]} by "
                           f"{a.shape[-1]} matrices")


def _square_float(A: Tensor, fname, low_precision_kernel="lu_cpu"):
    a = A._a
    check_matrix(a, fname)
    check_float(a, fname, low_precision_kernel)
    return a


def raise_info(info, fname, message):
    """LinAlgError for the first failed matrix; ``message`` formats its info code."""
    info = np.asarray(info.get() if hasattr(info, "get") else info)
    if not info.any():
        return
    flat = info.reshape(-1)
    i = int(np.flatnonzero(flat)[0])
    where = f"(Batch element {i}): " if info.ndim else ""
    raise LinAlgError(f"{fname}: {where}{message(int(flat[i]))}")


def _singular_message(code):
    return (f"The diagonal element {code} is zero, the inversion could not be completed because the input matrix "
            f"is singular.")


def linalg_det(A):
    return _make(K.det(_square_float(A, "linalg.det")), A._device)


def linalg_slogdet(A):
    sign, logabs = K.slogdet(_square_float(A, "linalg.slogdet"))
    return _make(sign, A._device), _make(logabs, A._device)


def linalg_inv_ex(A, *, check_errors=False):
    r, info, failed = K.inv(_square_float(A, "linalg.inv", None))
    if check_errors and failed:   # the kernel's finiteness read already answered for the others
        raise_info(info, "linalg.inv", _singular_message)
    return _make(r, A._device), _make(info, A._device)


def is_vector_rhs(a_shape, b_shape):
    """torch's rule: B is a (batch of) vector(s) when 1-D, or when its shape is A's without the last dim."""
    return len(b_shape) == 1 or (len(b_shape) == len(a_shape) - 1 and tuple(b_shape) == tuple(a_shape[:-1]))


def linalg_solve_ex(A, B, *, left=True, check_errors=False):
    dev = C.same_device(A, B)
    a, b = A._a, B._a
    fname = "linalg.solve"
    check_matrix(a, fname)
    if a.dtype != b.dtype:
        raise RuntimeError(f"{fname}: Expected A and B to have the same dtype, but found A of type "
                           f"{C.tname(a.dtype)} and B of type {C.tname(b.dtype)} instead")
    check_float(a, fname, "lu_cpu")
    vector = is_vector_rhs(a.shape, b.shape)
    bm = b[..., None] if vector else b
    n = a.shape[-1]
    if bm.ndim < 2 or (bm.shape[-2] if left else bm.shape[-1]) != n:
        rows, cols = (bm.shape[-2], bm.shape[-1]) if bm.ndim >= 2 else (bm.shape[0], 1)
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(f"{fname}: Incompatible shapes of A and B for the equation {eq} ({n}x{n} and "
                           f"{rows}x{cols})")
    C.broadcast_shapes(a.shape[:-2], bm.shape[:-2])
    if left:
        r, info, failed = K.solve(a, bm)
    else:   # X A = B  <=>  A^T X^T = B^T
        r, info, failed = K.solve(a.swapaxes(-1, -2), bm.swapaxes(-1, -2))
        r = r.swapaxes(-1, -2)
    if check_errors and failed:
        raise_info(info, "torch.linalg.solve", lambda _: "The solver failed because the input matrix is singular.")
    if vector:
        r = r[..., 0]
    return _make(r.copy() if not r.flags.c_contiguous else r, dev), _make(info, dev)


def linalg_cholesky_ex(self, *, upper=False, check_errors=False):
    a = _square_float(self, "linalg.cholesky", "cholesky_cpu")
    low, info, failed = K.cholesky(a, upper)
    if check_errors and failed:
        raise_info(info, "linalg.cholesky",
                   lambda code: f"The factorization could not be completed because the input is not "
                                f"positive-definite (the leading minor of order {code} is not positive-definite).")
    return _make(low, self._device), _make(info, self._device)


def linalg_qr(A, mode="reduced"):
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', "
                           f"or 'complete'")
    a = A._a
    check_matrix(a, "linalg.qr", square=False)
    check_float(a, "linalg.qr", "geqrf_cpu")
    q, r = K.qr(a, mode)
    return _make(q, A._device), _make(r, A._device)


def linalg_eigh_kernel(A, UPLO="L", compute_v=True):  # noqa: N803 - torch's name
    a = A._a
    check_matrix(a, "linalg.eigh")
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    if not C.is_float(a.dtype) or a.dtype.itemsize == 2:
        C.not_implemented("linalg_eigh_cpu", a.dtype)
    w, v = K.eigh(a, UPLO, compute_v)
    return _make(w, A._device), _make(v, A._device)


def linalg_svd_kernel(A, full_matrices=False, compute_uv=True, *, driver=None):
    a = A._a
    check_matrix(a, "linalg.svd", square=False)
    check_float(a, "linalg.svd", "linalg_svd_cpu")
    if driver is not None:
        raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs with "
                           "cuSOLVER backend.")
    u, s, vh = K.svd(a, full_matrices, compute_uv)
    dev = A._device
    return _make(u, dev), _make(s, dev), _make(vh, dev)


KERNELS = {
    "linalg_det": linalg_det,
    "linalg_slogdet": linalg_slogdet,
    "linalg_inv_ex": linalg_inv_ex,
    "linalg_solve_ex": linalg_solve_ex,
    "linalg_cholesky_ex": linalg_cholesky_ex,
    "linalg_qr": linalg_qr,
    "_linalg_eigh": linalg_eigh_kernel,
    "_linalg_svd": linalg_svd_kernel,
}
