"""``Adamax``: Adam with the second moment replaced by an exponentially weighted infinity norm."""
from __future__ import annotations

from ..api import factories as _factories
from ..core.factories import tensor as _tensor
from ..core.tensor import Tensor
from .optimizer import (
    Optimizer,
    _check_unsupported,
    _evaluate_closure,
    _get_value,
    _scalar_dtype,
    _to_scalar,
    _use_grad_for_differentiable,
    addcdiv_,
)

__all__ = ["Adamax", "adamax"]


class Adamax(Optimizer):
    """Implements the Adamax algorithm (a variant of Adam based on the infinity norm), as ``torch.optim.Adamax``."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
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
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable, "capturable": capturable}
        super().__init__(params, defaults)
        _check_unsupported("Adamax", foreach=foreach, capturable=capturable, differentiable=differentiable)

    _group_defaults = {"foreach": None, "maximize": False, "differentiable": False, "capturable": False}
    _tensor_step_counters = True

    def _init_group(self, group):
        return self._gather(group, ("exp_avg", "exp_inf", "step"), lambda p: {
            "step": _tensor(0.0, dtype=_scalar_dtype()),
            "exp_avg": _factories.zeros_like(p), "exp_inf": _factories.zeros_like(p),
        })

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """Perform a single optimization step; ``closure`` re-evaluates the model and returns the loss."""
        loss = _evaluate_closure(closure)
        for group in self.param_groups:
            params_with_grad, grads, exp_avgs, exp_infs, state_steps = self._init_group(group)
            beta1, beta2 = group["betas"]
            adamax(params_with_grad, grads, exp_avgs, exp_infs, state_steps, eps=group["eps"], beta1=beta1,
                   beta2=beta2, lr=group["lr"], weight_decay=group["weight_decay"], maximize=group["maximize"])
        return loss


def adamax(params, grads, exp_avgs, exp_infs, state_steps, *, eps, beta1, beta2, lr, weight_decay,
           maximize) -> None:
    """Functional Adamax: torch's single-tensor update, same operations in the same order."""
    lr = _to_scalar(lr)
    for i, param in enumerate(params):
        grad = grads[i] if not maximize else grads[i].neg()
        exp_avg = exp_avgs[i]
        exp_inf = exp_infs[i]
        step_t = state_steps[i]
        step_t.add_(1)
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        exp_avg.lerp_(grad, 1 - beta1)
        # the exponentially weighted infinity norm
        exp_inf.copy_(exp_inf.mul_(beta2).maximum(grad.abs().add_(eps)))
        bias_correction = 1 - beta1 ** _get_value(step_t)
        clr = lr / bias_correction
        addcdiv_(param, exp_avg, exp_inf, value=-_get_value(clr))
