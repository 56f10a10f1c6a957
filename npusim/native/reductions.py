"""Reductions and scans: sum, mean, prod, max/min, arg-max/min, var/std, norm,
all/any, logsumexp, cumsum/cumprod, softmax/log_softmax.

The kernels here decide torch's result dtype, validate dims and ``out=``
tensors with torch's messages, and hand one array call to
``npusim.kernels.reductions``. A 0-dim tensor accepts dim 0 and -1 and reduces
over nothing, as in torch.
"""
from __future__ import annotations

import functools
import warnings

import numpy as np

from ..core.c10.user_frames import user_stacklevel
from ..core.c10 import dtype as D
from ..core.c10.device import CPU
from ..core.tensor import Tensor, _wrap_dim
from ..kernels import reductions as R
from ..kernels.array_api import namespace_of
from . import common as C

FROM_NP = C.FROM_NP

# C++ type names torch prints when an out= tensor has the wrong dtype
CPP_NAME = {D.bool: "bool", D.uint8: "unsigned char", D.int8: "signed char", D.int16: "short int",
            D.int32: "int", D.int64: "long int", D.float16: "c10::Half", D.bfloat16: "c10::BFloat16",
            D.float32: "float", D.float64: "double"}


# --- helpers ------------------------------------------------------------------------------

def _dt(t: Tensor) -> D.dtype:
    return FROM_NP[t._a.dtype]


def _axes(dim, ndim):
    """An ``int[1]? dim`` argument as array axes: None/[] mean every dim; a 0-dim input reduces nothing."""
    axes = C.dims_arg(dim, ndim)
    return None if ndim == 0 else axes


def _axis(dim, ndim):
    """An ``int dim`` argument as one array axis (None for a 0-dim input)."""
    d = _wrap_dim(dim, ndim)
    return None if ndim == 0 else d


def _check_dtype_arg(dtype):
    if dtype is not None and not isinstance(dtype, D.dtype):
        raise TypeError(f"dtype must be npusim.dtype, not {type(dtype).__name__}")


def _widened(a, dtype) -> D.dtype:
    """sum/prod/cumsum result dtype: ``dtype`` if given, else integral and bool inputs become int64."""
    if dtype is not None:
        _check_dtype_arg(dtype)
        return dtype
    return D.int64 if a.dtype.kind in "biu" else FROM_NP[a.dtype]


def _out_dtype(out) -> D.dtype:
    if not isinstance(out, Tensor):
        raise TypeError(f"argument 'out' must be Tensor, not {type(out).__name__}")
    return FROM_NP[out._a.dtype]


def _require_out_dtype(out, dt: D.dtype):
    """torch's exact-dtype check for out= tensors (index outputs, explicit ``dtype=``)."""
    _check_dtype_arg(dt)
    got = _out_dtype(out)
    if got is not dt:
        raise RuntimeError(f"Expected out tensor to have dtype {CPP_NAME[dt]}, but got {CPP_NAME[got]} instead")


def _write(out, r, dev):
    """Resize ``out`` (already dtype-checked) to the result and copy the result in."""
    C.prepare_out(out, r.shape, FROM_NP[r.dtype], dev, check_cast=False)
    return C.write_out(out, r)


# --- sum / prod / mean ---------------------------------------------------------------------

# The fast path of a full sum: small float or int64 NumPy arrays, no dtype=. np.add.reduce into a 0-d
# array is what the kernel's a.sum() computes (same loop, same order) without its dtype checks and scalar
# round trip; arrays this small are far below the size the intra-op threads split.
_SMALL_SUM = 4096
_SUM_SAME_DTYPE = (np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int64))
_ndarray = np.ndarray
_empty = np.empty
_add_reduce = np.add.reduce


