"""Array kernels of the histograms: torch.histogram and torch.histogramdd on NumPy or CuPy arrays.

As ATen's HistogramKernel: a point falls in bin i of a dimension when edges[i] <= x < edges[i + 1], the last
bin also holds its right edge, and a point outside [edges[0], edges[-1]] in any dimension (NaN included) is
left out. torch finds the bin of equal-width edges by interpolation refined with a local search among the
edges; on linspace edges that is the binary search done here.
"""
from __future__ import annotations

from .array_api import namespace_of


def histogramdd(points, edges, weight=None, density=False):
    """The (N-dimensional) histogram of ``points`` (M, N) over the N sequences of bin ``edges``.

    ``weight`` (M,) is each point's contribution (1 without it). The result has ``points``' dtype; its counts
    are summed in float64 (torch sums in the input's dtype, so float32 sums of many points may differ in the
    last bits).
    """
    xp = namespace_of(points)
    counts = [int(e.shape[0]) - 1 for e in edges]
    m = points.shape[0]
    flat = xp.zeros((m,), dtype=xp.int64)
    keep = xp.ones((m,), dtype=bool)
    for d, e in enumerate(edges):
        x = points[:, d]
        keep &= (x >= e[0]) & (x <= e[-1])
        pos = xp.searchsorted(e, x, side="right") - 1
        pos = xp.clip(pos, 0, max(counts[d] - 1, 0))       # the last bin is closed; outside points are dropped
        flat = flat * counts[d] + pos
    total = 1
    for c in counts:
        total *= c
    if total == 0:
        return xp.zeros(counts, dtype=points.dtype)
    w = xp.ones((m,), dtype=xp.float64) if weight is None else weight.astype(xp.float64)
    w = xp.where(keep, w, 0.0)
    hist = xp.bincount(xp.where(keep, flat, 0), weights=w, minlength=total).reshape(counts)
    hist = hist.astype(points.dtype)
    if density:
        hist = hist / hist.sum()
        for d, e in enumerate(edges):
            shape = [1] * len(edges)
            shape[d] = counts[d]
            hist = hist / xp.diff(e).reshape(shape)
        hist = hist.astype(points.dtype)
    return hist
