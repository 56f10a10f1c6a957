"""``nn.Parameter`` and ``nn.Buffer``: tensors a Module registers when assigned."""
from __future__ import annotations

import sys

from ..core.pickling import reduce_tensor
from ..api.factories import empty
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


_RAW_A = Tensor._a  # the slot itself: the uninitialized classes below shadow ``_a`` to refuse use


def _caller_op_name() -> str:
    # The aten operator (its generated dispatch frame) or else the function that reached for the data.
    f = sys._getframe(2)
    first = f.f_code.co_name
    while f is not None:
        if f.f_code.co_filename.startswith("<dispatch "):
            return f"<built-in function {f.f_code.co_name}>"
        f = f.f_back
    return f"<function {first}>"


class UninitializedTensorMixin:
    """A parameter or buffer with no shape yet: only dtype/device changes, copies and ``materialize`` work."""

    def _uninitialized_data(self):
        raise ValueError(
            f"Attempted to use an uninitialized parameter in {_caller_op_name()}. This error happens when you are "
            f"using a `LazyModule` or explicitly manipulating `npusim.nn.parameter.{type(self).__name__}` objects. "
            "When using LazyModules Call `forward` with a dummy batch to initialize the parameters before calling "
            "npusim functions")

    # Every kernel reads a tensor's array through ``_a``; refusing it here refuses every operator.
    _a = property(_uninitialized_data, lambda self, value: _RAW_A.__set__(self, value))

    def _raw(self) -> Tensor:
        """The (empty) data as a plain tensor: what the allowed methods act on."""
        return make_alias(_RAW_A.__get__(self), self)

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Give the tensor data of ``shape`` (uninitialised values) and turn it into ``cls_to_become``."""
        raw = self._raw()
        if device is None:
            device = raw.device
        if dtype is None:
            dtype = raw.dtype
        self.data = empty(shape, device=device, dtype=dtype)
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError(
            "Can't access the shape of an uninitialized parameter or buffer. This error usually happens in "
            "`load_state_dict` when trying to load an uninitialized parameter into an initialized one. Call "
            "`forward` to initialize the parameters before accessing their attributes.")

    def share_memory_(self):
        raise RuntimeError(
            "Can't share memory on an uninitialized parameter or buffer. Call `forward` to initialize the "
            "parameters before calling `module.share_memory()`.")

    def __repr__(self) -> str:
        return f"<{self.__class__.__name__}>"

    def __reduce_ex__(self, proto):
        return (self.__class__, (self.requires_grad,))

    # torch's allowed methods and attributes: they act on the empty data.
    @property
    def data(self):
        return self._raw()

    @data.setter
    def data(self, value):
        Tensor.data.__set__(self, value._raw() if is_lazy(value) else value)

    @property
    def dtype(self):
        return self._raw().dtype

    def size(self, dim=None):
        return self._raw().size(dim)

    def dim(self):
        return self._raw().dim()

    def is_floating_point(self):
        return self._raw().is_floating_point()

    def is_complex(self):
        return False

    def _converted(self, new):
        # like torch, a conversion keeps the class: an uninitialized tensor with the new dtype/device
        if _RAW_A.__get__(new) is _RAW_A.__get__(self) and new.device == self.device:
            return self
        out = type(self).__new__(type(self), self.requires_grad, new.device, new.dtype)
        return out

    def to(self, *args, **kwargs):
        return self._converted(self._raw().to(*args, **kwargs))

    def cpu(self, *args, **kwargs):
        return self._converted(self._raw().cpu(*args, **kwargs))

    def half(self):
        return self._converted(self._raw().half())

    def float(self):
        return self._converted(self._raw().float())

    def double(self):
        return self._converted(self._raw().double())

    def bfloat16(self):
        return self._converted(self._raw().bfloat16())

    def copy_(self, src, non_blocking=False):
        self._raw().copy_(src._raw() if is_lazy(src) else src, non_blocking)
        return self


def is_lazy(param) -> bool:
    """Whether ``param`` is an ``UninitializedParameter`` or ``UninitializedBuffer``."""
    return isinstance(param, UninitializedTensorMixin)


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A parameter whose shape is not known yet (a lazy module's); ``materialize`` turns it into a Parameter."""

    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        data = empty(0, device=device, dtype=dtype)
        t = make_alias(data._a, data)
        t.__class__ = cls
        t.requires_grad_(requires_grad)
        return t

    def __init__(self, requires_grad=True, device=None, dtype=None):
        pass

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        raw = self._raw()
        result = type(self)(self.requires_grad, raw.device, raw.dtype)
        memo[id(self)] = result
        return result


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer whose shape is not known yet (a lazy module's); ``materialize`` turns it into a Tensor."""

    cls_to_become = Tensor

    def __new__(cls, requires_grad=False, device=None, dtype=None, persistent=True):
        data = empty(0, device=device, dtype=dtype)
        t = make_alias(data._a, data)
        t.__class__ = cls
        t.requires_grad_(requires_grad)
        t.persistent = persistent
        t._is_buffer = True
        return t

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        raw = self._raw()
        result = type(self)(self.requires_grad, raw.device, raw.dtype, self.persistent)
        memo[id(self)] = result
        return result
