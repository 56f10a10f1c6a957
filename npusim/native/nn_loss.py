"""Tensor-level kernels of the loss functions.

``reduction`` is torch's enum (0 none, 1 mean, 2 sum). The negative
log-likelihood works on (N, C) scores; ``nll_loss_nd`` and
``cross_entropy_loss`` decompose into dispatched ops (log_softmax,
nll_loss_forward, reshapes), as torch's CompositeImplicitAutograd kernels do,
so autograd sees each step. Errors are checked in torch's order.
"""
from __future__ import annotations

import numpy as np

from ..core.c10 import dtype as D
from ..core.dispatch.ops_namespace import aten
from ..kernels import nn_loss as K
from . import common as C

FROM_NP = C.FROM_NP
_ndarray, _asarray, _add_reduce = np.ndarray, np.asarray, np.add.reduce
_PLAIN_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_TARGET_TYPES = (np.dtype(np.int64), np.dtype(np.uint8))


# --- negative log-likelihood -----------------------------------------------------------------------------

def _check_nll(self, target, weight):
    """torch's checks of nll_loss_forward, in its order."""
    if not 1 <= self.dim() <= 2:
        raise RuntimeError("input tensor should be 1D or 2D")
    if target.dim() > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if target._a.dtype not in _TARGET_TYPES:
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {C.tname(target._a.dtype)}")
    if self.dim() == 1 and target.dim() == 1 and target.shape[0] != 1:
        raise ValueError(f"For 1D input, 1D target must have size 1, but got target size: {target.shape[0]}")
    if self.dim() == 2 and self.shape[0] != target.shape[0]:
        raise RuntimeError(f"size mismatch (got input: {list(self.shape)}, target: {list(target.shape)})")
    n_classes = self.shape[-1]
    if weight is not None and (weight.dim() != 1 or weight.numel() != n_classes):
        raise RuntimeError(f"weight tensor should be defined either for all {n_classes} classes or no classes but "
                           f"got weight tensor of shape: {list(weight.shape)}")
    if not C.is_float(self._a.dtype):
        raise NotImplementedError(f"\"nll_loss_out_frame\" not implemented for '{C.tname(self._a.dtype)}'")
    if weight is not None and weight._a.dtype != self._a.dtype:
        raise RuntimeError(f"expected scalar type {C.tname(self._a.dtype)} but found {C.tname(weight._a.dtype)}")
    return C.same_device(self, target, weight)


def _rows(self, target):
    """Scores as (N, C) and targets as (N,): a 1-D input is one sample."""
    a, t = self._a, target._a
    return (a.reshape(1, -1), t.reshape(1)) if a.ndim == 1 else (a, t)


def nll_loss_forward(self, target, weight, reduction, ignore_index):
    dev = _check_nll(self, target, weight)
    a, t = _rows(self, target)
    out, total = K.nll_loss_forward(a, t, None if weight is None else weight._a, reduction, ignore_index)
    if reduction == K.NONE:
        if self.dim() == 1:
            out = out.reshape(())
        else:
            total = total * 0   # torch leaves the total at zero when it does not reduce
    return C.make(out, dev), C.make(total, dev)


def nll_loss_backward(grad_output, self, target, weight, reduction, ignore_index, total_weight):
    dev = C.same_device(self, grad_output, target, weight, total_weight)
    a, t = _rows(self, target)
    g = grad_output._a
    if reduction == K.NONE and self.dim() == 1:
        g = g.reshape(1)
    r = K.nll_loss_backward(g, a, t, None if weight is None else weight._a, reduction, ignore_index, total_weight._a)
    return C.make(r.reshape(self._a.shape), dev)


def nll_loss(self, target, weight=None, reduction=1, ignore_index=-100):
    return aten.nll_loss_forward.default(self, target, weight, reduction, ignore_index)[0]


