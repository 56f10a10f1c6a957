"""``conv_tbc``: the 1-d convolution of a time-major (time, batch, channels) sequence (torch.conv_tbc).

A composition over ``conv1d`` (so autograd and every device need nothing new): the sequence is turned to
(batch, channels, time), convolved and turned back. aten pads by ``pad`` steps on each side; a negative ``pad``
crops that many steps instead, as aten's kernel does.
"""
from __future__ import annotations

from ...core.tensor import Tensor
from .convolution import conv1d
from .convolution import _type_name  # the parser's name of an argument's type

__all__ = ["conv_tbc"]


def conv_tbc(input, weight, bias, pad=0):
    """conv_tbc(input, weight, bias, pad=0) -> Tensor: 1-d convolution over a (time, batch, in_channels) input with
    a (kernel_width, in_channels, out_channels) weight and an (out_channels,) bias, padded by ``pad`` time steps;
    the result is (time, batch, out_channels)."""
    for position, (name, v) in enumerate((("self", input), ("weight", weight), ("bias", bias)), 1):
        if not isinstance(v, Tensor):
            raise TypeError(f"conv_tbc(): argument '{name}' (position {position}) must be Tensor, not "
                            f"{_type_name(v)}")
    if isinstance(pad, bool) or not isinstance(pad, int):
        raise TypeError(f"conv_tbc(): argument 'pad' (position 4) must be int, not {_type_name(pad)}")
    if input.dim() != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.dim() != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, out_channels.")
    if bias.dim() != 1:
        raise RuntimeError("Bias must be 1-D")
    if input.size(2) != weight.size(1):
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if weight.size(2) != bias.size(0):
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    time, batch = input.size(0), input.size(1)
    out_channels = weight.size(2)
    out_time = time + 2 * pad - weight.size(0) + 1
    if out_time < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {out_time}: "
                           f"[{out_time}, {batch}, {out_channels}]")
    if pad < 0:   # aten reads only the steps -pad .. time + pad
        input, pad = input[-pad:time + pad], 0
    if out_time == 0:
        return input.new_zeros((0, batch, out_channels))
    out = conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, padding=pad)
    return out.permute(2, 0, 1).contiguous()
