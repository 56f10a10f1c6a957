"""vmap batching rules of the fused recurrent cells (``_thnn_fused_lstm_cell`` / ``_thnn_fused_gru_cell`` and their
backward ops), which ``nn.LSTM`` / ``nn.GRU`` step through.

A cell works row by row, so the vmap batch folds into the rows: every two-dimensional argument becomes
[batch * rows, width] (an unbatched one expanded over the batch), the op runs once, and its results unfold. Each
element is computed as the per-sample loop computes it. A batched bias (a bias is added to every row), or a backward
op that also sums the bias gradient over the rows, runs sample by sample.
"""
from __future__ import annotations

from ..core.dispatch.ops_namespace import aten
from .batched_tensor import wrap
from .batching_registry import UsePerSampleLoop, argument, batched, register, unwrap

_reshape, _expand, _unsqueeze = aten.reshape.default, aten.expand.default, aten.unsqueeze.default

# the two-dimensional arguments of each op (the others are biases or flags)
_ROW_ARGUMENTS = {
    "_thnn_fused_lstm_cell": ("input_gates", "hidden_gates", "cx"),
    "_thnn_fused_gru_cell": ("input_gates", "hidden_gates", "hx"),
    "_thnn_fused_lstm_cell_backward_impl": ("grad_hy", "grad_cy", "cx", "cy", "workspace"),
    "_thnn_fused_gru_cell_backward": ("grad_hy", "workspace"),
}


def fused_cell(op, level, args, kwargs):
    name = op._schema.name
    if name.endswith(("_cell_backward_impl", "_cell_backward")):
        if argument(op, args, kwargs, "has_bias"):
            raise UsePerSampleLoop()        # the bias gradient sums each sample's rows
        flags = [False]
    else:
        biases = [argument(op, args, kwargs, n) for n in ("input_bias", "hidden_bias")]
        if any(batched(b, level) for b in biases):
            raise UsePerSampleLoop()
        flags = biases
    values = [argument(op, args, kwargs, n) for n in _ROW_ARGUMENTS[name]]
    batch = next(unwrap(v, level)[0].shape[0] for v in values if batched(v, level))
    rows = None
    folded = []
    for v in values:
        if v is None:
            folded.append(None)
            continue
        value, is_batched = unwrap(v, level)
        if value.dim() != (3 if is_batched else 2) or (rows is not None and value.shape[-2] != rows):
            raise UsePerSampleLoop()        # the op's own error, from one sample
        rows = value.shape[-2]
        if not is_batched:
            value = _expand(_unsqueeze(value, 0), [batch] + list(value.shape))
        folded.append(_reshape(value, [batch * rows, value.shape[-1]]))
    out = op(*folded, *flags)
    return tuple(None if o is None else wrap(_reshape(o, [batch, rows, o.shape[-1]]), level) for o in out)


register(" ".join(_ROW_ARGUMENTS), fused_cell)