def nll_loss_nd(self, target, weight=None, reduction=1, ignore_index=-100):
    """nll_loss for any rank: (N, C, d1, d2, ...) scores flatten to (N * d1 * d2..., C) rows."""
    if self.dim() < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {self.dim()})")
    if self.dim() != 1 and self.shape[0] != target.shape[0]:
        raise ValueError(f"Expected input batch_size ({self.shape[0]}) to match target batch_size "
                         f"({target.shape[0]}).")
    if self.dim() <= 2:
        return aten.nll_loss.default(self, target, weight, reduction, ignore_index)
    n, c = self.shape[0], self.shape[1]
    spatial = list(self.shape[2:])
    if self.dim() == 4 and (target.dim() != 3 or list(target.shape[1:]) != spatial):
        raise RuntimeError(f"size mismatch (got input: {list(self.shape)} , target: {list(target.shape)}")
    if list(target.shape[1:]) != spatial:
        raise RuntimeError(f"Expected target size {[n] + spatial}, got {list(target.shape)}")
    if target._a.dtype not in _TARGET_TYPES:
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {C.tname(target._a.dtype)}")
    if weight is not None and (weight.dim() != 1 or weight.numel() != c):
        raise RuntimeError("weight tensor should be defined either for all or no classes")
    # class dim last, then one row per position
    order = [0] + list(range(2, self.dim())) + [1]
    rows = aten.reshape.default(aten.permute.default(self, order), [-1, c])
    out = aten.nll_loss.default(rows, aten.reshape.default(target, [-1]), weight, reduction, ignore_index)
    return aten.reshape.default(out, [n] + spatial) if reduction == K.NONE else out


# --- cross-entropy -----------------------------------------------------------------------------------------

def _class_weight_view(weight, ndim, class_dim):
    shape = [1] * ndim
    shape[class_dim] = weight.shape[0]
    return aten.reshape.default(weight, shape)


def _cross_entropy_probs(self, target, weight, reduction, label_smoothing):
    class_dim = 0 if self.dim() == 1 else 1
    n_classes = self.shape[class_dim]
    if weight is not None and (weight.dim() != 1 or weight.numel() != n_classes):
        raise RuntimeError(f"cross_entropy: weight tensor should be defined either for all {n_classes} classes or no "
                           f"classes but got weight tensor of shape: {list(weight.shape)}")
    if label_smoothing > 0:
        target = aten.add.Scalar(aten.mul.Scalar(target, 1 - label_smoothing), label_smoothing / n_classes)
    logp = aten.log_softmax.int(self, class_dim, self.dtype)
    if weight is not None:
        logp = aten.mul.Tensor(logp, _class_weight_view(weight, self.dim(), class_dim))
    prod = aten.mul.Tensor(logp, target)
    if reduction == K.NONE:
        return aten.neg.default(aten.sum.dim_IntList(prod, [class_dim]))
    total = aten.neg.default(aten.sum.default(prod))
    if reduction == K.SUM:
        return total
    # mean over the samples (and positions), not over the classes
    return aten.div.Scalar(total, self.numel() / n_classes if self.numel() else 0.0)


def _cross_entropy_smoothed(self, target, weight, reduction, ignore_index, label_smoothing):
    class_dim = 0 if self.dim() == 1 else 1
    n_classes = self.shape[class_dim]
    logp = aten.log_softmax.int(self, class_dim, self.dtype)
    nll = aten.nll_loss_nd.default(logp, target, weight, reduction, ignore_index)
    ignored = aten.eq.Scalar(target, ignore_index)
    if weight is not None:
        smooth = aten.neg.default(aten.sum.dim_IntList(
            aten.mul.Tensor(logp, _class_weight_view(weight, self.dim(), class_dim)), [class_dim]))
    else:
        smooth = aten.neg.default(aten.sum.dim_IntList(logp, [class_dim]))
    smooth = aten.masked_fill.Scalar(smooth, ignored, 0.0)
    if reduction == K.MEAN:
        kept = aten.logical_not.default(ignored)
        if weight is not None:
            # normalised by the weights of the counted targets, as nll_loss's mean is
            safe_target = aten.masked_fill.Scalar(target, ignored, 0)
            picked = aten.embedding.default(aten.reshape.default(aten.detach.default(weight), [-1, 1]), safe_target)
            denom = aten.sum.default(aten.masked_fill.Scalar(aten.reshape.default(picked, list(target.shape)),
                                                             ignored, 0.0))
        else:
            denom = aten.sum.default(kept)
        smooth = aten.div.Tensor(aten.sum.default(smooth), denom)
    elif reduction == K.SUM:
        smooth = aten.sum.default(smooth)
    return aten.add.Tensor(aten.mul.Scalar(nll, 1 - label_smoothing),
                           aten.mul.Scalar(smooth, label_smoothing / n_classes))


