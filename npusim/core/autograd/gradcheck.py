"""``gradcheck`` / ``gradgradcheck``: analytical gradients against central finite differences.

The Jacobian is built column by column: each input element is perturbed by
``eps`` in place (numerical), and each output element's vector-Jacobian product
comes from ``autograd.grad`` (analytical). Jacobians are laid out as torch
prints them: one row per input element, one column per output element. Inputs
should be float64.
"""
from __future__ import annotations

import warnings

import numpy as np

from ..dispatch.ops_namespace import aten
from ..tensor import Tensor
from .api import grad as autograd_grad


class GradcheckError(RuntimeError):
    """Raised by gradcheck when the analytical and numerical Jacobians disagree."""


def _as_tuple(x):
    return (x,) if isinstance(x, Tensor) else tuple(x)


def _flat_outputs(fn, inputs):
    out = fn(*inputs)
    return [o for o in _as_tuple(out) if isinstance(o, Tensor)]


def _host(t):
    # a copy: an output may alias an input that the next perturbation overwrites
    return t.detach().cpu().double().numpy().reshape(-1).copy()


def _positions(t):
    """Index tuples of every element of ``t``, in row-major order."""
    return list(np.ndindex(*t.shape)) if t.dim() else [()]


def _numerical_jacobian(fn, inputs, diff, eps):
    outs = _flat_outputs(fn, inputs)
    jac = {}   # (input idx, output idx) -> (n_in, n_out) matrix
    for i in diff:
        x = inputs[i]
        cols = [np.zeros((x.numel(), o.numel())) for o in outs]
        alias = x.detach()   # writes through this alias perturb the input without recording anything
        for k, pos in enumerate(_positions(x)):
            orig = alias[pos].item()
            alias[pos] = orig + eps
            plus = [_host(o) for o in _flat_outputs(fn, inputs)]
            alias[pos] = orig - eps
            minus = [_host(o) for o in _flat_outputs(fn, inputs)]
            alias[pos] = orig
            for j in range(len(outs)):
                cols[j][k] = (plus[j] - minus[j]) / (2 * eps)
        for j in range(len(outs)):
            jac[i, j] = cols[j]
    return jac


def _analytical_jacobian(fn, inputs, diff):
    outs = _flat_outputs(fn, inputs)
    jac = {(i, j): np.zeros((inputs[i].numel(), o.numel())) for i in diff for j, o in enumerate(outs)}
    diff_inputs = [inputs[i] for i in diff]
    for j, o in enumerate(outs):
        if not o.requires_grad:
            continue
        for k, pos in enumerate(_positions(o)):
            g = aten.zeros_like.default(o, memory_format="contiguous_format")
            g[pos] = 1.0
            grads = autograd_grad([o], diff_inputs, [g], retain_graph=True, allow_unused=True)
            for i, gi in zip(diff, grads):
                if gi is not None:
                    if tuple(gi.shape) != tuple(inputs[i].shape):
                        raise GradcheckError(f"Gradient has incorrect size for input {i}: expected "
                                             f"{list(inputs[i].shape)} but got {list(gi.shape)}")
                    jac[i, j][:, k] = _host(gi)
    return jac


def _as_tensor(m):
    from ..factories import tensor
    return tensor(m)


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, nondet_tol=0.0,
              check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
              check_batched_forward_grad=False, check_forward_ad=False, check_backward_ad=True,
              fast_mode=False, masked=None) -> bool:
    """True if ``func``'s gradients match finite differences for ``inputs``."""
    inputs = _as_tuple(inputs)
    diff = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]
    if not diff:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of them have "
                         "requires_grad=True.")
    for i in diff:
        if inputs[i].dtype.name != "float64":
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating point or complex. "
                          f"This check will likely fail if all the inputs are not of double precision floating "
                          f"point or complex. ", UserWarning, stacklevel=2)
    num = _numerical_jacobian(func, inputs, diff, eps)
    try:
        ana = _analytical_jacobian(func, inputs, diff)
    except GradcheckError:
        if raise_exception:
            raise
        return False
    for key, n in num.items():
        a = ana[key]
        if not np.allclose(a, n, rtol=rtol, atol=atol):
            if raise_exception:
                raise GradcheckError(f"Jacobian mismatch for output {key[1]} with respect to input {key[0]},\n"
                                     f"numerical:{_as_tensor(n)!r}\nanalytical:{_as_tensor(a)!r}\n")
            return False
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0,
                  check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
                  check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False, masked=False) -> bool:
    """gradcheck of the first-order gradients (second derivatives), the output gradients included."""
    inputs = _as_tuple(inputs)
    outs = _flat_outputs(func, inputs)
    if grad_outputs is None:
        grad_outputs = tuple(aten.randn_like(o).requires_grad_(True) for o in outs
                             if o.requires_grad)
    else:
        grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)
    diff_idx = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]

    def first_order(*all_args):
        ins, gos = all_args[:n_in], all_args[n_in:]
        o = [t for t in _flat_outputs(func, ins) if t.requires_grad]
        grads = autograd_grad(o, [ins[i] for i in diff_idx], gos, create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(first_order, inputs + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
