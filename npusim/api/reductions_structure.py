"""``npusim.<fn>`` and ``Tensor.<fn>`` for the extra reductions, scans, indexing and structure ops.

Each function has torch's Python signature and picks the aten overload its
arguments call for; the Tensor methods are the same functions with ``self``
first, plus the in-place variants.
"""
from __future__ import annotations

from ..core.c10 import dtype as D
from ..core import return_types
from .operators import NO_DIM
from ..core.dispatch.ops_namespace import aten
from ..core.tensor import Tensor

__all__ = []


def _export(fn):
    __all__.append(fn.__name__)
    return fn


def _size_args(size):
    """``f(2, 3)`` and ``f((2, 3))`` both mean the size [2, 3]."""
    if len(size) == 1 and isinstance(size[0], (list, tuple)):
        return list(size[0])
    return list(size)


# --- reductions and scans ------------------------------------------------------------------------

@_export
def nansum(input, dim=None, keepdim=False, *, dtype=None):
    dtype = D.as_dtype(dtype)
    if dtype is not None and not isinstance(dtype, D.dtype):   # torch parses it before any check
        raise TypeError(f"nansum(): argument 'dtype' must be npusim.dtype, not {type(dtype).__name__}")
    return aten.nansum.default(input, dim, keepdim, dtype=dtype)


@_export
def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    dtype = D.as_dtype(dtype)
    if dtype is not None and not isinstance(dtype, D.dtype):   # torch parses it before any check
        raise TypeError(f"nanmean(): argument 'dtype' must be npusim.dtype, not {type(dtype).__name__}")
    return aten.nanmean.default(input, dim, keepdim, dtype=dtype)


def _no_bool(input, kernel):
    if input.dtype is D.bool:
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")


def _median_like(name, overloads):
    whole, by_dim = overloads

    def fn(input, dim=NO_DIM, keepdim=NO_DIM):
        if dim is None:
            raise TypeError(f"{name}(): argument 'dim' (position 1) must be int, not NoneType")
        if dim is NO_DIM:
            if keepdim is not NO_DIM:
                raise TypeError(f'{name}() missing 1 required positional arguments: "dim"')
            r = whole(input)
            if input.numel():   # torch's kernel checks the dtype only when there is an element
                _no_bool(input, "median_cpu")
            return r
        keepdim = False if keepdim is NO_DIM else keepdim
        r = by_dim(input, dim, keepdim)   # the arguments' errors come first
        _no_bool(input, "median_out")
        return getattr(return_types, name)(*r)

    fn.__name__ = fn.__qualname__ = name
    return _export(fn)


median = _median_like("median", (aten.median.default, aten.median.dim))
nanmedian = _median_like("nanmedian", (aten.nanmedian.default, aten.nanmedian.dim))


@_export
def mode(input, dim=-1, keepdim=False):
    return return_types.mode(*aten.mode.default(input, dim, keepdim))


@_export
def kthvalue(input, k, dim=-1, keepdim=False):
    r = aten.kthvalue.default(input, k, dim, keepdim)   # the arguments' errors come first
    _no_bool(input, "kthvalue_cpu")
    return return_types.kthvalue(*r)


@_export
def aminmax(input, *, dim=None, keepdim=False):
    return return_types.aminmax(*aten.aminmax.default(input, dim=dim, keepdim=keepdim))


@_export
def cummax(input, dim):
    return return_types.cummax(*aten.cummax.default(input, dim))


@_export
def cummin(input, dim):
    return return_types.cummin(*aten.cummin.default(input, dim))


@_export
def logcumsumexp(input, dim):
    return aten.logcumsumexp.default(input, dim)


@_export
def histc(input, bins=100, min=0, max=0):
    return aten.histc.default(input, bins, min, max)


@_export
def bincount(input, weights=None, minlength=0):
    return aten.bincount.default(input, weights, minlength)


# --- indexing ----------------------------------------------------------------------------------------

@_export
def index_add(input, dim, index, source, *, alpha=1):
    return aten.index_add.default(input, dim, index, source, alpha=alpha)


@_export
def index_copy(input, dim, index, source):
    return aten.index_copy.default(input, dim, index, source)


@_export
def index_fill(input, dim, index, value):
    if not isinstance(index, Tensor):
        raise TypeError(f"index_fill() received an invalid combination of arguments - got ({type(dim).__name__}, "
                        f"{type(index).__name__}, {type(value).__name__}): index must be a Tensor")
    overload = aten.index_fill.int_Tensor if isinstance(value, Tensor) else aten.index_fill.int_Scalar
    return overload(input, dim, index, value)


@_export
def masked_scatter(input, mask, source):
    return aten.masked_scatter.default(input, mask, source)


@_export
def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    return aten.scatter_reduce.two(input, dim, index, src, reduce, include_self=include_self)


@_export
def take(input, index):
    if not isinstance(index, Tensor):
        raise TypeError(f"take(): argument 'index' (position 2) must be Tensor, not {type(index).__name__}")
    return aten.take.default(input, index)


@_export
def take_along_dim(input, indices, dim=None):
    return aten.take_along_dim.default(input, indices, dim)


@_export
def put(input, index, source, accumulate=False):
    return aten.put.default(input, index, source, accumulate)


@_export
def select_scatter(input, src, dim, index):
    return aten.select_scatter.default(input, src, dim, index)


