"""Tensor-level kernels of nn.functional.pad: constant, reflection, replication and circular padding.

``pad`` picks the op torch's dispatcher picks; reflection / replication pads
have a forward and a backward op each (torch's names), and circular padding
decomposes into slices joined with cat.
"""
from __future__ import annotations

import numpy as np

from ..core.dispatch.ops_namespace import aten
from ..kernels import nn_padding as K
from . import common as C

_BOOL = np.dtype(np.bool_)


def _pad_pairs(pad):
    """[l, r, t, b, ...] -> ((l, r), (t, b), ...): the last dim first, as torch lists them."""
    return tuple((int(pad[2 * k]), int(pad[2 * k + 1])) for k in range(len(pad) // 2))


def constant_pad_nd(self, pad, value=0):
    """Pad trailing dims with ``value``; negative amounts crop instead."""
    n = len(pad)
    ndim = self.dim()
    if n % 2:
        raise RuntimeError(f"Length of pad must be even but instead it equals {n}")
    if n // 2 > ndim:
        raise RuntimeError(f"Length of pad should be no more than twice the number of dimensions of the input. Pad "
                           f"length is {n}while the input has {ndim}dimensions.")
    pairs = _pad_pairs(pad)
    a = self._a
    index = [slice(None)] * ndim
    grow = []
    for k, (before, after) in enumerate(pairs):
        axis = ndim - 1 - k
        start, stop = 0, a.shape[axis]
        if before < 0:
            start = -before
            if stop - start < 0:
                raise RuntimeError("narrow(): length must be non-negative.")
        if after < 0:
            stop += after
            if stop - start < 0:
                raise RuntimeError("narrow(): length must be non-negative.")
        index[axis] = slice(start, stop)
        grow.append((max(before, 0), max(after, 0)))
    cropped = a[tuple(index)]
    if not any(b or e for b, e in grow):
        return C.make(cropped.copy(), self._device)
    fill = C.checked_scalar(value, a.dtype)
    return C.make(K.constant_pad(cropped, grow, fill), self._device)


_PAD_RANKS = {1: (2, 3), 2: (3, 4), 3: (4, 5)}


def _check_pad_input(self, nd, padding, op_name, mode):
    """torch's checks of a reflection/replication pad: rank, empty dims, pad sizes, output size."""
    shape = tuple(self._a.shape)
    if len(padding) != 2 * nd:
        raise RuntimeError(f"{op_name}(): argument 'padding' must be of length {2 * nd}, got {len(padding)}")
    low, high = _PAD_RANKS[nd]
    batch = len(shape) == high
    if len(shape) not in (low, high) or any(s == 0 for s in shape[1 if batch else 0:]):
        raise RuntimeError(f"Expected {low}D or {high}D (batch mode) tensor with possibly 0 batch size and other "
                           f"non-zero dimensions for input, but got: {list(shape)}")
    if self._a.dtype == _BOOL:
        raise NotImplementedError(f"\"{op_name}\" not implemented for 'Bool'")
    pairs = _pad_pairs(padding)
    if mode == "reflect":
        for k, (before, after) in enumerate(pairs):
            axis = len(shape) - 1 - k
            if not (before < shape[axis] and after < shape[axis]):
                raise RuntimeError(f"Argument #{4 + 2 * k}: Padding size should be less than the corresponding input "
                                   f"dimension, but got: padding ({before}, {after}) at dimension {axis} of input "
                                   f"{list(shape)}")
    out = [shape[len(shape) - 1 - k] + b + e for k, (b, e) in enumerate(pairs)]
    if nd == 1:
        if out[0] < 1:
            raise RuntimeError(f"input (W: {shape[-1]}) is too small. Calculated output W: {out[0]}")
    else:
        full = list(shape[:len(shape) - nd]) + out[::-1]
        bad = next((s for s in full if s < 0), None)
        if bad is not None:
            raise RuntimeError(f"Trying to create tensor with negative dimension {bad}: {full}")
    return pairs


def _mode_pad(mode, nd, op_name):
    def forward(self, padding):
        pairs = _check_pad_input(self, nd, padding, op_name, mode)
        return C.make(K.pad_gather(self._a, pairs, mode), self._device)

    def backward(grad_output, self, padding):
        dev = C.same_device(grad_output, self)
        pairs = _pad_pairs(padding)
        return C.make(K.pad_scatter(grad_output._a, self._a.shape, pairs, mode), dev)

    forward.__name__ = op_name
    backward.__name__ = op_name + "_backward"
    return forward, backward


def _pad_circular(self, pad):
    """Circular padding as slices joined with cat (so autograd needs no kernel of its own).

    As in torch, negative amounts crop first and the wrap copies from the cropped tensor.
    """
    pairs = _pad_pairs(pad)
    for k in reversed(range(len(pairs))):
        before, after = pairs[k]
        size = self.shape[self.dim() - 1 - k]
        if before > size or after > size:
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if size + before + after < 0:
            raise RuntimeError("Negative padding value is resulting in an empty dimension")
    out = self
    for k, (before, after) in enumerate(pairs):
        d = self.dim() - 1 - k
        size = out.shape[d]
        if size + before + after == 0:
            out = aten.narrow.default(out, d, 0, 0)
            continue
        start, stop = max(-before, 0), size - max(-after, 0)
        core = aten.narrow.default(out, d, start, max(stop - start, 0)) if (start, stop) != (0, size) else out
        kept = core.shape[d]
        if before > kept or after > kept:
            raise RuntimeError("Padding value causes wrapping around more than once.")
        parts = []
        if before > 0:
            parts.append(aten.narrow.default(core, d, kept - before, before))
        parts.append(core)
        if after > 0:
            parts.append(aten.narrow.default(core, d, 0, after))
        out = parts[0] if len(parts) == 1 else aten.cat.default(parts, d)
    return out if out is not self else aten.clone.default(self)


_NON_CONSTANT_MODES = ("reflect", "replicate", "circular")


def pad(self, pad, mode="constant", value=None):
    """``F.pad``'s dispatcher: constant_pad_nd, or the reflection / replication / circular kernels."""
    if mode not in ("constant",) + _NON_CONSTANT_MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    n = len(pad)
    ndim = self.dim()
    if n % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if n > ndim * 2:
        raise RuntimeError(f"Padding length should be less than or equal to two times the input dimension but got "
                           f"padding length {n} and input of dimension {ndim}")
    if mode == "constant":
        return aten.constant_pad_nd.default(self, pad, 0.0 if value is None else value)
    if value is not None and value != 0:
        raise RuntimeError(f"Padding mode \"{mode}\" doesn't take in value argument")
    nd = n // 2
    if nd in _PAD_RANKS and ndim in _PAD_RANKS[nd]:
        if mode == "circular":
            return aten._pad_circular.default(self, pad)
        packet = getattr(aten, f"{'reflection' if mode == 'reflect' else 'replication'}_pad{nd}d")
        return packet.default(self, pad)
    raise NotImplementedError(
        f"Padding size {n} is not supported for {ndim}D input tensor.\n"
        "Supported combinations for non-constant padding:\n"
        "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
        "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
        "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")


_reflection_1d, _reflection_1d_backward = _mode_pad("reflect", 1, "reflection_pad1d")
_reflection_2d, _reflection_2d_backward = _mode_pad("reflect", 2, "reflection_pad2d")
_reflection_3d, _reflection_3d_backward = _mode_pad("reflect", 3, "reflection_pad3d")
_replication_1d, _replication_1d_backward = _mode_pad("replicate", 1, "replication_pad1d")
_replication_2d, _replication_2d_backward = _mode_pad("replicate", 2, "replication_pad2d")
_replication_3d, _replication_3d_backward = _mode_pad("replicate", 3, "replication_pad3d")

KERNELS = {
    "constant_pad_nd": constant_pad_nd,
    "reflection_pad1d": _reflection_1d, "reflection_pad1d_backward": _reflection_1d_backward,
    "reflection_pad2d": _reflection_2d, "reflection_pad2d_backward": _reflection_2d_backward,
    "reflection_pad3d": _reflection_3d, "reflection_pad3d_backward": _reflection_3d_backward,
    "replication_pad1d": _replication_1d, "replication_pad1d_backward": _replication_1d_backward,
    "replication_pad2d": _replication_2d, "replication_pad2d_backward": _replication_2d_backward,
    "replication_pad3d": _replication_3d, "replication_pad3d_backward": _replication_3d_backward,
}

# Ops that decompose into other ops (CompositeImplicitAutograd): autograd comes from the parts.
COMPOSITE_IMPLICIT = {"pad": pad, "_pad_circular": _pad_circular}
