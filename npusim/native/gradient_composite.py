"""torch.gradient's seven aten overloads, as torch's CompositeImplicitAutograd kernels (ATen's ReduceOps.cpp).

Central differences inside each dimension and one-sided differences of first or second order at its ends,
with a uniform spacing (a scalar per dimension) or the coordinates of the samples (a 1-D tensor per
dimension). Each step is a dispatched op in torch's order, so values, dtypes and gradients follow torch's.
"""
from __future__ import annotations

from ..core.c10 import dtype as D
from ..core.dispatch.ops_namespace import aten
from . import common as C

_sl = aten.slice.Tensor
_sub, _mul, _div, _add = aten.sub.Tensor, aten.mul.Tensor, aten.div.Tensor, aten.add.Tensor


def _dims(self, dim):
    """gradient_dim_preprocess: the given dim(s), else every dim."""
    if dim is None:
        return list(range(self.dim()))
    return [dim] if isinstance(dim, int) else list(dim)


def _pre_check(self, spacing_size, dims, dim_given, edge_order):
    if self.dtype is D.uint8:
        raise RuntimeError("torch.gradient does not support uint8 input.")
    if spacing_size is not None and not dim_given and spacing_size != self.dim():
        raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar, or a list of length equal to "
                           f"'self.dim() = {self.dim()}', since dim argument was not given, but got a list of length "
                           f"{spacing_size}")
    if spacing_size is not None and dim_given and spacing_size != len(dims):
        raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or it's spacing and dim "
                           f"arguments to have the same length, but got a spacing argument of length {spacing_size} "
                           f"and a dim argument of length {len(dims)}.")
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    if dim_given:
        C.dims_arg(list(dims), self.dim())       # range and repeats, as dim_list_to_bitset
    for d in dims:
        if self.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least edge_order+1")


def _join(prepend, center, append, dim):
    return aten.cat.default([prepend, center, append], dim)


def _scalar(v):
    return v.item() if hasattr(v, "item") else v


def _uniform(self, spacing, dims, edge_order):
    """gradient_helper_float: one scalar step per dim."""
    out = []
    for i, d in enumerate(dims):
        d = C._wrap_dim(d, self.dim())
        h = _scalar(spacing[i])
        center = aten.div.Scalar(_sub(_sl(self, d, 2, None), _sl(self, d, 0, -2)), h)
        if edge_order == 1:
            prepend = aten.div.Scalar(_sub(_sl(self, d, 1, 2), _sl(self, d, 0, 1)), h)
            append = aten.div.Scalar(_sub(_sl(self, d, -1, None), _sl(self, d, -2, -1)), h)
        else:
            prepend = aten.div.Scalar(_sub(_add(aten.mul.Scalar(_sl(self, d, 0, 1), -1.5),
                                                aten.mul.Scalar(_sl(self, d, 1, 2), 2)),
                                           aten.mul.Scalar(_sl(self, d, 2, 3), 0.5)), h)
            append = aten.div.Scalar(_add(_sub(aten.mul.Scalar(_sl(self, d, -3, -2), 0.5),
                                               aten.mul.Scalar(_sl(self, d, -2, -1), 2)),
                                          aten.mul.Scalar(_sl(self, d, -1, None), 1.5)), h)
        out.append(_join(prepend, aten.div.Scalar(center, 2), append, d))
    return out


