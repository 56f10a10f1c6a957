"""torch.func's differentiation transforms: grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian.

Each call makes fresh differentiable stand-ins for the inputs it differentiates and runs ``autograd.grad`` on
them. A transform nests inside another (``hessian``, ``grad(grad(f))``) and composes with plain autograd as
torch's do: when the function's graph reaches a tensor that requires grad outside the transform (an outer
transform's input, or a captured parameter), the gradients are built with ``create_graph`` so that they stay
differentiable; otherwise the results are plain detached tensors. ``jvp`` and ``jacfwd`` run in forward mode
(``_forward_transforms``, through ``autograd.forward_ad``) as torch's do; called while a dual level is already
open (nested in another forward transform) they compute the same values in reverse mode (``jvp`` by the
double-backward trick, ``jacfwd`` by one backward per output element).
"""
from __future__ import annotations

import functools

from ..core.autograd.api import grad as _grad
from ..core.autograd.grad_mode import enable_grad, is_grad_enabled
from ..core.autograd.node import AccumulateGrad
from ..api.operators import stack as _stack
from ..api.factories import zeros_like as _zeros_like
from ..core.autograd import forward_mode as _fw
from ..core.tensor import Tensor
from ._forward_transforms import forward_mode_available, jacfwd_forward, jvp_forward
from ._output_checks import check_tensor_outputs
from ._pytree import tree_flatten, tree_map, tree_unflatten

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "linearize", "functionalize",
           "debug_unwrap"]


# --- argnums -------------------------------------------------------------------------------------------------

def _wrap_argnum(argnum, num_args: int) -> int:
    if not isinstance(argnum, int) or isinstance(argnum, bool):
        raise RuntimeError(f"argnum must be int, got: {type(argnum)}")
    if 0 <= argnum < num_args:
        return argnum
    if -num_args <= argnum < 0:
        return argnum + num_args
    raise RuntimeError(f"Got argnum={argnum}, but only {num_args} positional inputs")


def _slice_argnums(args, argnums, as_tuple=True):
    if not isinstance(argnums, (int, tuple)):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    if isinstance(argnums, int):
        i = _wrap_argnum(argnums, len(args))
        return (args[i],) if as_tuple else args[i]
    argnums = tuple(_wrap_argnum(a, len(args)) for a in argnums)
    if len(argnums) == 0:
        raise RuntimeError("argnums must be non-empty")
    if len(set(argnums)) != len(argnums):
        raise RuntimeError(f"argnums elements must be unique, got {argnums}")
    return tuple(args[i] for i in argnums)


def _replace_args(args, new, argnums):
    if isinstance(argnums, int):
        i = _wrap_argnum(argnums, len(args))
        return tuple(new if j == i else a for j, a in enumerate(args))
    idx = {_wrap_argnum(a, len(args)): k for k, a in enumerate(argnums)}
    return tuple(new[idx[j]] if j in idx else a for j, a in enumerate(args))


# --- differentiable stand-ins and the link to outer graphs ---------------------------------------------------

def _make_differentiable(x, outer_grad: bool):
    if not isinstance(x, Tensor):
        raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")
    if outer_grad and x.requires_grad:
        return x.view_as(x)   # stays connected to the graph outside, so results can be differentiated there
    # inside a forward transform (jacfwd(jacrev(f))) the stand-in keeps x's tangent
    return _detach(x).requires_grad_(True)


def _reaches_outside(tensors, own) -> bool:
    """Whether the graph of ``tensors`` reaches a leaf requiring grad other than the stand-ins ``own``."""
    own_ids = {id(t) for t in own}
    stack, seen = [], set()
    for t in tensors:
        if isinstance(t, Tensor) and t.requires_grad:
            if t.grad_fn is None:
                if id(t) not in own_ids:
                    return True
            else:
                stack.append(t.grad_fn)
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, AccumulateGrad):
            var = node.variable
            if var is None or id(var) not in own_ids:
                return True
            continue
        stack.extend(fn for fn, _ in node.next_functions)
    return False


def _detach_tree(tree):
    return tree_map(lambda t: _detach(t) if isinstance(t, Tensor) else t, tree)


def _detach(t):
    """``t.detach()`` that keeps the tangent of an enclosing forward transform (its level is not this one's)."""
    d = t.detach()
    tangent = _fw.tangent_of(t)
    if tangent is not None:
        _fw.put_tangent(d, tangent)
    return d