def sum_(self, *, dtype=None):
    try:
        a = self._a
    except AttributeError:
        _refuse_non_tensor("sum", self)
        raise
    if a.__class__ is _ndarray and a.size <= _SMALL_SUM:
        dt = a.dtype
        # dtype= naming the input's own float dtype (autocast asks for float32) takes the fast path too
        if (dtype is None or getattr(dtype, "np", None) is dt) and (dt is _SUM_SAME_DTYPE[0] or dt is _SUM_SAME_DTYPE[1]
                                                 or dt is _SUM_SAME_DTYPE[2]):
            out = _empty((), dt)
            _add_reduce(a, None, None, out)
            return C.make(out, self._device)
    return C.wrap(R.sum_(a, None, False, _widened(a, dtype).np), self._device)


def sum_dim(self, dim, keepdim=False, *, dtype=None):
    try:
        a = self._a
    except AttributeError:
        _refuse_non_tensor("sum", self)
        raise
    axes = _axes(dim, a.ndim)
    return C.wrap(R.sum_(a, axes, keepdim, _widened(a, dtype).np), self._device)


def sum_out(self, dim, keepdim=False, *, dtype=None, out=None):
    # torch computes in out's dtype (the input is cast to it), checking only an explicit dtype=
    if dtype is not None:
        _require_out_dtype(out, dtype)
    a = self._a
    axes = _axes(dim, a.ndim)
    return _write(out, R.sum_(a, axes, keepdim, _out_dtype(out).np), self._device)


def prod(self, *, dtype=None):
    a = self._a
    return C.wrap(R.prod(a, None, False, _widened(a, dtype).np), self._device)


def prod_dim(self, dim, keepdim=False, *, dtype=None):
    a = self._a
    axis = _axis(dim, a.ndim)
    return C.wrap(R.prod(a, axis, keepdim, _widened(a, dtype).np), self._device)


def prod_out(self, dim, keepdim=False, *, dtype=None, out=None):
    if dtype is not None:
        _require_out_dtype(out, dtype)
    a = self._a
    axis = _axis(dim, a.ndim)
    return _write(out, R.prod(a, axis, keepdim, _out_dtype(out).np), self._device)


def _mean_dtype(a, dtype) -> D.dtype:
    if dtype is not None:
        _check_dtype_arg(dtype)
        if not (dtype.is_floating_point or dtype.is_complex):
            raise RuntimeError("mean(): could not infer output dtype. Optional dtype must be either a floating "
                               f"point or complex dtype. Got: {C.tname(dtype)}")
        return dtype
    dt = FROM_NP[a.dtype]
    if not (dt.is_floating_point or dt.is_complex):
        raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either a floating point or "
                           f"complex dtype. Got: {C.tname(dt)}")
    return dt


def mean(self, *, dtype=None):
    try:
        a = self._a
    except AttributeError:
        _refuse_non_tensor("mean", self)
        raise
    return C.wrap(R.mean(a, None, False, _mean_dtype(a, dtype).np), self._device)


def mean_dim(self, dim, keepdim=False, *, dtype=None):
    a = self._a
    dt = _mean_dtype(a, dtype)
    return C.wrap(R.mean(a, _axes(dim, a.ndim), keepdim, dt.np), self._device)


def mean_out(self, dim, keepdim=False, *, dtype=None, out=None):
    a = self._a
    dt = _mean_dtype(a, dtype)
    if dtype is not None:
        _require_out_dtype(out, dtype)
    out_dt = _out_dtype(out)
    if not D.can_cast(dt, out_dt):
        raise RuntimeError(f"result type {C.tname(dt)} can't be cast to the desired output type {C.tname(out_dt)}")
    # computed in out's dtype (the input is cast to it), as torch
    return _write(out, R.mean(a, _axes(dim, a.ndim), keepdim, out_dt.np), self._device)


# --- max / min / amax / amin / argmax / argmin ----------------------------------------------------

def _no_dim_on_empty(name):
    return RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
                        f"reduction dim with the 'dim' argument.")


def _empty_dim(name, d):
    return IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")


def _full_extreme(self, name, fn):
    a = self._a
    if a.size == 0:
        raise _no_dim_on_empty(name)
    return C.wrap(fn(a, None, False), self._device)


def max_(self):
    return _full_extreme(self, "max", R.amax)


