"""Tensor-level kernels of nn.functional's activations and layers.

Activations (gelu, silu, elu, softplus...) with their in-place forms; the
lookup and shaping layers (one_hot, embedding, constant / reflection /
replication padding). Ops that torch defines as compositions of other ops
(linear, relu6, selu, celu, prelu, glu, pad and circular padding, the dropout
family, scaled_dot_product_attention) decompose here into dispatched ops, so
autograd, autocast and profiling see each step.
"""
from __future__ import annotations

import math

import numpy as np

from ..core import dtype as D
from ..core.ops_namespace import aten
from ..core.tensor import Tensor, _wrap_dim
from ..kernels import activation as K
from . import common as C

_BOOL = np.dtype(np.bool_)


def _is_float(a) -> bool:
    return a.dtype.kind == "f" or a.dtype == C.BFLOAT16


def _require_float(self, kernel_name):
    if not _is_float(self._a):
        raise NotImplementedError(f"\"{kernel_name}\" not implemented for '{C.tname(self._a.dtype)}'")


def _number(v) -> float:
    """A Scalar argument as a Python float (bools count as 0 / 1, as torch's Scalar does)."""
    return float(v)


def _same_device(first: Tensor, *others):
    dev = first._device
    for t in others:
        if isinstance(t, Tensor) and t._device is not dev:
            C.raise_device_mismatch(dev, t._device)
    return dev


# --- float activations ------------------------------------------------------------------------------------

def _float_activation(kernel_name, compute):
    """functional and in-place kernels of an activation defined for floating inputs only."""
    def functional(self, *args, **kwargs):
        _require_float(self, kernel_name)
        return C.make(compute(self._a, *args, **kwargs), self._device)

    def inplace(self, *args, **kwargs):
        _require_float(self, kernel_name)
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
    if not _is_float(a):
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
    _require_float(self, "glu_cpu")
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
    _require_float(self, "prelu_cpu")
    if self.dim() >= 2:
        shape = [1] * self.dim()
        shape[1] = n
        slopes = aten.reshape.default(weight, shape)
    else:
        slopes = aten.reshape.default(weight, [])
    return aten.where.self(aten.gt.Scalar(self, 0), self, aten.mul.Tensor(slopes, self))


def linear(input, weight, bias=None):
    """input @ weight.T + bias (a 2-D input takes the fused addmm)."""
    if input.dim() == 2 and bias is not None:
        return aten.addmm.default(bias, input, aten.t.default(weight))
    out = aten.matmul.default(input, aten.t.default(weight))
    return out if bias is None else aten.add.Tensor(out, bias)


# --- one-hot ---------------------------------------------------------------------------------------------

def one_hot(self, num_classes=-1):
    a = self._a
    if a.dtype != np.dtype(np.int64):
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:
        if a.size == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(a.max()) + 1
    if a.size:
        if int(a.min()) < 0:
            raise RuntimeError("Class values must be non-negative.")
        if int(a.max()) >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    elif num_classes < 0:
        raise RuntimeError("Class values must be smaller than num_classes.")
    return C.make(K.one_hot(a, num_classes), self._device)


# --- embedding ---------------------------------------------------------------------------------------------

_INDEX_TYPES = (np.dtype(np.int64), np.dtype(np.int32))


def _check_indices(indices, fname):
    if indices._a.dtype not in _INDEX_TYPES:
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {indices.type()} instead (while checking arguments for {fname})")


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """Rows of ``weight`` (num_embeddings, dim) picked by ``indices``; the result is indices.shape + (dim,)."""
    if weight.dim() != 2:
        raise RuntimeError("'weight' must be 2-D")
    _check_indices(indices, "embedding")
    dev = _same_device(weight, indices)
    idx = indices._a
    n = weight._a.shape[0]
    if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= n):
        raise IndexError("index out of range in self")
    return C.make(K.embedding(weight._a, idx), dev)


def embedding_dense_backward(grad_output, indices, num_weights, padding_idx, scale_grad_by_freq):
    _check_indices(indices, "embedding_backward")
    dev = _same_device(grad_output, indices)
    g = K.embedding_backward(grad_output._a, indices._a, num_weights, padding_idx, scale_grad_by_freq)
    return C.make(g, dev)


def embedding_renorm_(self, indices, max_norm, norm_type):
    _check_indices(indices, "embedding_renorm_")
    _same_device(self, indices)
    if self.dim() != 2:
        raise RuntimeError("'self' must be 2-D")
    if indices._a.size:
        K.embedding_renorm_(self._a, indices._a, float(max_norm), float(norm_type))
    self._bump_version()
    return self


