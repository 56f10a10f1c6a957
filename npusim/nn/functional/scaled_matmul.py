"""``scaled_mm`` / ``scaled_grouped_mm`` and their enums: matrix products of float8 matrices with scales.

torch 2.13's CPU build runs ``scaled_mm`` for the TensorWise and RowWise recipes (the blockwise ones and swizzled
scales are GPU layouts): ``(mat_a * scale_a) @ (mat_b * scale_b) + bias`` computed in float32, then cast to
``output_dtype`` (the float8 cast saturates as torch's does). Its ``scaled_grouped_mm`` has no CPU kernel, and
neither has npusim's: the call raises the dispatcher's "Could not run" error, as torch's does.
"""
from __future__ import annotations

import enum

from ...core.c10 import dtype as D
from ...core.c10 import limited_dtypes as L
from ...core.dispatch.ops_namespace import aten
from ...core.tensor import Tensor


class _ScalingType(enum.IntEnum):
    """How a matrix of ``scaled_mm`` was scaled (``torch.nn.functional.ScalingType``)."""

    TensorWise = 0
    RowWise = 1
    BlockWise1x16 = 2
    BlockWise1x32 = 3
    BlockWise1x128 = 4
    BlockWise128x128 = 5


class _SwizzleType(enum.IntEnum):
    """The layout of ``scaled_mm``'s scales (``torch.nn.functional.SwizzleType``)."""

    NO_SWIZZLE = 0
    SWIZZLE_32_4_4 = 1


ScalingType, SwizzleType = _ScalingType, _SwizzleType


def _expand_single_value(v):
    return v if isinstance(v, (list, tuple)) else [v]


def _as_ints(values):
    return [v.value for v in values]     # torch's _enum_list_as_int_list: a plain int has no .value


def _dims(t: Tensor) -> str:
    return "[" + ", ".join(str(s) for s in t.shape) + "]"


def _strides(t: Tensor) -> str:
    return "[" + ", ".join(str(s) for s in t.stride()) + "]"


def _configuration_error(mat_a, scale_a, mat_b, scale_b) -> ValueError:
    name = D.SCALAR_TYPE_NAME
    m, n = mat_a.shape[0], mat_b.shape[1]
    return ValueError(
        "Invalid scaling configuration.\n"
        "- For TensorWise scaling, a and b should be float8, scales should be float and singletons.\n"
        f"- For RowWise scaling, a and b should be float8, scales should be float, scale_a should be ({m}, 1) and "
        f"scale_b should be (1, {n}), and both should be contiguous.\n"
        f"Got mat_a.dtype()={name[mat_a.dtype]}, scale_a.dtype()={name[scale_a.dtype]}, scale_a.size()="
        f"{_dims(scale_a)}, scale_a.stride()={_strides(scale_a)}, mat_b.dtype()={name[mat_b.dtype]}, "
        f"scale_b.dtype()={name[scale_b.dtype]}, scale_b.size()={_dims(scale_b)} and scale_b.stride()="
        f"{_strides(scale_b)}")


def _check_scaling(mat_a, scale_a, recipe_a, mat_b, scale_b, recipe_b):
    """torch's CPU checks of the recipes: TensorWise or RowWise on both sides, float8 matrices, float32 scales."""
    float8 = mat_a.dtype in L.FLOAT8_DTYPES and mat_b.dtype in L.FLOAT8_DTYPES
    if len(scale_a) == len(scale_b) == len(recipe_a) == len(recipe_b) == 1:
        sa, sb, ra, rb = scale_a[0], scale_b[0], recipe_a[0], recipe_b[0]
        floats = sa.dtype is D.float32 and sb.dtype is D.float32
        if ra == rb == _ScalingType.TensorWise and float8 and floats and sa.numel() == 1 and sb.numel() == 1:
            return
        if ra == rb == _ScalingType.RowWise:
            for which, s in (("scale_a", sa), ("scale_b", sb)):
                if s.stride(1) != 1:
                    raise ValueError(f"expected {which}.stride(1) to be 1, but got {s.stride(1)}")
            if float8 and floats and tuple(sa.shape) == (mat_a.shape[0], 1) and \
                    tuple(sb.shape) == (1, mat_b.shape[1]) and sa.is_contiguous() and sb.is_contiguous():
                return
        raise _configuration_error(mat_a, sa, mat_b, sb)
    raise _configuration_error(mat_a, scale_a[0], mat_b, scale_b[0])


