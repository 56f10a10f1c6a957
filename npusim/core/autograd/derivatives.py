"""Derivative formulas, and the Autograd kernels generated from them.

A formula says which tensor arguments are differentiable, what to save, and
how to turn output gradients into input gradients:

    @derivative("mul.Tensor", inputs=("self", "other"), save=("self", "other"))
    def mul_backward(ctx, grad):
        return (grad * ctx.other if ctx.needs_input_grad[0] else None,
                grad * ctx.self if ctx.needs_input_grad[1] else None)

Each formula becomes a Node subclass named like torch's (``MulBackward0``) and an
Autograd kernel (registered on the ``Autograd`` alias key through the Library
API) that runs the op below autograd and, when grad mode is on and an input
needs a gradient, records the node. Backward formulas are written with
dispatched ops, so ``create_graph=True`` differentiates them again.
"""
from __future__ import annotations

from ..dispatch_keys import BELOW_AUTOGRAD, DispatchKey
from ..library import Library
from ..ops_namespace import aten
from ..tensor import Tensor
from . import grad_mode
from .meta import AutogradMeta
from .node import Node, SavedTensor, edge_of

_lib = Library("aten", "IMPL")
_gm = grad_mode.tls
_FORMULAS: dict = {}
_name_counts: dict = {}


class FormulaNode(Node):
    """A node whose backward is a registered formula; saved values read as attributes."""

    __slots__ = ("_needs", "_layout")
    _formula = None
    _op_name = ""

    def apply(self, grads):
        r = type(self)._formula(self, *grads)
        r = r if isinstance(r, tuple) else (r,)
        layout = self._layout
        if layout is None:
            return r
        # tensor-list inputs (cat's tensors): one gradient list per input, one edge per tensor
        flat = []
        for g, n in zip(r, layout):
            if n is None:
                flat.append(g)
            else:
                flat.extend(g if g is not None else (None,) * n)
        return tuple(flat)

    @property
    def needs_input_grad(self):
        return self._needs

    def __getattr__(self, name):
        saved = object.__getattribute__(self, "_saved")
        if saved is None or name not in saved:
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
        v = saved[name]
        if isinstance(v, SavedTensor):
            return v.unpack(self)
        if isinstance(v, list) and v and isinstance(v[0], SavedTensor):
            return [s.unpack(self) for s in v]
        return v


def _node_class(op_name: str, formula, class_name=None):
    base = class_name or "".join(part.capitalize() for part in op_name.rstrip("_").split("_")) + "Backward"
    n = _name_counts.get(base, 0)
    _name_counts[base] = n + 1
    return type(f"{base}{n}", (FormulaNode,), {"__slots__": (), "_formula": staticmethod(formula),
                                                "_op_name": op_name})


def _flat_edges(values):
    edges, needs = [], []
    for v in values:
        if isinstance(v, (list, tuple)):
            sub_needs = []
            for t in v:
                if isinstance(t, Tensor):
                    edges.append(edge_of(t))
                    sub_needs.append(t._am is not None and t._am.requires_grad)
                else:
                    edges.append((None, 0))
                    sub_needs.append(False)
            needs.append(tuple(sub_needs))
        elif isinstance(v, Tensor):
            edges.append(edge_of(v))
            needs.append(v._am is not None and v._am.requires_grad)
        else:
            edges.append((None, 0))
            needs.append(False)
    return edges, needs


def _any_needs(needs):
    for n in needs:
        if n is True or (isinstance(n, tuple) and any(n)):
            return True
    return False


def _differentiable(t) -> bool:
    return isinstance(t, Tensor) and t.is_floating_point()


def _attach(out, node, nondiff):
    """Give each differentiable output its grad_fn; returns the outputs to save as results."""
    outs = out if isinstance(out, (tuple, list)) else (out,)
    for i, t in enumerate(outs):
        if i in nondiff or not _differentiable(t):
            continue
        am = t._am
        if am is None:
            t._am = AutogradMeta(True, node, i)
        else:
            am.requires_grad = True
            am.grad_fn = node
            am.output_nr = i
        t._ks = t._device._grad_ks
    return outs


def _check_inplace(self_t):
    am = self_t._am
    if am is not None and am.requires_grad and am.grad_fn is None and _gm.enabled:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")


def derivative(*overloads, inputs=("self",), save=(), save_result=False, nondiff_outputs=(), name=None):
    """Register a backward formula for ``overloads`` (see the module docstring)."""
    def register(fn):
        for ov in overloads:
            _register(ov, fn, inputs, save, save_result, frozenset(nondiff_outputs), name)
        return fn
    return register


