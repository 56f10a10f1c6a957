"""Distances as compositions of dispatched ops: cosine_similarity, cdist and dist."""
from __future__ import annotations

from ..core.dispatch.ops_namespace import aten
from ..core.tensor import _wrap_dim
from . import common as C


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
COMPOSITE_IMPLICIT = {"cosine_similarity": cosine_similarity, "cdist": cdist, "dist": dist}
