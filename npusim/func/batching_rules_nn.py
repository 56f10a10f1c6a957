"""vmap batching rules of the negative log-likelihood loss (cross_entropy's parts), forward and backward.

The batch folds into the loss's own row dim: the op runs unreduced over every row of every sample, and each
sample's sum or weighted mean is taken afterwards, with each sample's own total weight (the rows whose target is
not ``ignore_index``, weighted by the class weight), so a sample's mean is the per-sample loop's.
"""
from __future__ import annotations

from ..core.dispatch.ops_namespace import aten
from .batched_tensor import BatchedTensor, wrap
from .batching_registry import UsePerSampleLoop, register, unwrap

_NONE, _MEAN, _SUM = 0, 1, 2
_reshape = aten.reshape.default
_expand = aten.expand.default
_unsqueeze = aten.unsqueeze.default


def _with_batch(x, level, batch):
    """The batch of ``x`` (an unbatched ``x`` expanded over the batch)."""
    v, is_batched = unwrap(x, level)
    if is_batched:
        return v
    return _expand(_unsqueeze(v, 0), [batch] + list(v.shape))


def _rows(self, target, level):
    """(logits as [B*N, C], targets as [B*N], B, N) for a sample of [N, C] or [C]."""
    if not (self.__class__ is BatchedTensor and self._level == level) or self._a.ndim not in (1, 2):
        raise UsePerSampleLoop()
    value = self._value
    batch = value.shape[0]
    rows = 1 if self._a.ndim == 1 else value.shape[1]
    if target._a.ndim != self._a.ndim - 1:
        raise UsePerSampleLoop()
    t = _with_batch(target, level, batch)
    return _reshape(value, [batch * rows, value.shape[-1]]), _reshape(t, [batch * rows]), batch, rows


def _total_weights(t, weight, ignore_index, batch, rows, dtype):
    """Each sample's total weight: its rows' class weights, ignored targets counting 0."""
    keep = aten.ne.Scalar(t, ignore_index)
    if weight is None:
        w = aten._to_copy.default(keep, dtype=dtype)
    else:
        safe = aten.where.self(keep, t, aten.zeros_like.default(t))
        w = aten.mul.Tensor(aten.index.Tensor(weight, [safe]), keep)
    return aten.sum.dim_IntList(_reshape(w, [batch, rows]), [1])


def nll_loss_forward(op, level, args, kwargs):
    self, target, weight, reduction, ignore_index = args
    if isinstance(weight, BatchedTensor) or kwargs:
        raise UsePerSampleLoop()
    x, t, batch, rows = _rows(self, target, level)
    losses, _ = op(x, t, weight, _NONE, ignore_index)
    total = _total_weights(t, weight, ignore_index, batch, rows, x.dtype)
    if reduction == _NONE:
        out = _reshape(losses, [batch, rows] if self._a.ndim == 2 else [batch])
        return wrap(out, level), wrap(aten.mul.Scalar(total, 0), level)
    summed = aten.sum.dim_IntList(_reshape(losses, [batch, rows]), [1])
    out = summed if reduction == _SUM else aten.div.Tensor(summed, total)
    return wrap(out, level), wrap(total, level)


def nll_loss_backward(op, level, args, kwargs):
    grad, self, target, weight, reduction, ignore_index, total_weight = args
    if isinstance(weight, BatchedTensor) or kwargs:
        raise UsePerSampleLoop()
    x, t, batch, rows = _rows(self, target, level)
    g = _with_batch(grad, level, batch)
    if reduction == _MEAN:
        g = aten.div.Tensor(g, _with_batch(total_weight, level, batch))
    if reduction != _NONE:
        g = _expand(_unsqueeze(g, 1), [batch, rows])
    g = _reshape(g, [batch * rows])
    out = op(g, x, t, weight, _NONE, ignore_index, aten.zeros.default([], dtype=x.dtype, device=x.device))
    return wrap(_reshape(out, list(self._value.shape)), level)


register("nll_loss_forward", nll_loss_forward)
register("nll_loss_backward", nll_loss_backward)
