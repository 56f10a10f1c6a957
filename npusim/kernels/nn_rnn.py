"""Array kernels of the fused LSTM and GRU cells and their backward, over NumPy or CuPy arrays.

One call computes a whole cell step from the two gate projections (``x W_ih^T`` and ``h W_hh^T``): the gates'
nonlinearities and the state update, as torch's ``_thnn_fused_lstm_cell`` / ``_thnn_fused_gru_cell`` CUDA kernels
do, with their workspace layouts (an LSTM's activated gates ``[i, f, g, o]``; a GRU's ``[r, z, n, hn, hx]``). The
expressions are the ones ``nn.LSTM`` / ``nn.GRU`` compose from single ops, in the same order (``(1 - z) * n + z * h``
as ``n + z * (h - n)``, the sigmoid of ``elementwise.sigmoid``), so a fused step rounds exactly as the composed one;
the backward kernels evaluate what autograd evaluates through those ops. 16-bit inputs are computed in float32 and
rounded once at the end, as torch's kernels do. The whole-layer kernels (``mkldnn_rnn_layer``) run those steps over
a sequence, with the same numbers.
"""
from __future__ import annotations

import math

import numpy as np

from . import parallel as _parallel
from . import reductions as _reductions
from .array_api import HALF_TYPES, namespace_of
from .elementwise import sigmoid as _sigmoid
from .elementwise import sigmoid_into as _sigmoid_into

_F32 = np.dtype(np.float32)
def _scratch_array(xp, name, shape, dtype):
    """An uninitialised C-contiguous ``shape`` array of ``dtype`` for ``name``, this thread's ``parallel.scratch``
    (NumPy only; CuPy's memory pool already keeps device memory). The whole-layer kernels' big temporaries (the input
    projection, the gates' gradients, the previous states) are larger than glibc's mmap threshold, so fresh ones
    would page-fault on every step; a scratch array never leaves the kernel that asked for it."""
    if xp is not np:
        return xp.empty(shape, dtype)
    return _parallel.scratch("rnn." + name, math.prod(shape), dtype).reshape(shape)


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


# --- whole layers: the recurrence of one layer and direction over a sequence ---------------------------------------
# ``mkldnn_rnn_layer``'s arithmetic: the input's projection for every step as one product over the (time, batch)
# rows, then per step the hidden projection, computed transposed as (W_hh h^T + b_hh)^T, and the cell above, each
# expression in the order (and, for exp and tanh, the memory layout) the per-step ops evaluate it, so outputs and
# states are bit for bit those of the step-by-step layer. The backward runs backward through time with one product
# per step (the hidden state's gradient); the weights' and the input's gradients are one product each over all steps.

def _matmul(a, b):
    xp = namespace_of(a)
    return xp.asarray(xp.matmul(a, b))


def input_projection(x, w_ih, b_ih):
    """x W_ih^T + b_ih over the rows of a (time, batch, features) input: (time, batch, gates), contiguous, in this
    thread's scratch memory (valid until the next layer call)."""
    xp = namespace_of(x)
    steps, batch = x.shape[0], x.shape[1]
    x2d = x.reshape(steps * batch, x.shape[2])
    gates = _scratch_array(xp, "input_gates", (steps * batch, w_ih.shape[0]), np.result_type(x.dtype, w_ih.dtype))
    xp.matmul(x2d, w_ih.T, out=gates)
    if b_ih is not None:
        xp.add(gates, b_ih, out=gates)
    return gates.reshape(steps, batch, gates.shape[1])


def _hidden_projection(h, w_hh, b_hh_column, product):
    """(W_hh h^T + b_hh)^T computed into ``product`` (gates, batch), returned as a transposed view (see
    nn/modules/rnn.py's _hidden_gates)."""
    xp = namespace_of(product)
    xp.matmul(w_hh, h.T, out=product)
    if b_hh_column is not None:
        xp.add(product, b_hh_column, out=product)
    return product.T


def _steps(count, reverse):
    return range(count - 1, -1, -1) if reverse else range(count)


