"""Tensor-level kernels of nn.functional's activations.

Activations defined for floating inputs (gelu, silu, elu, softplus...) with
their in-place forms, and those that keep integral dtypes (hardtanh,
threshold). Ops torch defines as compositions of other ops (relu6, selu, celu,
glu, prelu) decompose here into dispatched ops, so autograd, autocast and
profiling see each step.
"""
from __future__ import annotations

import numpy as np

from ..core.c10 import dtype as D
from ..core.dispatch.ops_namespace import aten
from ..core.tensor import _wrap_dim
from ..kernels import nn_activation as K
from . import common as C

_BOOL = np.dtype(np.bool_)


def _number(v) -> float:
    """A Scalar argument as a Python float (bools count as 0 / 1, as torch's Scalar does)."""
    return float(v)


# --- float activations ------------------------------------------------------------------------------------

def _float_activation(kernel_name, compute):
    """functional and in-place kernels of an activation defined for floating inputs only."""
    def functional(self, *args, **kwargs):
        C.require_float(self._a, kernel_name)
        return C.make(compute(self._a, *args, **kwargs), self._device)

    def inplace(self, *args, **kwargs):
        C.require_float(self._a, kernel_name)
        return C.write_out(self, compute(self._a, *args, **kwargs))

    return functional, inplace


def _check_approximate(approximate):
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")


def _gelu(a, approximate="none"):
    _check_approximate(approximate)
    return K.gelu(a, approximate)


def _elu(a, alpha=1, scale=1, input_scale=1):
    return K.elu(a, _number(alpha), _number(scale), _number(input_scale))


def _leaky_relu(a, negative_slope=0.01):
    return K.leaky_relu(a, _number(negative_slope))


def _softplus(a, beta=1, threshold=20):
    return K.softplus(a, _number(beta), _number(threshold))


gelu, gelu_ = _float_activation("GeluKernelImpl", _gelu)
silu, silu_ = _float_activation("silu_cpu", K.silu)
elu, elu_ = _float_activation("elu_cpu", _elu)
leaky_relu, leaky_relu_ = _float_activation("leaky_relu_cpu", _leaky_relu)
softplus = _float_activation("softplus_cpu", _softplus)[0]
hardsigmoid, hardsigmoid_ = _float_activation("hardsigmoid_cpu", K.hardsigmoid)
hardswish, hardswish_ = _float_activation("hardswish_cpu", K.hardswish)
mish, mish_ = _float_activation("mish_cpu", K.mish)
log_sigmoid = _float_activation("log_sigmoid_cpu", K.log_sigmoid)[0]


def logit(self, eps=None):
    """log(p / (1 - p)); integral and bool inputs compute in the default float dtype."""
    a = self._a
    if not C.is_float(a.dtype):
        a = a.astype(D.get_default_dtype().np)
    return C.make(K.logit(a, eps), self._device)


# --- activations that keep integral dtypes ---------------------------------------------------------------

def _hardtanh_compute(self, min_val, max_val):
    a = self._a
    if a.dtype == _BOOL:
        raise RuntimeError("Bool inputs not supported for hardtanh")
    return K.hardtanh(a, C.scalar_operand(min_val, a.dtype), C.scalar_operand(max_val, a.dtype))


def hardtanh(self, min_val=-1, max_val=1):
    return C.make(_hardtanh_compute(self, min_val, max_val), self._device)


def hardtanh_(self, min_val=-1, max_val=1):
    return C.write_out(self, _hardtanh_compute(self, min_val, max_val))


def _threshold_compute(self, threshold, value):
    a = self._a
    if a.dtype == _BOOL:
        raise NotImplementedError("\"threshold_cpu\" not implemented for 'Bool'")
    return K.threshold(a, C.scalar_operand(threshold, a.dtype), C.scalar_operand(value, a.dtype))


def threshold(self, threshold, value):
    return C.make(_threshold_compute(self, threshold, value), self._device)


def threshold_(self, threshold, value):
    return C.write_out(self, _threshold_compute(self, threshold, value))


# --- compositions ------------------------------------------------------------------------------------------

def relu6(self):
    return aten.hardtanh.default(self, 0, 6)


def relu6_(self):
    return aten.hardtanh_.default(self, 0, 6)


def selu(self):
    return aten.elu.default(self, K.SELU_ALPHA, K.SELU_SCALE, 1)


def selu_(self):
    return aten.elu_.default(self, K.SELU_ALPHA, K.SELU_SCALE, 1)


def celu(self, alpha=1.0):
    return aten.elu.default(self, alpha, 1, 1.0 / _number(alpha))


def celu_(self, alpha=1.0):
    return aten.elu_.default(self, alpha, 1, 1.0 / _number(alpha))


def glu(self, dim=-1):
    """First half of ``dim`` times the sigmoid of the second half."""
    if self.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = _wrap_dim(dim, self.dim())
    n = self.shape[d]
    if n % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {n}")
    C.require_float(self._a, "glu_cpu")
    half = n // 2
    first = aten.narrow.default(self, d, 0, half)
    second = aten.narrow.default(self, d, half, half)
    return aten.mul.Tensor(first, aten.sigmoid.default(second))


