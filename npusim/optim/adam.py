"""``Adam``: adaptive moment estimation, with AMSGrad, maximize and (for AdamW) decoupled weight decay."""
from __future__ import annotations

import numpy as np

from ..core.c10.device_hooks import check_access as _check_access
from ..core.dispatch.dispatch_tls import slow_path_active as _slow_path_active
from ..api import factories as _factories
from ..core.autograd.grad_mode import is_grad_enabled as _is_grad_enabled
from ..core.factories import tensor as _tensor
from ..core.tensor import Tensor
from ..kernels.parallel import for_ranges as _for_ranges
from .optimizer import (
    Optimizer, _check_unsupported, _evaluate_closure, _get_value, _scalar_dtype, _to_scalar,
    _use_grad_for_differentiable, addcdiv_, addcmul_,
)

__all__ = ["Adam", "adam"]


class Adam(Optimizer):
    """Implements the Adam algorithm, as ``torch.optim.Adam``."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False) -> None:
        if isinstance(lr, Tensor):
            if foreach and not capturable:
                raise ValueError("lr as a Tensor is not supported for capturable=False and foreach=True")
            if lr.numel() != 1:
                raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not ((isinstance(betas[0], float) and isinstance(betas[1], float))
                or (isinstance(betas[0], Tensor) and isinstance(betas[1], Tensor))):
            raise ValueError("betas must be either both floats or both Tensors")
        for i in (0, 1):
            if isinstance(betas[i], Tensor):
                if not capturable and foreach:
                    raise ValueError(f"betas[{i}] as a Tensor is not supported for capturable=False and foreach=True")
                if betas[i].numel() != 1:
                    raise ValueError(f"Tensor betas[{i}] must be 1-element")
        betas = tuple(map(_to_scalar, betas))
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "amsgrad": amsgrad,
                    "maximize": maximize, "foreach": foreach, "capturable": capturable,
                    "differentiable": differentiable, "fused": fused,
                    "decoupled_weight_decay": decoupled_weight_decay}
        super().__init__(params, defaults)
        _check_unsupported(type(self).__name__, foreach=foreach, fused=fused, capturable=capturable,
                           differentiable=differentiable)

    _group_defaults = {
        "amsgrad": False, "maximize": False, "foreach": None, "capturable": False, "differentiable": False,
        "decoupled_weight_decay": False, "fused": None
    }
    _tensor_step_counters = True

    def _init_group(self, group, params_with_grad, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps):
        amsgrad = group["amsgrad"]
        states = self.state
        for p in group["params"]:
            grad = p.grad
            if grad is None:
                continue
            params_with_grad.append(p)
            grads.append(grad)
            state = states[p]
            if len(state) == 0:
                # the step counter lives on the cpu, as torch keeps it when neither capturable nor fused
                state["step"] = _tensor(0.0, dtype=_scalar_dtype())
                state["exp_avg"] = _factories.zeros_like(p)
                state["exp_avg_sq"] = _factories.zeros_like(p)
                if amsgrad:
                    state["max_exp_avg_sq"] = _factories.zeros_like(p)
            exp_avgs.append(state["exp_avg"])
            exp_avg_sqs.append(state["exp_avg_sq"])
            if amsgrad:
                max_exp_avg_sqs.append(state["max_exp_avg_sq"])
            state_steps.append(state["step"])

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """Perform a single optimization step; ``closure`` re-evaluates the model and returns the loss."""
        loss = _evaluate_closure(closure)
        for group in self.param_groups:
            params_with_grad, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps = [], [], [], [], [], []
            beta1, beta2 = group["betas"]
            self._init_group(group, params_with_grad, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps)
            adam(params_with_grad, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps,
                 amsgrad=group["amsgrad"], beta1=beta1, beta2=beta2, lr=group["lr"],
                 weight_decay=group["weight_decay"], eps=group["eps"], maximize=group["maximize"],
                 decoupled_weight_decay=group["decoupled_weight_decay"])
        return loss


def adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, *, amsgrad, beta1, beta2, lr,
         weight_decay, eps, maximize, decoupled_weight_decay=False) -> None:
    """Functional Adam/AdamW: torch's single-tensor update, same operations in the same order."""
    lr = _get_value(_to_scalar(lr))
    beta1 = _get_value(_to_scalar(beta1))
    beta2 = _get_value(_to_scalar(beta2))
    # the array update needs the plain path (no callbacks, autocast or key guards) and grad mode off: one test
    # for the whole list, as nothing in the loop changes either
    arrays_ok = not amsgrad and (weight_decay == 0 or decoupled_weight_decay) and not _slow_path_active() and \
        not _is_grad_enabled()
    for i, param in enumerate(params):
        grad = grads[i] if not maximize else grads[i].neg()
        exp_avg = exp_avgs[i]
        exp_avg_sq = exp_avg_sqs[i]
        step_t = state_steps[i]

        step_t.add_(1)

        if arrays_ok and _arrays_fit(param, grad, exp_avg, exp_avg_sq):
            step = step_t.item()
            _update_arrays(param, grad, exp_avg, exp_avg_sq, decay=lr * weight_decay if weight_decay != 0 else None,
                           lerp_weight=1 - beta1, beta2=beta2, bias_correction2_sqrt=(1 - beta2 ** step) ** 0.5,
                           eps=eps, neg_step_size=-(lr / (1 - beta1 ** step)))
            continue

        if weight_decay != 0:
            if decoupled_weight_decay:
                param.mul_(1 - lr * weight_decay)
            else:
                grad = grad.add(param, alpha=weight_decay)

        # decay the first and second moment running averages
        exp_avg.lerp_(grad, 1 - beta1)
        addcmul_(exp_avg_sq.mul_(beta2), grad, grad, value=1 - beta2)

        step = step_t.item()
        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        step_size = lr / bias_correction1
        bias_correction2_sqrt = bias_correction2 ** 0.5

        if amsgrad:
            # the running maximum of the second moment normalises the step
            max_exp_avg_sq = max_exp_avg_sqs[i]
            max_exp_avg_sq.copy_(max_exp_avg_sq.maximum(exp_avg_sq))
            denom = max_exp_avg_sq.sqrt().div_(bias_correction2_sqrt).add_(eps)
        else:
            denom = exp_avg_sq.sqrt().div_(bias_correction2_sqrt).add_(eps)

        addcdiv_(param, exp_avg, denom, value=-step_size)


