"""Recurrent layers (``RNN``, ``LSTM``, ``GRU``) and their one-step cells.

They are composed from differentiable tensor ops (linear, sigmoid, tanh, relu, stack, cat, chunk, dropout); an LSTM
or GRU step in float32 / float64 runs its gates and state update as one fused op (``_thnn_fused_lstm_cell`` /
``_thnn_fused_gru_cell``, one autograd node), which rounds exactly as the composed ops do, and a whole unpacked
LSTM or GRU layer runs as one op (``mkldnn_rnn_layer``, one autograd node) with those steps' numbers; so does a
layer on the npu under float16 autocast, with the autocast steps' numbers (16-bit input and weights, float32
states). Parameter names, shapes, gate order, initialisation, argument checks and error messages are torch's, so a
torch state dict loads and gives torch's outputs.

The layers also take a ``PackedSequence``: each step then runs on the sequences still going, and each sequence's
final state is taken at its own last step.
"""
from __future__ import annotations

import math
import numbers
import warnings

from ...core.autocast.state import cached_cast, get_autocast_dtype, is_any_autocast_enabled, is_autocast_enabled
from ...core.c10.dispatch_keys import DispatchKey
from ...core.c10.dtype import SCALAR_TYPE_NAME, float16, float32, float64
from ...core.dispatch.ops_namespace import aten
from ...api.operators import cat, stack
from ...api.factories import empty, zeros
from .. import functional as F
from .. import init
from ..parameter import Parameter
from ..utils.rnn import PackedSequence
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES_PER_MODE = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


# --- one time step of each recurrence, shared by the layers and the cells ----------------------------------------
# ``input_gates`` is the input's projection (x W_ih^T + b_ih), computed by the caller: the layers project a whole
# sequence with one matmul before stepping through time. The LSTM and GRU steps run the fused cell ops (one op and
# one autograd node for the gates and the state update) when those compute exactly what the composed ops below do.

_FUSED_DTYPES = (float32, float64)
_fused_lstm_cell = aten._thnn_fused_lstm_cell.default
_fused_gru_cell = aten._thnn_fused_gru_cell.default
_t = aten.t.default
# torch's single-layer recurrence op (mkldnn_rnn_layer) and its mode numbers
_layer = aten.mkldnn_rnn_layer.default
_LAYER_MODES = {"LSTM": 2, "GRU": 3}
_BATCHED = 1 << DispatchKey.FuncTorchBatched


def _hidden_gates(hidden, w_hh, b_hh, b_hh_column):
    """h W_hh^T + b_hh. A layer hands in ``b_hh_column`` (b_hh as a column, made once per sequence) and gets the
    product transposed, (W_hh h^T + b_hh)^T: the same numbers as F.linear's addmm (each element is the same dot
    product plus the same bias), but BLAS multiplies a row-major W_hh by a small h^T about twice as fast as a small
    h by the transposed W_hh, and the gradients (g^T h and g W_hh) are the very products linear's backward runs."""
    if b_hh_column is None:
        return F.linear(hidden, w_hh, b_hh)
    return _t(aten.addmm.default(b_hh_column, w_hh, _t(hidden)))


def _rnn_step(input_gates, hidden, w_hh, b_hh, nonlinearity, b_hh_column=None):
    pre_activation = input_gates + _hidden_gates(hidden, w_hh, b_hh, b_hh_column)
    return pre_activation.tanh() if nonlinearity == "tanh" else F.relu(pre_activation)


def _fusable(gates, *states):
    """Whether a fused cell op computes this step exactly as the composed ops would: one float32 / float64 dtype
    (16-bit steps round after every op, and under autocast the gates and states may differ in dtype)."""
    dtype = gates.dtype
    return dtype in _FUSED_DTYPES and all(s.dtype is dtype for s in states)


def _layer_applies(*tensors):
    """Whether the whole-layer op computes this layer: the fused cells' dtypes (``_fusable``), no autocast (whose
    casts the per-step projections apply), and no vmap (whose batching rules are the cells')."""
    present = [t for t in tensors if t is not None]
    return not is_any_autocast_enabled() and _fusable(*present) and not any(t._ks & _BATCHED for t in present)


