"""The top-level linear-algebra functions torch keeps (``npusim.det``, ``npusim.svd``...) and their Tensor methods,
plus the named tuples of the decompositions."""
from __future__ import annotations

from ..core import return_types
from .operators import _check_input as _check
from ..core.dispatch.ops_namespace import aten
from ..core.tensor import Tensor

__all__ = ["det", "logdet", "slogdet", "inverse", "pinverse", "matrix_power", "cholesky", "cholesky_solve",
           "cholesky_inverse", "qr", "svd", "triangular_solve", "lu", "lu_solve", "orgqr", "matrix_exp"]

_NAMED = {
    "slogdet": ("sign", "logabsdet"), "linalg_slogdet": ("sign", "logabsdet"),
    "linalg_inv_ex": ("inverse", "info"), "linalg_solve_ex": ("result", "info"),
    "linalg_cholesky_ex": ("L", "info"), "linalg_qr": ("Q", "R"), "qr": ("Q", "R"),
    "linalg_eigh": ("eigenvalues", "eigenvectors"), "linalg_svd": ("U", "S", "Vh"), "svd": ("U", "S", "V"),
    "linalg_lstsq": ("solution", "residuals", "rank", "singular_values"),
    "triangular_solve": ("solution", "cloned_coefficient"), "linalg_lu_factor": ("LU", "pivots"),
    "linalg_lu_factor_ex": ("LU", "pivots", "info"), "linalg_lu": ("P", "L", "U"), "lu_unpack": ("P", "L", "U"),
}
NAMED_TUPLES = {name: return_types._make(name, fields) for name, fields in _NAMED.items()}


def det(input):  # noqa: A002 - torch's argument names
    _check(input, "det")
    return aten.det.default(input)


def logdet(input):  # noqa: A002
    _check(input, "logdet")
    return aten.logdet.default(input)


def slogdet(input):  # noqa: A002
    _check(input, "slogdet")
    return NAMED_TUPLES["slogdet"](*aten.slogdet.default(input))


def inverse(input):  # noqa: A002
    _check(input, "inverse")
    return aten.inverse.default(input)


def pinverse(input, rcond=1e-15):  # noqa: A002
    _check(input, "pinverse")
    return aten.pinverse.default(input, rcond)


def matrix_power(input, n):  # noqa: A002
    _check(input, "matrix_power")
    return aten.matrix_power.default(input, n)


def cholesky(input, upper=False):  # noqa: A002
    _check(input, "cholesky")
    return aten.cholesky.default(input, upper)


def cholesky_solve(input, input2, upper=False):  # noqa: A002
    _check(input, "cholesky_solve")
    return aten.cholesky_solve.default(input, input2, upper)


def cholesky_inverse(input, upper=False):  # noqa: A002
    _check(input, "cholesky_inverse")
    return aten.cholesky_inverse.default(input, upper)


def qr(input, some=True):  # noqa: A002
    _check(input, "qr")
    return NAMED_TUPLES["qr"](*aten.qr.default(input, some))


def svd(input, some=True, compute_uv=True):  # noqa: A002
    _check(input, "svd")
    return NAMED_TUPLES["svd"](*aten.svd.default(input, some, compute_uv))


def triangular_solve(input, A, upper=True, transpose=False, unitriangular=False):  # noqa: A002, N803
    _check(input, "triangular_solve")
    return NAMED_TUPLES["triangular_solve"](*aten.triangular_solve.default(input, A, upper, transpose, unitriangular))


def lu(A, pivot=True, get_infos=False):  # noqa: N803
    """The packed LU factors and the pivots (and the infos when ``get_infos``); a singular matrix does not
    raise."""
    lu_, piv, info = aten.linalg_lu_factor_ex.default(A, pivot=pivot)
    return (lu_, piv, info) if get_infos else (lu_, piv)


def lu_solve(input, LU_data, LU_pivots):  # noqa: A002, N803
    _check(input, "lu_solve")
    return aten.lu_solve.default(input, LU_data, LU_pivots)


def orgqr(input, tau):  # noqa: A002
    _check(input, "orgqr")
    return aten.orgqr.default(input, tau)


def matrix_exp(input):  # noqa: A002
    _check(input, "matrix_exp")
    return aten.matrix_exp.default(input)


for _name in __all__:
    setattr(Tensor, _name, globals()[_name])


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):  # noqa: N803 - not a Tensor method
    """P, L, U with A = P L U from the packed LU factors and pivots of ``linalg.lu_factor``."""
    return NAMED_TUPLES["lu_unpack"](*aten.lu_unpack.default(LU_data, LU_pivots, unpack_data, unpack_pivots))


__all__ += ["lu_unpack"]
