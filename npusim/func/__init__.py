"""``npusim.func`` (torch.func): composable function transforms.

``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``jacrev``, ``jacfwd``, ``hessian`` differentiate through
npusim's autograd; ``vmap`` maps a function over a batch dimension (BatchedTensors and batching rules);
``functional_call`` runs a module with given parameters and buffers; ``stack_module_state`` stacks several
models' for ensembling with vmap; ``rearrange`` is einops' pattern-written reshape and permute. They nest:
``vmap(grad(loss), in_dims=(None, 0, 0))`` with ``functional_call`` gives per-sample gradients.
"""
from ._functional_call import functional_call
from ._module_state import replace_all_batch_norm_modules_, stack_module_state
from ._transforms import (debug_unwrap, functionalize, grad, grad_and_value, hessian, jacfwd, jacrev, jvp, linearize,
                          vjp)
from ._vmap import vmap
from .rearrange import rearrange

__all__ = ["grad", "grad_and_value", "vmap", "replace_all_batch_norm_modules_", "functionalize", "hessian", "jacfwd",
           "jacrev", "jvp", "linearize", "vjp", "functional_call", "stack_module_state", "debug_unwrap", "rearrange"]
