"""``Tensor.grad_dtype`` (torch 2.13): the dtype a leaf's gradient is kept in; see core/autograd/grad_dtype.py."""
from __future__ import annotations

from ..core.autograd.grad_dtype import effective
from ..core.c10.dtype import SCALAR_TYPE_NAME, dtype as _dtype
from ..core.tensor import Tensor


def _get(self):
    if not self.is_leaf:
        raise RuntimeError("grad_dtype can only be accessed on leaf tensors.")
    return effective(self)


def _set(self, value):
    if not self.is_leaf:
        raise RuntimeError("grad_dtype can only be set on leaf tensors.")
    if value is not None and not isinstance(value, _dtype):
        raise RuntimeError(f"grad_dtype must be a torch.dtype or None, but got {type(value).__name__}")
    grad = self._am.grad if self._am is not None else None
    if grad is not None and value is not None and grad.dtype is not value:
        raise RuntimeError(f"Cannot set grad_dtype to '{SCALAR_TYPE_NAME[value]}' because there is already a gradient "
                           f"with dtype '{_CPP_TYPE.get(grad.dtype.name, grad.dtype.name)}'. Please clear the "
                           f"gradient (.grad = None) before changing grad_dtype, or ensure the new grad_dtype matches "
                           f"the existing gradient's dtype.")
    if value is self.dtype:
        self.__dict__.pop("_grad_dtype", None)       # the default again
    else:
        self._grad_dtype = value


_CPP_TYPE = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16"}

Tensor.grad_dtype = property(_get, _set, doc="""The dtype of this leaf's gradient: incoming gradients are cast to
it (``None``: kept in any dtype). Defaults to the tensor's dtype; only leaves have one.""")
