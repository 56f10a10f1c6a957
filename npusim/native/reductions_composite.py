"""Reductions and selections that decompose into other dispatched ops.

nansum / nanmean, median / nanmedian / kthvalue / mode (through a stable
sort), aminmax, histc and bincount. As torch's CompositeImplicitAutograd
kernels, autograd differentiates the ops they are made of.
"""
from __future__ import annotations

from ..core.c10 import dtype as D
from ..core.dispatch.ops_namespace import aten
from ..core.tensor import _wrap_dim
from . import common as C


def _dims_list(dim):
    if dim is None:
        return None
    return [dim] if isinstance(dim, int) else list(dim)


def nansum(self, dim=None, keepdim=False, *, dtype=None):
    zeroed = aten.masked_fill.Scalar(self, aten.isnan.default(self), 0) if self.is_floating_point() else self
    return aten.sum.dim_IntList(zeroed, _dims_list(dim), keepdim, dtype=dtype)


def nanmean(self, dim=None, keepdim=False, *, dtype=None):
    if not self.is_floating_point():
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex dtype but got "
                           f"{C.tname(self.dtype)}")
    if dtype is not None and not dtype.is_floating_point:
        raise RuntimeError(f"nanmean(): could not infer output dtype. Optional dtype must be either a floating "
                           f"point or complex dtype. Got: {C.tname(dtype)}")
    count = aten.sum.dim_IntList(aten.logical_not.default(aten.isnan.default(self)), _dims_list(dim), keepdim)
    return aten.div.Tensor(nansum(self, dim, keepdim, dtype=dtype), count)


# --- order statistics through a stable sort --------------------------------------------------------

def _reduction_dim(self, dim, name):
    d = _wrap_dim(dim, self.dim())
    if self.dim() and self.shape[d] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
    return d


def _pick(sorted_values, order, position, d, keepdim, scalar_input):
    """values / indices at ``position`` (an index tensor, keepdim-shaped) of the sorted dim ``d``."""
    values = aten.gather.default(sorted_values, d, position)
    indices = aten.gather.default(order, d, position)
    if scalar_input:   # a 0-d input was reduced as shape [1]: its results are 0-d, keepdim or not
        values, indices = aten.reshape.default(values, []), aten.reshape.default(indices, [])
    elif not keepdim:
        values, indices = aten.squeeze.dim(values, d), aten.squeeze.dim(indices, d)
    return values, indices


def _sorted_along(self, d):
    flat = self.dim() == 0
    x = aten.reshape.default(self, [1]) if flat else self
    values, order = aten.sort.stable(x, stable=True, dim=d)
    return x, values, order, flat


