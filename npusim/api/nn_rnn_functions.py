"""torch's functional recurrences: ``torch.lstm / gru / rnn_tanh / rnn_relu`` and their one-step ``*_cell`` forms.

The layer functions take aten's two overloads, as torch's do: ``(input, hx, params, has_biases, num_layers,
dropout, train, bidirectional, batch_first)`` and the packed ``(data, batch_sizes, hx, params, has_biases,
num_layers, dropout, train, bidirectional)``. ``params`` is the flat list a module's ``_flat_weights`` holds
(per layer and direction: ``w_ih, w_hh[, b_ih, b_hh][, w_hr]``). They run the same recurrence as
``nn.LSTM`` / ``nn.GRU`` / ``nn.RNN`` (the module's own stepping code, borrowed), so they are differentiable and
give the module's results for the module's weights.
"""
from __future__ import annotations

from ..core.tensor import Tensor
from ..nn import functional as F
from ..nn.modules import rnn as _rnn
from ..nn.functional.convolution import _type_name  # the parser's name of an argument's type

__all__ = ["lstm", "gru", "rnn_tanh", "rnn_relu", "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell"]

_INPUT_NAMES = ("input", "hx", "params", "has_biases", "num_layers", "dropout", "train", "bidirectional",
                "batch_first")
_DATA_NAMES = ("data", "batch_sizes", "hx", "params", "has_biases", "num_layers", "dropout", "train",
               "bidirectional")


class _Recurrence:
    """What ``RNNBase``'s stepping methods read of a module, built from the functional arguments."""

    _run = _rnn.RNNBase._run
    _run_packed = _rnn.RNNBase._run_packed
    _run_direction = _rnn.RNNBase._run_direction
    _run_direction_packed = _rnn.RNNBase._run_direction_packed
    _run_direction_packed_reverse = _rnn.RNNBase._run_direction_packed_reverse
    _step = _rnn.RNNBase._step
    _direction_weights = staticmethod(_rnn.RNNBase._direction_weights)

    def __init__(self, mode, params, has_biases, num_layers, dropout, train, bidirectional, batch_first,
                 proj_size):
        self.mode, self.bias, self.num_layers = mode, bool(has_biases), int(num_layers)
        self.dropout, self.training, self.bidirectional = float(dropout), bool(train), bool(bidirectional)
        self.batch_first, self.proj_size = bool(batch_first), proj_size
        stride = (4 if self.bias else 2) + (1 if proj_size > 0 else 0)
        params = list(params)
        if len(params) % stride:
            raise RuntimeError(f"MatrixRef: ArrayRef size {len(params)} not divisible by stride {stride}")
        self.all_weights = [params[i:i + stride] for i in range(0, len(params), stride)]


def _bind(names, args, kwargs):
    """Positional and keyword arguments bound to one overload's names (all required), or None."""
    if len(args) > len(names):
        return None
    bound = dict(zip(names, args))
    for k, v in kwargs.items():
        if k not in names or k in bound:
            return None
        bound[k] = v
    return bound if len(bound) == len(names) else None


def _parse(fname, args, kwargs):
    """torch's overload choice: the packed form when the second argument is a tensor of batch sizes."""
    # lstm's input form has a tuple second; gru's and rnn_*'s have a tensor hx second and a list of params third
    third = args[2] if len(args) > 2 else kwargs.get("hx")
    packed = "batch_sizes" in kwargs or (len(args) > 1 and isinstance(args[1], Tensor)
                                         and (fname == "lstm" or isinstance(third, Tensor)))
    names = _DATA_NAMES if packed else _INPUT_NAMES
    bound = _bind(names, args, kwargs)
    if bound is None or not isinstance(bound[names[0]], Tensor):
        got = [_type_name(a) for a in args] + [f"{k}={_type_name(v)}" for k, v in kwargs.items()]
        hx_type = "tuple of Tensors hx" if fname == "lstm" else "Tensor hx"
        raise TypeError(
            f"{fname}() received an invalid combination of arguments - got ({', '.join(got)}), but expected one of:\n"
            f" * (Tensor data, Tensor batch_sizes, {hx_type}, tuple of Tensors params, bool has_biases, "
            f"int num_layers, float dropout, bool train, bool bidirectional)\n"
            f" * (Tensor input, {hx_type}, tuple of Tensors params, bool has_biases, int num_layers, float dropout, "
            f"bool train, bool bidirectional, bool batch_first)\n")
    return bound, names is _DATA_NAMES