def _autocast_layer_arguments(input, weights, states):
    """Under autocast on the input's device, the input and weights cast as the step's F.linear casts them (the
    cached casts of the weights), when the whole-layer op computes that step: an npu layer (the cpu's autocast
    would cast the op's states too) under float16 autocast with float32 input, weights and states. None
    otherwise."""
    device_type = input._device._type      # as core stores it (the npu's is PrivateUse1's)
    if device_type == "cpu" or not is_autocast_enabled(input.device.type):
        return None
    present = [t for t in (input, *weights, *states) if t is not None]
    if any(t.dtype is not float32 or t._ks & _BATCHED for t in present):
        return None
    low = get_autocast_dtype(device_type)
    if low is not float16:      # bfloat16 steps keep the single ops
        return None
    return [None if t is None else cached_cast(low, t, device_type, low) for t in (input, *weights)]


def _lstm_step(input_gates, hidden, cell, w_hh, b_hh, w_hr=None, b_hh_column=None):
    hidden_gates = _hidden_gates(hidden, w_hh, b_hh, b_hh_column)
    if _fusable(input_gates, hidden_gates, cell):
        hidden, cell, _ = _fused_lstm_cell(input_gates, hidden_gates, cell)
        return (hidden if w_hr is None else F.linear(hidden, w_hr)), cell
    gates = input_gates + hidden_gates
    in_gate, forget_gate, cell_gate, out_gate = gates.chunk(4, -1)
    cell = forget_gate.sigmoid() * cell + in_gate.sigmoid() * cell_gate.tanh()
    hidden = out_gate.sigmoid() * cell.tanh()
    if w_hr is not None:
        hidden = F.linear(hidden, w_hr)
    return hidden, cell


def _gru_step(input_gates, hidden, w_hh, b_hh, b_hh_column=None):
    hidden_gates = _hidden_gates(hidden, w_hh, b_hh, b_hh_column)
    if _fusable(input_gates, hidden_gates, hidden):
        return _fused_gru_cell(input_gates, hidden_gates, hidden)[0]
    input_reset, input_update, input_new = input_gates.chunk(3, -1)
    hidden_reset, hidden_update, hidden_new = hidden_gates.chunk(3, -1)
    reset_gate = (input_reset + hidden_reset).sigmoid()
    update_gate = (input_update + hidden_update).sigmoid()
    # The reset gate scales W_hn h + b_hn (not h), as torch (and cuDNN) define it.
    new_gate = (input_new + reset_gate * hidden_new).tanh()
    # (1 - z) * n + z * h, written as torch evaluates it
    return new_gate + update_gate * (hidden - new_gate)


