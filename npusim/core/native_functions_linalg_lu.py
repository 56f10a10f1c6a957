"""Schemas of the triangular solves, the LU family, Householder products and the matrix exponential.

linalg_solve_triangular, linalg_lu_factor_ex, lu_unpack and linalg_matrix_exp have kernels and derivative
formulas of their own; the rest decompose into them (CompositeImplicitAutograd).
"""

SCHEMAS = r"""
linalg_solve_triangular(Tensor self, Tensor B, *, bool upper, bool left=True, bool unitriangular=False) -> Tensor
linalg_lu_factor_ex(Tensor A, *, bool pivot=True, bool check_errors=False) -> (Tensor LU, Tensor pivots, Tensor info)
lu_unpack(Tensor LU_data, Tensor LU_pivots, bool unpack_data=True, bool unpack_pivots=True) -> (Tensor P, Tensor L, Tensor U)
linalg_matrix_exp(Tensor self) -> Tensor
triangular_solve(Tensor self, Tensor A, bool upper=True, bool transpose=False, bool unitriangular=False) -> (Tensor solution, Tensor cloned_coefficient)
linalg_lu_factor(Tensor A, *, bool pivot=True) -> (Tensor LU, Tensor pivots)
linalg_lu(Tensor A, *, bool pivot=True) -> (Tensor P, Tensor L, Tensor U)
linalg_lu_solve(Tensor LU, Tensor pivots, Tensor B, *, bool left=True, bool adjoint=False) -> Tensor
lu_solve(Tensor self, Tensor LU_data, Tensor LU_pivots) -> Tensor
linalg_householder_product(Tensor input, Tensor tau) -> Tensor
orgqr(Tensor self, Tensor input2) -> Tensor
matrix_exp(Tensor self) -> Tensor
"""