def _autograd_grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False):
    """``autograd.grad`` over the outputs that require grad, zeros for inputs nothing depends on."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o.requires_grad]
    if not pairs:
        return tuple(_zeros_like(i) for i in inputs)
    res = _grad([o for o, _ in pairs], inputs, [g for _, g in pairs], retain_graph=retain_graph,
                create_graph=create_graph, allow_unused=True)
    return tuple(_zeros_like(i) if r is None else r for r, i in zip(res, inputs))


def _split_aux(output, has_aux, api):
    if not has_aux:
        return output, None
    if not (isinstance(output, tuple) and len(output) == 2):
        raise RuntimeError(f"{api}: output of function f should be a tuple: (output, aux) if has_aux is True")
    return output


def _treespec_pprint(spec) -> str:
    if spec.is_leaf():
        return "*"
    kids = [_treespec_pprint(c) for c in spec.children]
    if issubclass(spec.type, dict):
        return "{" + ", ".join(f"{k!r}: {v}" for k, v in zip(spec.context, kids)) + "}"
    if issubclass(spec.type, list):
        return "[" + ", ".join(kids) + "]"
    return "(" + ", ".join(kids) + ("," if len(kids) == 1 else "") + ")"


# --- grad ------------------------------------------------------------------------------------------------------

def grad_and_value(func, argnums=0, has_aux=False):
    """``func``'s gradient with respect to ``args[argnums]`` (each a tensor or a pytree of them), and its value:
    ``(grad, value)``, or ``(grad, (value, aux))`` with ``has_aux``."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        outer = is_grad_enabled()
        with enable_grad():
            diff = _slice_argnums(args, argnums, as_tuple=False)
            flat, spec = tree_flatten(diff)
            own = [_make_differentiable(x, outer) for x in flat]
            args = _replace_args(args, tree_unflatten(own, spec), argnums)
            output, aux = _split_aux(func(*args, **kwargs), has_aux, "grad_and_value(f)(*args)")
            if not isinstance(output, Tensor):
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got "
                                   f"{type(output)}")
            if output.dim() != 0:
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got "
                                   f"tensor with {output.dim()} dims. Maybe you wanted to use the vjp or jacrev "
                                   f"APIs instead?")
            linked = outer and _reaches_outside([output], own)
            grads = tree_unflatten(_autograd_grad((output,), own, create_graph=linked), spec)
        if not linked:
            output, aux = _detach(output), _detach_tree(aux)
        return (grads, (output, aux)) if has_aux else (grads, output)
    return wrapper


def grad(func, argnums=0, has_aux=False):
    """The gradient of the scalar function ``func`` with respect to ``args[argnums]``; with ``has_aux``,
    ``(grad, aux)``."""
    gv = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, value = gv(*args, **kwargs)
        return (g, value[1]) if has_aux else g
    return wrapper


# --- vjp -------------------------------------------------------------------------------------------------------

def _vjp(func, primals, argnums=None, has_aux=False, api="vjp(f, *primals)", float_outputs=True):
    outer = is_grad_enabled()
    with enable_grad():
        diff = primals if argnums is None else _slice_argnums(primals, argnums, as_tuple=False)
        flat, spec = tree_flatten(diff)
        own = [_make_differentiable(x, outer) for x in flat]
        args = tree_unflatten(own, spec) if argnums is None else _replace_args(primals, tree_unflatten(own, spec),
                                                                               argnums)
        output, aux = _split_aux(func(*args), has_aux, api)
        flat_out, out_spec = tree_flatten(output)
        check_tensor_outputs(flat_out, api)
        for o in flat_out:
            if float_outputs and not (o.is_floating_point() or o.is_complex()):
                raise RuntimeError(f"vjp(f, ...): All outputs of f must be floating-point or complex Tensors, got "
                                   f"Tensor with dtype {o.dtype}")
        linked = outer and _reaches_outside(flat_out, own)

    def vjp_fn(cotangents, retain_graph=True, create_graph=None):
        flat_cot, cot_spec = tree_flatten(cotangents)
        if cot_spec != out_spec:
            raise RuntimeError(f"Expected pytree structure of cotangents to be the same as pytree structure of "
                               f"outputs to the function. cotangents: {_treespec_pprint(cot_spec)}, primal output: "
                               f"{_treespec_pprint(out_spec)}")
        if create_graph is None:
            create_graph = is_grad_enabled() and (linked or any(isinstance(c, Tensor) and c.requires_grad
                                                                for c in flat_cot))
        with enable_grad():
            res = _autograd_grad(flat_out, own, flat_cot, retain_graph=retain_graph, create_graph=create_graph)
        return tree_unflatten(res, spec)

    results = output if linked else _detach_tree(output)
    aux = aux if linked else _detach_tree(aux)
    return results, vjp_fn, aux, flat_out, out_spec, linked, own


