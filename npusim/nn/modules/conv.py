"""Convolutions: ``Conv1d`` / ``2d`` / ``3d`` and ``ConvTranspose1d`` / ``2d`` / ``3d``."""
from __future__ import annotations

import math

from ...core.autograd.grad_mode import no_grad
from ...api.factories import empty
from .. import functional as F
from .. import init
from ..parameter import Parameter, UninitializedParameter
from .lazy import LazyModuleMixin
from .module import Module
from .utils import _pair, _reverse_repeat_tuple, _single, _triple

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]


class _ConvNd(Module):
    __constants__ = ["stride", "padding", "dilation", "groups", "padding_mode", "output_padding", "in_channels",
                     "out_channels", "kernel_size"]

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, transposed,
                 output_padding, groups, bias, padding_mode, device=None, dtype=None):
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        valid_padding_strings = {"same", "valid"}
        if isinstance(padding, str):
            if padding not in valid_padding_strings:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {valid_padding_strings}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        # Built here, like torch, so the set prints in the same order as torch's message.
        valid_padding_modes = {"zeros", "reflect", "replicate", "circular"}
        if padding_mode not in valid_padding_modes:
            raise ValueError(f"padding_mode must be one of {valid_padding_modes}, but got padding_mode="
                             f"'{padding_mode}'")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = transposed
        self.output_padding = output_padding
        self.groups = groups
        self.padding_mode = padding_mode
        # F.pad's amounts (last dim first) for the non-'zeros' padding modes.
        if isinstance(self.padding, str):
            self._reversed_padding_repeated_twice = [0, 0] * len(kernel_size)
            if padding == "same":
                for d, k, i in zip(dilation, kernel_size, range(len(kernel_size) - 1, -1, -1)):
                    total_padding = d * (k - 1)
                    left_pad = total_padding // 2
                    self._reversed_padding_repeated_twice[2 * i] = left_pad
                    self._reversed_padding_repeated_twice[2 * i + 1] = total_padding - left_pad
        else:
            self._reversed_padding_repeated_twice = _reverse_repeat_tuple(self.padding, 2)
        if transposed:
            shape = (in_channels, out_channels // groups, *kernel_size)
        else:
            shape = (out_channels, in_channels // groups, *kernel_size)
        self.weight = Parameter(empty(shape, **factory_kwargs))
        if bias:
            self.bias = Parameter(empty(out_channels, **factory_kwargs))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        with no_grad():
            init.kaiming_uniform_(self.weight, a=math.sqrt(5))
            if self.bias is not None:
                fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
                bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self):
        s = "{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}"
        if self.padding != (0,) * len(self.padding):
            s += ", padding={padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += ", dilation={dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += ", output_padding={output_padding}"
        if self.groups != 1:
            s += ", groups={groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += ", padding_mode={padding_mode}"
        return s.format(**self.__dict__)

    def __setstate__(self, state):
        super().__setstate__(state)
        if not hasattr(self, "padding_mode"):
            self.padding_mode = "zeros"


class _Conv(_ConvNd):
    """A forward convolution through ``_conv``; ``_tuple`` expands int arguments to one per spatial dim."""

    _tuple = staticmethod(_single)

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        t = self._tuple
        padding_ = padding if isinstance(padding, str) else t(padding)
        super().__init__(in_channels, out_channels, t(kernel_size), t(stride), padding_, t(dilation), False, t(0),
                         groups, bias, padding_mode, device=device, dtype=dtype)

    def _conv_forward(self, input, weight, bias):
        conv = self._conv
        if self.padding_mode != "zeros":
            return conv(F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode), weight, bias,
                        self.stride, self._tuple(0), self.dilation, self.groups)
        return conv(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_Conv):
    """1-D cross-correlation over (N, C_in, L) or (C_in, L) inputs."""

    _tuple = staticmethod(_single)

    @staticmethod
    def _conv(*args):
        return F.conv1d(*args)


class Conv2d(_Conv):
    """2-D cross-correlation over (N, C_in, H, W) or (C_in, H, W) inputs."""

    _tuple = staticmethod(_pair)

    @staticmethod
    def _conv(*args):
        return F.conv2d(*args)


class Conv3d(_Conv):
    """3-D cross-correlation over (N, C_in, D, H, W) or (C_in, D, H, W) inputs."""

    _tuple = staticmethod(_triple)

    @staticmethod
    def _conv(*args):
        return F.conv3d(*args)


class _ConvTransposeNd(_ConvNd):
    _tuple = staticmethod(_single)
    _ndim = 1

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {self.__class__.__name__}')
        t = self._tuple
        super().__init__(in_channels, out_channels, t(kernel_size), t(stride), t(padding), t(dilation), True,
                         t(output_padding), groups, bias, padding_mode, device=device, dtype=dtype)

    def _output_padding(self, input, output_size, stride, padding, kernel_size, num_spatial_dims, dilation=None):
        """The output_padding that makes the output ``output_size`` (or the module's own when None)."""
        if output_size is None:
            return _single(self.output_padding)
        has_batch_dim = input.dim() == num_spatial_dims + 2
        num_non_spatial_dims = 2 if has_batch_dim else 1
        output_size = list(output_size)
        if len(output_size) == num_non_spatial_dims + num_spatial_dims:
            output_size = output_size[num_non_spatial_dims:]
        if len(output_size) != num_spatial_dims:
            raise ValueError(f"ConvTranspose{num_spatial_dims}D: for {input.dim()}D input, output_size must have "
                             f"{num_spatial_dims} or {num_non_spatial_dims + num_spatial_dims} elements (got "
                             f"{len(output_size)})")
        min_sizes, max_sizes = [], []
        for d in range(num_spatial_dims):
            dim_size = ((input.size(d + num_non_spatial_dims) - 1) * stride[d] - 2 * padding[d]
                        + (dilation[d] if dilation is not None else 1) * (kernel_size[d] - 1) + 1)
            min_sizes.append(dim_size)
            max_sizes.append(min_sizes[d] + stride[d] - 1)
        for size, lo, hi in zip(output_size, min_sizes, max_sizes):
            if size < lo or size > hi:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes range from {min_sizes} "
                                 f"to {max_sizes} (for an input of {input.size()[2:]})")
        return [output_size[d] - min_sizes[d] for d in range(num_spatial_dims)]

    def forward(self, input, output_size=None):
        if self.padding_mode != "zeros":
            raise ValueError(f"Only `zeros` padding mode is supported for {type(self).__name__}")
        output_padding = self._output_padding(input, output_size, self.stride, self.padding, self.kernel_size,
                                              self._ndim, self.dilation)
        return self._conv_transpose(input, self.weight, self.bias, self.stride, self.padding, output_padding,
                                    self.groups, self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    """The gradient of Conv1d with respect to its input, as a layer."""

    _tuple = staticmethod(_single)
    _ndim = 1

    @staticmethod
    def _conv_transpose(*args):
        return F.conv_transpose1d(*args)


class ConvTranspose2d(_ConvTransposeNd):
    """The gradient of Conv2d with respect to its input, as a layer."""

    _tuple = staticmethod(_pair)
    _ndim = 2

    @staticmethod
    def _conv_transpose(*args):
        return F.conv_transpose2d(*args)


class ConvTranspose3d(_ConvTransposeNd):
    """The gradient of Conv3d with respect to its input, as a layer."""

    _tuple = staticmethod(_triple)
    _ndim = 3

    @staticmethod
    def _conv_transpose(*args):
        return F.conv_transpose3d(*args)


class _LazyConvXdMixin(LazyModuleMixin):
    """Infers ``in_channels`` from the first input's channel dim and materialises weight and bias."""

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args, **kwargs):
        if self.has_uninitialized_params():
            self.in_channels = self._get_in_channels(input)
            if self.in_channels % self.groups != 0:
                raise ValueError("in_channels must be divisible by groups")
            if not isinstance(self.weight, UninitializedParameter):
                raise AssertionError("self.weight must be an UninitializedParameter")
            if self.transposed:
                self.weight.materialize((self.in_channels, self.out_channels // self.groups, *self.kernel_size))
            else:
                self.weight.materialize((self.out_channels, self.in_channels // self.groups, *self.kernel_size))
            if self.bias is not None:
                if not isinstance(self.bias, UninitializedParameter):
                    raise AssertionError("self.bias must be an UninitializedParameter")
                self.bias.materialize((self.out_channels,))
            self.reset_parameters()

    def _get_in_channels(self, input):
        num_dims_no_batch = self._get_num_spatial_dims() + 1
        num_dims_batch = num_dims_no_batch + 1
        if input.dim() not in (num_dims_no_batch, num_dims_batch):
            raise RuntimeError(f"Expected {num_dims_no_batch}D (unbatched) or {num_dims_batch}D (batched) input to "
                               f"{self.__class__.__name__}, but got input of size: {input.shape}")
        return input.shape[1] if input.dim() == num_dims_batch else input.shape[0]

    _num_spatial_dims = None     # set by each lazy class

    def _get_num_spatial_dims(self):
        return self._num_spatial_dims

    def _uninitialized_weight_and_bias(self, out_channels, bias, device, dtype):
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)


class LazyConv1d(_LazyConvXdMixin, Conv1d):
    """A Conv1d whose ``in_channels`` is inferred from the first input."""

    cls_to_become = Conv1d
    _num_spatial_dims = 1

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True, padding_mode="zeros",
                 device=None, dtype=None):
        # in_channels 0 and bias False: nothing allocated that materialisation would replace
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode, device=device,
                         dtype=dtype)
        self._uninitialized_weight_and_bias(out_channels, bias, device, dtype)


class LazyConv2d(_LazyConvXdMixin, Conv2d):
    """A Conv2d whose ``in_channels`` is inferred from the first input."""

    cls_to_become = Conv2d
    _num_spatial_dims = 2

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True, padding_mode="zeros",
                 device=None, dtype=None):
        # in_channels 0 and bias False: nothing allocated that materialisation would replace
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode, device=device,
                         dtype=dtype)
        self._uninitialized_weight_and_bias(out_channels, bias, device, dtype)


