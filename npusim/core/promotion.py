"""PyTorch's type promotion across tensors and Python numbers (``result_type``).

Dimensioned tensors outrank zero-dim tensors, which outrank Python numbers;
a lower rank only matters when it is of a higher category (bool < integral <
floating < complex), e.g. int tensor + 2.5 -> the default float dtype, and
float16 tensor * 1j -> complex32 (the tensor's parts decide the precision).
"""
from __future__ import annotations

import numpy as np

from .c10 import dtype as D
from .tensor import Tensor

FROM_NP = D.FROM_NUMPY
PROMOTE = D._PROMOTE


def scalar_result_dtype(v):
    if isinstance(v, (bool, np.bool_)):
        return D.bool
    if isinstance(v, (int, np.integer)):
        return D.int64
    if isinstance(v, (float, np.floating)):
        return D.get_default_dtype()
    if isinstance(v, (complex, np.complexfloating)):
        return D.default_complex_dtype()
    raise TypeError(f"expected a Tensor or a Python number, got {type(v).__name__}")


def _combine(higher, lower):
    """torch's combine_categories: a lower-priority state only matters across categories."""
    if higher is None:
        return lower
    if lower is None or higher.is_complex:
        return higher
    if lower.is_complex:
        # a complex number of lower priority keeps a floating tensor's precision (float16 * 1j is complex32)
        return higher.to_complex() if higher.is_floating_point else PROMOTE[higher, lower]
    if higher.is_floating_point:
        return higher
    if higher is D.bool or lower.is_floating_point:
        return PROMOTE[higher, lower]
    return higher


def result_type(*operands) -> D.dtype:
    """The dtype torch computes an op on these tensors and numbers in."""
    dim = zero = wrapped = None
    for x in operands:
        if x is None:
            continue
        if isinstance(x, Tensor):
            d = FROM_NP[x._a.dtype]
            if x._a.ndim:
                dim = d if dim is None else PROMOTE[dim, d]
            else:
                zero = d if zero is None else PROMOTE[zero, d]
        else:
            d = scalar_result_dtype(x)
            wrapped = d if wrapped is None else PROMOTE[wrapped, d]
    r = _combine(dim, _combine(zero, wrapped))
    return D.get_default_dtype() if r is None else r
