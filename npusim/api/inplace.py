"""torch's in-place function forms (``torch.exp_(t)``...), the in-place BLAS methods, ``index_reduce``
and the ``*_copy`` functions.

- ``npusim.<op>_(input, ...)`` calls ``input.<op>_(...)``: one for each of torch's in-place functions
  (``_TORCH_INPLACE``) whose Tensor method npusim has, written out below.
- ``Tensor.addmv_ / addr_ / addbmm_ / baddbmm_``: the out-of-place op written back into ``self``,
  which must already have the result's shape (torch's "Bad in-place call").
- ``index_reduce(_)``: ``scatter_reduce`` with the index spread along ``dim``.
- ``*_copy``: the view op followed by a contiguous clone, so the result never aliases the input.
"""
from __future__ import annotations

from ..core.c10 import dtype as D
from . import operators as _functional
from ..core.c10.memory_format import contiguous_format
from ..core.dispatch.ops_namespace import aten
from ..core.tensor import Tensor

# torch 2.13's public in-place functions (dir(torch), names ending in one "_"); the nn ones (dropout_,
# selu_, celu_, rrelu_, threshold_...) take torch's nn signatures and live in npusim/_torch_namespace_nn.py
_TORCH_INPLACE = (
    "abs_ acos_ acosh_ addmv_ arccos_ arccosh_ arcsin_ arcsinh_ arctan_ arctanh_ as_strided_ asin_ asinh_ atan_ "
    "atanh_ ceil_ clamp_ clamp_max_ clamp_min_ clip_ conj_physical_ cos_ cosh_ deg2rad_ detach_ erf_ erfc_ "
    "exp2_ exp_ expm1_ fill_ fix_ floor_ frac_ gcd_ i0_ index_put_ lcm_ ldexp_ log10_ log1p_ log2_ log_ logit_ "
    "nan_to_num_ neg_ negative_ rad2deg_ reciprocal_ relu_ resize_as_ round_ rsqrt_ sigmoid_ sin_ sinc_ sinh_ "
    "sqrt_ square_ tan_ tanh_ trunc_ xlogy_ zero_"
).split()


# --- in-place BLAS ------------------------------------------------------------------------------------------

def _write_back(self, result):
    if tuple(result.shape) != tuple(self.shape):
        raise RuntimeError(f"Bad in-place call: input tensor size {list(self.shape)} and output tensor size "
                           f"{list(result.shape)} should match")
    return self.copy_(result)


def _addmv_(self, mat, vec, *, beta=1, alpha=1):
    return _write_back(self, _functional.addmv(self, mat, vec, beta=beta, alpha=alpha))


def _addr_(self, vec1, vec2, *, beta=1, alpha=1):
    return _write_back(self, _functional.addr(self, vec1, vec2, beta=beta, alpha=alpha))


def _addbmm_(self, batch1, batch2, *, beta=1, alpha=1):
    return _write_back(self, _functional.addbmm(self, batch1, batch2, beta=beta, alpha=alpha))


def _baddbmm_(self, batch1, batch2, *, beta=1, alpha=1):
    return _write_back(self, _functional.baddbmm(self, batch1, batch2, beta=beta, alpha=alpha))


# --- index_reduce --------------------------------------------------------------------------------------------

_INDEX_REDUCTIONS = ("prod", "mean", "amax", "amin")


def _spread_index(self, dim, index, source, reduce):
    """torch's index_reduce checks; the index expanded to ``source``'s shape along ``dim``."""
    if reduce not in _INDEX_REDUCTIONS:
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    if index.dim() > 1:
        raise IndexError(f"index_reduce_(): Index is supposed to be a vector, but got dim: {index.dim()} with "
                         f"type: {D.SCALAR_TYPE_NAME[index.dtype]} and size: "
                         f"{list(index.shape)}")
    if index.dtype not in (D.int32, D.int64):
        raise RuntimeError(f"index_reduce_(): Expected dtype int32/int64 for index but got: "
                           f"{D.SCALAR_TYPE_NAME[index.dtype]}")
    if self.dtype != source.dtype:
        raise RuntimeError(f"index_reduce_(): self ({D.SCALAR_TYPE_NAME[self.dtype]}) and source "
                           f"({D.SCALAR_TYPE_NAME[source.dtype]}) must have the same scalar type")
    nd = max(source.dim(), 1)
    d = dim + nd if dim < 0 else dim
    n = index.numel()
    if (source.shape[d] if source.dim() else 1) != n:
        raise RuntimeError(f"index_reduce_(): Number of indices ({n}) should be equal to source.size(dim): "
                           f"({source.shape[d] if source.dim() else 1}), for dim: {dim}")
    shape = [1] * source.dim()
    if source.dim():
        shape[d] = n
    return index.reshape(shape).expand(source.shape) if source.dim() else index.reshape(())


