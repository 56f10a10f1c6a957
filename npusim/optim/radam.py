"""``RAdam``: Adam with a rectified (variance-corrected) adaptive learning rate."""
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
    addcmul_,
)

__all__ = ["RAdam", "radam"]


class RAdam(Optimizer):
    """Implements the RAdam algorithm, as ``torch.optim.RAdam``."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False) -> None:
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
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "maximize": maximize,
                    "foreach": foreach, "capturable": capturable,
                    "decoupled_weight_decay": decoupled_weight_decay, "differentiable": differentiable}
        super().__init__(params, defaults)
        _check_unsupported("RAdam", foreach=foreach, capturable=capturable, differentiable=differentiable)

    _group_defaults = {
        "foreach": None, "maximize": False, "differentiable": False, "decoupled_weight_decay": False,
        "capturable": False
    }
    _tensor_step_counters = True

    def _init_group(self, group):
        return self._gather(group, ("exp_avg", "exp_avg_sq", "step"), lambda p: {
            "step": _tensor(0.0, dtype=_scalar_dtype()),
            "exp_avg": _factories.zeros_like(p), "exp_avg_sq": _factories.zeros_like(p),
        })

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """Perform a single optimization step; ``closure`` re-evaluates the model and returns the loss."""
        loss = _evaluate_closure(closure)
        for group in self.param_groups:
            params_with_grad, grads, exp_avgs, exp_avg_sqs, state_steps = self._init_group(group)
            beta1, beta2 = group["betas"]
            radam(params_with_grad, grads, exp_avgs, exp_avg_sqs, state_steps, beta1=beta1, beta2=beta2,
                  lr=group["lr"], weight_decay=group["weight_decay"], eps=group["eps"],
                  decoupled_weight_decay=group["decoupled_weight_decay"], maximize=group["maximize"])
        return loss


def radam(params, grads, exp_avgs, exp_avg_sqs, state_steps, *, beta1, beta2, lr, weight_decay, eps,
          decoupled_weight_decay=False, maximize=False) -> None:
    """Functional RAdam: torch's single-tensor update, same operations in the same order."""
    lr = _to_scalar(lr)
    for i, param in enumerate(params):
        grad = grads[i] if not maximize else grads[i].neg()
        exp_avg = exp_avgs[i]
        exp_avg_sq = exp_avg_sqs[i]
        step_t = state_steps[i]

        step_t.add_(1)
        step = _get_value(step_t)

        if weight_decay != 0:
            if decoupled_weight_decay:
                param.mul_(_get_value(1 - lr * weight_decay))
            else:
                grad = grad.add(param, alpha=weight_decay)

        exp_avg.lerp_(grad, 1 - beta1)
        addcmul_(exp_avg_sq.mul_(beta2), grad, grad, value=1 - beta2)

        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        bias_corrected_exp_avg = exp_avg / bias_correction1

        # the maximum length of the approximated simple moving average, and its length at this step
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2

        if rho_t > 5.0:
            # the variance is tractable: rectify the adaptive learning rate
            rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
            adaptive_lr = (bias_correction2 ** 0.5) / exp_avg_sq.sqrt().add_(eps)
            param.add_(bias_corrected_exp_avg * lr * adaptive_lr * rect, alpha=-1.0)
        else:
            param.add_(bias_corrected_exp_avg * lr, alpha=-1.0)