def min_(self):
    return _full_extreme(self, "min", R.amin)


def _extreme_with_indices(self, dim, keepdim, name, largest):
    a = self._a
    d = _wrap_dim(dim, a.ndim)
    if a.ndim == 0:
        xp = namespace_of(a)
        return a.copy(), xp.zeros((), dtype=D.int64.np)
    if a.shape[d] == 0:
        raise _empty_dim(name, d)
    return R.max_with_indices(a, d, keepdim, largest=largest)


def max_dim(self, dim, keepdim=False):
    v, i = _extreme_with_indices(self, dim, keepdim, "max", True)
    return C.make(v, self._device), C.make(i, self._device)


def min_dim(self, dim, keepdim=False):
    v, i = _extreme_with_indices(self, dim, keepdim, "min", False)
    return C.make(v, self._device), C.make(i, self._device)


def _extreme_out(self, dim, keepdim, values, indices, name, largest):
    _require_out_dtype(values, _dt(self))
    _require_out_dtype(indices, D.int64)
    v, i = _extreme_with_indices(self, dim, keepdim, name, largest)
    dev = self._device
    return _write(values, v, dev), _write(indices, i, dev)


def max_dim_max(self, dim, keepdim=False, *, max, max_values):  # noqa: A002 - torch's argument names
    return _extreme_out(self, dim, keepdim, max, max_values, "max", True)


def min_dim_min(self, dim, keepdim=False, *, min, min_indices):  # noqa: A002 - torch's argument names
    return _extreme_out(self, dim, keepdim, min, min_indices, "min", False)


def _check_empty_dims(a, dim, name):
    for given in (dim if isinstance(dim, (list, tuple)) else (dim,)):
        if a.shape[_wrap_dim(given, a.ndim)] == 0:
            raise _empty_dim(name, given)  # torch names the dim as given here


def _amax_like(self, dim, keepdim, name, fn):
    a = self._a
    try:
        axes = _axes(dim, a.ndim)
    except RuntimeError:   # a repeated dim: torch reports an empty one first
        if a.size:
            raise
        _check_empty_dims(a, dim, name)
        raise
    if a.size == 0:
        if axes is None:
            raise _no_dim_on_empty(name)
        _check_empty_dims(a, dim, name)
    return fn(a, axes, keepdim)


def amax(self, dim=(), keepdim=False):
    return C.wrap(_amax_like(self, dim, keepdim, "amax", R.amax), self._device)


def amin(self, dim=(), keepdim=False):
    return C.wrap(_amax_like(self, dim, keepdim, "amin", R.amin), self._device)


def _same_dtype_out(self, out):
    got, want = _out_dtype(out), _dt(self)
    if got is not want:
        raise RuntimeError(f"Expected the dtype for input and out to match, but got {C.tname(want)} for input's "
                           f"dtype and {C.tname(got)} for out's dtype.")


def amax_out(self, dim=(), keepdim=False, *, out=None):
    _same_dtype_out(self, out)
    return _write(out, _amax_like(self, dim, keepdim, "amax", R.amax), self._device)


def amin_out(self, dim=(), keepdim=False, *, out=None):
    _same_dtype_out(self, out)
    return _write(out, _amax_like(self, dim, keepdim, "amin", R.amin), self._device)


def _arg_extreme(self, dim, keepdim, name, fn):
    a = self._a
    if a.dtype.kind == "b":
        raise RuntimeError(f"{name}(): does not support bool input")
    if dim is None:
        if a.size == 0:
            raise IndexError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0.")
        return fn(a, None, keepdim)
    d = _wrap_dim(dim, a.ndim)
    if a.ndim == 0:
        return namespace_of(a).zeros((), dtype=D.int64.np)
    if a.shape[d] == 0:
        raise _empty_dim(name, d)
    return fn(a, d, keepdim)


def argmax(self, dim=None, keepdim=False):
    return C.make(_arg_extreme(self, dim, keepdim, "argmax", R.argmax), self._device)


