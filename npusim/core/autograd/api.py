"""``npusim.autograd.backward`` / ``grad`` and the Tensor methods that start a backward pass."""
from __future__ import annotations

import numpy as np

import weakref

from ..dispatch.ops_namespace import aten
from ..tensor import Tensor
from . import engine
from .meta import ViewAutogradMeta, set_requires_grad
from .node import RemovableHandle


def _as_tuple(x):
    if x is None:
        return None
    if isinstance(x, Tensor):
        return (x,)
    return tuple(x)


def _make_grads(outputs, grads):
    """One gradient per output: given ones checked (shape) and cast to the output's dtype, missing ones made."""
    grads = (None,) * len(outputs) if grads is None else grads
    if len(grads) != len(outputs):
        raise RuntimeError(f"got {len(outputs)} tensors and {len(grads)} gradients")
    out = []
    for i, (o, g) in enumerate(zip(outputs, grads)):
        if g is None:
            if o.requires_grad:
                if o.numel() != 1:
                    raise RuntimeError("grad can be implicitly created only for scalar outputs")
                if not o.is_floating_point():
                    raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got "
                                       f"{o.dtype}")
                g = aten.ones_like.default(o, memory_format="preserve_format")
            out.append(g)
            continue
        if not isinstance(g, Tensor):
            raise TypeError(f"gradients can be either Tensors or None, but got {type(g).__name__}")
        if g._a.shape != o._a.shape:
            raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {g.shape} and output[{i}] has a "
                               f"shape of {o.shape}.")
        if g._a.dtype != o._a.dtype and (o.is_complex() or g.is_complex()):
            raise RuntimeError(f"For complex Tensors, both grad_output and output are required to have the same "
                               f"dtype. Mismatch in dtype: grad_output[{i}] has a dtype of {g.dtype} and output[{i}] "
                               f"has a dtype of {o.dtype}.")
        if g._a.dtype != o._a.dtype and o.is_floating_point():
            g = aten._to_copy.default(g, dtype=o.dtype)   # torch casts a gradient to its output's dtype
        out.append(g)
    return out


def _check_inputs(inputs):
    for t in inputs:
        if not isinstance(t, Tensor):
            raise RuntimeError(f"all inputs have to be Tensors or GradientEdges, but got {type(t).__name__}")


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None,
             inputs=None):
    """Accumulate gradients of ``tensors`` into the ``.grad`` of the leaves that require them."""
    tensors = _as_tuple(tensors)
    if grad_variables is not None:
        grad_tensors = grad_variables
    inputs = _as_tuple(inputs)
    if inputs is not None:
        if len(inputs) == 0:
            raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
        _check_inputs(inputs)
    grads = _make_grads(tensors, _as_tuple(grad_tensors))
    if retain_graph is None:
        retain_graph = create_graph
    engine.run_backward(tensors, grads, retain_graph=retain_graph, create_graph=create_graph, inputs=inputs,
                        accumulate=True, allow_unused=True)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """The gradients of ``outputs`` with respect to ``inputs``, returned (not accumulated)."""
    outputs = _as_tuple(outputs)
    inputs = _as_tuple(inputs)
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, but got: "
                         "allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    if len(inputs) == 0:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    _check_inputs(inputs)
    if is_grads_batched:
        raise NotImplementedError("is_grads_batched=True is not supported")
    grads = _make_grads(outputs, _as_tuple(grad_outputs))
    if retain_graph is None:
        retain_graph = create_graph
    res = engine.run_backward(outputs, grads, retain_graph=retain_graph, create_graph=create_graph, inputs=inputs,
                              accumulate=False, allow_unused=allow_unused)
    if materialize_grads:
        res = [aten.zeros_like.default(t, memory_format="preserve_format") if r is None else r
               for t, r in zip(inputs, res)]
    return tuple(res)


# --- Tensor methods --------------------------------------------------------------------------------------

def tensor_backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    backward(self, gradient, retain_graph, create_graph, inputs=inputs)


def register_hook(self, hook):
    """``hook(grad)`` runs when this tensor's gradient is computed; it may return a replacement."""
    if not self.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    am = self._am
    if am.grad_fn is None:
        if am.hooks is None:
            am.hooks = []
        am.hooks.append(hook)
        return RemovableHandle(am.hooks, hook)
    fn = am.grad_fn
    if fn._tensor_pre_hooks is None:
        fn._tensor_pre_hooks = {}
    lst = fn._tensor_pre_hooks.setdefault(am.output_nr, [])
    lst.append(hook)
    return RemovableHandle(lst, hook)


def register_post_accumulate_grad_hook(self, hook):
    if not self.is_leaf:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    if not self.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    am = self._am
    if am.post_accumulate_hooks is None:
        am.post_accumulate_hooks = []
    am.post_accumulate_hooks.append(hook)
    return RemovableHandle(am.post_accumulate_hooks, hook)


def retain_grad(self):
    if not self.requires_grad:
        raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
    am = self._am
    if am.grad_fn is None:
        return
    am.retains_grad = True
    ref = weakref.ref(self)
    if am.__class__ is ViewAutogradMeta:
        am.view_ref = ref   # a rebuilt grad_fn takes the retained gradient over
    fn = am.grad_fn
    if fn._retains is None:
        fn._retains = {}
    fn._retains[am.output_nr] = ref


def _get_requires_grad(self):
    am = self._am
    return am is not None and am.requires_grad


def _set_requires_grad(self, value):
    set_requires_grad(self, value, attribute=True)


def requires_grad_(self, requires_grad=True):
    # replaces Tensor's own method, which imports autograd lazily on every call
    if requires_grad.__class__ is not bool and not isinstance(requires_grad, np.bool_):
        raise TypeError(f"requires_grad_(): argument 'requires_grad' (position 1) must be bool, not "
                        f"{type(requires_grad).__name__}")
    set_requires_grad(self, requires_grad)
    return self


Tensor.requires_grad = property(_get_requires_grad, _set_requires_grad, doc="Whether gradients are recorded.")
Tensor.requires_grad_ = requires_grad_
Tensor.backward = tensor_backward
Tensor.register_hook = register_hook
Tensor.register_post_accumulate_grad_hook = register_post_accumulate_grad_hook
Tensor.retain_grad = retain_grad
