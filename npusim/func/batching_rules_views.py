"""vmap batching rules of the views, splits, joins and indexing: a sample's dims are the batch's dims plus one.

Views of a batch are views of the batch (writes through them reach the input, as in torch). Unbatched tensors
joined with batched ones (cat, stack, gather) are expanded over the batch first.
"""
from __future__ import annotations

from ..core.c10 import dtype as _dtypes
from ..core.dispatch.ops_namespace import aten
from ..core.tensor import Tensor
from .batched_tensor import BatchedTensor, LogicalArray, wrap
from .batching_registry import UsePerSampleLoop, register, wrap_all, wrap_dim
from .batching_rules_reductions import _only_self_batched

_expand = aten.expand.default
_BOOL, _UINT8 = _dtypes.bool, _dtypes.uint8
_unsqueeze = aten.unsqueeze.default
_reshape = aten.reshape.default


def _arg(args, kwargs, i, name, default):
    if i < len(args):
        return args[i]
    return kwargs.get(name, default)


def _call(op, level, value, args, kwargs, **changed):
    """``op`` on ``value`` with the arguments named in ``changed`` replaced (by position or keyword)."""
    params = op._schema.arguments
    args, kwargs = [value] + list(args[1:]), dict(kwargs)
    for i, p in enumerate(params):
        if p.name in changed:
            if i < len(args):
                args[i] = changed[p.name]
            else:
                kwargs[p.name] = changed[p.name]
    out = op(*args, **kwargs)
    if op._schema.is_inplace:
        raise AssertionError("in-place view ops take the per-sample path")
    return wrap_all(out, level)


def one_dim(name, default=0, extra_rank=0):
    """A rule for ops with one dim argument ``name`` (at schema position 1 unless given by keyword)."""
    def rule(op, level, args, kwargs):
        self = _only_self_batched(level, args, kwargs)
        rank = self._a.ndim + extra_rank
        pos = next(i for i, p in enumerate(op._schema.arguments) if p.name == name)
        dim = _arg(args, kwargs, pos, name, default)
        return _call(op, level, self._value, args, kwargs, **{name: wrap_dim(dim, rank) + 1})
    return rule


def two_dims(first, second, defaults):
    def rule(op, level, args, kwargs):
        self = _only_self_batched(level, args, kwargs)
        rank = self._a.ndim
        names = [p.name for p in op._schema.arguments]
        d0 = _arg(args, kwargs, names.index(first), first, defaults[0])
        d1 = _arg(args, kwargs, names.index(second), second, defaults[1])
        return _call(op, level, self._value, args, kwargs,
                     **{first: wrap_dim(d0, rank) + 1, second: wrap_dim(d1, rank) + 1})
    return rule


def view(op, level, args, kwargs):
    self = _only_self_batched(level, args, kwargs)
    value = self._value
    size = [value.shape[0]] + list(_arg(args, kwargs, 1, "size" if op._opname != "reshape" else "shape", ()))
    try:
        return wrap(op(value, size), level)
    except RuntimeError:
        if op._opname != "view" or not all(isinstance(s, int) for s in size):
            raise
        # the batch's strides (an input mapped over a later dim) allow no view where the sample's would
        return wrap(_reshape(value, size), level)


def expand(op, level, args, kwargs):
    self = _only_self_batched(level, args, kwargs)
    size = list(_arg(args, kwargs, 1, "size", ()))
    value = self._value
    if len(size) < self._a.ndim:
        raise UsePerSampleLoop()
    for _ in range(len(size) - self._a.ndim):
        value = _unsqueeze(value, 1)
    return wrap(_expand(value, [value.shape[0]] + size), level)


def permute(op, level, args, kwargs):
    self = _only_self_batched(level, args, kwargs)
    dims = _arg(args, kwargs, 1, "dims", ())
    rank = self._a.ndim
    if len(dims) != rank:
        raise UsePerSampleLoop()
    return wrap(op(self._value, [0] + [wrap_dim(d, rank) + 1 for d in dims]), level)


def t(op, level, args, kwargs):
    self = _only_self_batched(level, args, kwargs)
    rank = self._a.ndim
    if rank > 2:
        raise UsePerSampleLoop()
    if rank < 2:
        return wrap(aten.alias.default(self._value), level)
    return wrap(aten.transpose.int(self._value, 1, 2), level)


