"""``npusim.linalg``: torch.linalg's norms, products, decompositions and solvers, as thin wrappers over the aten ops."""
from __future__ import annotations

import math

from ..core.c10 import dtype as D
from .operators import _copy_into, matmul
from ..core.linalg_errors import LinAlgError
from .linear_algebra import NAMED_TUPLES
from ..core.dispatch.ops_namespace import aten
from ..core.tensor import _wrap_dim

__all__ = ["vector_norm", "matrix_norm", "norm", "vecdot", "matmul", "cross", "det", "slogdet", "inv", "inv_ex",
           "solve", "solve_ex", "cholesky", "cholesky_ex", "qr", "eigh", "eigvalsh", "svd", "svdvals", "pinv",
           "matrix_rank", "matrix_power", "lstsq", "multi_dot", "LinAlgError", "solve_triangular", "lu_factor",
           "lu_factor_ex", "lu", "lu_solve", "householder_product", "matrix_exp", "diagonal", "vander", "tensorinv",
           "tensorsolve", "cond"]

from .linalg_eig import eig, eigvals  # noqa: E402  (general square matrices: complex results)
__all__ += ["eig", "eigvals"]


def _dims(dim):
    """An int or a sequence of ints as a list (None stays None)."""
    if dim is None:
        return None
    return [dim] if isinstance(dim, int) else list(dim)


def _finish(r, out):
    return r if out is None else _copy_into(out, r)


def _check_float(x, fname):
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        raise RuntimeError(f"linalg.{fname}: Expected a floating point or complex tensor as input. Got "
                           f"{D.SCALAR_TYPE_NAME[x.dtype]}")


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):  # noqa: A002 - torch's names
    """The ``ord``-norm of ``x`` over ``dim`` (every element when None), computed in ``dtype`` when given."""
    return _finish(aten.linalg_vector_norm.default(x, ord, _dims(dim), keepdim, dtype=dtype), out)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):  # noqa: A002, N803
    """The ``ord``-norm of the matrices over the two dims ``dim``: 'fro', 'nuc', 1, -1, 2, -2, inf or -inf."""
    if A.dim() < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    if isinstance(ord, str):
        if ord not in ("fro", "nuc"):
            raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    elif abs(ord) not in (1, 2, math.inf):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord:g} not supported.")
    dims = list(dim)
    if len(dims) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(str(d) for d in dims)}")
    d0, d1 = _wrap_dim(dims[0], A.dim()), _wrap_dim(dims[1], A.dim())
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dims[0]}, {dims[1]})")
    _check_float(A, "matrix_norm")
    if ord == "fro":
        r = aten.linalg_vector_norm.default(A, 2, [d0, d1], keepdim, dtype=dtype)
    elif ord == "nuc" or abs(ord) == 2:
        if A.dtype in (D.float16, D.bfloat16):   # checked on A itself: a wider dtype= does not help, as in torch
            raise RuntimeError(f"linalg.matrix_norm: Low precision dtypes not supported. Got "
                               f"{D.SCALAR_TYPE_NAME[A.dtype]}")
        # the singular values of the matrices moved to the last two dims
        rest = [i for i in range(A.dim()) if i not in (d0, d1)]
        moved = A.permute(rest + [d0, d1])
        if dtype is not None:
            moved = moved.to(dtype)
        s = svdvals(moved)
        r = s.sum(-1) if ord == "nuc" else (s.amax(-1) if ord == 2 else s.amin(-1))
        if keepdim:
            for d in sorted((d0, d1)):
                r = r.unsqueeze(d)
    else:
        # 1-norms: the largest (or smallest) column sum of |A|; inf-norms the same over rows
        if abs(ord) == math.inf:
            d0, d1 = d1, d0
        if not keepdim and d0 < d1:
            d1 -= 1   # the sum below removes d0 first
        sums = aten.linalg_vector_norm.default(A, 1, [d0], keepdim, dtype=dtype)
        if ord > 0 and sums.shape[d1] == 0:
            r = aten.sum.dim_IntList(sums, [d1], keepdim)   # torch's largest of no sums is 0 (the smallest fails)
        else:
            r = (aten.amax.default if ord > 0 else aten.amin.default)(sums, [d1], keepdim)
    return _finish(r, out)


