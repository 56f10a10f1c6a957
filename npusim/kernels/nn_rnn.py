"""Array kernels of the fused LSTM and GRU cells and their backward, over NumPy or CuPy arrays.

One call computes a whole cell step from the two gate projections (``x W_ih^T`` and ``h W_hh^T``): the gates'
nonlinearities and the state update, as torch's ``_thnn_fused_lstm_cell`` / ``_thnn_fused_gru_cell`` CUDA kernels
do, with their workspace layouts (an LSTM's activated gates ``[i, f, g, o]``; a GRU's ``[r, z, n, hn, hx]``). The
expressions are the ones ``nn.LSTM`` / ``nn.GRU`` compose from single ops, in the same order (``(1 - z) * n + z * h``
as ``n + z * (h - n)``, the sigmoid of ``elementwise.sigmoid``), so a fused step rounds exactly as the composed one;
the backward kernels evaluate what autograd evaluates through those ops. 16-bit inputs are computed in float32 and
rounded once at the end, as torch's kernels do.
"""
from __future__ import annotations

import numpy as np

from .array_api import HALF_TYPES, namespace_of

_F32 = np.dtype(np.float32)


def _sigmoid(x):
    """``elementwise.sigmoid`` bit for bit (1 / (1 + e) for x >= 0, else e / (1 + e); e = exp(-|x|)) in fewer
    passes: the numerator is max(e, x >= 0) (e <= 1, and NaN stays NaN), divided once. C-contiguous."""
    xp = namespace_of(x)
    e = xp.empty(x.shape, x.dtype)
    xp.abs(x, out=e)
    xp.negative(e, out=e)
    xp.exp(e, out=e)
    numerator = xp.maximum(e, x >= 0)
    return xp.divide(numerator, xp.add(e, 1, out=e), out=numerator)


def _sum(a, b):
    """a + b into a fresh C-contiguous array (one operand may be a transposed view)."""
    xp = namespace_of(a)
    out = xp.empty(a.shape, a.dtype)
    return xp.add(a, b, out=out)


def _opmath(a):
    return a if a is None or a.dtype not in HALF_TYPES else a.astype(_F32)


def _rounded(a, dt):
    return a if a.dtype == dt else a.astype(dt)


def _gates_with_bias(gates, bias):
    return gates if bias is None else gates + bias


# --- LSTM ---------------------------------------------------------------------------------------------------------

def lstm_cell(input_gates, hidden_gates, cx, input_bias=None, hidden_bias=None):
    """(hy, cy, workspace) of one LSTM step; the gates in torch's order (input, forget, cell, output)."""
    xp = namespace_of(input_gates)
    dt = input_gates.dtype
    gates = _sum(_opmath(input_gates), _opmath(hidden_gates))
    if input_bias is not None:
        xp.add(gates, _opmath(input_bias), out=gates)
        xp.add(gates, _opmath(hidden_bias), out=gates)
    h = gates.shape[1] // 4
    workspace = _sigmoid(gates)         # i, f and o; the cell gate is replaced by its tanh below
    workspace[:, 2 * h:3 * h] = xp.tanh(gates[:, 2 * h:3 * h])
    i, f, g, o = (workspace[:, k * h:(k + 1) * h] for k in range(4))
    cy = f * _opmath(cx) + i * g
    hy = o * xp.tanh(cy)
    return _rounded(hy, dt), _rounded(cy, dt), _rounded(workspace, dt)


