"""Tensor-level kernels of searchsorted, bucketize and isin, with torch's argument checks.

Operands are compared in their promoted dtype; the array work lives in ``npusim.kernels.searching``.
"""
from __future__ import annotations

import numpy as np

from ..core.c10 import dtype as D
from ..core import promotion
from ..kernels import searching as KM
from ..kernels.array_api import namespace_of
from . import common as C

_INT64 = np.dtype(np.int64)
_INT32 = np.dtype(np.int32)


def _operand(v, np_dt, dev, like):
    """A Tensor's array, or a Python scalar as a 0-d array, in ``np_dt`` on ``dev``."""
    if isinstance(v, C.Tensor):
        return C.array_operand(v, np_dt, dev)
    return namespace_of(like).asarray(v, dtype=np_dt)


def _searchsorted(sorted_sequence, self, out_int32, right, side, sorter):
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of left "
                               "while right was True")
        right = side == "right"
    b = sorted_sequence
    if b.dim() == 0:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should have positive dimension, but got 0 "
                           "dimension")
    scalar = not isinstance(self, C.Tensor)
    if scalar and b.dim() != 1:
        raise RuntimeError(f"torch.searchsorted(): input value can be a scalar only when boundaries tensor dimension "
                           f"is 1, but we got boundaries tensor dim({b.dim()}) and input value's dim(0) numel(1)")
    if not scalar and b.dim() != 1 and (self.dim() != b.dim() or tuple(b.shape[:-1]) != tuple(self.shape[:-1])):
        raise RuntimeError(f"torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions "
                           f"of boundaries tensor and input value tensor must match, but we got boundaries tensor "
                           f"{list(b.shape)} and input value tensor {list(self.shape)}")
    dev = C.same_device(b, self if not scalar else None, sorter)
    s = None
    if sorter is not None:
        if tuple(sorter.shape) != tuple(b.shape):
            raise RuntimeError(f"torch.searchsorted(): boundary and sorter must have the same size, but got boundary "
                               f"tensor {list(b.shape)}and got sorter tensor {list(sorter.shape)}")
        if sorter.dtype is not D.int64:
            raise RuntimeError(f"torch.searchsorted(): sorter must be a tensor of long dtype but got dtype "
                               f"{C.tname(sorter._a.dtype)}")
        s = sorter._a
        if s.size and (int(s.min()) < 0 or int(s.max()) >= b.shape[-1]):
            raise RuntimeError("torch.searchsorted(): sorter index out of range")
    np_dt = C.np_dtype(promotion.result_type(b, self))
    r = KM.searchsorted(C.array_operand(b, np_dt, dev), _operand(self, np_dt, dev, b._a), right=right, sorter=s,
                        out_dtype=_INT32 if out_int32 else _INT64)
    return C.wrap(r, dev)


def searchsorted(sorted_sequence, self, *, out_int32=False, right=False, side=None, sorter=None):
    return _searchsorted(sorted_sequence, self, out_int32, right, side, sorter)


def bucketize(self, boundaries, *, out_int32=False, right=False):
    if boundaries.dim() != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.dim()})")
    return _searchsorted(boundaries, self, out_int32, right, None, None)


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    tensors = [t for t in (elements, test_elements) if isinstance(t, C.Tensor)]
    for t in tensors:
        if t.dtype is D.bool:
            raise RuntimeError("Unsupported input type encountered for isin(): Bool")
    dev = C.same_device(*tensors)
    np_dt = C.np_dtype(promotion.result_type(elements, test_elements))
    like = tensors[0]._a
    r = KM.isin(_operand(elements, np_dt, dev, like), _operand(test_elements, np_dt, dev, like), invert=invert)
    return C.wrap(r, dev)


KERNELS = {
    "searchsorted.Tensor": searchsorted, "searchsorted.Scalar": searchsorted,
    "bucketize.Tensor": bucketize, "bucketize.Scalar": bucketize,
    "isin.Tensor_Tensor": isin, "isin.Tensor_Scalar": isin, "isin.Scalar_Tensor": isin,
}
