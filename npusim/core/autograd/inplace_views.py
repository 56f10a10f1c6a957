"""In-place ops on views under autograd (torch's CopySlices), and rebuilding a view's ``grad_fn``.

When an in-place op changes a view, the base changes too. The base's history
becomes a ``CopySlices`` node: its gradient passes through unchanged outside
the view's region, and through the in-place op's own backward inside it. The
view (and every other view of that base) then reads its gradient out of the
base's new history through an ``AsStridedBackward0`` node, rebuilt lazily when
its ``grad_fn`` is next asked for (the version counter says when).

Geometry is kept in elements relative to the base's first element, as
``(sizes, strides, offset)``.
"""
from __future__ import annotations

import weakref

from ..dispatch.ops_namespace import aten
from ..c10.storage import array_address
from .meta import DEFAULT, MULTI_OUTPUT_NODE, NO_GRAD_MODE, AutogradMeta, ViewAutogradMeta
from .node import Node, edge_of, short_name

_NO_GRAD_TAIL = (
    "Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving "
    "both the view and the inplace either both inside the no_grad block (if you don't want the inplace to be "
    "tracked) or both outside (if you want the inplace to be tracked).")
_MULTI_TAIL = ("This view is the output of a function that returns multiple views. Such functions do not allow the "
               "output views to be modified inplace. You should replace the inplace operation by an out-of-place "
               "one.")
_CUSTOM_TAIL = ("This view was created inside a custom Function (or because an input was returned as-is) and the "
                "autograd logic to handle view+inplace would override the custom backward associated with the "
                "custom Function, leading to incorrect gradients. This behavior is forbidden. You can fix this by "
                "cloning the output of the custom Function.")


def geometry(view_arr, base_arr):
    """``(sizes, strides, offset)`` of ``view_arr`` in elements of ``base_arr``, offset relative to its start."""
    isz = base_arr.itemsize
    if view_arr.itemsize != isz:
        raise RuntimeError("in-place operations on a view with a different dtype than its base are not supported "
                           "by autograd")
    off = (array_address(view_arr) - array_address(base_arr)) // isz
    return tuple(view_arr.shape), tuple(s // isz for s in view_arr.strides), off


def _contiguous_strides(shape):
    strides, acc = [], 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(strides))


def _like_base(g, base_geom, zero):
    """A fresh tensor with the base's sizes and strides (zeros, or ``g`` copied in)."""
    shape, strides = base_geom
    if strides == _contiguous_strides(shape):
        if zero:
            return aten.zeros.default(list(shape), dtype=g.dtype, device=g.device)
        return aten.clone.default(g, memory_format="contiguous_format")
    r = aten.empty_strided.default(list(shape), list(strides), dtype=g.dtype, device=g.device)
    if zero:
        aten.zero_.default(r)
    else:
        aten.copy_.default(r, g)
    return r


def view_grad_to_base(g, base_geom, view_geom):
    """The gradient of a base whose view (``view_geom``) received ``g``: zeros elsewhere."""
    size, stride, off = view_geom
    # an expanded view reads one element many times: its gradient sums over the repeats
    rep = [i for i, (n, s) in enumerate(zip(size, stride)) if s == 0 and n > 1]
    if rep:
        g = aten.sum.dim_IntList(g, rep, True)
        size = tuple(1 if i in rep else n for i, n in enumerate(size))
    result = _like_base(g, base_geom, zero=True)
    aten.copy_.default(aten.as_strided.default(result, list(size), list(stride), off), g)
    return result


class AsStridedViewBackward(Node):
    """The rebuilt ``grad_fn`` of a view whose base was changed in place."""

    __slots__ = ("_base_geom", "_view_geom")

    def apply(self, grads):
        g = grads[0]
        if g is None:
            return (None,)
        return (view_grad_to_base(g, self._base_geom, self._view_geom),)


AsStridedViewBackward.__name__ = AsStridedViewBackward.__qualname__ = "AsStridedBackward0"


def _as_strided_node(next_edge, base_geom, view_geom):
    node = AsStridedViewBackward()
    node._next = (next_edge,)
    node._base_geom = base_geom
    node._view_geom = view_geom
    return node


def view_of_node_output(node, geoms):
    """A node reading the view ``geoms = (base_geom, view_geom)`` out of ``node``'s output 0."""
    return _as_strided_node((node, 0), geoms[0], geoms[1])


