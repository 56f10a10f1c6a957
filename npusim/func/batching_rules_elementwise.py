"""vmap batching rules of the elementwise ops and of the ops that keep their input's shape.

Elementwise: each batch gets size-1 dims after its batch dim up to the highest sample rank among the tensor
arguments, so that NumPy-style broadcasting of the batches lines samples up as broadcasting lines up one sample's
tensors; unbatched tensors broadcast against the batch dim untouched. One case would promote differently (a
0-dim sample beside a dimensioned tensor of another dtype: the batch is no longer 0-dim) and runs per sample.
"""
from __future__ import annotations

from ..core.dispatch.ops_namespace import aten
from ..core.tensor import Tensor
from .batched_tensor import BatchedTensor
from .batching_registry import UsePerSampleLoop, register, wrap_all

_unsqueeze = aten.unsqueeze.default

POINTWISE = (
    "abs acos acosh add angle asin asinh atan atan2 atanh bitwise_and bitwise_not bitwise_or bitwise_xor "
    "bitwise_left_shift bitwise_right_shift ceil clamp clamp_max clamp_min copysign cos cosh deg2rad digamma div eq "
    "erf erfc erfinv exp exp2 expm1 float_power floor floor_divide fmax fmin fmod frac gcd ge gt heaviside hypot i0 "
    "igamma igammac isfinite isinf isnan isneginf isposinf isreal lcm ldexp le lerp lgamma log log10 log1p log2 "
    "logaddexp logaddexp2 logical_and logical_not logical_or logical_xor logit lt maximum minimum mul nan_to_num ne "
    "neg nextafter pow rad2deg reciprocal relu relu6 remainder round rsqrt rsub sgn sigmoid sign signbit sin sinc "
    "sinh sqrt square sub tan tanh trunc where xlogy addcdiv addcmul polygamma masked_fill "
    "elu gelu hardsigmoid hardswish hardtanh leaky_relu log_sigmoid mish selu silu softplus threshold celu "
    "threshold_backward silu_backward hardswish_backward hardsigmoid_backward hardtanh_backward leaky_relu_backward "
    "elu_backward softplus_backward "
    "special_entr special_erfcx special_i0e special_i1 special_i1e special_log_ndtr special_ndtr "
    "special_ndtri "
    "special_xlog1py special_zeta special_airy_ai special_bessel_j0 special_bessel_j1 special_bessel_y0 "
    "special_bessel_y1 special_modified_bessel_i0 special_modified_bessel_i1 special_modified_bessel_k0 "
    "special_modified_bessel_k1 special_scaled_modified_bessel_k0 special_scaled_modified_bessel_k1 "
    "special_spherical_bessel_j0").split()
POINTWISE_INPLACE = [n + "_" for n in POINTWISE] + ["copy_"]

# one tensor in, the same shape out (other arguments are not tensors)
SAME_SHAPE = ("clone detach alias contiguous _to_copy zeros_like ones_like empty_like full_like fill_ zero_ "
              "conj conj_physical resolve_conj resolve_neg _conj").split()


def _tensor_slots(args, kwargs):
    """[(where, key, tensor)] for every Tensor argument (where: 0 positional, 1 keyword)."""
    out = []
    for i, v in enumerate(args):
        if isinstance(v, Tensor):
            out.append((0, i, v))
    for k, v in kwargs.items():
        if isinstance(v, Tensor):
            out.append((1, k, v))
    return out


def pointwise(op, level, args, kwargs):
    slots = _tensor_slots(args, kwargs)
    top = max(t._a.ndim for _, _, t in slots)
    dtypes = {t._a.dtype for _, _, t in slots}
    args, kwargs = list(args), dict(kwargs)
    inplace = op._schema.is_inplace
    for n, (where, key, t) in enumerate(slots):
        if not (t.__class__ is BatchedTensor and t._level == level):
            continue
        rank = t._a.ndim
        if rank == 0 and len(dtypes) > 1 and top > 0:
            raise UsePerSampleLoop()      # promotion would see a dimensioned tensor where the sample is 0-dim
        if inplace and n == 0 and rank < top:
            raise UsePerSampleLoop()      # the op's own broadcast error, worded for one sample
        v = t._value
        for _ in range(top - rank):
            v = _unsqueeze(v, 1)
        if where:
            kwargs[key] = v
        else:
            args[key] = v
    out = op(*args, **kwargs)
    if inplace:
        return slots[0][2]
    return wrap_all(out, level)


def same_shape(op, level, args, kwargs):
    self = args[0]
    if not (self.__class__ is BatchedTensor and self._level == level) or any(
            isinstance(v, BatchedTensor) for v in list(args[1:]) + list(kwargs.values())):
        raise UsePerSampleLoop()
    out = op(self._value, *args[1:], **kwargs)
    if op._schema.is_inplace:
        return self
    return wrap_all(out, level)


register(" ".join(POINTWISE + POINTWISE_INPLACE), pointwise)
register(" ".join(SAME_SHAPE), same_shape)
