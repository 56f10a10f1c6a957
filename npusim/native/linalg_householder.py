"""geqrf (a kernel: LAPACK's Householder QR layout) and ormqr (a composition: the reflectors applied one by
one, so its gradient comes from the parts as torch's formula gives it)."""
from __future__ import annotations

from ..core.dispatch.ops_namespace import aten
from ..kernels import linalg_householder as K
from . import common as C
from .linalg_factorizations import check_float

_matmul = aten.matmul.default


def geqrf(self):
    a = self._a
    if a.ndim < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    if not C.is_float(a.dtype) or a.dtype.itemsize == 2:
        C.not_implemented("geqrf_cpu", a.dtype)
    h, tau = K.geqrf(a)
    return C.make(h, self._device), C.make(tau, self._device)


def _ormqr_checks(input, tau, other, left):  # noqa: A002 - torch's name
    if input.dim() < 2:
        raise RuntimeError("torch.ormqr: input must have at least 2 dimensions.")
    if other.dim() < 2:
        raise RuntimeError("torch.ormqr: other must have at least 2 dimensions.")
    cond = -2 if left else -1
    if other.shape[cond] != input.shape[-2]:
        raise RuntimeError(f"torch.ormqr: other.shape[{cond}] must be equal to input.shape[-2]")
    if tau.dim() == 0 or min(other.shape[cond], input.shape[-1]) != tau.shape[-1]:
        raise RuntimeError(f"torch.ormqr: tau.shape[-1] must be equal to min(other.shape[{cond}], input.shape[-1])")
    if input.dim() - tau.dim() != 1:
        raise RuntimeError(f"torch.ormqr: Expected tau to have one dimension less than input, but got tau.ndim equal "
                           f"to {tau.dim()} and input.ndim is equal to {input.dim()}")
    if input.dim() != other.dim():
        raise RuntimeError(f"torch.ormqr: Expected other to have the same number of dimensions as input, but got "
                           f"other.ndim equal to {other.dim()} and input.ndim is equal to {input.dim()}")
    if input.dim() > 2:
        want = list(input.shape[:-2])
        if list(tau.shape[:-1]) != want:
            raise RuntimeError(f"torch.ormqr: Expected batch dimensions of tau to be equal to input.shape[:-2], but "
                               f"got {list(tau.shape[:-1])}")
        if list(other.shape[:-2]) != want:
            raise RuntimeError(f"torch.ormqr: Expected batch dimensions of other to be equal to input.shape[:-2], but "
                               f"got {list(other.shape[:-2])}")
    if tau.dtype is not input.dtype:
        raise RuntimeError(f"torch.ormqr: Expected input and tau to have the same dtype, but input has dtype"
                           f"{C.TORCH_NAME[input.dtype]} and tau has dtype {C.TORCH_NAME[tau.dtype]}")
    if other.dtype is not input.dtype:
        raise RuntimeError(f"torch.ormqr: Expected input and other to have the same dtype, but input has dtype"
                           f"{C.TORCH_NAME[input.dtype]} and other has dtype {C.TORCH_NAME[other.dtype]}")
    check_float(input._a, "torch.ormqr", "ormqr_cpu")


def ormqr(self, input2, input3, left=True, transpose=False):
    """Q C, Q^T C, C Q or C Q^T (``input3`` = C) for Q = H_1 ... H_k, H_i = I - tau_i v_i v_i^T, v_i = (0.., 1,
    self[i+1:, i])."""
    C.same_device(self, input2, input3)
    _ormqr_checks(self, input2, input3, left)
    m = self.shape[-2]
    k = input2.shape[-1]
    rows = aten.arange.default(m, dtype=self.dtype, device=self.device)
    # Q C applies H_k first; Q^T C applies H_1 first; on the right the order turns round
    order = range(k - 1, -1, -1) if left != transpose else range(k)
    out = input3
    for i in order:
        col = aten.select.int(self, -1, i)
        v = aten.add.Tensor(aten.mul.Tensor(col, aten.gt.Scalar(rows, i)), aten.eq.Scalar(rows, i))   # (..., m)
        t = aten.unsqueeze.default(aten.unsqueeze.default(aten.select.int(input2, -1, i), -1), -1)
        if left:        # H C = C - tau v (v^T C)
            v = aten.unsqueeze.default(v, -1)
            out = aten.sub.Tensor(out, _matmul(aten.mul.Tensor(v, t), _matmul(aten.transpose.int(v, -2, -1), out)))
        else:           # C H = C - (C v) tau v^T
            v = aten.unsqueeze.default(v, -2)
            out = aten.sub.Tensor(out, _matmul(_matmul(out, aten.transpose.int(v, -2, -1)), aten.mul.Tensor(v, t)))
    return aten.clone.default(out) if k == 0 else out


KERNELS = {"geqrf": geqrf}
COMPOSITE_IMPLICIT = {"ormqr": ormqr}
