"""``Adafactor``: Adam-like steps with a factored (row x column) second moment, as ``torch.optim.Adafactor``.

torch 2.13's algorithm: relative step size rho_t = min(lr, 1 / sqrt(t)) scaled by max(eps2, RMS(param)), decoupled
weight decay by lr, the row and column means of the squared gradient (the full mean for vectors) averaged with
1 - beta2_t = t ** beta2_decay, and the update clipped to RMS <= d. ``foreach=True`` runs torch's multi-tensor
order of operations (updates scaled, then added), the default its single-tensor one.
"""
from __future__ import annotations

from ..api import factories as _factories
from ..api.operators import norm as _norm
from ..core.c10.dtype import finfo as _finfo
from ..core.factories import tensor as _tensor
from ..core.tensor import Tensor
from ..core.autograd import no_grad
from .optimizer import Optimizer, _evaluate_closure, _scalar_dtype, _to_scalar

__all__ = ["Adafactor", "adafactor"]


class Adafactor(Optimizer):
    """Implements the Adafactor algorithm (factored second moments, relative step sizes), as
    ``torch.optim.Adafactor``."""

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0, *,
                 foreach=None, maximize=False) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = {"lr": lr, "beta2_decay": beta2_decay, "eps": eps, "d": d, "weight_decay": weight_decay,
                    "foreach": foreach, "maximize": maximize}
        super().__init__(params, defaults)

    _group_defaults = {"foreach": None}
    _tensor_step_counters = True

    def _init_group(self, group):
        params, grads, row_vars, col_vars, variances, steps = [], [], [], [], [], []
        for p in group["params"]:
            if p.grad is None:
                continue
            params.append(p)
            grads.append(p.grad)
            state = self.state[p]
            if len(state) == 0:
                state["step"] = _tensor(0.0, dtype=_scalar_dtype())
                if p.grad.dim() > 1:
                    # the row factor reduces the last dim, the column factor the one before it
                    row_shape = list(p.grad.shape)
                    row_shape[-1] = 1
                    state["row_var"] = p.grad.new_zeros(row_shape)
                    col_shape = list(p.grad.shape)
                    col_shape[-2] = 1
                    state["col_var"] = p.grad.new_zeros(col_shape)
                else:
                    state["variance"] = _factories.zeros_like(p.grad)
            row_vars.append(state.get("row_var", None))
            col_vars.append(state.get("col_var", None))
            variances.append(state.get("variance", None))
            steps.append(state["step"])
        return params, grads, row_vars, col_vars, variances, steps

    @no_grad()
    def step(self, closure=None):
        """Perform a single optimization step; ``closure`` re-evaluates the model and returns the loss."""
        loss = _evaluate_closure(closure)
        for group in self.param_groups:
            params, grads, row_vars, col_vars, variances, steps = self._init_group(group)
            eps1, eps2 = group["eps"]
            adafactor(params, grads, row_vars, col_vars, variances, steps, d=group["d"], lr=group["lr"],
                      beta2_decay=group["beta2_decay"], weight_decay=group["weight_decay"], eps1=eps1, eps2=eps2,
                      foreach=group["foreach"], maximize=group["maximize"],
                      grad_scale=getattr(self, "grad_scale", None), found_inf=getattr(self, "found_inf", None))
        return loss


def _rms(t) -> float:
    return t.norm(2).item() / (t.numel() ** 0.5)


def _factored_estimate(grad, row_var, col_var, one_minus_beta2_t, eps1, in_place_square):
    """The variance estimate R C / max(mean(R), eps1) after averaging in this step's row and column means."""
    row_mean = _norm(grad, dim=-1, keepdim=True)
    row_mean = row_mean.square_() if in_place_square else row_mean.mul_(row_mean)
    row_var.lerp_(row_mean.div_(grad.size(-1)), one_minus_beta2_t)
    col_mean = _norm(grad, dim=-2, keepdim=True)
    col_mean = col_mean.square_() if in_place_square else col_mean.mul_(col_mean)
    col_var.lerp_(col_mean.div_(grad.size(-2)), one_minus_beta2_t)
    var_estimate = row_var @ col_var
    return var_estimate.div_(row_var.mean(dim=-2, keepdim=True).clamp_(min=eps1))


