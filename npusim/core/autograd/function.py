"""``npusim.autograd.Function``: user-defined forward and backward.

``MyFn.apply(*args)`` runs ``forward`` with grad recording off, then records a
node whose backward calls ``MyFn.backward(ctx, *grads)``. The node is also the
``ctx``: what forward saves on it, backward reads.
"""
from __future__ import annotations

import contextlib
import functools
import warnings

from ..dispatch.ops_namespace import aten
from ..tensor import Tensor, make_alias, make_view
from . import forward_mode as _fw, grad_mode
from .grad_dtype import edge_target
from .meta import IN_CUSTOM_FUNCTION, AutogradMeta, ViewAutogradMeta
from .node import Node, SavedTensor, edge_of

_NO_FORWARD_LEVEL = contextlib.nullcontext()   # forward runs below forward AD only while a dual level is open


class FunctionCtx:
    """The ``ctx`` of a custom Function: saved tensors and flags."""

    def save_for_backward(self, *tensors):
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward can only save variables, but argument {i} is of type "
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
    _cls = None

    def apply(self, grads):
        cls = self._cls
        outs = self._out_meta
        if len(grads) < len(outs):
            grads = tuple(grads) + (None,) * (len(outs) - len(grads))
        if self._materialize:
            grads = tuple(aten.zeros.default(list(shape), dtype=dtype, device=device) if g is None else g
                          for g, (shape, dtype, device) in zip(grads, outs))
        r = cls.backward(self, *grads)
        if not isinstance(r, tuple):
            r = (r,)
        return self._check_grads(r)

    def _check_grads(self, r):
        """torch's checks on what backward returned: count, non-tensor inputs, shapes (summed if broadcast)."""
        name = self.name()
        inputs = self._inputs
        n_inputs = len(inputs)
        if len(r) != n_inputs:
            if len(r) < n_inputs or any(x is not None for x in r[n_inputs:]):
                raise RuntimeError(f"function {name} returned an incorrect number of gradients (expected "
                                   f"{n_inputs}, got {len(r)})")
            r = r[:n_inputs]
        out = []
        for i, (g, meta) in enumerate(zip(r, inputs)):
            if meta is None:
                if g is not None:
                    raise RuntimeError(f"function {name} returned a gradient different than None at position "
                                       f"{i + 1}, but the corresponding forward input was not a Variable")
                continue
            if g is not None:
                shape, dtype, device = meta
                if tuple(g.shape) != shape:
                    g = _reduce_to(g, shape, name, i)
                if g.dtype is not dtype:
                    target = edge_target(self, inputs, i, dtype)       # a leaf's grad_dtype, if set
                    if target is not None and g.dtype is not target:
                        g = aten._to_copy.default(g, dtype=target)
                if g._device is not device:
                    raise RuntimeError(f"Function {name} returned an invalid gradient at index {i} - expected "
                                       f"device {device} but got {g.device}")
            out.append(g)
        return tuple(out)

    @property
    def saved_tensors(self):
        saved = self._saved_list
        if saved is None:
            return ()
        return tuple(s.unpack(self) if s is not None else None for s in saved)

    def release(self):
        Node.release(self)
        if self._saved_list:
            for s in self._saved_list:
                if s is not None:
                    s.release()

    @property
    def needs_input_grad(self):
        return self._needs

    def name(self):
        return f"{self._cls.__name__}Backward"


def _reduce_to(g, shape, name, i):
    """A broadcast gradient summed back to ``shape``; any other mismatch is torch's error."""
    gs = tuple(g.shape)
    lead = len(gs) - len(shape)
    ok = lead >= 0 and all(s == 1 or s == gs[lead + k] for k, s in enumerate(shape))
    if not ok:
        raise RuntimeError(f"Function {name} returned an invalid gradient at index {i} - got {list(gs)} but "
                           f"expected shape compatible with {list(shape)}")
    from .formulas_elementwise import sum_to
    return sum_to(g, shape)


class FunctionMeta(type):
    def __init__(cls, name, bases, attrs):
        super().__init__(name, bases, attrs)
        cls._backward_cls = type(f"{name}Backward", (BackwardCFunction,), {"__slots__": (), "_cls": cls})