def _lstm_buffers(input_gates, dt, b_hh):
    """The arrays an LSTM layer's forward writes, in ``dt``: the workspace and its three blocks, the output, b_hh
    as a column, and the per-step scratch (pre-activations, exp, a product, the projection, a mask)."""
    xp = namespace_of(input_gates)
    steps, batch, width = input_gates.shape
    h = width // 4
    workspace = xp.empty(steps * batch * 6 * h, dt)
    return (workspace, *_workspace_blocks(workspace, steps, batch, h), xp.empty((steps, batch, h), dt),
            None if b_hh is None else b_hh.reshape(width, 1),
            xp.empty((batch, width), dt), xp.empty((batch, width), dt), xp.empty((batch, h), dt),
            xp.empty((width, batch), dt), xp.empty((batch, width), bool))


def lstm_layer(input_gates, hx, cx, w_hh, b_hh, reverse):
    """(output, hy, cy, workspace) of an LSTM layer over ``input_gates`` (time, batch, 4 hidden); the workspace
    holds, per step, the activated gates, then the cell states, then their tanh (three contiguous blocks)."""
    xp = namespace_of(input_gates)
    steps, batch, width = input_gates.shape
    h = width // 4
    workspace, gates_all, cells, tanh_cells, output, b_hh_column, pre, e, product, projection, mask = \
        _lstm_buffers(input_gates, input_gates.dtype, b_hh)
    hidden, cell = hx, cx
    for t in _steps(steps, reverse):
        xp.add(input_gates[t], _hidden_projection(hidden, w_hh, b_hh_column, projection), out=pre)
        gates = gates_all[t]
        _sigmoid_into(pre, gates, e, mask)
        xp.tanh(pre[:, 2 * h:3 * h], out=gates[:, 2 * h:3 * h])
        i, f, g, o = (gates[:, k * h:(k + 1) * h] for k in range(4))
        cy = cells[t]
        xp.multiply(f, cell, out=cy)
        xp.add(cy, xp.multiply(i, g, out=product), out=cy)
        xp.tanh(cy, out=tanh_cells[t])
        hidden = xp.multiply(o, tanh_cells[t], out=output[t])
        cell = cy
    return output, hidden.copy(), cell.copy(), workspace


def _workspace_blocks(workspace, steps, batch, h):
    n = steps * batch * h
    return (workspace[:4 * n].reshape(steps, batch, 4 * h), workspace[4 * n:5 * n].reshape(steps, batch, h),
            workspace[5 * n:].reshape(steps, batch, h))


def _previous_states(hx, output, reverse):
    """Every step's incoming hidden state, in step order: (time, batch, hidden), contiguous, in scratch memory."""
    xp = namespace_of(output)
    states = _scratch_array(xp, "previous_states", output.shape, output.dtype)
    if reverse:
        states[:-1], states[-1] = output[1:], hx
    else:
        states[0], states[1:] = hx, output[:-1]
    return states


def layer_parameter_grads(x, w_ih, grad_input_gates, grad_hidden_gates, hx, output, has_bias, reverse):
    """(grad of x, of W_ih, of W_hh, of b_ih, of b_hh) from the gates' gradients of every step. x's, W_ih's and
    b_ih's are one product (sum) each over the (time, batch) rows, as the input projection's addmm backward runs
    them; W_hh's is one product over all steps too (the step-by-step graph added one product per step: the same
    terms, summed in another order); b_hh's adds up each step's row sum in the order backward through time reaches
    the steps, as that graph did."""
    xp = namespace_of(x)
    steps, batch = x.shape[0], x.shape[1]
    rows = steps * batch
    grad_ig = grad_input_gates.reshape(rows, -1)
    grad_x = _matmul(grad_ig, w_ih).reshape(steps, batch, w_ih.shape[1])
    grad_w_ih = _matmul(grad_ig.T, x.reshape(rows, x.shape[2]))
    previous = _previous_states(hx, output, reverse).reshape(rows, -1)
    grad_w_hh = _matmul(grad_hidden_gates.reshape(rows, -1).T, previous)
    if not has_bias:
        return grad_x, grad_w_ih, grad_w_hh, None, None
    grad_b_ih = _reductions.sum_(grad_ig, (0,), False, grad_ig.dtype)
    # each step's sum over the batch rows (in row order), then the steps in backward order
    step_sums = grad_hidden_gates.sum(axis=1)
    grad_b_hh = None
    for t in _steps(steps, not reverse):
        grad_b_hh = step_sums[t].copy() if grad_b_hh is None else xp.add(grad_b_hh, step_sums[t], out=grad_b_hh)
    return grad_x, grad_w_ih, grad_w_hh, grad_b_ih, grad_b_hh


