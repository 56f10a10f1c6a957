"""Tensor methods about a tensor's identity rather than its values: ``as_subclass``, ``const_data_ptr``,
``is_distributed``, ``name``; and ``npusim.is_distributed``."""
from __future__ import annotations

from ..core.dispatch.ops_namespace import aten
from ..core.tensor import Tensor
from .operators import _check_input


def as_subclass(self, cls):
    """as_subclass(cls) -> Tensor

    A ``cls`` instance over the same data as ``self``: changes to one show in the other, and the result stays
    attached to the autograd graph (an alias of ``self``, as torch's). ``cls`` must be a subclass of Tensor.
    """
    if not isinstance(cls, type):
        raise TypeError(f"cls must be a type (got {type(cls).__name__})")
    if not issubclass(cls, Tensor):
        raise TypeError("Creating a Tensor subclass from a class that does not inherit from Tensor is not possible. "
                        "Make sure your class inherits from Tensor.")
    r = aten.alias.default(self)
    r.__class__ = cls
    return r


def const_data_ptr(self) -> int:
    """The address of ``self``'s first element, for reading only (``data_ptr`` for writers)."""
    return self.data_ptr()


def is_distributed(self) -> bool:
    """False: a tensor here is never split over processes (torch's flag of the long-gone THD tensors)."""
    return False


def _name(self):
    # the name torch's JIT tracer gives a tensor in its graph; npusim traces nothing, so no tensor has one
    return None


def torch_is_distributed(input) -> bool:
    """is_distributed(input) -> bool

    Whether ``input`` is split over processes: never, for npusim's dense tensors.
    """
    _check_input(input, "is_distributed")
    return False


torch_is_distributed.__name__ = torch_is_distributed.__qualname__ = "is_distributed"

Tensor.as_subclass = as_subclass
Tensor.const_data_ptr = const_data_ptr
Tensor.is_distributed = is_distributed
Tensor.name = property(_name, doc="The name torch's JIT tracer gives a tensor: always None here (read-only).")

__all__ = ["torch_is_distributed"]
