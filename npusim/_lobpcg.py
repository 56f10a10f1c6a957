"""Locally Optimal Block Preconditioned Conjugate Gradient (``npusim.lobpcg``): torch's torch/_lobpcg.py over
npusim's public functions, step for step (Knyazev's LOBPCG, with the robust "ortho" variant of Duersch et
al. 2018 by default), and its backward (the symmetric eigenproblem's, complete or partial eigenspace).

The initial block X, when not given, is ``npusim.randn((m, n))`` as torch draws it; npusim's generators are
not torch's, so runs differ from torch's by the starting block. Both iterate until every wanted Ritz pair's
relative residual |A x - e B x| / (|x| (|A| + |e| |B|)) is below ``tol`` (default sqrt(eps)), so the
eigenvalues they return agree with the exact ones, and with each other, within about tol^2 * |A| for
well-separated eigenvalues (the Rayleigh quotient's error is the square of the residual's), and the
eigenvectors within tol * |A| / gap, up to sign. The tests check those bounds against exact decompositions.
"""
from __future__ import annotations

import npusim

__all__ = ["lobpcg"]


# --- torch._linalg_utils' helpers -----------------------------------------------------------------------------------

def _floating_dtype(A):  # noqa: N803 - torch's names
    """torch._linalg_utils.get_floating_dtype: float16/32/64 stay, every other dtype computes in float32."""
    return A.dtype if A.dtype in (npusim.float16, npusim.float32, npusim.float64) else npusim.float32


def _matmul(A, B):  # noqa: N803
    """A @ B, with None standing for the identity."""
    return B if A is None else npusim.matmul(A, B)


def _bform(X, A, Y):  # noqa: N803
    return npusim.matmul(X.mT, _matmul(A, Y))


def _qform(A, S):  # noqa: N803
    return _bform(S, A, S)


def _basis(A):  # noqa: N803
    return npusim.linalg.qr(A).Q


def _symeig(A, largest=False):  # noqa: N803
    """Eigenpairs of a symmetric matrix (its upper triangle), ascending, or descending when ``largest``."""
    E, Z = npusim.linalg.eigh(A, UPLO="U")  # noqa: N806
    if largest:
        E, Z = npusim.flip(E, dims=(-1,)), npusim.flip(Z, dims=(-1,))  # noqa: N806
    return E, Z


# --- backward -------------------------------------------------------------------------------------------------------

def _symeig_backward_complete_eigenspace(D_grad, U_grad, A, D, U):  # noqa: N803
    F = D.unsqueeze(-2) - D.unsqueeze(-1)  # noqa: N806
    F.diagonal(dim1=-2, dim2=-1).fill_(float("inf"))
    F.pow_(-1)
    Ut = U.mT.contiguous()  # noqa: N806
    return npusim.matmul(U, npusim.matmul(npusim.diag_embed(D_grad) + npusim.matmul(Ut, U_grad) * F, Ut))


def _polynomial_coefficients_given_roots(roots):
    """The coefficients, lowest degree first, of the monic polynomial with ``roots`` (batched)."""
    poly_order = roots.shape[-1]
    poly_coeffs_shape = list(roots.shape)
    poly_coeffs_shape[-1] += 2
    poly_coeffs = roots.new_zeros(poly_coeffs_shape)
    poly_coeffs[..., 0] = 1
    poly_coeffs[..., -1] = 1
    for i in range(1, poly_order + 1):
        poly_coeffs_new = poly_coeffs.clone() if roots.requires_grad else poly_coeffs
        out = poly_coeffs_new.narrow(-1, poly_order - i, i + 1)
        out -= roots.narrow(-1, i - 1, 1) * poly_coeffs.narrow(-1, poly_order - i + 1, i + 1)
        poly_coeffs = poly_coeffs_new
    return poly_coeffs.narrow(-1, 1, poly_order + 1)


