"""Products that decompose into other dispatched ops: linear, addr, addbmm, cross and tensordot, and the
distances built on them (cosine_similarity, cdist, dist).

As torch's CompositeImplicitAutograd kernels, each is a few matrix products,
views and pointwise ops, so autograd, autocast and profiling see every step.
"""
from __future__ import annotations

import math
import warnings

from ..core.dispatch.ops_namespace import aten
from ..core.tensor import _wrap_dim
from . import common as C


def linear(input, weight, bias=None):
    """input @ weight.T + bias (a 2-D input takes the fused addmm).

    An input of 3 or more dims is folded into the rows of one matrix product, as torch's linear and matmul fold
    it: one large BLAS call instead of a batch of small ones, and a weight gradient that is one product over all
    rows rather than a stack of per-batch products summed afterwards (torch's arithmetic). A strided input is
    copied by the reshape, as in torch, and its bias added in place after the product (a contiguous one's goes into
    the addmm, as torch's: 16-bit results rounded once). Mismatched operands take the matmul path, which raises
    torch's errors.
    """
    dims = input.dim()
    if dims == 2 and bias is not None:
        return aten.addmm.default(bias, input, aten.t.default(weight))
    if dims >= 3 and weight.dim() == 2 and input.dtype is weight.dtype and input.dtype.is_floating_point and \
            input.shape[-1] == weight.shape[1] and (bias is None or bias.dtype is input.dtype):
        shape = list(input.shape)
        rows = aten.reshape.default(input, [math.prod(shape[:-1]), shape[-1]])
        wt = aten.t.default(weight)
        out_shape = shape[:-1] + [weight.shape[0]]
        if bias is not None and bias.dim() == 1 and input.is_contiguous():   # torch's _flatten_nd_linear
            return aten.view.default(aten.addmm.default(bias, rows, wt), out_shape)
        prod = aten.mm.default(rows, wt)
        if bias is not None and bias.dim() == 1 and bias.dtype is prod.dtype:
            # torch's matmul, then output.add_(bias): added in place, no second result-sized array
            return aten.view.default(aten.add_.Tensor(prod, bias), out_shape)
        out = aten.view.default(prod, out_shape)
        return out if bias is None else aten.add.Tensor(out, bias)
    out = aten.matmul.default(input, aten.t.default(weight))
    return out if bias is None else aten.add.Tensor(out, bias)


def _check_integral_coefficient(dt, name, v):
    if not dt.is_floating_point and isinstance(v, float):
        raise RuntimeError(f"For integral input tensors, argument {name} must not be a floating point number.")


def _beta_self_plus(self, product, beta, alpha, shape):
    """beta * self (broadcast to ``shape``) + alpha * product; beta 0 ignores self, NaN included."""
    dt = C.result_type(self, product)
    _check_integral_coefficient(dt, "beta", beta)
    _check_integral_coefficient(dt, "alpha", alpha)
    if beta == 0:
        return aten.mul.Scalar(product, alpha) if alpha != 1 else aten.clone.default(product)
    base = aten.expand.default(self, shape) if list(self.shape) != shape else self
    if beta != 1:
        base = aten.mul.Scalar(base, beta)
    return aten.add.Tensor(base, product, alpha=alpha)


def addr(self, vec1, vec2, *, beta=1, alpha=1):
    """beta * self + alpha * outer(vec1, vec2)."""
    for name, v in (("vec1", vec1), ("vec2", vec2)):
        if v.dim() != 1:
            raise RuntimeError(f"addr: Expected 1-D argument {name}, but got {v.dim()}-D")
    return _beta_self_plus(self, aten.outer.default(vec1, vec2), beta, alpha, [vec1.shape[0], vec2.shape[0]])


def addbmm(self, batch1, batch2, *, beta=1, alpha=1):
    """beta * self + alpha * sum over the batch of batch1[b] @ batch2[b]."""
    for name, b in (("batch1", batch1), ("batch2", batch2)):
        if b.dim() != 3:
            raise RuntimeError(f"{name} must be a 3D tensor")
    if batch1.shape[0] != batch2.shape[0]:
        raise RuntimeError(f"batch1 and batch2 must have same number of batches, got {batch1.shape[0]} and "
                           f"{batch2.shape[0]}")
    if batch1.shape[2] != batch2.shape[1]:
        raise RuntimeError(f"Incompatible matrix sizes for bmm ({batch1.shape[1]}x{batch1.shape[2]} and "
                           f"{batch2.shape[1]}x{batch2.shape[2]})")
    product = aten.sum.dim_IntList(aten.bmm.default(batch1, batch2), [0])
    return _beta_self_plus(self, product, beta, alpha, [batch1.shape[1], batch2.shape[2]])


_CROSS_DIM_WARNED = []


