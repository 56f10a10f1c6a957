"""Assorted torch-namespace functions: searching (searchsorted, bucketize, isin), grids and combinatorics
(meshgrid, cartesian_prod, combinations, block_diag, stacking), window functions, integration (trapezoid),
statistics (cov, corrcoef), small utilities (typename, frombuffer, range), global flags (deterministic
algorithms, float32 matmul precision, warn-always) and the Tensor methods that go with them.

Everything but searchsorted / bucketize / isin / frexp composes existing differentiable ops, so gradients
follow from theirs.
"""
from __future__ import annotations

import builtins
import itertools
import math
import operator
import warnings

import numpy as np

from ..core.c10 import dtype as D
from ..core import promotion, return_types
from ..core.factories import from_numpy
from ..core.factories import tensor as _tensor
from .operators import _check_input, cat, cumprod, cumsum, hstack, mm, sort, stack, vstack, where
from ..core.c10.memory_format import contiguous_format
from ..core.dispatch.ops_namespace import aten
from .factories import arange, empty, linspace, ones, zeros
from ..core.c10.storage import UntypedStorage
from ..core.tensor import Size, Tensor, _wrap_dim

__all__ = []

_builtin_range = builtins.range

if not hasattr(return_types, "frexp"):
    return_types._make("frexp", ("mantissa", "exponent"))


def _export(fn):
    __all__.append(fn.__name__)
    return fn


def _is_int(v):
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


# C++ names torch's messages use for dtypes
_SCALAR_TYPE = {"bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int", "int64": "Long",
                "float16": "Half", "bfloat16": "BFloat16", "float32": "Float", "float64": "Double"}
_CPP_TYPE = {"bool": "bool", "uint8": "unsigned char", "int8": "signed char", "int16": "short int", "int32": "int",
             "int64": "long int", "float16": "c10::Half", "bfloat16": "c10::BFloat16", "float32": "float",
             "float64": "double"}


def _short(dt):
    return str(dt).rsplit(".", 1)[-1]


def _options(dt, device, *, layout_default, pinned_default):
    """torch's printout of TensorOptions in argument errors."""
    return (f"TensorOptions(dtype={_CPP_TYPE[_short(dt)]}, device={device}, layout=Strided"
            f"{' (default)' if layout_default else ''}, requires_grad=false (default), pinned_memory=false"
            f"{' (default)' if pinned_default else ''}, memory_format=(nullopt))")


def _device_of(device):
    return "cpu" if device is None else str(device)


# --- searching ------------------------------------------------------------------------------------------------

@_export
def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None):
    """searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None) -> Tensor"""
    _check_input(sorted_sequence, "searchsorted", "sorted_sequence")
    op = aten.searchsorted.Tensor if isinstance(input, Tensor) else aten.searchsorted.Scalar
    return op(sorted_sequence, input, out_int32=out_int32, right=right, side=side, sorter=sorter)


@_export
def bucketize(input, boundaries, *, out_int32=False, right=False):
    """bucketize(input, boundaries, *, out_int32=False, right=False) -> Tensor"""
    _check_input(boundaries, "bucketize", "boundaries", 2)
    op = aten.bucketize.Tensor if isinstance(input, Tensor) else aten.bucketize.Scalar
    return op(input, boundaries, out_int32=out_int32, right=right)


@_export
def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """isin(elements, test_elements, *, assume_unique=False, invert=False) -> Tensor"""
    if isinstance(elements, Tensor):
        op = aten.isin.Tensor_Tensor if isinstance(test_elements, Tensor) else aten.isin.Tensor_Scalar
    elif isinstance(test_elements, Tensor):
        op = aten.isin.Scalar_Tensor
    else:
        raise TypeError(f"isin() received an invalid combination of arguments - got ({type(elements).__name__}, "
                        f"{type(test_elements).__name__}), but expected one of:\n"
                        " * (Tensor elements, Tensor test_elements, *, bool assume_unique = False, "
                        "bool invert = False, Tensor out = None)\n"
                        " * (Number element, Tensor test_elements, *, bool assume_unique = False, "
                        "bool invert = False, Tensor out = None)\n"
                        " * (Tensor elements, Number test_element, *, bool assume_unique = False, "
                        "bool invert = False, Tensor out = None)\n")
    return op(elements, test_elements, assume_unique=assume_unique, invert=invert)


