"""Schemas of the matrix decompositions, solvers and the ops built on them (torch.linalg and its older names).

The first group has kernels and derivative formulas of its own; the rest decompose
into those (CompositeImplicitAutograd), so their gradients come from the parts.
"""

SCHEMAS = r"""
linalg_det(Tensor A) -> Tensor
linalg_slogdet(Tensor A) -> (Tensor sign, Tensor logabsdet)
linalg_inv_ex(Tensor A, *, bool check_errors=False) -> (Tensor inverse, Tensor info)
linalg_solve_ex(Tensor A, Tensor B, *, bool left=True, bool check_errors=False) -> (Tensor result, Tensor info)
linalg_cholesky_ex(Tensor self, *, bool upper=False, bool check_errors=False) -> (Tensor L, Tensor info)
linalg_qr(Tensor A, str mode='reduced') -> (Tensor Q, Tensor R)
_linalg_eigh(Tensor A, str UPLO="L", bool compute_v=True) -> (Tensor eigenvalues, Tensor eigenvectors)
_linalg_svd(Tensor A, bool full_matrices=False, bool compute_uv=True, *, str? driver=None) -> (Tensor U, Tensor S, Tensor Vh)
linalg_inv(Tensor A) -> Tensor
inverse(Tensor self) -> Tensor
det(Tensor self) -> Tensor
logdet(Tensor self) -> Tensor
slogdet(Tensor self) -> (Tensor sign, Tensor logabsdet)
linalg_solve(Tensor A, Tensor B, *, bool left=True) -> Tensor
linalg_cholesky(Tensor self, *, bool upper=False) -> Tensor
cholesky(Tensor self, bool upper=False) -> Tensor
cholesky_solve(Tensor self, Tensor input2, bool upper=False) -> Tensor
cholesky_inverse(Tensor self, bool upper=False) -> Tensor
qr(Tensor self, bool some=True) -> (Tensor Q, Tensor R)
linalg_eigh(Tensor self, str UPLO="L") -> (Tensor eigenvalues, Tensor eigenvectors)
linalg_eigvalsh(Tensor self, str UPLO="L") -> Tensor
linalg_svd(Tensor A, bool full_matrices=True, *, str? driver=None) -> (Tensor U, Tensor S, Tensor Vh)
linalg_svdvals(Tensor A, *, str? driver=None) -> Tensor
svd(Tensor self, bool some=True, bool compute_uv=True) -> (Tensor U, Tensor S, Tensor V)
linalg_pinv.atol_rtol_float(Tensor self, *, float? atol=None, float? rtol=None, bool hermitian=False) -> Tensor
pinverse(Tensor self, float rcond=1e-15) -> Tensor
linalg_matrix_rank.atol_rtol_float(Tensor self, *, float? atol=None, float? rtol=None, bool hermitian=False) -> Tensor
linalg_matrix_power(Tensor self, int n) -> Tensor
matrix_power(Tensor self, int n) -> Tensor
linalg_lstsq(Tensor self, Tensor b, float? rcond=None, *, str? driver=None) -> (Tensor solution, Tensor residuals, Tensor rank, Tensor singular_values)
linalg_multi_dot(Tensor[] tensors) -> Tensor
"""
