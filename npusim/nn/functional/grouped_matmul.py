"""``F.grouped_mm``: per-group matrix products with jagged groups (Mixture-of-Experts layers), as torch 2.13's.

torch's CPU path (ATen's ``_grouped_mm_fallback``) is the rule: float32, bfloat16 or float16 operands of one dtype,
2-d or 3-d, with GEMM-friendly strides (one dim of stride 1, the other a multiple of 16 bytes); ``offs`` (int32,
1-d) ends each group along the jagged dim of a 2-d operand and must be absent for 3-d x 3-d (a batched product);
``bias`` is refused and ``out_dtype`` must be ``mat_a``'s dtype, as on torch's CPU. The groups are ordinary matrix
products, so the result is differentiable through them. Where torch leaves the rows (or columns) past ``offs[-1]``
uninitialised, npusim writes zeros.
"""
from __future__ import annotations

from ...api.factories import zeros as _zeros
from ...api.operators import bmm as _bmm, cat as _cat, stack as _stack
from ...core.c10 import dtype as D

__all__ = ["grouped_mm"]

_ALLOWED = (D.bfloat16, D.float32, D.float16)
_C10_NAME = {D.float32: "float", D.bfloat16: "c10::BFloat16", D.float16: "c10::Half"}
_SCALAR_NAME = {D.float32: "Float", D.bfloat16: "BFloat16", D.float16: "Half"}


def _check_strides(mat):
    """ATen's check_valid_strides_and_return_transposed (row- or column-major, rows 16-byte aligned)."""
    strides, sizes = mat.stride(), mat.shape
    alignment = 16 // mat.element_size()
    if strides[-2] == 1 and strides[-1] >= max(1, sizes[-2]):
        lead = strides[-1]
    elif strides[-1] == 1 and strides[-2] >= max(1, sizes[-1]):
        lead = strides[-2]
    else:
        raise RuntimeError(f"Invalid strides/sizes, got {list(strides)} for strides and {list(sizes)} for sizes")
    if lead % alignment != 0:
        raise RuntimeError("strides should be multiple of 16 bytes")


def _validate(mat_a, mat_b, offs, bias, out_dtype):
    for name, mat in (("mat_a", mat_a), ("mat_b", mat_b)):
        if mat.dtype not in _ALLOWED:
            raise RuntimeError(f"Expected {name} to be Float32, BFloat16 or Float16 matrix, got "
                               f"{D.SCALAR_TYPE_NAME[mat.dtype]}")
    if mat_a.dim() not in (2, 3):
        raise RuntimeError("mat_a has to be 2 or 3d")
    if mat_b.dim() not in (2, 3):
        raise RuntimeError("mat_b has to be 2 or 3d")
    a_is_2d, b_is_2d = mat_a.dim() == 2, mat_b.dim() == 2
    if (not a_is_2d or not b_is_2d) and mat_a.size(-1) != mat_b.size(-2):
        raise RuntimeError("contraction dimension of mat_a and mat_b must match")
    _check_strides(mat_a)
    _check_strides(mat_b)
    if (offs is not None) != (a_is_2d or b_is_2d):
        raise RuntimeError("Have to provide offsets if there is a 2d matrix, or no offset if both matrices are 3d")
    if offs is not None:
        if offs.dim() != 1:
            raise RuntimeError("offs has to be 1D")
        if offs.dtype is not D.int32:
            raise RuntimeError("Offsets have to be int32")
    if bias is not None:
        raise RuntimeError("Bias not supported yet")
    if (out_dtype if out_dtype is not None else mat_a.dtype) is not mat_a.dtype:
        raise RuntimeError("Grouped gemm output dtype must match `mat_a` dtype")
    if a_is_2d and not b_is_2d and offs.size(0) != mat_b.size(0):
        raise RuntimeError("matrix batch sizes have to match")
    if not a_is_2d and b_is_2d and offs.size(0) != mat_a.size(0):
        raise RuntimeError("matrix batch sizes have to match")
    if not a_is_2d and not b_is_2d and mat_a.size(0) != mat_b.size(0):
        raise RuntimeError("batched dimension has to match")
    if mat_a.dtype is not mat_b.dtype:   # what ATen's mm_out says of a result in mat_a's dtype
        raise RuntimeError(f"Expected out tensor to have dtype {_C10_NAME[mat_b.dtype]}, but got "
                           f"{_C10_NAME[mat_a.dtype]} instead")


def _bounds(offs):
    """(start, end) of each group; the offsets are read on the host, as ATen's fallback does."""
    start, out = 0, []
    for end in offs.tolist():
        out.append((start, max(start, end)))
        start = end
    return out


def grouped_mm(mat_a, mat_b, *, offs=None, bias=None, out_dtype=None):
    """Matrix products per group: 3-d x 3-d is batched (no ``offs``); 2-d x 3-d splits mat_a's rows at ``offs``
    (group g times mat_b[g]); 3-d x 2-d splits mat_b's columns; 2-d x 2-d splits the contraction dim and returns
    (groups, M, N)."""
    _validate(mat_a, mat_b, offs, bias, out_dtype)
    a_is_2d, b_is_2d = mat_a.dim() == 2, mat_b.dim() == 2
    if not a_is_2d and not b_is_2d:
        return _bmm(mat_a, mat_b)
    bounds = _bounds(offs)
    if a_is_2d and not b_is_2d:
        m = mat_a.size(0)
        pieces = [mat_a[s:e] @ mat_b[g] for g, (s, e) in enumerate(bounds) if s < m]
        covered = sum(p.size(0) for p in pieces)
        pieces.append(_zeros(m - covered, mat_b.size(-1), dtype=mat_a.dtype, device=mat_a.device))
        return _cat(pieces, 0)
    if b_is_2d and not a_is_2d:
        n = mat_b.size(1)
        pieces = [mat_a[g] @ mat_b[:, s:e] for g, (s, e) in enumerate(bounds) if s < n]
        covered = sum(p.size(1) for p in pieces)
        pieces.append(_zeros(mat_a.size(1), n - covered, dtype=mat_a.dtype, device=mat_a.device))
        return _cat(pieces, 1)
    if not bounds:
        return _zeros(0, mat_a.size(0), mat_b.size(1), dtype=mat_a.dtype, device=mat_a.device)
    return _stack([mat_a[:, s:e] @ mat_b[s:e] for s, e in bounds], 0)