@_export
def frexp(input):
    """frexp(input) -> (Tensor mantissa, Tensor exponent): input = mantissa * 2**exponent, |mantissa| in [0.5, 1)."""
    _check_input(input, "frexp")
    return return_types.frexp(*aten.frexp.Tensor(input))


@_export
def msort(input):
    """msort(input) -> Tensor: ``input`` sorted along its first dimension."""
    _check_input(input, "msort")
    return sort(input, dim=0).values


# --- grids, combinatorics, stacking ----------------------------------------------------------------------------

def _check_elements(tensors):
    """torch's TypeError for a non-Tensor in a list of tensors."""
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got {type(t).__name__}")


def _tensor_list(tensors):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return tuple(tensors[0])
    return tuple(tensors)


@_export
def meshgrid(*tensors, indexing=None):
    """meshgrid(*tensors, indexing=None) -> tuple of Tensors (expanded views of the inputs)."""
    tensors = _tensor_list(tensors)
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    _check_elements(tensors)
    for t in tensors:
        if t.dim() > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t}")
    for t in tensors[1:]:
        if t.dtype is not tensors[0].dtype:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
        if t.device != tensors[0].device:
            raise RuntimeError("meshgrid expects all tensors to have the same device")
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the indexing argument.",
                      UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}')
    n = len(tensors)
    # "xy" is "ij" with the first two dimensions swapped
    order = list(_builtin_range(n))
    if indexing == "xy" and n >= 2:
        order[0], order[1] = 1, 0
    shape = [0] * n
    for i, t in enumerate(tensors):
        shape[order[i]] = t.numel()
    grids = []
    for i, t in enumerate(tensors):
        view = [1] * n
        view[order[i]] = -1
        grids.append(t.reshape(view).expand(shape))
    return tuple(grids)


@_export
def cartesian_prod(*tensors):
    """cartesian_prod(*tensors) -> Tensor: one row per element of the product (the tensor itself for one input)."""
    tensors = _tensor_list(tensors)
    for t in tensors:
        if t.dim() != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([g.flatten() for g in grids], dim=1)


@_export
def combinations(input, r=2, with_replacement=False):
    """combinations(input, r=2, with_replacement=False) -> Tensor of shape (number of combinations, r)."""
    _check_input(input, "combinations")
    if input.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return empty(0, dtype=input.dtype, device=input.device)
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    idx = list(pick(_builtin_range(input.numel()), r))
    index = _tensor(np.asarray(idx, dtype=np.int64).reshape(-1), device=input.device)
    return input.index_select(0, index).reshape(len(idx), r)


@_export
def block_diag(*tensors):
    """block_diag(*tensors) -> Tensor: the inputs (0, 1 or 2-D) on the diagonal of a block matrix."""
    if not tensors:
        return empty(1, 0)
    for i, t in enumerate(tensors):
        _check_input(t, "block_diag", "tensors")
        if t.dim() > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                               f"{t.dim()} dimensions")
    device = tensors[0].device
    for i, t in enumerate(tensors[1:], 1):
        if t.device != device:
            raise RuntimeError(f"torch.block_diag: input tensors must all be on the same device. Input 0 is on "
                               f"device {device} and input {i} is on device {t.device}.")
    dt = promotion.result_type(*tensors)
    mats = [t.reshape(1, 1) if t.dim() == 0 else t.reshape(1, -1) if t.dim() == 1 else t for t in tensors]
    total = sum(m.shape[1] for m in mats)
    rows, col = [], 0
    for m in mats:
        h, w = m.shape
        left = zeros(h, col, dtype=dt, device=device)
        right = zeros(h, total - col - w, dtype=dt, device=device)
        rows.append(cat([left, m.to(dt), right], dim=1))
        col += w
    return cat(rows, dim=0)


def _check_stack_list(tensors, name):
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{name}(): argument 'tensors' (position 1) must be tuple of Tensors, not "
                        f"{type(tensors).__name__}")
    if not tensors:
        raise RuntimeError(f"{name} expects a non-empty TensorList")
    _check_elements(tensors)


