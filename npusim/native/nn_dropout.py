"""The dropout family as compositions of dispatched ops (bernoulli_ masks, mul, add).

dropout_, alpha_dropout, feature_dropout and feature_alpha_dropout, functional
and in place, as torch's CompositeImplicitAutograd kernels: autograd sees each step.
"""
from __future__ import annotations

import math

from ..core.dispatch.ops_namespace import aten
from ..kernels import nn_activation as K


_SELU_NEG_SATURATION = K.SELU_ALPHA * K.SELU_SCALE   # alpha dropout's value for dropped units (negated)


def _check_p(p):
    if p < 0 or p > 1:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")


def _keep_mask(input, p, feature):
    """Bernoulli(1 - p) draws in input's dtype: one per element, or one per (sample, channel)."""
    if feature:
        if input.dim() < 2:
            raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
        shape = list(input.shape[:2]) + [1] * (input.dim() - 2)
        noise = aten.empty.memory_format(shape, dtype=input.dtype, device=input.device)
    else:
        noise = aten.empty_like.default(input)
    return aten.bernoulli_.float(noise, 1 - p)


def _dropout_impl(input, p, train, *, feature, alpha, inplace):
    _check_p(p)
    if p == 0 or not train or input.numel() == 0:
        return input
    mul = aten.mul_.Tensor if inplace else aten.mul.Tensor
    if p == 1:
        return mul(input, aten.zeros.default([], dtype=input.dtype, device=input.device))
    keep = _keep_mask(input, p, feature)
    if not alpha:
        return mul(input, aten.div.Scalar(keep, 1 - p))
    # alpha dropout keeps SELU's self-normalisation: dropped units take -alpha' and a, b restore mean and variance
    a = 1.0 / math.sqrt((_SELU_NEG_SATURATION ** 2 * p + 1) * (1 - p))
    b = aten.add.Scalar(aten.mul.Scalar(aten.sub.Scalar(keep, 1), _SELU_NEG_SATURATION * a),
                        _SELU_NEG_SATURATION * a * p)
    out = mul(input, aten.mul.Scalar(keep, a))
    return (aten.add_.Tensor if inplace else aten.add.Tensor)(out, b)


def dropout_(self, p, train):
    return _dropout_impl(self, p, train, feature=False, alpha=False, inplace=True)


def _dropout_variant(feature, alpha):
    def functional(input, p, train):
        return _dropout_impl(input, p, train, feature=feature, alpha=alpha, inplace=False)

    def inplace(self, p, train):
        return _dropout_impl(self, p, train, feature=feature, alpha=alpha, inplace=True)

    return functional, inplace


alpha_dropout, alpha_dropout_ = _dropout_variant(False, True)
feature_dropout, feature_dropout_ = _dropout_variant(True, False)
feature_alpha_dropout, feature_alpha_dropout_ = _dropout_variant(True, True)


# Ops that decompose into other ops (CompositeImplicitAutograd): autograd comes from the parts.
COMPOSITE_IMPLICIT = {
    "dropout_": dropout_, "alpha_dropout": alpha_dropout, "alpha_dropout_": alpha_dropout_,
    "feature_dropout": feature_dropout, "feature_dropout_": feature_dropout_,
    "feature_alpha_dropout": feature_alpha_dropout, "feature_alpha_dropout_": feature_alpha_dropout_,
}