def _step_grad(grad_output, t, recurrent):
    """The hidden state's gradient at step t: the output's plus the one through the next step's projection."""
    if grad_output is None:
        return recurrent
    if recurrent is None:
        return grad_output[t]
    return grad_output[t] + recurrent


def lstm_layer_backward(grad_output, grad_hy, grad_cy, hx, cx, w_hh, workspace, reverse):
    """(grad of the gates per step (time, batch, 4 hidden), grad of hx, grad of cx) of ``lstm_layer``; any of the
    three incoming gradients may be None."""
    xp = namespace_of(workspace)
    batch, h = hx.shape
    steps = workspace.shape[0] // (batch * 6 * h)
    gates_all, cells, tanh_cells = _workspace_blocks(workspace, steps, batch, h)
    grad_gates_all = _scratch_array(xp, "grad_gates", gates_all.shape, workspace.dtype)
    order = list(_steps(steps, not reverse))   # backward through time
    dt = workspace.dtype
    # scratch reused by every step: the gates' derivative factors s (1 - s) (the cell gate's column block unused),
    # and two (batch, hidden) products
    derivative, first, second = xp.empty((batch, 4 * h), dt), xp.empty((batch, h), dt), xp.empty((batch, h), dt)
    recurrent_h, grad_cell = grad_hy, grad_cy
    for position, t in enumerate(order):
        grad_h = _step_grad(grad_output, t, recurrent_h)
        previous_cell = cx if position == len(order) - 1 else cells[order[position + 1]]
        ws = gates_all[t]
        i, f, g, o = (ws[:, k * h:(k + 1) * h] for k in range(4))
        xp.multiply(ws, xp.subtract(1, ws, out=derivative), out=derivative)
        d_i, d_f, d_o = derivative[:, :h], derivative[:, h:2 * h], derivative[:, 3 * h:]
        grad_gates = grad_gates_all[t]
        tanh_cy = tanh_cells[t]
        if grad_h is not None:
            # (grad_h o) (1 - tanh(cy)^2), plus the next step's cell gradient
            xp.multiply(tanh_cy, tanh_cy, out=second)
            d_cy = xp.multiply(xp.multiply(grad_h, o, out=first), xp.subtract(1, second, out=second))
            if grad_cell is not None:
                xp.add(grad_cell, d_cy, out=d_cy)
            xp.multiply(xp.multiply(grad_h, tanh_cy, out=first), d_o, out=grad_gates[:, 3 * h:])
        else:
            d_cy = grad_cell if grad_cell is not None else xp.zeros((batch, h), dt)
            grad_gates[:, 3 * h:] = 0
        xp.multiply(xp.multiply(d_cy, g, out=first), d_i, out=grad_gates[:, :h])
        xp.multiply(xp.multiply(d_cy, previous_cell, out=first), d_f, out=grad_gates[:, h:2 * h])
        xp.multiply(g, g, out=second)
        xp.multiply(xp.multiply(d_cy, i, out=first), xp.subtract(1, second, out=second),
                    out=grad_gates[:, 2 * h:3 * h])
        grad_cell = xp.multiply(d_cy, f, out=d_cy) if d_cy is not grad_cell else d_cy * f
        recurrent_h = _matmul(grad_gates, w_hh)
    return grad_gates_all, recurrent_h, grad_cell