class RNNBase(Module):
    """What ``RNN``, ``LSTM`` and ``GRU`` share: parameters, argument checks and the layer/direction loop."""

    __constants__ = ["mode", "input_size", "hidden_size", "num_layers", "bias", "batch_first", "dropout",
                     "bidirectional", "proj_size"]

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        num_directions = 2 if bidirectional else 1

        if not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 or isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an element "
                             "being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                          stacklevel=2)
        if not isinstance(bias, bool):
            raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
        if not isinstance(batch_first, bool):
            raise TypeError(f"batch_first should be of type bool, got: {type(batch_first).__name__}")
        if not isinstance(input_size, int):
            raise TypeError(f"input_size should be of type int, got: {type(input_size).__name__}")
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        if not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in _GATES_PER_MODE:
            raise ValueError("Unrecognized RNN mode: " + mode)
        gate_size = _GATES_PER_MODE[mode] * hidden_size

        self._flat_weights_names = []
        self._all_weights = []
        real_hidden_size = proj_size if proj_size > 0 else hidden_size
        for layer in range(num_layers):
            layer_input_size = input_size if layer == 0 else real_hidden_size * num_directions
            for direction in range(num_directions):
                suffix = "_reverse" if direction == 1 else ""
                shapes = {"weight_ih": (gate_size, layer_input_size), "weight_hh": (gate_size, real_hidden_size)}
                if bias:
                    shapes.update(bias_ih=(gate_size,), bias_hh=(gate_size,))
                if proj_size > 0:
                    shapes["weight_hr"] = (proj_size, hidden_size)
                names = []
                for kind, shape in shapes.items():
                    name = f"{kind}_l{layer}{suffix}"
                    setattr(self, name, Parameter(empty(shape, **factory_kwargs)))
                    names.append(name)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    @property
    def _flat_weights(self):
        # Looked up on every access, so replaced or moved parameters are always the ones used.
        return [getattr(self, name) if hasattr(self, name) else None for name in self._flat_weights_names]

    @property
    def all_weights(self):
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def flatten_parameters(self):
        """A no-op: the weights are never packed into one fused buffer (that is a cuDNN layout)."""

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    # --- argument checks, with torch's names and messages ---------------------------------------------------------

    def check_input(self, input, batch_sizes):
        weight_dtype = self._flat_weights[0].dtype
        if input.dtype != weight_dtype and not is_any_autocast_enabled():
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype ({weight_dtype}). "
                             f"Convert input: input.to({weight_dtype}), or convert model: model.to({input.dtype})")
        expected_input_dim = 2 if batch_sizes is not None else 3
        if input.dim() != expected_input_dim:
            raise RuntimeError(f"input must have {expected_input_dim} dimensions, got {input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got "
                               f"{input.size(-1)}")

    def get_expected_hidden_size(self, input, batch_sizes):
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        num_directions = 2 if self.bidirectional else 1
        real_hidden_size = self.proj_size if self.proj_size > 0 else self.hidden_size
        return self.num_layers * num_directions, mini_batch, real_hidden_size

    def check_hidden_size(self, hx, expected_hidden_size, msg="Expected hidden size {}, got {}"):
        if hx.size() != expected_hidden_size:
            raise RuntimeError(msg.format(expected_hidden_size, list(hx.size())))

    def check_forward_args(self, input, hidden, batch_sizes):
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx, permutation):
        return hx if permutation is None else hx.index_select(1, permutation)

    # --- the shared forward ---------------------------------------------------------------------------------------

    # torch names the layer in this message (RNN's says "tensor instead", LSTM's and GRU's just "instead").
    _input_rank_message = "RNN: Expected input to be 2D or 3D, got {}D tensor instead"

    def _prepare_input(self, input):
        """Check the input's rank; returns it batched, and whether it came batched."""
        if input.dim() not in (2, 3):
            raise ValueError(self._input_rank_message.format(input.dim()))
        is_batched = input.dim() == 3
        if not is_batched:
            input = input.unsqueeze(0 if self.batch_first else 1)
        return input, is_batched

    def _zero_state(self, input, size):
        batch = input.size(0) if self.batch_first else input.size(1)
        num_directions = 2 if self.bidirectional else 1
        return zeros((self.num_layers * num_directions, batch, size), dtype=input.dtype, device=input.device)

    def _zero_packed_state(self, data, batch_sizes, size):
        num_directions = 2 if self.bidirectional else 1
        return zeros((self.num_layers * num_directions, int(batch_sizes[0]), size), dtype=data.dtype,
                     device=data.device)

    def _run(self, input, hidden, cell=None):
        """All layers and directions over a batched input; ``cell`` is the LSTM's cell state, None otherwise.

        Returns the last layer's output (in the input's layout) and the final hidden (and cell) states, stacked
        layer-major, direction-minor, as torch lays out h_n.
        """
        seq_dim = 1 if self.batch_first else 0
        if input.size(seq_dim) == 0:
            raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
        layer_input = input.transpose(0, 1) if self.batch_first else input  # time-major from here on
        num_directions = 2 if self.bidirectional else 1
        weights_per_direction = self.all_weights
        final_hidden, final_cell = [], []
        for layer in range(self.num_layers):
            if layer > 0 and self.dropout > 0 and self.training:
                layer_input = F.dropout(layer_input, self.dropout, True)
            outputs = []
            for direction in range(num_directions):
                index = layer * num_directions + direction
                output, h_last, c_last = self._run_direction(
                    layer_input, hidden[index], None if cell is None else cell[index],
                    weights_per_direction[index], reverse=direction == 1)
                outputs.append(output)
                final_hidden.append(h_last)
                final_cell.append(c_last)
            layer_input = outputs[0] if num_directions == 1 else cat(outputs, 2)
        output = layer_input.transpose(0, 1) if self.batch_first else layer_input
        return output, stack(final_hidden), None if cell is None else stack(final_cell)

    def _step(self, input_gates, hidden, cell, w_hh, b_hh, w_hr, b_hh_column=None):
        if self.mode == "LSTM":
            return _lstm_step(input_gates, hidden, cell, w_hh, b_hh, w_hr, b_hh_column)
        if self.mode == "GRU":
            return _gru_step(input_gates, hidden, w_hh, b_hh, b_hh_column), None
        return _rnn_step(input_gates, hidden, w_hh, b_hh, "tanh" if self.mode == "RNN_TANH" else "relu",
                         b_hh_column), None

    @staticmethod
    def _direction_weights(weights, bias, proj_size):
        w_ih, w_hh = weights[0], weights[1]
        b_ih, b_hh = (weights[2], weights[3]) if bias else (None, None)
        w_hr = weights[-1] if proj_size > 0 else None
        return w_ih, w_hh, b_ih, b_hh, w_hr

    def _run_direction(self, input, hidden, cell, weights, reverse):
        w_ih, w_hh, b_ih, b_hh, w_hr = self._direction_weights(weights, self.bias, self.proj_size)
        layer = self.mode in _LAYER_MODES and w_hr is None
        if layer and is_any_autocast_enabled():
            cast = _autocast_layer_arguments(input, (w_ih, w_hh, b_ih, b_hh), (hidden, cell))
            if cast is not None:
                # the autocast steps as one op: 16-bit input and weights, float32 states, the steps' roundings
                input, w_ih, w_hh, b_ih, b_hh = cast
                layer = "autocast"
        if layer == "autocast" or layer and _layer_applies(input, w_ih, w_hh, b_ih, b_hh, hidden, cell):
            # the whole recurrence as one op and one autograd node; the same numbers as the steps below
            output, hidden, cell, _ = _layer(input, w_ih, w_hh, w_ih if b_ih is None else b_ih,
                                             w_hh if b_hh is None else b_hh, hidden,
                                             hidden if cell is None else cell, reverse, [], _LAYER_MODES[self.mode],
                                             w_hh.shape[1], 1, b_ih is not None, self.bidirectional, False,
                                             self.training)
            return output, hidden, None if self.mode == "GRU" else cell
        # The input's contribution to every step in one matmul over all (time, batch) rows, as torch's CPU
        # recurrence does; only the recurrent part stays in the loop.
        steps_count, batch = input.shape[0], input.shape[1]
        input_gates = F.linear(input.reshape(steps_count * batch, input.shape[2]), w_ih, b_ih)
        input_gates = input_gates.view(steps_count, batch, input_gates.shape[1]).unbind(0)
        steps = range(len(input_gates) - 1, -1, -1) if reverse else range(len(input_gates))
        outputs = [None] * len(input_gates)
        # the hidden projection transposed (see _hidden_gates); under autocast each step's F.linear keeps its casts
        b_hh_column = None if b_hh is None or is_any_autocast_enabled() else b_hh.unsqueeze(1)
        step = self._step
        for t in steps:
            hidden, cell = step(input_gates[t], hidden, cell, w_hh, b_hh, w_hr, b_hh_column)
            outputs[t] = hidden
        return stack(outputs), hidden, cell

    def _run_packed(self, data, batch_sizes, hidden, cell=None):
        """All layers and directions over packed ``data`` (sorted batch order); ``cell`` as in ``_run``.

        Returns the last layer's packed output and the final states, each sequence's taken at its last step.
        """
        batch_sizes = batch_sizes.tolist()
        num_directions = 2 if self.bidirectional else 1
        weights_per_direction = self.all_weights
        final_hidden, final_cell = [], []
        layer_input = data
        for layer in range(self.num_layers):
            if layer > 0 and self.dropout > 0 and self.training:
                layer_input = F.dropout(layer_input, self.dropout, True)
            outputs = []
            for direction in range(num_directions):
                index = layer * num_directions + direction
                run = self._run_direction_packed_reverse if direction == 1 else self._run_direction_packed
                output, h_last, c_last = run(layer_input, batch_sizes, hidden[index],
                                             None if cell is None else cell[index], weights_per_direction[index])
                outputs.append(output)
                final_hidden.append(h_last)
                final_cell.append(c_last)
            layer_input = outputs[0] if num_directions == 1 else cat(outputs, 1)
        return layer_input, stack(final_hidden), None if cell is None else stack(final_cell)

    def _run_direction_packed(self, input, batch_sizes, hidden, cell, weights):
        """Forward in time: the batch shrinks as sequences end; an ending sequence's state is its final one."""
        w_ih, w_hh, b_ih, b_hh, w_hr = self._direction_weights(weights, self.bias, self.proj_size)
        input_gates = F.linear(input, w_ih, b_ih)
        outputs, ended_hidden, ended_cell = [], [], []
        offset = 0
        for batch_size in batch_sizes:
            if batch_size < hidden.size(0):  # rows batch_size.. have ended: keep their states
                ended_hidden.append(hidden[batch_size:])
                hidden = hidden[:batch_size]
                if cell is not None:
                    ended_cell.append(cell[batch_size:])
                    cell = cell[:batch_size]
            hidden, cell = self._step(input_gates[offset:offset + batch_size], hidden, cell, w_hh, b_hh, w_hr)
            outputs.append(hidden)
            offset += batch_size
        # The pieces were cut from the end of the batch: reversed, they are back in batch order.
        final_hidden = cat([hidden] + ended_hidden[::-1]) if ended_hidden else hidden
        final_cell = None
        if cell is not None:
            final_cell = cat([cell] + ended_cell[::-1]) if ended_cell else cell
        return cat(outputs), final_hidden, final_cell

    def _run_direction_packed_reverse(self, input, batch_sizes, hidden, cell, weights):
        """Backward in time: each sequence starts (from its initial state) at its own last step; the batch grows."""
        w_ih, w_hh, b_ih, b_hh, w_hr = self._direction_weights(weights, self.bias, self.proj_size)
        input_gates = F.linear(input, w_ih, b_ih)
        initial_hidden, initial_cell = hidden, cell
        offsets = [0]
        for batch_size in batch_sizes:
            offsets.append(offsets[-1] + batch_size)
        outputs = [None] * len(batch_sizes)
        running = 0
        hidden = cell = None
        for t in range(len(batch_sizes) - 1, -1, -1):
            batch_size = batch_sizes[t]
            if batch_size > running:  # sequences running..batch_size start here
                start_hidden = initial_hidden[running:batch_size]
                hidden = start_hidden if hidden is None else cat([hidden, start_hidden])
                if initial_cell is not None:
                    start_cell = initial_cell[running:batch_size]
                    cell = start_cell if cell is None else cat([cell, start_cell])
                running = batch_size
            hidden, cell = self._step(input_gates[offsets[t]:offsets[t + 1]], hidden, cell, w_hh, b_hh, w_hr)
            outputs[t] = hidden
        return cat(outputs), hidden, cell

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s