# --- the same update over the tensors' arrays ------------------------------------------------------------------
#
# The loop above runs about a dozen elementwise passes per parameter, each over the whole tensor, with a
# temporary tensor for most of them. For NumPy arrays (the cpu and the emulated npu) the same ufuncs with the
# same scalars run here in the same order, element by element, so every result is bit-identical; but they run
# over cache-sized pieces, with two small scratch arrays, so the dozen passes read and write memory about
# once. Anything else (CuPy arrays, other dtypes, amsgrad, coupled weight decay, overlapping or strided
# arrays), a call with grad mode on (the tensor ops refuse in-place changes of leaves that require grad) and
# any call while profiling callbacks, autocast or dispatch-key guards are active (they must see the individual
# ops; dispatch_tls.slow_path_active() says whether any is) takes the tensor ops.

_CHUNK = 32768   # elements per piece: the arrays of one piece (six at most) stay in the CPU caches
_UPDATE_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_ndarray = np.ndarray
_may_share_memory = np.may_share_memory


def _arrays_fit(param, grad, exp_avg, exp_avg_sq) -> bool:
    """Whether the four tensors' arrays take the piecewise update (the caller has checked the modes)."""
    if grad.__class__ is not Tensor or \
            exp_avg.__class__ is not Tensor or exp_avg_sq.__class__ is not Tensor or not isinstance(param, Tensor):
        return False
    dev = param._device
    _check_access(dev)      # the arrays are read here, past the dispatcher (a forked child may not)
    arrays = (param._a, grad._a, exp_avg._a, exp_avg_sq._a)
    a = arrays[0]
    if a.dtype not in _UPDATE_DTYPES or grad._device is not dev or exp_avg._device is not dev or \
            exp_avg_sq._device is not dev:
        return False
    owners = []
    for i, x in enumerate(arrays):
        if x.__class__ is not _ndarray or x.dtype != a.dtype or x.shape != a.shape:
            return False
        flags = x.flags
        if not flags.c_contiguous or (i != 1 and not flags.writeable):
            return False
        # the array that owns x's memory (NumPy points a view's base straight at it), None if not an array
        owner = x if flags.owndata else x.base
        owners.append(owner if owner.__class__ is _ndarray and owner.flags.owndata else None)
    # arrays of different owners cannot overlap: only the other pairs need NumPy's test
    for i in range(3):
        oi = owners[i]
        for j in range(i + 1, 4):
            oj = owners[j]
            if (oi is None or oj is None or oi is oj) and _may_share_memory(arrays[i], arrays[j]):
                return False
    return True


