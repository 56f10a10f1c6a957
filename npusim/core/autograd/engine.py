"""The backward pass: an iterative walk of the graph in dependency order.

Nodes run once all the gradients flowing into them have arrived, the most
recently created first among those ready (torch's order). The walk uses an
explicit stack and heap, never recursion, so a chain of 100,000 ops is fine.
Backward runs in the calling thread, so its thread-local state (debug info,
modes) is seen.
"""
from __future__ import annotations

import sys
from heapq import heappop, heappush

import numpy as np

from ..c10.device import CPU
from ..dispatch.ops_namespace import aten
from ..tensor import make_alias
from ..dispatch import record_function as _record_function
from . import grad_mode
from .anomaly_mode import _state as anomaly
from .anomaly_mode import check_nan
from .grad_dtype import cast_incoming
from .layout_policy import tls as _layout_policy
from .node import AccumulateGrad, edge_of

_getrefcount = sys.getrefcount
_ndarray = np.ndarray
_np_add = np.add
_CPU = CPU


_add = aten.add.Tensor
_add_ = aten.add_.Tensor


def _steal_or_clone(g, owned_refs):
    """A tensor safe to store as ``.grad``: ``g`` itself if nothing else can see it, else a copy."""
    a = g._a
    # owned_refs: the references the engine's own frames hold; any more and someone else can see g
    flags = a.flags
    if _getrefcount(g) <= owned_refs + 2 and g._am is None and flags.c_contiguous and \
            getattr(flags, "writeable", True):   # CuPy's flags have no "writeable"
        base = g._base
        if base is None:
            if flags.owndata:
                return g
        # g views all of a temporary that nothing but g refers to (references: g's _base, this frame's
        # local, getrefcount's argument); a Linear weight's gradient comes back like this, as the transpose of
        # a transposed product. Keep that memory, as a tensor of its own rather than a view (torch's detach).
        elif _getrefcount(base) <= 3 and base._am is None and base._a.size == a.size and \
                base._a.flags.owndata and (base._a.flags.c_contiguous or base._a.flags.f_contiguous):
            return make_alias(a, g)
    return aten.clone.default(g.detach(), memory_format="contiguous_format")


def _in_layout_of(t, g):
    """A copy of ``g`` with the strides of the leaf ``t`` (torch's gradient layout contract: a dense leaf, as a
    channels_last weight, gets a gradient laid out as itself; any other gets a contiguous one)."""
    out = aten.empty_like.default(t, memory_format="preserve_format")
    return aten.copy_.default(out, g.detach())


def _accumulate_into(t, g, create_graph, owned_refs=0):
    am = t._am
    old = am.grad
    if old is None:
        if create_graph:
            am.grad = g
        elif not t._a.flags.c_contiguous:
            # relaxed layout policy: a gradient nothing else sees is kept in its own layout, as torch steals it
            if not _layout_policy.enforced and g._am is None and _getrefcount(g) <= owned_refs + 2 and \
                    g._base is None and g._a.flags.owndata and getattr(g._a.flags, "writeable", True):
                am.grad = g
            else:
                am.grad = _in_layout_of(t, g)
        elif g._am is None:
            am.grad = _steal_or_clone(g, owned_refs + 1)
        else:
            am.grad = _steal_or_clone(g.detach(), 0)
        return
    if create_graph or (old._am is not None and old._am.requires_grad):
        am.grad = _add(old, g)
        return
    oa, ga = old._a, g._a
    if old._device is _CPU and g._device is _CPU and oa.__class__ is _ndarray and ga.__class__ is _ndarray and \
            oa.dtype == ga.dtype and oa.shape == ga.shape and oa.flags.writeable and old._base is None:
        # the common cpu case: add in place without a dispatch round trip (the version still moves on)
        _np_add(oa, ga, out=oa)
        old._bump_version()
    else:
        enabled = grad_mode.tls.enabled
        grad_mode.tls.enabled = False
        try:
            aten.add_.Tensor(old, g)
        finally:
            grad_mode.tls.enabled = enabled


def _dependencies(root_nodes):
    """For every node reachable from the roots: how many edges lead into it."""
    deps = {}
    stack = []
    for n in root_nodes:
        if n not in deps:
            deps[n] = 0
            stack.append(n)
    get = deps.get
    while stack:
        n = stack.pop()
        for child, _ in n._next:
            if child is not None:
                c = get(child)
                if c is None:
                    deps[child] = 1
                    stack.append(child)
                else:
                    deps[child] = c + 1
    return deps