@_export
def column_stack(tensors, *, out=None):
    """column_stack(tensors, *, out=None) -> Tensor: 0/1-D inputs become columns, then hstack."""
    _check_stack_list(tensors, "column_stack")
    cols = [t.reshape(t.numel(), 1) if t.dim() <= 1 else t for t in tensors]
    return hstack(cols, out=out)


@_export
def atleast_3d(*tensors):
    """atleast_3d(*tensors): (1, 1, 1) for 0-D, (1, n, 1) for 1-D, (m, n, 1) for 2-D; a tuple for several."""
    def one(t):
        _check_input(t, "atleast_3d")
        if t.dim() == 0:
            return t.reshape(1, 1, 1)
        if t.dim() == 1:
            return t.unsqueeze(0).unsqueeze(-1)
        if t.dim() == 2:
            return t.unsqueeze(-1)
        return t
    if len(tensors) == 1 and isinstance(tensors[0], Tensor):
        return one(tensors[0])
    return tuple(one(t) for t in _tensor_list(tensors))


@_export
def dstack(tensors, *, out=None):
    """dstack(tensors, *, out=None) -> Tensor: atleast_3d, then cat along the third dimension."""
    _check_stack_list(tensors, "dstack")
    return cat(list(atleast_3d(list(tensors))), dim=2, out=out) if out is not None else \
        cat(list(atleast_3d(list(tensors))), dim=2)


@_export
def row_stack(tensors, *, out=None):
    """row_stack(tensors, *, out=None) -> Tensor: alias of vstack."""
    return vstack(tensors, out=out)


# --- factories ----------------------------------------------------------------------------------------------

def _finish_factory(r, out, requires_grad):
    if out is not None:
        out.resize_(r.shape)
        out.copy_(r)
        return out
    if requires_grad:
        r.requires_grad_(True)
    return r


@_export
def logspace(start, end, steps, base=10.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False,
             pin_memory=False):
    """logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False) -> Tensor"""
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    if dtype is None:
        dtype = out.dtype if out is not None else D.get_default_dtype()
    device = out.device if out is not None and device is None else device
    # computed in float64 and rounded once to the result dtype (integral results truncate, as torch's)
    exponents = linspace(start, end, steps, dtype=D.float64, device=device)
    r = aten.pow.Scalar(float(base), exponents).to(dtype)
    return _finish_factory(r, out, requires_grad)


def _range_impl(start, end, step, out, dtype, device, requires_grad):
    warnings.warn("torch.range is deprecated and will be removed in a future release because its behavior is "
                  "inconsistent with Python's range builtin. Instead, use torch.arange, which produces values in "
                  "[start, end).", UserWarning, stacklevel=3)
    start, end, step = (float(v) if isinstance(v, Tensor) else v for v in (start, end, step))
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    if dtype is None:
        dtype = out.dtype if out is not None else D.get_default_dtype()
    size = math.floor((end - start) / step) + 1
    r = (arange(size, dtype=D.float64, device=device) * float(step) + float(start)).to(dtype)
    return _finish_factory(r, out, requires_grad)


# --- window functions -----------------------------------------------------------------------------------------

def _window(name, window_length, periodic, dtype, device, requires_grad, compute):
    dtype = D.get_default_dtype() if dtype is None else dtype
    if not dtype.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: "
                           + _options(dtype, _device_of(device), layout_default=True, pinned_default=False))
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={window_length}")
    if window_length == 0:
        r = empty(0, dtype=dtype, device=device)
    elif window_length == 1:
        r = ones(1, dtype=dtype, device=device)
    else:
        n = window_length + 1 if periodic else window_length
        r = compute(arange(n, dtype=dtype, device=device), n)
        if periodic:
            r = r.narrow(0, 0, window_length)
    return _finish_factory(r, None, requires_grad)


def _hamming(alpha, beta):
    return lambda k, n: (k * (math.pi * 2.0 / (n - 1))).cos() * (-beta) + alpha


@_export
def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False,
                pin_memory=False):
    """hann_window(window_length, periodic=True, *, dtype=None, device=None, requires_grad=False) -> Tensor"""
    return _window("hann_window", window_length, periodic, dtype, device, requires_grad, _hamming(0.5, 0.5))


