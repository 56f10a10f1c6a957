"""``Adadelta``: steps scaled by the ratio of running RMS of past updates to running RMS of gradients."""
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

__all__ = ["Adadelta", "adadelta"]


class Adadelta(Optimizer):
    """Implements the Adadelta algorithm, as ``torch.optim.Adadelta``."""

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {"lr": lr, "rho": rho, "eps": eps, "weight_decay": weight_decay, "maximize": maximize,
                    "capturable": capturable, "foreach": foreach, "differentiable": differentiable}
        super().__init__(params, defaults)
        _check_unsupported("Adadelta", foreach=foreach, capturable=capturable, differentiable=differentiable)

    _group_defaults = {"foreach": None, "maximize": False, "differentiable": False, "capturable": False}
    _tensor_step_counters = True

    def _init_group(self, group):
        return self._gather(group, ("square_avg", "acc_delta", "step"), lambda p: {
            "step": _tensor(0.0, dtype=_scalar_dtype()),
            "square_avg": _factories.zeros_like(p), "acc_delta": _factories.zeros_like(p),
        })

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """Perform a single optimization step; ``closure`` re-evaluates the model and returns the loss."""
        loss = _evaluate_closure(closure)
        for group in self.param_groups:
            params_with_grad, grads, square_avgs, acc_deltas, state_steps = self._init_group(group)
            adadelta(params_with_grad, grads, square_avgs, acc_deltas, state_steps, lr=group["lr"],
                     rho=group["rho"], eps=group["eps"], weight_decay=group["weight_decay"],
                     maximize=group["maximize"])
        return loss


def adadelta(params, grads, square_avgs, acc_deltas, state_steps, *, lr, rho, eps, weight_decay,
             maximize) -> None:
    """Functional Adadelta: torch's single-tensor update, same operations in the same order."""
    lr = _get_value(_to_scalar(lr))
    for param, grad, square_avg, acc_delta, step in zip(params, grads, square_avgs, acc_deltas, state_steps):
        step.add_(1)
        grad = grad if not maximize else grad.neg()
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        addcmul_(square_avg.mul_(rho), grad, grad, value=1 - rho)
        std = square_avg.add(eps).sqrt_()
        delta = acc_delta.add(eps).sqrt_()
        delta.div_(std).mul_(grad)
        addcmul_(acc_delta.mul_(rho), delta, delta, value=1 - rho)
        param.add_(delta, alpha=-lr)
