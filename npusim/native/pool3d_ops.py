"""Kernels of ``adaptive_max_pool3d`` and its backward, as the 2-d ones in nn_conv."""
from __future__ import annotations

from ..kernels import nn_pooling as KP
from . import common as C
from .nn_conv import _check_nonempty_planes, _max_pool_backward, _output_size_arg


def adaptive_max_pool3d(self, output_size):
    """Max over adaptive windows and the flat index (d * H * W + h * W + w) of each maximum in its input volume."""
    x = self._a
    if x.ndim not in (4, 5):
        raise RuntimeError(f"adaptive_max_pool3d(): Expected 4D or 5D tensor, but got: {list(x.shape)}")
    _check_nonempty_planes(x, "adaptive_max_pool3d")
    output_size = _output_size_arg(output_size, 3, "adaptive_max_pool3d(): internal error: output_size.size() "
                                                   "must be 3")
    shape = list(x.shape[:-3]) + output_size
    for n in output_size:
        if n < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {n}: {shape}")
    if not C.is_float(x.dtype):
        C.not_implemented("adaptive_max_pool3d_cpu", x.dtype)
    values, indices = KP.adaptive_max_pool(x, output_size)
    return C.make(values, self._device), C.make(indices, self._device)


def adaptive_max_pool3d_backward(grad_output, self, indices):
    return _max_pool_backward(3, grad_output, self, indices)


KERNELS = {
    "adaptive_max_pool3d": adaptive_max_pool3d, "adaptive_max_pool3d_backward": adaptive_max_pool3d_backward,
}
