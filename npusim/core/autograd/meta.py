"""Per-tensor autograd state (torch's AutogradMeta) and the rules for setting it.

Views made by differentiable view ops carry a ``ViewAutogradMeta``: it remembers
the base and the version counter they share, so that after the base (or another
view of it) is changed in place, the view's ``grad_fn`` is rebuilt to read its
gradient from the base's new history (torch's "view + inplace" rule).
"""
from __future__ import annotations

import warnings

from ..inference_tensors import INFERENCE_VC, REQUIRES_GRAD_MESSAGE, in_inference_mode
from ..tensor import Tensor

# How a view was made (torch's CreationMeta): only DEFAULT views may be modified in place under autograd.
DEFAULT, NO_GRAD_MODE, MULTI_OUTPUT_NODE, IN_CUSTOM_FUNCTION = range(4)


class AutogradMeta:
    __slots__ = ("requires_grad", "grad", "grad_fn", "output_nr", "retains_grad", "hooks", "grad_accumulator",
                 "post_accumulate_hooks", "fw_grads", "__weakref__")

    def __init__(self, requires_grad=False, grad_fn=None, output_nr=0):
        self.requires_grad = requires_grad
        self.grad = None
        self.grad_fn = grad_fn
        self.output_nr = output_nr
        self.retains_grad = False
        self.hooks = None
        self.grad_accumulator = None
        self.post_accumulate_hooks = None
        self.fw_grads = None   # forward-mode tangents: {level: tangent} (core/autograd/forward_mode.py)


class ViewAutogradMeta(AutogradMeta):
    """Autograd state of a differentiable view; ``grad_fn`` is rebuilt after in-place changes."""

    __slots__ = ("_fn", "base", "vc", "attr_version", "creation", "arr", "view_ref")

    def __init__(self, view, base, requires_grad, grad_fn, output_nr, creation):
        self.requires_grad = requires_grad
        self.grad = None
        self.output_nr = output_nr
        self.retains_grad = False
        self.hooks = None
        self.grad_accumulator = None
        self.post_accumulate_hooks = None
        self.fw_grads = None
        self.base = base
        vc = view._vc
        self.vc = vc
        self.attr_version = vc[0]
        self._fn = grad_fn
        self.creation = creation
        self.arr = view._a      # the view's array: its geometry within the base
        self.view_ref = None    # weak reference to the view, set by retain_grad

    @property
    def grad_fn(self):
        fn = self._fn
        if self.vc[0] == self.attr_version:
            return fn
        base_am = self.base._am
        if fn is None and (base_am is None or not base_am.requires_grad):
            return None
        from .inplace_views import regenerate_view_grad_fn
        return regenerate_view_grad_fn(self)

    @grad_fn.setter
    def grad_fn(self, fn):
        self._fn = fn
        self.attr_version = self.vc[0]


def set_requires_grad(t, flag, *, attribute=False) -> None:
    """``t.requires_grad_(flag)`` (or, with ``attribute``, ``t.requires_grad = flag``: torch words its error apart)."""
    flag = bool(flag)
    am = t._am
    if am is not None and am.grad_fn is not None:
        if not flag:
            raise RuntimeError("you can only change requires_grad flags of leaf variables. If you want to use a "
                               "computed variable in a subgraph that doesn't require differentiation use "
                               "var_no_grad = var.detach().")
        return
    if flag and t._vc is INFERENCE_VC and not in_inference_mode():
        raise RuntimeError(REQUIRES_GRAD_MESSAGE)
    if flag and not (t.is_floating_point() or t.is_complex()):
        raise RuntimeError("only Tensors of floating point and complex dtype can require gradients" if attribute
                           else "only Tensors of floating point dtype can require gradients")
    if am is None:
        if not flag:
            return
        am = t._am = AutogradMeta()
    am.requires_grad = flag
    t._ks = t._device._grad_ks if flag else t._device._ks


def read_grad(t):
    am = t._am
    if am.grad_fn is not None and not am.retains_grad:
        warnings.warn(
            "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute "
            "won't be populated during autograd.backward(). If you indeed want the .grad field to be populated "
            "for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor "
            "by mistake, make sure you access the leaf Tensor instead. See "
            "github.com/pytorch/pytorch/pull/30531 for more informations.", UserWarning, stacklevel=3)
    return am.grad


def write_grad(t, value) -> None:
    if value is not None:
        if not isinstance(value, Tensor):
            raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type "
                            f"{type(value).__name__}")
        if value._device is not t._device:
            raise RuntimeError("assigned grad has data located on a different device")
        if value._a.dtype != t._a.dtype or hasattr(t, "_grad_dtype"):
            from .grad_dtype import check_assigned
            check_assigned(t, value)
        if value._a.shape != t._a.shape:
            raise RuntimeError("assigned grad has data of a different size")
    am = t._am
    if am is None:
        if value is None:
            return
        am = t._am = AutogradMeta()
    am.grad = value