def _restrict(deps, root_nodes, targets):
    """Only the nodes that lie on a path to a target, with their dependency counts among themselves."""
    # topological order (Kahn), then a reverse sweep marks nodes that reach a target
    remaining = dict(deps)
    order = []
    stack = [n for n in dict.fromkeys(root_nodes) if remaining[n] == 0]
    while stack:
        n = stack.pop()
        order.append(n)
        for child, _ in n._next:
            if child is not None:
                remaining[child] -= 1
                if remaining[child] == 0:
                    stack.append(child)
    needed = set()
    for n in reversed(order):
        if n in targets or any(c in needed for c, _ in n._next if c is not None):
            needed.add(n)
    out = dict.fromkeys(needed, 0)
    for n in needed:
        for child, _ in n._next:
            if child is not None and child in out:
                out[child] += 1
    return out


def run_backward(roots, grads, *, retain_graph, create_graph, inputs=None, accumulate=True, allow_unused=False):
    """Propagate ``grads`` from ``roots``. With ``inputs``, return their gradients (or accumulate only into them)."""
    root_edges = []
    for i, t in enumerate(roots):
        node, nr = edge_of(t)
        if node is None:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        root_edges.append((node, nr))
    root_nodes = [n for n, _ in root_edges]
    deps = _dependencies(root_nodes)

    captures = None
    targets = None
    if inputs is not None:
        captures, targets = {}, set()
        for idx, t in enumerate(inputs):
            node, nr = edge_of(t)
            if node is None:
                if accumulate:
                    raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
                raise RuntimeError("One of the differentiated Tensors does not require grad")
            captures.setdefault(node, []).append((nr, idx))
            targets.add(node)
        deps = _restrict(deps, root_nodes, targets)

    buffers = {}
    for (node, nr), g in zip(root_edges, grads):
        if node in deps:
            _put(buffers, node, nr, g)

    results = [None] * (len(inputs) if inputs is not None else 0)
    ready = []
    for node in dict.fromkeys(root_nodes):
        if node in deps and deps[node] == 0:
            heappush(ready, (-node._seq, id(node), node))

    anomaly_on = anomaly["enabled"]
    tls = grad_mode.tls
    prev_mode = tls.enabled
    tls.enabled = create_graph
    try:
        while ready:
            node = heappop(ready)[2]
            g_in = buffers.pop(node, None) or [None]
            # hooks live in the node's instance dict: an empty dict means none to look for
            hooked = bool(node.__dict__)
            if hooked and (node._tensor_pre_hooks is not None or node._retains is not None):
                _run_tensor_hooks(node, g_in)
            is_leaf = node.__class__ is AccumulateGrad
            if is_leaf and g_in[0] is not None and node._variable() is not None and node._variable()._am.hooks:
                _run_leaf_hooks(node, g_in)
            if captures is not None and node in captures:
                for nr, idx in captures[node]:
                    results[idx] = g_in[nr] if nr < len(g_in) else None
                    if is_leaf and results[idx] is not None and node._variable() is not None:
                        results[idx] = cast_incoming(node._variable(), results[idx])   # in its grad_dtype
                if not accumulate and not any(c in deps for c, _ in node._next if c is not None):
                    continue
            if is_leaf:
                if accumulate:
                    _accumulate_leaf(node, g_in, create_graph)
                continue
            if hooked and node._pre_hooks is not None:
                for hook in node._pre_hooks:
                    r = hook(tuple(g_in))
                    if r is not None:
                        g_in = list(r)
            for g in g_in:
                if g is not None:
                    g_out = node.apply(tuple(g_in)) if not _record_function.ACTIVE else \
                        _record_function.run_backward_node(node, tuple(g_in))   # BACKWARD_FUNCTION callbacks
                    if anomaly_on and anomaly["enabled"] and anomaly["check_nan"]:
                        check_nan(node, g_out)
                    break
            else:
                g_out = (None,) * len(node._next)
            if hooked and node._hooks is not None:
                for hook in node._hooks:
                    r = hook(tuple(g_out), tuple(g_in))
                    if r is not None:
                        g_out = tuple(r)
            if not retain_graph:
                node.release()
            for (child, nr), g in zip(node._next, g_out):
                if child is None:
                    continue
                d = deps.get(child)
                if d is None:
                    continue
                if g is not None:
                    if nr == 0 and child not in buffers:   # the first gradient into a child's first input
                        buffers[child] = [g]
                    else:
                        _put(buffers, child, nr, g)
                if d == 1:
                    deps[child] = 0
                    heappush(ready, (-child._seq, id(child), child))
                else:
                    deps[child] = d - 1
            g = g_out = g_in = None   # hold no gradient past its node: lets AccumulateGrad steal it
    finally:
        tls.enabled = prev_mode

    if inputs is not None:
        if accumulate:
            # backward(inputs=[non-leaf]) accumulates into that tensor's .grad too
            for t, r in zip(inputs, results):
                if r is not None and t._am.grad_fn is not None:
                    _accumulate_into(t, r, create_graph)
        elif not allow_unused:
            for idx, r in enumerate(results):
                if r is None:
                    raise RuntimeError(f"The differentiated Tensor at index {idx} appears to not have been used in "
                                       f"the graph. Set allow_unused=True if this is the desired behavior.")
    return results


