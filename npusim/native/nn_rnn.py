"""Tensor-level kernels of the fused recurrent cells: ``_thnn_fused_lstm_cell`` / ``_thnn_fused_gru_cell``, their
backward ops, and the differentiable backward compositions torch's formulas use under ``create_graph``.

torch registers the fused cells for CUDA only (its CPU LSTM composes the cell from single ops); npusim has them on
every device, and ``nn.LSTM`` / ``nn.GRU`` step with them (``nn/modules/rnn.py``), one op and one autograd node per
step, where they do not run a whole layer with ``mkldnn_rnn_layer`` (below). The argument checks are those of
torch's CUDA kernels (``checkSizes``: two-dimensional gates of one size, biases of the gates' width, a state of a
quarter / a third of it).
"""
from __future__ import annotations

from ..core.c10.dtype import SCALAR_TYPE_NAME, float32
from ..core.dispatch.ops_namespace import aten
from ..kernels import nn_rnn as K
from . import common as C

_mul, _add, _sub = aten.mul.Tensor, aten.add.Tensor, aten.sub.Tensor


def _arr(t):
    return None if t is None else t._a


def _check_cell(fn, input_gates, hidden_gates, state, input_bias, hidden_bias, factor, state_name):
    """torch's checkSizes for the fused cells, and one dtype for every tensor (the CUDA kernels read them all as
    the gates' scalar type)."""
    where = f"(while checking arguments for {fn})"
    named = [(input_gates, "input_gates", 1), (hidden_gates, "hidden_gates", 2), (state, state_name, 3),
             (input_bias, "input_bias", 4), (hidden_bias, "hidden_bias", 5)]
    for t, name, pos in named[:2]:
        if t.dim() != 2:
            raise RuntimeError(f"Expected 2-dimensional tensor, but got {t.dim()}-dimensional tensor for argument "
                               f"#{pos} '{name}' {where}")
    if list(hidden_gates.shape) != list(input_gates.shape):
        raise RuntimeError(f"Expected tensor for argument #2 'hidden_gates' to have the same size as tensor for "
                           f"argument #1 'input_gates'; but {list(hidden_gates.shape)} does not equal "
                           f"{list(input_gates.shape)} {where}")
    gates_size = input_gates.shape[1]
    if gates_size % factor:
        raise RuntimeError(f"{fn}: the gates' size {gates_size} is not a multiple of {factor}")
    if (input_bias is None) != (hidden_bias is None):
        raise RuntimeError(f"{fn}: input_bias and hidden_bias must be both given or both omitted")
    for t, name, pos in named[3:]:
        if t is not None and (t.dim() != 1 or t.shape[0] != gates_size):
            raise RuntimeError(f"Expected tensor for argument #{pos} '{name}' to have size [{gates_size}], but got "
                               f"{list(t.shape)} {where}")
    expected = [input_gates.shape[0], gates_size // factor]
    if list(state.shape) != expected:
        raise RuntimeError(f"Expected tensor for argument #3 '{state_name}' to have size {expected}, but got "
                           f"{list(state.shape)} {where}")
    dt = input_gates.dtype
    C.require_float(input_gates._a, fn)
    for t, _, _ in named[1:]:
        if t is not None and t.dtype is not dt:
            raise RuntimeError(f"expected scalar type {SCALAR_TYPE_NAME[dt]} but found {SCALAR_TYPE_NAME[t.dtype]}")
    return C.same_device(input_gates, hidden_gates, state, input_bias, hidden_bias)


# --- LSTM ---------------------------------------------------------------------------------------------------------

def _thnn_fused_lstm_cell(input_gates, hidden_gates, cx, input_bias=None, hidden_bias=None):
    """(hy, cy, workspace): one LSTM step from the gate projections; the workspace holds the activated gates."""
    dev = _check_cell("_thnn_fused_lstm_cell", input_gates, hidden_gates, cx, input_bias, hidden_bias, 4,
                      "prev_hidden")
    hy, cy, workspace = K.lstm_cell(input_gates._a, hidden_gates._a, cx._a, _arr(input_bias), _arr(hidden_bias))
    return C.make(hy, dev), C.make(cy, dev), C.make(workspace, dev)


def _thnn_fused_lstm_cell_backward_impl(grad_hy, grad_cy, cx, cy, workspace, has_bias):
    """(grad of the gates, grad of cx, grad of the bias, undefined without ``has_bias``)."""
    if grad_hy is None and grad_cy is None:
        return None, None, None
    dev = C.same_device(grad_hy, grad_cy, cx, cy, workspace)
    grad_gates, grad_cx, grad_bias = K.lstm_cell_backward(_arr(grad_hy), _arr(grad_cy), cx._a, cy._a, workspace._a,
                                                          has_bias)
    return C.make(grad_gates, dev), C.make(grad_cx, dev), None if grad_bias is None else C.make(grad_bias, dev)


def _thnn_fused_lstm_cell_backward(grad_hy, grad_cy, cx, cy, workspace, has_bias):
    """The gradients of all five inputs of ``_thnn_fused_lstm_cell`` (both gate projections share one)."""
    grad_gates, grad_cx, grad_bias = aten._thnn_fused_lstm_cell_backward_impl.default(grad_hy, grad_cy, cx, cy,
                                                                                      workspace, has_bias)
    return grad_gates, grad_gates, grad_cx, grad_bias, grad_bias


def _sigmoid_grad(g, s):
    return _mul(g, _mul(s, aten.rsub.Scalar(s, 1)))


def _tanh_grad(g, t):
    return _mul(g, aten.rsub.Scalar(_mul(t, t), 1))


def _thnn_differentiable_lstm_cell_backward(grad_hy, grad_cy, input_gates, hidden_gates, input_bias, hidden_bias,
                                            cx, cy):
    """The fused backward as single differentiable ops, recomputing the gates (for ``create_graph=True``)."""
    if grad_hy is None and grad_cy is None:
        return None, None, None, None, None
    gates = _add(input_gates, hidden_gates)
    if input_bias is not None:
        gates = _add(gates, input_bias)
    if hidden_bias is not None:
        gates = _add(gates, hidden_bias)
    i, f, g, o = aten.chunk.default(gates, 4, 1)
    i, f, g, o = aten.sigmoid.default(i), aten.sigmoid.default(f), aten.tanh.default(g), aten.sigmoid.default(o)
    if grad_hy is not None:
        tanh_cy = aten.tanh.default(cy)
        d_cy = _tanh_grad(_mul(grad_hy, o), tanh_cy)
        if grad_cy is not None:
            d_cy = _add(grad_cy, d_cy)
        d_o = _sigmoid_grad(_mul(grad_hy, tanh_cy), o)
    else:
        d_cy = grad_cy
        d_o = aten.zeros_like.default(o)
    grad_gates = aten.cat.default([_sigmoid_grad(_mul(d_cy, g), i), _sigmoid_grad(_mul(d_cy, cx), f),
                                   _tanh_grad(_mul(d_cy, i), g), d_o], 1)
    grad_bias = aten.sum.dim_IntList(grad_gates, [0]) if input_bias is not None else None
    return grad_gates, grad_gates, _mul(d_cy, f), grad_bias, grad_bias


# --- GRU ----------------------------------------------------------------------------------------------------------

def _thnn_fused_gru_cell(input_gates, hidden_gates, hx, input_bias=None, hidden_bias=None):
    """(hy, workspace): one GRU step from the gate projections; the workspace holds [r, z, n, hn, hx]."""
    dev = _check_cell("_thnn_fused_gru_cell", input_gates, hidden_gates, hx, input_bias, hidden_bias, 3,
                      "prev_hidden")
    hy, workspace = K.gru_cell(input_gates._a, hidden_gates._a, hx._a, _arr(input_bias), _arr(hidden_bias))
    return C.make(hy, dev), C.make(workspace, dev)


def _thnn_fused_gru_cell_backward(grad_hy, workspace, has_bias):
    """(grad of the input gates, of the hidden gates, of hx, of the input bias, of the hidden bias)."""
    dev = C.same_device(grad_hy, workspace)
    return tuple(None if a is None else C.make(a, dev) for a in K.gru_cell_backward(grad_hy._a, workspace._a,
                                                                                    has_bias))


def _thnn_differentiable_gru_cell_backward(grad_hy, input_gates, hidden_gates, hx, input_bias, hidden_bias):
    """The fused backward as single differentiable ops, recomputing the gates (for ``create_graph=True``)."""
    if input_bias is not None:
        input_gates = _add(input_gates, input_bias)
    if hidden_bias is not None:
        hidden_gates = _add(hidden_gates, hidden_bias)
    ir, iz, i_n = aten.chunk.default(input_gates, 3, 1)
    hr, hz, hn = aten.chunk.default(hidden_gates, 3, 1)
    r = aten.sigmoid.default(_add(ir, hr))
    z = aten.sigmoid.default(_add(iz, hz))
    n = aten.tanh.default(_add(i_n, _mul(r, hn)))
    d_z = _sigmoid_grad(_mul(grad_hy, _sub(hx, n)), z)
    d_n = _tanh_grad(_sub(grad_hy, _mul(grad_hy, z)), n)
    d_r = _sigmoid_grad(_mul(d_n, hn), r)
    grad_input_gates = aten.cat.default([d_r, d_z, d_n], 1)
    grad_hidden_gates = aten.cat.default([d_r, d_z, _mul(d_n, r)], 1)
    grad_hx = _mul(grad_hy, z)
    if input_bias is None:
        return grad_input_gates, grad_hidden_gates, grad_hx, None, None
    return (grad_input_gates, grad_hidden_gates, grad_hx, aten.sum.dim_IntList(grad_input_gates, [0]),
            aten.sum.dim_IntList(grad_hidden_gates, [0]))


# --- whole layers -------------------------------------------------------------------------------------------------
# ``mkldnn_rnn_layer``: one layer and direction of an LSTM or GRU over an unpacked sequence, torch's single-layer
# recurrence op (its CPU LSTM runs it on oneDNN). The mode numbers are torch's (cuDNN's): 2 LSTM, 3 GRU. npusim's
# workspace is its own: the LSTM's activated gates and cell states, the GRU's [r, z, n, hn], per step.

LSTM_MODE, GRU_MODE = 2, 3


def _layer_input(input, batch_first):
    """The (time, batch, features) array of the input."""
    return input._a.swapaxes(0, 1) if batch_first else input._a


def _check_layer(fn, input, weights, hx, mode, hidden_size, num_layers, batch_sizes, has_biases):
    if mode not in (LSTM_MODE, GRU_MODE):
        raise RuntimeError(f"{fn}: mode {mode} is not LSTM (2) or GRU (3)")
    if list(batch_sizes) or num_layers != 1:
        raise RuntimeError(f"{fn}: one layer over an unpacked sequence only")
    if input.dim() != 3:
        raise RuntimeError(f"{fn}: expected a 3-dimensional input, got {input.dim()}-dimensional")
    gates = (4 if mode == LSTM_MODE else 3) * hidden_size
    used = weights if has_biases else weights[:2]
    if list(weights[0].shape) != [gates, input.shape[2]] or list(weights[1].shape) != [gates, hidden_size] or \
            any(list(w.shape) != [gates] for w in used[2:]) or list(hx.shape) != [input.shape[1], hidden_size]:
        raise RuntimeError(f"{fn}: the weights or the state do not match the input and hidden_size {hidden_size}")
    C.require_float(input._a, fn)
    states = () if _autocast_step(input, hx) else (hx,)
    for t in (*used, *states):
        if t.dtype is not input.dtype:
            raise RuntimeError(f"expected scalar type {SCALAR_TYPE_NAME[input.dtype]} but found "
                               f"{SCALAR_TYPE_NAME[t.dtype]}")


def _autocast_step(input, hx):
    """Whether the layer runs an autocast step: 16-bit input and weights, float32 states (npusim's extension of the
    op, made by nn.LSTM / nn.GRU under autocast; see kernels/nn_rnn.py)."""
    return input.dtype.itemsize == 2 and hx.dtype is float32


def mkldnn_rnn_layer(input, weight0, weight1, weight2, weight3, hx_, cx_, reverse, batch_sizes, mode, hidden_size,
                     num_layers, has_biases, bidirectional, batch_first, train):
    """(output, hy, cy, workspace) of one layer; a GRU has no cell state (cy is empty and cx_ unread)."""
    fn = "mkldnn_rnn_layer"
    _check_layer(fn, input, (weight0, weight1, weight2, weight3), hx_, mode, hidden_size, num_layers, batch_sizes,
                 has_biases)
    dev = C.same_device(input, weight0, weight1, hx_, *((weight2, weight3) if has_biases else ()))
    b_ih, b_hh = (weight2._a, weight3._a) if has_biases else (None, None)
    x = _layer_input(input, batch_first)
    if _autocast_step(input, hx_):
        low = x.dtype
        gates = K.rounded_input_projection(x, weight0._a, b_ih, low)
        w_hh, b_hh = K.to_float32(weight1._a), None if b_hh is None else K.to_float32(b_hh)
        if mode == LSTM_MODE:
            output, hy, cy, workspace = K.lstm_layer_rounded(gates, hx_._a, cx_._a, w_hh, b_hh, reverse, low)
        else:
            output, hy, workspace = K.gru_layer_rounded(gates, hx_._a, w_hh, b_hh, reverse, low)
    else:
        gates = K.input_projection(x, weight0._a, b_ih)
        if mode == LSTM_MODE:
            output, hy, cy, workspace = K.lstm_layer(gates, hx_._a, cx_._a, weight1._a, b_hh, reverse)
        else:
            output, hy, workspace = K.gru_layer(gates, hx_._a, weight1._a, b_hh, reverse)
    if mode != LSTM_MODE:
        cy = output.reshape(-1)[:0].copy()   # no cell state
    output = output.swapaxes(0, 1) if batch_first else output
    return C.make(output, dev), C.make(hy, dev), C.make(cy, dev), C.make(workspace, dev)


def mkldnn_rnn_layer_backward(input, weight1, weight2, weight3, weight4, hx_, cx_tmp, output, hy_, cy_, grad_output,
                              grad_hy, grad_cy, reverse, mode, hidden_size, num_layers, has_biases, train,
                              bidirectional, batch_sizes, batch_first, workspace):
    """(grad of input, of the four weights, of hx, of cx): backward through time with one product per step, then
    the input's and the weights' gradients as one product each over all steps (the biases' as one sum)."""
    dev = C.same_device(input, weight1, weight2, hx_, workspace)
    x = _layer_input(input, batch_first)
    outputs = _layer_input(output, batch_first)
    grad_out = None if grad_output is None else _layer_input(grad_output, batch_first)
    w_ih, w_hh = weight1._a, weight2._a
    hx, states = hx_._a, outputs        # the hidden states the weights' gradients multiply
    low = x.dtype if _autocast_step(input, hx_) else None
    if low is not None:                 # an autocast step: the float32 backward, 16-bit inputs' gradients rounded
        x, w_ih, w_hh = K.to_float32(x), K.to_float32(w_ih), K.to_float32(w_hh)
        hx, states = K.rounded_copy(hx, low), K.rounded_copy(outputs, low)
    if mode == LSTM_MODE:
        grad_gates, grad_hx, grad_cx = K.lstm_layer_backward(grad_out, _arr(grad_hy), _arr(grad_cy), hx_._a,
                                                             cx_tmp._a, w_hh, workspace._a, reverse)
        grad_input_gates = grad_hidden_gates = grad_gates
    else:
        grad_input_gates, grad_hidden_gates, grad_hx = K.gru_layer_backward(grad_out, _arr(grad_hy), hx_._a, outputs,
                                                                            w_hh, workspace._a, reverse)
        grad_cx = None
    grads = K.layer_parameter_grads(x, w_ih, grad_input_gates, grad_hidden_gates, hx, states, has_biases, reverse)
    if low is not None:
        grads = tuple(None if g is None else K.converted(g, low) for g in grads)
    grad_x, grad_w_ih, grad_w_hh, grad_b_ih, grad_b_hh = grads
    if batch_first:
        grad_x = grad_x.swapaxes(0, 1)
    return tuple(None if a is None else C.make(a, dev)
                 for a in (grad_x, grad_w_ih, grad_w_hh, grad_b_ih, grad_b_hh, grad_hx, grad_cx))


KERNELS = {
    "_thnn_fused_lstm_cell": _thnn_fused_lstm_cell,
    "_thnn_fused_lstm_cell_backward_impl": _thnn_fused_lstm_cell_backward_impl,
    "_thnn_fused_gru_cell": _thnn_fused_gru_cell,
    "_thnn_fused_gru_cell_backward": _thnn_fused_gru_cell_backward,
    "mkldnn_rnn_layer": mkldnn_rnn_layer,
    "mkldnn_rnn_layer_backward": mkldnn_rnn_layer_backward,
}

# Ops that decompose into other ops (CompositeImplicitAutograd), as in torch.
COMPOSITE_IMPLICIT = {
    "_thnn_fused_lstm_cell_backward": _thnn_fused_lstm_cell_backward,
    "_thnn_differentiable_lstm_cell_backward": _thnn_differentiable_lstm_cell_backward,
    "_thnn_differentiable_gru_cell_backward": _thnn_differentiable_gru_cell_backward,
}
