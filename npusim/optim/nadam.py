"""``NAdam``: Adam with Nesterov momentum and a momentum schedule (``momentum_decay``)."""
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
    addcmul_,
)

__all__ = ["NAdam", "nadam"]


class NAdam(Optimizer):
    """Implements the NAdam algorithm, as ``torch.optim.NAdam``."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
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
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "momentum_decay": momentum_decay, "decoupled_weight_decay": decoupled_weight_decay,
                    "maximize": maximize, "foreach": foreach, "capturable": capturable,
                    "differentiable": differentiable}
        super().__init__(params, defaults)
        _check_unsupported("NAdam", foreach=foreach, capturable=capturable, differentiable=differentiable)

    _group_defaults = {"maximize": False, "foreach": None, "capturable": False, "differentiable": False,
                       "decoupled_weight_decay": False}
    _tensor_step_counters = True

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            for p in group["params"]:
                p_state = self.state.get(p, [])
                if len(p_state) != 0 and not isinstance(p_state["mu_product"], Tensor):
                    p_state["mu_product"] = _tensor(p_state["mu_product"], dtype=_scalar_dtype())

    def _init_group(self, group):
        return self._gather(group, ("exp_avg", "exp_avg_sq", "mu_product", "step"), lambda p: {
            # step and mu_product live on the cpu, as torch keeps them when not capturable
            "step": _tensor(0.0, dtype=_scalar_dtype()), "mu_product": _tensor(1.0, dtype=_scalar_dtype()),
            "exp_avg": _factories.zeros_like(p), "exp_avg_sq": _factories.zeros_like(p),
        })

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """Perform a single optimization step; ``closure`` re-evaluates the model and returns the loss."""
        loss = _evaluate_closure(closure)
        for group in self.param_groups:
            params_with_grad, grads, exp_avgs, exp_avg_sqs, mu_products, state_steps = self._init_group(group)
            beta1, beta2 = group["betas"]
            nadam(params_with_grad, grads, exp_avgs, exp_avg_sqs, mu_products, state_steps, beta1=beta1,
                  beta2=beta2, lr=group["lr"], weight_decay=group["weight_decay"],
                  momentum_decay=group["momentum_decay"], eps=group["eps"],
                  decoupled_weight_decay=group["decoupled_weight_decay"], maximize=group["maximize"])
        return loss


def nadam(params, grads, exp_avgs, exp_avg_sqs, mu_products, state_steps, *, beta1, beta2, lr, weight_decay,
          momentum_decay, eps, decoupled_weight_decay=False, maximize=False) -> None:
    """Functional NAdam: torch's single-tensor update, same operations in the same order."""
    lr = _to_scalar(lr)
    for i, param in enumerate(params):
        grad = grads[i] if not maximize else grads[i].neg()
        exp_avg = exp_avgs[i]
        exp_avg_sq = exp_avg_sqs[i]
        mu_product = mu_products[i]
        step_t = state_steps[i]

        step_t.add_(1)
        step = _get_value(step_t)
        bias_correction2 = 1 - beta2 ** step

        if weight_decay != 0:
            if decoupled_weight_decay:
                param.mul_(_get_value(1 - lr * weight_decay))
            else:
                grad = grad.add(param, alpha=weight_decay)

        # the momentum cache mu^t and mu^{t+1}
        mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
        mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
        # the product is kept in a float32 tensor, so it rounds as torch's does
        mu_product.mul_(mu)

        exp_avg.lerp_(grad, 1 - beta1)
        addcmul_(exp_avg_sq.mul_(beta2), grad, grad, value=1 - beta2)
        denom = exp_avg_sq.div(bias_correction2).sqrt()

        mu_product_next = _get_value(mu_product) * mu_next
        denom.add_(eps)
        addcdiv_(param, grad, denom, value=_get_value(-lr * (1.0 - mu) / (1.0 - _get_value(mu_product))))
        addcdiv_(param, exp_avg, denom, value=_get_value((-lr * mu_next) / (1.0 - mu_product_next)))
