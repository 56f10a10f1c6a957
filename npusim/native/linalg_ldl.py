"""torch.linalg's LDL family: ldl_factor_ex (a kernel over ``npusim.kernels.linalg_ldl``, LAPACK's sytrf('L')
pivots), ldl_factor and ldl_solve. For real inputs ``hermitian`` changes nothing (symmetric is Hermitian)."""
from __future__ import annotations

from ..core.dispatch.ops_namespace import aten
from ..kernels import linalg_ldl as K
from ..kernels.array_api import to_host
from . import common as C
from .linalg_factorizations import check_float, check_matrix


def _zero_pivot_message(fname, info):
    # torch 2.13 reaches an internal assert here ("Unknown error code"); this says what happened
    return (f"{fname}: The factorization could not be completed because the block diagonal matrix D has a zero "
            f"pivot block at column {info}, so the matrix is singular.")


def _raise_info(info, fname, batched):
    for i, code in enumerate(to_host(info).reshape(-1).tolist()):
        if code:
            where = f"(Batch element {i}): " if batched else ""
            raise RuntimeError(where + _zero_pivot_message(fname, code))


def linalg_ldl_factor_ex(self, *, hermitian=False, check_errors=False):
    a = self._a
    fname = "torch.linalg.ldl_factor_ex"
    check_matrix(a, fname)
    check_float(a, fname, "ldl_factor_kernel_cpu")
    ld, piv, info = K.ldl_factor(a)
    if check_errors:
        _raise_info(info, fname, a.ndim > 2)
    dev = self._device
    return C.make(ld, dev), C.make(piv, dev), C.make(info, dev)


def linalg_ldl_factor(self, *, hermitian=False):
    ld, piv, info = aten.linalg_ldl_factor_ex.default(self, hermitian=hermitian, check_errors=False)
    _raise_info(info._a, "torch.linalg.ldl_factor", self.dim() > 2)
    return ld, piv


def linalg_ldl_solve(LD, pivots, B, *, hermitian=False):  # noqa: N803 - torch's names
    dev = C.same_device(LD, pivots, B)
    fname = "torch.linalg.ldl_solve"
    ld, piv, b = LD._a, pivots._a, B._a
    check_matrix(ld, fname, argname="LD")
    if b.ndim < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-max(b.ndim, 1)}, "
                         f"{max(b.ndim, 1) - 1}], but got -2)")
    if ld.shape[-1] != b.shape[-2]:
        raise RuntimeError(f"Incompatible matrix sizes for {fname}: each A matrix is {ld.shape[-2]} by "
                           f"{ld.shape[-1]} but each b matrix is {b.shape[-2]} by {b.shape[-1]}")
    if tuple(ld.shape[:-1]) != tuple(piv.shape):
        raise RuntimeError(f"{fname}: Expected LD.shape[:-1] and pivots.shape to be the same, but got pivots with "
                           f"shape {list(piv.shape)} instead")
    if LD.dtype is not B.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type {C.tname(b.dtype)} and A of "
                           f"type {C.tname(ld.dtype)} instead.")
    check_float(ld, fname, "ldl_solve_cpu")
    C.broadcast_shapes(ld.shape[:-2], b.shape[:-2])
    return C.make(K.ldl_solve(ld, piv, b), dev)


KERNELS = {"linalg_ldl_factor_ex": linalg_ldl_factor_ex, "linalg_ldl_solve": linalg_ldl_solve}
COMPOSITE_IMPLICIT = {"linalg_ldl_factor": linalg_ldl_factor}
