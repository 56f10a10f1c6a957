"""Kernels of the complex ops: the parts as views (real, imag, view_as_real, view_as_complex), conjugation,
and building complex tensors (complex, polar).

npusim has no conjugate bit: ``conj`` of a complex tensor is a new, conjugated tensor (docs/complex.md), so
``is_conj`` and ``is_neg`` are always False and ``resolve_conj`` / ``resolve_neg`` return their input.
"""
from __future__ import annotations

import numpy as np

from ..core.c10 import dtype as D
from ..core.dispatch.ops_namespace import aten
from ..core.tensor import make_view
from ..kernels import complex as KX
from ..kernels.array_api import namespace_of
from . import common as C
from .views import strided_view


def _require_complex(self, what):
    if not self.is_complex():
        raise RuntimeError(what)


def real(self):
    """torch's composite: a real tensor itself, a complex one's real parts as a view (view_as_real's column 0)."""
    if not self.is_complex():
        return self
    return aten.select.int(aten.view_as_real.default(self), -1, 0)


def imag(self):
    _require_complex(self, "imag is not implemented for tensors with non-complex dtypes.")
    return aten.select.int(aten.view_as_real.default(self), -1, 1)


def view_as_real(self):
    _require_complex(self, "view_as_real is only supported for complex tensors")
    return make_view(KX.view_as_real(self._a, strided_view), self)


_PART_DTYPES = (D.float16, D.float32, D.float64)


def _check_view_as_complex(self):
    if self.dtype not in _PART_DTYPES:
        raise RuntimeError(f"view_as_complex is only supported for half, float and double tensors, but got a "
                           f"tensor of scalar type: {C.tname(self.dtype)}")
    a = self._a
    if a.ndim == 0:
        raise RuntimeError("Input tensor must have one or more dimensions")
    if a.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    if self.stride(-1) != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    for st in self.stride()[:-1]:
        if st % 2:
            raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    if self.storage_offset() % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")


def view_as_complex(self):
    _check_view_as_complex(self)
    a = self._a
    cdt = self.dtype.to_complex().np
    try:
        r = a.view(cdt)[..., 0]     # each (real, imag) pair read as one complex element
    except (ValueError, TypeError):
        # an array module that refuses the dtype view of a strided array: the first pair, restrided
        r = strided_view(a[(0,) * (a.ndim - 1)].view(cdt), a.shape[:-1], a.strides[:-1])
    return make_view(r, self)


def view_as_real_copy(self):
    return C.wrap(view_as_real(self)._a.copy(), self._device)


def view_as_complex_copy(self):
    return C.wrap(view_as_complex(self)._a.copy(), self._device)


def _copy_out(r, out):
    return C.finish_out(out, r._a, r.dtype, r._device)


def view_as_real_copy_out(self, *, out):
    return _copy_out(view_as_real_copy(self), out)


def view_as_complex_copy_out(self, *, out):
    return _copy_out(view_as_complex_copy(self), out)


# --- conjugation ------------------------------------------------------------------------------------------

def conj(self):
    """The conjugate: a real tensor itself (as torch), a complex one a new conjugated tensor (no conj bit)."""
    if not self.is_complex():
        return self
    return aten.conj_physical.default(self)


def adjoint(self):
    if self.dim() < 2:
        raise RuntimeError(f"tensor.adjoint() is only supported on matrices or batches of matrices. Got "
                           f"{self.dim()}-D tensor.")
    return conj(aten.transpose.int(self, -2, -1))


def conj_physical(self):
    return C.wrap(KX.conj(self._a) if self.is_complex() else self._a.copy(), self._device)


def conj_physical_out(self, *, out):
    r = conj_physical(self)
    return C.finish_out(out, r._a, r.dtype, r._device)


def conj_physical_(self):
    if self.is_complex():
        C.write_out(self, KX.conj(self._a))
    return self


def resolve_conj(self):
    return self      # npusim never leaves a conjugation pending


def resolve_neg(self):
    return self      # nor a negation


def is_conj(self):
    return False


def is_neg(self):
    return False


# --- building complex tensors --------------------------------------------------------------------------------

def _check_parts(a, b):
    da, db = a.dtype, b.dtype
    if da not in _PART_DTYPES or db not in _PART_DTYPES:
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got {C.tname(da)} and "
                           f"{C.tname(db)}")
    if da is not db:
        raise RuntimeError(f"Expected object of scalar type {C.tname(da)} but got scalar type {C.tname(db)} for "
                           f"second argument")
    return C.common_device(a, b)


def _from_parts(re, im, dt, dev):
    xp = namespace_of(re)
    re, im = xp.broadcast_arrays(re, im)
    r = xp.empty(re.shape, dt.to_complex().np)
    KX.real_part(r)[...] = re
    KX.imag_part(r)[...] = im
    return C.wrap(r, dev)


def complex_(real, imag):
    dev = _check_parts(real, imag)
    return _from_parts(real._a, imag._a, real.dtype, dev)


def polar(abs, angle):  # noqa: A002 - torch's parameter names
    dev = _check_parts(abs, angle)
    dt = abs.dtype
    xp = namespace_of(abs._a)
    work = np.float32 if dt is D.float16 else dt.np
    r, t = abs._a.astype(work), angle._a.astype(work)
    re, im = r * xp.cos(t), r * xp.sin(t)
    return _from_parts(re.astype(dt.np), im.astype(dt.np), dt, dev)


def complex_out(real, imag, *, out):
    r = complex_(real, imag)
    return C.finish_out(out, r._a, r.dtype, r._device)


def polar_out(abs, angle, *, out):  # noqa: A002
    r = polar(abs, angle)
    return C.finish_out(out, r._a, r.dtype, r._device)


KERNELS = {
    "view_as_real": view_as_real, "view_as_complex": view_as_complex,
    "view_as_real_copy": view_as_real_copy, "view_as_complex_copy": view_as_complex_copy,
    "view_as_real_copy.out": view_as_real_copy_out, "view_as_complex_copy.out": view_as_complex_copy_out,
    "conj_physical": conj_physical, "conj_physical.out": conj_physical_out, "conj_physical_": conj_physical_,
    "_conj_physical": conj_physical, "_conj_physical.out": conj_physical_out,
    "complex": complex_, "complex.out": complex_out, "polar": polar, "polar.out": polar_out,
}
# Ops that decompose into others (CompositeImplicitAutograd): autograd comes from the parts; those returning
# their input unchanged must not be kernels, which autograd would give a node of their own.
COMPOSITE_IMPLICIT = {
    "real": real, "imag": imag, "conj": conj, "_conj": conj, "adjoint": adjoint, "resolve_conj": resolve_conj,
    "resolve_neg": resolve_neg, "is_conj": is_conj, "is_neg": is_neg,
}
