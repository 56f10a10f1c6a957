"""``make_tensor``: a random tensor of a given shape, dtype and device, in torch's default value ranges."""
from __future__ import annotations

import collections.abc
import functools
import math
import warnings

import npusim

from ..core.c10 import dtype as D

__all__ = ["make_tensor"]

_INTEGRAL_TYPES = [D.uint8, D.int8, D.int16, D.int32, D.int64]
_FLOATING_TYPES = [D.float16, D.bfloat16, D.float32, D.float64]
_BOOLEAN_OR_INTEGRAL_TYPES = [D.bool, *_INTEGRAL_TYPES]


def _uniform_random_(t, low: float, high: float):
    # uniform_ needs high - low to be finite in the dtype: draw from half the range and double it
    if high - low >= npusim.finfo(t.dtype).max:
        return t.uniform_(low / 2, high / 2).mul_(2)
    return t.uniform_(low, high)


def make_tensor(*shape, dtype, device, low: float | None = None, high: float | None = None,
                requires_grad: bool = False, noncontiguous: bool = False, exclude_zero: bool = False,
                memory_format=None):
    r"""A tensor of ``shape`` filled with values drawn uniformly from ``[low, high)``.

    The range defaults to ``[-9, 9)`` for floating dtypes, ``[-9, 10)`` for integral ones (clamped to what the
    dtype holds, so ``[0, 10)`` for uint8) and ``[0, 2)`` for bool. ``noncontiguous=True`` returns a view with
    a stride of 2 in the last dimension (when the tensor has more than one element); ``exclude_zero=True``
    replaces zeros by 1 (integral dtypes) or the dtype's smallest normal number.
    """
    def modify_low_high(low, high, *, lowest_inclusive, highest_exclusive, default_low, default_high):
        def clamp(a, lo, hi):
            return min(max(a, lo), hi)

        low = low if low is not None else default_low
        high = high if high is not None else default_high
        if any(isinstance(value, float) and math.isnan(value) for value in [low, high]):
            raise ValueError(f"`low` and `high` cannot be NaN, but got {low=} and {high=}")
        elif low == high and dtype in _FLOATING_TYPES:
            warnings.warn("Passing `low==high` to `torch.testing.make_tensor` for floating or complex types "
                          "is deprecated since 2.1 and will be removed in 2.3. Use `torch.full(...)` instead.",
                          FutureWarning, stacklevel=3)
        elif low >= high:
            raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
        elif high < lowest_inclusive or low >= highest_exclusive:
            raise ValueError(f"The value interval specified by `low` and `high` is [{low}, {high}), "
                             f"but {dtype} only supports [{lowest_inclusive}, {highest_exclusive})")
        low = clamp(low, lowest_inclusive, highest_exclusive)
        high = clamp(high, lowest_inclusive, highest_exclusive)
        if dtype in _BOOLEAN_OR_INTEGRAL_TYPES:
            # low is ceiled so no value falls under it; high is ceiled as randint's bound is exclusive
            return math.ceil(low), math.ceil(high)
        return low, high

    if len(shape) == 1 and isinstance(shape[0], collections.abc.Sequence):
        shape = shape[0]
    shape = tuple(shape)
    if noncontiguous and memory_format is not None:
        raise ValueError(f"The parameters `noncontiguous` and `memory_format` are mutually exclusive, "
                         f"but got {noncontiguous=} and {memory_format=}")
    if requires_grad and dtype in _BOOLEAN_OR_INTEGRAL_TYPES:
        raise ValueError(f"`requires_grad=True` is not supported for boolean and integral dtypes, but got {dtype=}")
    noncontiguous = noncontiguous and functools.reduce(lambda x, y: x * y, shape, 1) > 1
    if noncontiguous:
        # twice as long in the last dim, so the strided view does not repeat values
        shape = (*shape[:-1], 2 * shape[-1])
    if dtype is D.bool:
        low, high = modify_low_high(low, high, lowest_inclusive=0, highest_exclusive=2, default_low=0,
                                    default_high=2)
        result = npusim.randint(low, high, shape, device=device, dtype=dtype)
    elif dtype in _BOOLEAN_OR_INTEGRAL_TYPES:
        # randint takes its bounds as int64: it cannot reach int64's maximum
        low, high = modify_low_high(low, high, lowest_inclusive=npusim.iinfo(dtype).min,
                                    highest_exclusive=npusim.iinfo(dtype).max + (1 if dtype is not D.int64 else 0),
                                    default_low=-9, default_high=10)
        result = npusim.randint(low, high, shape, device=device, dtype=dtype)
    elif dtype in _FLOATING_TYPES:
        low, high = modify_low_high(low, high, lowest_inclusive=npusim.finfo(dtype).min,
                                    highest_exclusive=npusim.finfo(dtype).max, default_low=-9, default_high=9)
        result = npusim.empty(shape, device=device, dtype=dtype)
        _uniform_random_(result, low, high)
    else:
        raise TypeError(f"The requested dtype '{dtype}' is not supported by torch.testing.make_tensor()."
                        " To request support, file an issue at: https://github.com/pytorch/pytorch/issues")
    if noncontiguous:
        # offset by 1 too, to catch offset handling
        result = result[..., 1::2]
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)
    if exclude_zero:
        result[result == 0] = 1 if dtype in _BOOLEAN_OR_INTEGRAL_TYPES else npusim.finfo(dtype).tiny
    if dtype in _FLOATING_TYPES:
        result.requires_grad = requires_grad
    return result
