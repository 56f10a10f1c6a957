"""``npusim.autograd.Function``: user-defined forward and backward.

``MyFn.apply(*args)`` runs ``forward`` with grad recording off, then records a
node whose backward calls ``MyFn.backward(ctx, *grads)``.
"""
from __future__ import annotations

from ..tensor import Tensor
from . import grad_mode
from .meta import AutogradMeta
from .node import Node, SavedTensor, edge_of


class FunctionCtx:
    """The ``ctx`` of a custom Function: saved tensors and flags."""

    def save_for_backward(self, *tensors):
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise TypeError("save_for_backward can only save variables, but argument 0 is of type "
                                f"{type(t).__name__}")
        self._to_save = tensors

    def save_for_forward(self, *tensors):
        self._saved_for_forward = tensors

    def mark_dirty(self, *tensors):
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors):
        self._non_differentiable = tensors

    def set_materialize_grads(self, value: bool):
        self._materialize = bool(value)


class BackwardCFunction(Node, FunctionCtx):
    """The graph node of one custom Function call (also its ``ctx``)."""

    __slots__ = ()

    def apply(self, grads):
        cls = self._cls
        if self._materialize:
            from ..ops_namespace import aten
            grads = tuple(aten.zeros_like.default(o) if g is None else g for g, o in zip(grads, self._out_meta))
        r = cls.backward(self, *grads)
        if not isinstance(r, tuple):
            r = (r,)
        n_inputs = len(self._input_is_tensor)
        if len(r) < n_inputs:
            raise RuntimeError(f"function {cls.__name__}Backward returned an incorrect number of gradients "
                               f"(expected {n_inputs}, got {len(r)})")
        if len(r) > n_inputs and any(x is not None for x in r[n_inputs:]):
            raise RuntimeError(f"function {cls.__name__}Backward returned an incorrect number of gradients "
                               f"(expected {n_inputs}, got {len(r)})")
        out = []
        for g, is_t in zip(r[:n_inputs], self._input_is_tensor):
            if not is_t:
                continue
            out.append(g)
        return tuple(out)

    @property
    def saved_tensors(self):
        saved = self._saved_list
        if saved is None:
            return ()
        return tuple(s.unpack(self) if s is not None else None for s in saved)

    def release(self):
        super().release()
        if self._saved_list:
            for s in self._saved_list:
                if s is not None:
                    s.tensor = None

    @property
    def needs_input_grad(self):
        return self._needs

    def name(self):
        return f"{self._cls.__name__}Backward"


class FunctionMeta(type):
    def __init__(cls, name, bases, attrs):
        super().__init__(name, bases, attrs)
        cls._backward_cls = type(f"{name}Backward", (BackwardCFunction,), {"__slots__": (), "_cls": cls})


class Function(metaclass=FunctionMeta):
    """Subclass and define ``forward(ctx, ...)`` and ``backward(ctx, *grad_outputs)`` as staticmethods."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    vjp = backward

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError

    @classmethod
    def apply(cls, *args, **kwargs):
        node = cls._backward_cls()
        node._to_save = None
        node._dirty = ()
        node._non_differentiable = ()
        node._materialize = True
        node._saved_list = None
        tensors = [a for a in args if isinstance(a, Tensor)]
        node._input_is_tensor = tuple(isinstance(a, Tensor) for a in args)
        node._needs = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
        record = grad_mode.tls.enabled and any(node._needs)
        custom_setup = cls.setup_context is not Function.setup_context
        with grad_mode.no_grad():
            if custom_setup:
                out = cls.forward(*args, **kwargs)
                cls.setup_context(node, args, out)
            else:
                out = cls.forward(node, *args, **kwargs)
        if not record:
            return out
        node._next = tuple(edge_of(t) for t in tensors)
        outs = out if isinstance(out, tuple) else (out,)
        non_diff = {id(t) for t in node._non_differentiable}
        dirty = {id(t) for t in node._dirty}
        node._out_meta = outs
        result = []
        for i, o in enumerate(outs):
            if isinstance(o, Tensor) and id(o) not in non_diff and o.is_floating_point():
                if any(o is t for t in tensors) and id(o) not in dirty:
                    o = o.view_as(o)   # an input returned as is: a view, so the input keeps its own history
                am = o._am
                if am is None:
                    o._am = AutogradMeta(True, node, i)
                else:
                    am.requires_grad, am.grad_fn, am.output_nr = True, node, i
                o._ks = o._device._grad_ks
            result.append(o)
        node._out_meta = tuple(result)
        if node._to_save is not None:
            node._saved_list = [None if t is None else SavedTensor(t, is_output=any(t is r for r in result),
                                                                   node=node)
                                for t in node._to_save]
            node._to_save = None
        return tuple(result) if isinstance(out, tuple) else result[0]


def once_differentiable(fn):
    """Mark a backward that cannot itself be differentiated (it runs with grad recording off)."""
    import functools

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with grad_mode.no_grad():
            return fn(ctx, *args)
    return wrapper