def argmin(self, dim=None, keepdim=False):
    return C.make(_arg_extreme(self, dim, keepdim, "argmin", R.argmin), self._device)


def argmax_out(self, dim=None, keepdim=False, *, out=None):
    _require_out_dtype(out, D.int64)
    return _write(out, _arg_extreme(self, dim, keepdim, "argmax", R.argmax), self._device)


def argmin_out(self, dim=None, keepdim=False, *, out=None):
    _require_out_dtype(out, D.int64)
    return _write(out, _arg_extreme(self, dim, keepdim, "argmin", R.argmin), self._device)


# --- var / std ----------------------------------------------------------------------------

def _var_std(self, dim, correction, keepdim, fname, type_error, want_std, out=None):
    """(var or std, mean); warns like torch when the correction leaves no degrees of freedom.

    With ``out`` the statistics are computed in its dtype (the input is cast to it), as torch does.
    """
    a = self._a
    if not (C.is_float(a.dtype) or a.dtype.kind == "c"):
        raise RuntimeError(type_error)
    if out is not None:
        out_dt = _out_dtype(out)
        if out_dt.is_floating_point and out_dt.np != a.dtype:
            a = a.astype(out_dt.np)
    axes = _axes(dim, a.ndim)
    c = 1 if correction is None else correction
    n = R.reduced_count(a.shape, axes)
    out_numel = a.size // n if n else 0
    if (n if out_numel else 0) - c <= 0:
        warnings.warn(f"{fname}(): degrees of freedom is <= 0. Correction should be strictly less than the "
                      f"reduction factor (input numel divided by output numel).", UserWarning,
                      stacklevel=user_stacklevel())
    return R.var_mean(a, axes, c, keepdim, want_std=want_std)


_VAR_TYPES = "std and var only support floating point and complex dtypes"


def var(self, dim=None, *, correction=None, keepdim=False):
    return C.make(_var_std(self, dim, correction, keepdim, "var", _VAR_TYPES, False)[0], self._device)


def std(self, dim=None, *, correction=None, keepdim=False):
    return C.make(_var_std(self, dim, correction, keepdim, "std", _VAR_TYPES, True)[0], self._device)


def var_out(self, dim=None, *, correction=None, keepdim=False, out=None):
    r = _var_std(self, dim, correction, keepdim, "var", _VAR_TYPES, False, out)[0]
    return C.finish_out(out, r, _dt(self), self._device)


def std_out(self, dim=None, *, correction=None, keepdim=False, out=None):
    r = _var_std(self, dim, correction, keepdim, "std", _VAR_TYPES, True, out)[0]
    return C.finish_out(out, r, _dt(self), self._device)


def var_mean(self, dim=None, *, correction=None, keepdim=False):
    v, m = _var_std(self, dim, correction, keepdim, "var_mean",
                    "var_mean only support floating point and complex dtypes", False)
    return C.make(v, self._device), C.make(m, self._device)


def std_mean(self, dim=None, *, correction=None, keepdim=False):
    s, m = _var_std(self, dim, correction, keepdim, "std_mean",
                    "std_mean only support floating point and complex dtypes", True)
    return C.make(s, self._device), C.make(m, self._device)


# --- norm ---------------------------------------------------------------------------------

def _fmt_p(p) -> str:
    """A Scalar as C++ prints it (torch's error messages)."""
    return f"{float(p):g}"


def _check_norm_input(a):
    dt = FROM_NP[a.dtype]
    if not (dt.is_floating_point or dt.is_complex):
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. Got {C.tname(dt)} "
                           f"instead.")