@_export
def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, layout=None, device=None,
                   requires_grad=False, pin_memory=False):
    """hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, device=None) -> Tensor"""
    return _window("hamming_window", window_length, periodic, dtype, device, requires_grad, _hamming(alpha, beta))


def _blackman(k, n):
    a = k * (math.pi / (n - 1))
    return (a * 4).cos() * 0.08 - (a * 2).cos() * 0.5 + 0.42


@_export
def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False,
                    pin_memory=False):
    """blackman_window(window_length, periodic=True, *, dtype=None, device=None, requires_grad=False) -> Tensor"""
    return _window("blackman_window", window_length, periodic, dtype, device, requires_grad, _blackman)


def _bartlett(k, n):
    a = k * (2.0 / (n - 1))
    half = ((n - 1) >> 1) + 1
    return cat([a.narrow(0, 0, half), 2 - a.narrow(0, half, n - half)])


@_export
def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False,
                    pin_memory=False):
    """bartlett_window(window_length, periodic=True, *, dtype=None, device=None, requires_grad=False) -> Tensor"""
    return _window("bartlett_window", window_length, periodic, dtype, device, requires_grad, _bartlett)


@_export
def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None, device=None,
                  requires_grad=False, pin_memory=False):
    """kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, device=None) -> Tensor"""
    def compute(k, n):
        alpha = (n - 1) / 2.0
        ratio = (k - alpha) / alpha
        return aten.i0.default((1 - ratio * ratio).sqrt() * beta) / float(np.i0(beta))
    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad, compute)


# --- indices ------------------------------------------------------------------------------------------------

def _triangle_indices(name, row, col, offset, dtype, device, upper):
    for arg, v in (("row", row), ("col", col)):
        if v < 0:
            raise RuntimeError(f"{arg} must be non-negative, got{v}")
    if dtype not in (D.int64, D.int32):
        raise RuntimeError(f"\"{name}\" not implemented for '{D.SCALAR_TYPE_NAME.get(dtype, dtype)}'")
    rows, cols = (np.triu_indices if upper else np.tril_indices)(row, offset, col)
    return _tensor(np.stack([rows, cols]).astype(dtype.np).reshape(2, -1), device=device)


@_export
def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The (2, N) row and column indices of the lower triangle of a ``row`` x ``col`` matrix, row by row;
    ``offset`` moves the diagonal up (positive) or down."""
    return _triangle_indices("tril_indices", row, col, offset, D.int64 if dtype is None else dtype, device, False)


@_export
def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The (2, N) row and column indices of the upper triangle of a ``row`` x ``col`` matrix, row by row."""
    return _triangle_indices("triu_indices", row, col, offset, D.int64 if dtype is None else dtype, device, True)


@_export
def pdist(input, p=2):
    """The p-norm distance between each pair of rows of an (N, M) input: the N(N-1)/2 upper-triangle entries
    of ``cdist(input, input)``, row by row (differentiable; a zero distance has gradient 0, as torch's)."""
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    n = input.shape[0]
    i, j = triu_indices(n, n, 1, device=input.device)
    return aten.linalg_vector_norm.default(input[i] - input[j], float(p), [1], False)


