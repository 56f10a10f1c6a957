"""The fused Adam and AdamW steps ``torch.optim.Adam(fused=True)`` / ``AdamW(fused=True)`` call
(``_fused_adam_``, ``_fused_adamw_``), on the npu's arrays in place: torch's fused CPU kernel's arithmetic, one
tensor at a time (npusim's own optimizers do this work in their Python, with no aten op for torch to find).
Half-precision parameters are stepped in float32 and rounded back, as torch's kernels do."""
from __future__ import annotations

import math

from npusim.privateuse1 import get_device_hooks

from .adoption import NPUSIM_DEVICE, array_view

_xp = get_device_hooks("npu").array_namespace(NPUSIM_DEVICE)


def _number(v) -> float:
    return float(v.item()) if hasattr(v, "item") else float(v)


def _wide(a):
    return a.astype("float32") if a.dtype.itemsize < 4 and a.dtype.kind in "fV" or a.dtype.name == "bfloat16" \
        else a


def _store(dst, value) -> None:
    dst[...] = value.astype(dst.dtype, copy=False)


def _step(decoupled, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, lr, beta1, beta2,
          weight_decay, eps, amsgrad, maximize, grad_scale, found_inf):
    if found_inf is not None and _number(found_inf) != 0:
        return      # GradScaler found an inf or NaN: the step is skipped, as torch's kernel skips it
    lr = _number(lr)
    scale = None if grad_scale is None else _number(grad_scale)
    for i, (p, g, m, v) in enumerate(zip(params, grads, exp_avgs, exp_avg_sqs)):
        pa, ga, ma, va = array_view(p), array_view(g), array_view(m), array_view(v)
        param, grad = _wide(pa), _wide(ga)
        if scale is not None:
            grad = grad / scale
            _store(ga, grad)    # torch's kernel leaves the unscaled gradient in grads
        if maximize:
            grad = -grad
        if weight_decay != 0:
            if decoupled:
                param = param * (1 - lr * weight_decay)
            else:
                grad = grad + param * weight_decay
        exp_avg = _wide(ma) + (grad - _wide(ma)) * (1 - beta1)      # lerp(exp_avg, grad, 1 - beta1)
        exp_avg_sq = _wide(va) * beta2 + grad * grad * (1 - beta2)
        step = _number(state_steps[i])
        bias_correction1 = 1 - beta1 ** step
        bias_correction2_sqrt = math.sqrt(1 - beta2 ** step)
        second = exp_avg_sq
        if amsgrad:
            mx = array_view(max_exp_avg_sqs[i])
            second = _xp.maximum(_wide(mx), exp_avg_sq)
            _store(mx, second)
        denom = _xp.sqrt(second) / bias_correction2_sqrt + eps
        _store(pa, param - (lr / bias_correction1) * exp_avg / denom)
        _store(ma, exp_avg)
        _store(va, exp_avg_sq)


def _fused_adam_(self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, *, lr, beta1, beta2,
                 weight_decay, eps, amsgrad, maximize, grad_scale=None, found_inf=None):
    _step(False, self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, lr, beta1, beta2, weight_decay,
          eps, amsgrad, maximize, grad_scale, found_inf)


def _fused_adamw_(self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, *, lr, beta1, beta2,
                  weight_decay, eps, amsgrad, maximize, grad_scale=None, found_inf=None):
    _step(True, self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, lr, beta1, beta2, weight_decay,
          eps, amsgrad, maximize, grad_scale, found_inf)


def register(lib) -> None:
    for fn in (_fused_adam_, _fused_adamw_):
        for overload in ("", ".tensor_lr"):      # lr a number, or a tensor
            lib.impl(fn.__name__ + overload, fn, "PrivateUse1")
