"""``npusim.linalg.eig`` and ``npusim.linalg.eigvals``: eigenvalues and eigenvectors of general square matrices,
complex even for a real input, as torch's."""
from __future__ import annotations

from ..core.c10 import dtype as D
from ..core.dispatch.ops_namespace import aten
from ..core import return_types
from .operators import _copy_into

__all__ = ["eig", "eigvals"]

_EIG = return_types._make("linalg_eig", ("eigenvalues", "eigenvectors"))


def _check_out(fname, what, out, result):
    """torch's rule for out=: the result's complex dtype must cast to it safely (so it must be complex)."""
    if not out.dtype.is_complex or not D.can_cast(result.dtype, out.dtype):
        raise RuntimeError(f"torch.linalg.{fname}: Expected {what} to be safely castable from "
                           f"{D.SCALAR_TYPE_NAME[result.dtype]} dtype, but got {what} with dtype "
                           f"{D.SCALAR_TYPE_NAME[out.dtype]}")


def eig(A, *, out=None):  # noqa: N803 - torch's name
    """The eigenvalues and unit-norm eigenvectors of square matrices (A V = V diag(L)), complex valued."""
    values, vectors = aten.linalg_eig.default(A)
    if out is not None:
        _check_out("eig", "eigenvalues", out[0], values)
        _check_out("eig", "eigenvectors", out[1], vectors)
        values, vectors = _copy_into(out[0], values), _copy_into(out[1], vectors)
    return _EIG(values, vectors)


def eigvals(A, *, out=None):  # noqa: N803
    """The eigenvalues of square matrices, complex valued."""
    values = aten.linalg_eigvals.default(A)
    if out is None:
        return values
    _check_out("eigvals", "eigenvalues", out, values)
    return _copy_into(out, values)