def _vector_norm(self, p, dim, keepdim, dtype):
    a = self._a
    if p is None:
        p = 2
    if isinstance(p, str):
        raise RuntimeError("aten::norm() Expected a value of type 'number' for argument 'p' but instead found "
                           "type 'str'.")
    axes = _axes(dim, a.ndim)
    if a.size == 0 and (p < 0 or p == float("inf")):
        # max/min-like norms have no identity to give an empty reduction
        if axes is None:
            raise RuntimeError(f"linalg.vector_norm cannot compute the {_fmt_p(p)} norm on an empty tensor because "
                               f"the operation does not have an identity")
        for given in (dim if isinstance(dim, (list, tuple)) else (dim,)):
            if a.shape[_wrap_dim(given, a.ndim)] == 0:
                raise RuntimeError(f"linalg.vector_norm cannot compute the {_fmt_p(p)} norm on the dimension "
                                   f"{given}because this dimension is empty and the operation does not have an "
                                   f"identity")
    return C.wrap(R.vector_norm(a, p, axes, keepdim, dtype.np), self._device)


def norm_scalar(self, p=2):
    _check_norm_input(self._a)
    return _vector_norm(self, p, None, False, _dt(self))


def norm_dim(self, p, dim, keepdim=False):
    _check_norm_input(self._a)
    return _vector_norm(self, p, dim, keepdim, _dt(self))


def norm_dim_dtype(self, p, dim, keepdim, *, dtype):
    _check_dtype_arg(dtype)
    if not dtype.is_floating_point:
        raise RuntimeError(f"norm(): the desired output dtype should be either floating point or complex. Got "
                           f"{C.tname(dtype)} instead.")
    in_dt = _dt(self)
    if not (in_dt.is_floating_point or in_dt.is_complex):
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
                           f"{C.tname(in_dt)}")
    if D.promote_types(in_dt, dtype) is not dtype:
        raise RuntimeError(f"linalg.vector_norm: the dtype of the input ({C.tname(in_dt)}) should be convertible "
                           f"without narrowing to the specified dtype ({C.tname(dtype)})")
    return _vector_norm(self, p, dim, keepdim, dtype)


def norm_out(self, p, dim, keepdim=False, *, out=None):
    _check_norm_input(self._a)
    _require_out_dtype(out, _dt(self))
    r = _vector_norm(self, p, dim, keepdim, _dt(self))
    return _write(out, r._a, self._device)


# --- all / any ------------------------------------------------------------------------------

def _logical(fn, self, axes, keepdim):
    """Bool result; uint8 inputs keep uint8, as in torch."""
    a = self._a
    r = fn(a, axes, keepdim)
    if a.dtype == D.uint8.np:
        r = r.astype(a.dtype)
    return C.make(r, self._device)


def _dims_or_none(dim, ndim):
    """``all.dims``' dim: None reduces every dim, [] reduces none."""
    if dim is not None and len(dim) == 0:
        return ()
    axes = C.dims_arg(dim, ndim)
    return None if ndim == 0 else axes


def _logical_out(fn, name, self, dim, keepdim, out):
    dt = _out_dtype(out)
    if dt is not D.bool and dt is not D.uint8:
        raise RuntimeError(f"{name} only supports bool tensor for result, got: {C.tname(dt)}")
    a = self._a
    if dt is D.uint8 and a.dtype != dt.np:
        a = a.astype(dt.np)  # torch casts the input to a uint8 out's dtype first (0.5 -> 0)
    r = fn(a, _axis(dim, a.ndim), keepdim)
    return _write(out, r.astype(dt.np) if r.dtype != dt.np else r, self._device)


def all_(self):
    return _logical(R.all_, self, None, False)


def all_dim(self, dim, keepdim=False):
    return _logical(R.all_, self, _axis(dim, self._a.ndim), keepdim)


def all_dims(self, dim=None, keepdim=False):
    return _logical(R.all_, self, _dims_or_none(dim, self._a.ndim), keepdim)


def all_out(self, dim, keepdim=False, *, out=None):
    return _logical_out(R.all_, "all", self, dim, keepdim, out)


def any_(self):
    return _logical(R.any_, self, None, False)


def any_dim(self, dim, keepdim=False):
    return _logical(R.any_, self, _axis(dim, self._a.ndim), keepdim)


def any_dims(self, dim=None, keepdim=False):
    return _logical(R.any_, self, _dims_or_none(dim, self._a.ndim), keepdim)