class _RNNOrGRU(RNNBase):
    """The forward of the layers whose state is a single hidden tensor."""

    def forward(self, input, hx=None):
        if isinstance(input, PackedSequence):
            data, batch_sizes, sorted_indices, unsorted_indices = input
            if hx is None:
                hx = self._zero_packed_state(data, batch_sizes, self.hidden_size)
            else:
                # hx comes in the caller's batch order; the packed batch is sorted by length.
                hx = self.permute_hidden(hx, sorted_indices)
            self.check_forward_args(data, hx, batch_sizes)
            output, hidden, _ = self._run_packed(data, batch_sizes, hx)
            output = PackedSequence(output, batch_sizes, sorted_indices, unsorted_indices)
            return output, self.permute_hidden(hidden, unsorted_indices)
        input, is_batched = self._prepare_input(input)
        if hx is not None:
            if not is_batched:
                if hx.dim() != 2:
                    raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got {hx.dim()}-D tensor")
                hx = hx.unsqueeze(1)
            elif hx.dim() != 3:
                raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got {hx.dim()}-D tensor")
        else:
            hx = self._zero_state(input, self.hidden_size)
        self.check_forward_args(input, hx, None)
        output, hidden, _ = self._run(input, hx)
        if not is_batched:
            output = output.squeeze(0 if self.batch_first else 1)
            hidden = hidden.squeeze(1)
        return output, hidden