def _polynomial_value(poly, x, zero_power, transition):
    """Horner's scheme for a polynomial in x (a number, vector or matrix, as ``transition`` multiplies)."""
    res = zero_power.clone()
    for k in range(poly.size(-1) - 2, -1, -1):
        res = transition(res, x, poly[..., k])
    return res


def _matrix_polynomial_value(poly, x, zero_power=None):
    def transition(curr_poly_val, x, poly_coeff):
        res = x.matmul(curr_poly_val)
        res.diagonal(dim1=-2, dim2=-1).add_(poly_coeff.unsqueeze(-1))
        return res
    if zero_power is None:
        zero_power = npusim.eye(x.size(-1), x.size(-1), dtype=x.dtype, device=x.device).view(
            *([1] * len(list(x.shape[:-2]))), x.size(-1), x.size(-1))
    return _polynomial_value(poly, x, zero_power, transition)


def _vector_polynomial_value(poly, x, zero_power=None):
    def transition(curr_poly_val, x, poly_coeff):
        return npusim.addcmul(poly_coeff.unsqueeze(-1), x, curr_poly_val)
    if zero_power is None:
        zero_power = x.new_ones(1).expand(x.shape)
    return _polynomial_value(poly, x, zero_power, transition)


def _symeig_backward_partial_eigenspace(D_grad, U_grad, A, D, U, largest):  # noqa: N803
    # the projector onto U's orthogonal complement, and a basis of it from a fresh generator (as torch: its
    # default seed, so the backward is deterministic)
    Ut = U.mT.contiguous()  # noqa: N806
    proj_U_ortho = -U.matmul(Ut)  # noqa: N806
    proj_U_ortho.diagonal(dim1=-2, dim2=-1).add_(1)
    gen = npusim.Generator(A.device)
    U_ortho = proj_U_ortho.matmul(npusim.randn((*A.shape[:-1], A.size(-1) - D.size(-1)), dtype=A.dtype,  # noqa: N806
                                               device=A.device, generator=gen))
    U_ortho_t = U_ortho.mT.contiguous()  # noqa: N806
    chr_poly_D = _polynomial_coefficients_given_roots(D)  # noqa: N806
    U_grad_projected = U_grad  # noqa: N806
    series_acc = U_grad_projected.new_zeros(U_grad_projected.shape)
    for k in range(1, chr_poly_D.size(-1)):
        poly_D = _vector_polynomial_value(chr_poly_D[..., k:], D)  # noqa: N806
        series_acc += U_grad_projected * poly_D.unsqueeze(-2)
        U_grad_projected = A.matmul(U_grad_projected)  # noqa: N806
    chr_poly_D_at_A = _matrix_polynomial_value(chr_poly_D, A)  # noqa: N806
    chr_poly_D_at_A_to_U_ortho = npusim.matmul(U_ortho_t, npusim.matmul(chr_poly_D_at_A, U_ortho))  # noqa: N806
    # the characteristic polynomial at A is positive (or, for the largest eigenvalues and an odd degree,
    # negative) definite on the complement: its Cholesky factor solves the Sylvester equation
    sign = -1 if (largest and (k % 2 == 1)) else +1
    chol = npusim.linalg.cholesky(sign * chr_poly_D_at_A_to_U_ortho)
    res = _symeig_backward_complete_eigenspace(D_grad, U_grad, A, D, U)
    res -= U_ortho.matmul(sign * npusim.cholesky_solve(U_ortho_t.matmul(series_acc), chol)).matmul(Ut)
    return res


def _symeig_backward(D_grad, U_grad, A, D, U, largest):  # noqa: N803
    if U.size(-1) == U.size(-2):
        return _symeig_backward_complete_eigenspace(D_grad, U_grad, A, D, U)
    return _symeig_backward_partial_eigenspace(D_grad, U_grad, A, D, U, largest)