@_export
def unravel_index(indices, shape):
    """unravel_index(indices, shape) -> tuple of Tensors: the coordinates of flat ``indices`` in ``shape``."""
    if not isinstance(indices, Tensor):
        raise AttributeError(f"'{type(indices).__name__}' object has no attribute 'is_complex'")
    if indices.is_floating_point() or indices.dtype is D.bool:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    if _is_int(shape):
        shape = (int(shape),)
    elif isinstance(shape, (list, tuple)):
        for d in shape:
            if not _is_int(d):
                raise TypeError(f"expected 'shape' sequence to only contain ints, but got {type(d)}")
        shape = tuple(int(d) for d in shape)
    else:
        raise TypeError(f"expected 'shape' to be int or sequence of ints, but got {type(shape)}")
    if any(d < 0 for d in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {shape}")
    coefs = list(reversed(list(itertools.accumulate(reversed(shape[1:] + (1,)), func=operator.mul))))
    dev = indices.device
    r = indices.unsqueeze(-1).floor_divide(_tensor(coefs, dtype=D.int64, device=dev)) \
        % _tensor(list(shape), dtype=D.int64, device=dev)
    return r.unbind(-1)


# --- integration ----------------------------------------------------------------------------------------------

def _trap_dim(y, dim):
    if y.dim() == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    return _wrap_dim(dim, y.dim())


def _sl(t, dim, start, stop):
    return t.narrow(dim, start, max(stop - start, 0))


def _x_spacing(name, y, x, dim):
    if y.dtype is D.bool or x.dtype is D.bool:
        raise RuntimeError(f"{name}: received a bool input for `x` or `y`, but bool is not supported")
    if x.dim() == 1:
        if x.shape[0] != y.shape[dim]:
            raise RuntimeError(f"{name}: There must be one `x` value for each sample point")
        view = [1] * y.dim()
        view[dim] = x.shape[0]
        x = x.reshape(view)
    elif x.dim() < y.dim():
        x = x.reshape([1] * (y.dim() - x.dim()) + list(x.shape))
    n = x.shape[dim]
    return _sl(x, dim, 1, n) - _sl(x, dim, 0, n - 1)


def _trapezoid(name, y, x, dx, dim):
    _check_input(y, name, "y")
    dim = _trap_dim(y, dim)
    n = y.shape[dim]
    if n == 0:
        return zeros([s for i, s in enumerate(y.shape) if i != dim], dtype=y.dtype, device=y.device)
    if x is not None:
        spacing = _x_spacing(name, y, x, dim)
        return ((_sl(y, dim, 1, n) + _sl(y, dim, 0, n - 1)) * spacing).sum(dim) / 2.0
    if y.dtype is D.bool:
        raise RuntimeError(f"{name}: received a bool input for `y`, but bool is not supported")
    dx = 1 if dx is None else dx
    return (y.sum(dim) - (y.select(dim, 0) + y.select(dim, -1)) * 0.5) * dx


@_export
def trapezoid(y, x=None, *, dx=None, dim=-1):
    """trapezoid(y, x=None, *, dx=None, dim=-1) -> Tensor: the trapezoidal rule along ``dim``."""
    if x is not None and dx is not None:
        raise TypeError("trapezoid() received an invalid combination of arguments - got both `x` and `dx`")
    return _trapezoid("trapezoid", y, x, dx, dim)


@_export
def trapz(y, x=None, *, dx=None, dim=-1):
    """trapz(y, x=None, *, dx=1, dim=-1) -> Tensor: alias of trapezoid."""
    return trapezoid(y, x, dx=dx, dim=dim)


@_export
def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """cumulative_trapezoid(y, x=None, *, dx=None, dim=-1) -> Tensor: running trapezoidal sums along ``dim``."""
    name = "cumulative_trapezoid"
    _check_input(y, name, "y")
    dim = _trap_dim(y, dim)
    n = y.shape[dim]
    pair = _sl(y, dim, 0, n - 1) + _sl(y, dim, 1, n) if n > 0 else _sl(y, dim, 0, 0)
    if x is not None:
        spacing = _x_spacing(name, y, x, dim)
        return cumsum(spacing * pair / 2.0, dim)
    if y.dtype is D.bool:
        raise RuntimeError(f"{name}: received a bool input for `y`, but bool is not supported")
    dx = 1 if dx is None else dx
    return cumsum(pair * (dx / 2.0), dim)


# --- matrices and statistics ----------------------------------------------------------------------------------

@_export
def vander(x, N=None, increasing=False):
    """vander(x, N=None, increasing=False) -> Tensor: columns are powers of ``x`` (decreasing by default)."""
    _check_input(x, "vander", "x")
    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    dt = D.promote_types(x.dtype, D.int64)
    m = x.shape[0]
    if n == 0:
        return empty(m, 0, dtype=dt, device=x.device)
    first = ones(m, 1, dtype=dt, device=x.device)
    if n == 1:
        r = first
    else:
        powers = cumprod(x.to(dt).unsqueeze(1).expand(m, n - 1), dim=1)
        r = cat([first, powers], dim=1)
    return r if increasing else r.flip(1)


def _check_weights(w, name, nobs, integral):
    if w.dim() > 1:
        raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got {name} with {w.dim()} "
                           f"dimensions")
    ok = (not w.is_floating_point() and w.dtype is not D.bool) if integral else w.is_floating_point()
    if not ok:
        kind = "integral" if integral else "floating point"
        raise RuntimeError(f"cov(): expected {name} to have {kind} dtype but got {name} with "
                           f"{_SCALAR_TYPE[_short(w.dtype)]} dtype")
    if w.numel() != nobs:
        raise RuntimeError(f"cov(): expected {name} to have the same numel as there are observations in the input "
                           f"but got {w.numel()} != {nobs}")
    if nobs and not bool(w.min().item() >= 0):
        raise RuntimeError(f"cov(): {name} cannot be negative")


