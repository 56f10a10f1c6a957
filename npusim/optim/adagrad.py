"""``Adagrad``: per-coordinate steps scaled by the root of the running sum of squared gradients."""
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

__all__ = ["Adagrad", "adagrad"]


class Adagrad(Optimizer):
    """Implements the Adagrad algorithm, as ``torch.optim.Adagrad``."""

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        defaults = {"lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay,
                    "initial_accumulator_value": initial_accumulator_value, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable, "fused": fused}
        super().__init__(params, defaults)
        _check_unsupported("Adagrad", foreach=foreach, fused=fused, differentiable=differentiable)
        # unlike the other optimizers, torch fills the state of every parameter at construction
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p)

    def _init_state(self, p) -> None:
        state = self.state[p]
        state["step"] = _tensor(0.0, dtype=_scalar_dtype())
        state["sum"] = _factories.full_like(p, self.defaults["initial_accumulator_value"])

    _group_defaults = {"foreach": None, "maximize": False, "differentiable": False, "fused": None}
    _tensor_step_counters = True

    def _init_group(self, group, params_with_grad, grads, state_sums, state_steps):
        for p in group["params"]:
            if p.grad is None:
                continue
            params_with_grad.append(p)
            grads.append(p.grad)
            if len(self.state[p]) == 0:   # a group added after construction
                self._init_state(p)
            state = self.state[p]
            state_sums.append(state["sum"])
            state_steps.append(state["step"])

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """Perform a single optimization step; ``closure`` re-evaluates the model and returns the loss."""
        loss = _evaluate_closure(closure)
        for group in self.param_groups:
            params_with_grad, grads, state_sums, state_steps = [], [], [], []
            self._init_group(group, params_with_grad, grads, state_sums, state_steps)
            adagrad(params_with_grad, grads, state_sums, state_steps, lr=group["lr"],
                    weight_decay=group["weight_decay"], lr_decay=group["lr_decay"], eps=group["eps"],
                    maximize=group["maximize"])
        return loss


def adagrad(params, grads, state_sums, state_steps, *, lr, weight_decay, lr_decay, eps, maximize) -> None:
    """Functional Adagrad: torch's single-tensor update, same operations in the same order."""
    lr = _to_scalar(lr)   # a tensor lr stays a tensor, so the scalar arithmetic rounds as torch's does
    for param, grad, state_sum, step_t in zip(params, grads, state_sums, state_steps):
        step_t.add_(1)
        step = _get_value(step_t)
        grad = grad if not maximize else grad.neg()
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        clr = lr / (1 + (step - 1) * lr_decay)
        addcmul_(state_sum, grad, grad, value=1)
        std = state_sum.sqrt().add_(eps)
        addcdiv_(param, grad, std, value=-_get_value(clr))
