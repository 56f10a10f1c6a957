"""``Rprop``: resilient backpropagation (per-weight step sizes adapted from the signs of the gradients)."""
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

__all__ = ["Rprop", "rprop"]


class Rprop(Optimizer):
    """Implements the resilient backpropagation algorithm, as ``torch.optim.Rprop``."""

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False,
                 foreach=None, maximize=False, differentiable=False) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = {"lr": lr, "etas": etas, "step_sizes": step_sizes, "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable, "capturable": capturable}
        super().__init__(params, defaults)
        _check_unsupported("Rprop", foreach=foreach, capturable=capturable, differentiable=differentiable)

    _group_defaults = {"foreach": None, "maximize": False, "differentiable": False, "capturable": False}
    _tensor_step_counters = True

    def _init_group(self, group):
        lr = _get_value(_to_scalar(group["lr"]))
        return self._gather(group, ("prev", "step_size", "step"), lambda p: {
            "step": _tensor(0.0, dtype=_scalar_dtype()), "prev": _factories.zeros_like(p),
            "step_size": _factories.full_like(p.grad, lr),
        })

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """Perform a single optimization step; ``closure`` re-evaluates the model and returns the loss."""
        loss = _evaluate_closure(closure)
        for group in self.param_groups:
            params, grads, prevs, step_sizes, state_steps = self._init_group(group)
            etaminus, etaplus = group["etas"]
            step_size_min, step_size_max = group["step_sizes"]
            rprop(params, grads, prevs, step_sizes, state_steps, step_size_min=step_size_min,
                  step_size_max=step_size_max, etaminus=etaminus, etaplus=etaplus, maximize=group["maximize"])
        return loss


def rprop(params, grads, prevs, step_sizes, state_steps, *, step_size_min, step_size_max, etaminus, etaplus,
          maximize) -> None:
    """Functional Rprop: torch's single-tensor update, same operations in the same order."""
    for i, param in enumerate(params):
        grad = grads[i] if not maximize else grads[i].neg()
        prev = prevs[i]
        step_size = step_sizes[i]
        state_steps[i].add_(1)

        # the sign of grad * prev picks the factor: grow on agreement, shrink on a sign change, keep on zero
        sign = grad.mul(prev).sign()
        sign.masked_fill_(sign.gt(0), etaplus)
        sign.masked_fill_(sign.lt(0), etaminus)
        sign.masked_fill_(sign.eq(0), 1)

        step_size.mul_(sign).clamp_(step_size_min, step_size_max)

        # after a sign change the weight does not move, and the next step sees no previous gradient
        grad = grad.clone()
        grad.masked_fill_(sign.eq(etaminus), 0)

        addcmul_(param, grad.sign(), step_size, value=-1)
        prev.copy_(grad)
