"""The nested containers ``npusim.func`` maps over: tuples, lists, dicts and namedtuples of leaves.

A small counterpart of ``torch.utils._pytree`` (flatten, unflatten, broadcasting a prefix tree such as
vmap's ``in_dims``); :class:`TreeSpec` prints as torch's does, since vmap's error messages show it.
"""
from __future__ import annotations

from collections import OrderedDict


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def _children(x):
    """(type, context, children) of a container, or None for a leaf."""
    if _is_namedtuple(x):
        return type(x), None, list(x)
    if isinstance(x, (tuple, list)):
        return type(x), None, list(x)
    if isinstance(x, dict):
        keys = list(x.keys())
        return type(x), keys, [x[k] for k in keys]
    return None


class TreeSpec:
    """The shape of a nested container; ``None`` type means a leaf."""

    __slots__ = ("type", "context", "children", "num_leaves")

    def __init__(self, typ, context, children):
        self.type = typ
        self.context = context
        self.children = children
        self.num_leaves = 1 if typ is None else sum(c.num_leaves for c in children)

    def is_leaf(self) -> bool:
        return self.type is None

    def __eq__(self, other):
        return (isinstance(other, TreeSpec) and self.type is other.type and self.context == other.context
                and self.children == other.children)

    def __repr__(self, indent: int = 0) -> str:
        if self.type is None:
            return "*"
        text = f"TreeSpec({self.type.__name__}, {self.context}, ["
        if self.children:
            indent += 2
            text += self.children[0].__repr__(indent)
            text += "," if len(self.children) > 1 else ""
            text += ",".join("\n" + " " * indent + c.__repr__(indent) for c in self.children[1:])
        return text + "])"


LEAF = TreeSpec(None, None, [])


def tree_flatten(tree):
    """(leaves in order, spec)."""
    leaves = []

    def go(x):
        node = _children(x)
        if node is None:
            leaves.append(x)
            return LEAF
        typ, ctx, kids = node
        return TreeSpec(typ, ctx, [go(k) for k in kids])

    spec = go(tree)
    return leaves, spec


def tree_unflatten(leaves, spec: TreeSpec):
    it = iter(leaves)

    def go(s):
        if s.type is None:
            return next(it)
        kids = [go(c) for c in s.children]
        if issubclass(s.type, dict):
            if s.type is OrderedDict or s.type is dict:
                return s.type(zip(s.context, kids))
            out = s.type()
            out.update(zip(s.context, kids))
            return out
        if issubclass(s.type, tuple) and hasattr(s.type, "_fields"):
            return s.type(*kids)
        return s.type(kids)

    return go(spec)


def tree_map(fn, tree):
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(x) for x in leaves], spec)


def broadcast_to_and_flatten(prefix, spec: TreeSpec):
    """``prefix`` (a tree whose leaves stand for whole subtrees of ``spec``) expanded to one value per leaf of
    ``spec``, or None when its structure does not match."""
    out = []

    def go(p, s):
        node = _children(p)
        if node is None:
            out.extend([p] * s.num_leaves)
            return True
        typ, ctx, kids = node
        if s.type is None or not _same_kind(typ, s.type) or len(kids) != len(s.children):
            return False
        if ctx is not None:
            if set(ctx) != set(s.context):
                return False
            by_key = dict(zip(ctx, kids))
            kids = [by_key[k] for k in s.context]
        return all(go(k, c) for k, c in zip(kids, s.children))

    return out if go(prefix, spec) else None


def _same_kind(a, b) -> bool:
    if issubclass(a, dict) and issubclass(b, dict):
        return True
    return a is b
