"""``Tensor.dim_order``: the order of a tensor's dimensions in memory, outermost first, as torch computes it."""
from __future__ import annotations

import itertools

from ..core.c10.memory_format import memory_format
from ..core.tensor import Tensor

_BAD_CHECK = "The ambiguity_check argument must be a bool or a list of memory formats."


def _ge(a, b):
    # torch's comparison for sizes and strides (both >= 0): b == 0 first, then a == 0, then a >= b or a % b == 0
    if b == 0:
        return True
    if a == 0:
        return False
    return a >= b or a % b == 0


def _should_swap(shape, strides, idx_a, idx_b):
    stride_a, stride_b = strides[idx_a], strides[idx_b]
    if stride_a == 0 or stride_b == 0:
        return 0
    if stride_a == stride_b:
        return 0 if _ge(shape[idx_b], shape[idx_a]) else 1
    if _ge(stride_b, stride_a):
        return -1
    if _ge(stride_a, stride_b):
        return 1
    return 0


def _logical_to_physical(t, ambiguity_check):
    """torch._prims_common's elementwise-output permutation for one tensor, and whether it stayed ambiguous."""
    ndim = t.dim()
    if ndim == 0:
        return [], False
    if ndim == 1:
        return [0], False
    from ..core.c10.memory_format import channels_last, contiguous_format
    contiguous = t.is_contiguous(memory_format=contiguous_format)
    channels = ndim == 4 and t.is_contiguous(memory_format=channels_last)
    if contiguous and not channels:
        return list(range(ndim)), False
    if channels and not contiguous:
        return [0, *range(2, ndim), 1], False
    shape, strides = tuple(t.shape), t.stride()
    perm = list(reversed(range(ndim)))        # sorted back to front with an insertion sort, then reversed
    for i in range(1, ndim):
        dim1 = i
        for dim0 in reversed(range(i)):
            comparison = _should_swap(shape, strides, perm[dim0], perm[dim1])
            if comparison > 0:
                perm[dim0], perm[dim1] = perm[dim1], perm[dim0]
                dim1 = dim0
            elif comparison < 0:
                break
    ambiguous = bool(ambiguity_check) and any(_should_swap(shape, strides, perm[i], perm[i + 1]) != -1
                                              for i in range(ndim - 1))
    return list(reversed(perm)), ambiguous


def dim_order(self, *, ambiguity_check=False):
    """dim_order(ambiguity_check=False) -> tuple

    The dimensions of ``self`` from the outermost to the innermost in memory. With ``ambiguity_check=True``, a
    tensor whose order is not unique (a size-1 dimension, two equal strides) raises ``RuntimeError``; with a list
    of memory formats, it raises unless ``self`` is contiguous in exactly one of them.
    """
    if not isinstance(ambiguity_check, bool):
        if not isinstance(ambiguity_check, list) or not all(isinstance(f, memory_format) for f in ambiguity_check):
            raise TypeError(_BAD_CHECK)
    valid_formats = ambiguity_check if isinstance(ambiguity_check, list) else []
    check_multiple = ambiguity_check if isinstance(ambiguity_check, bool) else True
    sizes, strides = tuple(self.shape), self.stride()
    multiple = any(a == b for a, b in itertools.pairwise(strides)) or any(s == 1 for s in sizes)
    unique_format = sum(1 for f in valid_formats if self.is_contiguous(memory_format=f)) == 1
    if check_multiple and multiple and not unique_format:
        raise RuntimeError("The tensor does not have unique dim order, or cannot map to exact one of the given "
                           "memory formats.")
    perm, ambiguous = _logical_to_physical(self, ambiguity_check)
    if ambiguous:
        raise RuntimeError("The tensor does not have unique dim order.")
    return tuple(perm)


Tensor.dim_order = dim_order
