"""``npusim.npu.make_graphed_callables``: callables whose forward and backward each replay a captured npu graph.

torch.cuda.make_graphed_callables' recipe, step for step: warm each callable up on a side stream, capture the
forwards in order and the backwards (``autograd.grad`` of the static outputs) in reverse order in one pool, and
return callables that copy new inputs into the static ones, replay the forward graph inside one autograd
function and replay the backward graph in its backward.
"""
from __future__ import annotations

import npusim as _npusim
from . import graphs, streams


def _leaves(values) -> list:
    """The leaves of nested tuples, lists and dicts, in order (torch's pytree leaves)."""
    if isinstance(values, (list, tuple)):
        return [leaf for v in values for leaf in _leaves(v)]
    if isinstance(values, dict):
        return [leaf for v in values.values() for leaf in _leaves(v)]
    return [values]


def _flatten(value):
    """(leaves, spec) of a nested output; ``_unflatten`` rebuilds it."""
    if isinstance(value, (list, tuple)):
        parts = [_flatten(v) for v in value]
        return [leaf for p in parts for leaf in p[0]], (type(value), [p[1] for p in parts])
    if isinstance(value, dict):
        parts = {k: _flatten(v) for k, v in value.items()}
        return [leaf for p in parts.values() for leaf in p[0]], (dict, {k: p[1] for k, p in parts.items()})
    return [value], None


def _unflatten(leaves, spec):
    it = iter(leaves)

    def build(s):
        if s is None:
            return next(it)
        kind, children = s
        if kind is dict:
            return {k: build(c) for k, c in children.items()}
        built = [build(c) for c in children]
        return kind(*built) if hasattr(kind, "_fields") else kind(built)
    return build(spec)


