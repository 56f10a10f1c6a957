"""``npusim.<fn>`` and ``Tensor.<fn>`` for torch's remaining tensor math: quantiles, histograms, gradient,
nonzero_static, the strided views, geqrf / ormqr, the out-of-place fill and empty_permuted.

Each function has torch's Python signature and picks the aten overload its arguments call for.
"""
from __future__ import annotations

import numbers

from ..core import return_types
from ..core.c10 import dtype as D
from ..core.dispatch.ops_namespace import aten
from ..core.tensor import Tensor
from .operators import _check_input, _copy_into

__all__ = []

histogram_result = return_types._make("histogram", ("hist", "bin_edges"))
histogramdd_result = return_types._make("histogramdd", ("hist", "bin_edges"))
geqrf_result = return_types._make("geqrf", ("a", "tau"))


def _export(fn):
    __all__.append(fn.__name__)
    return fn


def _method(name, fn):
    fn.__name__ = fn.__qualname__ = name
    setattr(Tensor, name, fn)


def _finish(r, out):
    return r if out is None else _copy_into(out, r)


def _finish_pair(r, out, fname):
    if out is None:
        return r
    if not isinstance(out, (list, tuple)) or len(out) != len(r):
        raise TypeError(f"{fname}(): argument 'out' must be tuple of Tensors")
    for o, v in zip(out, r):
        _copy_into(o, v)
    return type(r)(*out)


# --- quantiles ----------------------------------------------------------------------------------------------------

def _quantile_like(name):
    def fn(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):  # noqa: A002 - torch's names
        _check_input(input, name)
        if isinstance(q, Tensor):
            op = getattr(aten, name).default
        elif isinstance(q, numbers.Real) and not isinstance(q, bool):
            op, q = getattr(aten, name).scalar, float(q)
        else:
            raise TypeError(f"{name}() received an invalid combination of arguments - got (Tensor, "
                            f"{type(q).__name__}), but expected one of:\n * (Tensor input, Tensor q, int dim = None, "
                            f"bool keepdim = False, *, str interpolation = \"linear\", Tensor out = None)\n"
                            f" * (Tensor input, float q, int dim = None, bool keepdim = False, *, str interpolation "
                            f"= \"linear\", Tensor out = None)\n")
        if out is not None:
            if out.dtype is not input.dtype:
                raise RuntimeError("quantile() out tensor must be same dtype as the input tensor")
            if out.device != input.device:
                raise RuntimeError("quantile() out tensor must be on the same device as the input tensor")
        return _finish(op(input, q, dim, keepdim, interpolation=interpolation), out)
    fn.__name__ = fn.__qualname__ = name
    return fn


quantile = _export(_quantile_like("quantile"))
nanquantile = _export(_quantile_like("nanquantile"))
quantile.__doc__ = ("quantile(input, q, dim=None, keepdim=False, *, interpolation='linear', out=None) -> Tensor: the "
                    "q-th quantiles of ``input`` (all of it, or along ``dim``), interpolated between the sorted values "
                    "by ``interpolation`` (linear, lower, higher, midpoint or nearest); a row holding NaN gives NaN.")
nanquantile.__doc__ = ("nanquantile(input, q, dim=None, keepdim=False, *, interpolation='linear', out=None) -> Tensor: "
                       "``quantile`` of the values that are not NaN (NaN for a row of NaN only).")
_method("quantile", lambda self, q, dim=None, keepdim=False, *, interpolation="linear":
        quantile(self, q, dim, keepdim, interpolation=interpolation))
_method("nanquantile", lambda self, q, dim=None, keepdim=False, *, interpolation="linear":
        nanquantile(self, q, dim, keepdim, interpolation=interpolation))


# --- histograms ---------------------------------------------------------------------------------------------------

@_export
def histogram(input, bins=100, *, range=None, weight=None, density=False, out=None):  # noqa: A002 - torch's names
    """histogram(input, bins, *, range=None, weight=None, density=False, out=None) -> (Tensor, Tensor): the
    histogram of ``input``'s values, in ``bins`` equal-width bins over ``range`` (default: the values' extent) or
    between the edges of a ``bins`` tensor; returns (hist, bin_edges)."""
    _check_input(input, "histogram")
    if isinstance(bins, Tensor):
        if range is not None:
            raise TypeError("histogram() received an invalid combination of arguments - got (Tensor, Tensor, range=...)"
                            ", but expected one of:\n * (Tensor input, Tensor bins, *, Tensor weight = None, bool "
                            "density = False, tuple of Tensors out = None)\n * (Tensor input, int bins = 100, *, tuple "
                            "of floats range = None, Tensor weight = None, bool density = False, tuple of Tensors out "
                            "= None)\n")
        r = aten.histogram.bins_tensor(input, bins, weight=weight, density=density)
    elif isinstance(bins, int) and not isinstance(bins, bool):
        r = aten.histogram.bin_ct(input, bins, range=None if range is None else [float(v) for v in range],
                                  weight=weight, density=density)
    else:
        raise TypeError(f"histogram() received an invalid combination of arguments - got (Tensor, bins="
                        f"{type(bins).__name__}), but expected one of:\n * (Tensor input, Tensor bins, *, Tensor "
                        f"weight = None, bool density = False, tuple of Tensors out = None)\n * (Tensor input, int "
                        f"bins = 100, *, tuple of floats range = None, Tensor weight = None, bool density = False, "
                        f"tuple of Tensors out = None)\n")
    return _finish_pair(histogram_result(*r), out, "histogram")


