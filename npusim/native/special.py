"""Kernels of the torch.special primitives (ndtr, log_ndtr, ndtri, erfcx, i0e, i1e, entr, xlog1py,
zeta, the Bessel and Airy functions, the orthogonal polynomials) and of igamma / igammac: integral inputs
compute in the default float dtype, 16-bit floats through float32 where torch takes them, as torch."""
from __future__ import annotations

import math

from ..core.c10 import dtype as D
from ..core.dispatch.ops_namespace import aten
from ..kernels import special as K
from ..kernels import special_bessel as KB
from ..kernels import special_gamma as KG
from ..kernels import special_polynomials as KP
from ..kernels.array_api import HALF_TYPES
from . import elementwise_binary as B
from . import common as C
from .elementwise_math import _float_family


def _no_half(fn, kernel):
    """torch's CPU kernels of erfcx, log_ndtr and ndtri take no 16-bit floats."""
    def run(a, out=None):
        if a.dtype in HALF_TYPES:
            C.not_implemented(kernel, a.dtype)
        return fn(a, out)
    return run


def _no_half_or_complex(fn, kernel):
    """torch's CPU kernels of the Bessel and Airy functions take float32 and float64 only."""
    def run(a, out=None):
        if a.dtype in HALF_TYPES or a.dtype.kind == "c":
            C.not_implemented(kernel, a.dtype)
        return fn(a, out)
    return run


def _polynomial_compute(fn, kernel):
    """An orthogonal polynomial's (x, n): computed as atan2 (integral operands in the default float
    dtype), but neither 16-bit floats nor complex numbers, as torch's kernels."""
    base = B._float_compute(fn)

    def compute(x, n):
        cd = base.result(x, n)
        if cd.np in HALF_TYPES or cd.np.kind == "c":
            B._not_implemented(kernel, cd, *(t._a for t in (x, n) if hasattr(t, "_a")))
        return base(x, n)
    compute.result = base.result
    return compute


def _incomplete_gamma_compute(fn, kernel):
    """igamma / igammac: floating operands only (16-bit floats through float32), the promoted dtype."""
    base = B._float_compute(fn)

    def compute(a, x):
        cd = B._result_dt(a, x)
        if not cd.is_floating_point or cd.np.kind == "c":
            B._not_implemented(kernel, cd, a._a, x._a)
        return base(a, x)
    compute.result = B._result_dt
    return compute


_BESSEL = ("airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0",
           "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0",
           "scaled_modified_bessel_k1", "spherical_bessel_j0")
_POLYNOMIALS = ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
                "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
                "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
                "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p")

_UNARY = {"special_ndtr": K.ndtr, "special_log_ndtr": _no_half(K.log_ndtr, "log_ndtr_cpu"),
          "special_ndtri": _no_half(K.ndtri, "ndtri_cpu"), "special_erfcx": _no_half(K.erfcx, "erfcx_cpu"),
          "special_i0e": K.i0e, "special_i1e": K.i1e, "special_entr": K.entr}
_BINARY = {"special_xlog1py": B._family(B._float_compute(K.xlog1py)),
           "special_zeta": B._family(B._float_compute(K.zeta))}
_UNARY.update({f"special_{name}": _no_half_or_complex(getattr(KB, name), f"{name}_cpu") for name in _BESSEL})
_POLYNOMIAL = {f"special_{name}": B._family(_polynomial_compute(getattr(KP, name), f"{name}_cpu"))
               for name in _POLYNOMIALS}
_INCOMPLETE_GAMMA = {name: B._family(_incomplete_gamma_compute(getattr(KG, name), f"{name}_cpu"))
                     for name in ("igamma", "igammac")}


def _build():
    t = {}
    for name, fn in _UNARY.items():
        t[name], t[f"{name}.out"], _ = _float_family(fn)
    for name, (f, o, _) in _BINARY.items():
        t[name] = t[f"{name}.other_scalar"] = t[f"{name}.self_scalar"] = f
        t[f"{name}.out"] = t[f"{name}.self_scalar_out"] = t[f"{name}.other_scalar_out"] = o
    for name, (f, o, _) in _POLYNOMIAL.items():
        t[name] = t[f"{name}.x_scalar"] = t[f"{name}.n_scalar"] = f
        t[f"{name}.out"] = t[f"{name}.x_scalar_out"] = t[f"{name}.n_scalar_out"] = o
    for name, (f, o, i) in _INCOMPLETE_GAMMA.items():
        t[name], t[f"{name}.out"], t[f"{name}_"] = f, o, i
    return t


KERNELS = _build()


# --- mvlgamma: composed from lgamma (CompositeImplicitAutograd: the gradient comes from lgamma's) ----------

def mvlgamma(self, p):
    """p (p - 1) / 4 log(pi) + the sum over j < p of lgamma(self - j / 2)."""
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    r = aten.lgamma.default(self)
    for j in range(1, p):
        r = aten.add.Tensor(r, aten.lgamma.default(aten.sub.Scalar(self, j / 2.0)))
    return aten.add.Scalar(r, p * (p - 1) / 4.0 * math.log(math.pi))


def mvlgamma_out(self, p, *, out):
    r = mvlgamma(self, p)
    aten.resize_.default(out, r.shape)
    return aten.copy_.default(out, r)


def mvlgamma_(self, p):
    if not self.dtype.is_floating_point:   # torch's words, with its operands in this order
        raise RuntimeError(f"mvlgamma: result type {C.tname(self.dtype)} can't be cast to the desired output type "
                           f"{C.tname(D.get_default_dtype())}")
    return aten.copy_.default(self, mvlgamma(self, p))


COMPOSITE_IMPLICIT = {"mvlgamma": mvlgamma, "mvlgamma.out": mvlgamma_out, "mvlgamma_": mvlgamma_,
                      "special_multigammaln": mvlgamma, "special_multigammaln.out": mvlgamma_out}