def squeeze(op, level, args, kwargs):
    self = _only_self_batched(level, args, kwargs)
    if op._overloadname == "default":
        dims = [i + 1 for i, s in enumerate(self._a.shape) if s == 1]
        return wrap(aten.squeeze.dims(self._value, dims), level)
    rank = self._a.ndim
    dim = _arg(args, kwargs, 1, "dim", None)
    if rank == 0:
        raise UsePerSampleLoop()
    if isinstance(dim, (list, tuple)):
        return wrap(op(self._value, [wrap_dim(d, rank) + 1 for d in dim]), level)
    return wrap(op(self._value, wrap_dim(dim, rank) + 1), level)


def flatten(op, level, args, kwargs):
    self = _only_self_batched(level, args, kwargs)
    rank = self._a.ndim
    if rank == 0:
        raise UsePerSampleLoop()
    start = wrap_dim(_arg(args, kwargs, 1, "start_dim", 0), rank)
    end = wrap_dim(_arg(args, kwargs, 2, "end_dim", -1), rank)
    return wrap(op(self._value, start + 1, end + 1), level)


def _batched_list(tensors, level):
    """The tensors of a cat / stack as batches: unbatched ones expanded over the batch."""
    batch = next(t._value.shape[0] for t in tensors if t.__class__ is BatchedTensor and t._level == level)
    out = []
    for t in tensors:
        if t.__class__ is BatchedTensor and t._level == level:
            out.append(t._value)
        else:
            out.append(_expand(_unsqueeze(t, 0), [batch] + list(t.shape)))
    return out


def cat(op, level, args, kwargs):
    tensors = list(_arg(args, kwargs, 0, "tensors", ()))
    dim = _arg(args, kwargs, 1, "dim", 0)
    shaped = [t for t in tensors if not (t._a.ndim == 1 and t._a.shape[0] == 0)]   # torch skips 1-d empties
    if not shaped or any(t._a.ndim == 0 for t in shaped):
        raise UsePerSampleLoop()
    rank = shaped[0]._a.ndim
    return wrap(op(_batched_list(shaped, level), wrap_dim(dim, rank) + 1), level)


def stack(op, level, args, kwargs):
    tensors = list(_arg(args, kwargs, 0, "tensors", ()))
    if not tensors:
        raise UsePerSampleLoop()
    dim = _arg(args, kwargs, 1, "dim", 0)
    rank = tensors[0]._a.ndim + 1
    return wrap(op(_batched_list(tensors, level), wrap_dim(dim, rank) + 1), level)


def index_select(op, level, args, kwargs):
    self = _only_self_batched(level, args, kwargs)
    dim = _arg(args, kwargs, 1, "dim", 0)
    index = _arg(args, kwargs, 2, "index", None)
    if self._a.ndim == 0:
        raise UsePerSampleLoop()
    return wrap(op(self._value, wrap_dim(dim, self._a.ndim) + 1, index), level)


def gather(op, level, args, kwargs):
    self, index = args[0], _arg(args, kwargs, 2, "index", None)
    dim = _arg(args, kwargs, 1, "dim", 0)
    rank = self._a.ndim
    if rank == 0 or index._a.ndim != rank or any(isinstance(v, BatchedTensor) for v in kwargs.values()):
        raise UsePerSampleLoop()
    value, idx = _batched_list([self, index], level)
    return wrap(op(value, wrap_dim(dim, rank) + 1, idx, **kwargs), level)


MASK_MESSAGE = ("vmap: We do not support batching operators that can support dynamic shape. Attempting to batch "
                "over indexing with a boolean mask.")