def gru_layer(input_gates, hx, w_hh, b_hh, reverse):
    """(output, hy, workspace) of a GRU layer over ``input_gates`` (time, batch, 3 hidden); the workspace holds,
    per step, [r, z, n, hn]."""
    xp = namespace_of(input_gates)
    steps, batch, width = input_gates.shape
    h = width // 3
    dt = input_gates.dtype
    workspace = xp.empty((steps, batch, 4 * h), dt)
    output = xp.empty((steps, batch, h), dt)
    b_hh_column = None if b_hh is None else b_hh.reshape(width, 1)
    pre, e = xp.empty((batch, 2 * h), dt), xp.empty((batch, 2 * h), dt)
    new_pre, scratch = xp.empty((batch, h), dt), xp.empty((batch, h), dt)
    projection, mask = xp.empty((width, batch), dt), xp.empty((batch, 2 * h), bool)
    hidden = hx
    for t in _steps(steps, reverse):
        ig, hg = input_gates[t], _hidden_projection(hidden, w_hh, b_hh_column, projection)
        ws = workspace[t]
        xp.add(ig[:, :2 * h], hg[:, :2 * h], out=pre)
        _sigmoid_into(pre, ws[:, :2 * h], e, mask)
        r, z, n = ws[:, :h], ws[:, h:2 * h], ws[:, 2 * h:3 * h]
        hn = hg[:, 2 * h:]
        xp.add(ig[:, 2 * h:], xp.multiply(r, hn, out=new_pre), out=new_pre)
        xp.tanh(new_pre, out=n)
        ws[:, 3 * h:] = hn
        xp.subtract(hidden, n, out=scratch)
        xp.multiply(z, scratch, out=scratch)
        hidden = xp.add(n, scratch, out=output[t])
    return output, hidden.copy(), workspace


def gru_layer_backward(grad_output, grad_hy, hx, output, w_hh, workspace, reverse):
    """(grad of the input gates per step, grad of the hidden gates per step, both (time, batch, 3 hidden), grad of
    hx) of ``gru_layer``; either incoming gradient may be None. A step's incoming hidden state has three
    gradients (the previous output's, the update's ``g z`` and the hidden projection's), added in the order the
    step-by-step graph adds them."""
    xp = namespace_of(workspace)
    steps, batch, width = workspace.shape
    h = width // 4
    grad_input_all = _scratch_array(xp, "grad_gates", (steps, batch, 3 * h), workspace.dtype)
    grad_hidden_all = _scratch_array(xp, "grad_hidden_gates", (steps, batch, 3 * h), workspace.dtype)
    order = list(_steps(steps, not reverse))   # backward through time
    grad_h = _step_grad(grad_output, order[0], grad_hy)
    dt = workspace.dtype
    # scratch reused by every step: r (1 - r) and z (1 - z) side by side, and two (batch, hidden) products
    derivative, first, second = xp.empty((batch, 2 * h), dt), xp.empty((batch, h), dt), xp.empty((batch, h), dt)
    for position, t in enumerate(order):
        previous = order[position + 1] if position + 1 < len(order) else None
        ws = workspace[t]
        r, z, n, hn = (ws[:, k * h:(k + 1) * h] for k in range(4))
        xp.multiply(ws[:, :2 * h], xp.subtract(1, ws[:, :2 * h], out=derivative), out=derivative)
        previous_hidden = hx if previous is None else output[previous]
        grad_input, grad_hidden = grad_input_all[t], grad_hidden_all[t]
        d_r, d_z, d_n = (grad_input[:, k * h:(k + 1) * h] for k in range(3))
        xp.subtract(previous_hidden, n, out=first)
        xp.multiply(xp.multiply(grad_h, first, out=first), derivative[:, h:], out=d_z)
        through_update = grad_h * z
        xp.multiply(n, n, out=second)
        xp.multiply(xp.subtract(grad_h, through_update, out=first), xp.subtract(1, second, out=second), out=d_n)
        xp.multiply(xp.multiply(d_n, hn, out=first), derivative[:, :h], out=d_r)
        grad_hidden[:, :2 * h] = grad_input[:, :2 * h]
        xp.multiply(d_n, r, out=grad_hidden[:, 2 * h:])
        through_projection = _matmul(grad_hidden, w_hh)
        # (output's + update's) + projection's: the order the step-by-step graph's gradients arrive in
        from_output = None if previous is None or grad_output is None else grad_output[previous]
        grad_h = through_update if from_output is None else xp.add(from_output, through_update, out=through_update)
        grad_h += through_projection
    return grad_input_all, grad_hidden_all, grad_h