def _put(buffers, node, nr, g):
    buf = buffers.get(node)
    if buf is None:
        buf = buffers[node] = [None] * (nr + 1)
    elif len(buf) <= nr:
        buf.extend([None] * (nr + 1 - len(buf)))
    old = buf[nr]
    if old is None:
        buf[nr] = g
    elif _may_add_into(old, g):
        _add_(old, g)       # same bits as old + g, without a new array per incoming gradient (an RNN's weights)
    else:
        buf[nr] = _add(old, g)


def _may_add_into(old, g) -> bool:
    """Whether ``g`` may be added into the buffered gradient ``old`` in place: nothing but the buffer can see
    ``old`` or its memory (references: the buffer's slot, _put's local, this argument, getrefcount's; its array's:
    the tensor's slot, the storage's, the local, getrefcount's), it is no view, and the sum keeps its dtype, shape
    and device. Not while the backward itself is recorded (create_graph)."""
    if grad_mode.tls.enabled or _getrefcount(old) > 4 or old._am is not None or old._base is not None:
        return False
    a, st = old._a, old._st
    if st is not None and _getrefcount(st) > 3:
        return False
    if _getrefcount(a) > (3 if st is None else 4):
        return False
    b = g._a
    flags = a.flags     # (a flags object refers to its array: count the references first)
    return flags.owndata and flags.c_contiguous and getattr(flags, "writeable", True) and b.dtype == a.dtype and \
        b.shape == a.shape and g._device == old._device


def _run_tensor_hooks(node, g_in):
    """Hooks registered on non-leaf tensors (register_hook, retain_grad) see their tensor's gradient."""
    hooks = node._tensor_pre_hooks
    if hooks:
        for nr, fns in hooks.items():
            if nr < len(g_in) and g_in[nr] is not None:
                for fn in list(fns):
                    r = fn(g_in[nr])
                    if r is not None:
                        g_in[nr] = r
    retains = node._retains
    if retains:
        for nr, ref in retains.items():
            t = ref()
            if t is not None and nr < len(g_in) and g_in[nr] is not None:
                g = g_in[nr]
                am = t._am
                if am.grad is None:
                    am.grad = g if grad_mode.tls.enabled else g.detach().clone()
                else:
                    am.grad = _add(am.grad, g)


def _run_leaf_hooks(node: AccumulateGrad, g_in):
    """Hooks registered on a leaf see (and may replace) its gradient, also when autograd.grad captures it."""
    leaf = node._variable()
    if leaf is None:
        return
    hooks = leaf._am.hooks
    if hooks:
        g = g_in[0]
        for fn in list(hooks):
            r = fn(g)
            if r is not None:
                g = r
        g_in[0] = g


def _accumulate_leaf(node: AccumulateGrad, g_in, create_graph):
    g = g_in[0]
    g_in[0] = None
    leaf = node._variable()
    if leaf is None or g is None:
        return
    if g._a.dtype is not leaf._a.dtype or hasattr(leaf, "_grad_dtype"):     # (NumPy's dtypes: a cheap test)
        g = cast_incoming(leaf, g)           # kept in the leaf's grad_dtype (its dtype unless set)
    am = leaf._am
    _accumulate_into(leaf, g, create_graph, owned_refs=1)
    if am.post_accumulate_hooks:
        for fn in list(am.post_accumulate_hooks):
            fn(leaf)