def index_reduce(input, dim, index, source, reduce, *, include_self=True, out=None):
    idx = _spread_index(input, dim, index, source, reduce)
    r = input.scatter_reduce(dim, idx, source, reduce, include_self=include_self)
    return r if out is None else out.copy_(r)


def _index_reduce_(self, dim, index, source, reduce, *, include_self=True):
    idx = _spread_index(self, dim, index, source, reduce)
    return self.scatter_reduce_(dim, idx, source, reduce, include_self=include_self)


# --- view copies ---------------------------------------------------------------------------------------------

def _fresh(t):
    return t.clone(memory_format=contiguous_format)


def view_copy(input, size, *, out=None):
    """``size`` may also be a dtype, as ``view_copy.dtype``."""
    return _finish(_fresh(input.view(size)), out)


def permute_copy(input, dims, *, out=None):
    return _finish(_fresh(input.permute(dims)), out)


def transpose_copy(input, dim0, dim1, *, out=None):
    return _finish(_fresh(input.transpose(dim0, dim1)), out)


def t_copy(input, *, out=None):
    return _finish(_fresh(input.t()), out)


def expand_copy(input, size, *, implicit=False, out=None):
    return _finish(_fresh(input.expand(size)), out)


def squeeze_copy(input, dim=None, *, out=None):
    return _finish(_fresh(input.squeeze() if dim is None else input.squeeze(dim)), out)


def unsqueeze_copy(input, dim, *, out=None):
    return _finish(_fresh(input.unsqueeze(dim)), out)


def select_copy(input, dim, index, *, out=None):
    return _finish(_fresh(input.select(dim, index)), out)


def slice_copy(input, dim=0, start=None, end=None, step=1, *, out=None):
    return _finish(_fresh(aten.slice.Tensor(input, dim, start, end, step)), out)


def diagonal_copy(input, offset=0, dim1=0, dim2=1, *, out=None):
    return _finish(_fresh(input.diagonal(offset, dim1, dim2)), out)


def detach_copy(input, *, out=None):
    return _finish(_fresh(input.detach()), out)


def alias_copy(input, *, out=None):
    return _finish(_fresh(input), out)


def unfold_copy(input, dimension, size, step, *, out=None):
    return _finish(_fresh(input.unfold(dimension, size, step)), out)


def as_strided_copy(input, size, stride, storage_offset=None, *, out=None):
    return _finish(_fresh(input.as_strided(size, stride, storage_offset)), out)


def split_copy(input, split_size, dim=0, *, out=None):
    return _finish_list([_fresh(t) for t in input.split(split_size, dim)], out)


def split_with_sizes_copy(input, split_sizes, dim=0, *, out=None):
    return _finish_list([_fresh(t) for t in input.split(list(split_sizes), dim)], out)


def unbind_copy(input, dim=0, *, out=None):
    return _finish_list([_fresh(t) for t in input.unbind(dim)], out)


def _finish(t, out):
    return t if out is None else out.copy_(t)


def _finish_list(ts, out):
    if out is None:
        return list(ts)
    if len(out) != len(ts):
        raise RuntimeError(f"expected {len(ts)} output tensors, got {len(out)}")
    for o, t in zip(out, ts):
        o.copy_(t)
    return None


_COPY_FUNCTIONS = ["view_copy", "permute_copy", "transpose_copy", "t_copy", "expand_copy", "squeeze_copy",
                   "unsqueeze_copy", "select_copy", "slice_copy", "diagonal_copy", "detach_copy", "alias_copy",
                   "split_copy", "split_with_sizes_copy", "unbind_copy", "unfold_copy", "as_strided_copy"]