# --- whole layers of an autocast step: 16-bit gate projections, float32 states ------------------------------------
# Under autocast a layer's step is 16-bit projections (F.linear's casts: the hidden state and the weights rounded to
# the autocast dtype, a float32 product rounded once) and 16-bit gate ops (each rounded: an add, sigmoid or tanh in
# float32 and rounded), while the float32 states promote what they touch (f * c, o * tanh(c) and the GRU's update in
# float32). These layers compute those steps in float32 arrays, rounding to ``low`` exactly where the step's 16-bit
# ops round, so outputs and states are the step-by-step autocast layer's bit for bit. Their workspaces are the
# float32 layers', so the backward is the float32 one (its arithmetic in float32, rounded once where a gradient
# reaches a 16-bit input: no per-op rounding of the gradients).

_F16 = np.dtype(np.float16)
# float32 bit patterns (as int32) of float16's rounding below: the exponent field, the sign, float16's smallest
# normal magnitude 2**-14, 2**15 (from there float16 overflows), and what turns 2**e into 1.5 * 2**(e + 13)
_EXPONENT_BITS, _SIGN_BIT = np.int32(0x7F800000), np.int32(-2 ** 31)
_HALF_SMALLEST_NORMAL, _HALF_LIMIT = np.int32(113 << 23), np.int32(142 << 23)
_HALF_MAGIC = np.int32((13 << 23) | (1 << 22))


class _Rounding:
    """Rounds float32 arrays (or views) to the 16-bit dtype ``low`` in place: ``rounding(a)``. float16 on NumPy
    without converting (NumPy converts one element at a time): adding, then subtracting, c = 1.5 * 2**(e + 13), e the
    exponent of |x| (at least float16's smallest normal exponent, -14), rounds x to a multiple of 2**(e - 10),
    float16's spacing there, to nearest even (c's binade has that spacing and c is an even multiple of it); x's sign
    bit put back keeps a zero's (a nonzero result has it already). Magnitudes from 2**15 (overflow to infinity),
    infinities and NaNs take NumPy's cast, as do bfloat16 and CuPy arrays. The bits of the cast (checked over float32
    patterns). Keeps its scratch arrays per shape, for a layer's many steps."""

    def __init__(self, xp, low):
        self.low = low
        self.fast = xp is np and low == _F16
        self.scratch = {}

    def __call__(self, a, bounded=False):
        """``bounded``: ``a``'s finite values are at most float16's largest (sigmoids, tanhs, products of those
        with float16 values), so none can overflow and the range check is skipped (an infinity or NaN still comes
        out as one)."""
        if not self.fast or a.__class__ is not np.ndarray:
            a[...] = a.astype(self.low)
            return a
        scratch = self.scratch.get(a.shape)
        if scratch is None:
            c, t = np.empty(a.shape, _F32), np.empty(a.shape, _F32)
            scratch = self.scratch[a.shape] = (c, t, c.view(np.int32), t.view(np.int32))
        c, t, c_bits, t_bits = scratch
        bits = a.view(np.int32)
        np.maximum(np.bitwise_and(bits, _EXPONENT_BITS, out=c_bits), _HALF_SMALLEST_NORMAL, out=c_bits)
        if not bounded and c_bits.max() >= _HALF_LIMIT:
            a[...] = a.astype(self.low)
            return a
        np.add(c_bits, _HALF_MAGIC, out=c_bits)      # integer operations: NumPy's float maximum is slower
        np.subtract(np.add(a, c, out=t), c, out=t)
        np.bitwise_or(t_bits, np.bitwise_and(bits, _SIGN_BIT, out=c_bits), out=bits)
        return a


def round_to(a, low):
    """``a``'s values rounded to the 16-bit dtype ``low``, in place (a float32 array or view)."""
    return _Rounding(namespace_of(a), low)(a)


def converted(a, dtype):
    """``a.astype(dtype)``, 16-bit conversions in the faster loops of kernels/parallel.py (the same values)."""
    return _parallel.astype(a, dtype)


def to_float32(a):
    """A float32 copy of a 16-bit array (a weight's or the input's values, exactly)."""
    return converted(a, _F32)


def rounded_copy(a, low):
    """A float32 copy of ``a`` with its values rounded to ``low`` (the step's cast of a float32 state)."""
    return round_to(a.copy(), low)