class Function(metaclass=FunctionMeta):
    """Subclass and define ``forward(ctx, ...)`` and ``backward(ctx, *grad_outputs)`` as staticmethods."""

    def __init__(self, *args, **kwargs):
        warnings.warn(f"{type(self)} should not be instantiated. Methods on autograd functions are all static, so "
                      f"you should invoke them on the class itself. Instantiating an autograd function will raise "
                      f"an error in a future version of PyTorch.", DeprecationWarning, stacklevel=2)

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Legacy autograd function with non-static forward method is deprecated. Please use new-"
                           "style autograd function with static forward method. (Example: "
                           "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    vjp = backward

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError("You must implement the jvp function for custom autograd.Function to use it with "
                                  "forward mode AD.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @classmethod
    def apply(cls, *args, **kwargs):
        node = cls._backward_cls()
        node._to_save = None
        node._dirty = ()
        node._non_differentiable = ()
        node._materialize = True
        node._saved_list = None
        node._inputs = tuple((tuple(a.shape), a.dtype, a._device) if isinstance(a, Tensor) else None for a in args)
        tensors = [a for a in args if isinstance(a, Tensor)]
        node._needs = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
        record = grad_mode.tls.enabled and any(node._needs)
        custom_setup = cls.setup_context is not Function.setup_context
        dual = _fw.ON[0] and _fw.any_tangent(args)   # forward AD: forward runs below it, then cls.jvp
        with grad_mode.no_grad(), _fw.disabled() if _fw.ON[0] else _NO_FORWARD_LEVEL:
            if custom_setup:
                out = cls.forward(*args, **kwargs)
                cls.setup_context(node, args, out)
            else:
                out = cls.forward(node, *args, **kwargs)
        is_tuple = isinstance(out, tuple)
        outs = out if is_tuple else (out,)
        if not record:
            return _fw.custom_function_jvp(cls, node, args, out) if dual else out
        node._next = tuple(edge_of(t) for t in tensors)
        non_diff = {id(t) for t in node._non_differentiable}
        dirty = {id(t) for t in node._dirty}
        result = []
        meta = []
        for i, o in enumerate(outs):
            if isinstance(o, Tensor):
                meta.append((tuple(o.shape), o.dtype, o._device))
                if id(o) not in non_diff and (o.is_floating_point() or o.is_complex()):
                    o = _attach_output(node, o, i, tensors, id(o) in dirty)
            else:
                meta.append(None)
            result.append(o)
        node._out_meta = tuple(m if m is not None else ((), None, None) for m in meta)
        if node._to_save is not None:
            saved = []
            for t in node._to_save:
                if t is None:
                    saved.append(None)
                    continue
                nr = next((k for k, r in enumerate(result) if r is t), None)
                saved.append(SavedTensor(t, is_output=nr is not None, node=node, output_nr=nr or 0))
            node._saved_list = saved
            node._to_save = None
        result = tuple(result) if is_tuple else result[0]
        return _fw.custom_function_jvp(cls, node, args, result) if dual else result


def _attach_output(node, o, i, inputs, dirty):
    """Make ``o`` output ``i`` of ``node``; an input returned as-is becomes a view of it (torch's rule)."""
    if dirty:
        # the forward changed ``o`` in place (mark_dirty): its history becomes this node
        if o.is_leaf and o.requires_grad:
            raise RuntimeError("a leaf Variable that requires grad has been used in an in-place operation.")
        if o._base is not None:
            raise RuntimeError("a custom Function that modifies a view in place (mark_dirty on a view) is not "
                               "supported; modify the base instead")
    elif any(o is t for t in inputs):
        o = make_view(o._a, o)
    am = o._am
    if o._base is not None and not dirty:
        o._am = ViewAutogradMeta(o, o._base, True, node, i, IN_CUSTOM_FUNCTION)
    elif am is None:
        o._am = AutogradMeta(True, node, i)
    else:
        am.requires_grad, am.grad_fn, am.output_nr = True, node, i
    o._ks = o._device._grad_ks
    return o


class DelayedError(Node):
    """Stands for a backward that must not be differentiated: running it is the error."""

    __slots__ = ("_msg",)

    def apply(self, grads):
        raise RuntimeError(self._msg)


DelayedError.__name__ = DelayedError.__qualname__ = "Error"   # torch's node name


def once_differentiable(fn):
    """Mark a backward that cannot itself be differentiated (it runs with grad recording off)."""

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with grad_mode.no_grad():
            outputs = fn(ctx, *args)
        if not grad_mode.tls.enabled:
            return outputs
        # create_graph: the results require grad if the incoming gradients do, but differentiating them fails
        grads_in = [a for a in args if isinstance(a, Tensor) and a.requires_grad]
        if not grads_in:
            return outputs
        node = DelayedError()
        node._msg = "trying to differentiate twice a function that was marked with @once_differentiable"
        node._next = tuple(edge_of(a) for a in grads_in)
        single = not isinstance(outputs, tuple)
        res = []
        for i, o in enumerate((outputs,) if single else outputs):
            if isinstance(o, Tensor) and (o.is_floating_point() or o.is_complex()):
                o = make_alias(o._a, o)
                o._am = AutogradMeta(True, node, i)
                o._ks = o._device._grad_ks
            res.append(o)
        return res[0] if single else tuple(res)
    return wrapper