def _coordinates(self, coords, dims, edge_order):
    """gradient_helper: the samples' coordinates along each dim (non-uniform steps)."""
    out = []
    for i, d in enumerate(dims):
        x = coords[i]
        if x.dim() != 1:
            raise RuntimeError(f"torch.gradient expected each element of spacing to have one dimension, but got an "
                               f"element with {x.dim()} dimensions!")
        d = C._wrap_dim(d, self.dim())
        shape = [1] * self.dim()
        shape[d] = -1
        dx = aten.diff.default(x, 1, 0)
        dx1, dx2 = _sl(dx, 0, 0, -1), _sl(dx, 0, 1, None)
        a = aten.reshape.default(_div(aten.neg.default(dx2), _mul(dx1, _add(dx1, dx2))), shape)
        b = aten.reshape.default(_div(_sub(dx2, dx1), _mul(dx1, dx2)), shape)
        c = aten.reshape.default(_div(dx1, _mul(dx2, _add(dx1, dx2))), shape)
        center = _add(_add(_mul(a, _sl(self, d, 0, -2)), _mul(b, _sl(self, d, 1, -1))), _mul(c, _sl(self, d, 2, None)))
        first, last = aten.select.int(dx, 0, 0), aten.select.int(dx, 0, -1)
        if edge_order == 1:
            prepend = _div(_sub(_sl(self, d, 1, 2), _sl(self, d, 0, 1)), first)
            append = _div(_sub(_sl(self, d, -1, None), _sl(self, d, -2, -1)), last)
        else:
            d0, d1 = first, aten.select.int(dx, 0, 1)
            a = aten.neg.default(_div(_add(aten.mul.Scalar(d0, 2.0), d1), _mul(d0, _add(d0, d1))))
            b = _div(_add(d0, d1), _mul(d0, d1))
            c = _div(aten.neg.default(d0), _mul(d1, _add(d0, d1)))
            prepend = _add(_add(_mul(a, _sl(self, d, 0, 1)), _mul(b, _sl(self, d, 1, 2))), _mul(c, _sl(self, d, 2, 3)))
            dl, dl2 = last, aten.select.int(dx, 0, -2)
            a = _div(dl, _mul(dl2, _add(dl, dl2)))
            b = aten.neg.default(_div(_add(dl, dl2), _mul(dl, dl2)))
            c = _div(_add(aten.mul.Scalar(dl, 2), dl2), _mul(dl, _add(dl, dl2)))
            append = _add(_add(_mul(a, _sl(self, d, -3, -2)), _mul(b, _sl(self, d, -2, -1))),
                          _mul(c, _sl(self, d, -1, None)))
        out.append(_join(prepend, center, append, d))
    return out


def gradient_scalarint(self, *, spacing=None, dim=None, edge_order=1):
    dims = _dims(self, dim)
    steps = [1.0 if spacing is None else spacing] * len(dims)
    _pre_check(self, len(steps), dims, dim is not None, edge_order)
    return _uniform(self, steps, dims, edge_order)


def gradient_scalararray(self, *, spacing, dim, edge_order=1):
    dims = list(dim)
    steps = [spacing] * len(dims)
    _pre_check(self, len(steps), dims, True, edge_order)
    return _uniform(self, steps, dims, edge_order)


def gradient_array(self, *, dim, edge_order=1):
    dims = list(dim)
    steps = [1.0] * len(dims)
    _pre_check(self, len(steps), dims, True, edge_order)
    return _uniform(self, steps, dims, edge_order)


def gradient_scalarrayint(self, *, spacing, dim=None, edge_order=1):
    dims = _dims(self, dim)
    _pre_check(self, len(spacing), dims, dim is not None, edge_order)
    return _uniform(self, list(spacing), dims, edge_order)


def gradient_scalarrayarray(self, *, spacing, dim, edge_order=1):
    dims = list(dim)
    _pre_check(self, len(spacing), dims, True, edge_order)
    return _uniform(self, list(spacing), dims, edge_order)


def gradient_tensorarrayint(self, *, spacing, dim=None, edge_order=1):
    dims = _dims(self, dim)
    _pre_check(self, len(spacing), dims, dim is not None, edge_order)
    return _coordinates(self, list(spacing), dims, edge_order)


def gradient_tensorarray(self, *, spacing, dim, edge_order=1):
    dims = list(dim)
    _pre_check(self, len(spacing), dims, True, edge_order)
    return _coordinates(self, list(spacing), dims, edge_order)


COMPOSITE_IMPLICIT = {
    "gradient.scalarint": gradient_scalarint, "gradient.scalararray": gradient_scalararray,
    "gradient.array": gradient_array, "gradient.scalarrayint": gradient_scalarrayint,
    "gradient.scalarrayarray": gradient_scalarrayarray, "gradient.tensorarrayint": gradient_tensorarrayint,
    "gradient.tensorarray": gradient_tensorarray,
}