class LOBPCGAutogradFunction(npusim.autograd.Function):
    @staticmethod
    def forward(ctx, A, k=None, B=None, X=None, n=None, iK=None, niter=None, tol=None, largest=None,  # noqa: N803
                method=None, tracker=None, ortho_iparams=None, ortho_fparams=None, ortho_bparams=None):
        A = A.contiguous()  # noqa: N806
        if B is not None:
            B = B.contiguous()  # noqa: N806
        D, U = _lobpcg(A, k, B, X, n, iK, niter, tol, largest, method, tracker, ortho_iparams,  # noqa: N806
                       ortho_fparams, ortho_bparams)
        ctx.save_for_backward(A, B, D, U)
        ctx.largest = largest
        return D, U

    @staticmethod
    def backward(ctx, D_grad, U_grad):  # noqa: N803
        grads = [None] * 14
        A, B, D, U = ctx.saved_tensors  # noqa: N806
        if B is not None:
            raise ValueError("lobpcg.backward does not support backward with B != I yet.")
        largest = True if ctx.largest is None else ctx.largest
        grads[0] = _symeig_backward(D_grad, U_grad, A, D, U, largest)
        return tuple(grads)


# --- the solver -----------------------------------------------------------------------------------------------------

def lobpcg(A, k=None, B=None, X=None, n=None, iK=None, niter=None, tol=None, largest=None,  # noqa: N803
           method=None, tracker=None, ortho_iparams=None, ortho_fparams=None, ortho_bparams=None):
    r"""lobpcg(A, k=None, B=None, X=None, n=None, iK=None, niter=None, tol=None, largest=None, method=None,
    tracker=None, ortho_iparams=None, ortho_fparams=None, ortho_bparams=None) -> (Tensor, Tensor): the ``k``
    largest (or smallest, ``largest=False``) eigenpairs of the symmetric positive-definite generalised problem
    A x = e B x (B = I by default) by LOBPCG, from an initial block ``X`` of ``n`` columns (random when not
    given), preconditioned by ``iK``, iterating at most ``niter`` times (1000; -1: until converged) to a relative
    residual ``tol``; ``method`` 'ortho' (default) or 'basic'. Returns (E, X). Differentiable in A (B = I)."""
    if A.requires_grad or (B is not None and B.requires_grad):
        # the backward takes A symmetric: symmetrise it, as torch does, so the gradient is symmetric too
        A_sym = (A + A.mT) / 2  # noqa: N806
        B_sym = (B + B.mT) / 2 if B is not None else None  # noqa: N806
        return LOBPCGAutogradFunction.apply(A_sym, k, B_sym, X, n, iK, niter, tol, largest, method, tracker,
                                            ortho_iparams, ortho_fparams, ortho_bparams)
    return _lobpcg(A, k, B, X, n, iK, niter, tol, largest, method, tracker, ortho_iparams, ortho_fparams,
                   ortho_bparams)