def vjp(func, *primals, has_aux=False):
    """``(func(*primals), vjp_fn)``: ``vjp_fn(cotangents)`` gives the vector-Jacobian product, one entry per
    primal; with ``has_aux``, ``(output, vjp_fn, aux)``."""
    results, vjp_fn, aux, *_ = _vjp(func, primals, has_aux=has_aux)
    return (results, vjp_fn, aux) if has_aux else (results, vjp_fn)


# --- jvp -------------------------------------------------------------------------------------------------------

_JVP = "jvp(f, primals, tangents)"


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """``(func(*primals), J @ tangents)``: the Jacobian-vector product, in forward mode (inside another forward
    transform, by the double-backward trick: the backward is linear in its incoming gradient; differentiating it
    with respect to that gradient gives J v)."""
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{_JVP}: Expected primals to be a tuple. E.g. it should be valid to call f(*primals).")
    flat_p, p_spec = tree_flatten(primals)
    flat_t, t_spec = tree_flatten(tangents)
    if p_spec != t_spec:
        raise RuntimeError(f"{_JVP}: Expected primals and tangents to have the same python structure. For example, "
                           f"if primals is a tuple of 3 tensors, tangents also must be. Got primals with structure "
                           f"{p_spec} and tangents with structure {t_spec}")
    for what, flat in (("primals", flat_p), ("tangents", flat_t)):
        if not flat:
            raise RuntimeError(f"{_JVP}: Expected {what} to be a non-empty tuple of Tensors.")
        for x in flat:
            if not isinstance(x, Tensor):
                raise RuntimeError(f"{_JVP}: Expected {what} to only contain Tensors, got {type(x)}")
    for p, t in zip(flat_p, flat_t):
        if p.shape != t.shape:
            raise RuntimeError(f"Trying to set a forward gradient that has a different size than that of the "
                               f"original Tensor, this is not supported. Tensor is of size {list(p.shape)} while the "
                               f"given forward gradient is of size {list(t.shape)}.")
    if forward_mode_available(flat_p):
        return jvp_forward(func, flat_p, p_spec, flat_t, strict, has_aux, _split_aux, _JVP)
    results, _, aux, flat_out, out_spec, linked, own = _vjp(func, primals, has_aux=has_aux, api=_JVP,
                                                            float_outputs=False)
    outer = is_grad_enabled()
    with enable_grad():
        dummies = [_zeros_like(o, requires_grad=True) if o.is_floating_point() or o.is_complex() else None
                   for o in flat_out]
        diff_out = [(o, d) for o, d in zip(flat_out, dummies) if d is not None and o.requires_grad]
        if diff_out:
            back = _grad([o for o, _ in diff_out], own, [d for _, d in diff_out],
                         retain_graph=True, create_graph=True, allow_unused=True)
            pairs = [(b, t) for b, t in zip(back, flat_t) if b is not None and b.requires_grad]
        else:
            pairs = []
        create = outer and (linked or any(t.requires_grad for t in flat_t))
        used = [d for _, d in diff_out]
        if pairs and used:
            res = _grad([b for b, _ in pairs], used, [t for _, t in pairs], create_graph=create, allow_unused=True)
        else:
            res = [None] * len(used)
    by_dummy = {id(d): r for d, r in zip(used, res)}
    tangents_out = []
    for o, d in zip(flat_out, dummies):
        r = by_dummy.get(id(d)) if d is not None else None
        if r is None and strict:
            raise RuntimeError("jvp(f, primals, tangents, strict=True): The output of f is independent of the inputs. "
                               "This is not allowed with strict=True.")
        tangents_out.append(_zeros_like(o) if r is None else r)
    if not create:
        tangents_out = [_detach(t) for t in tangents_out]
    out = (results, tree_unflatten(tangents_out, out_spec))
    return out + (aux,) if has_aux else out


# --- jacobians -------------------------------------------------------------------------------------------------