def cross_entropy_loss(self, target, weight=None, reduction=1, ignore_index=-100, label_smoothing=0.0):
    """log_softmax over the class dim (0 for a 1-D input, else 1), then nll_loss — or, for a target
    shaped like the input, the cross-entropy against class probabilities."""
    if tuple(self.shape) == tuple(target.shape):
        if not target.is_floating_point():
            raise RuntimeError(f"Expected floating point type for target with class probabilities, got "
                               f"{C.tname(target._a.dtype)}")
        if ignore_index >= 0:
            raise RuntimeError("ignore_index is not supported for floating point target")
        if label_smoothing > 1:
            raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
        return _cross_entropy_probs(self, target, weight, reduction, label_smoothing)
    if label_smoothing > 0:
        if label_smoothing > 1:
            raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
        return _cross_entropy_smoothed(self, target, weight, reduction, ignore_index, label_smoothing)
    class_dim = 0 if self.dim() == 1 else 1
    return aten.nll_loss_nd.default(aten.log_softmax.int(self, class_dim, self.dtype), target, weight, reduction,
                                    ignore_index)


# --- pointwise losses --------------------------------------------------------------------------------------

def _pair(self, target, kernel_name, *, allow_int=False):
    """(x, t, result dtype, device) of a pointwise loss; ints only where the loss allows them."""
    dev = C.common_device(self, target)
    C.check_devices(dev, self, target)
    dt = C.result_type(self, target)
    if not dt.is_floating_point and not allow_int:
        raise NotImplementedError(f"\"{kernel_name}\" not implemented for '{C.TORCH_NAME[dt]}'")
    x = C.array_operand(self, dt.np, dev)
    t = C.array_operand(target, dt.np, dev)
    C.broadcast_shapes(x.shape, t.shape)
    return x, t, dt, dev


def _finish(loss, reduction, dt, dev):
    return C.wrap(K.reduce(loss, reduction, dt.np), dev)


def mse_loss(self, target, reduction=1):
    x, t = self._a, target._a
    if (x.__class__ is _ndarray and t.__class__ is _ndarray and x.dtype == t.dtype and x.dtype in _PLAIN_FLOATS
            and x.shape == t.shape and self._device is target._device):
        # the common case (same dtype, shape and device, a float32/64 NumPy array): no promotion to work out,
        # and ndarray.sum's work through np.add.reduce directly (the same reduction, bit-identical)
        d = x - t
        d *= d
        if reduction == K.NONE:
            return C.make(d, self._device)
        r = _add_reduce(d, None)
        if reduction == K.MEAN:
            r = r / x.dtype.type(d.size)   # an empty input gives nan (0 / 0), as torch
        return C.make(_asarray(r), self._device)
    x, t, dt, dev = _pair(self, target, "mse_cpu")
    return _finish(K.mse(x, t), reduction, dt, dev)


def mse_loss_backward(grad_output, self, target, reduction):
    """mse_loss's gradient in ``self``: 2 (self - target) grad_output (over numel for the mean), torch's op."""
    x, t, g = self._a, target._a, grad_output._a
    if (x.dtype == t.dtype == g.dtype and x.dtype in _PLAIN_FLOATS and x.shape == t.shape
            and (g.shape == x.shape or not g.ndim) and self._device is target._device is grad_output._device):
        return C.wrap(K.mse_backward(g, x, t, reduction), self._device)   # the common case: nothing to promote
    dev = C.common_device(grad_output, self, target)
    C.check_devices(dev, grad_output, self, target)
    dt = C.result_type(grad_output, self, target)
    if not dt.is_floating_point:
        raise NotImplementedError(f"\"mse_backward_cpu_out\" not implemented for '{C.TORCH_NAME[dt]}'")
    x = C.array_operand(self, dt.np, dev)
    t = C.array_operand(target, dt.np, dev)
    g = C.array_operand(grad_output, dt.np, dev)
    C.broadcast_shapes(x.shape, t.shape, g.shape)
    return C.wrap(K.mse_backward(g, x, t, reduction), dev)