def any_out(self, dim, keepdim=False, *, out=None):
    return _logical_out(R.any_, "any", self, dim, keepdim, out)


# --- logsumexp --------------------------------------------------------------------------------

def _logsumexp(self, dim, keepdim, out_dtype=None):
    a = self._a
    axes = _axes(dim, a.ndim)
    if a.dtype.kind in "biu":  # integral inputs compute in the default float dtype
        a = a.astype(D.get_default_dtype().np)
    return R.logsumexp(a, axes, keepdim, out_dtype)


def logsumexp(self, dim, keepdim=False):
    return C.wrap(_logsumexp(self, dim, keepdim), self._device)


def logsumexp_out(self, dim, keepdim=False, *, out=None):
    dt = _out_dtype(out)
    if not dt.is_floating_point:
        raise RuntimeError(f"logsumexp(): Expected floating point type for result tensor, but got: {C.tname(dt)}")
    return _write(out, _logsumexp(self, dim, keepdim, dt.np), self._device)


# --- cumsum / cumprod -------------------------------------------------------------------------

def _scan_dtype_check(kernel, dt):
    if dt is D.bool:
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")


def _make_scan(name, fn):
    kernel = f"{name}_out_cpu"

    def functional(self, dim, *, dtype=None):
        a = self._a
        axis = _axis(dim, a.ndim)
        dt = _widened(a, dtype)
        _scan_dtype_check(kernel, dt)
        return C.make(fn(a, axis, dt.np), self._device)

    def out_(self, dim, *, dtype=None, out=None):
        if dtype is not None:
            _require_out_dtype(out, dtype)
        dt = _out_dtype(out)
        a = self._a
        axis = _axis(dim, a.ndim)
        _scan_dtype_check(kernel, dt)
        return _write(out, fn(a, axis, dt.np), self._device)  # computed in out's dtype, as torch

    def inplace(self, dim, *, dtype=None):
        dt = _dt(self)
        if dtype is not None and dtype is not dt:
            _check_dtype_arg(dtype)
            raise RuntimeError(f"Bad in-place call: input tensor dtype {CPP_NAME[dt]} and output tensor dtype "
                               f"{CPP_NAME[dtype]} should match")
        a = self._a
        axis = _axis(dim, a.ndim)
        _scan_dtype_check(kernel, dt)
        return C.write_out(self, fn(a, axis, a.dtype))

    return functional, out_, inplace


cumsum, cumsum_out, cumsum_ = _make_scan("cumsum", R.cumsum)
cumprod, cumprod_out, cumprod_ = _make_scan("cumprod", R.cumprod)


# --- softmax / log_softmax --------------------------------------------------------------------

def _softmax(self, dim, dt: D.dtype, log: bool):
    a = self._a
    d = _wrap_dim(dim, a.ndim)
    if a.size == 0:
        return C.make(a.astype(dt.np), self._device)
    if not dt.is_floating_point:
        last = a.ndim == 0 or d == a.ndim - 1
        kernel = ("log_" if log else "") + ("softmax_lastdim_kernel_impl" if last else "softmax_kernel_impl")
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{C.tname(dt)}'")
    return C.make(R.softmax(a, d if a.ndim else None, dt.np, log=log), self._device)


def _result_dtype(self, dtype):
    if dtype is None:
        return _dt(self)
    _check_dtype_arg(dtype)
    return dtype


def softmax(self, dim, dtype=None):
    return _softmax(self, dim, _result_dtype(self, dtype), False)


def log_softmax(self, dim, dtype=None):
    return _softmax(self, dim, _result_dtype(self, dtype), True)


def _half_to_float_dtype(self, half_to_float):
    """aten's ``_softmax`` flag: refused on cpu (as torch CPU); elsewhere half in, float32 out (as CUDA)."""
    if not half_to_float:
        return _dt(self)
    if self._device is CPU:
        raise RuntimeError("softmax with half to float conversion is not supported on CPU")
    if self._a.dtype != D.float16.np:
        raise RuntimeError("conversion is supported for Half type only")
    return D.float32


