"""Argument checks shared by ``npusim.nn.functional``'s modules, with torch's argument-parser messages."""
from __future__ import annotations

import numbers
import warnings

from ...core.c10 import dtype as D
from ...core.tensor import Tensor


def _check_tensor(x, fname, argname="input", pos=1):
    if not isinstance(x, Tensor):
        raise TypeError(f"{fname}(): argument '{argname}' (position {pos}) must be Tensor, not {type(x).__name__}")


# --- reductions -----------------------------------------------------------------------------------------------------

_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


def _reduction_enum(reduction) -> int:
    try:
        return _REDUCTIONS[reduction]
    except (KeyError, TypeError):
        raise ValueError(f"{reduction} is not a valid value for reduction") from None


def _legacy_reduction(size_average, reduce) -> str:
    """torch's mapping of the deprecated size_average / reduce flags to a reduction string (with its warning)."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    ret = "mean" if size_average and reduce else ("sum" if reduce else "none")
    warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{ret}' instead.",
                  stacklevel=3)
    return ret


def _resolve_reduction(size_average, reduce, reduction) -> str:
    """``reduction``, or what the deprecated flags say when either is given."""
    if size_average is not None or reduce is not None:
        return _legacy_reduction(size_average, reduce)
    return reduction


def _no_grad_arg(t, argname, fname):
    if t is not None and t.requires_grad:
        raise RuntimeError(f"The function '{fname}' is not differentiable with respect to argument '{argname}'. "
                           "This input cannot have requires_grad True.")


# --- ints, int lists and bools as torch's argument parser reads them ------------------------------------------------

def _int_or_int_tensor(v):
    """An int as torch's argument parser reads one: Python or NumPy ints and one-element integer tensors."""
    if isinstance(v, bool):
        return None
    if isinstance(v, numbers.Integral):
        return int(v)
    if isinstance(v, Tensor) and v.numel() == 1 and not v.is_floating_point() and v.dtype is not D.bool:
        return int(v.item())
    return None


def _int_list_arg(v, fname, argname, pos):
    """An ``int[1]`` argument as a list (an int stands for one copy), with the parser's TypeError."""
    if isinstance(v, (list, tuple)):
        out = []
        for i, x in enumerate(v):
            n = _int_or_int_tensor(x)
            if n is None:
                raise TypeError(f"{fname}(): argument '{argname}' (position {pos}) must be tuple of ints, but found "
                                f"element of type {type(x).__name__} at pos {i}")
            out.append(n)
        return out
    n = _int_or_int_tensor(v)
    if n is None:
        raise TypeError(f"{fname}(): argument '{argname}' (position {pos}) must be tuple of ints, not "
                        f"{type(v).__name__}")
    return [n]


def _int_arg(v, fname, argname, pos):
    n = _int_or_int_tensor(v)
    if n is None:
        raise TypeError(f"{fname}(): argument '{argname}' (position {pos}) must be int, not {type(v).__name__}")
    return n


def _bool_arg(v, fname, argname, pos):
    if not isinstance(v, bool):
        raise TypeError(f"{fname}(): argument '{argname}' (position {pos}) must be bool, not {type(v).__name__}")


def _check_dim_range(input, fname, lo, hi):
    """aten's checkDimRange: lo <= input.dim() < hi."""
    if not lo <= input.dim() < hi:
        raise RuntimeError(f"Expected {lo} to {hi - 1} dimensions, but got {input.dim()}-dimensional tensor for "
                           f"argument #1 'self' (while checking arguments for {fname})")


def _check_one_int(values, fname, argname):
    if len(values) != 1:
        raise RuntimeError(f"{fname}() argument '{argname}' should contain one int (got {len(values)})")


def _is_int(v) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _is_int_list(v) -> bool:
    return _is_int(v) or (isinstance(v, (list, tuple)) and all(_is_int(x) for x in v))


# --- dtype and shape wording ----------------------------------------------------------------------------------------

def _dtype_name(t) -> str:
    return D.SCALAR_TYPE_NAME[t.dtype]


def _floating_only(input, kernel):
    if not input.is_floating_point():
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_dtype_name(input)}'")


def _sizes(t) -> str:
    return str(list(t.shape))
