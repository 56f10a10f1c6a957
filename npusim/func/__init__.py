"""``npusim.func`` (torch.func): composable function transforms.

``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``jacrev``, ``jacfwd``, ``hessian`` differentiate through
npusim's autograd; ``vmap`` maps a function over a batch dimension (a per-sample loop); ``functional_call``
runs a module with given parameters and buffers. They nest: ``vmap(grad(loss), in_dims=(None, 0, 0))`` with
``functional_call`` gives per-sample gradients.
"""
from ._functional_call import functional_call
from ._transforms import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, vjp
from ._vmap import vmap

__all__ = ["functional_call", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp", "vjp", "vmap"]