@_export
def cov(input, *, correction=1, fweights=None, aweights=None):
    """cov(input, *, correction=1, fweights=None, aweights=None) -> Tensor: covariance of the rows' variables."""
    _check_input(input, "cov")
    if not _is_int(correction):
        raise TypeError(f"cov(): argument 'correction' must be int, not {type(correction).__name__}")
    if input.dim() > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.dim()} dimensions")
    x = input.reshape(1, -1) if input.dim() < 2 else input
    nobs = x.shape[1]
    w = None
    if fweights is not None:
        _check_weights(fweights, "fweights", nobs, True)
        w = fweights
    if aweights is not None:
        _check_weights(aweights, "aweights", nobs, False)
        w = aweights if w is None else w * aweights
    w_sum = w.sum() if w is not None else _tensor(nobs, dtype=D.int64, device=input.device)
    avg = (x * w if w is not None else x).sum(1) / w_sum
    if w is not None and aweights is not None and correction != 0:
        norm = w_sum - correction * (w * aweights).sum() / w_sum
    else:
        norm = w_sum - correction
    if bool((norm <= 0).item()):
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than the number of "
                      "observations.", UserWarning, stacklevel=2)
        norm = norm * 0
    xc = x - avg.unsqueeze(1)
    c = mm(xc, (xc * w if w is not None else xc).t())
    return (c / norm).squeeze()


@_export
def corrcoef(input):
    """corrcoef(input) -> Tensor: Pearson correlation coefficients of the rows' variables."""
    _check_input(input, "corrcoef")
    if input.dim() > 2:
        raise RuntimeError(f"corrcoef(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.dim()} dimensions")
    c = cov(input)
    if c.dim() == 0:
        return c / c
    std = c.diagonal().sqrt()
    c = c / std.reshape(-1, 1)
    c = c / std.reshape(1, -1)
    return c.clamp(-1, 1)


@_export
def renorm(input, p, dim, maxnorm):
    """renorm(input, p, dim, maxnorm) -> Tensor: each slice along ``dim`` scaled to p-norm at most ``maxnorm``."""
    _check_input(input, "renorm")
    if not p > 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm:g}")
    ndim = input.dim()
    if ndim <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {ndim} dimensions")
    dim = _wrap_dim(dim, ndim)
    if not input.is_floating_point():
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
                           f"{_SCALAR_TYPE[_short(input.dtype)]}")
    reduce = [d for d in _builtin_range(ndim) if d != dim]
    # 16-bit floats take their norms in float32 (torch's accumulate type)
    work = input.float() if input.dtype in (D.float16, D.bfloat16) else input
    norm = work.norm(p, dim=reduce, keepdim=True)
    factor = where(norm > maxnorm, maxnorm / (norm + 1e-7), ones((), dtype=norm.dtype, device=norm.device))
    return input * factor.to(input.dtype)   # the scale factor rounds to input's dtype first, as torch's


@_export
def narrow_copy(input, dim, start, length):
    """narrow_copy(input, dim, start, length) -> Tensor: a contiguous copy of ``input.narrow(...)``."""
    _check_input(input, "narrow_copy")
    return input.narrow(dim, start, length).clone(memory_format=contiguous_format)


# --- small utilities ------------------------------------------------------------------------------------------