_method("histogram", lambda self, bins=100, *, range=None, weight=None, density=False:
        histogram(self, bins, range=range, weight=weight, density=density))


@_export
def histogramdd(input, bins, *, range=None, weight=None, density=False, out=None):  # noqa: A002 - torch's names
    """histogramdd(input, bins, *, range=None, weight=None, density=False, out=None) -> (Tensor, Tensor[]): the
    N-dimensional histogram of the points in ``input``'s rows (its last dim is N); ``bins`` is an int, N ints or N
    edge tensors; returns (hist, bin_edges)."""
    _check_input(input, "histogramdd")
    if isinstance(bins, int) and not isinstance(bins, bool):
        bins = [bins] * (input.shape[-1] if input.dim() else 1)
    bins = list(bins)
    if input.dim() >= 1 and len(bins) != input.shape[-1]:
        raise RuntimeError("histogramdd: The size of bins must be equal to the innermost dimension of the input.")
    rng = None if range is None else [float(v) for v in range]
    if bins and all(isinstance(b, Tensor) for b in bins):
        hist = aten._histogramdd_from_bin_tensors.default(input, bins, weight=weight, density=density)
        edges = tuple(bins)
    else:
        bins = [int(b) for b in bins]
        hist = aten._histogramdd_from_bin_cts.default(input, bins, range=rng, weight=weight, density=density)
        edges = tuple(aten._histogramdd_bin_edges.default(input, bins, range=rng, weight=weight, density=density))
    r = histogramdd_result(hist, edges)
    if out is not None:
        _copy_into(out[0], hist)
        for o, e in zip(out[1], edges):
            _copy_into(o, e)
        return histogramdd_result(out[0], tuple(out[1]))
    return r


# --- strided views, slices, splits ---------------------------------------------------------------------------------

def _ints(v):
    return [int(s) for s in v]


@_export
def as_strided_(input, size, stride, storage_offset=None):  # noqa: A002 - torch's names
    """as_strided_(input, size, stride, storage_offset=None) -> Tensor: gives ``input`` itself the geometry of
    ``input.as_strided(size, stride, storage_offset)`` (in place)."""
    _check_input(input, "as_strided_")
    return aten.as_strided_.default(input, _ints(size), _ints(stride), storage_offset)


_method("as_strided_", lambda self, size, stride, storage_offset=None: as_strided_(self, size, stride, storage_offset))


@_export
def as_strided_scatter(input, src, size, stride, storage_offset=None):  # noqa: A002 - torch's names
    """as_strided_scatter(input, src, size, stride, storage_offset=None) -> Tensor: a copy of ``input`` whose
    elements under ``input.as_strided(size, stride, storage_offset)`` are ``src``'s."""
    _check_input(input, "as_strided_scatter")
    return aten.as_strided_scatter.default(input, src, _ints(size), _ints(stride), storage_offset)


_method("as_strided_scatter", lambda self, src, size, stride, storage_offset=None:
        as_strided_scatter(self, src, size, stride, storage_offset))


@_export
def slice_inverse(input, src, dim=0, start=None, end=None, step=1):  # noqa: A002 - torch's names
    """slice_inverse(input, src, dim=0, start=None, end=None, step=1) -> Tensor: the inverse of slicing ``src``:
    a view of the slice ``input``'s memory with ``src``'s size, stride and storage offset."""
    _check_input(input, "slice_inverse")
    return aten.slice_inverse.default(input, src, dim, start, end, step)


_method("slice_inverse", lambda self, src, dim=0, start=None, end=None, step=1:
        slice_inverse(self, src, dim, start, end, step))


@_export
def unsafe_split_with_sizes(input, split_sizes, dim=0):  # noqa: A002 - torch's names
    """unsafe_split_with_sizes(input, split_sizes, dim=0) -> List of Tensors: ``split_with_sizes`` whose pieces are
    not tracked as views of ``input``."""
    _check_input(input, "unsafe_split_with_sizes")
    return list(aten.unsafe_split_with_sizes.default(input, _ints(split_sizes), dim))


_method("unsafe_split_with_sizes", lambda self, split_sizes, dim=0: unsafe_split_with_sizes(self, split_sizes, dim))


# --- nonzero_static, fill, empty_permuted --------------------------------------------------------------------------