def rounded_input_projection(x, w_ih, b_ih, low):
    """``input_projection`` over float32 copies of 16-bit operands, rounded to ``low`` (F.linear's 16-bit addmm)."""
    gates = input_projection(to_float32(x), to_float32(w_ih), None if b_ih is None else to_float32(b_ih))
    return round_to(gates, low)


def lstm_layer_rounded(input_gates, hx, cx, w_hh, b_hh, reverse, low):
    """``lstm_layer`` of an autocast step: ``input_gates`` float32 holding 16-bit values, float32 ``hx`` and
    ``cx``, ``w_hh`` / ``b_hh`` float32 copies of the 16-bit weights; the same workspace layout."""
    xp = namespace_of(input_gates)
    steps, batch, width = input_gates.shape
    h = width // 4
    dt = _F32
    workspace, gates_all, cells, tanh_cells, output, b_hh_column, pre, e, product, projection, mask = \
        _lstm_buffers(input_gates, dt, b_hh)
    hidden_low = xp.empty((batch, h), dt)
    rounded = _Rounding(xp, low)
    hidden, cell = hx, cx
    for t in _steps(steps, reverse):
        xp.copyto(hidden_low, hidden)
        rounded(hidden_low)             # F.linear's cast of the state
        hidden_gates = _hidden_projection(hidden_low, w_hh, b_hh_column, projection)
        rounded(projection)
        rounded(xp.add(input_gates[t], hidden_gates, out=pre))
        gates = gates_all[t]
        _sigmoid_into(pre, gates, e, mask)
        xp.tanh(pre[:, 2 * h:3 * h], out=gates[:, 2 * h:3 * h])
        rounded(gates, bounded=True)
        i, f, g, o = (gates[:, k * h:(k + 1) * h] for k in range(4))
        cy = cells[t]
        xp.multiply(f, cell, out=cy)
        xp.add(cy, rounded(xp.multiply(i, g, out=product), bounded=True), out=cy)
        xp.tanh(cy, out=tanh_cells[t])
        hidden = xp.multiply(o, tanh_cells[t], out=output[t])
        cell = cy
    return output, hidden.copy(), cell.copy(), workspace


def gru_layer_rounded(input_gates, hx, w_hh, b_hh, reverse, low):
    """``gru_layer`` of an autocast step (see ``lstm_layer_rounded``); the same workspace layout."""
    xp = namespace_of(input_gates)
    steps, batch, width = input_gates.shape
    h = width // 3
    dt = _F32
    workspace = xp.empty((steps, batch, 4 * h), dt)
    output = xp.empty((steps, batch, h), dt)
    b_hh_column = None if b_hh is None else b_hh.reshape(width, 1)
    pre, e, sigmoids = xp.empty((batch, 2 * h), dt), xp.empty((batch, 2 * h), dt), xp.empty((batch, 2 * h), dt)
    new_pre, scratch = xp.empty((batch, h), dt), xp.empty((batch, h), dt)
    projection, mask = xp.empty((width, batch), dt), xp.empty((batch, 2 * h), bool)
    hidden_low = xp.empty((batch, h), dt)
    rounded = _Rounding(xp, low)
    hidden = hx
    for t in _steps(steps, reverse):
        xp.copyto(hidden_low, hidden)
        rounded(hidden_low)
        ig, hg = input_gates[t], _hidden_projection(hidden_low, w_hh, b_hh_column, projection)
        rounded(projection)
        ws = workspace[t]
        rounded(xp.add(ig[:, :2 * h], hg[:, :2 * h], out=pre))
        rounded(_sigmoid_into(pre, sigmoids, e, mask), bounded=True)
        ws[:, :2 * h] = sigmoids
        r, z, n = ws[:, :h], ws[:, h:2 * h], ws[:, 2 * h:3 * h]
        hn = hg[:, 2 * h:]
        rounded(xp.multiply(r, hn, out=new_pre), bounded=True)
        rounded(xp.add(ig[:, 2 * h:], new_pre, out=new_pre))
        ws[:, 2 * h:3 * h] = rounded(xp.tanh(new_pre, out=new_pre), bounded=True)
        ws[:, 3 * h:] = hn
        xp.subtract(hidden, n, out=scratch)
        xp.multiply(z, scratch, out=scratch)
        hidden = xp.add(n, scratch, out=output[t])
    return output, hidden.copy(), workspace