@_export
def is_signed(input):
    """is_signed(input) -> bool: whether the tensor's dtype is signed (floats are, bool is not)."""
    _check_input(input, "is_signed")
    return bool(input.dtype.is_signed)


@_export
def typename(obj):
    """The type name of ``obj`` as a string: ``obj.type()`` for tensors, else ``module.qualname``."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = obj.__class__.__module__ or ""
        qualname = obj.__class__.__qualname__
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"


@_export
def is_storage(obj):
    """is_storage(obj) -> bool: whether ``obj`` is a storage object."""
    return isinstance(obj, UntypedStorage)


@_export
def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False) -> Tensor sharing ``buffer``'s memory."""
    dtype = D.as_dtype(dtype)
    view = memoryview(buffer)
    length = view.nbytes
    elsize = dtype.itemsize
    if length == 0 or count == 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if offset < 0 or offset >= length:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than buffer length ({length} "
                         f"bytes) minus 1")
    if count < 0:
        if (length - offset) % elsize:
            raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} bytes) must be a "
                             f"multiple of element size ({elsize})")
        count = (length - offset) // elsize
    elif offset + count * elsize > length:
        raise ValueError(f"requested buffer length ({count} * {elsize} bytes) after offset ({offset} bytes) must not "
                         f"be greater than actual buffer length ({length} bytes)")
    if view.readonly:
        warnings.warn("The given buffer is not writable, and PyTorch does not support non-writable tensors. This "
                      "means you can write to the underlying (supposedly non-writable) buffer using the tensor. You "
                      "may want to copy the buffer to protect its data or make it writable before converting it to "
                      "a tensor. This type of warning will be suppressed for the rest of this program.",
                      UserWarning, stacklevel=2)
    a = np.frombuffer(buffer, dtype=dtype.np, count=count, offset=offset)
    t = from_numpy(a)
    if requires_grad:
        t.requires_grad_(True)
    return t


# --- global flags -------------------------------------------------------------------------------------------

_STATE = {"deterministic": False, "warn_only": False, "matmul_precision": "highest", "warn_always": False}


@_export
def use_deterministic_algorithms(mode, *, warn_only=False):
    """Record whether ops must be deterministic. Every npusim kernel already is, so nothing else changes."""
    if not isinstance(mode, bool):
        raise TypeError(f"_set_deterministic_algorithms(): argument 'mode' (position 1) must be bool, not "
                        f"{type(mode).__name__}")
    if not isinstance(warn_only, bool):
        raise TypeError(f"_set_deterministic_algorithms(): argument 'warn_only' must be bool, not "
                        f"{type(warn_only).__name__}")
    _STATE["deterministic"] = mode
    _STATE["warn_only"] = warn_only


@_export
def are_deterministic_algorithms_enabled():
    return _STATE["deterministic"]


@_export
def is_deterministic_algorithms_warn_only_enabled():
    return _STATE["warn_only"]


@_export
def set_deterministic_debug_mode(debug_mode):
    """0 / "default": off; 1 / "warn": deterministic, warn only; 2 / "error": deterministic."""
    if isinstance(debug_mode, str):
        modes = {"default": 0, "warn": 1, "error": 2}
        if debug_mode not in modes:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, `warn`, `error`, but got "
                               f"{debug_mode}")
        debug_mode = modes[debug_mode]
    elif not isinstance(debug_mode, int):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


@_export
def get_deterministic_debug_mode():
    if not _STATE["deterministic"]:
        return 0
    return 1 if _STATE["warn_only"] else 2


@_export
def set_float32_matmul_precision(precision):
    """Store the float32 matmul precision setting ("highest", "high", "medium").

    Stored only: the emulation's matmuls always compute in full float32 precision, whatever the setting.
    """
    if not isinstance(precision, str):
        raise RuntimeError(f"set_float32_matmul_precision expects a str, but got {type(precision).__name__}")
    if precision not in ("highest", "high", "medium"):
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current"
                      f"setFloat32MatmulPrecision call has no effect.", UserWarning, stacklevel=2)
        return
    _STATE["matmul_precision"] = precision


@_export
def get_float32_matmul_precision():
    return _STATE["matmul_precision"]