def norm(A, ord=None, dim=None, keepdim=False, *, out=None, dtype=None):  # noqa: A002, N803
    """A vector norm, or a matrix norm when ``ord`` is given for two dims (or for a 2-D input without ``dim``)."""
    dims = _dims(dim)
    if dims is not None:
        if len(dims) not in (1, 2):
            raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got {dims}")
    elif ord is not None and A.dim() not in (1, 2):
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got "
                           f"{A.dim()}D.")
    if isinstance(ord, str) or (ord is not None and (dims is None and A.dim() == 2 or dims is not None and
                                                      len(dims) == 2)):
        return matrix_norm(A, ord, [0, 1] if dims is None else dims, keepdim, dtype=dtype, out=out)
    return vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype, out=out)


def vecdot(x, y, *, dim=-1, out=None):
    """The dot products of the vectors along ``dim`` (the other dims broadcast)."""
    if x.dtype is not y.dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found x of type "
                           f"{D.SCALAR_TYPE_NAME[x.dtype]} and y of type {D.SCALAR_TYPE_NAME[y.dtype]} instead")
    _check_float(x, "vecdot")
    return _finish(aten.sum.dim_IntList(aten.mul.Tensor(x, y), [dim]), out)


def cross(input, other, *, dim=-1, out=None):  # noqa: A002 - torch's name
    """The cross product of 3-vectors along ``dim`` (the other dims broadcast)."""
    return _finish(aten.cross.default(input, other, dim), out)


# --- decompositions and solvers ---------------------------------------------------------------------------------

def _named(name, values, out=None):
    if out is not None:
        for o, v in zip(out, values):
            _copy_into(o, v)
        values = out
    return NAMED_TUPLES[name](*values)


def det(A, *, out=None):  # noqa: N803 - torch's names
    """The determinants of the matrices."""
    return _finish(aten.linalg_det.default(A), out)


def slogdet(A, *, out=None):  # noqa: N803
    """The sign and the log of the absolute value of the determinants."""
    return _named("linalg_slogdet", aten.linalg_slogdet.default(A), out)


def inv(A, *, out=None):  # noqa: N803
    """The inverses; a singular matrix raises LinAlgError."""
    return _finish(aten.linalg_inv.default(A), out)


def inv_ex(A, *, check_errors=False, out=None):  # noqa: N803
    """The inverses and an int32 ``info`` per matrix (non-zero: the singular pivot, 1-based)."""
    return _named("linalg_inv_ex", aten.linalg_inv_ex.default(A, check_errors=check_errors), out)


def solve(A, B, *, left=True, out=None):  # noqa: N803
    """X with AX = B (XA = B when not ``left``); batch dims broadcast."""
    return _finish(aten.linalg_solve.default(A, B, left=left), out)


def solve_ex(A, B, *, left=True, check_errors=False, out=None):  # noqa: N803
    return _named("linalg_solve_ex", aten.linalg_solve_ex.default(A, B, left=left, check_errors=check_errors), out)


def cholesky(A, *, upper=False, out=None):  # noqa: N803
    """The lower (or upper) Cholesky factor; a matrix that is not positive-definite raises LinAlgError."""
    return _finish(aten.linalg_cholesky.default(A, upper=upper), out)


def cholesky_ex(A, *, upper=False, check_errors=False, out=None):  # noqa: N803
    return _named("linalg_cholesky_ex", aten.linalg_cholesky_ex.default(A, upper=upper, check_errors=check_errors),
                  out)


def qr(A, mode="reduced", *, out=None):  # noqa: N803
    """Q and R with A = QR; ``mode`` 'reduced', 'complete' or 'r' (Q empty)."""
    return _named("linalg_qr", aten.linalg_qr.default(A, mode), out)


def eigh(A, UPLO="L", *, out=None):  # noqa: N803
    """Ascending eigenvalues and orthonormal eigenvectors of symmetric matrices (read from the ``UPLO`` triangle)."""
    return _named("linalg_eigh", aten.linalg_eigh.default(A, UPLO), out)


def eigvalsh(A, UPLO="L", *, out=None):  # noqa: N803
    return _finish(aten.linalg_eigvalsh.default(A, UPLO), out)


def svd(A, full_matrices=True, *, driver=None, out=None):  # noqa: N803
    """U, the descending singular values S and Vh with A = U diag(S) Vh."""
    return _named("linalg_svd", aten.linalg_svd.default(A, full_matrices, driver=driver), out)