def _update_arrays(param, grad, exp_avg, exp_avg_sq, *, decay, lerp_weight, beta2, bias_correction2_sqrt, eps,
                   neg_step_size):
    """The loop's update of one parameter, piece by piece; the comments name the tensor op each line replaces."""
    p, g, m, v = (t._a.reshape(-1) for t in (param, grad, exp_avg, exp_avg_sq))
    dt = p.dtype
    w = lerp_weight
    c2 = 1 - beta2
    mul, sub, add, div, sqrt = np.multiply, np.subtract, np.add, np.true_divide, np.sqrt

    def pieces(start, stop):
        with np.errstate(all="ignore"):   # inf and nan are values, silent as in the kernels (on every thread)
            _pieces(start, stop)

    def _pieces(start, stop):
        size = min(_CHUNK, stop - start)
        s1, s2 = np.empty(size, dt), np.empty(size, dt)
        for lo in range(start, stop, _CHUNK):
            hi = min(lo + _CHUNK, stop)
            pp, gg, mm, vv = p[lo:hi], g[lo:hi], m[lo:hi], v[lo:hi]
            t1, t2 = s1[:hi - lo], s2[:hi - lo]
            if decay is not None:
                mul(pp, 1 - decay, out=pp)              # param.mul_(1 - lr * weight_decay)
            sub(gg, mm, out=t1)                         # exp_avg.lerp_(grad, w): diff = grad - exp_avg
            if abs(w) < 0.5:
                mul(t1, w, out=t1)
                add(mm, t1, out=mm)                     # exp_avg + w * diff
            else:
                mul(t1, 1 - w, out=t1)
                sub(gg, t1, out=mm)                     # grad - diff * (1 - w)
            mul(vv, beta2, out=vv)                      # exp_avg_sq.mul_(beta2)
            if c2 != 1:
                mul(gg, c2, out=t1)                     # addcmul_: grad.mul(1 - beta2).mul_(grad)
                mul(t1, gg, out=t1)
            else:
                mul(gg, gg, out=t1)
            add(vv, t1, out=vv)                         # exp_avg_sq.add_(product)
            sqrt(vv, out=t1)                            # denom = exp_avg_sq.sqrt()
            div(t1, bias_correction2_sqrt, out=t1)      # .div_(bias_correction2_sqrt)
            add(t1, eps, out=t1)                        # .add_(eps)
            if neg_step_size != 1:
                mul(mm, neg_step_size, out=t2)          # addcdiv_: exp_avg.mul(-step_size).div_(denom)
                div(t2, t1, out=t2)
            else:
                div(mm, t1, out=t2)
            add(pp, t2, out=pp)                         # param.add_(quotient)

    _for_ranges(p.size, _CHUNK, pieces)
    # the version counters move as the tensor ops would move them
    if decay is not None:
        param._bump_version()
    param._bump_version()
    exp_avg._bump_version()
    exp_avg_sq._bump_version()
    exp_avg_sq._bump_version()
