"""vmap batching rules of the reductions, scans and softmax: the ``dim`` argument moves past the batch dim.

A reduction over every dim of a sample (``sum(x)``, ``dim=None``) becomes one over dims 1..rank of the batch. A
0-dim sample (whose only dim is the one torch lets a scalar name) runs per sample.
"""
from __future__ import annotations

from ..core.dispatch.ops_namespace import aten
from .batched_tensor import BatchedTensor
from .batching_registry import UsePerSampleLoop, argument, register, with_argument, wrap_all, wrap_dim
from .batching_rules_elementwise import pointwise

# ops whose dim argument also takes None or [] for "every dim"
EVERY_DIM_WHEN_EMPTY = frozenset("sum mean amax amin nansum nanmean var std var_mean std_mean linalg_vector_norm "
                                 "all any".split())
DIM_OPS = ("sum.dim_IntList mean.dim prod.dim_int max.dim min.dim amax amin argmax argmin var.correction "
           "std.correction var_mean.correction std_mean.correction norm.ScalarOpt_dim norm.ScalarOpt_dim_dtype "
           "all.dim all.dims any.dim any.dims logsumexp cumsum cumprod softmax.int _softmax _safe_softmax log_softmax.int "
           "_log_softmax linalg_vector_norm nansum nanmean median.dim nanmedian.dim mode kthvalue cummax cummin "
           "logcumsumexp cumsum_ cumprod_ sort.default sort.stable argsort.default argsort.stable topk.default").split()


def _only_self_batched(level, args, kwargs):
    self = args[0]
    if not (self.__class__ is BatchedTensor and self._level == level):
        raise UsePerSampleLoop()
    for v in list(args[1:]) + list(kwargs.values()):
        if isinstance(v, BatchedTensor):
            raise UsePerSampleLoop()
    return self


def dim_shift(op, level, args, kwargs):
    self = _only_self_batched(level, args, kwargs)
    rank = self._a.ndim
    if rank == 0:
        raise UsePerSampleLoop()
    dim = argument(op, args, kwargs, "dim")
    value = self._value
    if dim is None or isinstance(dim, (list, tuple)) and len(dim) == 0:
        if op._opname in EVERY_DIM_WHEN_EMPTY:
            new = list(range(1, rank + 1))
        elif op._opname in ("argmax", "argmin") and not argument(op, args, kwargs, "keepdim"):
            value = aten.reshape.default(value, [value.shape[0], -1])
            new = 1
        else:
            raise UsePerSampleLoop()
    elif isinstance(dim, (list, tuple)):
        new = [wrap_dim(d, rank) + 1 for d in dim]
    else:
        new = wrap_dim(dim, rank) + 1
    args, kwargs = with_argument(op, [value] + list(args[1:]), kwargs, "dim", new)
    out = op(*args, **kwargs)
    if op._schema.is_inplace:
        return self
    return wrap_all(out, level)


_FULL = {"sum": aten.sum.dim_IntList, "mean": aten.mean.dim, "max": aten.amax.default, "min": aten.amin.default,
         "all": aten.all.dims, "any": aten.any.dims}


def full_reduction(op, level, args, kwargs):
    """sum(x), max(x)...: a reduction over every dim of the sample."""
    self = _only_self_batched(level, args, kwargs)
    rank = self._a.ndim
    if rank == 0:
        raise UsePerSampleLoop()
    dims = list(range(1, rank + 1))
    value = self._value
    name = op._opname
    if name in _FULL:
        if name in ("max", "min") and self._a.size == 0:
            raise UsePerSampleLoop()          # the op's own error for an empty sample
        out = _FULL[name](value, dims, False, **kwargs)
    elif name == "prod":
        out = aten.prod.dim_int(aten.reshape.default(value, [value.shape[0], -1]), 1, False, **kwargs)
    elif name == "norm":
        p = args[1] if len(args) > 1 else kwargs.get("p", 2)
        out = aten.linalg_vector_norm.default(value, p, dims)
    else:
        raise UsePerSampleLoop()
    return wrap_all(out, level)


register(" ".join(DIM_OPS), dim_shift)
register("sum.default mean.default prod.default max.default min.default all.default any.default norm.Scalar",
         full_reduction)
register("max.other min.other", pointwise)