@_export
def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    return aten.slice_scatter.default(input, src, dim, start, end, step)


@_export
def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    return aten.diagonal_scatter.default(input, src, offset, dim1, dim2)


# --- structure ---------------------------------------------------------------------------------------

@_export
def diag(input, diagonal=0):
    return aten.diag.default(input, diagonal)


@_export
def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    return aten.diag_embed.default(input, offset, dim1, dim2)


@_export
def diagflat(input, offset=0):
    return aten.diagflat.default(input, offset)


@_export
def diff(input, n=1, dim=-1, prepend=None, append=None):
    return aten.diff.default(input, n, dim, prepend, append)


@_export
def trace(input):
    return aten.trace.default(input)


@_export
def rot90(input, k=1, dims=(0, 1)):
    return aten.rot90.default(input, k, list(dims))


@_export
def kron(input, other):
    return aten.kron.default(input, other)


@_export
def inner(input, other):
    return aten.inner.default(input, other)


@_export
def ravel(input):
    return aten.ravel.default(input)


@_export
def is_nonzero(input):
    return aten.is_nonzero.default(input)


@_export
def is_same_size(input, other):
    return aten.is_same_size.default(input, other)


@_export
def tensor_split(input, indices_or_sections, dim=0):
    if isinstance(indices_or_sections, Tensor):
        return list(aten.tensor_split.tensor_indices_or_sections(input, indices_or_sections, dim))
    if isinstance(indices_or_sections, (list, tuple)):
        return list(aten.tensor_split.indices(input, list(indices_or_sections), dim))
    return list(aten.tensor_split.sections(input, indices_or_sections, dim))


def _directional_split(name):
    packet = getattr(aten, name)

    def fn(input, indices_or_sections):
        if isinstance(indices_or_sections, (list, tuple)):
            return list(packet.array(input, list(indices_or_sections)))
        return list(packet.int(input, indices_or_sections))

    fn.__name__ = fn.__qualname__ = name
    return _export(fn)


hsplit = _directional_split("hsplit")
vsplit = _directional_split("vsplit")
dsplit = _directional_split("dsplit")


@_export
def unsafe_split(input, split_size, dim=0):
    return list(aten.unsafe_split.Tensor(input, split_size, dim))


@_export
def unsafe_chunk(input, chunks, dim=0):
    return list(aten.unsafe_chunk.default(input, chunks, dim))


# --- Tensor methods ---------------------------------------------------------------------------------

for _name in __all__:
    setattr(Tensor, _name, globals()[_name])


def _index_fill_(self, dim, index, value):
    overload = aten.index_fill_.int_Tensor if isinstance(value, Tensor) else aten.index_fill_.int_Scalar
    return overload(self, dim, index, value)


def _squeeze_(self, dim=NO_DIM):
    if dim is None:
        raise TypeError("squeeze_() received an invalid combination of arguments - got (NoneType), but expected "
                        "one of:\n * ()\n * (int dim)\n * (tuple of ints dim)\n")
    if dim is NO_DIM:
        return aten.squeeze_.default(self)
    if isinstance(dim, (list, tuple)):
        return aten.squeeze_.dims(self, list(dim))
    return aten.squeeze_.dim(self, dim)


def _new_empty_strided(self, size, stride, *, dtype=None, device=None, requires_grad=False, layout=None,
                       pin_memory=False):
    r = aten.new_empty_strided.default(self, list(size), list(stride), dtype=dtype, device=device)
    return r.requires_grad_() if requires_grad else r


_METHODS = {
    "index_add_": lambda self, dim, index, source, *, alpha=1: aten.index_add_.default(self, dim, index, source,
                                                                                       alpha=alpha),
    "index_copy_": lambda self, dim, index, source: aten.index_copy_.default(self, dim, index, source),
    "index_fill_": _index_fill_,
    "masked_scatter_": lambda self, mask, source: aten.masked_scatter_.default(self, mask, source),
    "scatter_reduce_": lambda self, dim, index, src, reduce, *, include_self=True: aten.scatter_reduce_.two(
        self, dim, index, src, reduce, include_self=include_self),
    "put_": lambda self, index, source, accumulate=False: aten.put_.default(self, index, source, accumulate),
    "transpose_": lambda self, dim0, dim1: aten.transpose_.default(self, dim0, dim1),
    "swapaxes_": lambda self, axis0, axis1: aten.swapaxes_.default(self, axis0, axis1),
    "swapdims_": lambda self, dim0, dim1: aten.swapdims_.default(self, dim0, dim1),
    "t_": lambda self: aten.t_.default(self),
    "squeeze_": _squeeze_,
    "unsqueeze_": lambda self, dim: aten.unsqueeze_.default(self, dim),
    "unfold": lambda self, dimension, size, step: aten.unfold.default(self, dimension, size, step),
    "broadcast_to": lambda self, size: aten.broadcast_to.default(self, [size] if isinstance(size, int) and not
                                                                  isinstance(size, bool) else list(size)),
    "sum_to_size": lambda self, *size: aten.sum_to_size.default(self, _size_args(size)),
    "new_empty_strided": _new_empty_strided,
    "ger": lambda self, vec2: aten.ger.default(self, vec2),
}
for _name, _fn in _METHODS.items():
    _fn.__name__ = _fn.__qualname__ = _name
    setattr(Tensor, _name, _fn)