def index(op, level, args, kwargs):
    self = args[0]
    indices = list(_arg(args, kwargs, 1, "indices", ()))
    used = [k for k, i in enumerate(indices) if i is not None]
    if used and used[-1] - used[0] + 1 != len(used):
        raise UsePerSampleLoop()        # apart, the index dims would go before the batch dim
    masks = [i for i in indices if isinstance(i, Tensor) and i.dtype in (_BOOL, _UINT8)]
    if any(m.__class__ is BatchedTensor and m._level == level for m in masks):
        raise RuntimeError(MASK_MESSAGE)
    if masks and any(isinstance(i, BatchedTensor) for i in indices) or \
            any(isinstance(i, Tensor) and i.is_floating_point() for i in indices):
        raise UsePerSampleLoop()
    if not any(isinstance(i, BatchedTensor) and i._level == level for i in indices):
        if not (self.__class__ is BatchedTensor and self._level == level):
            raise UsePerSampleLoop()
        return wrap(op(self._value, [None] + indices), level)
    if not used or used[0] != 0:
        raise UsePerSampleLoop()
    # batched indices: index the batch dim with 0..B-1 too, so each sample reads its own slice
    batch = next(i._value.shape[0] for i in indices if i.__class__ is BatchedTensor and i._level == level)
    if self.__class__ is BatchedTensor and self._level == level:
        value = self._value
    else:
        value = _expand(_unsqueeze(self, 0), [batch] + list(self.shape))
    top = max(i._a.ndim for i in indices if i is not None)
    phys = []
    for i in indices:
        if i is None:
            phys.append(None)
            continue
        v, is_batched = (i._value, True) if i.__class__ is BatchedTensor and i._level == level else (i, False)
        if is_batched:
            for _ in range(top - i._a.ndim):
                v = _unsqueeze(v, 1)
        phys.append(v)
    rows = aten.arange.start(0, batch, device=value.device)
    rows = _reshape(rows, [batch] + [1] * top)
    return wrap(op(value, [rows] + phys), level)


def metadata_inplace(op, level, args, kwargs):
    """unsqueeze_ / squeeze_ / transpose_ / t_: the batch changes in place, and the sample's shape with it."""
    self = _only_self_batched(level, args, kwargs)
    rank = self._a.ndim
    value = self._value
    name = op._schema.name
    if name == "unsqueeze_":
        value.unsqueeze_(wrap_dim(_arg(args, kwargs, 1, "dim", 0), rank + 1) + 1)
    elif name == "transpose_":
        value.transpose_(wrap_dim(_arg(args, kwargs, 1, "dim0", 0), rank) + 1,
                         wrap_dim(_arg(args, kwargs, 2, "dim1", 0), rank) + 1)
    elif name == "t_":
        if rank > 2:
            raise UsePerSampleLoop()
        if rank == 2:
            value.transpose_(1, 2)
    elif op._overloadname == "default":
        value.squeeze_([i + 1 for i, s in enumerate(self._a.shape) if s == 1])
    else:
        dim = _arg(args, kwargs, 1, "dim", None)
        if rank == 0:
            raise UsePerSampleLoop()
        value.squeeze_([wrap_dim(d, rank) + 1 for d in dim] if isinstance(dim, (list, tuple))
                       else wrap_dim(dim, rank) + 1)
    self._a = LogicalArray(value.shape[1:], self._a.dtype)
    return self


def flip_roll(op, level, args, kwargs):
    """flip(dims) / roll(shifts, dims): the dims move past the batch dim (roll without dims runs per sample)."""
    self = _only_self_batched(level, args, kwargs)
    rank = self._a.ndim
    name = "dims"
    pos = next(i for i, p in enumerate(op._schema.arguments) if p.name == name)
    dims = _arg(args, kwargs, pos, name, [])
    if isinstance(dims, int):
        dims = [dims]
    if not dims or rank == 0:
        raise UsePerSampleLoop()
    return _call(op, level, self._value, args, kwargs, **{name: [wrap_dim(d, rank) + 1 for d in dims]})


def last_two_dims(op, level, args, kwargs):
    """tril / triu: act on a sample's last two dims, which are the batch's too."""
    self = _only_self_batched(level, args, kwargs)
    if self._a.ndim < 2:
        raise UsePerSampleLoop()
    out = op(self._value, *args[1:], **kwargs)
    return self if op._schema.is_inplace else wrap(out, level)


register("view.default _unsafe_view reshape", view)
register("flip roll", flip_roll)
register("tril triu tril_ triu_", last_two_dims)
register("unsqueeze_ squeeze_ transpose_ t_", metadata_inplace)
register("expand.default", expand)
register("permute", permute)
register("t", t)
register("squeeze", squeeze)
register("flatten.using_ints", flatten)
register("transpose.int", two_dims("dim0", "dim1", (0, 1)))
register("diagonal.default", two_dims("dim1", "dim2", (0, 1)))
register("unsqueeze", one_dim("dim", extra_rank=1))
register("select.int narrow unflatten.int split.Tensor split_with_sizes chunk unbind.int unsafe_split "
         "unsafe_chunk unsafe_split_with_sizes", one_dim("dim"))
register("slice.Tensor", one_dim("dim"))
register("unfold", one_dim("dimension"))
register("cat", cat)
register("stack", stack)
register("index_select", index_select)
register("gather", gather)
register("index.Tensor", index)
