"""torch.nn.functional's fractional max pooling (2-d and 3-d), with and without the indices of the maxima.

Without ``_random_samples`` the samples that place the pseudo-random windows are drawn as torch draws them,
``rand(N, C, dims, dtype=input.dtype, device=input.device)``, from npusim's generator of the input's device.
"""
from __future__ import annotations

from ...api.random import rand as _rand
from ...core.dispatch.ops_namespace import aten

__all__ = ["fractional_max_pool2d", "fractional_max_pool2d_with_indices", "fractional_max_pool3d",
           "fractional_max_pool3d_with_indices"]


def _repeat(v, n):
    """torch's _pair/_triple: an iterable as a tuple, anything else repeated n times."""
    try:
        return tuple(v)
    except TypeError:
        return (v,) * n


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                                       _random_samples=None):
    """2-d fractional max pooling (Graham's pseudo-random pooling regions) over (N, C, H, W) or (C, H, W) input;
    returns the maxima and their flat indices (h * W + w) in each input plane."""
    if output_size is None and output_ratio is None:
        raise ValueError("fractional_max_pool2d requires specifying either an output_size or an output_ratio")
    if output_size is None:
        if len(output_ratio) > 2:
            raise ValueError("fractional_max_pool2d requires output_ratio to either be a single Int or tuple of "
                             "Ints.")
        ratio = _repeat(output_ratio, 2)
        output_size = [int(input.size(-2) * ratio[0]), int(input.size(-1) * ratio[1])]
    if _random_samples is None:
        n_batch = 1 if input.dim() == 3 else input.size(0)
        _random_samples = _rand(n_batch, input.size(-3), 2, dtype=input.dtype, device=input.device)
    return aten.fractional_max_pool2d.default(input, kernel_size, output_size, _random_samples)


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """2-d fractional max pooling (Graham's pseudo-random pooling regions) over (N, C, H, W) or (C, H, W) input;
    with ``return_indices`` also the flat index of each maximum."""
    result = fractional_max_pool2d_with_indices(input, kernel_size, output_size, output_ratio, return_indices,
                                                _random_samples)
    return result if return_indices else result[0]


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                                       _random_samples=None):
    """3-d fractional max pooling over (N, C, T, H, W) or (C, T, H, W) input; returns the maxima and their flat
    indices in each input volume."""
    if output_size is None and output_ratio is None:
        raise ValueError("fractional_max_pool3d requires specifying either an output_size or an output_ratio")
    if output_size is None:
        ratio = _repeat(output_ratio, 3)
        output_size = [int(input.size(-3) * ratio[0]), int(input.size(-2) * ratio[1]),
                       int(input.size(-1) * ratio[2])]
    if _random_samples is None:
        n_batch = 1 if input.dim() == 4 else input.size(0)
        _random_samples = _rand(n_batch, input.size(-4), 3, dtype=input.dtype, device=input.device)
    return aten.fractional_max_pool3d.default(input, kernel_size, output_size, _random_samples)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """3-d fractional max pooling over (N, C, T, H, W) or (C, T, H, W) input; with ``return_indices`` also the
    flat index of each maximum."""
    result = fractional_max_pool3d_with_indices(input, kernel_size, output_size, output_ratio, return_indices,
                                                _random_samples)
    return result if return_indices else result[0]