def _single_tensor_adafactor(params, grads, row_vars, col_vars, variances, steps, *, d, lr, beta2_decay,
                             weight_decay, eps1, eps2, maximize):
    lr = _to_scalar(lr)
    for i, param in enumerate(params):
        grad = grads[i] if not maximize else -grads[i]
        step_t = steps[i]
        if eps1 is None:   # as torch: the first parameter's dtype decides for the rest of the group
            eps1 = _finfo(param.dtype).eps
        step_t += 1
        step_float = step_t.item()
        one_minus_beta2_t = step_float ** beta2_decay
        rho_t = min(lr, 1 / (step_float ** 0.5))
        alpha = max(eps2, _rms(param)) * rho_t
        if weight_decay != 0:
            param.mul_(1 - lr * weight_decay)
        if grad.dim() > 1:
            var_estimate = _factored_estimate(grad, row_vars[i], col_vars[i], one_minus_beta2_t, eps1, True)
        else:
            variances[i].lerp_(grad * grad, one_minus_beta2_t)
            var_estimate = variances[i].clone()   # the update must not write into the variance
        # eps1 squared: the square root below brings it back to eps1's magnitude
        update = var_estimate.clamp_(min=eps1 * eps1).rsqrt_()
        update.mul_(grad)
        denom = max(1.0, update.norm(2).item() / ((update.numel() ** 0.5) * d))
        param.add_(update, alpha=-alpha / denom)


def _multi_tensor_adafactor(params, grads, row_vars, col_vars, variances, steps, *, d, lr, beta2_decay,
                            weight_decay, eps1, eps2, maximize):
    """torch's foreach order: parameters grouped by (device, dtype, factored or not), each step's scaled update
    added at the end."""
    if len(params) == 0:
        return
    lr = _to_scalar(lr)
    groups: dict = {}
    for i, p in enumerate(params):
        groups.setdefault((p.device, p.dtype, grads[i].dim() > 1), []).append(i)
    for (_, dtype, factored), members in groups.items():
        if eps1 is None:
            eps1 = _finfo(dtype).eps
        device_grads = [grads[i] if not maximize else grads[i].neg() for i in members]
        for i in members:
            steps[i].add_(1.0)
        one_minus = [steps[i].item() ** beta2_decay for i in members]
        rhos = [min(lr, 1 / (steps[i].item() ** 0.5)) for i in members]
        alphas = [max(eps2, _rms(params[i])) * r for i, r in zip(members, rhos)]
        if weight_decay != 0:
            for i in members:
                params[i].mul_(1 - lr * weight_decay)
        updates = []
        for k, (i, grad) in enumerate(zip(members, device_grads)):
            if factored:
                updates.append(_factored_estimate(grad, row_vars[i], col_vars[i], one_minus[k], eps1, False))
            else:
                variances[i].lerp_(grad * grad, one_minus[k])
                updates.append(variances[i].clone())
        for k, (update, grad) in enumerate(zip(updates, device_grads)):
            update.clamp_(min=eps1 * eps1).rsqrt_().mul_(grad)
            scale = -alphas[k] / max(1.0, update.norm(2).item() / ((update.numel() ** 0.5) * d))
            params[members[k]].add_(update.mul_(scale))


def adafactor(params, grads, row_vars, col_vars, variances, state_steps, foreach=None, grad_scale=None,
              found_inf=None, has_complex=False, *, d, lr, beta2_decay, weight_decay, eps1, eps2, maximize) -> None:
    """Functional Adafactor (see :class:`Adafactor`)."""
    if not all(isinstance(t, Tensor) for t in state_steps):
        raise RuntimeError("`state_steps` argument must contain a list of singleton tensors")
    if grad_scale is not None or found_inf is not None:
        raise AssertionError("Grad scaling should occur outside of optimizer.step()")
    func = _multi_tensor_adafactor if foreach else _single_tensor_adafactor
    func(params, grads, row_vars, col_vars, variances, state_steps, d=d, lr=lr, beta2_decay=beta2_decay,
         weight_decay=weight_decay, eps1=eps1, eps2=eps2, maximize=maximize)
