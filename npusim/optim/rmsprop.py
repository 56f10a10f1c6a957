"""``RMSprop``: gradients scaled by a running RMS of past gradients, optionally centered and with momentum."""
from __future__ import annotations

from ..api import factories as _factories
from ..core.factories import tensor as _tensor
from ..core.tensor import Tensor
from .optimizer import (
    Optimizer, _check_unsupported, _evaluate_closure, _get_value, _scalar_dtype, _to_scalar,
    _use_grad_for_differentiable, addcdiv_, addcmul, addcmul_,
)

__all__ = ["RMSprop", "rmsprop"]


class RMSprop(Optimizer):
    """Implements the RMSprop algorithm, as ``torch.optim.RMSprop``."""

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        defaults = {"lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps, "centered": centered,
                    "weight_decay": weight_decay, "capturable": capturable, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable}
        super().__init__(params, defaults)
        _check_unsupported("RMSprop", foreach=foreach, capturable=capturable, differentiable=differentiable)

    _group_defaults = {
        "momentum": 0, "centered": False, "foreach": None, "maximize": False, "differentiable": False,
        "capturable": False
    }
    _tensor_step_counters = True

    def _init_group(self, group, params_with_grad, grads, square_avgs, momentum_buffer_list, grad_avgs, state_steps):
        for p in group["params"]:
            if p.grad is None:
                continue
            params_with_grad.append(p)
            grads.append(p.grad)
            state = self.state[p]
            if len(state) == 0:
                state["step"] = _tensor(0.0, dtype=_scalar_dtype())
                state["square_avg"] = _factories.zeros_like(p)
                if group["momentum"] > 0:
                    state["momentum_buffer"] = _factories.zeros_like(p)
                if group["centered"]:
                    state["grad_avg"] = _factories.zeros_like(p)
            square_avgs.append(state["square_avg"])
            state_steps.append(state["step"])
            if group["momentum"] > 0:
                momentum_buffer_list.append(state["momentum_buffer"])
            if group["centered"]:
                grad_avgs.append(state["grad_avg"])

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """Perform a single optimization step; ``closure`` re-evaluates the model and returns the loss."""
        loss = _evaluate_closure(closure)
        for group in self.param_groups:
            params_with_grad, grads, square_avgs, grad_avgs, momentum_buffer_list, state_steps = [], [], [], [], [], []
            self._init_group(group, params_with_grad, grads, square_avgs, momentum_buffer_list, grad_avgs,
                             state_steps)
            rmsprop(params_with_grad, grads, square_avgs, grad_avgs, momentum_buffer_list, state_steps,
                    lr=group["lr"], alpha=group["alpha"], eps=group["eps"], weight_decay=group["weight_decay"],
                    momentum=group["momentum"], centered=group["centered"], maximize=group["maximize"])
        return loss


def rmsprop(params, grads, square_avgs, grad_avgs, momentum_buffer_list, state_steps, *, lr, alpha, eps,
            weight_decay, momentum, centered, maximize) -> None:
    """Functional RMSprop: torch's single-tensor update, same operations in the same order."""
    lr = _get_value(_to_scalar(lr))
    for i, param in enumerate(params):
        grad = grads[i] if not maximize else grads[i].neg()
        square_avg = square_avgs[i]
        state_steps[i].add_(1)

        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)

        addcmul_(square_avg.mul_(alpha), grad, grad, value=1 - alpha)

        if centered:
            grad_avg = grad_avgs[i]
            grad_avg.lerp_(grad, 1 - alpha)
            avg = addcmul(square_avg, grad_avg, grad_avg, value=-1).sqrt_()
        else:
            avg = square_avg.sqrt()
        avg = avg.add_(eps)

        if momentum > 0:
            buf = momentum_buffer_list[i]
            addcdiv_(buf.mul_(momentum), grad, avg)
            param.add_(buf, alpha=-lr)
        else:
            addcdiv_(param, grad, avg, value=-lr)