@_export
def nonzero_static(input, *, size, fill_value=-1, out=None):  # noqa: A002 - torch's names
    """nonzero_static(input, *, size, fill_value=-1) -> Tensor: ``nonzero``'s index rows, cut or padded with
    ``fill_value`` to exactly ``size`` rows."""
    _check_input(input, "nonzero_static")
    return _finish(aten.nonzero_static.default(input, size=size, fill_value=fill_value), out)


_method("nonzero_static", lambda self, *, size, fill_value=-1: nonzero_static(self, size=size, fill_value=fill_value))


@_export
def fill(input, value):  # noqa: A002 - torch's names
    """fill(input, value) -> Tensor: a tensor like ``input`` with every element ``value`` (a number or a 0-dim
    tensor); the out-of-place ``fill_``."""
    _check_input(input, "fill")
    if isinstance(value, Tensor):
        return aten.fill.Tensor(input, value)
    return aten.fill.Scalar(input, value)


@_export
def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None, requires_grad=False,
                   pin_memory=False):
    """empty_permuted(size, physical_layout, *, dtype=None, device=None, requires_grad=False) -> Tensor: an
    uninitialised dense tensor of ``size`` whose dimensions lie in memory in ``physical_layout``'s order (its
    last entry innermost)."""
    r = aten.empty_permuted.default(_ints(size), _ints(physical_layout), dtype=D.as_dtype(dtype), device=device)
    return r.requires_grad_() if requires_grad else r


# --- Householder QR in LAPACK's layout ----------------------------------------------------------------------------

@_export
def geqrf(input, *, out=None):  # noqa: A002 - torch's names
    """geqrf(input, *, out=None) -> (Tensor, Tensor): LAPACK's geqrf: R on and above the diagonal of ``a``, the
    Householder reflectors below it, and their scalars ``tau``."""
    _check_input(input, "geqrf")
    return _finish_pair(geqrf_result(*aten.geqrf.default(input)), out, "geqrf")


_method("geqrf", lambda self: geqrf(self))


@_export
def ormqr(input, tau, other, left=True, transpose=False, *, out=None):  # noqa: A002 - torch's names
    """ormqr(input, tau, other, left=True, transpose=False, *, out=None) -> Tensor: ``other`` multiplied by the Q
    of ``geqrf``'s (input, tau) (Q C, Q^T C, C Q or C Q^T, as LAPACK's ormqr)."""
    _check_input(input, "ormqr")
    return _finish(aten.ormqr.default(input, tau, other, left, transpose), out)


_method("ormqr", lambda self, input2, input3, left=True, transpose=False: ormqr(self, input2, input3, left, transpose))


# --- gradient -----------------------------------------------------------------------------------------------------

def _is_scalar(v):
    return (isinstance(v, numbers.Number) and not isinstance(v, bool)) or (isinstance(v, Tensor) and v.dim() == 0)


@_export
def gradient(input, *, spacing=1, dim=None, edge_order=1):  # noqa: A002 - torch's names
    """gradient(input, *, spacing=1, dim=None, edge_order=1) -> List of Tensors: the derivative of the sampled
    function ``input`` along each of ``dim`` (every dim by default), by second-order central differences inside
    and one-sided differences of order ``edge_order`` at the ends; ``spacing`` is a step (per dim) or the
    samples' coordinates (a 1-D tensor per dim)."""
    _check_input(input, "gradient")
    op = aten.gradient
    many = isinstance(dim, (list, tuple))
    dims = [int(d) for d in dim] if many else dim
    if spacing is None:
        r = op.array(input, dim=dims, edge_order=edge_order) if many else \
            op.scalarint(input, dim=dims, edge_order=edge_order)
    elif _is_scalar(spacing):
        step = spacing.item() if isinstance(spacing, Tensor) else spacing
        r = op.scalararray(input, spacing=step, dim=dims, edge_order=edge_order) if many else \
            op.scalarint(input, spacing=step, dim=dims, edge_order=edge_order)
    elif isinstance(spacing, (list, tuple)) and all(isinstance(s, Tensor) and s.dim() > 0 for s in spacing) \
            and len(spacing) > 0:
        r = op.tensorarray(input, spacing=list(spacing), dim=dims, edge_order=edge_order) if many else \
            op.tensorarrayint(input, spacing=list(spacing), dim=dims, edge_order=edge_order)
    elif isinstance(spacing, (list, tuple)) and all(_is_scalar(s) for s in spacing):
        steps = [s.item() if isinstance(s, Tensor) else s for s in spacing]
        r = op.scalarrayarray(input, spacing=steps, dim=dims, edge_order=edge_order) if many else \
            op.scalarrayint(input, spacing=steps, dim=dims, edge_order=edge_order)
    else:
        raise TypeError(f"gradient() received an invalid combination of arguments - got (Tensor, spacing="
                        f"{type(spacing).__name__}), but expected spacing to be a number, a list of numbers or a "
                        f"tuple of Tensors")
    return tuple(r)