class RNN(_RNNOrGRU):
    """An Elman RNN: h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh) (or relu).

    Arguments: ``input_size, hidden_size, num_layers=1, nonlinearity='tanh', bias=True, batch_first=False,
    dropout=0.0, bidirectional=False, device=None, dtype=None``.
    """

    def __init__(self, *args, **kwargs):
        # torch's signature: nonlinearity is the fourth positional argument, which RNNBase does not take.
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(mode, *args, **kwargs)


class GRU(_RNNOrGRU):
    """A gated recurrent unit, gates in torch's order (reset, update, new):
    r = sigmoid(W_ir x + b_ir + W_hr h + b_hr), z = sigmoid(W_iz x + b_iz + W_hz h + b_hz),
    n = tanh(W_in x + b_in + r * (W_hn h + b_hn)), h' = (1 - z) * n + z * h.

    Arguments: ``input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
    bidirectional=False, device=None, dtype=None``.
    """

    _input_rank_message = "GRU: Expected input to be 2D or 3D, got {}D instead"

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)


class LSTM(RNNBase):
    """A long short-term memory layer, gates in torch's order (input, forget, cell, output); with
    ``proj_size > 0`` the hidden state is projected by ``weight_hr`` to ``proj_size`` features.

    Arguments: ``input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
    bidirectional=False, proj_size=0, device=None, dtype=None``.
    """

    _input_rank_message = "LSTM: Expected input to be 2D or 3D, got {}D instead"

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(self, input, batch_sizes):
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        num_directions = 2 if self.bidirectional else 1
        return self.num_layers * num_directions, mini_batch, self.hidden_size

    def check_forward_args(self, input, hidden, batch_sizes):
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")

    def _check_packed_args(self, data, hx, batch_sizes):
        # torch checks a packed LSTM input in its kernel, not with check_forward_args: a dtype or feature-size
        # mismatch is reported by the input projection, with the matmul's message.
        weight = self._flat_weights[0]
        if data.dtype != weight.dtype and not is_any_autocast_enabled():
            _check_matmul_dtype(data, weight, self._flat_weights[2] if self.bias else None)
            F.linear(data, weight)  # raises the bias-free projection's message
        if data.dim() != 2:
            raise RuntimeError(f"input must have 2 dimensions, got {data.dim()}")
        if data.size(1) != weight.size(1):
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({data.size(0)}x{data.size(1)} and "
                               f"{weight.size(1)}x{weight.size(0)})")
        self.check_forward_args(data, hx, batch_sizes)

    def permute_hidden(self, hx, permutation):
        if permutation is None:
            return hx
        return hx[0].index_select(1, permutation), hx[1].index_select(1, permutation)

    def forward(self, input, hx=None):
        if isinstance(input, PackedSequence):
            data, batch_sizes, sorted_indices, unsorted_indices = input
            if hx is None:
                real_hidden_size = self.proj_size if self.proj_size > 0 else self.hidden_size
                hx = (self._zero_packed_state(data, batch_sizes, real_hidden_size),
                      self._zero_packed_state(data, batch_sizes, self.hidden_size))
            else:
                # (h_0, c_0) come in the caller's batch order; the packed batch is sorted by length.
                hx = self.permute_hidden(hx, sorted_indices)
            self._check_packed_args(data, hx, batch_sizes)
            output, hidden, cell = self._run_packed(data, batch_sizes, hx[0], hx[1])
            output = PackedSequence(output, batch_sizes, sorted_indices, unsorted_indices)
            return output, self.permute_hidden((hidden, cell), unsorted_indices)
        input, is_batched = self._prepare_input(input)
        if hx is None:
            real_hidden_size = self.proj_size if self.proj_size > 0 else self.hidden_size
            hx = (self._zero_state(input, real_hidden_size), self._zero_state(input, self.hidden_size))
        elif is_batched:
            if hx[0].dim() != 3 or hx[1].dim() != 3:
                raise RuntimeError("For batched 3-D input, hx and cx should also be 3-D but got "
                                   f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
        else:
            if hx[0].dim() != 2 or hx[1].dim() != 2:
                raise RuntimeError("For unbatched 2-D input, hx and cx should also be 2-D but got "
                                   f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
            hx = (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
        self.check_forward_args(input, hx, None)
        output, hidden, cell = self._run(input, hx[0], hx[1])
        if not is_batched:
            output = output.squeeze(0 if self.batch_first else 1)
            hidden, cell = hidden.squeeze(1), cell.squeeze(1)
        return output, (hidden, cell)


# --- cells -------------------------------------------------------------------------------------------------------

def _check_cell_state(input, state, hidden_size, label):
    if input.size(0) != state.size(0):
        raise RuntimeError(f"Input batch size {input.size(0)} doesn't match hidden{label} batch size {state.size(0)}")
    if state.size(1) != hidden_size:
        raise RuntimeError(f"hidden{label} has inconsistent hidden_size: got {state.size(1)}, expected {hidden_size}")


def _check_matmul_dtype(x, weight, bias):
    # torch's fused x W^T + b (addmm) names the mismatch this way; without a bias, linear's own check reports it.
    if bias is not None and x.dtype != weight.dtype and not is_any_autocast_enabled():
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got {SCALAR_TYPE_NAME[x.dtype]} and "
                           f"{SCALAR_TYPE_NAME[weight.dtype]}")


class RNNCellBase(Module):
    """What the cells share: ``weight_ih``, ``weight_hh`` and the optional ``bias_ih``, ``bias_hh``."""

    __constants__ = ["input_size", "hidden_size", "bias"]

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(empty((num_chunks * hidden_size, input_size), **factory_kwargs))
        self.weight_hh = Parameter(empty((num_chunks * hidden_size, hidden_size), **factory_kwargs))
        if bias:
            self.bias_ih = Parameter(empty(num_chunks * hidden_size, **factory_kwargs))
            self.bias_hh = Parameter(empty(num_chunks * hidden_size, **factory_kwargs))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _check_rank(self, input, states, state_label):
        name = type(self).__name__
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        for label, state in zip(state_label, states):
            if state.dim() not in (1, 2):
                raise ValueError(f"{name}: Expected {label} to be 1D or 2D, got {state.dim()}D instead")

    def _input_gates(self, input, states):
        """Check sizes and dtypes as torch's cell kernels do; returns x W_ih^T + b_ih."""
        if input.size(1) != self.weight_ih.size(1):
            raise RuntimeError(f"input has inconsistent input_size: got {input.size(1)} expected "
                               f"{self.weight_ih.size(1)}")
        for label, state in enumerate(states):
            _check_cell_state(input, state, self.weight_hh.size(1), label)
        _check_matmul_dtype(input, self.weight_ih, self.bias_ih)
        input_gates = F.linear(input, self.weight_ih, self.bias_ih)
        _check_matmul_dtype(states[0], self.weight_hh, self.bias_hh)
        return input_gates

    def _zero_state(self, input):
        return zeros((input.size(0), self.hidden_size), dtype=input.dtype, device=input.device)


class RNNCell(RNNCellBase):
    """One Elman RNN step: h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) (or relu)."""

    __constants__ = ["input_size", "hidden_size", "bias", "nonlinearity"]

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__(input_size, hidden_size, bias, num_chunks=1, **factory_kwargs)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        self._check_rank(input, () if hx is None else (hx,), ("hidden",))
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)
        hx = self._zero_state(input) if hx is None else (hx if is_batched else hx.unsqueeze(0))
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        input_gates = self._input_gates(input, (hx,))
        hidden = _rnn_step(input_gates, hx, self.weight_hh, self.bias_hh, self.nonlinearity)
        return hidden if is_batched else hidden.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step; returns ``(h', c')``."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__(input_size, hidden_size, bias, num_chunks=4, **factory_kwargs)

    def forward(self, input, hx=None):
        self._check_rank(input, () if hx is None else hx, ("hx[0]", "hx[1]"))
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)
        if hx is None:
            zero_state = self._zero_state(input)
            hx = (zero_state, zero_state)
        elif not is_batched:
            hx = (hx[0].unsqueeze(0), hx[1].unsqueeze(0))
        input_gates = self._input_gates(input, hx)
        hidden, cell = _lstm_step(input_gates, hx[0], hx[1], self.weight_hh, self.bias_hh)
        return (hidden, cell) if is_batched else (hidden.squeeze(0), cell.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step, torch's gate order and formula (see ``GRU``)."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__(input_size, hidden_size, bias, num_chunks=3, **factory_kwargs)

    def forward(self, input, hx=None):
        self._check_rank(input, () if hx is None else (hx,), ("hidden",))
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)
        hx = self._zero_state(input) if hx is None else (hx if is_batched else hx.unsqueeze(0))
        input_gates = self._input_gates(input, (hx,))
        hidden = _gru_step(input_gates, hx, self.weight_hh, self.bias_hh)
        return hidden if is_batched else hidden.squeeze(0)
