"""Packed sequences: ``PackedSequence`` and the functions that pack, pad and unpad variable-length batches.

A packed sequence stores a batch of sequences sorted by decreasing length, time-major, without padding:
``data`` holds step 0 of every sequence, then step 1 of every sequence still running, and so on;
``batch_sizes`` (always an int64 CPU tensor) says how many sequences run at each step. ``sorted_indices`` and
``unsorted_indices`` map between the caller's batch order and the sorted one.

Everything is built from differentiable tensor ops (slicing, ``cat``, ``index_select`` and copies into slices),
so gradients flow through packing and padding on every device. Argument checks, error types and messages are
torch's.
"""
from __future__ import annotations

import numbers
from collections.abc import Iterable
from typing import NamedTuple

from ...core.c10 import dtype as D
from ...core.c10.dtype import SCALAR_TYPE_NAME, int64
from ...core.factories import as_tensor, tensor
from ...api.operators import cat, sort
from ...api.factories import arange, empty_like, full
from ...core.tensor import Tensor
from ...api.tensor_methods import _parse_to

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
           "unpad_sequence", "pack_sequence", "unpack_sequence"]


class PackedSequence_(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


def bind(optional, fn):
    if optional is None:
        return None
    return fn(optional)


class PackedSequence(PackedSequence_):
    """The data and ``batch_sizes`` of a packed batch of sequences (see the module docstring).

    Instances are meant to be made by ``pack_padded_sequence`` or ``pack_sequence``, not by hand.
    ``data`` may be on any device and of any dtype; ``sorted_indices`` and ``unsorted_indices`` are int64 tensors
    on ``data``'s device; ``batch_sizes`` is always an int64 CPU tensor.
    """

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        return super().__new__(cls, *_packed_sequence_init_args(data, batch_sizes, sorted_indices,
                                                                 unsorted_indices))

    def to(self, *args, **kwargs):
        """Convert ``data`` as ``Tensor.to`` does (the indices follow it to its device); returns ``self`` when
        ``data`` is unchanged."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        _, _, non_blocking, _, memory_format = _parse_to(args, dict(kwargs))

        def call_to(t):
            return t.to(data.device, non_blocking=non_blocking, memory_format=memory_format)

        sorted_indices = bind(self.sorted_indices, call_to)
        unsorted_indices = bind(self.unsorted_indices, call_to)
        return type(self)(data, self.batch_sizes, sorted_indices, unsorted_indices)

    def _to_device_type(self, device_type, args, kwargs):
        ex = tensor((), dtype=self.data.dtype, device=self.data.device).to(*args, **kwargs)
        if ex.device.type == device_type:
            return self.to(*args, **kwargs)
        kwargs["device"] = device_type
        return self.to(*args, **kwargs)

    def cpu(self, *args, **kwargs):
        return self._to_device_type("cpu", args, kwargs)

    def double(self):
        return self.to(dtype=D.float64)

    def float(self):
        return self.to(dtype=D.float32)

    def half(self):
        return self.to(dtype=D.float16)

    def long(self):
        return self.to(dtype=D.int64)

    def int(self):
        return self.to(dtype=D.int32)

    def short(self):
        return self.to(dtype=D.int16)

    def char(self):
        return self.to(dtype=D.int8)

    def byte(self):
        return self.to(dtype=D.uint8)

    @property
    def is_cuda(self):
        """Whether ``data`` is on a CUDA device."""
        return self.data.is_cuda


def _packed_sequence_init_args(data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
    # unsorted_indices, when given, is trusted to be the inverse of sorted_indices.
    if unsorted_indices is None:
        unsorted_indices = invert_permutation(sorted_indices)

    # PackedSequence(data, batch_sizes, sorted_indices)
    if batch_sizes is not None:
        if batch_sizes.device.type != "cpu":
            raise ValueError("batch_sizes should always be on CPU. Instances of PackedSequence should never be "
                             "created manually. They should be instantiated by functions like pack_sequence and "
                             "pack_padded_sequences in nn.utils.rnn. "
                             "https://pytorch.org/docs/stable/nn.html#torch.nn.utils.rnn.pack_sequence")
        return data, batch_sizes, sorted_indices, unsorted_indices

    # PackedSequence((data, batch_sizes), *, sorted_indices)
    if not (isinstance(data, (list, tuple)) and len(data) == 2):
        raise AssertionError("Expected data to be a list or tuple of length 2")
    return data[0], data[1], sorted_indices, unsorted_indices


def _packed_sequence_init(data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
    data, batch_sizes, sorted_indices, unsorted_indices = _packed_sequence_init_args(
        data, batch_sizes, sorted_indices, unsorted_indices)
    return PackedSequence(data, batch_sizes, sorted_indices, unsorted_indices)


def invert_permutation(permutation):
    """The inverse of a permutation of ``0..n-1`` (None for None)."""
    if permutation is None:
        return None
    output = empty_like(permutation)
    output.scatter_(0, permutation, arange(0, permutation.numel(), device=permutation.device))
    return output


def _check_long_tensor(t):
    if not (t.dim() == 1 and t.device.type == "cpu" and t.dtype is int64):
        raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got {t.dim()}D {t.device} "
                           f"{SCALAR_TYPE_NAME[t.dtype]} tensor")


def _pack_padded(input, lengths_t, batch_first):
    """Sorted padded input -> (packed data, batch_sizes), as torch's ``_pack_padded_sequence``."""
    if input.numel() <= 0:
        raise RuntimeError("Cannot pack empty tensors.")
    if batch_first:
        input = input.transpose(0, 1)
    _check_long_tensor(lengths_t)
    batch_size = input.size(1)
    if lengths_t.size(0) != batch_size:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {lengths_t.size(0)} "
                           f"(batch_size={batch_size})")
    lengths = lengths_t.tolist()
    if lengths[batch_size - 1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' that "
                           "is <= 0")
    for i in range(batch_size - 1):
        if lengths[batch_size - 1 - i] > lengths[batch_size - 2 - i]:
            raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You "
                               "can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to "
                               "sidestep this requirement if you do not need ONNX exportability.")
    # Scan the sequences from the shortest: each time the length grows, the block of steps [prev_l, l) holds the
    # first ``batch_size - i`` sequences, and is taken whole.
    step_shape = (-1, *input.shape[2:])
    steps, batch_sizes = [], []
    prev_l = 0
    for i in range(batch_size):
        length = lengths[batch_size - 1 - i]
        if length > prev_l:
            current_batch_size = batch_size - i
            steps.append(input[prev_l:length, :current_batch_size].reshape(step_shape))
            batch_sizes.extend([current_batch_size] * (length - prev_l))
            prev_l = length
    return cat(steps), tensor(batch_sizes, dtype=int64)


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded batch of variable-length sequences.

    ``input`` is ``T x B x *`` (``B x T x *`` with ``batch_first``); ``lengths`` (a list or a 1-D CPU tensor)
    gives each sequence's length. With ``enforce_sorted`` the lengths must decrease; otherwise the batch is sorted
    here and ``sorted_indices`` records the order.
    """
    if not isinstance(lengths, Tensor):
        lengths = as_tensor(lengths, dtype=int64, device="cpu")
    else:
        lengths = lengths.to(dtype=int64)

    if enforce_sorted:
        sorted_indices = None
    else:
        lengths, sorted_indices = sort(lengths, descending=True)
        sorted_indices = sorted_indices.to(input.device)
        batch_dim = 0 if batch_first else 1
        input = input.index_select(batch_dim, sorted_indices)

    data, batch_sizes = _pack_padded(input, lengths, batch_first)
    return _packed_sequence_init(data, batch_sizes, sorted_indices, None)


def _pad_packed(data, batch_sizes_t, batch_first, padding_value, total_length):
    """Packed data -> (padded output, lengths), as torch's ``_pad_packed_sequence``, in sorted order."""
    _check_long_tensor(batch_sizes_t)
    batch_sizes = batch_sizes_t.tolist()
    max_batch_size = batch_sizes[0]
    max_real_seq_length = len(batch_sizes)
    max_seq_length = max_real_seq_length
    if total_length > 0:
        if total_length < max_seq_length:
            raise RuntimeError(f"Expected total_length to be at least the length of the longest sequence in input, "
                               f"but got total_length={total_length} and max sequence length being {max_seq_length}")
        max_seq_length = total_length
    trailing = tuple(data.shape[1:])
    output = full((max_seq_length, max_batch_size, *trailing), padding_value, dtype=data.dtype, device=data.device)

    lengths = [0] * max_batch_size
    position = max_batch_size - 1
    data_offset = 0
    prev_batch_size = max_batch_size
    prev_i = 0
    for i in range(max_real_seq_length + 1):
        batch_size = batch_sizes[i] if i != max_real_seq_length else 0
        if batch_size != prev_batch_size:
            # output[prev_i:i, :prev_batch_size] = the next (i - prev_i) * prev_batch_size rows of data
            size = prev_batch_size * (i - prev_i)
            block = data[data_offset:data_offset + size].view(i - prev_i, prev_batch_size, *trailing)
            output.narrow(0, prev_i, i - prev_i).narrow(1, 0, prev_batch_size).copy_(block)
            data_offset += size
            prev_i = i
        for _ in range(prev_batch_size - batch_size):
            lengths[position] = i
            position -= 1
        prev_batch_size = batch_size

    if batch_first:
        output = output.transpose(0, 1)
    return output, tensor(lengths, dtype=int64)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """Inverse of ``pack_padded_sequence``: returns the padded batch (``T x B x *``, or ``B x T x *`` with
    ``batch_first``) and each sequence's length, in the original batch order. ``total_length`` pads the time
    dimension to that length."""
    max_seq_length = sequence.batch_sizes.size(0)
    if total_length is not None:
        if total_length < max_seq_length:
            raise ValueError("Expected total_length to be at least the length of the longest sequence in input, but "
                             f"got total_length={total_length} and max sequence length being {max_seq_length}")
        max_seq_length = total_length
    padded_output, lengths = _pad_packed(sequence.data, sequence.batch_sizes, batch_first, padding_value,
                                         max_seq_length)
    unsorted_indices = sequence.unsorted_indices
    if unsorted_indices is not None:
        batch_dim = 0 if batch_first else 1
        return padded_output.index_select(batch_dim, unsorted_indices), lengths[unsorted_indices.cpu()]
    return padded_output, lengths


