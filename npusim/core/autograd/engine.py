"""The backward pass: an iterative walk of the graph in dependency order.

Nodes run once all the gradients flowing into them have arrived, the most
recently created first among those ready (torch's order). The walk uses an
explicit heap, never recursion, so a chain of 100,000 ops is fine. Backward runs
in the calling thread, so its thread-local state (debug info, modes) is seen.
"""
from __future__ import annotations

import heapq
import itertools
import sys

from . import grad_mode
from .node import AccumulateGrad, edge_of

_tie = itertools.count()


def _add(a, b):
    from ..ops_namespace import aten
    return aten.add.Tensor(a, b)


def _steal_or_clone(g):
    """A tensor safe to store as ``.grad``: ``g`` itself if nothing else can see it, else a copy."""
    from ..ops_namespace import aten
    exclusive = sys.getrefcount(g) <= 3 and g._base is None and g._am is None
    a = g._a
    if exclusive and a.flags.c_contiguous and a.flags.writeable and a.flags.owndata:
        return g
    return aten.clone.default(g.detach(), memory_format="contiguous_format")


def _accumulate_into(t, g, create_graph):
    from ..ops_namespace import aten
    if t._am is None or t._am.grad is None:
        g = _steal_or_clone(g) if not create_graph else g
        if not create_graph and g._am is not None:
            g = g.detach()
        from .meta import write_grad
        write_grad(t, g)
        return
    old = t._am.grad
    if create_graph or old._am is not None and old._am.requires_grad:
        t._am.grad = _add(old, g)
    else:
        with grad_mode.no_grad():
            aten.add_.Tensor(old, g)


def _collect(root_nodes):
    """Every node reachable from the roots, and each node's children (non-None edges)."""
    seen = set()
    order = []
    stack = list(root_nodes)
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        order.append(n)
        for child, _ in n._next:
            if child is not None and child not in seen:
                stack.append(child)
    return order


def _needed(order, targets):
    """Nodes that lie on a path to a target (post-order, computed without recursion)."""
    needed = set(targets)
    # iterate in reverse topological order: repeat until no change (graphs are DAGs; a fixpoint is cheap)
    changed = True
    while changed:
        changed = False
        for n in order:
            if n in needed:
                continue
            if any(c in needed for c, _ in n._next if c is not None):
                needed.add(n)
                changed = True
    return needed


def run_backward(roots, grads, *, retain_graph, create_graph, inputs=None, accumulate=True, allow_unused=False):
    """Propagate ``grads`` from ``roots``. With ``inputs``, return their gradients (or accumulate only into them)."""
    root_edges = []
    for i, t in enumerate(roots):
        node, nr = edge_of(t)
        if node is None:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        root_edges.append((node, nr))

    order = _collect([n for n, _ in root_edges])
    in_graph = set(order)

    # What to capture: autograd.grad's inputs (or backward(inputs=...)'s leaves)
    captures = {}
    targets = None
    if inputs is not None:
        targets = set()
        for idx, t in enumerate(inputs):
            node, nr = edge_of(t)
            if node is None:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
            captures.setdefault(node, []).append((nr, idx))
            targets.add(node)
        needed = _needed(order, targets)
    else:
        needed = in_graph

    deps = dict.fromkeys(needed, 0)
    for n in needed:
        for child, _ in n._next:
            if child is not None and child in deps:
                deps[child] += 1

    buffers = {}
    for (node, nr), g in zip(root_edges, grads):
        if node not in needed:
            continue
        buf = buffers.setdefault(node, {})
        buf[nr] = g if nr not in buf else _add(buf[nr], g)

    results = [None] * (len(inputs) if inputs is not None else 0)
    ready = []
    pushed = set()
    for node, _ in root_edges:
        if node in needed and deps[node] == 0 and node not in pushed:
            heapq.heappush(ready, (-node._seq, next(_tie), node))
            pushed.add(node)

    prev_mode = grad_mode.tls.enabled
    grad_mode.tls.enabled = create_graph
    try:
        while ready:
            _, _, node = heapq.heappop(ready)
            buf = buffers.pop(node, {})
            width = max(buf) + 1 if buf else 1
            g_in = [buf.get(i) for i in range(width)]
            _run_tensor_hooks(node, g_in)
            if node in captures:
                for nr, idx in captures[node]:
                    results[idx] = g_in[nr] if nr < len(g_in) else None
                if targets is not None and not accumulate and not any(
                        c in needed for c, _ in node._next if c is not None):
                    _release_children(node, deps, ready, needed, retain_graph)
                    continue
            if isinstance(node, AccumulateGrad):
                if accumulate and (targets is None or node in targets):
                    _accumulate_leaf(node, g_in[0] if g_in else None, create_graph)
                continue
            if node._pre_hooks:
                for hook in node._pre_hooks:
                    r = hook(tuple(g_in))
                    if r is not None:
                        g_in = list(r)
            if all(g is None for g in g_in):
                g_out = (None,) * len(node._next)
            else:
                if node._released:
                    raise RuntimeError(
                        "Trying to backward through the graph a second time (or directly access saved tensors after "
                        "they have already been freed). Saved intermediate values of the graph are freed when you "
                        "call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward "
                        "through the graph a second time or if you need to access saved tensors after calling "
                        "backward.")
                g_out = node.apply(tuple(g_in))
                if node._hooks:
                    for hook in node._hooks:
                        r = hook(tuple(g_out), tuple(g_in))
                        if r is not None:
                            g_out = tuple(r)
            if not retain_graph:
                node.release()
            for (child, nr), g in zip(node._next, g_out):
                if child is None or child not in deps:
                    continue
                if g is not None:
                    cbuf = buffers.setdefault(child, {})
                    cbuf[nr] = g if nr not in cbuf else _add(cbuf[nr], g)
                deps[child] -= 1
                if deps[child] == 0:
                    heapq.heappush(ready, (-child._seq, next(_tie), child))
    finally:
        grad_mode.tls.enabled = prev_mode

    if inputs is not None and accumulate:
        # backward(inputs=[non-leaf]) accumulates into that tensor's .grad too
        for t, r in zip(inputs, results):
            if r is not None and t._am.grad_fn is not None:
                _accumulate_into(t, r, create_graph)
    if inputs is not None and not accumulate:
        for idx, r in enumerate(results):
            if r is None and not allow_unused:
                raise RuntimeError(f"The differentiated Tensor at index {idx} appears to not have been used in the "
                                   f"graph. Set allow_unused=True if this is the desired behavior.")
    return results


def _release_children(node, deps, ready, needed, retain_graph):
    for child, _ in node._next:
        if child is not None and child in deps:
            deps[child] -= 1
            if deps[child] == 0:
                heapq.heappush(ready, (-child._seq, next(_tie), child))


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
                if t._am.grad is None:
                    t._am.grad = g.detach().clone() if not grad_mode.tls.enabled else g
                else:
                    t._am.grad = _add(t._am.grad, g)


def _accumulate_leaf(node: AccumulateGrad, g, create_graph):
    leaf = node.variable
    if leaf is None or g is None:
        return
    am = leaf._am
    if am.hooks:
        for fn in list(am.hooks):
            r = fn(g)
            if r is not None:
                g = r
    _accumulate_into(leaf, g, create_graph)
    if am.post_accumulate_hooks:
        for fn in list(am.post_accumulate_hooks):
            fn(leaf)
