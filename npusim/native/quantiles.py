"""quantile and nanquantile, as torch's CompositeImplicitAutograd kernels (ATen's Sorting.cpp).

The input is sorted along the reduced dim, each q becomes a fractional rank into the sorted values, and the two
neighbouring values are gathered and interpolated. Every step is a dispatched op (sort, gather, lerp), so the
gradient flows through them as torch's does.
"""
from __future__ import annotations

from ..core.c10 import dtype as D
from ..core.dispatch.ops_namespace import aten
from . import common as C

INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _cpp_double(v) -> str:
    """A double as C++'s ostream prints it (six significant digits)."""
    return f"{float(v):g}"


def _checks(self, q):
    if self.numel() == 0:
        raise RuntimeError("quantile() input tensor must be non-empty")
    if q.dim() > 1:
        raise RuntimeError("quantile() q must be a scalar or 1D tensor")
    if self.dtype not in (D.float32, D.float64):
        raise RuntimeError("quantile() input tensor must be either float or double dtype")
    if self.dtype is not q.dtype:
        raise RuntimeError("quantile() q tensor must be same dtype as the input tensor")
    if self.device != q.device:
        raise RuntimeError("quantile() q tensor must be on the same device as the input tensor")


def _output_shape(self, q, dim, keepdim, wrapped):
    if dim is not None and self.dim() > 0:
        shape = list(self.shape)
        if keepdim:
            shape[wrapped] = 1
        else:
            del shape[wrapped]
    elif keepdim:
        shape = [1] * self.dim()
    else:
        shape = []
    if q.dim() > 0:
        shape.insert(0, q.numel())
    return shape


def _quantile(self, q, dim, keepdim, interpolation, ignore_nan):
    if interpolation not in INTERPOLATIONS:
        raise RuntimeError(f"quantile() interpolation must be one of linear, lower, higher, midpoint or nearest, "
                           f"but got {interpolation}")
    _checks(self, q)
    wrapped = C._wrap_dim(0 if dim is None else dim, self.dim())
    out_shape = _output_shape(self, q, dim, keepdim, wrapped)
    # torch checks q's range on the CPU only, to spare an accelerator the sync; an npu q out of range would index
    # out of the sorted values, so it is checked there too
    in_range = aten.logical_and.default(aten.ge.Scalar(q, 0), aten.le.Scalar(q, 1))
    if not bool(aten.all.default(in_range).item()):
        raise RuntimeError("quantile() q values must be in the range [0, 1]")

    if dim is None:
        values = aten.reshape.default(self, [-1])
    elif wrapped == self.dim() - 1:
        values = self
    else:
        values = aten.transpose.int(aten.unsqueeze.default(self, -1), wrapped, -1)
    sorted_ = aten.sort.default(values, -1, False)[0]
    if q.dim() == 0:
        out_shape.insert(0, q.numel())
    in_shape = out_shape[1:] + [sorted_.shape[-1]]     # the kept dims, then the sorted one
    sorted_ = aten.reshape.default(sorted_, in_shape)
    if sorted_.shape[-1] > 2 ** 24:
        raise RuntimeError("quantile() input tensor is too large")

    if ignore_nan:
        # ranks among the non-NaN values; an all-NaN row gets rank 0, whose value is NaN
        count = aten.sum.dim_IntList(aten.logical_not.default(aten.isnan.default(sorted_)), [-1], True)
        ranks = aten.mul.Tensor(q, aten.sub.Scalar(count, 1))
        ranks = aten.masked_fill.Scalar(ranks, aten.lt.Scalar(ranks, 0), 0)
    else:
        # a row holding NaN gets the last rank, where the sort put NaN
        last = sorted_.shape[-1] - 1
        scaled = aten.mul.Scalar(q, last)
        has_nan = aten.any.dim(aten.isnan.default(sorted_), -1, True)
        shape = list(C.broadcast_shapes(tuple(scaled.shape), tuple(has_nan.shape)))
        scaled, has_nan = aten.expand.default(scaled, shape), aten.expand.default(has_nan, shape)
        ranks = aten.masked_fill.Scalar(scaled, has_nan, last)

    if interpolation == "lower":
        ranks = aten.floor.default(ranks)
    elif interpolation == "higher":
        ranks = aten.ceil.default(ranks)
    elif interpolation == "nearest":
        ranks = aten.round.default(ranks)     # half to even, as torch's round_
    below = aten._to_copy.default(ranks, dtype=D.int64)
    result = aten.gather.default(sorted_, -1, below)
    if interpolation in ("linear", "midpoint"):
        weights = (aten.full_like.default(ranks, 0.5) if interpolation == "midpoint"
                   else aten.sub.Tensor(ranks, below))
        above = aten._to_copy.default(aten.ceil.default(ranks), dtype=D.int64)
        result = aten.lerp.Tensor(result, aten.gather.default(sorted_, -1, above), weights)

    if q.dim() == 0:
        return aten.squeeze.dim(result, -1)
    return aten.squeeze.dim(aten.transpose.int(aten.unsqueeze.default(result, 0), 0, -1), -1)


def _check_scalar_q(q):
    if not 0 <= q <= 1:
        raise RuntimeError(f"quantile() q must be in the range [0, 1] but got {_cpp_double(q)}")


def quantile(self, q, dim=None, keepdim=False, *, interpolation="linear"):
    return _quantile(self, q, dim, keepdim, interpolation, False)


def quantile_scalar(self, q, dim=None, keepdim=False, *, interpolation="linear"):
    _check_scalar_q(q)
    q = aten.scalar_tensor.default(q, dtype=self.dtype, device=self.device)
    return _quantile(self, q, dim, keepdim, interpolation, False)


def nanquantile(self, q, dim=None, keepdim=False, *, interpolation="linear"):
    return _quantile(self, q, dim, keepdim, interpolation, True)


def nanquantile_scalar(self, q, dim=None, keepdim=False, *, interpolation="linear"):
    _check_scalar_q(q)
    q = aten.scalar_tensor.default(q, dtype=self.dtype, device=self.device)
    return _quantile(self, q, dim, keepdim, interpolation, True)


COMPOSITE_IMPLICIT = {
    "quantile": quantile, "quantile.scalar": quantile_scalar,
    "nanquantile": nanquantile, "nanquantile.scalar": nanquantile_scalar,
}
