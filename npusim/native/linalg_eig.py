"""Kernels of linalg_eig and _linalg_eigvals, and linalg_eigvals's composite (torch's
CompositeImplicitAutograd: through linalg_eig when a gradient may be needed, so autograd has the
eigenvectors its formula uses).

torch's checks in torch's order: at least 2 dims, square, a dtype with a complex counterpart (integers and
bool fail converting to one), no 16-bit floats, finite values.
"""
from __future__ import annotations

from ..core.autograd.forward_mode import may_require_grad
from ..core.dispatch.ops_namespace import aten
from ..core.tensor import Tensor
from ..kernels import linalg_eig as K
from . import common as C
from .linalg_factorizations import check_matrix


def _checked(A: Tensor, fname):
    check_matrix(A._a, fname)
    dt = A.dtype
    if not (dt.is_floating_point or dt.is_complex):
        raise RuntimeError(f"Unknown Complex ScalarType for {C.tname(dt)}")
    if dt.itemsize == 2 and not dt.is_complex:
        raise NotImplementedError(f"\"linalg_eig_out_cpu\" not implemented for '{C.tname(dt)}'")
    return A._a


def linalg_eig(self):
    a = _checked(self, "linalg.eig")
    if not K.is_finite(a):
        raise RuntimeError("torch.linalg.eig: input tensor should not contain infs or NaNs.")
    w, v = K.eig(a)
    return C.make(w, self._device), C.make(v, self._device)


def linalg_eigvals_kernel(self):
    a = _checked(self, "linalg.eigvals")
    if not K.is_finite(a):   # torch's CPU kernel does not check here (LAPACK then fails); npusim refuses as eig
        raise RuntimeError("torch.linalg.eigvals: input tensor should not contain infs or NaNs.")
    return C.make(K.eigvals(a), self._device)


def linalg_eigvals(self):
    if may_require_grad(self):
        return aten.linalg_eig.default(self)[0]
    return aten._linalg_eigvals.default(self)


KERNELS = {"linalg_eig": linalg_eig, "_linalg_eigvals": linalg_eigvals_kernel}
COMPOSITE_IMPLICIT = {"linalg_eigvals": linalg_eigvals}