def svdvals(A, *, driver=None, out=None):  # noqa: N803
    return _finish(aten.linalg_svdvals.default(A, driver=driver), out)


def _tolerance_args(fname, atol, rtol, rcond):
    if rcond is not None:
        if rtol is not None:
            raise RuntimeError(f"{fname}: rcond and rtol cannot both be specified")   # torch's deprecation rule
        rtol = rcond
    for name, v in (("atol", atol), ("rtol", rtol)):
        if v is not None and not isinstance(v, (int, float)):
            raise TypeError(f"{fname}: {name} must be a float (tensor tolerances are not supported)")
    return atol, rtol


def pinv(A, *, atol=None, rtol=None, hermitian=False, out=None, rcond=None):  # noqa: N803
    """The Moore-Penrose pseudo-inverse (singular values below max(atol, rtol * largest) count as zero)."""
    atol, rtol = _tolerance_args("linalg.pinv", atol, rtol, rcond)
    return _finish(aten.linalg_pinv.atol_rtol_float(A, atol=atol, rtol=rtol, hermitian=hermitian), out)


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False, out=None, tol=None):  # noqa: N803
    """How many singular values exceed max(atol, rtol * largest) (int64)."""
    if tol is not None:
        atol, rtol = tol, 0.0
    atol, rtol = _tolerance_args("linalg.matrix_rank", atol, rtol, None)
    return _finish(aten.linalg_matrix_rank.atol_rtol_float(A, atol=atol, rtol=rtol, hermitian=hermitian), out)


def matrix_power(A, n, *, out=None):  # noqa: N803
    return _finish(aten.linalg_matrix_power.default(A, n), out)


def lstsq(A, B, rcond=None, *, driver=None):  # noqa: N803
    """The least-squares solution of AX = B, as torch's CPU default driver returns it (residuals and singular
    values empty; rank filled in)."""
    return NAMED_TUPLES["linalg_lstsq"](*aten.linalg_lstsq.default(A, B, rcond, driver=driver))


def multi_dot(tensors, *, out=None):
    """The product of a chain of matrices (the first and last may be vectors)."""
    return _finish(aten.linalg_multi_dot.default(list(tensors)), out)


# --- triangular solves, LU and the functions built on the decompositions -------------------------------------------

def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):  # noqa: N803 - torch's names
    """X with AX = B (XA = B when not ``left``) reading one triangle of A; batch dims broadcast."""
    return _finish(aten.linalg_solve_triangular.default(A, B, upper=upper, left=left, unitriangular=unitriangular),
                   out)


def lu_factor(A, *, pivot=True, out=None):  # noqa: N803
    """The packed LU factors and the 1-based int32 pivots of P A = L U; a zero pivot raises."""
    return _named("linalg_lu_factor", aten.linalg_lu_factor.default(A, pivot=pivot), out)


def lu_factor_ex(A, *, pivot=True, check_errors=False, out=None):  # noqa: N803
    return _named("linalg_lu_factor_ex", aten.linalg_lu_factor_ex.default(A, pivot=pivot, check_errors=check_errors),
                  out)


def lu(A, *, pivot=True, out=None):  # noqa: N803
    """P, L, U with A = P L U."""
    return _named("linalg_lu", aten.linalg_lu.default(A, pivot=pivot), out)


def lu_solve(LU, pivots, B, *, left=True, adjoint=False, out=None):  # noqa: N803
    """X with AX = B from the output of ``lu_factor`` (XA = B when not ``left``, A^T when ``adjoint``)."""
    return _finish(aten.linalg_lu_solve.default(LU, pivots, B, left=left, adjoint=adjoint), out)


def householder_product(A, tau, *, out=None):  # noqa: N803
    """The first n columns of the product of the Householder reflectors stored in A and tau."""
    return _finish(aten.linalg_householder_product.default(A, tau), out)


def matrix_exp(A):  # noqa: N803
    return aten.linalg_matrix_exp.default(A)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):  # noqa: N803
    """The diagonals of the matrices (a view), over the last two dims by default."""
    return aten.diagonal.default(A, offset, dim1, dim2)