def l1_loss(self, target, reduction=1):
    x, t, dt, dev = _pair(self, target, "abs_cpu", allow_int=True)
    if reduction == K.MEAN and not dt.is_floating_point:
        raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either a floating point or "
                           f"complex dtype. Got: {C.TORCH_NAME[dt]}")
    return _finish(K.l1(x, t), reduction, dt, dev)


def smooth_l1_loss(self, target, reduction=1, beta=1.0):
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    x, t, dt, dev = _pair(self, target, "smooth_l1_cpu")
    return _finish(K.smooth_l1(x, t, float(beta)), reduction, dt, dev)


def huber_loss(self, target, reduction=1, delta=1.0):
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    x, t, dt, dev = _pair(self, target, "huber_cpu")
    return _finish(K.huber(x, t, float(delta)), reduction, dt, dev)


def binary_cross_entropy(self, target, weight=None, reduction=1):
    dev = C.same_device(self, target, weight)
    x = self._a
    for other in (target, weight):
        if other is not None and other._a.dtype != x.dtype:
            raise RuntimeError(f"Found dtype {C.tname(other._a.dtype)} but expected {C.tname(x.dtype)}")
    if not C.is_float(x.dtype):
        raise NotImplementedError(f"\"binary_cross_entropy\" not implemented for '{C.tname(x.dtype)}'")
    shapes = [x.shape, target._a.shape] + ([] if weight is None else [weight._a.shape])
    C.broadcast_shapes(*shapes)
    loss = K.binary_cross_entropy(x, target._a, None if weight is None else weight._a)
    return _finish(loss, reduction, FROM_NP[x.dtype], dev)


def binary_cross_entropy_with_logits(self, target, weight=None, pos_weight=None, reduction=1):
    """The result takes the target's dtype, as torch's in-place formula gives it."""
    dev = C.same_device(self, target, weight, pos_weight)
    out_dt = FROM_NP[target._a.dtype]
    dt = C.result_type(self, target)
    if not D.can_cast(dt, out_dt):
        raise RuntimeError(f"result type {C.TORCH_NAME[dt]} can't be cast to the desired output type "
                           f"{C.TORCH_NAME[out_dt]}")
    if not dt.is_floating_point:
        raise NotImplementedError(f"\"log_sigmoid_cpu\" not implemented for '{C.TORCH_NAME[dt]}'")
    shape = C.broadcast_shapes(self._a.shape, target._a.shape)
    if pos_weight is not None:
        C.broadcast_shapes(pos_weight._a.shape, target._a.shape)
    if weight is not None:
        C.broadcast_shapes(shape, weight._a.shape)
    x = C.array_operand(self, dt.np, dev)
    t = C.array_operand(target, dt.np, dev)
    loss = K.binary_cross_entropy_with_logits(x, t, None if weight is None else weight._a,
                                              None if pos_weight is None else pos_weight._a)
    return _finish(loss, reduction, out_dt, dev)


def kl_div(self, target, reduction=1, log_target=False):
    """target * (log(target) - input), 0 where target is 0; with log_target, exp(target) * (target - input)."""
    if log_target:
        loss = aten.mul.Tensor(aten.exp.default(target), aten.sub.Tensor(target, self))
    else:
        positive = aten.gt.Scalar(target, 0)
        safe = aten.where.self(positive, target, aten.ones_like.default(target))
        loss = aten.sub.Tensor(aten.mul.Tensor(target, aten.log.default(safe)), aten.mul.Tensor(target, self))
    if reduction == K.MEAN:
        return aten.mean.default(loss)
    if reduction == K.SUM:
        return aten.sum.default(loss)
    return loss


KERNELS = {
    "nll_loss_forward": nll_loss_forward, "nll_loss_backward": nll_loss_backward,
    "mse_loss": mse_loss, "mse_loss_backward": mse_loss_backward, "l1_loss": l1_loss, "smooth_l1_loss": smooth_l1_loss, "huber_loss": huber_loss,
    "binary_cross_entropy": binary_cross_entropy,
    "binary_cross_entropy_with_logits": binary_cross_entropy_with_logits,
}

# Ops that decompose into other ops (CompositeImplicitAutograd): autograd comes from the parts.
COMPOSITE_IMPLICIT = {
    "nll_loss": nll_loss, "nll_loss_nd": nll_loss_nd, "cross_entropy_loss": cross_entropy_loss, "kl_div": kl_div,
}
