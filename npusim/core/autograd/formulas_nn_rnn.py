"""Backward formulas of the fused recurrent cells: one node per LSTM or GRU step.

As torch's derivatives.yaml: with grad mode off (an ordinary backward) the formula runs the fused backward op;
under ``create_graph=True`` it runs the differentiable composition of single ops, so the gradient can be
differentiated again. The workspace output carries no gradient.
"""
from __future__ import annotations

from ..c10.dtype import float32
from ..dispatch.ops_namespace import aten
from . import api, grad_mode
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


# --- whole layers -------------------------------------------------------------------------------------------------
# torch's formula returns no gradient under grad mode; npusim's layers run this op where they used to step with the
# fused cells, so under ``create_graph=True`` the formula replays the layer with those cells (single differentiable
# ops) and runs their differentiable backward through time, as the step-by-step graph would have.

_LAYER_INPUTS = ("input", "weight0", "weight1", "weight2", "weight3", "hx_", "cx_")
_LSTM_MODE = 2


@derivative("mkldnn_rnn_layer", inputs=_LAYER_INPUTS,
            save=_LAYER_INPUTS + ("reverse", "batch_sizes", "mode", "hidden_size", "num_layers", "has_biases",
                                  "bidirectional", "batch_first", "train"),
            save_result=True, nondiff_outputs=(3,), name="MkldnnRnnLayerBackward0")
def mkldnn_rnn_layer_backward(ctx, grad_output=None, grad_hy=None, grad_cy=None, grad_workspace=None):
    if grad_output is None and grad_hy is None and grad_cy is None:
        return (None,) * 7
    if grad_mode.tls.enabled:
        grads = _differentiable_layer_backward(ctx, grad_output, grad_hy, grad_cy)
    else:
        grads = aten.mkldnn_rnn_layer_backward.default(
            ctx.input, ctx.weight0, ctx.weight1, ctx.weight2, ctx.weight3, ctx.hx_, ctx.cx_, _result(ctx, 0),
            _result(ctx, 1), _result(ctx, 2), grad_output, grad_hy, grad_cy, ctx.reverse, ctx.mode, ctx.hidden_size,
            ctx.num_layers, ctx.has_biases, ctx.train, ctx.bidirectional, ctx.batch_sizes, ctx.batch_first,
            _result(ctx, 3))
    return _needed(ctx.needs_input_grad, grads)


def _differentiable_layer_backward(ctx, grad_output, grad_hy, grad_cy):
    if ctx.input.dtype.itemsize == 2 and ctx.hx_.dtype is float32:
        return _replayed_autocast_backward(ctx, grad_output, grad_hy, grad_cy)
    lstm = ctx.mode == _LSTM_MODE
    w_ih, w_hh = ctx.weight0, ctx.weight1
    b_ih, b_hh = (ctx.weight2, ctx.weight3) if ctx.has_biases else (None, None)
    x = aten.transpose.int(ctx.input, 0, 1) if ctx.batch_first else ctx.input
    if grad_output is not None and ctx.batch_first:
        grad_output = aten.transpose.int(grad_output, 0, 1)
    steps = x.shape[0]
    order = range(steps - 1, -1, -1) if ctx.reverse else range(steps)
    # the replayed forward: each step's gate projections and state, as differentiable ops
    input_gates = [aten.linear.default(x[t], w_ih, b_ih) for t in range(steps)]
    hidden_gates, states, cells = [None] * steps, [None] * steps, [None] * steps
    previous_of = {}
    hidden, cell = ctx.hx_, ctx.cx_
    for t in order:
        previous_of[t] = (hidden, cell)
        hidden_gates[t] = aten.linear.default(hidden, w_hh, b_hh)
        if lstm:
            hidden, cell, _ = aten._thnn_fused_lstm_cell.default(input_gates[t], hidden_gates[t], cell)
            cells[t] = cell
        else:
            hidden, _ = aten._thnn_fused_gru_cell.default(input_gates[t], hidden_gates[t], hidden)
        states[t] = hidden
    # backward through time with the cells' differentiable backward
    grad_x, grad_w_ih, grad_w_hh, grad_b_ih, grad_b_hh = [None] * steps, None, None, None, None
    recurrent_h, grad_cell = grad_hy, grad_cy
    for t in reversed(list(order)):
        grad_h = recurrent_h
        if grad_output is not None:
            grad_h = grad_output[t] if grad_h is None else _add(grad_output[t], grad_h)
        previous_hidden, previous_cell = previous_of[t]
        if lstm:
            grad_ig, grad_hg, grad_cell, _, _ = aten._thnn_differentiable_lstm_cell_backward.default(
                grad_h, grad_cell, input_gates[t], hidden_gates[t], None, None, previous_cell, cells[t])
            through_update = None
        else:
            grad_ig, grad_hg, through_update, _, _ = aten._thnn_differentiable_gru_cell_backward.default(
                grad_h, input_gates[t], hidden_gates[t], previous_hidden, None, None)
        if grad_ig is None:
            recurrent_h = None
            continue
        recurrent_h = aten.mm.default(grad_hg, w_hh)
        if through_update is not None:
            recurrent_h = _add(through_update, recurrent_h)
        grad_x[t] = aten.mm.default(grad_ig, w_ih)
        grad_w_ih = _sum_into(grad_w_ih, aten.mm.default(aten.t.default(grad_ig), x[t]))
        grad_w_hh = _sum_into(grad_w_hh, aten.mm.default(aten.t.default(grad_hg), previous_hidden))
        if b_ih is not None:
            grad_b_ih = _sum_into(grad_b_ih, aten.sum.dim_IntList(grad_ig, [0]))
            grad_b_hh = _sum_into(grad_b_hh, aten.sum.dim_IntList(grad_hg, [0]))
    zeros = aten.zeros_like.default
    grad_input = aten.stack.default([g if g is not None else zeros(x[t]) for t, g in enumerate(grad_x)])
    if ctx.batch_first:
        grad_input = aten.transpose.int(grad_input, 0, 1)
    return (grad_input, grad_w_ih, grad_w_hh, grad_b_ih, grad_b_hh, recurrent_h, grad_cell if lstm else None)