def _check_rank(t, rank):
    if t.dim() < rank:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-max(t.dim(), 1)}, "
                         f"{max(t.dim(), 1) - 1}], but got {rank - 1})")


def _layers(fname, mode, args, kwargs):
    a, packed = _parse(fname, args, kwargs)
    hx = a["hx"]
    if mode == "LSTM":
        if isinstance(hx, Tensor) or len(hx) != 2:
            raise RuntimeError("lstm expects two hidden states")
        hidden, cell = hx
        proj_size = hidden.size(2) if hidden.size(2) != cell.size(2) else 0
    else:
        hidden, cell, proj_size = hx, None, 0
    recurrence = _Recurrence(mode, a["params"], a["has_biases"], a["num_layers"], a["dropout"], a["train"],
                             a["bidirectional"], False if packed else a["batch_first"], proj_size)
    if packed:
        data = a["data"]
        _check_rank(data, 2)
        output, h_n, c_n = recurrence._run_packed(data, a["batch_sizes"], hidden, cell)
    else:
        input = a["input"]
        _check_rank(input, 3)
        output, h_n, c_n = recurrence._run(input, hidden, cell)
    return (output, h_n, c_n) if mode == "LSTM" else (output, h_n)


def lstm(*args, **kwargs):
    """lstm(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first) ->
    (output, h_n, c_n); or lstm(data, batch_sizes, hx, params, has_biases, num_layers, dropout, train,
    bidirectional) on packed data. A multi-layer LSTM (``nn.LSTM``'s recurrence) with ``hx = (h_0, c_0)`` and the
    flat weight list ``params``; projections when h_0's feature size differs from c_0's."""
    return _layers("lstm", "LSTM", args, kwargs)


def gru(*args, **kwargs):
    """gru(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first) -> (output, h_n);
    or gru(data, batch_sizes, hx, params, ...) on packed data. A multi-layer GRU (``nn.GRU``'s recurrence)."""
    return _layers("gru", "GRU", args, kwargs)


def rnn_tanh(*args, **kwargs):
    """rnn_tanh(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first) ->
    (output, h_n); or the packed form. A multi-layer Elman RNN with tanh (``nn.RNN``'s recurrence)."""
    return _layers("rnn_tanh", "RNN_TANH", args, kwargs)


def rnn_relu(*args, **kwargs):
    """rnn_relu(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first) ->
    (output, h_n); or the packed form. A multi-layer Elman RNN with relu (``nn.RNN``'s recurrence)."""
    return _layers("rnn_relu", "RNN_RELU", args, kwargs)


# --- one step --------------------------------------------------------------------------------------------------

def _cell_input_gates(input, states, w_ih, w_hh, b_ih, b_hh):
    """torch's cell checks (RNN.cpp's check_rnn_cell_forward_*), then x W_ih^T + b_ih."""
    if input.size(1) != w_ih.size(1):
        raise RuntimeError(f"input has inconsistent input_size: got {input.size(1)} expected {w_ih.size(1)}")
    for label, state in enumerate(states):
        _rnn._check_cell_state(input, state, w_hh.size(1), label)
    return F.linear(input, w_ih, b_ih)


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None) -> (h_1, c_1): one LSTM step (``nn.LSTMCell``'s)
    from ``hx = (h_0, c_0)``, gates in torch's order (input, forget, cell, output)."""
    if isinstance(hx, Tensor) or len(hx) != 2:
        raise RuntimeError("lstm_cell expects two hidden states")
    input_gates = _cell_input_gates(input, hx, w_ih, w_hh, b_ih, b_hh)
    return _rnn._lstm_step(input_gates, hx[0], hx[1], w_hh, b_hh)


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None) -> Tensor: one GRU step (``nn.GRUCell``'s)."""
    return _rnn._gru_step(_cell_input_gates(input, (hx,), w_ih, w_hh, b_ih, b_hh), hx, w_hh, b_hh)


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None) -> Tensor:
    tanh(input W_ih^T + b_ih + hx W_hh^T + b_hh)."""
    return _rnn._rnn_step(_cell_input_gates(input, (hx,), w_ih, w_hh, b_ih, b_hh), hx, w_hh, b_hh, "tanh")


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None) -> Tensor:
    relu(input W_ih^T + b_ih + hx W_hh^T + b_hh)."""
    return _rnn._rnn_step(_cell_input_gates(input, (hx,), w_ih, w_hh, b_ih, b_hh), hx, w_hh, b_hh, "relu")