def _register(overload, formula, inputs, save, save_result, nondiff, class_name):
    packet, _, ov = overload.partition(".")
    op = getattr(getattr(aten, packet), ov or "default")
    schema = op._schema
    pos_names = [a.name for a in schema.arguments if not a.kwarg_only]
    defaults = {a.name: a.default for a in schema.arguments if a.has_default}
    node_cls = _node_class(packet, formula, class_name)
    inplace = schema.is_inplace
    below = BELOW_AUTOGRAD
    redispatch = op.redispatch
    input_names = tuple(inputs)
    save_names = tuple(save)

    def kernel(ks, *args, **kwargs):
        if not _gm.enabled:
            return redispatch(below & ks, *args, **kwargs)
        bound = dict(defaults)
        bound.update(zip(pos_names, args))
        bound.update(kwargs)
        values = [bound.get(n) for n in input_names]
        edges, needs = _flat_edges(values)
        if not _any_needs(needs):
            return redispatch(below & ks, *args, **kwargs)
        self_t = args[0] if inplace else None
        if inplace:
            _check_inplace(self_t)
        saved = {}
        for n in save_names:
            v = bound.get(n)
            if isinstance(v, Tensor):
                if inplace and v is self_t:
                    v = aten.clone.default(v)  # the op is about to overwrite it
                saved[n] = SavedTensor(v)
            elif isinstance(v, (list, tuple)) and v and isinstance(v[0], Tensor):
                saved[n] = [SavedTensor(t) for t in v]
            else:
                saved[n] = v
        if inplace:
            # the node sees self's shape/dtype before the op, as torch's formulas do
            saved.setdefault("self_sizes", tuple(self_t._a.shape))
        out = redispatch(below & ks, *args, **kwargs)
        node = node_cls()
        node._next = tuple(edges)
        node._needs = tuple(needs)
        node._saved = saved
        node._layout = tuple(len(v) if isinstance(v, (list, tuple)) else None for v in values) \
            if any(isinstance(v, (list, tuple)) for v in values) else None
        outs = _attach(out, node, nondiff)
        if save_result:
            saved["result"] = SavedTensor(outs[0], is_output=True, node=node) if len(outs) == 1 or not \
                isinstance(out, (tuple, list)) else [SavedTensor(t, is_output=True, node=node) for t in outs]
        return out

    _lib.impl(overload, kernel, "Autograd", with_keyset=True)
    _FORMULAS[overload] = (formula, node_cls)


def registered(overload: str) -> bool:
    return overload in _FORMULAS


# --- the Autograd fallback: ops without a formula ---------------------------------------------------------

NONDIFFERENTIABLE = {
    "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor", "logical_not", "bitwise_and",
    "bitwise_or", "bitwise_xor", "bitwise_not", "isnan", "isinf", "isfinite", "argmax", "argmin", "argsort",
    "nonzero", "rand_like", "randn_like", "randint_like", "zeros_like", "ones_like", "empty_like", "full_like",
    "multinomial", "bernoulli", "bernoulli_", "random_", "uniform_", "normal_", "exponential_", "randperm",
    "_local_scalar_dense", "detach", "_unique2", "unique_dim", "unique_consecutive", "floor_divide", "remainder",
    "native_dropout", "resize_", "zero_", "fill_", "empty", "zeros", "ones", "full", "arange", "linspace", "eye",
    "scalar_tensor", "empty_strided", "rand", "randn", "randint", "normal",
}


class NotImplementedBackward(Node):
    """Recorded for ops that have no derivative formula: backward through them is an error."""

    __slots__ = ("_op",)

    def apply(self, grads):
        raise RuntimeError(f"the derivative for '{self._op}' is not implemented.")


def _autograd_fallback(ks, op, *args, **kwargs):
    out = op.redispatch(BELOW_AUTOGRAD & ks, *args, **kwargs)
    if not _gm.enabled or op._schema.name in NONDIFFERENTIABLE:
        return out
    flat = []
    for v in list(args) + list(kwargs.values()):
        if isinstance(v, Tensor):
            flat.append(v)
        elif isinstance(v, (list, tuple)):
            flat.extend(t for t in v if isinstance(t, Tensor))
    if not any(t._am is not None and t._am.requires_grad for t in flat):
        return out
    node = NotImplementedBackward()
    node._op = op.name_
    node._next = tuple(edge_of(t) for t in flat)
    _attach(out, node, frozenset())
    return out


_fallbacks = Library("_", "IMPL")
for _key in (DispatchKey.AutogradCPU, DispatchKey.AutogradCUDA, DispatchKey.AutogradMeta,
             DispatchKey.AutogradPrivateUse1, DispatchKey.AutogradOther):
    _fallbacks.fallback(_autograd_fallback, _key.name, with_keyset=True)