def _sum_into(total, term):
    return term if total is None else _add(total, term)


_add = aten.add.Tensor


# An autocast step's layer (16-bit input and weights, float32 states): under ``create_graph=True`` its steps are
# replayed as the single ops they are made of (16-bit projections and gates, float32 states) and differentiated by
# the engine, as the step-by-step graph was.

def _replayed_autocast_backward(ctx, grad_output, grad_hy, grad_cy):
    lstm = ctx.mode == _LSTM_MODE
    low = ctx.input.dtype
    w_ih, w_hh = ctx.weight0, ctx.weight1
    b_ih, b_hh = (ctx.weight2, ctx.weight3) if ctx.has_biases else (None, None)
    x = aten.transpose.int(ctx.input, 0, 1) if ctx.batch_first else ctx.input
    steps = x.shape[0]
    input_gates = aten.linear.default(aten.reshape.default(x, [steps * x.shape[1], x.shape[2]]), w_ih, b_ih)
    input_gates = aten.unbind.int(aten.view.default(input_gates, [steps, x.shape[1], input_gates.shape[1]]), 0)
    hidden, cell = ctx.hx_, ctx.cx_
    outputs = [None] * steps
    for t in (range(steps - 1, -1, -1) if ctx.reverse else range(steps)):
        hidden_gates = aten.linear.default(aten._to_copy.default(hidden, dtype=low), w_hh, b_hh)
        if lstm:
            i, f, g, o = aten.chunk.default(_add(input_gates[t], hidden_gates), 4, 1)
            cell = _add(_mul(aten.sigmoid.default(f), cell), _mul(aten.sigmoid.default(i), aten.tanh.default(g)))
            hidden = _mul(aten.sigmoid.default(o), aten.tanh.default(cell))
        else:
            ir, iz, i_n = aten.chunk.default(input_gates[t], 3, 1)
            hr, hz, hn = aten.chunk.default(hidden_gates, 3, 1)
            r, z = aten.sigmoid.default(_add(ir, hr)), aten.sigmoid.default(_add(iz, hz))
            n = aten.tanh.default(_add(i_n, _mul(r, hn)))
            hidden = _add(n, _mul(z, _sub(hidden, n)))
        outputs[t] = hidden
    output = aten.stack.default(outputs)
    if ctx.batch_first:
        output = aten.transpose.int(output, 0, 1)
    results, grads = [], []
    for result, g in ((output, grad_output), (hidden, grad_hy), (cell if lstm else None, grad_cy)):
        if result is not None and g is not None:
            results.append(result)
            grads.append(g)
    positions = [0, 1, 2] + ([3, 4] if ctx.has_biases else []) + [5] + ([6] if lstm else [])
    inputs = (ctx.input, w_ih, w_hh, b_ih, b_hh, ctx.hx_, ctx.cx_)
    wanted = [k for k in positions if ctx.needs_input_grad[k] and inputs[k].requires_grad]
    found = api.grad(results, [inputs[k] for k in wanted], grads, create_graph=True, allow_unused=True) \
        if wanted else ()
    out = [None] * 7
    for k, g in zip(wanted, found):
        out[k] = g
    return tuple(out)


_mul, _sub = aten.mul.Tensor, aten.sub.Tensor