def make_graphed_callables(callables, sample_args, num_warmup_iters: int = 3, allow_unused_input: bool = False,
                           pool=None):
    """Graphed versions of ``callables`` (functions or Modules): each runs its forward npu work as one graph
    replay inside an autograd node whose backward replays the captured backward graph."""
    if _npusim.is_autocast_enabled() and _npusim.is_autocast_cache_enabled():
        raise RuntimeError("make_graphed_callables does not support the autocast caching. Please set "
                           "`cache_enabled=False`.")
    just_one_callable = not isinstance(callables, tuple)
    if just_one_callable:
        callables, sample_args = (callables,), (sample_args,)
    flatten_sample_args = []
    for c, args in zip(callables, sample_args):
        if isinstance(c, _npusim.nn.Module):
            if c._backward_hooks or c._forward_hooks or c._forward_pre_hooks:
                raise AssertionError("Modules must not have hooks registered at the time they are passed. However, "
                                     "registering hooks on modules after passing them through "
                                     "make_graphed_callables is allowed.")
            if not all(b.requires_grad is False for b in c.buffers()):
                raise AssertionError("In any :class:`~torch.nn.Module` passed to :func:`~make_graphed_callables`, "
                                     "only parameters may be trainable. All buffers must have "
                                     "``requires_grad=False``.")
        flat = tuple(_leaves(args))
        if not all(isinstance(a, _npusim.Tensor) for a in flat):
            raise AssertionError("In the beta API, sample_args for each callable must contain only Tensors. "
                                 "Other types are not allowed.")
        flatten_sample_args.append(flat)
    per_callable_len_user_args = [len(a) for a in flatten_sample_args]
    per_callable_module_params = [tuple(c.parameters()) if isinstance(c, _npusim.nn.Module) else ()
                                  for c in callables]
    static_input_surfaces = [flatten_sample_args[i] + per_callable_module_params[i] for i in range(len(callables))]
    fwd_graphs = [graphs.CUDAGraph() for _ in callables]
    bwd_graphs = [graphs.CUDAGraph() for _ in callables]
    mempool = graphs.graph_pool_handle() if pool is None else pool

    # warm up on a side stream, so lazy first-call work stays out of the captures
    _npusim.npu.synchronize()
    with streams.stream(streams.Stream()):
        for func, args, surface in zip(callables, sample_args, static_input_surfaces):
            for _ in range(num_warmup_iters):
                outputs = [o for o in _leaves(func(*args)) if isinstance(o, _npusim.Tensor)]
                outputs_grad = tuple(o for o in outputs if o.requires_grad)
                if outputs_grad:
                    _npusim.autograd.grad(outputs=outputs_grad, inputs=tuple(i for i in surface if i.requires_grad),
                                          grad_outputs=tuple(_npusim.empty_like(o) for o in outputs_grad),
                                          only_inputs=True, allow_unused=allow_unused_input)
    _npusim.npu.synchronize()

    # forwards in order, backwards in reverse order, all in one pool
    static_outputs, output_specs = [], []
    for func, args, fwd_graph in zip(callables, sample_args, fwd_graphs):
        with graphs.graph(fwd_graph, pool=mempool):
            func_outputs = func(*args)
        flat, spec = _flatten(func_outputs)
        static_outputs.append(tuple(flat))
        output_specs.append(spec)
    static_grad_outputs_all, static_grad_inputs_all = [], []
    for surface, outs, bwd_graph in zip(reversed(static_input_surfaces), reversed(static_outputs),
                                        reversed(bwd_graphs)):
        static_grad_outputs = tuple(_npusim.empty_like(o) if o.requires_grad else None for o in outs)
        outputs_grad = tuple(o for o in outs if o.requires_grad)
        grad_inputs = None
        if outputs_grad:
            with graphs.graph(bwd_graph, pool=mempool):
                grad_inputs = _npusim.autograd.grad(
                    outputs=outputs_grad, inputs=tuple(i for i in surface if i.requires_grad),
                    grad_outputs=tuple(o for o in static_grad_outputs if o is not None), only_inputs=True,
                    allow_unused=allow_unused_input)
        static_grad_inputs, k = [], 0
        for arg in surface:
            if arg.requires_grad and grad_inputs is not None:
                static_grad_inputs.append(grad_inputs[k])
                k += 1
            else:
                static_grad_inputs.append(None)
        static_grad_outputs_all.append(static_grad_outputs)
        static_grad_inputs_all.append(tuple(static_grad_inputs))
    static_grad_outputs_all.reverse()
    static_grad_inputs_all.reverse()

    ret = []
    for i, func in enumerate(callables):
        graphed = _graphed_function(fwd_graphs[i], bwd_graphs[i], per_callable_module_params[i],
                                    per_callable_len_user_args[i], output_specs[i], static_input_surfaces[i],
                                    static_outputs[i], static_grad_outputs_all[i], static_grad_inputs_all[i])
        if isinstance(func, _npusim.nn.Module):
            func.forward = _graphed_forward(func, func.training, graphed, func.forward)
            ret.append(func)
        else:
            ret.append(graphed)
    return ret[0] if just_one_callable else tuple(ret)


def _graphed_function(fwd_graph, bwd_graph, module_params, len_user_args, output_spec, static_input_surface,
                      static_outputs, static_grad_outputs, static_grad_inputs):
    class Graphed(_npusim.autograd.Function):
        @staticmethod
        def forward(ctx, *inputs):
            for i in range(len_user_args):     # only the user's arguments may be new tensors
                if static_input_surface[i].data_ptr() != inputs[i].data_ptr():
                    static_input_surface[i].copy_(inputs[i])
            fwd_graph.replay()
            return tuple(o.detach() for o in static_outputs)

        @staticmethod
        @_npusim.autograd.function.once_differentiable
        def backward(ctx, *grads):
            if len(grads) != len(static_grad_outputs):
                raise AssertionError(f"len(grads)={len(grads)} != len(static_grad_outputs)="
                                     f"{len(static_grad_outputs)}")
            for g, grad in zip(static_grad_outputs, grads):
                if g is not None and g.data_ptr() != grad.data_ptr():
                    g.copy_(grad)
            bwd_graph.replay()
            return tuple(b.detach() if b is not None else b for b in static_grad_inputs)

    def functionalized(*user_args):
        out = Graphed.apply(*(tuple(_leaves(user_args)) + module_params))
        return _unflatten(out, output_spec)
    return functionalized


def _graphed_forward(module, graph_training_state, graphed, orig_fwd):
    def new_fwd(*user_args, **user_kwargs):
        # the graph serves the training-or-eval state it was captured in; the other runs the original forward
        if module.training == graph_training_state:
            return graphed(*user_args, **user_kwargs)
        return orig_fwd(*user_args, **user_kwargs)
    return new_fwd
