"""Tensor-level kernels of fractional max pooling, 2-d and 3-d, with torch's names, checks and messages.

The forward takes the per-(batch, plane) samples that place the pseudo-random windows (``_random_samples`` of
``F.fractional_max_pool2d``) and returns the maxima and their flat indices in each input plane; the backward adds
each output gradient at its recorded index, as max pooling's does. The array work is in
``kernels.nn_fractional_pooling``.
"""
from __future__ import annotations

from ..kernels import nn_fractional_pooling as KF
from ..kernels import nn_pooling as KP
from . import common as C

_DIM_WORDS = {2: ("height", "width"), 3: ("time", "height", "width")}


def _sizes(v, dim):
    return [int(v)] * dim if C.is_int(v) else C.int_list(v)


def _fractional_max_pool(dim, self, kernel_size, output_size, random_samples):
    name = f"fractional_max_pool{dim}d"
    where = f"{name}()" if dim == 2 else f"{name}_out()"
    tuple_words = "tuple of Ints" if dim == 2 else "tuple of three Ints"
    kernel, out = _sizes(kernel_size, dim), _sizes(output_size, dim)
    if len(kernel) != dim:
        raise RuntimeError(f"{name}: kernel_size must either be a single Int or {tuple_words}")
    if len(out) != dim:
        raise RuntimeError(f"{name}: output_size must either be a single Int or {tuple_words}")
    x = self._a
    if x.ndim not in (dim + 1, dim + 2):
        raise RuntimeError(f"{where}: Expected {dim + 1}D or {dim + 2}D tensor, but got: {list(x.shape)}")
    for i in range(1, x.ndim):
        if x.shape[i] <= 0:
            raise RuntimeError(f"{where}: Expected input to have non-zero size for non-batch dimensions, but got"
                               f"{list(x.shape)} with dimension {i} being empty.")
    spatial = x.shape[-dim:]
    for word, o, k, n in zip(_DIM_WORDS[dim], out, kernel, spatial):
        if o + k - 1 > n:
            raise RuntimeError(f"{where}: pool {word} {k} too large relative to input {word} {n}")
    shape = list(x.shape[:-dim]) + out
    for o in out:
        if o < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {o}: {shape}")
    dev = C.same_device(self, random_samples)
    s = random_samples._a
    # ATen's fractional_max_pool_check_shape
    if s.dtype != x.dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")
    if s.ndim != 3:
        raise RuntimeError(f"Expect _random_samples to have 3 dimensions, got {s.ndim}")
    batched = x.ndim == dim + 2
    n_batch, planes = (x.shape[0], x.shape[1]) if batched else (1, x.shape[0])
    if s.shape[0] < n_batch:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    if s.shape[1] != planes:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    if s.shape[2] != dim:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {dim}; got {s.shape[2]}.")
    if not C.is_float(x.dtype):
        C.not_implemented(f"{name}_out_frame", x.dtype)
    xb = x if batched else x[None]
    values, indices = KF.fractional_max_pool(xb, s, kernel, out)
    if not batched:
        values, indices = values[0], indices[0]
    return C.make(values, dev), C.make(indices, dev)


def fractional_max_pool2d(self, kernel_size, output_size, random_samples):
    """Max over pseudo-random windows of the last two dims and the flat index (h * W + w) of each maximum."""
    return _fractional_max_pool(2, self, kernel_size, output_size, random_samples)


def fractional_max_pool3d(self, kernel_size, output_size, random_samples):
    """Max over pseudo-random windows of the last three dims and the flat index of each maximum in its volume."""
    return _fractional_max_pool(3, self, kernel_size, output_size, random_samples)


def _backward(dim, grad_output, self, indices):
    dev = C.same_device(grad_output, self, indices)
    return C.make(KP.max_pool_backward(grad_output._a, indices._a, self._a.shape[-dim:]), dev)


def fractional_max_pool2d_backward(grad_output, self, kernel_size, output_size, indices):
    return _backward(2, grad_output, self, indices)


def fractional_max_pool3d_backward(grad_output, self, kernel_size, output_size, indices):
    return _backward(3, grad_output, self, indices)


KERNELS = {
    "fractional_max_pool2d": fractional_max_pool2d, "fractional_max_pool2d_backward": fractional_max_pool2d_backward,
    "fractional_max_pool3d": fractional_max_pool3d, "fractional_max_pool3d_backward": fractional_max_pool3d_backward,
}