for _name, _fn in (("addmv_", _addmv_), ("addr_", _addr_), ("addbmm_", _addbmm_), ("baddbmm_", _baddbmm_),
                   ("index_reduce_", _index_reduce_)):
    if not hasattr(Tensor, _name):
        setattr(Tensor, _name, _fn)
if not hasattr(Tensor, "index_reduce"):
    Tensor.index_reduce = lambda self, dim, index, source, reduce, *, include_self=True: index_reduce(
        self, dim, index, source, reduce, include_self=include_self)


# --- torch.<op>_ -------------------------------------------------------------------------------------------

_INPLACE_FUNCTIONS = []


def _inplace_function(name):
    def fn(input, *args, **kwargs):
        return getattr(input, name)(*args, **kwargs)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"In-place version of {name[:-1]}: ``input.{name}(...)``."
    _INPLACE_FUNCTIONS.append(name)
    return fn


# torch's in-place functions with a function of their own elsewhere (argument checks of their own)
_WRITTEN_ELSEWHERE = ("as_strided_", "conj_physical_")   # api/math_extras.py, api/complex.py

# every other name of _TORCH_INPLACE, all of which npusim's Tensor has (a test checks)
abs_ = _inplace_function("abs_")
acos_ = _inplace_function("acos_")
acosh_ = _inplace_function("acosh_")
addmv_ = _inplace_function("addmv_")
arccos_ = _inplace_function("arccos_")
arccosh_ = _inplace_function("arccosh_")
arcsin_ = _inplace_function("arcsin_")
arcsinh_ = _inplace_function("arcsinh_")
arctan_ = _inplace_function("arctan_")
arctanh_ = _inplace_function("arctanh_")
asin_ = _inplace_function("asin_")
asinh_ = _inplace_function("asinh_")
atan_ = _inplace_function("atan_")
atanh_ = _inplace_function("atanh_")
ceil_ = _inplace_function("ceil_")
clamp_ = _inplace_function("clamp_")
clamp_max_ = _inplace_function("clamp_max_")
clamp_min_ = _inplace_function("clamp_min_")
clip_ = _inplace_function("clip_")
cos_ = _inplace_function("cos_")
cosh_ = _inplace_function("cosh_")
deg2rad_ = _inplace_function("deg2rad_")
detach_ = _inplace_function("detach_")
erf_ = _inplace_function("erf_")
erfc_ = _inplace_function("erfc_")
exp2_ = _inplace_function("exp2_")
exp_ = _inplace_function("exp_")
expm1_ = _inplace_function("expm1_")
fill_ = _inplace_function("fill_")
fix_ = _inplace_function("fix_")
floor_ = _inplace_function("floor_")
frac_ = _inplace_function("frac_")
gcd_ = _inplace_function("gcd_")
i0_ = _inplace_function("i0_")
index_put_ = _inplace_function("index_put_")
lcm_ = _inplace_function("lcm_")
ldexp_ = _inplace_function("ldexp_")
log10_ = _inplace_function("log10_")
log1p_ = _inplace_function("log1p_")
log2_ = _inplace_function("log2_")
log_ = _inplace_function("log_")
logit_ = _inplace_function("logit_")
nan_to_num_ = _inplace_function("nan_to_num_")
neg_ = _inplace_function("neg_")
negative_ = _inplace_function("negative_")
rad2deg_ = _inplace_function("rad2deg_")
reciprocal_ = _inplace_function("reciprocal_")
relu_ = _inplace_function("relu_")
resize_as_ = _inplace_function("resize_as_")
round_ = _inplace_function("round_")
rsqrt_ = _inplace_function("rsqrt_")
sigmoid_ = _inplace_function("sigmoid_")
sin_ = _inplace_function("sin_")
sinc_ = _inplace_function("sinc_")
sinh_ = _inplace_function("sinh_")
sqrt_ = _inplace_function("sqrt_")
square_ = _inplace_function("square_")
tan_ = _inplace_function("tan_")
tanh_ = _inplace_function("tanh_")
trunc_ = _inplace_function("trunc_")
xlogy_ = _inplace_function("xlogy_")
zero_ = _inplace_function("zero_")


__all__ = ["index_reduce", *_COPY_FUNCTIONS, *_INPLACE_FUNCTIONS]
