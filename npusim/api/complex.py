"""torch's complex-number functions and Tensor methods: the parts (real, imag, view_as_real / view_as_complex
and their copies), conjugation (conj, conj_physical, resolve_conj...), adjoint, polar and complex, and the
complex dtype conversions (``Tensor.cfloat()`` & co.).
"""
from __future__ import annotations

from ..core.c10 import dtype as D
from ..core.dispatch.ops_namespace import aten
from ..core.tensor import Tensor

__all__ = ["real", "imag", "view_as_real", "view_as_complex", "view_as_real_copy", "view_as_complex_copy",
           "conj", "conj_physical", "conj_physical_", "resolve_conj", "resolve_neg", "is_conj", "is_neg",
           "adjoint", "polar", "complex", "is_complex"]


def _tensor_arg(fname, value, name="input", pos=1):
    if not isinstance(value, Tensor):
        raise TypeError(f"{fname}(): argument '{name}' (position {pos}) must be Tensor, not {type(value).__name__}")


def is_complex(input):
    """Whether ``input``'s dtype is a complex one (complex32, complex64 or complex128)."""
    _tensor_arg("is_complex", input)
    return input.is_complex()


def real(input):
    """The real part of ``input``: a view into a complex tensor, or ``input`` itself when it is real."""
    _tensor_arg("real", input)
    return aten.real.default(input)


def imag(input):
    """The imaginary part of a complex ``input``, as a view of its memory."""
    _tensor_arg("imag", input)
    return aten.imag.default(input)


def view_as_real(input):
    """A complex tensor viewed as a real one with a last dimension of size 2 (real, imaginary)."""
    _tensor_arg("view_as_real", input)
    return aten.view_as_real.default(input)


def view_as_complex(input):
    """A real tensor with a last dimension of size 2 (stride 1) viewed as a complex one."""
    _tensor_arg("view_as_complex", input)
    return aten.view_as_complex.default(input)


def view_as_real_copy(input, *, out=None):
    """``view_as_real`` as a new tensor."""
    _tensor_arg("view_as_real_copy", input)
    if out is not None:
        return aten.view_as_real_copy.out(input, out=out)
    return aten.view_as_real_copy.default(input)


def view_as_complex_copy(input, *, out=None):
    """``view_as_complex`` as a new tensor."""
    _tensor_arg("view_as_complex_copy", input)
    if out is not None:
        return aten.view_as_complex_copy.out(input, out=out)
    return aten.view_as_complex_copy.default(input)


def conj(input):
    """The complex conjugate: ``input`` itself when it is real; a new conjugated tensor when it is complex
    (npusim has no lazy conjugate bit: docs/complex.md)."""
    _tensor_arg("conj", input)
    return aten.conj.default(input)


def conj_physical(input, *, out=None):
    """The complex conjugate, always computed into a new tensor (a copy for real inputs)."""
    _tensor_arg("conj_physical", input)
    if out is not None:
        return aten.conj_physical.out(input, out=out)
    return aten.conj_physical.default(input)


def conj_physical_(input):
    """Conjugate ``input`` in place (nothing to do for a real tensor)."""
    _tensor_arg("conj_physical_", input)
    return aten.conj_physical_.default(input)


def resolve_conj(input):
    """``input`` with any pending conjugation applied: npusim never leaves one pending, so ``input`` itself."""
    _tensor_arg("resolve_conj", input)
    return aten.resolve_conj.default(input)


def resolve_neg(input):
    """``input`` with any pending negation applied: npusim never leaves one pending, so ``input`` itself."""
    _tensor_arg("resolve_neg", input)
    return aten.resolve_neg.default(input)


def is_conj(input):
    """Whether ``input`` carries a pending conjugation (never, in npusim)."""
    _tensor_arg("is_conj", input)
    return aten.is_conj.default(input)


def is_neg(input):
    """Whether ``input`` carries a pending negation (never, in npusim)."""
    _tensor_arg("is_neg", input)
    return aten.is_neg.default(input)


def adjoint(input):
    """The conjugate transpose of the last two dimensions."""
    _tensor_arg("adjoint", input)
    return aten.adjoint.default(input)


def polar(abs, angle, *, out=None):  # noqa: A002 - torch's parameter names
    """The complex tensor ``abs * (cos(angle) + i sin(angle))``."""
    _tensor_arg("polar", abs, "abs", 1)
    _tensor_arg("polar", angle, "angle", 2)
    if out is not None:
        return aten.polar.out(abs, angle, out=out)
    return aten.polar.default(abs, angle)


def complex(real, imag, *, out=None):  # noqa: A001 - torch's name
    """The complex tensor ``real + i imag`` (both half, float or double, of one dtype)."""
    _tensor_arg("complex", real, "real", 1)
    _tensor_arg("complex", imag, "imag", 2)
    if out is not None:
        return aten.complex.out(real, imag, out=out)
    return aten.complex.default(real, imag)


# --- Tensor methods and properties --------------------------------------------------------------------------

def _real_get(self):
    return aten.real.default(self)


def _real_set(self, value):
    aten.real.default(self).copy_(value) if isinstance(value, Tensor) else aten.real.default(self).fill_(value)


def _imag_get(self):
    return aten.imag.default(self)


def _imag_set(self, value):
    aten.imag.default(self).copy_(value) if isinstance(value, Tensor) else aten.imag.default(self).fill_(value)


Tensor.real = property(_real_get, _real_set, doc="The real part (a view for complex tensors).")
Tensor.imag = property(_imag_get, _imag_set, doc="The imaginary part of a complex tensor, as a view.")


def _conversion(name, dt):
    def convert(self, memory_format="preserve_format"):
        return self.to(dt, memory_format=memory_format)
    convert.__name__ = convert.__qualname__ = name
    convert.__doc__ = f"``self.to({dt})``."
    return convert


for _name, _dt in (("cfloat", D.complex64), ("cdouble", D.complex128), ("chalf", D.complex32)):
    setattr(Tensor, _name, _conversion(_name, _dt))

for _name in ("conj", "conj_physical", "conj_physical_", "resolve_conj", "resolve_neg", "is_conj", "is_neg",
              "adjoint"):
    setattr(Tensor, _name, globals()[_name])
