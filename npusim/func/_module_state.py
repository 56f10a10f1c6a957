"""torch.func's helpers for module state: stacking several models' parameters for vmap (model ensembling), and
batch norm without running statistics (so a vmapped model does not update shared buffers)."""
from __future__ import annotations

from ..api.operators import stack as _stack
from ..nn.modules.batchnorm import _BatchNorm


def _stacked_leaf(tensors, name):
    all_grad = all(t.requires_grad for t in tensors)
    if not all_grad and any(t.requires_grad for t in tensors):
        raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
    result = _stack(tensors)
    return result.detach().requires_grad_() if all_grad else result


def stack_module_state(models):
    """``(params, buffers)``: each model's parameters and buffers stacked along a new first dimension, by name;
    stacked parameters are new leaves (requiring grad where the models' do)."""
    models = list(models)
    if len(models) == 0:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    if not all(type(m) is type(models[0]) for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    all_params = [dict(m.named_parameters()) for m in models]
    params = {k: _stacked_leaf(tuple(p[k] for p in all_params), k) for k in all_params[0]}
    all_buffers = [dict(m.named_buffers()) for m in models]
    buffers = {k: _stacked_leaf(tuple(b[k] for b in all_buffers), k) for k in all_buffers[0]}
    return params, buffers


def replace_all_batch_norm_modules_(root):
    """In place: every batch norm module in ``root`` stops tracking running statistics (they become None)."""
    for module in root.modules():
        if isinstance(module, _BatchNorm) and module.track_running_stats:
            module.running_mean = None
            module.running_var = None
            module.num_batches_tracked = None
            module.track_running_stats = False
    return root