@_export
def set_warn_always(b):
    """Record whether warnings torch issues once per process should be issued every time."""
    if not isinstance(b, bool):
        raise RuntimeError(f"setWarnOnlyOnce expects a bool, but got {type(b).__name__}")
    _STATE["warn_always"] = b


@_export
def is_warn_always_enabled():
    return _STATE["warn_always"]


# --- Tensor methods -------------------------------------------------------------------------------------------

def _bind(name, fn):
    fn.__name__ = fn.__qualname__ = name
    setattr(Tensor, name, fn)


def _fill_diagonal_(self, fill_value, wrap=False):
    nd = self.dim()
    if nd < 2:
        raise RuntimeError("dimensions must larger than 1")
    height, width = self.shape[0], self.shape[1]
    if nd > 2 and any(s != height for s in self.shape):
        raise RuntimeError("all dimensions of input must be of equal length")
    step = sum(self.stride())
    size = min(height, width)
    offset = self.storage_offset()
    if wrap and nd == 2 and height > width + 1:
        # the diagonal restarts every width + 1 rows of a tall matrix
        wrap_size = (self.numel() + width) // (width + 1) - size
        self.as_strided((wrap_size,), (step,), offset + self.stride(0) * (width + 1)).fill_(fill_value)
    self.as_strided((size,), (step,), offset).fill_(fill_value)
    return self


def _new(self, *args, device=None):
    """Legacy constructor: a new tensor of ``self``'s dtype and device (sizes, data, or an alias of a tensor)."""
    if device is not None and str(device).split(":")[0] != self.device.type:
        raise RuntimeError(f"legacy constructor expects device type: {self.device.type} but device type: "
                           f"{str(device).split(':')[0]} was passed")
    kw = {"dtype": self.dtype, "device": self.device}
    if not args:
        return empty(0, **kw)
    if len(args) == 1:
        a = args[0]
        if isinstance(a, Tensor):
            if a.dtype is not self.dtype or a.device != self.device:
                expected = _options(self.dtype, self.device, layout_default=False, pinned_default=True)
                got = _options(a.dtype, a.device, layout_default=False, pinned_default=True)
                raise TypeError(f"expected {expected} (got {got})")
            return aten.alias.default(a)
        if isinstance(a, Size) or _is_int(a):
            return empty(a, **kw)
        if isinstance(a, (list, tuple)):
            return _tensor(a, **kw)
        raise TypeError(f"new(): data must be a sequence (got {type(a).__name__})")
    if all(_is_int(a) for a in args):
        return empty(*args, **kw)
    got = ", ".join(type(a).__name__ for a in args)
    raise TypeError(f"new() received an invalid combination of arguments - got ({got}), but expected one of:\n"
                    " * (*, torch.device device = None)\n * (Storage storage)\n * (*, object data_ptr)\n"
                    " * (tuple of ints size, *, torch.device device = None)\n * (object data, *, torch.device device"
                    " = None)\n")


_bind("cov", lambda self, *, correction=1, fweights=None, aweights=None:
      cov(self, correction=correction, fweights=fweights, aweights=aweights))
_bind("corrcoef", lambda self: corrcoef(self))
_bind("msort", lambda self: msort(self))
_bind("frexp", lambda self: frexp(self))
_bind("fill_diagonal_", _fill_diagonal_)
_bind("renorm", lambda self, p, dim, maxnorm: renorm(self, p, dim, maxnorm))
_bind("renorm_", lambda self, p, dim, maxnorm: self.copy_(renorm(self, p, dim, maxnorm)))
_bind("split_with_sizes", lambda self, split_sizes, dim=0: tuple(aten.split_with_sizes.default(self, split_sizes, dim)))
_bind("narrow_copy", lambda self, dim, start, length: narrow_copy(self, dim, start, length))
_bind("new", _new)


# ``range`` last: the module's own code uses the builtin under another name
@_export
def range(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """range(start, end, step=1, *, dtype=None, device=None) -> Tensor: [start, end] inclusive (deprecated)."""
    if end is None:
        raise TypeError('range() missing 1 required positional arguments: "end"')
    return _range_impl(start, end, step, out, dtype, device, requires_grad)
