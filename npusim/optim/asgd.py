"""``ASGD``: averaged stochastic gradient descent (SGD whose iterates are also averaged into ``ax``)."""
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
)

__all__ = ["ASGD", "asgd"]


class ASGD(Optimizer):
    """Implements Averaged Stochastic Gradient Descent, as ``torch.optim.ASGD``."""

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
                 maximize=False, differentiable=False, capturable=False) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {"lr": lr, "lambd": lambd, "alpha": alpha, "t0": t0, "weight_decay": weight_decay,
                    "foreach": foreach, "maximize": maximize, "differentiable": differentiable,
                    "capturable": capturable}
        super().__init__(params, defaults)
        _check_unsupported("ASGD", foreach=foreach, capturable=capturable, differentiable=differentiable)

    _group_defaults = {"foreach": None, "maximize": False, "differentiable": False, "capturable": False}

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            for p in group["params"]:
                p_state = self.state.get(p, [])
                if len(p_state) != 0:
                    # old checkpoints kept these as numbers; torch makes them tensors on the parameter's device
                    for key in ("step", "eta", "mu"):
                        if not isinstance(p_state[key], Tensor):
                            p_state[key] = _tensor(float(p_state[key]), dtype=_scalar_dtype(), device=p.device)

    def _init_group(self, group, params_with_grad, grads, mus, axs, etas, state_steps):
        for p in group["params"]:
            if p.grad is None:
                continue
            params_with_grad.append(p)
            grads.append(p.grad)
            state = self.state[p]
            if len(state) == 0:
                # unlike the other optimizers, torch keeps ASGD's scalars on the parameter's device
                state["step"] = _factories.zeros((), device=p.device, dtype=_scalar_dtype())
                state["eta"] = _tensor(_get_value(_to_scalar(group["lr"])), device=p.device,
                                       dtype=_scalar_dtype())
                state["mu"] = _factories.ones((), device=p.device, dtype=_scalar_dtype())
                state["ax"] = _factories.zeros_like(p)
            mus.append(state["mu"])
            axs.append(state["ax"])
            etas.append(state["eta"])
            state_steps.append(state["step"])

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """Perform a single optimization step; ``closure`` re-evaluates the model and returns the loss."""
        loss = _evaluate_closure(closure)
        for group in self.param_groups:
            params_with_grad, grads, mus, axs, etas, state_steps = [], [], [], [], [], []
            self._init_group(group, params_with_grad, grads, mus, axs, etas, state_steps)
            asgd(params_with_grad, grads, axs, mus, etas, state_steps, lambd=group["lambd"], lr=group["lr"],
                 t0=group["t0"], alpha=group["alpha"], weight_decay=group["weight_decay"],
                 maximize=group["maximize"])
        return loss


def asgd(params, grads, axs, mus, etas, state_steps, *, lambd, lr, t0, alpha, weight_decay, maximize) -> None:
    """Functional ASGD: torch's single-tensor update, same operations in the same order."""
    lr = _to_scalar(lr)
    for i, param in enumerate(params):
        grad = grads[i] if not maximize else grads[i].neg()
        mu = mus[i]
        ax = axs[i]
        eta = etas[i]
        step_t = state_steps[i]

        step_t.add_(1)
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)

        eta_value = _get_value(eta)
        param.mul_(1 - lambd * eta_value)       # decay term
        param.add_(grad, alpha=-eta_value)      # update parameter

        # averaging: ax follows the parameter until step t0, then averages the iterates
        if mu.item() != 1:
            ax.add_(param.sub(ax).mul_(mu))
        else:
            ax.copy_(param)

        step = _get_value(step_t)
        # eta and mu are computed in double (or in a tensor lr's dtype) and rounded into their tensors
        eta.copy_(_as_tensor(lr / ((1 + lambd * lr * step) ** alpha)))
        mu.copy_(_as_tensor(1 / max(1, step - t0)))


def _as_tensor(x):
    """torch.as_tensor of a number (a default-dtype tensor) or of a tensor (itself)."""
    return x if isinstance(x, Tensor) else _tensor(x)