def _lobpcg(A, k=None, B=None, X=None, n=None, iK=None, niter=None, tol=None, largest=None,  # noqa: N803
            method=None, tracker=None, ortho_iparams=None, ortho_fparams=None, ortho_bparams=None):
    if A.shape[-2] != A.shape[-1]:
        raise AssertionError(f"A must be square, got shape {A.shape}")
    if B is not None and A.shape != B.shape:
        raise AssertionError(f"A and B must have same shape, got {A.shape} vs {B.shape}")
    dtype = _floating_dtype(A)
    device = A.device
    if tol is None:
        feps = {npusim.float32: 1.2e-07, npusim.float64: 2.23e-16}[dtype]
        tol = feps ** 0.5
    m = A.shape[-1]
    k = (1 if X is None else X.shape[-1]) if k is None else k
    n = (k if n is None else n) if X is None else X.shape[-1]
    if m < 3 * n:
        raise ValueError(f"LOBPCG algorithm is not applicable when the number of A rows (={m}) is smaller than 3 x "
                         f"the number of requested eigenpairs (={n})")
    method = "ortho" if method is None else method
    iparams = {"m": m, "n": n, "k": k, "niter": 1000 if niter is None else niter}
    fparams = {"tol": tol}
    bparams = {"largest": True if largest is None else largest}
    if method == "ortho":
        if ortho_iparams is not None:
            iparams.update(ortho_iparams)
        if ortho_fparams is not None:
            fparams.update(ortho_fparams)
        if ortho_bparams is not None:
            bparams.update(ortho_bparams)
        iparams["ortho_i_max"] = iparams.get("ortho_i_max", 3)
        iparams["ortho_j_max"] = iparams.get("ortho_j_max", 3)
        fparams["ortho_tol"] = fparams.get("ortho_tol", tol)
        fparams["ortho_tol_drop"] = fparams.get("ortho_tol_drop", tol)
        fparams["ortho_tol_replace"] = fparams.get("ortho_tol_replace", tol)
        bparams["ortho_use_drop"] = bparams.get("ortho_use_drop", False)

    if len(A.shape) > 2:
        N = 1  # noqa: N806
        for s in A.shape[:-2]:
            N *= s  # noqa: N806
        bA = A.reshape((N,) + tuple(A.shape[-2:]))  # noqa: N806
        bB = B.reshape((N,) + tuple(A.shape[-2:])) if B is not None else None  # noqa: N806
        bX = X.reshape((N,) + tuple(X.shape[-2:])) if X is not None else None  # noqa: N806
        bE = npusim.empty((N, k), dtype=dtype, device=device)  # noqa: N806
        bXret = npusim.empty((N, m, k), dtype=dtype, device=device)  # noqa: N806
        for i in range(N):
            A_ = bA[i]  # noqa: N806
            B_ = bB[i] if bB is not None else None  # noqa: N806
            X_ = npusim.randn((m, n), dtype=dtype, device=device) if bX is None else bX[i]  # noqa: N806
            if not (len(X_.shape) == 2 and tuple(X_.shape) == (m, n)):
                raise AssertionError(f"X_ shape mismatch: got {X_.shape}, expected {(m, n)}")
            iparams["batch_index"] = i
            worker = LOBPCG(A_, B_, X_, iK, iparams, fparams, bparams, method, tracker)
            worker.run()
            bE[i] = worker.E[:k]
            bXret[i] = worker.X[:, :k]
        return bE.reshape(tuple(A.shape[:-2]) + (k,)), bXret.reshape(tuple(A.shape[:-2]) + (m, k))

    X = npusim.randn((m, n), dtype=dtype, device=device) if X is None else X  # noqa: N806
    if not (len(X.shape) == 2 and tuple(X.shape) == (m, n)):
        raise AssertionError(f"X shape mismatch: got {X.shape}, expected {(m, n)}")
    worker = LOBPCG(A, B, X, iK, iparams, fparams, bparams, method, tracker)
    worker.run()
    return worker.E[:k], worker.X[:, :k]