def cross(self, other, dim=None):
    """The cross product along a dim of length 3 (by default, the first such dim of ``self``, as torch.cross).

    As torch's linalg_cross: both inputs have the same number of dims and one dtype; the others broadcast.
    """
    if dim is None:
        if not _CROSS_DIM_WARNED:
            _CROSS_DIM_WARNED.append(True)
            warnings.warn("Using npusim.cross without specifying the dim arg is deprecated.\nPlease either pass the "
                          "dim explicitly or simply use npusim.linalg.cross.\nThe default value of dim will change to "
                          "agree with that of linalg.cross in a future release.", UserWarning, stacklevel=2)
        dim = next((i for i, n in enumerate(self.shape) if n == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    if self.dim() != other.dim():
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    d = _wrap_dim(dim, self.dim())
    if self.shape[d] != 3 or other.shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {self.shape[d]} and "
                           f"{other.shape[d]}")
    C.broadcast_shapes(tuple(self.shape), tuple(other.shape))
    if self.dtype is not other.dtype:
        raise RuntimeError(f"expected scalar type {C.TORCH_NAME[self.dtype]} but found {C.TORCH_NAME[other.dtype]}")
    a0, a1, a2 = (aten.narrow.default(self, d, i, 1) for i in range(3))
    b0, b1, b2 = (aten.narrow.default(other, d, i, 1) for i in range(3))
    sub, mul = aten.sub.Tensor, aten.mul.Tensor
    return aten.cat.default([sub(mul(a1, b2), mul(a2, b1)), sub(mul(a2, b0), mul(a0, b2)),
                             sub(mul(a0, b1), mul(a1, b0))], d)


def tensordot(self, other, dims_self, dims_other):
    """Contract dims_self of self with dims_other of other (a permute, reshape and one matrix product)."""
    if len(dims_self) != len(dims_other):
        raise RuntimeError("both dimension lists should have same length")
    if self.dtype is not other.dtype:
        raise RuntimeError("both inputs should have same dtype")
    ds = [_wrap_dim(d, self.dim()) for d in dims_self]
    do = [_wrap_dim(d, other.dim()) for d in dims_other]
    for a, b in zip(ds, do):
        if self.shape[a] != other.shape[b]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {self.shape[a]} in dim {a} "
                               f"and second has size {other.shape[b]} in dim {b}")
    free_s = [d for d in range(self.dim()) if d not in ds]
    free_o = [d for d in range(other.dim()) if d not in do]
    k = 1
    for d in ds:
        k *= self.shape[d]
    left = aten.reshape.default(aten.permute.default(self, free_s + ds), [-1, k])
    right = aten.reshape.default(aten.permute.default(other, do + free_o), [k, -1])
    out_shape = [self.shape[d] for d in free_s] + [other.shape[d] for d in free_o]
    return aten.reshape.default(aten.mm.default(left, right), out_shape)


# --- distances ---------------------------------------------------------------------------------------------------

def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """sum(x1 / |x1| * x2 / |x2|) over ``dim``; the norms are clamped below at ``eps``."""
    dt = C.result_type(x1, x2)
    if not dt.is_floating_point:
        raise RuntimeError(f"expected common dtype to be floating point, yet common dtype is {C.TORCH_NAME[dt]}")
    shape = list(C.broadcast_shapes(tuple(x1.shape), tuple(x2.shape)))
    if x1.dtype is not dt:
        x1 = aten._to_copy.default(x1, dtype=dt)
    if x2.dtype is not dt:
        x2 = aten._to_copy.default(x2, dtype=dt)
    if list(x1.shape) != shape:
        x1 = aten.expand.default(x1, shape)
    if list(x2.shape) != shape:
        x2 = aten.expand.default(x2, shape)
    d = _wrap_dim(dim, len(shape))
    n1 = aten.clamp_min.default(aten.norm.ScalarOpt_dim(x1, 2, [d], True), eps)
    n2 = aten.clamp_min.default(aten.norm.ScalarOpt_dim(x2, 2, [d], True), eps)
    return aten.sum.dim_IntList(aten.mul.Tensor(aten.div.Tensor(x1, n1), aten.div.Tensor(x2, n2)), [d])


def cdist(x1, x2, p=2.0, compute_mode=None):
    """p-norm distances between the rows of x1 (..., P, M) and of x2 (..., R, M)."""
    for name, x in (("X1", x1), ("X2", x2)):
        if x.dim() < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: {x.dim()}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    for name, x in (("X1", x1), ("X2", x2)):
        if not x.is_floating_point():
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: {C.tname(x._a.dtype)}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    diff = aten.sub.Tensor(aten.unsqueeze.default(x1, -2), aten.unsqueeze.default(x2, -3))
    return aten.norm.ScalarOpt_dim(diff, p, [-1], False)


def dist(self, other, p=2):
    return aten.norm.Scalar(aten.sub.Tensor(self, other), p)


# Ops that decompose into other ops (CompositeImplicitAutograd): autograd comes from the parts.
COMPOSITE_IMPLICIT = {
    "linear": linear, "addr": addr, "addbmm": addbmm, "cross": cross, "tensordot": tensordot,
    "cosine_similarity": cosine_similarity, "cdist": cdist, "dist": dist,
}