def vander(x, *, N=None):  # noqa: N803
    """The Vandermonde matrices [1, x, x^2, ..., x^(N-1)] of the vectors in ``x``'s last dim."""
    if x.dim() < 1:
        raise RuntimeError("linalg.vander: Expected x to have at least one dimension")
    n = x.shape[-1] if N is None else N
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    # the running products of [1, x, x, ...], as torch computes them (so integer inputs stay integer)
    ones = aten.ones_like.default(aten.unsqueeze.default(x, -1))
    rest = aten.expand.default(aten.unsqueeze.default(x, -1), list(x.shape) + [n - 1])
    return aten.cumprod.default(aten.cat.default([ones, rest], -1), -1)


def tensorinv(A, ind=2, *, out=None):  # noqa: N803
    """The inverse of A seen as a matrix of the first ``ind`` dims by the rest, reshaped to rest + first."""
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    shape = list(A.shape)
    rows, cols = math.prod(shape[:ind]), math.prod(shape[ind:])
    if rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {cols} != {rows}")
    return _finish(inv(A.reshape(rows, cols)).reshape(shape[ind:] + shape[:ind]), out)


def tensorsolve(A, B, dims=None, *, out=None):  # noqa: N803
    """X with tensordot(A, X, X.ndim) = B (``dims`` of A moved to the end first)."""
    if dims is not None:
        rest = [d for d in range(A.dim()) if d not in [_wrap_dim(x, A.dim()) for x in dims]]
        A = A.permute(rest + [_wrap_dim(x, A.dim()) for x in dims])
    shape = list(A.shape)
    rows = math.prod(B.shape)
    cols = math.prod(shape[B.dim():])
    if rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                           f"prod(self.shape[:other.ndim]), but got {cols} != {rows}")
    x = solve(A.reshape(rows, cols), B.reshape(rows))
    return _finish(x.reshape(shape[B.dim():]), out)


def cond(A, p=None, *, out=None):  # noqa: N803
    """The condition number in the ``p`` norm (None or 2: largest over smallest singular value; 'fro', 'nuc',
    1, -1, inf, -inf: norm(A) norm(A^-1), inf for a singular matrix). Real ``p`` only."""
    if p is not None and p not in ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf):
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p:g}" if not isinstance(p, str) else
                           f"linalg.cond got an invalid norm type: {p}")
    if A.dim() < 2:
        raise RuntimeError("linalg.cond: The input tensor A must have at least 2 dimensions.")
    if p is None or p in (2, -2):
        s = svdvals(A)
        hi, lo = s.amax(-1), s.amin(-1)
        return _finish(lo / hi if p == -2 else hi / lo, out)
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.cond(ord={p if isinstance(p, str) else f'{p:g}'}): A must be batches of square "
                           f"matrices, but they are {A.shape[-2]} by {A.shape[-1]} matrices")
    inverse, info = inv_ex(A)
    r = matrix_norm(A, p) * matrix_norm(inverse, p)
    singular = aten.gt.Scalar(info, 0)
    return _finish(aten.where.self(singular, aten.full_like.default(r, math.inf), r), out)


# --- the LDL (Bunch-Kaufman) family -------------------------------------------------------------------------------
from ..core import return_types as _return_types  # noqa: E402

NAMED_TUPLES["linalg_ldl_factor"] = _return_types._make("linalg_ldl_factor", ("LD", "pivots"))
NAMED_TUPLES["linalg_ldl_factor_ex"] = _return_types._make("linalg_ldl_factor_ex", ("LD", "pivots", "info"))
__all__ += ["ldl_factor", "ldl_factor_ex", "ldl_solve"]


def ldl_factor_ex(A, *, hermitian=False, check_errors=False, out=None):  # noqa: N803 - torch's names
    """LD, pivots and info of A = P L D L^T P^T (Bunch-Kaufman, LAPACK's sytrf pivots; lower triangle read),
    raising when ``check_errors`` and a D block is zero."""
    return _named("linalg_ldl_factor_ex", aten.linalg_ldl_factor_ex.default(A, hermitian=hermitian,
                                                                            check_errors=check_errors), out)


def ldl_factor(A, *, hermitian=False, out=None):  # noqa: N803
    """LD and pivots of A = P L D L^T P^T (``ldl_factor_ex`` that raises for a singular D)."""
    return _named("linalg_ldl_factor", aten.linalg_ldl_factor.default(A, hermitian=hermitian), out)


def ldl_solve(LD, pivots, B, *, hermitian=False, out=None):  # noqa: N803
    """X with A X = B, from ``ldl_factor``'s LD and pivots of A."""
    return _finish(aten.linalg_ldl_solve.default(LD, pivots, B, hermitian=hermitian), out)
