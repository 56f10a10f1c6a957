"""Tensor-level kernels of the normalisation layers and of ``linalg_vector_norm``.

``native_layer_norm`` / ``native_batch_norm`` / ``native_group_norm`` compute the
output and the statistics backward needs (torch's native ops);
``native_batch_norm`` in training also updates the running statistics in place
(momentum, unbiased variance). ``layer_norm``, ``batch_norm``, ``group_norm`` and
``rms_norm`` are compositions with torch's argument checks. 16-bit inputs may
come with float32 parameters (torch's "mixed dtype" on CPU); the statistics are
then float32.
"""
from __future__ import annotations

import math

import numpy as np

from ..core.c10 import dtype as D
from ..core.c10.memory_format import array_in_format_of
from ..core.dispatch.ops_namespace import aten
from ..kernels import nn_norm as K
from ..kernels.array_api import HALF_TYPES
from . import common as C
from . import reductions

_F32 = np.dtype(np.float32)


def _arr(t):
    return None if t is None else t._a


def _stat_dtype(x, *params):
    """torch's CPU mixed-dtype rule: parameters share the input's dtype, or are float32 for a 16-bit input
    (statistics are then float32)."""
    dts = {p.dtype for p in params if p is not None}
    if not dts or dts == {x.dtype}:
        return x.dtype
    if x.dtype in HALF_TYPES and dts == {_F32}:
        return _F32
    if x.dtype == _F32:
        raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type of Float")
    raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")


# --- layer norm ---------------------------------------------------------------------------------------------------

def _check_layer_norm(input, normalized_shape, weight, bias, rms=False):
    shape = [int(s) for s in normalized_shape]
    if not shape:
        raise RuntimeError(f"Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one "
                           f"element, but got normalized_shape = {shape}")
    if weight is not None and list(weight.shape) != shape:
        raise RuntimeError(f"Expected weight to be of same shape as normalized_shape, but got weight of shape "
                           f"{list(weight.shape)} and normalized_shape = {shape}")
    if bias is not None and list(bias.shape) != shape:
        raise RuntimeError(f"Expected bias to be of same shape as normalized_shape, but got bias of shape "
                           f"{list(bias.shape)} and normalized_shape = {shape}")
    in_shape = list(input.shape)
    if len(in_shape) < len(shape) or in_shape[len(in_shape) - len(shape):] != shape:
        expected = "*" + ", ".join(map(str, shape)) if rms else ", ".join(["*"] + [str(s) for s in shape])
        raise RuntimeError(f"Given normalized_shape={shape}, expected input with shape [{expected}], but got input "
                           f"of size{in_shape}")
    return shape


def native_layer_norm(input, normalized_shape, weight, bias, eps):
    dev = C.same_device(input, weight, bias)
    shape = _check_layer_norm(input, normalized_shape, weight, bias)
    x = input._a
    C.require_float(x, "LayerNormKernelImpl")
    stat_dt = _stat_dtype(x, _arr(weight), _arr(bias))
    y, mean, rstd = K.layer_norm(x, len(shape), _arr(weight), _arr(bias), eps, stat_dt)
    if not y.flags.c_contiguous:   # torch's kernel reads a contiguous input and writes a contiguous output
        y = y.copy()
    return C.make(y, dev), C.make(mean, dev), C.make(rstd, dev)


