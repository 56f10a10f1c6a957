"""Backward formulas of the fused recurrent cells: one node per LSTM or GRU step.

As torch's derivatives.yaml: with grad mode off (an ordinary backward) the formula runs the fused backward op;
under ``create_graph=True`` it runs the differentiable composition of single ops, so the gradient can be
differentiated again. The workspace output carries no gradient.
"""
from __future__ import annotations

from ..dispatch.ops_namespace import aten
from . import grad_mode
from .derivatives import derivative

_CELL_INPUTS = ("input_gates", "hidden_gates", "cx", "input_bias", "hidden_bias")


def _needed(needs, grads):
    return tuple(g if need else None for need, g in zip(needs, grads))


def _result(ctx, i):
    return ctx._saved["result"][i].unpack(ctx)


@derivative("_thnn_fused_lstm_cell", inputs=_CELL_INPUTS, save=_CELL_INPUTS, save_result=True, nondiff_outputs=(2,),
            name="ThnnFusedLstmCellBackward0")
def fused_lstm_cell_backward(ctx, grad_hy=None, grad_cy=None, grad_workspace=None):
    if grad_hy is None and grad_cy is None:
        return None, None, None, None, None
    cy = _result(ctx, 1)
    input_bias = ctx.input_bias
    if grad_mode.tls.enabled:
        grads = aten._thnn_differentiable_lstm_cell_backward.default(
            grad_hy, grad_cy, ctx.input_gates, ctx.hidden_gates, input_bias, ctx.hidden_bias, ctx.cx, cy)
    else:
        grad_gates, grad_cx, grad_bias = aten._thnn_fused_lstm_cell_backward_impl.default(
            grad_hy, grad_cy, ctx.cx, cy, _result(ctx, 2), input_bias is not None)
        grads = (grad_gates, grad_gates, grad_cx, grad_bias, grad_bias)
    return _needed(ctx.needs_input_grad, grads)


@derivative("_thnn_fused_gru_cell", inputs=("input_gates", "hidden_gates", "hx", "input_bias", "hidden_bias"),
            save=("input_gates", "hidden_gates", "hx", "input_bias", "hidden_bias"), save_result=True,
            nondiff_outputs=(1,), name="ThnnFusedGruCellBackward0")
def fused_gru_cell_backward(ctx, grad_hy=None, grad_workspace=None):
    if grad_hy is None:
        return None, None, None, None, None
    input_bias = ctx.input_bias
    if grad_mode.tls.enabled:
        grads = aten._thnn_differentiable_gru_cell_backward.default(
            grad_hy, ctx.input_gates, ctx.hidden_gates, ctx.hx, input_bias, ctx.hidden_bias)
    else:
        grads = aten._thnn_fused_gru_cell_backward.default(grad_hy, _result(ctx, 1), input_bias is not None)
    return _needed(ctx.needs_input_grad, grads)