# --- padding ----------------------------------------------------------------------------------------------

def _pad_pairs(pad):
    """[l, r, t, b, ...] -> ((l, r), (t, b), ...): the last dim first, as torch lists them."""
    return tuple((int(pad[2 * k]), int(pad[2 * k + 1])) for k in range(len(pad) // 2))


def constant_pad_nd(self, pad, value=0):
    """Pad trailing dims with ``value``; negative amounts crop instead."""
    n = len(pad)
    ndim = self.dim()
    if n % 2:
        raise RuntimeError(f"Length of pad must be even but instead it equals {n}")
    if n // 2 > ndim:
        raise RuntimeError(f"Length of pad should be no more than twice the number of dimensions of the input. Pad "
                           f"length is {n}while the input has {ndim}dimensions.")
    pairs = _pad_pairs(pad)
    a = self._a
    index = [slice(None)] * ndim
    grow = []
    for k, (before, after) in enumerate(pairs):
        axis = ndim - 1 - k
        start, stop = 0, a.shape[axis]
        if before < 0:
            start = -before
            if stop - start < 0:
                raise RuntimeError("narrow(): length must be non-negative.")
        if after < 0:
            stop += after
            if stop - start < 0:
                raise RuntimeError("narrow(): length must be non-negative.")
        index[axis] = slice(start, stop)
        grow.append((max(before, 0), max(after, 0)))
    cropped = a[tuple(index)]
    if not any(b or e for b, e in grow):
        return C.make(cropped.copy(), self._device)
    fill = C.checked_scalar(value, a.dtype)
    return C.make(K.constant_pad(cropped, grow, fill), self._device)


_PAD_RANKS = {1: (2, 3), 2: (3, 4), 3: (4, 5)}


def _check_pad_input(self, nd, padding, op_name, mode):
    """torch's checks of a reflection/replication pad: rank, empty dims, pad sizes, output size."""
    shape = tuple(self._a.shape)
    if len(padding) != 2 * nd:
        raise RuntimeError(f"{op_name}(): argument 'padding' must be of length {2 * nd}, got {len(padding)}")
    low, high = _PAD_RANKS[nd]
    batch = len(shape) == high
    if len(shape) not in (low, high) or any(s == 0 for s in shape[1 if batch else 0:]):
        raise RuntimeError(f"Expected {low}D or {high}D (batch mode) tensor with possibly 0 batch size and other "
                           f"non-zero dimensions for input, but got: {list(shape)}")
    if self._a.dtype == _BOOL:
        raise NotImplementedError(f"\"{op_name}\" not implemented for 'Bool'")
    pairs = _pad_pairs(padding)
    if mode == "reflect":
        for k, (before, after) in enumerate(pairs):
            axis = len(shape) - 1 - k
            if not (before < shape[axis] and after < shape[axis]):
                raise RuntimeError(f"Argument #{4 + 2 * k}: Padding size should be less than the corresponding input "
                                   f"dimension, but got: padding ({before}, {after}) at dimension {axis} of input "
                                   f"{list(shape)}")
    out = [shape[len(shape) - 1 - k] + b + e for k, (b, e) in enumerate(pairs)]
    if nd == 1:
        if out[0] < 1:
            raise RuntimeError(f"input (W: {shape[-1]}) is too small. Calculated output W: {out[0]}")
    else:
        full = list(shape[:len(shape) - nd]) + out[::-1]
        bad = next((s for s in full if s < 0), None)
        if bad is not None:
            raise RuntimeError(f"Trying to create tensor with negative dimension {bad}: {full}")
    return pairs


def _mode_pad(mode, nd, op_name):
    def forward(self, padding):
        pairs = _check_pad_input(self, nd, padding, op_name, mode)
        return C.make(K.pad_gather(self._a, pairs, mode), self._device)

    def backward(grad_output, self, padding):
        dev = _same_device(grad_output, self)
        pairs = _pad_pairs(padding)
        return C.make(K.pad_scatter(grad_output._a, self._a.shape, pairs, mode), dev)

    forward.__name__ = op_name
    backward.__name__ = op_name + "_backward"
    return forward, backward


def _pad_circular(self, pad):
    """Circular padding as slices joined with cat (so autograd needs no kernel of its own).

    As in torch, negative amounts crop first and the wrap copies from the cropped tensor.
    """
    pairs = _pad_pairs(pad)
    for k in reversed(range(len(pairs))):
        before, after = pairs[k]
        size = self.shape[self.dim() - 1 - k]
        if before > size or after > size:
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if size + before + after < 0:
            raise RuntimeError("Negative padding value is resulting in an empty dimension")
    out = self
    for k, (before, after) in enumerate(pairs):
        d = self.dim() - 1 - k
        size = out.shape[d]
        if size + before + after == 0:
            out = aten.narrow.default(out, d, 0, 0)
            continue
        start, stop = max(-before, 0), size - max(-after, 0)
        core = aten.narrow.default(out, d, start, max(stop - start, 0)) if (start, stop) != (0, size) else out
        kept = core.shape[d]
        if before > kept or after > kept:
            raise RuntimeError("Padding value causes wrapping around more than once.")
        parts = []
        if before > 0:
            parts.append(aten.narrow.default(core, d, kept - before, before))
        parts.append(core)
        if after > 0:
            parts.append(aten.narrow.default(core, d, 0, after))
        out = parts[0] if len(parts) == 1 else aten.cat.default(parts, d)
    return out if out is not self else aten.clone.default(self)


_NON_CONSTANT_MODES = ("reflect", "replicate", "circular")


def pad(self, pad, mode="constant", value=None):
    """``F.pad``'s dispatcher: constant_pad_nd, or the reflection / replication / circular kernels."""
    if mode not in ("constant",) + _NON_CONSTANT_MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    n = len(pad)
    ndim = self.dim()
    if n % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if n > ndim * 2:
        raise RuntimeError(f"Padding length should be less than or equal to two times the input dimension but got "
                           f"padding length {n} and input of dimension {ndim}")
    if mode == "constant":
        return aten.constant_pad_nd.default(self, pad, 0.0 if value is None else value)
    if value is not None and value != 0:
        raise RuntimeError(f"Padding mode \"{mode}\" doesn't take in value argument")
    nd = n // 2
    if nd in _PAD_RANKS and ndim in _PAD_RANKS[nd]:
        if mode == "circular":
            return aten._pad_circular.default(self, pad)
        packet = getattr(aten, f"{'reflection' if mode == 'reflect' else 'replication'}_pad{nd}d")
        return packet.default(self, pad)
    raise NotImplementedError(
        f"Padding size {n} is not supported for {ndim}D input tensor.\n"
        "Supported combinations for non-constant padding:\n"
        "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
        "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
        "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")


# --- dropout family ------------------------------------------------------------------------------------------

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


# --- attention ----------------------------------------------------------------------------------------------

def _cpp_name(dt) -> str:
    return C.CPP_NAME[dt.name]


def _check_attention(query, key, value, attn_mask, is_causal):
    if not (query.dtype is key.dtype is value.dtype):
        raise RuntimeError(f"Expected query, key, and value to have the same dtype, but got query.dtype: "
                           f"{_cpp_name(query.dtype)} key.dtype: {_cpp_name(key.dtype)} and value.dtype: "
                           f"{_cpp_name(value.dtype)} instead.")
    if attn_mask is not None and attn_mask.dtype is not D.bool and attn_mask.dtype is not query.dtype:
        raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                           f"attn_mask.dtype: {_cpp_name(attn_mask.dtype)} and  query.dtype: "
                           f"{_cpp_name(query.dtype)} instead.")
    if attn_mask is not None and is_causal:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
    if not query.is_floating_point():
        raise RuntimeError(f"expected scalar type Float but found {C.tname(query._a.dtype)}")


def _repeat_heads(t, groups):
    """(..., H, S, E) -> (..., H * groups, S, E), each head repeated ``groups`` times in a row."""
    shape = list(t.shape)
    expanded = shape[:-2] + [groups] + shape[-2:]
    t = aten.expand.default(aten.unsqueeze.default(t, -3), expanded)
    return aten.reshape.default(t, shape[:-3] + [shape[-3] * groups] + shape[-2:])


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, *, scale=None,
                                 enable_gqa=False):
    """softmax(q k^T * scale + mask) v, with torch's math-backend semantics."""
    _check_attention(query, key, value, attn_mask, is_causal)
    if enable_gqa and query.dim() >= 3:
        hq, hk, hv = query.shape[-3], key.shape[-3], value.shape[-3]
        if hq % hk or hq % hv:
            raise RuntimeError("Number of heads in key and value must divide the number of heads in query")
        if hk != hq:
            key = _repeat_heads(key, hq // hk)
        if hv != hq:
            value = _repeat_heads(value, hq // hv)
    length, source = query.shape[-2], key.shape[-2]
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    # torch scales both operands by sqrt(scale) for range, then adds the mask
    root = math.sqrt(scale)
    scores = aten.matmul.default(aten.mul.Scalar(query, root), aten.transpose.int(aten.mul.Scalar(key, root), -2, -1))
    if is_causal:
        attn_mask = aten.tril.default(aten.ones.default([length, source], dtype=D.bool, device=query.device))
    if attn_mask is not None:
        if attn_mask.dtype is D.bool:
            scores = aten.masked_fill.Scalar(scores, aten.logical_not.default(attn_mask), -math.inf)
        else:
            scores = aten.add.Tensor(scores, attn_mask)
    dead = None
    if attn_mask is not None:
        # rows with every position masked attend to nothing (torch's safe softmax), not to NaN; their
        # scores are zeroed first so that no NaN reaches the softmax's backward either
        dead = aten.all.dim(aten.eq.Scalar(scores, -math.inf), -1, True)
        scores = aten.masked_fill.Scalar(scores, dead, 0.0)
    weights = aten.softmax.int(scores, -1)
    if dead is not None:
        weights = aten.masked_fill.Scalar(weights, dead, 0.0)
    if dropout_p > 0:
        weights = aten.dropout.default(weights, dropout_p, True)
    return aten.matmul.default(weights, value)


# --- tables ------------------------------------------------------------------------------------------------

_reflection_1d, _reflection_1d_backward = _mode_pad("reflect", 1, "reflection_pad1d")
_reflection_2d, _reflection_2d_backward = _mode_pad("reflect", 2, "reflection_pad2d")
_reflection_3d, _reflection_3d_backward = _mode_pad("reflect", 3, "reflection_pad3d")
_replication_1d, _replication_1d_backward = _mode_pad("replicate", 1, "replication_pad1d")
_replication_2d, _replication_2d_backward = _mode_pad("replicate", 2, "replication_pad2d")
_replication_3d, _replication_3d_backward = _mode_pad("replicate", 3, "replication_pad3d")

KERNELS = {
    "gelu": gelu, "gelu_": gelu_, "silu": silu, "silu_": silu_, "elu": elu, "elu_": elu_,
    "leaky_relu": leaky_relu, "leaky_relu_": leaky_relu_, "softplus": softplus,
    "hardsigmoid": hardsigmoid, "hardsigmoid_": hardsigmoid_, "hardswish": hardswish, "hardswish_": hardswish_,
    "mish": mish, "mish_": mish_, "log_sigmoid": log_sigmoid, "logit": logit,
    "hardtanh": hardtanh, "hardtanh_": hardtanh_, "threshold": threshold, "threshold_": threshold_,
    "one_hot": one_hot, "embedding": embedding, "embedding_dense_backward": embedding_dense_backward,
    "embedding_renorm_": embedding_renorm_, "constant_pad_nd": constant_pad_nd,
    "reflection_pad1d": _reflection_1d, "reflection_pad1d_backward": _reflection_1d_backward,
    "reflection_pad2d": _reflection_2d, "reflection_pad2d_backward": _reflection_2d_backward,
    "reflection_pad3d": _reflection_3d, "reflection_pad3d_backward": _reflection_3d_backward,
    "replication_pad1d": _replication_1d, "replication_pad1d_backward": _replication_1d_backward,
    "replication_pad2d": _replication_2d, "replication_pad2d_backward": _replication_2d_backward,
    "replication_pad3d": _replication_3d, "replication_pad3d_backward": _replication_3d_backward,
}

# Ops that decompose into other ops (CompositeImplicitAutograd): autograd comes from the parts.
COMPOSITE_IMPLICIT = {
    "relu6": relu6, "relu6_": relu6_, "selu": selu, "selu_": selu_, "celu": celu, "celu_": celu_,
    "glu": glu, "prelu": prelu, "linear": linear, "pad": pad, "_pad_circular": _pad_circular,
    "dropout_": dropout_, "alpha_dropout": alpha_dropout, "alpha_dropout_": alpha_dropout_,
    "feature_dropout": feature_dropout, "feature_dropout_": feature_dropout_,
    "feature_alpha_dropout": feature_alpha_dropout, "feature_alpha_dropout_": feature_alpha_dropout_,
    "scaled_dot_product_attention": scaled_dot_product_attention,
}