class LOBPCG:
    """The LOBPCG worker: the state (X, E, R, S and the counters) and one update per iteration."""

    def __init__(self, A, B, X, iK, iparams, fparams, bparams, method, tracker):  # noqa: N803
        self.A, self.B, self.iK = A, B, iK
        self.iparams, self.fparams, self.bparams = iparams, fparams, bparams
        self.method, self.tracker = method, tracker
        m, n = iparams["m"], iparams["n"]
        self.X = X
        self.E = npusim.zeros((n,), dtype=X.dtype, device=X.device)
        self.R = npusim.zeros((m, n), dtype=X.dtype, device=X.device)
        self.S = npusim.zeros((m, 3 * n), dtype=X.dtype, device=X.device)
        self.tvars = {}
        self.ivars = {"istep": 0}
        self.fvars = {"_": 0.0}
        self.bvars = {"_": False}

    def __str__(self):
        lines = ["LOBPCG:", f"  iparams={self.iparams}", f"  fparams={self.fparams}", f"  bparams={self.bparams}",
                 f"  ivars={self.ivars}", f"  fvars={self.fvars}", f"  bvars={self.bvars}", f"  tvars={self.tvars}",
                 f"  A={self.A}", f"  B={self.B}", f"  iK={self.iK}", f"  X={self.X}", f"  E={self.E}"]
        return "".join(line + "\n" for line in lines)

    def update(self):
        """One iteration (the first sets the norms the convergence test scales by)."""
        if self.ivars["istep"] == 0:
            X_norm = float(npusim.norm(self.X))  # noqa: N806
            iX_norm = X_norm ** -1  # noqa: N806
            self.fvars["X_norm"] = X_norm
            self.fvars["A_norm"] = float(npusim.norm(_matmul(self.A, self.X))) * iX_norm
            self.fvars["B_norm"] = float(npusim.norm(_matmul(self.B, self.X))) * iX_norm
            self.ivars["iterations_left"] = self.iparams["niter"]
            self.ivars["converged_count"] = 0
            self.ivars["converged_end"] = 0
        if self.method == "ortho":
            self._update_ortho()
        else:
            self._update_basic()
        self.ivars["iterations_left"] = self.ivars["iterations_left"] - 1
        self.ivars["istep"] = self.ivars["istep"] + 1

    def update_residual(self):
        self.R = _matmul(self.A, self.X) - _matmul(self.B, self.X) * self.E

    def update_converged_count(self):
        """The number of leading Ritz pairs whose relative residual is below tol (it never decreases)."""
        prev_count = self.ivars["converged_count"]
        tol = self.fparams["tol"]
        A_norm, B_norm = self.fvars["A_norm"], self.fvars["B_norm"]  # noqa: N806
        E, X, R = self.E, self.X, self.R  # noqa: N806
        rerr = npusim.norm(R, 2, (0,)) / (npusim.norm(X, 2, (0,)) * (A_norm + npusim.abs(E[:X.shape[-1]]) * B_norm))
        converged = rerr < tol
        count = 0
        for b in converged:
            if not b:
                break
            count += 1
        if count < prev_count:
            raise AssertionError(f"the number of converged eigenpairs (was {prev_count}, got {count}) cannot "
                                 f"decrease")
        self.ivars["converged_count"] = count
        self.tvars["rerr"] = rerr
        return count

    def stop_iteration(self):
        return (self.bvars.get("force_stop", False) or self.ivars["iterations_left"] == 0
                or self.ivars["converged_count"] >= self.iparams["k"])

    def run(self):
        self.update()
        if self.tracker is not None:
            self.call_tracker()
        while not self.stop_iteration():
            self.update()
            if self.tracker is not None:
                self.call_tracker()

    def call_tracker(self):
        """Hands the worker to the user's ``tracker`` after each iteration."""
        self.tracker(self)

    def _update_basic(self):
        """Knyazev's update: Rayleigh-Ritz on [X, P, W] with the B-orthonormalising transform."""
        mm = npusim.matmul
        ns = self.ivars["converged_end"]
        nc = self.ivars["converged_count"]
        n = self.iparams["n"]
        largest = self.bparams["largest"]
        if self.ivars["istep"] == 0:
            Ri = self._get_rayleigh_ritz_transform(self.X)  # noqa: N806
            M = _qform(_qform(self.A, self.X), Ri)  # noqa: N806
            E, Z = _symeig(M, largest)  # noqa: N806
            self.X[:] = mm(self.X, mm(Ri, Z))
            self.E[:] = E
            np_ = 0
            self.update_residual()
            nc = self.update_converged_count()
            self.S[..., :n] = self.X
            W = _matmul(self.iK, self.R)  # noqa: N806
            self.ivars["converged_end"] = ns = n + np_ + W.shape[-1]
            self.S[:, n + np_:ns] = W
        else:
            S_ = self.S[:, nc:ns]  # noqa: N806
            Ri = self._get_rayleigh_ritz_transform(S_)  # noqa: N806
            M = _qform(_qform(self.A, S_), Ri)  # noqa: N806
            E_, Z = _symeig(M, largest)  # noqa: N806
            self.X[:, nc:] = mm(S_, mm(Ri, Z[:, :n - nc]))
            self.E[nc:] = E_[:n - nc]
            P = mm(S_, mm(Ri, Z[:, n:2 * n - nc]))  # noqa: N806
            np_ = P.shape[-1]
            self.update_residual()
            nc = self.update_converged_count()
            self.S[..., :n] = self.X
            self.S[:, n:n + np_] = P
            W = _matmul(self.iK, self.R[:, nc:])  # noqa: N806
            self.ivars["converged_end"] = ns = n + np_ + W.shape[-1]
            self.S[:, n + np_:ns] = W

    def _update_ortho(self):
        """Duersch et al.'s robust update: the basis is B-orthonormalised explicitly (``_get_ortho``)."""
        mm = npusim.matmul
        ns = self.ivars["converged_end"]
        nc = self.ivars["converged_count"]
        n = self.iparams["n"]
        largest = self.bparams["largest"]
        if self.ivars["istep"] == 0:
            Ri = self._get_rayleigh_ritz_transform(self.X)  # noqa: N806
            M = _qform(_qform(self.A, self.X), Ri)  # noqa: N806
            _E, Z = _symeig(M, largest)  # noqa: N806
            self.X = mm(self.X, mm(Ri, Z))
            self.update_residual()
            np_ = 0
            nc = self.update_converged_count()
            self.S[:, :n] = self.X
            W = self._get_ortho(self.R, self.X)  # noqa: N806
            ns = self.ivars["converged_end"] = n + np_ + W.shape[-1]
            self.S[:, n + np_:ns] = W
        else:
            S_ = self.S[:, nc:ns]  # noqa: N806
            E_, Z = _symeig(_qform(self.A, S_), largest)  # noqa: N806
            self.X[:, nc:] = mm(S_, Z[:, :n - nc])
            self.E[nc:] = E_[:n - nc]
            P = mm(S_, mm(Z[:, n - nc:], _basis(Z[:n - nc, n - nc:].mT)))  # noqa: N806
            np_ = P.shape[-1]
            self.update_residual()
            nc = self.update_converged_count()
            self.S[:, :n] = self.X
            self.S[:, n:n + np_] = P
            W = self._get_ortho(self.R[:, nc:], self.S[:, :n + np_])  # noqa: N806
            ns = self.ivars["converged_end"] = n + np_ + W.shape[-1]
            self.S[:, n + np_:ns] = W

    def _get_rayleigh_ritz_transform(self, S):  # noqa: N803
        """Ri with Ri^T S^T B S Ri = I: the inverse Cholesky factor of the diagonally scaled S^T B S."""
        SBS = _qform(self.B, S)  # noqa: N806
        d_row = SBS.diagonal(0, -2, -1) ** -0.5
        d_col = d_row.reshape(d_row.shape[0], 1)
        R = npusim.linalg.cholesky((SBS * d_row) * d_col, upper=True)  # noqa: N806
        return npusim.linalg.solve_triangular(R, d_row.diag_embed(), upper=True, left=False)

    def _get_svqb(self, U, drop, tau):  # noqa: N803
        """B-orthonormalise U's columns by the SVQB algorithm (Stathopoulos and Wu), dropping or raising the
        eigenvalues below tau * max."""
        if npusim.numel(U) == 0:
            return U
        UBU = _qform(self.B, U)  # noqa: N806
        d = UBU.diagonal(0, -2, -1)
        nz = npusim.where(abs(d) != 0.0)
        if len(nz) != 1:
            raise AssertionError(f"expected nz to have length 1, got {nz}")
        if len(nz[0]) < len(d):
            U = U[:, nz[0]]  # noqa: N806
            if npusim.numel(U) == 0:
                return U
            UBU = _qform(self.B, U)  # noqa: N806
            d = UBU.diagonal(0, -2, -1)
            nz = npusim.where(abs(d) != 0.0)
            if len(nz[0]) != len(d):
                raise AssertionError(f"expected nz[0] length {len(d)}, got {len(nz[0])}")
        d_col = (d ** -0.5).reshape(d.shape[0], 1)
        DUBUD = (UBU * d_col) * d_col.mT  # noqa: N806
        E, Z = _symeig(DUBUD)  # noqa: N806
        t = tau * abs(E).max()
        if drop:
            keep = npusim.where(E > t)
            if len(keep) != 1:
                raise AssertionError(f"expected keep to have length 1, got {keep}")
            E = E[keep[0]]  # noqa: N806
            Z = Z[:, keep[0]]  # noqa: N806
            d_col = d_col[keep[0]]
        else:
            E[(npusim.where(E < t))[0]] = t
        return npusim.matmul(U * d_col.mT, Z * E ** -0.5)

    def _get_ortho(self, U, V):  # noqa: N803
        """U's columns B-orthonormalised and B-orthogonal to V's (V is B-orthonormal)."""
        mm = npusim.matmul
        m = self.iparams["m"]
        tau_ortho = self.fparams["ortho_tol"]
        tau_drop = self.fparams["ortho_tol_drop"]
        tau_replace = self.fparams["ortho_tol_replace"]
        i_max, j_max = self.iparams["ortho_i_max"], self.iparams["ortho_j_max"]
        use_drop = self.bparams["ortho_use_drop"]
        for vkey in list(self.fvars.keys()):
            if vkey.startswith("ortho_") and vkey.endswith("_rerr"):
                self.fvars.pop(vkey)
        self.ivars.pop("ortho_i", 0)
        self.ivars.pop("ortho_j", 0)
        BV_norm = npusim.norm(_matmul(self.B, V))  # noqa: N806
        BU = _matmul(self.B, U)  # noqa: N806
        VBU = mm(V.mT, BU)  # noqa: N806
        i = j = 0
        for i in range(i_max):
            U = U - mm(V, VBU)  # noqa: N806
            drop = False
            tau_svqb = tau_drop
            for j in range(j_max):
                if use_drop:
                    U = self._get_svqb(U, drop, tau_svqb)  # noqa: N806
                    drop = True
                    tau_svqb = tau_replace
                else:
                    U = self._get_svqb(U, False, tau_replace)  # noqa: N806
                if npusim.numel(U) == 0:
                    self.ivars["ortho_i"] = i
                    self.ivars["ortho_j"] = j
                    return U
                BU = _matmul(self.B, U)  # noqa: N806
                UBU = mm(U.mT, BU)  # noqa: N806
                U_norm = npusim.norm(U)  # noqa: N806
                BU_norm = npusim.norm(BU)  # noqa: N806
                R = UBU - npusim.eye(UBU.shape[-1], device=UBU.device, dtype=UBU.dtype)  # noqa: N806
                R_norm = npusim.norm(R)  # noqa: N806
                rerr = float(R_norm) * float(BU_norm * U_norm) ** -1
                self.fvars[f"ortho_UBUmI_rerr[{i}, {j}]"] = rerr
                if rerr < tau_ortho:
                    break
            VBU = mm(V.mT, BU)  # noqa: N806
            VBU_norm = npusim.norm(VBU)  # noqa: N806
            U_norm = npusim.norm(U)  # noqa: N806
            rerr = float(VBU_norm) * float(BV_norm * U_norm) ** -1
            self.fvars[f"ortho_VBU_rerr[{i}]"] = rerr
            if rerr < tau_ortho:
                break
            if m < U.shape[-1] + V.shape[-1]:
                B = self.B  # noqa: N806
                if B is None:
                    raise AssertionError("B must not be None")
                raise ValueError(f"Overdetermined shape of U: #B-cols(={B.shape[-1]}) >= #U-cols(={U.shape[-1]}) + "
                                 f"#V-cols(={V.shape[-1]}) must hold")
        self.ivars["ortho_i"] = i
        self.ivars["ortho_j"] = j
        return U