def native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight, bias, output_mask):
    """(grad_input, grad_weight, grad_bias) of ``native_layer_norm`` in one kernel (torch's formulas); entries
    whose mask is False are None. The parameters' gradients take the parameters' dtypes (the computation dtype
    where the parameter is absent)."""
    dev = C.same_device(grad_out, input, mean, rstd, weight, bias)
    shape = _check_layer_norm(input, normalized_shape, weight, bias)
    if list(grad_out.shape) != list(input.shape):
        raise RuntimeError(f"native_layer_norm_backward: grad_out of shape {list(grad_out.shape)} does not match "
                           f"the input's {list(input.shape)}")
    x = input._a
    C.require_float(x, "LayerNormBackwardKernelImpl")
    dx, dgamma, dbeta = K.layer_norm_backward(grad_out._a, x, len(shape), mean._a, rstd._a, _arr(weight),
                                              list(output_mask))
    if dgamma is not None and weight is not None:
        dgamma = dgamma.astype(weight._a.dtype, copy=False)
    if dbeta is not None and bias is not None:
        dbeta = dbeta.astype(bias._a.dtype, copy=False)
    return tuple(None if a is None else C.make(a, dev) for a in (dx, dgamma, dbeta))


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05, cudnn_enable=True):
    _check_layer_norm(input, normalized_shape, weight, bias)
    return aten.native_layer_norm.default(input, list(normalized_shape), weight, bias, eps)[0]


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x^2 over the normalized dims) + eps) * weight, in float32 for 16-bit inputs (torch's
    composition; ``eps`` None is the machine epsilon of that computation dtype)."""
    shape = _check_layer_norm(input, normalized_shape, weight, None, rms=True)
    x = input._a
    C.require_float(x, "rms_norm")
    opmath = D.float32 if x.dtype in HALF_TYPES else C.FROM_NP[x.dtype]
    if eps is None:
        eps = float(D.finfo(opmath).eps)
    xo = input if opmath is input.dtype else aten._to_copy.default(input, dtype=opmath)
    dims = list(range(input.dim() - len(shape), input.dim()))
    mean_sq = aten.mean.dim(aten.mul.Tensor(xo, xo), dims, True)
    r = aten.mul.Tensor(xo, aten.rsqrt.default(aten.add.Scalar(mean_sq, eps)))
    if weight is not None:
        r = aten.mul.Tensor(r, weight)
    return r if r.dtype is input.dtype else aten._to_copy.default(r, dtype=input.dtype)


# --- batch norm ---------------------------------------------------------------------------------------------------

def _check_batch_norm(input, weight, bias, running_mean, running_var, training):
    if input.dim() < 2:
        raise RuntimeError(f"batch_norm: expected an input of at least 2 dims (N, C, *), but got input of size "
                           f"{list(input.shape)}")
    c = input.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var)):
        if t is not None:
            if t.numel() != c:
                raise RuntimeError(f"{name} should contain {c} elements not {t.numel()}")
        elif not training:
            raise RuntimeError(f"{name} must be defined in evaluation mode")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and t.numel() != c:
            raise RuntimeError(f"{name} should contain {c} elements not {t.numel()}")


def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
    """(output, save_mean, save_invstd); in training the running statistics are updated in place."""
    dev = C.same_device(input, weight, bias, running_mean, running_var)
    _check_batch_norm(input, weight, bias, running_mean, running_var, training)
    x = input._a
    C.require_float(x, "batch_norm")
    stat_dt = _stat_dtype(x, _arr(weight), _arr(bias), _arr(running_mean), _arr(running_var))
    w, b = _arr(weight), _arr(bias)
    if not training:
        y = array_in_format_of(K.batch_norm_eval(x, w, b, running_mean._a, running_var._a, eps), x)
        xp = C.namespace_of(x)
        return C.make(y, dev), C.make(xp.empty((0,), stat_dt), dev), C.make(xp.empty((0,), stat_dt), dev)
    y, mean, rstd, unbiased = K.batch_norm_train(x, w, b, eps)
    y = array_in_format_of(y, x)   # the input's channels_last layout, as torch's kernel
    if running_mean is not None:
        C.write_out(running_mean, K.running_update(running_mean._a, mean, momentum))
    if running_var is not None:
        C.write_out(running_var, K.running_update(running_var._a, unbiased, momentum))
    return C.make(y, dev), C.make(mean.astype(stat_dt, copy=False), dev), C.make(rstd.astype(stat_dt, copy=False), dev)


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled):
    _check_batch_norm(input, weight, bias, running_mean, running_var, training)
    if input.numel() == 0:
        # torch keeps the graph connected to the parameters for an empty batch
        out = aten.clone.default(input)
        if weight is not None:
            out = aten.mul.Tensor(out, aten.select.int(weight, 0, 0))
        if bias is not None:
            out = aten.add.Tensor(out, aten.select.int(bias, 0, 0))
        return out
    return aten.native_batch_norm.default(input, weight, bias, running_mean, running_var, training, momentum,
                                          eps)[0]


# --- group norm ---------------------------------------------------------------------------------------------------

def _check_group_norm(input, num_groups, weight, bias):
    shape = list(input.shape)
    c = shape[1]
    if c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {shape} and num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.dim() != 1 or t.numel() != c):
            # torch's bias message reports the weight's shape ([0] without a weight)
            reported = list(t.shape) if name == "weight" else (list(weight.shape) if weight is not None else [0])
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of channels in input, "
                               f"but got {name} of shape {reported} and input of shape {shape}")


def native_group_norm(input, weight, bias, N, C_, HxW, group, eps):
    """(output, mean, rstd), the statistics shaped (N, group)."""
    dev = C.same_device(input, weight, bias)
    x = input._a
    if x.size != N * C_ * HxW or (x.ndim >= 2 and x.shape[1] != C_):
        raise RuntimeError(f"Expected input to have {N * C_ * HxW} elements (N={N}, C={C_}, HxW={HxW}), but got "
                           f"input of size {list(x.shape)}")
    _check_group_norm(input, group, weight, bias)
    C.require_float(x, "GroupNormKernelImpl")
    stat_dt = _stat_dtype(x, _arr(weight), _arr(bias))
    y, mean, rstd = K.group_norm(x, group, _arr(weight), _arr(bias), eps, stat_dt)
    return C.make(array_in_format_of(y, x), dev), C.make(mean, dev), C.make(rstd, dev)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05, cudnn_enabled=True):
    _check_group_norm(input, num_groups, weight, bias)
    shape = list(input.shape)
    hxw = math.prod(shape[2:])
    return aten.native_group_norm.default(input, weight, bias, shape[0], shape[1], hxw, num_groups, eps)[0]


# --- vector norm --------------------------------------------------------------------------------------------------

def linalg_vector_norm(self, ord=2, dim=None, keepdim=False, *, dtype=None):
    """The ``ord``-norm of ``self`` over ``dim`` (all dims when None), computed in ``dtype`` when given."""
    in_dt = C.FROM_NP[self._a.dtype]
    if not (in_dt.is_floating_point or in_dt.is_complex):
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
                           f"{C.tname(in_dt)}")
    if dtype is not None:
        if not dtype.is_floating_point:
            raise RuntimeError(f"linalg.vector_norm: dtype should be floating point or complex, but got "
                               f"{C.tname(dtype)}")
        if D.promote_types(in_dt, dtype) is not dtype:
            raise RuntimeError(f"linalg.vector_norm: the dtype of the input ({C.tname(in_dt)}) should be "
                               f"convertible without narrowing to the specified dtype ({C.tname(dtype)})")
    if isinstance(dim, int):
        dim = [dim]
    return reductions._vector_norm(self, ord, dim, keepdim, dtype or in_dt)


KERNELS = {
    "native_layer_norm": native_layer_norm, "native_layer_norm_backward": native_layer_norm_backward,
    "native_batch_norm": native_batch_norm,
    "native_group_norm": native_group_norm, "linalg_vector_norm": linalg_vector_norm,
}

# Ops that decompose into other ops (CompositeImplicitAutograd): autograd comes from the parts.
COMPOSITE_IMPLICIT = {
    "layer_norm": layer_norm, "rms_norm": rms_norm, "batch_norm": batch_norm, "group_norm": group_norm,
}
