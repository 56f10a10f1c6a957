"""torch.histogram and torch.histogramdd's aten ops, with ATen's checks in ATen's order (Histogram.cpp).

The bin edges of a bin count are a linspace between the outer edges (``range``, else the input's extrema per
dimension, widened by 0.5 each way when they meet); the counting is ``npusim.kernels.histograms``.
"""
from __future__ import annotations

import math

from ..core.c10 import dtype as D
from ..core.dispatch.ops_namespace import aten
from ..kernels import histograms as K
from . import common as C

_FLOAT = (D.float32, D.float64)


def _fmt(v) -> str:
    """A double as C++'s ostream prints it."""
    return f"{float(v):g}"


def _check_inputs(points, bins, weight):
    """histogramdd_check_inputs: ``points`` is (M, N), ``bins`` N one-dimensional edge tensors."""
    if points.dim() < 2:
        raise RuntimeError(f"torch.histogramdd: input tensor should have at least 2 dimensions, but got "
                           f"{points.dim()}")
    n = points.shape[-1]
    if len(bins) != n:
        raise RuntimeError(f"torch.histogramdd: expected {n} sequences of bin edges for a {n}-dimensional histogram "
                           f"but got {len(bins)}")
    for d, b in enumerate(bins):
        if b.dtype is not points.dtype:
            raise RuntimeError(f"torch.histogramdd: input tensor and bins tensors should have the same dtype, but "
                               f"got input with dtype {C.tname(points.dtype)} and bins for dimension {d} with dtype "
                               f"{C.tname(b.dtype)}")
        if b.dim() != 1:
            raise RuntimeError(f"torch.histogramdd: bins tensor should have one dimension, but got {b.dim()} "
                               f"dimensions in the bins tensor for dimension {d}")
        if b.numel() == 0:
            raise RuntimeError(f"torch.histogramdd: bins tensor should have at least 1 element, but got 0 elements "
                               f"in the bins tensor for dimension {d}")
    if weight is not None:
        if weight.dtype is not points.dtype:
            raise RuntimeError(f"torch.histogramdd: if weight tensor is provided, input tensor and weight tensor "
                               f"should have the same dtype, but got input({C.tname(points.dtype)}), and "
                               f"weight({C.tname(weight.dtype)})")
        want = list(points.shape[:-1])
        got = list(weight.shape) or [1]
        if want != got:
            raise RuntimeError(f"torch.histogramdd: if weight tensor is provided it should have the same shape as the "
                               f"input tensor excluding its innermost dimension, but got input with shape "
                               f"{list(points.shape)} and weight with shape {list(weight.shape)}")


def _check_counts(counts):
    for d, c in enumerate(counts):
        if c <= 0:
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {c} for dimension {d}")


def _require_float(points, kernel="histogramdd"):
    if points.dtype not in _FLOAT:
        C.not_implemented(kernel, points._a.dtype)


def _outer_edges(points, range_):
    """select_outer_bin_edges on ``points`` (M, N)."""
    n = points.shape[-1]
    left, right = [0.0] * n, [1.0] * n      # numpy's default for an empty input
    if range_ is not None:
        if len(range_) != 2 * n:
            raise RuntimeError(f"torch.histogramdd: for a {n}-dimensional histogram range should have {2 * n} "
                               f"elements, but got {len(range_)}")
        left, right = [float(v) for v in range_[0::2]], [float(v) for v in range_[1::2]]
    elif points.numel() > 0:
        _require_float(points)
        lo, hi = aten.aminmax.default(points, dim=0)
        left, right = [float(v) for v in lo.tolist()], [float(v) for v in hi.tolist()]
    for d in range(n):
        a, b = left[d], right[d]
        if not (math.isfinite(a) and math.isfinite(b)):
            raise RuntimeError(f"torch.histogramdd: dimension {d}'s range [{_fmt(a)}, {_fmt(b)}] is not finite")
        if a > b:
            raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min {_fmt(a)} max {_fmt(b)} "
                               f"for dimension {d}")
        if a == b:      # numpy widens an empty range, and so normalising never divides by zero
            left[d], right[d] = a - 0.5, b + 0.5
    return left, right


def _linspace_edges(points, counts, range_):
    left, right = _outer_edges(points, range_)
    return [aten.linspace.default(left[d], right[d], counts[d] + 1, dtype=points.dtype, device=points.device)
            for d in range(len(counts))]


def _count(points, bins, weight, density):
    _require_float(points)
    w = None if weight is None else aten.reshape.default(weight, [-1])._a
    edges = [b._a for b in bins]
    return C.make(K.histogramdd(points._a, edges, w, density), points._device)


def _as_points(self, weight):
    points = aten.reshape.default(self, [self.numel(), 1])
    return points, (None if weight is None else aten.reshape.default(weight, [weight.numel()]))


def histogram_bins_tensor(self, bins, *, weight=None, density=False):
    C.same_device(self, bins)
    points, weight = _as_points(self, weight)
    _check_inputs(points, [bins], weight)
    _check_counts([bins.numel() - 1])
    hist = _count(points, [bins], weight, density)
    return hist, aten.clone.default(bins)


def histogram_bin_ct(self, bins=100, *, range=None, weight=None, density=False):  # noqa: A002 - torch's name
    points, weight = _as_points(self, weight)
    _check_counts([bins])
    edges = _linspace_edges(points, [bins], range)
    _check_inputs(points, edges, weight)
    return _count(points, edges, weight, density), edges[0]


def _points(self):
    if self.dim() < 2:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 2 dimensions")
    return aten.reshape.default(self, [-1, self.shape[-1]])


def _histogramdd_bin_edges(self, bins, *, range=None, weight=None, density=False):  # noqa: A002
    return _linspace_edges(_points(self), list(bins), range)


def _histogramdd_from_bin_cts(self, bins, *, range=None, weight=None, density=False):  # noqa: A002
    points = _points(self)
    edges = _linspace_edges(points, list(bins), range)
    _check_inputs(self, edges, weight)
    _check_counts(list(bins))
    return _count(points, edges, weight, density)


def _histogramdd_from_bin_tensors(self, bins, *, weight=None, density=False):
    _check_inputs(self, list(bins), weight)
    _check_counts([b.numel() - 1 for b in bins])
    return _count(_points(self), list(bins), weight, density)


KERNELS = {
    "histogram.bins_tensor": histogram_bins_tensor, "histogram.bin_ct": histogram_bin_ct,
    "_histogramdd_bin_edges": _histogramdd_bin_edges, "_histogramdd_from_bin_cts": _histogramdd_from_bin_cts,
    "_histogramdd_from_bin_tensors": _histogramdd_from_bin_tensors,
}