class CopySlices(Node):
    """The base's history after an in-place op on one of its views."""

    __slots__ = ("_fn", "_base_geom", "_view_geom")

    def apply(self, grads):
        g = grads[0]
        if g is None:
            return (None,) * len(self._next)
        result = _like_base(g, self._base_geom, zero=False)
        size, stride, off = self._view_geom
        region = aten.as_strided.default(result, list(size), list(stride), off)
        # the op's backward may hand the same tensor to several inputs: give it its own copy
        res = self._fn.apply((aten.clone.default(region),))
        r0 = res[0]
        if r0 is None:
            aten.zero_.default(region)
        else:
            aten.copy_.default(region, r0)
        return (result,) + tuple(res[1:])

    def release(self):
        Node.release(self)
        self._fn.release()


def check_view_rebase(meta, indirect: bool) -> None:
    """torch's handle_view_on_rebase: views that must not be changed in place under autograd."""
    creation = meta.creation
    if creation == DEFAULT:
        return
    if creation == NO_GRAD_MODE:
        what = "its base or another view of its base has been modified inplace with grad mode enabled" if indirect \
            else "is being modified inplace with grad mode enabled"
        raise RuntimeError(f"A view was created in no_grad mode and {what}. {_NO_GRAD_TAIL}")
    name = short_name(meta._fn)
    what = "its base or another view of its base has been modified inplace" if indirect \
        else "is being modified inplace"
    tail = _MULTI_TAIL if creation == MULTI_OUTPUT_NODE else _CUSTOM_TAIL
    raise RuntimeError(f"Output {meta.output_nr} of {name} is a view and {what}. {tail}")


def regenerate_view_grad_fn(meta):
    """Rebuild a view's ``grad_fn`` from its base's current history (after an in-place change)."""
    check_view_rebase(meta, indirect=True)
    base = meta.base
    arr = meta.arr
    node = _as_strided_node(edge_of(base), _base_geometry(base), geometry(arr, base._a))
    old = meta._fn
    meta._fn = node
    meta.output_nr = 0
    meta.requires_grad = True
    meta.attr_version = meta.vc[0]
    if meta.retains_grad and old is not None and meta.view_ref is not None:
        move_retains(meta.view_ref, old, node)
    return node


def _base_geometry(base):
    a = base._a
    isz = a.itemsize
    return tuple(a.shape), tuple(s // isz for s in a.strides)


def move_retains(ref, old, new, new_nr=0) -> None:
    """retain_grad follows its tensor (weak ``ref``) to a new history, as torch moves the retains_grad hook."""
    retains = old._retains
    if retains:
        for nr, r in list(retains.items()):
            if r is ref or r() is ref():
                del retains[nr]
    if new._retains is None:
        new._retains = {}
    new._retains[new_nr] = ref


def rebase_history(self_t, fn, edges):
    """Record in-place op ``fn`` on the view ``self_t``: its base's grad_fn becomes CopySlices."""
    base = self_t._base
    base_edge = edge_of(base)
    cs = CopySlices()
    cs._fn = fn
    cs._base_geom = _base_geometry(base)
    cs._view_geom = geometry(self_t._a, base._a)
    cs._next = (base_edge,) + tuple(edges[1:])
    # the region's old values reach the base's old history, whatever the view itself required
    needs = fn._needs
    fn._needs = (base_edge[0] is not None,) + tuple(needs[1:])
    bam = base._am
    if bam is None:
        base._am = AutogradMeta(True, cs, 0)
    else:
        old = bam.grad_fn
        bam.requires_grad = True
        bam.grad_fn = cs
        bam.output_nr = 0
        if bam.retains_grad and old is not None:
            move_retains(weakref.ref(base), old, cs)
    base._ks = base._device._grad_ks
    am = self_t._am
    if am is None or am.__class__ is not ViewAutogradMeta:
        vm = ViewAutogradMeta(self_t, base, True, None, 0, DEFAULT)
        if am is not None:
            vm.grad, vm.hooks, vm.retains_grad = am.grad, am.hooks, am.retains_grad
        self_t._am = vm
        am = vm
    am.requires_grad = True
    am.arr = self_t._a
    am.attr_version = -1   # rebuilt from the base on next use
    self_t._ks = self_t._device._grad_ks
    return cs


__all__ = ["CopySlices", "AsStridedViewBackward", "rebase_history", "regenerate_view_grad_fn", "check_view_rebase",
           "geometry", "view_grad_to_base", "view_of_node_output"]