def _arg_type_error(name, position, expected, value):
    return TypeError(f"pad_sequence(): argument '{name}' (position {position}) must be {expected}, not "
                     f"{type(value).__name__}")


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack variable-length sequences (each ``L_i x *``) into one padded ``T x B x *`` tensor (``B x T x *`` with
    ``batch_first``), padding on ``padding_side`` ('right' or 'left') with ``padding_value``."""
    if not isinstance(sequences, Iterable):
        raise RuntimeError("pad_sequence: Expected iterable for input sequences, but got arg of type: "
                           f"{type(sequences)}")
    sequences = tuple(sequences)
    for i, seq in enumerate(sequences):
        if not isinstance(seq, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got {type(seq).__name__}")
    if not isinstance(batch_first, bool):
        raise _arg_type_error("batch_first", 2, "bool", batch_first)
    if isinstance(padding_value, Tensor) and padding_value.numel() == 1:
        padding_value = padding_value.item()
    if not isinstance(padding_value, numbers.Real):
        raise _arg_type_error("padding_value", 3, "float", padding_value)
    if not isinstance(padding_side, str):
        raise _arg_type_error("padding_side", 4, "str", padding_side)

    if len(sequences) == 0:
        raise RuntimeError("received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    if sequences[0].dim() == 0:
        raise RuntimeError("ArrayRef: invalid slice, N = 1; size = 0")
    trailing_dims = tuple(sequences[0].shape[1:])
    for seq in sequences:
        if seq.dim() == 0:
            raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    max_len = max(seq.size(0) for seq in sequences)
    out_dims = (len(sequences), max_len) if batch_first else (max_len, len(sequences))
    out = full((*out_dims, *trailing_dims), float(padding_value), dtype=sequences[0].dtype,
               device=sequences[0].device)
    for i, seq in enumerate(sequences):
        length = seq.size(0)
        start = max_len - length if padding_side == "left" else 0
        if batch_first:
            out.select(0, i).narrow(0, start, length).copy_(seq)
        else:
            out.narrow(0, start, length).select(1, i).copy_(seq)
    return out


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """Split a padded batch back into its sequences, each cut to its length (``lengths`` is a tensor)."""
    unpadded_sequences = []
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    max_length = padded_sequences.shape[1]
    idx = arange(max_length, device=lengths.device)
    for seq, length in zip(padded_sequences, lengths, strict=True):
        mask = idx < length
        unpadded_sequences.append(seq[mask])
    return unpadded_sequences


def pack_sequence(sequences, enforce_sorted=True):
    """Pack a list of variable-length sequences (each ``L_i x *``); with ``enforce_sorted`` they must come in
    decreasing length."""
    lengths = as_tensor([v.size(0) for v in sequences])
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """Inverse of ``pack_sequence``: the list of sequences, in the original order."""
    padded_sequences, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded_sequences, lengths, batch_first=True)
