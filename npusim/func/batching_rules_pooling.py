"""vmap batching rules of pooling, padding, layer norm and the elementwise losses.

Pooling works on the trailing spatial dims of an (N, C, *spatial) or (C, *spatial) input: the vmap batch folds into
N (a sample without N is itself a valid batched input), every tensor argument alike (their backward ops take
the input, the gradient and the indices together). Constant padding and layer norm act on trailing dims, so the
batch passes straight through them.
"""
from __future__ import annotations

import math

from ..core.dispatch.ops_namespace import aten
from ..core.tensor import Tensor
from .batched_tensor import BatchedTensor, wrap
from .batching_registry import UsePerSampleLoop, argument, batched, register, unwrap, with_argument, wrap_all
from .batching_rules_elementwise import pointwise

_reshape = aten.reshape.default


def folding(spatial):
    """A rule for ops on (N, C, *spatial) inputs: every tensor argument batched, the batch folded into N."""
    def rule(op, level, args, kwargs):
        tensors = [v for v in list(args) + list(kwargs.values()) if isinstance(v, Tensor)]
        if not all(t.__class__ is BatchedTensor and t._level == level for t in tensors):
            raise UsePerSampleLoop()
        rank = tensors[0]._a.ndim
        if any(t._a.ndim != rank for t in tensors) or rank not in (spatial + 1, spatial + 2):
            raise UsePerSampleLoop()
        batch = tensors[0]._value.shape[0]
        fold = rank == spatial + 2

        def physical(v):
            if not isinstance(v, Tensor):
                return v
            value = v._value
            return _reshape(value, [-1] + list(value.shape[2:])) if fold else value

        out = op(*[physical(v) for v in args], **{k: physical(v) for k, v in kwargs.items()})

        def unfold(o):
            return wrap(_reshape(o, [batch, -1] + list(o.shape[1:])) if fold else o, level)

        return type(out)(unfold(o) for o in out) if isinstance(out, (tuple, list)) else unfold(out)
    return rule


def trailing_dims(count_of):
    """A rule for ops acting on a sample's last ``count_of(args)`` dims, with only ``self`` batched."""
    def rule(op, level, args, kwargs):
        self, is_batched = unwrap(args[0], level)
        others = [v for v in list(args[1:]) + list(kwargs.values()) if isinstance(v, BatchedTensor)]
        if not is_batched or others or count_of(args) > args[0]._a.ndim:
            raise UsePerSampleLoop()
        return wrap_all(op(self, *args[1:], **kwargs), level)
    return rule


def elementwise_loss(op, level, args, kwargs):
    """mse / l1 / smooth_l1 / huber / bce / kl_div: the unreduced loss is elementwise; each sample reduces its own."""
    reduction = argument(op, args, kwargs, "reduction")
    args, kwargs = with_argument(op, args, kwargs, "reduction", 0)
    losses = pointwise(op, level, args, kwargs)
    if reduction == 0:
        return losses
    return aten.mean.default(losses) if reduction == 1 else aten.sum.default(losses)


for _names, _spatial in (("avg_pool2d max_pool2d max_pool2d_with_indices adaptive_avg_pool2d _adaptive_avg_pool2d "
                          "adaptive_max_pool2d upsample_nearest2d upsample_bilinear2d max_pool2d_with_indices_backward "
                          "avg_pool2d_backward _adaptive_avg_pool2d_backward adaptive_max_pool2d_backward", 2),
                         ("avg_pool3d max_pool3d max_pool3d_with_indices adaptive_avg_pool3d _adaptive_avg_pool3d "
                          "adaptive_max_pool3d max_pool3d_with_indices_backward avg_pool3d_backward "
                          "_adaptive_avg_pool3d_backward adaptive_max_pool3d_backward", 3),
                         ("adaptive_max_pool1d", 1)):
    register(_names, folding(_spatial))
register("constant_pad_nd", trailing_dims(lambda args: len(args[1]) // 2))
register("native_layer_norm", trailing_dims(lambda args: len(args[1])))


def layer_norm_backward(op, level, args, kwargs):
    """The input's gradient is row-wise, so the batch is more rows; each sample's weight and bias gradients sum
    its own rows only (dispatched ops)."""
    grad_out, input, shape, mean, rstd, weight, bias, mask = args
    parts = [unwrap(t, level) for t in (grad_out, input, mean, rstd)]
    if kwargs or not all(b for _, b in parts) or batched(weight, level) or batched(bias, level):
        raise UsePerSampleLoop()
    g, x, m, r = (t for t, _ in parts)
    gi = op(g, x, shape, m, r, weight, bias, [mask[0], False, False])[0] if mask[0] else None
    row_dims = list(range(1, x.dim() - len(shape)))
    gw = gb = None
    if mask[1]:
        gw = aten.mul.Tensor(g, aten.mul.Tensor(aten.sub.Tensor(x, m), r))
        gw = aten.sum.dim_IntList(gw, row_dims) if row_dims else gw
        gw = gw if weight is None else aten._to_copy.default(gw, dtype=weight.dtype)
    if mask[2]:
        gb = aten.sum.dim_IntList(g, row_dims) if row_dims else g
        gb = gb if bias is None else aten._to_copy.default(gb, dtype=bias.dtype)
    return tuple(None if o is None else wrap(o, level) for o in (gi, gw, gb))


register("native_layer_norm_backward", layer_norm_backward)
register("mse_loss l1_loss smooth_l1_loss huber_loss binary_cross_entropy binary_cross_entropy_with_logits kl_div",
         elementwise_loss)


def mse_loss_backward(op, level, args, kwargs):
    """Elementwise in its three tensors; a mean's 2 / numel counts one sample's elements (the sum's 2, then / numel)."""
    reduction = argument(op, args, kwargs, "reduction")
    if reduction != 1:
        return pointwise(op, level, args, kwargs)
    args, kwargs = with_argument(op, args, kwargs, "reduction", 2)
    grad = pointwise(op, level, args, kwargs)
    numel = math.prod(grad.shape)
    return aten.div.Scalar(grad, numel) if numel else grad


register("mse_loss_backward", mse_loss_backward)