class LazyConv3d(_LazyConvXdMixin, Conv3d):
    """A Conv3d whose ``in_channels`` is inferred from the first input."""

    cls_to_become = Conv3d
    _num_spatial_dims = 3

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True, padding_mode="zeros",
                 device=None, dtype=None):
        # in_channels 0 and bias False: nothing allocated that materialisation would replace
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode, device=device,
                         dtype=dtype)
        self._uninitialized_weight_and_bias(out_channels, bias, device, dtype)


class LazyConvTranspose1d(_LazyConvXdMixin, ConvTranspose1d):
    """A ConvTranspose1d whose ``in_channels`` is inferred from the first input."""

    cls_to_become = ConvTranspose1d
    _num_spatial_dims = 1

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1, bias=True, dilation=1,
                 padding_mode="zeros", device=None, dtype=None):
        # in_channels 0 and bias False: nothing allocated that materialisation would replace
        super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups, False, dilation, padding_mode,
                         device=device, dtype=dtype)
        self._uninitialized_weight_and_bias(out_channels, bias, device, dtype)


class LazyConvTranspose2d(_LazyConvXdMixin, ConvTranspose2d):
    """A ConvTranspose2d whose ``in_channels`` is inferred from the first input."""

    cls_to_become = ConvTranspose2d
    _num_spatial_dims = 2

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1, bias=True, dilation=1,
                 padding_mode="zeros", device=None, dtype=None):
        # in_channels 0 and bias False: nothing allocated that materialisation would replace
        super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups, False, dilation, padding_mode,
                         device=device, dtype=dtype)
        self._uninitialized_weight_and_bias(out_channels, bias, device, dtype)


class LazyConvTranspose3d(_LazyConvXdMixin, ConvTranspose3d):
    """A ConvTranspose3d whose ``in_channels`` is inferred from the first input."""

    cls_to_become = ConvTranspose3d
    _num_spatial_dims = 3

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1, bias=True, dilation=1,
                 padding_mode="zeros", device=None, dtype=None):
        # in_channels 0 and bias False: nothing allocated that materialisation would replace
        super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups, False, dilation, padding_mode,
                         device=device, dtype=dtype)
        self._uninitialized_weight_and_bias(out_channels, bias, device, dtype)


__all__ += ["LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d",
            "LazyConvTranspose3d"]
