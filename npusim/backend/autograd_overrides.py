"""The npu's own forward and backward for some ops: AutogradPrivateUse1 overrides.

As the PrivateUse1 tutorial shows, a backend may replace the generic autograd
handling of an op for its device by registering a kernel for the
``AutogradPrivateUse1`` key. Calls on npu tensors that need a gradient then
reach these kernels instead of the derivative formulas; cpu tensors keep the
generic path. Two cases:

- ``selu`` runs as a custom ``autograd.Function`` (``SeluFunction``), its
  forward and backward each one array kernel;
- ``gelu`` keeps its forward but computes its backward in one fused array pass
  (``GeluFunction``) rather than as a chain of dispatched elementwise ops.

The array kernels serve the usual backward pass; under ``create_graph=True``
the same derivative is built from dispatched ops instead, so that it can be
differentiated again, as the generic formulas can.
"""
from __future__ import annotations

import math

from .. import is_grad_enabled, ops
from ..autograd import Function
from ..kernels import nn_activation as K
from ..library import Library
from ..privateuse1 import array_of, device_of, from_array
from ..privateuse1.kernels import scalar_type_name

aten = ops.aten


def _float_input(t, kernel_name):
    if not t.is_floating_point():
        raise NotImplementedError(f"\"{kernel_name}\" not implemented for '{scalar_type_name(t.dtype)}'")


def _selu_grad_graph(g, x):
    """selu's derivative times ``g`` from dispatched ops (differentiable again)."""
    negative = aten.mul.Tensor(aten.exp.default(x), K.SELU_ALPHA * K.SELU_SCALE)
    slope = aten.where.ScalarOther(aten.le.Scalar(x, 0), negative, K.SELU_SCALE)
    return aten.mul.Tensor(g, slope)


def _gelu_grad_graph(g, x, approximate):
    """gelu's derivative times ``g`` from dispatched ops (differentiable again)."""
    mul, add = aten.mul.Tensor, aten.add.Tensor
    if approximate == "tanh":
        beta, kappa = math.sqrt(2.0 / math.pi), 0.044715
        x_sq = mul(x, x)
        t = aten.tanh.default(mul(add(x, mul(mul(x_sq, x), kappa)), beta))
        left = mul(aten.add.Scalar(t, 1), 0.5)
        slope = mul(aten.add.Scalar(mul(x_sq, 3 * kappa), 1), beta)
        right = mul(mul(mul(x, 0.5), aten.rsub.Scalar(mul(t, t), 1)), slope)
        return mul(g, add(left, right))
    cdf = mul(aten.add.Scalar(aten.erf.default(mul(x, 1.0 / math.sqrt(2.0))), 1), 0.5)
    pdf = mul(aten.exp.default(mul(mul(x, x), -0.5)), 1.0 / math.sqrt(2.0 * math.pi))
    return mul(g, add(cdf, mul(x, pdf)))


class SeluFunction(Function):
    """selu(x) = scale * (max(0, x) + min(0, alpha * (exp(x) - 1))), differentiated by hand."""

    @staticmethod
    def forward(ctx, input):
        _float_input(input, "elu_cpu")
        ctx.save_for_backward(input)
        ctx.save_for_forward(input)
        return from_array(K.selu(array_of(input)), device_of(input))

    @staticmethod
    def backward(ctx, grad_output):
        (input,) = ctx.saved_tensors
        if is_grad_enabled():
            return _selu_grad_graph(grad_output, input)
        return from_array(K.selu_backward(array_of(grad_output), array_of(input)), device_of(input))

    @staticmethod
    def jvp(ctx, input_tangent):
        # elementwise: the tangent times selu'(input), which is what the backward graph computes
        (input,) = ctx.saved_tensors
        return _selu_grad_graph(input_tangent, input)


class GeluFunction(Function):
    """gelu with its backward fused into one array kernel."""

    @staticmethod
    def forward(ctx, input, approximate):
        if approximate not in ("none", "tanh"):
            raise RuntimeError("approximate argument must be either none or tanh.")
        _float_input(input, "GeluKernelImpl")
        ctx.save_for_backward(input)
        ctx.save_for_forward(input)
        ctx.approximate = approximate
        return from_array(K.gelu(array_of(input), approximate), device_of(input))

    @staticmethod
    def backward(ctx, grad_output):
        (input,) = ctx.saved_tensors
        if is_grad_enabled():
            return _gelu_grad_graph(grad_output, input, ctx.approximate), None
        grad_input = K.gelu_backward(array_of(grad_output), array_of(input), ctx.approximate)
        return from_array(grad_input, device_of(input)), None

    @staticmethod
    def jvp(ctx, input_tangent, approximate_tangent):
        (input,) = ctx.saved_tensors
        return _gelu_grad_graph(input_tangent, input, ctx.approximate)


def selu_autograd(self):
    return SeluFunction.apply(self)


def gelu_autograd(self, *, approximate="none"):
    return GeluFunction.apply(self, approximate)


_lib = Library("aten", "IMPL")
_lib.impl("selu", selu_autograd, "AutogradPrivateUse1")
_lib.impl("gelu", gelu_autograd, "AutogradPrivateUse1")