def _jacobian(func, argnums, has_aux, api_name):
    @functools.wraps(func)
    def wrapper(*args):
        _slice_argnums(args, argnums)   # argnums checked before f runs, as torch does
        output, vjp_fn, aux, flat_out, out_spec, *_ = _vjp(func, args, argnums=argnums, has_aux=has_aux)
        zeros = [_zeros_like(o) for o in flat_out]
        per_output = []
        for i, o in enumerate(flat_out):
            rows = []
            n = o.numel()
            for k in range(n):
                onehot = o.new_zeros(n)
                onehot[k] = 1
                cot = list(zeros)
                cot[i] = onehot.view(o.shape)
                rows.append(vjp_fn(tree_unflatten(cot, out_spec)))
            diff = _slice_argnums(args, argnums, as_tuple=False)
            flat_diff, diff_spec = tree_flatten(diff)
            if rows:
                flat_rows = [tree_flatten(r)[0] for r in rows]
                cols = [_stack([r[j] for r in flat_rows], dim=0).view(tuple(o.shape) + tuple(x.shape))
                        for j, x in enumerate(flat_diff)]
            else:
                cols = [x.new_zeros(tuple(o.shape) + tuple(x.shape)) for x in flat_diff]
            per_output.append(tree_unflatten(cols, diff_spec))
        jac = tree_unflatten(per_output, out_spec)
        return (jac, aux) if has_aux else jac
    return wrapper


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """The Jacobian of ``func`` with respect to ``args[argnums]``, one vector-Jacobian product per output element:
    for each output leaf ``o`` and input leaf ``x``, a tensor of shape ``o.shape + x.shape``."""
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")
    return _jacobian(func, argnums, has_aux, "jacrev")


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """The Jacobian of ``func`` with respect to ``args[argnums]`` in forward mode, one Jacobian-vector product per
    input element (same structure as :func:`jacrev`)."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got "
                           f"{randomness}")
    reverse = _jacobian(func, argnums, has_aux, "jacfwd")

    @functools.wraps(func)
    def wrapper(*args):
        _slice_argnums(args, argnums)   # argnums checked before f runs, as torch does
        flat, _ = tree_flatten(_slice_argnums(args, argnums, as_tuple=False))
        if not all(isinstance(x, Tensor) for x in flat) or not forward_mode_available(flat):
            return reverse(*args)
        return jacfwd_forward(func, args, argnums, has_aux, _slice_argnums, _replace_args, _split_aux)
    return wrapper


def hessian(func, argnums=0):
    """The Hessian of the scalar function ``func`` with respect to ``args[argnums]``:
    ``jacfwd(jacrev(func, argnums), argnums)``."""
    return jacfwd(jacrev(func, argnums), argnums)


# --- linearize, functionalize ------------------------------------------------------------------------------------

def linearize(func, *primals):
    """``(func(*primals), jvp_fn)``: ``jvp_fn(*tangents)`` is the Jacobian-vector product at ``primals`` (each call
    runs :func:`jvp`; torch traces the function once instead)."""
    output = _detach_tree(func(*primals))
    flat_p, p_spec = tree_flatten(primals)

    def jvp_fn(*tangents):
        flat_t, t_spec = tree_flatten(tangents)
        if t_spec != p_spec:
            raise RuntimeError(f"Expected the tangents {t_spec} to have the same argspec as the primals {p_spec}")
        for idx, (t, p) in enumerate(zip(flat_t, flat_p)):
            if t.shape != p.shape:
                raise RuntimeError(f"tangent:{idx} with shape {t.shape} in flattened pytree doesn't match the shape "
                                   f"{p.shape} of the corresponding primal.")
            if t.device != p.device:
                raise RuntimeError(f"tangent:{idx} with device {t.device} in flattened pytree doesn't match the "
                                   f"device {p.device} of the corresponding primal.")
            if t.dtype != p.dtype:
                raise RuntimeError(f"tangent:{idx} with dtype {t.dtype} in flattened pytree doesn't match the dtype "
                                   f"{p.dtype} of the corresponding primal.")
        return jvp(func, primals, tangents)[1]
    return output, jvp_fn


def functionalize(func, *, remove="mutations"):
    """``func`` itself, as a wrapper: functionalization rewrites in-place ops for graph capture and leaves the
    results (and the final values of mutated inputs) as they are, which is all an eager program sees."""
    if remove not in ("mutations", "mutations_and_views"):
        raise RuntimeError(
            f"functionalize(f, remove='mutations'): received invalid argument for remove={remove}. Valid options "
            f"are:\n     remove='mutations': all inplace and out= operators will be removed from the program, and "
            f"replaced with their out-of-place equivalents.\n     remove='mutations_and_views': In addition to the "
            f"above, all aliasing operators {{view}} will be replaced with their non-aliasing counterparts, "
            f"{{view}}_copy.\n")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        return func(*args, **kwargs)
    return wrapped


def debug_unwrap(tensor, *, recurse=True):
    """The tensor itself: npusim's transforms do not wrap tensors."""
    return tensor
