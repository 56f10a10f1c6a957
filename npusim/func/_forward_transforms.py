"""torch.func's forward-mode transforms, ``jvp`` and ``jacfwd``, through ``autograd.forward_ad``.

``jvp`` makes each primal a dual tensor with its tangent, runs the function once inside a dual level and
unpacks the outputs. ``jacfwd`` does it once per element of the inputs it differentiates (a one-hot tangent
each; torch vmaps those runs) and lays the output tangents out as Jacobian columns. ``forward_ad`` has one
level at a time, as torch's: a transform called while a level is open (``jvp`` inside ``jvp``, ``jacfwd``
inside ``jacfwd``) falls back to the reverse-mode computation (``_transforms``), which gives the same values.
"""
from __future__ import annotations

from ..autograd.forward_ad import dual_level, make_dual, unpack_dual
from ..core.autograd import forward_mode as _fw
from ..core.autograd.grad_mode import is_grad_enabled
from ..api.factories import zeros_like as _zeros_like
from ..api.operators import stack as _stack
from ..core.tensor import Tensor
from ._output_checks import check_tensor_outputs
from ._pytree import tree_flatten, tree_map, tree_unflatten


def forward_mode_available(flat_primals) -> bool:
    """Whether a new dual level can be opened (a primal that cannot carry a tangent gets make_dual's error)."""
    return _fw.current_level() < 0 and _fw.is_enabled()


def _primal(o, keep_graph):
    if not isinstance(o, Tensor):
        return o
    p = unpack_dual(o).primal
    return p if keep_graph and p.requires_grad else p.detach()


def jvp_forward(func, flat_p, p_spec, flat_t, strict, has_aux, split_aux, api):
    """``(outputs, tangents[, aux])`` of ``func`` at the primals, one forward-mode run."""
    outer = is_grad_enabled()
    with dual_level():
        duals = [make_dual(p, t) for p, t in zip(flat_p, flat_t)]
        output, aux = split_aux(func(*tree_unflatten(duals, p_spec)), has_aux, api)
        flat_out, out_spec = tree_flatten(output)
        check_tensor_outputs(flat_out, api)
        results, tangents_out = [], []
        for o in flat_out:
            tangent = unpack_dual(o).tangent
            if tangent is None:
                if strict:
                    raise RuntimeError("jvp(f, primals, tangents, strict=True): The output of f is independent of "
                                       "the inputs. This is not allowed with strict=True.")
                tangent = _zeros_like(o)
            results.append(_primal(o, outer))
            tangents_out.append(tangent if outer else tangent.detach())
        aux = tree_map(lambda a: _primal(a, outer), aux)
    out = (tree_unflatten(results, out_spec), tree_unflatten(tangents_out, out_spec))
    return out + (aux,) if has_aux else out


def jacfwd_forward(func, args, argnums, has_aux, slice_argnums, replace_args, split_aux):
    """torch.func.jacfwd's result: for each output leaf ``o`` and input leaf ``x``, ``o.shape + x.shape``."""
    outer = is_grad_enabled()
    diff = slice_argnums(args, argnums, as_tuple=False)
    flat_diff, diff_spec = tree_flatten(diff)
    columns = [[] for _ in flat_diff]   # per input leaf: the output tangents of each of its elements
    first = None
    for j, x in enumerate(flat_diff):
        n = x.numel()
        for k in range(n):
            onehot = x.new_zeros(n)
            onehot[k] = 1
            with dual_level():
                leaves = list(flat_diff)
                leaves[j] = make_dual(x, onehot.view(x.shape))
                call_args = replace_args(args, tree_unflatten(leaves, diff_spec), argnums)
                output, aux = split_aux(func(*call_args), has_aux, "jacfwd")
                flat_out, out_spec = tree_flatten(output)
                tangents = []
                for o in flat_out:
                    t = unpack_dual(o).tangent
                    t = _zeros_like(o) if t is None else t
                    tangents.append(t if outer else t.detach())
                if first is None:
                    first = (out_spec, [_primal(o, outer) for o in flat_out], tree_map(lambda a: _primal(a, outer),
                                                                                        aux))
            columns[j].append(tangents)
    if first is None:   # no input elements: one plain call gives the outputs' shapes
        output, aux = split_aux(func(*args), has_aux, "jacfwd")
        flat_out, out_spec = tree_flatten(output)
        first = (out_spec, flat_out, aux)
    out_spec, flat_out, aux = first
    per_output = []
    for i, o in enumerate(flat_out):
        cols = []
        for j, x in enumerate(flat_diff):
            if columns[j]:
                c = _stack([col[i] for col in columns[j]], dim=-1)
                cols.append(c.reshape(tuple(o.shape) + tuple(x.shape)))
            else:
                cols.append(o.new_zeros(tuple(o.shape) + tuple(x.shape)))
        per_output.append(tree_unflatten(cols, diff_spec))
    jac = tree_unflatten(per_output, out_spec)
    return (jac, aux) if has_aux else jac