def softmax_internal(self, dim, half_to_float):
    return _softmax(self, dim, _half_to_float_dtype(self, half_to_float), False)


def log_softmax_internal(self, dim, half_to_float):
    return _softmax(self, dim, _half_to_float_dtype(self, half_to_float), True)


def softmax_backward_data(grad_output, output, dim, input_dtype):
    """torch's ``_softmax_backward_data``: softmax's input gradient from its output, in one kernel (npusim's
    softmax formula's values), in ``input_dtype``."""
    dev = C.same_device(grad_output, output)
    if list(grad_output.shape) != list(output.shape):
        raise RuntimeError(f"_softmax_backward_data: grad_output of shape {list(grad_output.shape)} does not "
                           f"match the output's {list(output.shape)}")
    a, go = output._a, grad_output._a
    if not a.ndim:  # a 0-dim softmax is one row of one value
        r = R.softmax_backward(go.reshape(1), a.reshape(1), 0, input_dtype.np).reshape(())
        return C.make(r, dev)
    return C.make(R.softmax_backward(go, a, _wrap_dim(dim, a.ndim), input_dtype.np), dev)


def _refuse_non_tensor(name, self):
    """torch's error for a Python number as ``self`` (the dispatcher lets numbers through a Tensor slot)."""
    if not isinstance(self, Tensor):
        raise RuntimeError(f"aten::{name}() Expected a value of type 'Tensor' for argument 'self' but instead "
                           f"found type '{type(self).__name__}'.") from None


def _tensor_self(name, fn):
    """``fn`` raising torch's error when ``self`` is a Python number."""
    @functools.wraps(fn)
    def kernel(self, *args, **kwargs):
        try:
            return fn(self, *args, **kwargs)
        except AttributeError:
            _refuse_non_tensor(name, self)
            raise
    return kernel


# these check their self themselves: the reductions every loss and every broadcast gradient (sum_to) runs skip the
# wrapper's frame
_CHECK_THEIR_SELF = (sum_, sum_dim, mean)


_TABLE = {
    "sum": sum_, "sum.dim_IntList": sum_dim, "sum.IntList_out": sum_out,
    "mean": mean, "mean.dim": mean_dim, "mean.out": mean_out,
    "prod": prod, "prod.dim_int": prod_dim, "prod.int_out": prod_out,
    "max": max_, "max.dim": max_dim, "max.dim_max": max_dim_max,
    "min": min_, "min.dim": min_dim, "min.dim_min": min_dim_min,
    "amax": amax, "amax.out": amax_out, "amin": amin, "amin.out": amin_out,
    "argmax": argmax, "argmax.out": argmax_out, "argmin": argmin, "argmin.out": argmin_out,
    "var.correction": var, "var.correction_out": var_out, "std.correction": std, "std.correction_out": std_out,
    "var_mean.correction": var_mean, "std_mean.correction": std_mean,
    "norm.Scalar": norm_scalar, "norm.ScalarOpt_dim": norm_dim, "norm.ScalarOpt_dim_dtype": norm_dim_dtype,
    "norm.out": norm_out,
    "all": all_, "all.dim": all_dim, "all.dims": all_dims, "all.out": all_out,
    "any": any_, "any.dim": any_dim, "any.dims": any_dims, "any.out": any_out,
    "logsumexp": logsumexp, "logsumexp.out": logsumexp_out,
    "cumsum": cumsum, "cumsum.out": cumsum_out, "cumsum_": cumsum_,
    "cumprod": cumprod, "cumprod.out": cumprod_out, "cumprod_": cumprod_,
    "softmax.int": softmax, "_softmax": softmax_internal,
    "log_softmax.int": log_softmax, "_log_softmax": log_softmax_internal,
    "_softmax_backward_data": softmax_backward_data,
}
KERNELS = {overload: fn if fn in _CHECK_THEIR_SELF else _tensor_self(overload.split(".")[0], fn)
           for overload, fn in _TABLE.items()}
