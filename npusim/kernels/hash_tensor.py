"""torch.hash_tensor's array work: elements widened to 64 bits, read as uint64, reduced by XOR.

The XOR of a row is taken by folding it in halves (``r[:h] ^ r[h:2h]``), which needs only elementwise XOR and
slicing, so the same code runs on NumPy and CuPy arrays. XOR is associative and commutative: the order of the
folds does not change the result.
"""
from __future__ import annotations

import numpy as np

from .array_api import namespace_of


def widened_bits(a):
    """``a``'s elements upcast to float64 (floating inputs) or int64 (bool and integers), as uint64 bit patterns."""
    wide = np.float64 if a.dtype.kind == "f" or a.dtype.kind == "V" else np.int64   # "V": bfloat16 (ml_dtypes)
    return a.astype(wide).view(np.uint64)


def xor_reduce(a, axes, keepdim: bool):
    """The XOR of ``a`` (uint64) over ``axes`` (a tuple of distinct non-negative axes), kept as size-1 dims when
    ``keepdim``."""
    xp = namespace_of(a)
    kept = [d for d in range(a.ndim) if d not in axes]
    moved = xp.transpose(a, kept + list(axes))
    rows = xp.reshape(moved, tuple(a.shape[d] for d in kept) + (-1,)) if a.ndim else xp.reshape(moved, (1,))
    n = rows.shape[-1]
    if n == 0:
        r = xp.zeros(rows.shape[:-1], np.uint64)
    else:
        while n > 1:
            half = n // 2
            folded = rows[..., :half] ^ rows[..., half:2 * half]
            if n % 2:
                folded[..., :1] ^= rows[..., 2 * half:]
            rows, n = folded, half
        r = rows[..., 0].copy()
    if keepdim:
        r = xp.reshape(r, tuple(1 if d in axes else s for d, s in enumerate(a.shape)))
    return r