def lstm_cell_backward(grad_hy, grad_cy, cx, cy, workspace, has_bias):
    """(grad of the gates, grad of cx, grad of the bias or None) of ``lstm_cell`` from its outputs' gradients
    (either may be None: no gradient)."""
    xp = namespace_of(workspace)
    dt = workspace.dtype
    ws, cx, cy = _opmath(workspace), _opmath(cx), _opmath(cy)
    grad_hy, grad_cy = _opmath(grad_hy), _opmath(grad_cy)
    h = ws.shape[1] // 4
    i, f, g, o = (ws[:, k * h:(k + 1) * h] for k in range(4))
    grad_gates = xp.empty(ws.shape, ws.dtype)
    if grad_hy is not None:
        tanh_cy = xp.tanh(cy)
        d_cy = (grad_hy * o) * (1 - tanh_cy * tanh_cy)
        if grad_cy is not None:
            d_cy = grad_cy + d_cy
        xp.multiply(grad_hy * tanh_cy, o * (1 - o), out=grad_gates[:, 3 * h:])
    else:
        d_cy = grad_cy if grad_cy is not None else xp.zeros(cy.shape, cy.dtype)
        grad_gates[:, 3 * h:] = 0
    xp.multiply(d_cy * g, i * (1 - i), out=grad_gates[:, :h])
    xp.multiply(d_cy * cx, f * (1 - f), out=grad_gates[:, h:2 * h])
    xp.multiply(d_cy * i, 1 - g * g, out=grad_gates[:, 2 * h:3 * h])
    grad_cx = d_cy * f
    grad_bias = grad_gates.sum(0) if has_bias else None
    return (_rounded(grad_gates, dt), _rounded(grad_cx, dt),
            None if grad_bias is None else _rounded(grad_bias, dt))


# --- GRU ----------------------------------------------------------------------------------------------------------

def gru_cell(input_gates, hidden_gates, hx, input_bias=None, hidden_bias=None):
    """(hy, workspace) of one GRU step; the gates in torch's order (reset, update, new)."""
    xp = namespace_of(input_gates)
    dt = input_gates.dtype
    ig = _gates_with_bias(_opmath(input_gates), _opmath(input_bias))
    hg = _gates_with_bias(_opmath(hidden_gates), _opmath(hidden_bias))
    hx = _opmath(hx)
    h = hx.shape[1]
    workspace = xp.empty((hx.shape[0], 5 * h), ig.dtype)
    workspace[:, :2 * h] = _sigmoid(ig[:, :2 * h] + hg[:, :2 * h])    # r and z
    r, z = workspace[:, :h], workspace[:, h:2 * h]
    hn = hg[:, 2 * h:]
    n = workspace[:, 2 * h:3 * h]
    xp.tanh(ig[:, 2 * h:] + r * hn, out=n)
    workspace[:, 3 * h:4 * h] = hn
    workspace[:, 4 * h:] = hx
    hy = _sum(n, z * (hx - n))
    return _rounded(hy, dt), _rounded(workspace, dt)


def gru_cell_backward(grad_hy, workspace, has_bias):
    """(grad of the input gates, of the hidden gates, of hx, of the input bias, of the hidden bias) of
    ``gru_cell``; the biases' are None without ``has_bias``."""
    xp = namespace_of(workspace)
    dt = workspace.dtype
    ws, g = _opmath(workspace), _opmath(grad_hy)
    h = ws.shape[1] // 5
    r, z, n, hn, hx = (ws[:, k * h:(k + 1) * h] for k in range(5))
    grad_input_gates = xp.empty((ws.shape[0], 3 * h), ws.dtype)
    d_r, d_z, d_n = (grad_input_gates[:, k * h:(k + 1) * h] for k in range(3))
    xp.multiply(g * (hx - n), z * (1 - z), out=d_z)
    xp.multiply(g - g * z, 1 - n * n, out=d_n)
    xp.multiply(d_n * hn, r * (1 - r), out=d_r)
    grad_hidden_gates = grad_input_gates.copy()
    xp.multiply(d_n, r, out=grad_hidden_gates[:, 2 * h:])
    grad_hx = g * z
    grads = [grad_input_gates, grad_hidden_gates, grad_hx]
    if has_bias:
        grads += [grad_input_gates.sum(0), grad_hidden_gates.sum(0)]
    else:
        grads += [None, None]
    return tuple(None if a is None else _rounded(a, dt) for a in grads)