def prelu(self, weight):
    """x where x > 0, weight * x elsewhere; a 1-D weight has one slope per channel (dim 1)."""
    if self.dtype is not weight.dtype:
        raise RuntimeError(f"prelu: Type promoting not supported. Got {C.tname(self._a.dtype)} and "
                           f"{C.tname(weight._a.dtype)}")
    n = weight.numel()
    if n != 1:
        if self.dim() == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        channels = self.shape[1] if self.dim() > 1 else 1
        if channels != n:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                               f"{n} and channel size = {channels}.")
    if weight.dim() > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {weight.dim()}")
    C.require_float(self._a, "prelu_cpu")
    if self.dim() >= 2:
        shape = [1] * self.dim()
        shape[1] = n
        slopes = aten.reshape.default(weight, shape)
    else:
        slopes = aten.reshape.default(weight, [])
    return aten.where.self(aten.gt.Scalar(self, 0), self, aten.mul.Tensor(slopes, self))


def threshold_backward(grad_output, self, threshold):
    """threshold's (and relu's) gradient: grad_output where self > threshold, else 0; the operands promote and
    broadcast as a binary op's."""
    dev = C.common_device(grad_output, self)
    dt = D.promote_types(grad_output.dtype, self.dtype)
    if dt is D.bool:
        raise NotImplementedError("\"threshold_backward_cpu\" not implemented for 'Bool'")
    np_dt = C.np_dtype(dt)
    g, a = C.array_operand(grad_output, np_dt, dev), C.array_operand(self, np_dt, dev)
    C.broadcast_shapes(g.shape, a.shape)     # torch's error for shapes that do not broadcast
    return C.make(K.threshold_backward(g, a, C.scalar_operand(threshold, np_dt)), dev)


def _backward_operands(grad_output, self, kernel_name):
    """(grad_output's array, self's array, device) in their promoted float dtype, as a binary op's: torch's
    errors for other dtypes and for shapes that do not broadcast."""
    dev = C.common_device(grad_output, self)
    C.check_devices(dev, grad_output, self)
    np_dt = C.np_dtype(D.promote_types(grad_output.dtype, self.dtype))
    if not C.is_float(np_dt):
        C.not_implemented(kernel_name, np_dt)
    g, a = C.array_operand(grad_output, np_dt, dev), C.array_operand(self, np_dt, dev)
    C.broadcast_shapes(g.shape, a.shape)
    return g, a, dev


def silu_backward(grad_output, self):
    g, a, dev = _backward_operands(grad_output, self, "silu_backward_cpu")
    return C.make(K.silu_backward(g, a), dev)


def hardswish_backward(grad_output, self):
    g, a, dev = _backward_operands(grad_output, self, "hardswish_backward_cpu")
    return C.make(K.hardswish_backward(g, a), dev)


def hardsigmoid_backward(grad_output, self):
    g, a, dev = _backward_operands(grad_output, self, "hardsigmoid_backward")
    return C.make(K.hardsigmoid_backward(g, a), dev)


def hardtanh_backward(grad_output, self, min_val, max_val):
    g, a, dev = _backward_operands(grad_output, self, "hardshrink_backward_cpu")   # torch's kernel name
    return C.make(K.hardtanh_backward(g, a, _number(min_val), _number(max_val)), dev)


def leaky_relu_backward(grad_output, self, negative_slope, self_is_result):
    slope = _number(negative_slope)
    if self_is_result and slope < 0:
        raise RuntimeError("In-place leakyReLu backward calculation is triggered with a negative slope which is not "
                           "supported. This is caused by calling in-place forward function with a negative slope, "
                           "please call out-of-place version instead. File an issue at "
                           "https://github.com/pytorch/pytorch if you do require supporting in-place leakRelu "
                           "backward calculation with negative slope")
    g, a, dev = _backward_operands(grad_output, self, "leaky_relu_backward_cpu")
    return C.make(K.leaky_relu_backward(g, a, slope), dev)


def elu_backward(grad_output, alpha, scale, input_scale, is_result, self_or_result):
    if is_result and _number(alpha) < 0:
        raise RuntimeError("In-place elu backward calculation is triggered with a negative slope which is not "
                           "supported. This is caused by calling in-place forward function with a negative slope, "
                           "please call out-of-place version instead.")
    g, a, dev = _backward_operands(grad_output, self_or_result, "elu_backward_cpu")
    return C.make(K.elu_backward(g, a, _number(alpha), _number(scale), _number(input_scale), bool(is_result)), dev)


def softplus_backward(grad_output, self, beta, threshold):
    g, a, dev = _backward_operands(grad_output, self, "softplus_backward_cpu")
    return C.make(K.softplus_backward(g, a, _number(beta), _number(threshold)), dev)


KERNELS = {
    "gelu": gelu, "gelu_": gelu_, "silu": silu, "silu_": silu_, "elu": elu, "elu_": elu_,
    "leaky_relu": leaky_relu, "leaky_relu_": leaky_relu_, "softplus": softplus,
    "hardsigmoid": hardsigmoid, "hardsigmoid_": hardsigmoid_, "hardswish": hardswish, "hardswish_": hardswish_,
    "mish": mish, "mish_": mish_, "log_sigmoid": log_sigmoid, "logit": logit,
    "hardtanh": hardtanh, "hardtanh_": hardtanh_, "threshold": threshold, "threshold_": threshold_,
    "threshold_backward": threshold_backward, "silu_backward": silu_backward,
    "hardswish_backward": hardswish_backward, "hardsigmoid_backward": hardsigmoid_backward,
    "hardtanh_backward": hardtanh_backward, "leaky_relu_backward": leaky_relu_backward,
    "elu_backward": elu_backward, "softplus_backward": softplus_backward,
}

# Ops that decompose into other ops (CompositeImplicitAutograd): autograd comes from the parts.
COMPOSITE_IMPLICIT = {
    "relu6": relu6, "relu6_": relu6_, "selu": selu, "selu_": selu_, "celu": celu, "celu_": celu_,
    "glu": glu, "prelu": prelu,
}