def _median_dim(self, dim, keepdim, ignore_nan, name):
    d = _reduction_dim(self, dim, name)
    x, values, order, flat = _sorted_along(self, d)
    n = x.shape[d]
    if x.is_floating_point():
        nan_count = aten.sum.dim_IntList(aten.isnan.default(x), [d], True)
    else:
        nan_count = aten.zeros_like.default(aten.narrow.default(x, d, 0, 1), dtype=D.int64)
    if ignore_nan:
        # the lower median of the non-NaN values; an all-NaN slice gives its first NaN
        position = aten.clamp_min.default(aten.floor_divide.Scalar(aten.rsub.Scalar(nan_count, n - 1), 2), 0)
    else:
        # NaN sorts last: a slice with one reports its first NaN, as torch does
        middle = aten.full_like.default(nan_count, (n - 1) // 2)
        position = aten.where.self(aten.gt.Scalar(nan_count, 0), aten.rsub.Scalar(nan_count, n), middle)
    return _pick(values, order, position, d, keepdim, flat)


def median_dim(self, dim, keepdim=False):
    return _median_dim(self, dim, keepdim, False, "median")


def nanmedian_dim(self, dim, keepdim=False):
    return _median_dim(self, dim, keepdim, True, "nanmedian")


# torch's median of no elements is NaN cast as C casts it: the lowest int32 / int64, 0 for narrower integers, True
_EMPTY_MEDIAN = {D.int64: -2 ** 63, D.int32: -2 ** 31, D.int16: 0, D.int8: 0, D.uint8: 0, D.bool: True}


def _median_all(self, ignore_nan):
    flat = aten.reshape.default(self, [-1])
    if flat.shape[0] == 0:
        return aten.full.default([], _EMPTY_MEDIAN.get(self.dtype, float("nan")), dtype=self.dtype,
                                 device=self.device)
    return _median_dim(flat, 0, False, ignore_nan, "median")[0]


def median(self):
    return _median_all(self, False)


def nanmedian(self):
    return _median_all(self, True)


def kthvalue(self, k, dim=-1, keepdim=False):
    d = _reduction_dim(self, dim, "kthvalue")
    x, values, order, flat = _sorted_along(self, d)
    if not 1 <= k <= x.shape[d]:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    position = aten.full_like.default(aten.narrow.default(x, d, 0, 1), k - 1, dtype=D.int64)
    return _pick(values, order, position, d, keepdim, flat)


def mode(self, dim=-1, keepdim=False):
    """The most frequent value (the smallest among equally frequent ones) and its last index."""
    d = _reduction_dim(self, dim, "mode")
    x, values, order, flat = _sorted_along(self, d)
    n = x.shape[d]
    # runs of equal sorted values: run id per position, run length per position
    starts = aten.ones_like.default(values, dtype=D.bool)
    if n > 1:
        changed = aten.ne.Tensor(aten.narrow.default(values, d, 1, n - 1), aten.narrow.default(values, d, 0, n - 1))
        starts = aten.cat.default([aten.narrow.default(starts, d, 0, 1), changed], d)
    run = aten.sub.Scalar(aten.cumsum.default(starts, d, dtype=D.int64), 1)
    counts = aten.scatter_add.default(aten.zeros_like.default(run), d, run, aten.ones_like.default(run))
    best = aten.argmax.default(counts, d, True)
    # the last sorted position of the best run holds its largest original index (the sort is stable)
    last = aten.rsub.Scalar(aten.sum.dim_IntList(aten.gt.Tensor(run, best), [d], True, dtype=D.int64), n - 1)
    return _pick(values, order, last, d, keepdim, flat)


def aminmax(self, *, dim=None, keepdim=False):
    if dim is not None and self.dim() and self.shape[_wrap_dim(dim, self.dim())] == 0:
        raise IndexError(f"aminmax: Expected reduction dim {_wrap_dim(dim, self.dim())} to have non-zero size.")
    if self.numel() == 0 and (dim is None or self.dim() == 0):
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
                           "identity.")
    if dim is None:
        x = aten.reshape.default(self, [-1]) if not keepdim else self
        dims = [0] if not keepdim else list(range(self.dim()))
        return aten.amin.default(x, dims, keepdim), aten.amax.default(x, dims, keepdim)
    return aten.amin.default(self, [dim], keepdim), aten.amax.default(self, [dim], keepdim)


# --- counting --------------------------------------------------------------------------------------

def histc(self, bins=100, min=0, max=0):
    if not self.is_floating_point():
        C.not_implemented("histogram_cpu", self.dtype)
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    low, high = float(min), float(max)
    if low > high:
        raise RuntimeError("torch.histc: max must be larger than min")
    flat = aten.reshape.default(aten.detach.default(self), [-1])
    if low == high and flat.numel():
        low, high = float(aten.amin.default(flat).item()), float(aten.amax.default(flat).item())
    if low == high:
        low, high = low - 1, high + 1
    inside = aten.masked_select.default(flat, aten.logical_and.default(aten.ge.Scalar(flat, low),
                                                                       aten.le.Scalar(flat, high)))
    position = aten.div.Scalar(aten.mul.Scalar(aten.sub.Scalar(inside, low), bins), high - low)
    # the right edge belongs to the last bin
    bin_index = aten.clamp_max.default(aten._to_copy.default(aten.floor.default(position), dtype=D.int64), bins - 1)
    counts = aten.zeros.default([bins], dtype=self.dtype, device=self.device)
    return aten.index_put.default(counts, [bin_index], aten.ones_like.default(inside), True)


def bincount(self, weights=None, minlength=0):
    if self.dtype.is_floating_point or self.dtype == D.bool:
        C.not_implemented("bincount_cpu", self.dtype)
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if self.dim() != 1 or (self.numel() and int(aten.amin.default(self).item()) < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is not None and (weights.dim() != 1 or weights.shape[0] != self.shape[0]):
        raise RuntimeError("weights should be 1-d and have the same length as input")
    length = max(minlength, int(aten.amax.default(self).item()) + 1 if self.numel() else 0)
    if weights is None:
        counts = aten.zeros.default([length], dtype=D.int64, device=self.device)
        return aten.index_put.default(counts, [self], aten.ones_like.default(self, dtype=D.int64), True)
    # torch counts float weights in float32 and any other weights in float64
    out_dtype = D.float32 if weights.dtype == D.float32 else D.float64
    counts = aten.zeros.default([length], dtype=out_dtype, device=self.device)
    return aten.index_put.default(counts, [self], aten._to_copy.default(weights, dtype=out_dtype), True)


COMPOSITE_IMPLICIT = {
    "nansum": nansum, "nanmean": nanmean, "median": median, "median.dim": median_dim,
    "nanmedian": nanmedian, "nanmedian.dim": nanmedian_dim, "kthvalue": kthvalue, "mode": mode,
    "aminmax": aminmax, "histc": histc, "bincount": bincount,
}
