"""The fused RNN cells torch's RNN modules call on every device but the CPU (``gru`` and ``lstm`` on a
PrivateUse1 tensor take the CUDA path): written with torch ops, which run on the npu's kernels.

The workspaces are the CUDA kernels' layout: a GRU's ``[r, z, n, hn, hx]``, an LSTM's ``[i, f, g, o]``.
"""
from __future__ import annotations

import torch


def _thnn_fused_gru_cell(input_gates, hidden_gates, hx, input_bias=None, hidden_bias=None):
    if input_bias is not None:
        input_gates = input_gates + input_bias
        hidden_gates = hidden_gates + hidden_bias
    ir, ii, in_ = input_gates.chunk(3, 1)
    hr, hi, hn = hidden_gates.chunk(3, 1)
    r = torch.sigmoid(ir + hr)
    z = torch.sigmoid(ii + hi)
    n = torch.tanh(in_ + r * hn)
    hy = n + z * (hx - n)
    return hy, torch.cat([r, z, n, hn, hx], 1)


def _thnn_fused_gru_cell_backward(grad_hy, workspace, has_bias):
    r, z, n, hn, hx = workspace.chunk(5, 1)
    grad_hx = grad_hy * z
    d_z = grad_hy * (hx - n) * z * (1 - z)
    d_n = grad_hy * (1 - z) * (1 - n * n)
    d_hn = d_n * r
    d_r = d_n * hn * r * (1 - r)
    grad_input = torch.cat([d_r, d_z, d_n], 1)
    grad_hidden = torch.cat([d_r, d_z, d_hn], 1)
    if has_bias:
        return grad_input, grad_hidden, grad_hx, grad_input.sum(0), grad_hidden.sum(0)
    return grad_input, grad_hidden, grad_hx, None, None


def _thnn_fused_lstm_cell(input_gates, hidden_gates, cx, input_bias=None, hidden_bias=None):
    gates = input_gates + hidden_gates
    if input_bias is not None:
        gates = gates + input_bias + hidden_bias
    i, f, g, o = gates.chunk(4, 1)
    i, f, g, o = torch.sigmoid(i), torch.sigmoid(f), torch.tanh(g), torch.sigmoid(o)
    cy = f * cx + i * g
    hy = o * torch.tanh(cy)
    return hy, cy, torch.cat([i, f, g, o], 1)


def _thnn_fused_lstm_cell_backward_impl(grad_hy, grad_cy, cx, cy, workspace, has_bias):
    i, f, g, o = workspace.chunk(4, 1)
    tanh_cy = torch.tanh(cy)
    if grad_hy is None:
        grad_hy = torch.zeros_like(cy)
    d_cy = grad_hy * o * (1 - tanh_cy * tanh_cy)
    if grad_cy is not None:
        d_cy = d_cy + grad_cy
    d_o = grad_hy * tanh_cy * o * (1 - o)
    d_i = d_cy * g * i * (1 - i)
    d_f = d_cy * cx * f * (1 - f)
    d_g = d_cy * i * (1 - g * g)
    grad_gates = torch.cat([d_i, d_f, d_g, d_o], 1)
    grad_cx = d_cy * f
    return grad_gates, grad_cx, grad_gates.sum(0) if has_bias else None


def register(lib) -> None:
    for fn in (_thnn_fused_gru_cell, _thnn_fused_gru_cell_backward, _thnn_fused_lstm_cell,
               _thnn_fused_lstm_cell_backward_impl):
        lib.impl(fn.__name__, fn, "PrivateUse1")