def scaled_mm(mat_a, mat_b, scale_a, scale_recipe_a, scale_b, scale_recipe_b, swizzle_a=None, swizzle_b=None,
              bias=None, output_dtype=D.bfloat16, contraction_dim=(), use_fast_accum=False):
    """``mm(mat_a, mat_b)`` of float8 matrices decoded by their scales (``scale_recipe_a`` / ``_b`` say how:
    TensorWise, one scale; RowWise, one per row of ``mat_a`` and per column of ``mat_b``), plus ``bias``, as
    ``output_dtype`` (None: ``mat_a``'s dtype). Computed in float32, as torch's CPU kernel computes it."""
    scale_a, scale_b = _expand_single_value(scale_a), _expand_single_value(scale_b)
    recipe_a = _as_ints(_expand_single_value(scale_recipe_a))
    recipe_b = _as_ints(_expand_single_value(scale_recipe_b))
    for swizzle in (swizzle_a, swizzle_b):
        if swizzle is not None:
            _as_ints(_expand_single_value(swizzle))    # checked as torch checks them; the CPU kernel ignores them
    if mat_a.dim() != 2:
        raise ValueError("mat_a must be a matrix")
    if mat_b.dim() != 2:
        raise ValueError("mat_b must be a matrix")
    if mat_a.shape[1] != mat_b.shape[0]:
        raise ValueError(f"mat_a and mat_b shapes cannot be multiplied ({mat_a.shape[0]}x{mat_a.shape[1]} and "
                         f"{mat_b.shape[0]}x{mat_b.shape[1]})")
    _check_scaling(mat_a, scale_a, recipe_a, mat_b, scale_b, recipe_b)
    n = mat_b.shape[1]
    if bias is not None and bias.numel() != n:
        raise ValueError(f"Bias must be size {n} but got {bias.numel()}")
    decoded_a = aten.mul.Tensor(aten._to_copy.default(mat_a, dtype=D.float32), scale_a[0])
    decoded_b = aten.mul.Tensor(aten._to_copy.default(mat_b, dtype=D.float32), scale_b[0])
    out = aten.mm.default(decoded_a, decoded_b)
    if bias is not None:
        out = aten.add.Tensor(out, aten._to_copy.default(bias, dtype=D.float32))
    return aten._to_copy.default(out, dtype=mat_a.dtype if output_dtype is None else output_dtype)


def scaled_grouped_mm(mat_a, mat_b, scale_a, scale_recipe_a, scale_b, scale_recipe_b, swizzle_a=None,
                      swizzle_b=None, bias=None, offs=None, output_dtype=D.bfloat16, contraction_dim=(),
                      use_fast_accum=False):
    """The grouped form of :func:`scaled_mm` (groups of rows split by ``offs``). torch 2.13 has no CPU kernel for
    it, nor has npusim any: the call raises the dispatcher's "Could not run" error, as torch's does."""
    scale_a, scale_b = _expand_single_value(scale_a), _expand_single_value(scale_b)
    recipe_a = _as_ints(_expand_single_value(scale_recipe_a))
    recipe_b = _as_ints(_expand_single_value(scale_recipe_b))
    swizzles_a = _as_ints(_expand_single_value(swizzle_a)) if swizzle_a is not None else []
    swizzles_b = _as_ints(_expand_single_value(swizzle_b)) if swizzle_b is not None else []
    return aten._scaled_grouped_mm_v2.default(mat_a, mat_b, scale_a, recipe_a, swizzles_a, scale_b, recipe_b,
                                              swizzles_b, offs, bias, output_dtype, list(contraction_dim),
                                              use_fast_accum)


__all__ = ["ScalingType", "SwizzleType", "scaled_grouped_mm", "scaled_mm"]
