"""``nn.Parameter`` and ``nn.Buffer``: tensors a Module registers when assigned."""
from __future__ import annotations

from ..core.pickling import reduce_tensor
from ..core.public_factories import empty
from ..core.tensor import Tensor, make_alias


class Parameter(Tensor):
    """A tensor that is a module parameter: it requires grad by default and shows as one."""

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): expected a Tensor for 'data', got {type(data).__name__}")
        if requires_grad and not data.is_floating_point():
            # torch's _make_subclass words it apart from requires_grad_()
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        t = make_alias(data._a, data.detach())
        t._st = data._st_of()
        t.__class__ = cls
        t.requires_grad_(requires_grad)
        return t

    def __init__(self, data=None, requires_grad=True):
        pass

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, proto):
        fn, args = reduce_tensor(self)
        return (_rebuild_parameter, (fn, args, self.requires_grad))

    @classmethod
    def _from_tensor_for_copy(cls, new, original):
        return cls(new, original.requires_grad)


def _rebuild_parameter(fn, args, requires_grad):
    return Parameter(fn(*args).detach(), requires_grad)


class _BufferMeta(type):
    # ``isinstance(t, Buffer)`` is True for any tensor Buffer() marked, as in torch.
    def __instancecheck__(cls, instance) -> bool:
        if cls is Buffer and isinstance(instance, Tensor) and getattr(instance, "_is_buffer", False):
            return True
        return super().__instancecheck__(instance)


class Buffer(Tensor, metaclass=_BufferMeta):
    """A tensor marked to be registered as a buffer when assigned to a Module attribute.

    ``Buffer(t)`` returns a detached alias of ``t`` (a plain Tensor) carrying the mark and
    its ``persistent`` flag, exactly as torch does.
    """

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            data = empty(0)
        t = data.detach().requires_grad_(data.requires_grad)
        t.persistent = persistent
        t._is_buffer = True
        return t


def is_lazy(param) -> bool:
    return False
